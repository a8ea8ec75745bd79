//! A light section's other scalars kept across its streamed chunks.
//!
//! L's, A's and B's scalars are 98.7% zeros and ones: a streamed chunk of
//! 2^23 of their points has ~110 K others. Summed by an MSM of their own,
//! every chunk pays a small MSM's fixed work (sort, bucket reduction, tree
//! sums: ~3 ms in G1 and ~10 ms in G2 on an H100 whatever the size, which
//! was ~0.19 s of a 32 GiB partition's 44 light chunks). Instead each
//! chunk's others and their points are gathered into a buffer of the
//! member's section ([`Kept`], [`kept_points`] of a chunk's points)
//! and one MSM sums them when it fills or the section's last chunk is in.
//! A chunk with more others than the buffer holds (H's: all of them) is
//! summed by its own MSM, as before: in parts when the MSM's scratch holds
//! fewer (the G2 MSM of a streamed key is sized for a kept buffer). [`keep_step`] decides, for each chunk;
//! the tests below check that every other is summed exactly once.

use cuzk_cuda::gather::gather_rows;
use cuzk_cuda::msm::{Msm, MsmCurve};
use cuzk_cuda::{DeviceBuffer, Stream};
use cuzk_field::limbs::{DeviceRepr, FrLimbs, G1AffineLimbs};

use crate::plan::{G1_BYTES, G2_BYTES, SCALAR_BYTES};

/// A streamed chunk keeps up to 1/KEPT_SHARE of its points whose scalars
/// are neither 0 nor 1 (L's, A's and B's 1.3%) past the chunk: they and
/// their scalars are gathered into a buffer of that many, summed by one MSM
/// when it fills or the section ends, instead of a small MSM per chunk.
pub(crate) const KEPT_SHARE: usize = 8;

/// How many of a chunk's `points` a light section keeps (see [`KEPT_SHARE`]).
pub(crate) fn kept_points(points: usize) -> usize {
    (points / KEPT_SHARE).max(1)
}

/// Device bytes one member's kept points and scalars take at chunk `chunk`:
/// one buffer for each light section alive at once, `g1` sections of G1
/// points (a chunk of `chunk`) and `g2` of G2 (a chunk of half as many).
pub(crate) fn kept_bytes(chunk: usize, g1: u64, g2: u64) -> u64 {
    let per = |points: usize, point: u64| {
        kept_points(points) as u64 * (point + SCALAR_BYTES) + 2 * cuzk_cuda::arena::ALIGN
    };
    g1 * per(chunk, G1_BYTES) + g2 * per((chunk / 2).max(1), G2_BYTES)
}

/// What a chunk with `others` other scalars does with a member's kept
/// buffer (`filled` of `cap` taken), the section's last chunk or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeepStep {
    /// Sum the kept others now (their MSM queued and read at once): the
    /// chunk's do not fit beside them, or the chunk sums its own and is
    /// the last.
    pub(crate) flush: bool,
    /// Gather the chunk's others into the buffer (after the flush).
    pub(crate) keep: bool,
    /// The MSM left queued for the chunk's result.
    pub(crate) queued: Queued,
}

/// The MSM a chunk leaves queued, read with its ones' sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queued {
    /// None: the chunk's others wait in the buffer.
    Nothing,
    /// The chunk's own others, in place (more than the buffer holds).
    Own,
    /// The kept buffer's (the section's last chunk).
    Kept,
}

/// The step for one chunk (see [`KeepStep`]).
pub(crate) fn keep_step(filled: usize, others: usize, cap: usize, last: bool) -> KeepStep {
    if others > cap {
        return KeepStep {
            flush: last && filled > 0,
            keep: false,
            queued: Queued::Own,
        };
    }
    let flush = filled + others > cap;
    let after = if flush { others } else { filled + others };
    KeepStep {
        flush,
        keep: others > 0,
        queued: if last && after > 0 {
            Queued::Kept
        } else {
            Queued::Nothing
        },
    }
}

/// One member's kept others of one light section: their points (the
/// section's group, held as G1 limbs: a G2 point is two) and scalars.
pub(crate) struct Kept {
    points: Option<DeviceBuffer<G1AffineLimbs>>,
    scalars: DeviceBuffer<FrLimbs>,
    /// Points it holds.
    cap: usize,
    /// Points gathered and not yet summed.
    filled: usize,
}

impl Kept {
    /// A buffer of `cap` points of `C` and their scalars, from the arena
    /// (no memset: only gathered rows are read).
    pub(crate) fn new<C: MsmCurve>(s: &Stream, cap: usize) -> cuzk_cuda::Result<Kept> {
        let words = std::mem::size_of::<C::Affine>() / std::mem::size_of::<G1AffineLimbs>();
        Ok(Kept {
            points: Some(s.alloc_uninit::<G1AffineLimbs>(cap * words.max(1))?),
            scalars: s.alloc_uninit::<FrLimbs>(cap)?,
            cap,
            filled: 0,
        })
    }

    /// Sums a chunk's others (`indices[..others]` into `bases` and
    /// `scalars`): kept, summed with the kept ones, or by their own MSM
    /// ([`keep_step`]). Returns the kept others' sum when it had to be read
    /// now, and whether an MSM is left queued on `msm` for the chunk's
    /// result.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sum<C: MsmCurve>(
        &mut self,
        s: &Stream,
        msm: &mut Msm<C>,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: &DeviceBuffer<u32>,
        others: usize,
        last: bool,
    ) -> cuzk_cuda::Result<(Option<C::Projective>, bool)> {
        let step = keep_step(self.filled, others, self.cap, last);
        let mut carry = None;
        if step.flush {
            self.enqueue(msm)?;
            carry = Some(msm.result()?);
        }
        if step.keep {
            let mut points = self.take::<C::Affine>()?;
            let r = gather_rows(s, bases, indices, others, &mut points, self.filled);
            self.put(points)?;
            r?;
            gather_rows(s, scalars, indices, others, &mut self.scalars, self.filled)?;
            self.filled += others;
        }
        let queued = match step.queued {
            Queued::Nothing => false,
            // More others than the MSM's scratch holds (a G2 MSM is sized
            // for a kept buffer, not a chunk): in parts, read now.
            Queued::Own if others > msm.capacity() => {
                let own = msm.run_indexed_in_parts(bases, scalars, indices, others)?;
                carry = Some(carry.map_or(own, |c| C::add(&c, &own)));
                false
            }
            Queued::Own => {
                msm.enqueue(bases, scalars, Some(indices), others)?;
                true
            }
            Queued::Kept => {
                self.enqueue(msm)?;
                true
            }
        };
        Ok((carry, queued))
    }

    /// Whether every kept other has been summed.
    pub(crate) fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Queues the MSM over the kept others; the buffer is free again once
    /// it has run (same stream).
    fn enqueue<C: MsmCurve>(&mut self, msm: &mut Msm<C>) -> cuzk_cuda::Result<()> {
        let points = self.take::<C::Affine>()?;
        let r = msm.enqueue(&points, &self.scalars, None, self.filled);
        self.put(points)?;
        self.filled = 0;
        r
    }

    fn take<T: DeviceRepr>(&mut self) -> cuzk_cuda::Result<DeviceBuffer<T>> {
        self.points.take().expect("put back").recast()
    }

    fn put<T: DeviceRepr>(&mut self, b: DeviceBuffer<T>) -> cuzk_cuda::Result<()> {
        self.points = Some(b.recast()?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Runs a section's chunks through [`keep_step`] as `Kept::sum` does,
    /// counting which chunk's others each MSM sums: every other summed
    /// exactly once, the buffer never over its cap, at most one MSM read
    /// at once and one left queued per chunk, nothing kept after the last.
    fn run(chunks: &[usize], cap: usize) -> (Vec<usize>, usize) {
        let mut kept: Vec<(usize, usize)> = Vec::new(); // (chunk, others)
        let mut summed = vec![0usize; chunks.len()];
        let mut msms = 0;
        let sum = |kept: &mut Vec<(usize, usize)>, summed: &mut Vec<usize>| {
            for (k, n) in kept.drain(..) {
                summed[k] += n;
            }
        };
        for (k, &others) in chunks.iter().enumerate() {
            let last = k + 1 == chunks.len();
            let filled: usize = kept.iter().map(|&(_, n)| n).sum();
            let step = keep_step(filled, others, cap, last);
            if step.flush {
                assert!(filled > 0, "chunk {k}: flushed an empty buffer");
                sum(&mut kept, &mut summed);
                msms += 1;
            }
            if step.keep {
                kept.push((k, others));
                let now: usize = kept.iter().map(|&(_, n)| n).sum();
                assert!(now <= cap, "chunk {k}: {now} kept of {cap}");
            } else if others > 0 {
                assert_eq!(step.queued, Queued::Own, "chunk {k}: others dropped");
            }
            match step.queued {
                Queued::Nothing => {}
                Queued::Own => {
                    summed[k] += others;
                    msms += 1;
                }
                Queued::Kept => {
                    assert!(!kept.is_empty(), "chunk {k}: an MSM of nothing");
                    sum(&mut kept, &mut summed);
                    msms += 1;
                }
            }
            if last {
                assert!(kept.is_empty(), "others left kept after the last chunk");
            }
        }
        (summed, msms)
    }

    #[test]
    fn every_other_is_summed_once_whatever_the_chunks() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for case in 0..2_000 {
            let cap = rng.gen_range(1..50);
            let n = rng.gen_range(1..20);
            let chunks: Vec<usize> = (0..n)
                .map(|_| match rng.gen_range(0..4) {
                    0 => 0,
                    1 => rng.gen_range(cap..3 * cap + 1),
                    _ => rng.gen_range(0..cap + 1),
                })
                .collect();
            let (summed, _) = run(&chunks, cap);
            assert_eq!(summed, chunks, "case {case}: cap {cap}");
        }
    }

    #[test]
    fn few_others_share_an_msm_and_many_keep_their_own() {
        // L at 32 GiB: 16 chunks of ~105 K others, a buffer of 2^20: two
        // MSMs instead of sixteen.
        let l = vec![105_000; 16];
        assert_eq!(run(&l, 1 << 20), (l.clone(), 2));
        // H: every scalar an other, each chunk its own MSM.
        let h = vec![1 << 23; 16];
        assert_eq!(run(&h, 1 << 20), (h.clone(), 16));
        // No others at all: no MSM.
        assert_eq!(run(&[0, 0, 0], 8), (vec![0, 0, 0], 0));
        // Kept others, then a last chunk with too many: the kept ones are
        // summed first (read at once), the last by its own MSM.
        let step = keep_step(5, 20, 8, true);
        assert_eq!(
            step,
            KeepStep {
                flush: true,
                keep: false,
                queued: Queued::Own
            }
        );
        // A full buffer is summed before the chunk's others go in.
        let step = keep_step(6, 3, 8, false);
        assert_eq!(
            step,
            KeepStep {
                flush: true,
                keep: true,
                queued: Queued::Nothing
            }
        );
    }
}
