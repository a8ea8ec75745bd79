//! Where a streamed stage's device time went: events around each chunk's
//! wait for its copy and its sums on the compute stream, and around each
//! copy on the copy stream, read once the stage is done and logged per
//! partition (`cuzk_gpu::streamed` at info).

use cuzk_cuda::Event;

/// Device events of one stage's chunks, read once the stage is done.
#[derive(Default)]
pub(crate) struct Trace {
    /// Per chunk task, on the compute stream: its section, then events
    /// before the wait for its copy, after that wait, and after its sums.
    pub(crate) tasks: Vec<(usize, Event, Event, Event)>,
    /// Per copy, on the copy stream: after the wait for its slot, after
    /// the copy, and its bytes.
    pub(crate) copies: Vec<(Event, Event, u64)>,
    /// Per chunk and member, on the compute stream: its section, events
    /// before its scalars are moved and after they are classified (the
    /// rest of its kernels are its sums).
    pub(crate) classified: Vec<(usize, Event, Event)>,
}

/// Where one streamed stage's device time went (logged per partition at
/// info by `cuzk_gpu::streamed`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Breakdown {
    pub(crate) stage: &'static str,
    /// Per section: its name, seconds of its chunks' kernels (scalars
    /// moved or gathered, classified, summed; one host turn each for the
    /// class counts), seconds the compute stream waited for its copies,
    /// and of the kernels' seconds those before the sums (scalars moved
    /// and classified).
    pub(crate) sections: Vec<(&'static str, f64, f64, f64)>,
    /// Seconds from one chunk's last kernel to the next chunk's wait: the
    /// host adding up the chunk's sums and queueing the next chunk.
    pub(crate) host: f64,
    /// Seconds the copy stream spent copying (each copy from after the
    /// wait for its slot to its end), the bytes and the chunks it copied.
    pub(crate) copying: f64,
    pub(crate) bytes: u64,
    pub(crate) chunks: usize,
}

impl Breakdown {
    /// The breakdown of a finished stage's events (waits for none: the
    /// stage's last result was read after the stream's synchronize).
    pub(crate) fn of(
        stage: &'static str,
        names: &[&'static str],
        t: &Trace,
    ) -> cuzk_cuda::Result<Self> {
        let mut sections: Vec<(&'static str, f64, f64, f64)> =
            names.iter().map(|&n| (n, 0.0, 0.0, 0.0)).collect();
        for (section, before, classified) in &t.classified {
            sections[*section].3 += f64::from(before.elapsed_ms(classified)?) / 1e3;
        }
        let mut host = 0.0;
        for (i, (section, queued, ready, summed)) in t.tasks.iter().enumerate() {
            let x = &mut sections[*section];
            x.1 += f64::from(ready.elapsed_ms(summed)?) / 1e3;
            x.2 += f64::from(queued.elapsed_ms(ready)?) / 1e3;
            if let Some((_, next, _, _)) = t.tasks.get(i + 1) {
                host += f64::from(summed.elapsed_ms(next)?) / 1e3;
            }
        }
        let mut copying = 0.0;
        for (start, end, _) in &t.copies {
            copying += f64::from(start.elapsed_ms(end)?) / 1e3;
        }
        Ok(Breakdown {
            stage,
            sections,
            host,
            copying,
            bytes: t.copies.iter().map(|c| c.2).sum(),
            chunks: t.copies.len(),
        })
    }
}

impl std::fmt::Display for Breakdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on the device: kernels", self.stage)?;
        for (i, (name, sums, _, classify)) in self.sections.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{name} {sums:.3} s ({classify:.3} classifying)")?;
        }
        let waited: f64 = self.sections.iter().map(|x| x.2).sum();
        write!(f, "; waiting for copies {waited:.3} s (")?;
        for (i, (name, _, wait, _)) in self.sections.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} {wait:.3}")?;
        }
        let rate = match self.copying > 0.0 {
            true => self.bytes as f64 / self.copying / 1e9,
            false => 0.0,
        };
        write!(
            f,
            "); host between chunks {:.3} s; copy stream busy {:.3} s for {:.2} GB in {} chunks ({rate:.1} GB/s while copying)",
            self.host,
            self.copying,
            self.bytes as f64 / 1e9,
            self.chunks
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Breakdown;

    #[test]
    fn a_breakdown_names_each_section_its_waits_and_the_copy_rate() {
        let b = Breakdown {
            stage: "msm_h_l_a_b",
            sections: vec![("H", 0.95, 0.01, 0.02), ("L", 0.08, 0.12, 0.03)],
            host: 0.04,
            copying: 0.5,
            bytes: 24_000_000_000,
            chunks: 30,
        };
        assert_eq!(
            b.to_string(),
            "msm_h_l_a_b on the device: kernels H 0.950 s (0.020 classifying), L 0.080 s \
             (0.030 classifying); waiting for copies 0.130 s (H 0.010, L 0.120); host between chunks 0.040 s; copy stream busy \
             0.500 s for 24.00 GB in 30 chunks (48.0 GB/s while copying)"
        );
    }
}
