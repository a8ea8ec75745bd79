//! A parked batch on the device (the plan: `VramPlan::parked_batch`): each
//! member's a, b, c and H polynomial in turn, its H coefficients copied to
//! a pinned host buffer (the device's [`ParkedPool`]) and freed on the
//! device, then
//! every member's aux values up in their compact form (cuzk-cuda
//! `CompactOnDevice`) and one pass of the key's chunks that every member
//! sums. A member's H chunk crosses back into one of two chunk buffers
//! ([`ParkedChunks`]) on the copy stream while the previous member's sums
//! run, and is copied into the ring's scalars before its own.

use cuzk_cuda::compact::CompactOnDevice;
use cuzk_cuda::gather::copy_pad;
use cuzk_cuda::{DeviceBuffer, Event, PinnedBuffer, Stream};
use cuzk_field::limbs::FrLimbs;
use cuzk_groth16::prover::{MsmSums, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;

use super::{dense_indexes, interleaved_sections, member_sums, Ring, Section};
use crate::batch::BatchOrder;
use crate::dense::AuxValues;
use crate::plan::{ParkedBatch, SrsMode, VramPlan};
use crate::worker::{classed, Clock, Dense, Scalars, Worker};

/// Pinned host buffers for members' parked H coefficients, made once and
/// kept, shared by a device's workers.
pub(crate) type ParkedPool = std::sync::Arc<parking_lot::Mutex<Pool>>;

/// Two chunk buffers a stage's parked scalars cross into: one is read
/// (copied into the ring's scalars) while the other fills.
pub(super) struct ParkedChunks {
    bufs: [DeviceBuffer<FrLimbs>; 2],
    /// The (crossing, member) whose scalars each buffer holds or receives.
    holds: [Option<(usize, usize)>; 2],
    /// The copy that fills each buffer.
    filled: [Option<Event>; 2],
    /// The compute stream's read of each buffer (its next copy waits).
    read: [Option<Event>; 2],
    /// Bytes copied in.
    pub(super) bytes: u64,
}

/// Whether member `m`'s section `s` reads parked scalars.
fn is_parked(members: &[Vec<Section<'_>>], m: usize, s: usize) -> bool {
    matches!(members[m][s].scalars, Scalars::Parked(_))
}

/// The (crossing, member) whose parked scalars are summed next after
/// member `m`'s of crossing `i`, in the order the driver queues sums.
pub(super) fn parked_after(
    order: &BatchOrder,
    members: &[Vec<Section<'_>>],
    i: usize,
    m: usize,
) -> Option<(usize, usize)> {
    next_where(order, i, m, |m, s| is_parked(members, m, s))
}

/// The first (crossing, member) after member `m`'s sums of crossing `i`,
/// in the driver's order (the crossing's members in turn, then the next
/// crossings'), whose member and section satisfy `parked`.
fn next_where(
    order: &BatchOrder,
    i: usize,
    m: usize,
    parked: impl Fn(usize, usize) -> bool,
) -> Option<(usize, usize)> {
    let crossings = order.crossings();
    let c = &crossings[i];
    if let Some(m) = (m + 1..c.members.end).find(|&m| parked(m, c.section)) {
        return Some((i, m));
    }
    crossings.iter().enumerate().skip(i + 1).find_map(|(j, c)| {
        c.members
            .clone()
            .find(|&m| parked(m, c.section))
            .map(|m| (j, m))
    })
}

impl ParkedChunks {
    pub(super) fn new(s: &Stream, chunk: usize) -> cuzk_cuda::Result<Self> {
        Ok(ParkedChunks {
            bufs: [s.alloc(chunk)?, s.alloc(chunk)?],
            holds: [None, None],
            filled: [None, None],
            read: [None, None],
            bytes: 0,
        })
    }

    /// Queues the copy of member `m`'s scalars of crossing `i` into buffer
    /// `k` on `copy`, after the buffer's last read.
    fn load(
        &mut self,
        copy: &Stream,
        k: usize,
        (i, m): (usize, usize),
        members: &[Vec<Section<'_>>],
        order: &BatchOrder,
        chunk: usize,
    ) -> cuzk_cuda::Result<()> {
        let c = &order.crossings()[i];
        let section = &members[m][c.section];
        let Scalars::Parked(host) = section.scalars else {
            unreachable!("loads only parked scalars")
        };
        let (start, end) = section.range(chunk, c.chunk);
        if let Some(e) = &self.read[k] {
            copy.wait(e)?;
        }
        copy.upload_pinned_range(host, start, end - start, &mut self.bufs[k], 0)?;
        self.filled[k] = Some(copy.record()?);
        self.holds[k] = Some((i, m));
        self.bytes += ((end - start) * std::mem::size_of::<FrLimbs>()) as u64;
        Ok(())
    }

    /// Member `m`'s scalars of crossing `i` (`range` of the section) into
    /// the ring's scalars on `s`, zeros after them: from the buffer they
    /// crossed into ahead, or copied in now (the stage's first).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take(
        &mut self,
        s: &Stream,
        copy: &Stream,
        at: (usize, usize),
        (start, end): (usize, usize),
        members: &[Vec<Section<'_>>],
        order: &BatchOrder,
        ring: &mut Ring,
    ) -> cuzk_cuda::Result<()> {
        let k = match self.holds.iter().position(|h| *h == Some(at)) {
            Some(k) => k,
            None => {
                self.load(copy, 0, at, members, order, ring.chunk)?;
                0
            }
        };
        s.wait(self.filled[k].as_ref().expect("filled before read"))?;
        copy_pad(s, &self.bufs[k], 0, end - start, ring.scalars_mut())?;
        self.read[k] = Some(s.record()?);
        self.holds[k] = None;
        Ok(())
    }

    /// Starts the copy of the next parked scalars (`at`) into the buffer
    /// not being read, unless a buffer holds them already.
    pub(super) fn load_next(
        &mut self,
        copy: &Stream,
        at: (usize, usize),
        members: &[Vec<Section<'_>>],
        order: &BatchOrder,
        chunk: usize,
    ) -> cuzk_cuda::Result<()> {
        if self.holds.contains(&Some(at)) {
            return Ok(());
        }
        // The buffer just read has its read event newest; the other's copy
        // may have run long ago. Either is free (holds nothing pending).
        let k = self.holds.iter().position(|h| h.is_none()).unwrap_or(0);
        self.load(copy, k, at, members, order, chunk)
    }
}

/// A device's pinned buffers for parked H coefficients: those free, and
/// how many a batch has taken out.
#[derive(Default)]
pub(crate) struct Pool {
    free: Vec<PinnedBuffer<FrLimbs>>,
    lent: usize,
}

/// One pinned buffer of `n` scalars, its failure named with the bytes and
/// the setting that avoids it.
fn pin_one(
    gpu: &cuzk_cuda::Gpu,
    n: usize,
    held: usize,
) -> cuzk_cuda::Result<PinnedBuffer<FrLimbs>> {
    PinnedBuffer::new(gpu, n).map_err(|e| cuzk_cuda::Error::BadArguments {
        kernel: "parked H coefficients",
        message: format!(
            "pinning {} of host memory for a parked batch member's H coefficients ({} \
             pinned already): {e}; more memory or --no-parked-batches \
             (CUZK_PARKED_BATCHES=0) avoids it",
            cuzk_arena::human((n * 32) as u64),
            cuzk_arena::human((held * n * 32) as u64),
        ),
    })
}

/// Up to `members` buffers of `n` scalars out of `pool`'s free ones
/// (buffers of another length dropped).
fn take_free(pool: &ParkedPool, members: usize, n: usize) -> Vec<PinnedBuffer<FrLimbs>> {
    let mut p = pool.lock();
    p.free.retain(|b| b.len() == n);
    let k = members.min(p.free.len());
    p.lent += k;
    p.free.drain(..k).collect()
}

/// `members` buffers of `n` scalars out of `pool`, [`give_back`] returns
/// them. With `pin_here`, the missing ones are pinned now (a slow host
/// call: ~2 s for 4 GiB on the H100's host), taking any another thread
/// pinned meanwhile first; without it (a thread is pinning them ahead,
/// [`warm_parked`]), only what is there: fewer than `members` when the
/// pool is not ready.
pub(crate) fn take_parked(
    gpu: &cuzk_cuda::Gpu,
    pool: &ParkedPool,
    members: usize,
    n: usize,
    pin_here: bool,
) -> cuzk_cuda::Result<Vec<PinnedBuffer<FrLimbs>>> {
    let mut got = take_free(pool, members, n);
    if !pin_here {
        return Ok(got);
    }
    let (start, mut pinned) = (std::time::Instant::now(), 0);
    while got.len() < members {
        let more = take_free(pool, members - got.len(), n);
        if !more.is_empty() {
            got.extend(more);
            continue;
        }
        pinned += 1;
        match pin_one(gpu, n, got.len()) {
            Ok(b) => {
                pool.lock().lent += 1;
                got.push(b);
            }
            Err(e) => {
                give_back(pool, got);
                return Err(e);
            }
        }
    }
    if pinned > 0 {
        tracing::info!(
            "pinned {} of host memory for {pinned} parked batch member(s) in {:.2} s",
            cuzk_arena::human((pinned * n * 32) as u64),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(got)
}

/// Returns buffers [`take_parked`] lent.
pub(crate) fn give_back(pool: &ParkedPool, bufs: Vec<PinnedBuffer<FrLimbs>>) {
    let mut p = pool.lock();
    p.lent -= bufs.len().min(p.lent);
    p.free.extend(bufs);
}

/// Pins buffers of `n` scalars one at a time until `pool` holds `members`
/// (free and lent), the lock held only to add each: a batch meanwhile
/// takes what is there and pins the rest itself.
pub(crate) fn warm_parked(gpu: &cuzk_cuda::Gpu, pool: &ParkedPool, members: usize, n: usize) {
    let start = std::time::Instant::now();
    let mut made = 0;
    loop {
        let held = {
            let p = pool.lock();
            p.free.iter().filter(|b| b.len() == n).count() + p.lent
        };
        if held >= members {
            break;
        }
        match pin_one(gpu, n, held) {
            Ok(b) => pool.lock().free.push(b),
            Err(e) => {
                tracing::warn!("{e}");
                break;
            }
        }
        made += 1;
    }
    if made > 0 {
        tracing::info!(
            "pinned {} of host memory ahead for {made} parked batch member(s) in {:.2} s",
            cuzk_arena::human((made * n * 32) as u64),
            start.elapsed().as_secs_f64()
        );
    }
}

impl Worker {
    /// Several partitions of one circuit over one pass of the streamed key
    /// with their state parked (`batch`, from `plan`'s
    /// `VramPlan::parked_batch`): each member's a, b, c and H polynomial
    /// in turn under `plan`, its H coefficients copied into a pinned host
    /// buffer (stage `park_h`); then, under the batch's pass plan, every
    /// member's aux values up compact and one pass of the key's chunks
    /// that every member sums. `t[m]` gets member m's own stages and
    /// `msm_batch_share`, its share of the pass's device time. `None`, with
    /// nothing done, when the device's pinned buffers are not ready and
    /// `pin_here` is off (a thread pins them ahead: the caller proves the
    /// members one at a time meanwhile rather than wait ~2 s a buffer).
    pub(crate) fn prove_batch_parked(
        &mut self,
        plan: &VramPlan,
        batch: &ParkedBatch,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
        pin_here: bool,
    ) -> cuzk_cuda::Result<Option<Vec<MsmSums>>> {
        let compact: Vec<_> = ws
            .iter()
            .map(|w| w.compact_aux.as_ref().map(classed))
            .collect::<Option<_>>()
            .ok_or_else(|| cuzk_cuda::Error::BadArguments {
                kernel: "parked batch",
                message: "a parked batch's members need compact witnesses".into(),
            })?;
        self.srs.lock().release_for_streaming();
        self.forget_last_run();
        let n = plan.shape.domain;
        let pool = std::sync::Arc::clone(&self.parked);
        let mut parked = take_parked(&self.gpu, &pool, ws.len(), n, pin_here)?;
        if parked.len() < ws.len() {
            tracing::info!(
                "{} of {} parked buffers pinned so far: the batch's partitions one at a time \
                 while the rest are pinned",
                parked.len(),
                ws.len()
            );
            give_back(&pool, parked);
            return Ok(None);
        }
        let sums = self.parked_batch_in(plan, batch, key, ws, t, &compact, &mut parked);
        give_back(&pool, parked);
        sums.map(Some)
    }

    /// [`Worker::prove_batch_parked`] with its pinned buffers taken.
    #[allow(clippy::too_many_arguments)]
    fn parked_batch_in(
        &mut self,
        plan: &VramPlan,
        batch: &ParkedBatch,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
        compact: &[cuzk_cuda::packed::Classed<'_>],
        parked: &mut [PinnedBuffer<FrLimbs>],
    ) -> cuzk_cuda::Result<Vec<MsmSums>> {
        let SrsMode::Streamed { chunk } = batch.plan.mode else {
            unreachable!("a parked batch streams the key")
        };
        let n = plan.shape.domain;
        let matrices = self
            .abc_matrices(plan, ws[0], &mut t[0])?
            .expect("a, b, c on the device: checked by the backend");
        let s = self.stream.clone();
        let mut dense = Vec::with_capacity(ws.len());
        for (m, (w, t)) in ws.iter().zip(t.iter_mut()).enumerate() {
            let mut clock = Clock::new();
            let (h, aux) = self.device_h(&matrices, w, n, plan.h_poly, &mut clock)?;
            drop(aux);
            dense.push(dense_indexes(w));
            clock.start(&s, "park_h")?;
            s.download_pinned(&h, &mut parked[m])?;
            clock.stop(&s)?;
            drop(h);
            s.synchronize()?;
            clock.report(t)?;
        }
        drop(matrices);
        self.size_for(&batch.plan)?;
        let sums = self.parked_pass(batch, chunk, key, ws, compact, parked, dense);
        self.pin = None;
        self.scratch = None;
        let (sums, clock) = sums?;
        s.synchronize()?;
        let mut shared = StageTimings::default();
        clock.report(&mut shared)?;
        let share = shared.total() / ws.len() as u32;
        for t in t.iter_mut() {
            t.record("msm_batch_share", share);
        }
        Ok(sums)
    }

    /// The pass of a parked batch: the members' compact aux values and A's
    /// and B's rank bitmaps up, the ring opened, every chunk crossing once.
    #[allow(clippy::too_many_arguments)]
    fn parked_pass(
        &mut self,
        batch: &ParkedBatch,
        chunk: usize,
        key: &ProvingKey,
        ws: &[&Synthesized],
        compact: &[cuzk_cuda::packed::Classed<'_>],
        parked: &[PinnedBuffer<FrLimbs>],
        dense: Vec<[crate::dense::DenseIndex; 2]>,
    ) -> cuzk_cuda::Result<(Vec<MsmSums>, Clock)> {
        let s = self.stream.clone();
        let mut clock = Clock::new();
        clock.start(&s, "compact_aux")?;
        let mut held = Vec::with_capacity(ws.len());
        let mut up = 0u64;
        for c in compact {
            c.check()?;
            let mut d = CompactOnDevice::alloc(&s, c.len, c.others.len())?;
            let (codes, before, others) = d.sections_mut();
            self.stage_upload(&s, c.codes, codes, 0)?;
            self.stage_upload(&s, c.before, before, 0)?;
            self.stage_upload(&s, c.others, others, 0)?;
            up += crate::worker::classed_bytes(c);
            held.push(d);
        }
        clock.stop(&s)?;
        let mut sections = Vec::with_capacity(ws.len());
        for ((w, d), [ia, ib]) in ws.iter().zip(&held).zip(dense) {
            let aux = AuxValues::Compact(d);
            let a = self.dense_section(aux, w, Dense::A, key.a.len(), ia)?;
            let b = self.dense_section(aux, w, Dense::B, key.b_g1.len(), ib)?;
            sections.push((a, b));
        }
        let members: Vec<Vec<Section<'_>>> = ws
            .iter()
            .zip(parked)
            .zip(&held)
            .zip(&sections)
            .map(|(((w, h), d), (a, b))| {
                let scalars = [
                    Scalars::Parked(h),
                    Scalars::Compact(d),
                    Scalars::Dense(a),
                    Scalars::Dense(b),
                ];
                interleaved_sections(key, h.len(), w.num_aux(), scalars)
            })
            .collect();
        let mut ring = self.open_ring(chunk, key, batch.plan.ring_slots(), 0)?;
        let chunks = ParkedChunks::new(&self.stream, ring.chunk)?;
        let (got, parked_bytes) = self.phase_with(
            &mut ring,
            "msm_h_l_a_b",
            &members,
            true,
            &mut clock,
            Some(chunks),
        )?;
        let members_n = ws.len() as u64;
        self.close_ring(ring);
        // Each member's share of the key and of the other bytes, and its own
        // H coefficients' bytes.
        self.last_moved += up;
        self.share_last_run(ws.len());
        self.last_parked = (ws.len(), parked_bytes / members_n);
        tracing::info!(
            "parked batch of {}: H coefficients {:.2} GB each way per member, compact aux values \
             {:.3} GB per member",
            ws.len(),
            parked_bytes as f64 / members_n as f64 / 1e9,
            up as f64 / members_n as f64 / 1e9
        );
        let sums = got.into_iter().map(member_sums).collect();
        Ok((sums, clock))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Following `next_where` from the first parked sum visits every
    /// parked (crossing, member) once, in the order the driver queues the
    /// sums (`batch::run`: each crossing's members in turn): H's chunks of
    /// three members among the light sections', and when only some
    /// members' H is parked.
    #[test]
    fn the_next_parked_sum_follows_the_drivers_order() {
        let order = BatchOrder::new(&[4, 2, 2, 1, 1], 3, 3);
        for parked_members in [vec![0, 1, 2], vec![1], vec![0, 2]] {
            let parked = |m: usize, s: usize| s == 0 && parked_members.contains(&m);
            let want: Vec<(usize, usize)> = order
                .crossings()
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.members.clone().map(move |m| (i, m)))
                .filter(|&(i, m)| parked(m, order.crossings()[i].section))
                .collect();
            let mut got = vec![want[0]];
            while let Some(next) =
                next_where(&order, got.last().unwrap().0, got.last().unwrap().1, parked)
            {
                got.push(next);
            }
            assert_eq!(got, want, "members {parked_members:?} parked");
            assert_eq!(got.len(), 4 * parked_members.len());
        }
    }
}
