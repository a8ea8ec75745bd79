//! The five MSMs with the key streamed from host memory. Every section's
//! points cross PCIe in chunks into a ring of [`RING`] chunk buffers (G1
//! chunks; a G2 chunk of half as many points takes the same bytes) while
//! earlier chunks' sums run, straight from the key's memory when it is
//! pinned in place (the device's `SrsSlot::pin_in_host`), else through the
//! worker's pinned staging buffers. H's chunks are compute-bound, L's, A's
//! and B's copy-bound: the plan's [`BesideH`] sections cross among H's
//! (`interleave.rs`), the others after. Each chunk's sums are added on the
//! host.

use std::time::Instant;

use cuzk_cuda::gather::copy_pad;
use cuzk_cuda::msm::{BatchSum, Classifier, Msm, MsmCurve, G1, G2};
use cuzk_cuda::{DeviceBuffer, Event, Stream};
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, DeviceRepr, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::{G1Affine, G1Projective, G2Projective, Group};
use cuzk_groth16::prover::{dense_ab_scalars_of, MsmSums, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;

use crate::batch::{self, BatchOrder, Crossing, Crossings};
use crate::dense::{DenseIndex, DenseScalars};
use crate::worker::{Clock, Dense, Scalars, Worker};

/// Chunk buffers in flight: the copy engine runs up to three chunks ahead
/// of the sums. Four G1 chunks are the bytes of the two G2 staging buffers
/// the plan counts.
pub(crate) const RING: usize = 4;

/// A section's points in host memory.
#[derive(Clone, Copy)]
enum Bases<'a> {
    G1(&'a [G1AffineLimbs]),
    G2(&'a [G2AffineLimbs]),
}

/// One MSM of a streamed key: its points, its scalars, how many pairs.
struct Section<'a> {
    /// The key section's name in reports ("H", "L", "A", "B_G1", "B_G2").
    name: &'static str,
    bases: Bases<'a>,
    scalars: Scalars<'a>,
    count: usize,
}

impl<'a> Section<'a> {
    fn g1(name: &'static str, bases: &'a [G1Affine], scalars: Scalars<'a>, count: usize) -> Self {
        Section {
            name,
            bases: Bases::G1(g1_as_limbs(bases)),
            scalars,
            count,
        }
    }

    /// B's two sections, in G1 and G2, over one set of scalars.
    fn b(key: &'a ProvingKey, scalars: Scalars<'a>, count: usize) -> [Self; 2] {
        [
            Section::g1("B_G1", &key.b_g1, scalars, count),
            Section {
                name: "B_G2",
                bases: Bases::G2(g2_as_limbs(&key.b_g2)),
                scalars,
                count,
            },
        ]
    }

    /// Points per chunk: G2 points are twice G1's bytes.
    fn points(&self, chunk: usize) -> usize {
        match self.bases {
            Bases::G1(_) => chunk,
            Bases::G2(_) => (chunk / 2).max(1),
        }
    }

    fn chunks(&self, chunk: usize) -> usize {
        self.count.div_ceil(self.points(chunk))
    }

    fn range(&self, chunk: usize, k: usize) -> (usize, usize) {
        let p = self.points(chunk);
        (k * p, ((k + 1) * p).min(self.count))
    }
}

/// A section's sum.
#[derive(Clone, Copy)]
enum Sum {
    G1(G1Projective),
    G2(G2Projective),
}

impl Sum {
    fn g1(self) -> G1Projective {
        match self {
            Sum::G1(p) => p,
            Sum::G2(_) => unreachable!("a G1 section"),
        }
    }

    fn g2(self) -> G2Projective {
        match self {
            Sum::G2(p) => p,
            Sum::G1(_) => unreachable!("a G2 section"),
        }
    }
}

/// The ring of chunk buffers, one chunk of scalars, and what has crossed.
struct Ring {
    /// `chunk` G1 points' bytes each; taken out while recast for a chunk.
    slots: Vec<Option<DeviceBuffer<G1AffineLimbs>>>,
    /// The copy that filled each slot.
    uploaded: Vec<Option<Event>>,
    /// The sums that last read each slot (its next copy waits for them).
    used: Vec<Option<Event>>,
    scalars: DeviceBuffer<FrLimbs>,
    chunk: usize,
    /// Key bytes copied in so far.
    crossed: u64,
    chunks: usize,
    /// The current stage's events, for its breakdown.
    trace: Trace,
}

/// Device events of one stage's chunks, read once the stage is done.
#[derive(Default)]
struct Trace {
    /// Per chunk task, on the compute stream: its section, then events
    /// before the wait for its copy, after that wait, and after its sums.
    tasks: Vec<(usize, Event, Event, Event)>,
    /// Per copy, on the copy stream: after the wait for its slot, after
    /// the copy, and its bytes.
    copies: Vec<(Event, Event, u64)>,
}

/// Where one streamed stage's device time went (logged per partition at
/// info by `cuzk_gpu::streamed`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Breakdown {
    pub(crate) stage: &'static str,
    /// Per section: its name, seconds of its chunks' kernels (scalars
    /// moved or gathered, classified, summed; one host turn each for the
    /// class counts), and seconds the compute stream waited for its copies.
    pub(crate) sections: Vec<(&'static str, f64, f64)>,
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
    fn of(stage: &'static str, names: &[&'static str], t: &Trace) -> cuzk_cuda::Result<Self> {
        let mut sections: Vec<(&'static str, f64, f64)> =
            names.iter().map(|&n| (n, 0.0, 0.0)).collect();
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
        for (i, (name, sums, _)) in self.sections.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{name} {sums:.3} s")?;
        }
        let waited: f64 = self.sections.iter().map(|x| x.2).sum();
        write!(f, "; waiting for copies {waited:.3} s (")?;
        for (i, (name, _, wait)) in self.sections.iter().enumerate() {
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

impl Ring {
    fn new(s: &Stream, copy: &Stream, chunk: usize) -> cuzk_cuda::Result<Ring> {
        let mut slots = Vec::with_capacity(RING);
        for _ in 0..RING {
            slots.push(Some(s.alloc::<G1AffineLimbs>(chunk)?));
        }
        let scalars = s.alloc::<FrLimbs>(chunk)?;
        // The copy stream writes into buffers allocated on the compute stream.
        copy.wait(&s.record()?)?;
        Ok(Ring {
            slots,
            uploaded: (0..RING).map(|_| None).collect(),
            used: (0..RING).map(|_| None).collect(),
            scalars,
            chunk,
            crossed: 0,
            chunks: 0,
            trace: Trace::default(),
        })
    }

    /// Slot `i`'s buffer as points of type `T`, taken out of the ring.
    fn take<T: DeviceRepr>(&mut self, i: usize) -> cuzk_cuda::Result<DeviceBuffer<T>> {
        self.slots[i].take().expect("a slot is put back").recast()
    }

    fn put<T: DeviceRepr>(&mut self, i: usize, b: DeviceBuffer<T>) -> cuzk_cuda::Result<()> {
        self.slots[i] = Some(b.recast()?);
        Ok(())
    }
}

/// The worker's G1 or G2 classifier, MSM and batch sum.
type Parts<'w, C> = (&'w mut Classifier, &'w mut Msm<C>, &'w mut BatchSum<C>);

fn g1_parts(w: &mut Worker) -> Parts<'_, G1> {
    let sc = w.scratch.as_mut().expect("sized");
    let g1 = sc.g1.as_mut().expect("made with the scratch");
    (&mut sc.classifier, g1, &mut w.sum_g1)
}

fn g2_parts(w: &mut Worker) -> Parts<'_, G2> {
    let sc = w.scratch.as_mut().expect("sized");
    (&mut sc.classifier, &mut sc.g2, &mut w.sum_g2)
}

impl Worker {
    /// The five MSMs with the key streamed in `chunk`-point chunks.
    /// `aux_on_device`: the aux values already in VRAM (z's tail, when a, b,
    /// c were evaluated there): L reads them in place and A's and B's
    /// scalars are gathered from them on the device a chunk at a time, so
    /// no scalar crosses PCIe, and L's, A's and B's chunks cross among H's;
    /// without it every scalar streams from the host beside its bases (A's
    /// and B's gathered on the host first) and the sections run in turn.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn streamed_msms(
        &mut self,
        chunk: usize,
        key: &ProvingKey,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        aux_on_device: Option<DeviceBuffer<FrLimbs>>,
        clock: &mut Clock,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = dh.len();
        self.pin = self.srs.host_pin(key);
        if self.pin.is_none() {
            tracing::info!(
                "the streamed key is not pinned in host memory: its chunks cross through \
                 the staging buffers"
            );
        }
        let mut ring = Ring::new(&s, &self.copy, chunk)?;
        let aux = w.num_aux();
        let h = Section::g1("H", &key.h, Scalars::Device(&dh), n - 1);
        let sums = match aux_on_device {
            Some(dl) => {
                // L reads the aux values in place; A's and B's scalars are
                // gathered from them a chunk at a time.
                let a = self.dense_section(&dl, w, Dense::A, key.a.len())?;
                let b = self.dense_section(&dl, w, Dense::B, key.b_g1.len())?;
                let mut all = vec![
                    h,
                    Section::g1("L", &key.l, Scalars::Device(&dl), aux),
                    Section::g1("A", &key.a, Scalars::Dense(&a), a.len()),
                ];
                all.extend(Section::b(key, Scalars::Dense(&b), b.len()));
                let got = self.phase(&mut ring, "msm_h_l_a_b", &all, true, clock)?;
                MsmSums {
                    h: got[0].g1(),
                    l: got[1].g1(),
                    a: got[2].g1(),
                    b_g1: got[3].g1(),
                    b_g2: got[4].g2(),
                }
            }
            None => {
                let h = self.phase(&mut ring, "msm_h", &[h], false, clock)?[0].g1();
                drop(dh);
                // A compact witness's values are expanded on the host: these
                // MSMs read host scalars.
                let values = w.aux_values();
                let l = Section::g1("L", &key.l, Scalars::Host(&values), aux);
                let l = self.phase(&mut ring, "msm_l", &[l], false, clock)?[0].g1();
                let start = Instant::now();
                let (a_scalars, b_scalars) = dense_ab_scalars_of(w, &values);
                drop(values);
                t.record("gather", start.elapsed());
                let a = Section::g1("A", &key.a, Scalars::Host(&a_scalars), a_scalars.len());
                let a = self.phase(&mut ring, "msm_a", &[a], false, clock)?[0].g1();
                let b = Section::b(key, Scalars::Host(&b_scalars), b_scalars.len());
                let b = self.phase(&mut ring, "msm_b", &b, false, clock)?;
                MsmSums {
                    h,
                    l,
                    a,
                    b_g1: b[0].g1(),
                    b_g2: b[1].g2(),
                }
            }
        };
        tracing::info!(
            "streamed key: {:.2} GB crossed in {} chunks of up to {} points",
            ring.crossed as f64 / 1e9,
            ring.chunks,
            ring.chunk
        );
        self.last_key_bytes = ring.crossed;
        Ok(sums)
    }

    /// One stage of the streamed MSMs: `sections` summed, their chunks in
    /// the interleaved order (`mixed`: the first section's chunks with the
    /// others spread between them) or in turn.
    fn phase(
        &mut self,
        ring: &mut Ring,
        name: &'static str,
        sections: &[Section<'_>],
        mixed: bool,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<Vec<Sum>> {
        let s = self.stream.clone();
        clock.start(&s, name)?;
        let chunks: Vec<usize> = sections.iter().map(|x| x.chunks(ring.chunk)).collect();
        let order = match mixed {
            true => BatchOrder::new(&chunks, 1, 1),
            false => BatchOrder::in_turn(&chunks),
        };
        let mut device = OnDevice {
            worker: self,
            ring: &mut *ring,
            sections,
            waited: None,
        };
        let mut sums = batch::run(&order, RING, &mut device)?;
        let sums = sums.pop().expect("one member");
        clock.stop(&s)?;
        let names: Vec<&'static str> = sections.iter().map(|x| x.name).collect();
        let trace = std::mem::take(&mut ring.trace);
        tracing::info!("{}", Breakdown::of(name, &names, &trace)?);
        Ok(sums)
    }

    /// A's (`Dense::A`) or B's scalars to be gathered a chunk at a time
    /// from `dl`, checked to number the key section's `points`: its inputs
    /// and its bitmap (with the set bits before each word) go up now, before
    /// any chunk is in flight.
    fn dense_section<'a>(
        &mut self,
        dl: &'a DeviceBuffer<FrLimbs>,
        w: &'a Synthesized,
        which: Dense,
        points: usize,
    ) -> cuzk_cuda::Result<DenseScalars<'a>> {
        let (inputs, density) = self.dense_parts(w, which);
        let index = DenseIndex::new(density, w.num_aux());
        if inputs.len() + index.ones() != points {
            return Err(cuzk_cuda::Error::BadArguments {
                kernel: "prover_gather_ranks",
                message: format!(
                    "{} inputs + {} aux values by density, but the key section has {points} points",
                    inputs.len(),
                    index.ones()
                ),
            });
        }
        let s = self.stream.clone();
        let mut d_inputs = s.alloc::<FrLimbs>(inputs.len().max(1))?;
        s.upload_at(fr_as_limbs(&inputs), &mut d_inputs, 0)?;
        let scratch = self.scratch.as_mut().expect("sized above");
        let ranked = scratch.gather.rank(density, w.num_aux())?;
        Ok(DenseScalars {
            aux: dl,
            inputs: d_inputs,
            num_inputs: inputs.len(),
            index,
            ranked,
        })
    }

    /// Copies `task`'s points into ring slot `slot` on the copy stream,
    /// after the sums that last read it.
    fn upload_task(
        &mut self,
        ring: &mut Ring,
        slot: usize,
        section: &Section<'_>,
        chunk: usize,
    ) -> cuzk_cuda::Result<()> {
        let copy = self.copy.clone();
        if let Some(e) = &ring.used[slot] {
            copy.wait(e)?;
        }
        let started = copy.record()?;
        let (start, end) = section.range(ring.chunk, chunk);
        let bytes = match section.bases {
            Bases::G1(b) => {
                let mut d = ring.take::<G1AffineLimbs>(slot)?;
                let r = self.chunk_upload(&copy, &b[start..end], &mut d);
                ring.put(slot, d)?;
                r?;
                std::mem::size_of_val(&b[start..end])
            }
            Bases::G2(b) => {
                let mut d = ring.take::<G2AffineLimbs>(slot)?;
                let r = self.chunk_upload(&copy, &b[start..end], &mut d);
                ring.put(slot, d)?;
                r?;
                std::mem::size_of_val(&b[start..end])
            }
        };
        ring.uploaded[slot] = Some(copy.record()?);
        ring.trace
            .copies
            .push((started, copy.record()?, bytes as u64));
        ring.crossed += bytes as u64;
        ring.chunks += 1;
        Ok(())
    }

    /// Queues one chunk's sums: scalars classified, the ones batch-summed,
    /// the others through Pippenger, the zeros skipped.
    fn enqueue_chunk<C: MsmCurve>(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        parts: fn(&mut Worker) -> Parts<'_, C>,
    ) -> cuzk_cuda::Result<()> {
        let (classifier, msm, sum) = parts(self);
        let counts = classifier.classify(scalars)?;
        sum.enqueue_indices(bases, classifier.ones(), counts.ones)?;
        msm.enqueue(bases, scalars, Some(classifier.others()), counts.others)
    }

    /// One chunk of a section's points into `dst`: straight from the key's
    /// memory when it is pinned in place, else through the staging buffers.
    fn chunk_upload<T: DeviceRepr + Sync>(
        &mut self,
        copy: &Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> cuzk_cuda::Result<()> {
        match &self.pin {
            Some(pin) if pin.holds(src) => copy.upload_from_pin(pin, src, dst, 0),
            _ => self.stage_upload(copy, src, dst, 0),
        }
    }
}

/// The device's side of a batch of one partition ([`batch::run`]): the
/// ring's chunk buffers on the copy stream, the worker's classifier, batch
/// sums and MSMs on the compute stream. The partition's scalars are made
/// before the stage (its one member's state), so `prepare` and `release`
/// have nothing to do.
struct OnDevice<'x, 'a> {
    worker: &'x mut Worker,
    ring: &'x mut Ring,
    sections: &'x [Section<'a>],
    /// The compute stream's events around the wait for the copy of the
    /// crossing whose sums are queued.
    waited: Option<(Event, Event)>,
}

impl Crossings for OnDevice<'_, '_> {
    type Sum = Sum;
    type Error = cuzk_cuda::Error;

    fn prepare(&mut self, _: usize, _: usize) -> cuzk_cuda::Result<()> {
        Ok(())
    }

    /// Copies the crossing's points into slot i mod [`RING`] on the copy
    /// stream, after the sums that last read that slot.
    fn cross(&mut self, i: usize, c: &Crossing) -> cuzk_cuda::Result<()> {
        let section = &self.sections[c.section];
        self.worker
            .upload_task(self.ring, i % RING, section, c.chunk)
    }

    fn enqueue(&mut self, i: usize, c: &Crossing, m: usize) -> cuzk_cuda::Result<()> {
        debug_assert_eq!(m, 0, "a batch of one partition");
        let (w, ring) = (&mut *self.worker, &mut *self.ring);
        let s = w.stream.clone();
        let slot = i % RING;
        let section = &self.sections[c.section];
        let (start, end) = section.range(ring.chunk, c.chunk);
        let len = end - start;
        let queued = s.record()?;
        s.wait(ring.uploaded[slot].as_ref().expect("uploaded before use"))?;
        self.waited = Some((queued, s.record()?));
        // The chunk's scalars, zeros past them (their stale points are
        // skipped), by kernels: a copy-engine copy or memset here would
        // queue behind the copy stream's uploads in flight.
        match section.scalars {
            Scalars::Device(d) => copy_pad(&s, d, start, len, &mut ring.scalars)?,
            Scalars::Host(h) => {
                w.stage_upload(&s, fr_as_limbs(&h[start..end]), &mut ring.scalars, 0)?;
                if len < ring.chunk {
                    s.zero_range(&mut ring.scalars, len, ring.chunk - len)?;
                }
            }
            Scalars::Dense(d) => dense_chunk(&s, d, start, end, &mut ring.scalars)?,
        }
        match section.bases {
            Bases::G1(_) => {
                let b = ring.take::<G1AffineLimbs>(slot)?;
                let r = w.enqueue_chunk(&b, &ring.scalars, g1_parts);
                ring.put(slot, b)?;
                r
            }
            Bases::G2(_) => {
                let b = ring.take::<G2AffineLimbs>(slot)?;
                let r = w.enqueue_chunk(&b, &ring.scalars, g2_parts);
                ring.put(slot, b)?;
                r
            }
        }
    }

    /// The slot may be refilled once the sums queued so far have run.
    fn done(&mut self, i: usize, c: &Crossing) -> cuzk_cuda::Result<()> {
        let s = self.worker.stream.clone();
        self.ring.used[i % RING] = Some(s.record()?);
        let (queued, ready) = self.waited.take().expect("sums queued before done");
        self.ring
            .trace
            .tasks
            .push((c.section, queued, ready, s.record()?));
        Ok(())
    }

    fn result(&mut self, _: usize, c: &Crossing, _: usize) -> cuzk_cuda::Result<Sum> {
        Ok(match self.sections[c.section].bases {
            Bases::G1(_) => Sum::G1(chunk_result(self.worker, g1_parts)?),
            Bases::G2(_) => Sum::G2(chunk_result(self.worker, g2_parts)?),
        })
    }

    fn release(&mut self, _: usize, _: usize) -> cuzk_cuda::Result<()> {
        Ok(())
    }

    fn zero(&self, s: usize) -> Sum {
        match self.sections[s].bases {
            Bases::G1(_) => Sum::G1(G1Projective::identity()),
            Bases::G2(_) => Sum::G2(G2Projective::identity()),
        }
    }

    fn add(&self, a: Sum, b: Sum) -> Sum {
        match (a, b) {
            (Sum::G1(a), Sum::G1(b)) => Sum::G1(a + b),
            (Sum::G2(a), Sum::G2(b)) => Sum::G2(a + b),
            _ => unreachable!("the sums of one section share a group"),
        }
    }
}

/// Scalars `start..end` of a dense section into `out[..end − start]`, zeros
/// after: the inputs among them, then the aux values of their ranks,
/// gathered on the device (kernels only, nothing uploaded).
fn dense_chunk(
    s: &Stream,
    d: &DenseScalars<'_>,
    start: usize,
    end: usize,
    out: &mut DeviceBuffer<FrLimbs>,
) -> cuzk_cuda::Result<()> {
    let ni = d.num_inputs;
    let head = ni.clamp(start, end) - start;
    copy_pad(s, &d.inputs, start.min(ni), head, out)?;
    let (r0, r1) = (start.max(ni) - ni, end.max(ni) - ni);
    if r1 > r0 {
        let span = d.index.span(r0, r1);
        d.ranked.gather(s, d.aux, span, (r0, r1), out, head)?;
    }
    Ok(())
}

/// Waits for the chunk's queued sums and adds them up.
fn chunk_result<C: MsmCurve>(
    w: &mut Worker,
    parts: fn(&mut Worker) -> Parts<'_, C>,
) -> cuzk_cuda::Result<C::Projective>
where
    C::Projective: std::ops::Add<Output = C::Projective>,
{
    let (_, msm, sum) = parts(w);
    Ok(sum.result()? + msm.result()?)
}

#[cfg(test)]
mod tests {
    use super::Breakdown;

    #[test]
    fn a_breakdown_names_each_section_its_waits_and_the_copy_rate() {
        let b = Breakdown {
            stage: "msm_h_l_a_b",
            sections: vec![("H", 0.95, 0.01), ("L", 0.08, 0.12)],
            host: 0.04,
            copying: 0.5,
            bytes: 24_000_000_000,
            chunks: 30,
        };
        assert_eq!(
            b.to_string(),
            "msm_h_l_a_b on the device: kernels H 0.950 s, L 0.080 s; waiting for copies \
             0.130 s (H 0.010, L 0.120); host between chunks 0.040 s; copy stream busy \
             0.500 s for 24.00 GB in 30 chunks (48.0 GB/s while copying)"
        );
    }
}
