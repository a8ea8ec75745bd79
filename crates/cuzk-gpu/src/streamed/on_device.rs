//! The device's side of a streamed stage: the ring's chunk buffers on the
//! copy stream, each crossing's sums on the compute stream, as
//! [`batch::run`] drives them.

use cuzk_cuda::gather::copy_pad;
use cuzk_cuda::msm::{KeptBuckets, MsmCurve, G1, G2};
use cuzk_cuda::{DeviceBuffer, Event, Stream};
use cuzk_field::limbs::{fr_as_limbs, FrLimbs};

use super::parked::{parked_after, ParkedChunks};
use super::{g1_parts, g2_parts, Bases, Others, Parts, Ring, Section};
use crate::batch::{BatchOrder, Crossing, Crossings, Sum};
use crate::dense::{AuxValues, DenseScalars};
use crate::kept::{kept_points, Kept};
use crate::worker::{Scalars, Worker};

/// The device's side of a batch ([`batch::run`]): the ring's chunk
/// buffers on the copy stream, the worker's classifier, batch sums and
/// MSMs on the compute stream (one member's sums read before the next
/// member's are queued). The members' scalars are in VRAM before the stage
/// and freed after it; `prepare` and `release` make and free a member's
/// kept others of a light section.
pub(super) struct OnDevice<'x, 'a> {
    pub(super) worker: &'x mut Worker,
    pub(super) ring: &'x mut Ring,
    /// Each member's sections: the same points, the member's scalars.
    pub(super) members: &'x [Vec<Section<'a>>],
    pub(super) order: &'x BatchOrder,
    /// Member m's kept others of section s at `m * sections + s`, while
    /// the section's chunks run.
    pub(super) kept: Vec<Option<Kept>>,
    /// H's kept buckets while its chunks run, when the worker's G1 MSM
    /// was made for them (the plan's `h_kept`) and the batch has one
    /// member: every H chunk's others summed into them, reduced once.
    pub(super) h_buckets: Option<KeptBuckets<G1>>,
    /// The kept others' sum read inside `enqueue`, added to its result.
    pub(super) carry: Option<Sum>,
    /// Whether `enqueue` left an MSM queued for `result`.
    pub(super) queued: bool,
    /// The compute stream's events around the wait for the copy of the
    /// crossing whose sums are queued.
    pub(super) waited: Option<(Event, Event)>,
    /// (section, chunk) of the crossings started before the stage, in its
    /// order ([`Worker::open_ring_ahead`]): not started again.
    pub(super) ahead: Vec<(usize, usize)>,
    /// The two chunk buffers parked scalars cross into, when a member's
    /// section reads them ([`Scalars::Parked`]).
    pub(super) parked: Option<ParkedChunks>,
}

impl Crossings for OnDevice<'_, '_> {
    type Error = cuzk_cuda::Error;

    /// A light section's kept others: a share of a chunk's points
    /// (`kept_points`), counted by the plan; H's kept buckets, when the
    /// worker's MSM holds them and the batch has one member.
    fn prepare(&mut self, m: usize, s: usize) -> cuzk_cuda::Result<()> {
        let section = &self.members[m][s];
        if !section.light {
            let (_, msm, _) = g1_parts(self.worker);
            if self.members.len() == 1 && msm.kept_window().is_some() {
                self.h_buckets = Some(msm.kept_buckets()?);
            }
            return Ok(());
        }
        let stream = &self.worker.stream;
        let cap = kept_points(section.points(self.ring.chunk));
        let kept = match section.bases {
            Bases::G1(_) => Kept::new::<G1>(stream, cap)?,
            Bases::G2(_) => Kept::new::<G2>(stream, cap)?,
        };
        self.kept[m * self.members[m].len() + s] = Some(kept);
        Ok(())
    }

    /// Copies the crossing's points into slot i mod [`RING`] on the copy
    /// stream, after the sums that last read that slot.
    fn cross(&mut self, i: usize, c: &Crossing) -> cuzk_cuda::Result<()> {
        if let Some(&started) = self.ahead.get(i) {
            // Started while the H polynomial ran: the same chunk, or a bug.
            return match started == (c.section, c.chunk) {
                true => Ok(()),
                false => Err(cuzk_cuda::Error::BadArguments {
                    kernel: "streamed key",
                    message: format!(
                        "crossing {i} was started ahead as section {} chunk {}, the stage \
                         crosses section {} chunk {} there",
                        started.0, started.1, c.section, c.chunk
                    ),
                }),
            };
        }
        let section = &self.members[0][c.section];
        self.worker
            .upload_task(self.ring, i % self.ring.slots.len(), section, c.chunk)
    }

    fn enqueue(&mut self, i: usize, c: &Crossing, m: usize) -> cuzk_cuda::Result<()> {
        let (w, ring) = (&mut *self.worker, &mut *self.ring);
        let s = w.stream.clone();
        let slot = i % ring.slots.len();
        let section = &self.members[m][c.section];
        let (start, end) = section.range(ring.chunk, c.chunk);
        let len = end - start;
        if m == c.members.start {
            let queued = s.record()?;
            s.wait(ring.uploaded[slot].as_ref().expect("uploaded before use"))?;
            self.waited = Some((queued, s.record()?));
        }
        // The chunk's scalars, zeros past them (their stale points are
        // skipped), by kernels: a copy-engine copy or memset here would
        // queue behind the copy stream's uploads in flight.
        let before = s.record()?;
        match section.scalars {
            Scalars::Device(d) => copy_pad(&s, d, start, len, ring.scalars_mut())?,
            Scalars::Host(h) => {
                w.last_moved += std::mem::size_of_val(&h[start..end]) as u64;
                w.stage_upload(&s, fr_as_limbs(&h[start..end]), ring.scalars_mut(), 0)?;
                let chunk = ring.chunk;
                if len < chunk {
                    s.zero_range(ring.scalars_mut(), len, chunk - len)?;
                }
            }
            Scalars::Dense(d) => dense_chunk(&s, d, start, end, ring.scalars_mut())?,
            Scalars::Compact(c) => c.expand_span(&s, start, len, ring.scalars_mut())?,
            Scalars::Parked(_) => {
                let parked = self
                    .parked
                    .as_mut()
                    .expect("made for a stage with parked scalars");
                let next = parked_after(self.order, self.members, i, m);
                parked.take(
                    &s,
                    &w.copy,
                    (i, m),
                    (start, end),
                    self.members,
                    self.order,
                    ring,
                )?;
                if let Some(next) = next {
                    parked.load_next(&w.copy, next, self.members, self.order, ring.chunk)?;
                }
            }
        }
        let last = self
            .order
            .span(m, c.section)
            .is_some_and(|(_, end)| end == i);
        let kept = self.kept[m * self.members[m].len() + c.section].as_mut();
        let (carry, queued, classified) = match section.bases {
            Bases::G1(_) => {
                let to = match (kept, self.h_buckets.as_mut()) {
                    (Some(k), _) => Others::Kept(k),
                    (None, Some(b)) if !section.light => Others::Buckets(b),
                    (None, _) => Others::Own,
                };
                let (carry, queued, classified) = ring.with_slot(slot, |b, ring| {
                    w.enqueue_chunk(b, ring.scalars(), to, last, g1_parts)
                })?;
                (carry.map(Sum::G1), queued, classified)
            }
            Bases::G2(_) => {
                let to = kept.map_or(Others::Own, Others::Kept);
                let (carry, queued, classified) = ring.with_slot(slot, |b, ring| {
                    w.enqueue_chunk(b, ring.scalars(), to, last, g2_parts)
                })?;
                (carry.map(Sum::G2), queued, classified)
            }
        };
        ring.trace.classified.push((c.section, before, classified));
        self.carry = carry;
        self.queued = queued;
        Ok(())
    }

    /// The slot may be refilled once the sums queued so far have run.
    fn done(&mut self, i: usize, c: &Crossing) -> cuzk_cuda::Result<()> {
        let s = self.worker.stream.clone();
        let slot = i % self.ring.slots.len();
        self.ring.used[slot] = Some(s.record()?);
        let (queued, ready) = self.waited.take().expect("sums queued before done");
        self.ring
            .trace
            .tasks
            .push((c.section, queued, ready, s.record()?));
        Ok(())
    }

    fn result(&mut self, _: usize, c: &Crossing, _: usize) -> cuzk_cuda::Result<Sum> {
        let queued = self.queued;
        let sum = match self.members[0][c.section].bases {
            Bases::G1(_) => Sum::G1(chunk_result(self.worker, queued, g1_parts)?),
            Bases::G2(_) => Sum::G2(chunk_result(self.worker, queued, g2_parts)?),
        };
        Ok(match self.carry.take() {
            Some(carry) => sum + carry,
            None => sum,
        })
    }

    fn release(&mut self, m: usize, s: usize) -> cuzk_cuda::Result<()> {
        let kept = self.kept[m * self.members[m].len() + s].take();
        debug_assert!(kept.is_none_or(|k| k.is_empty()), "others left kept");
        if !self.members[m][s].light {
            // Read by the last H chunk's result, before this.
            self.h_buckets = None;
        }
        Ok(())
    }

    fn in_g2(&self, s: usize) -> bool {
        matches!(self.members[0][s].bases, Bases::G2(_))
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
        match d.aux {
            AuxValues::Full(v) => d.ranked.gather(s, v, span, (r0, r1), out, head)?,
            AuxValues::Compact(c) => d.ranked.gather_compact(s, c, span, (r0, r1), out, head)?,
        }
    }
    Ok(())
}

/// Waits for the chunk's queued sums and adds them up: the ones' batch
/// sum, and the MSM when one was left `queued`.
fn chunk_result<C: MsmCurve>(
    w: &mut Worker,
    queued: bool,
    parts: fn(&mut Worker) -> Parts<'_, C>,
) -> cuzk_cuda::Result<C::Projective>
where
    C::Projective: std::ops::Add<Output = C::Projective>,
{
    let (_, msm, sum) = parts(w);
    let ones = sum.result()?;
    Ok(match queued {
        true => ones + msm.result()?,
        false => ones,
    })
}
