//! What a plan holds at its peak, and how many partitions or ring buffers
//! that leaves room for: the plan's accounting, beside the arithmetic that
//! makes its stages (`mod.rs`).

use super::*;
use crate::streamed::RING;

/// Batch members a plan's extras may not cost (a 32 GiB PoRep proof's ten
/// partitions, the most one proof queues at once); beyond them a batch
/// member lost is one that would seldom form.
pub(crate) const BATCH_COUNTED: usize = 10;

impl VramPlan {
    /// Chunk buffers in the streamed key's ring ([`VramPlan::ring`]); 0
    /// for a resident key. More buffers let the copies run further ahead
    /// of the sums: after an H chunk (tens of milliseconds of sums) come
    /// several light chunks (a few each), and with four buffers the next H
    /// chunk's copy cannot start until the previous H chunk is summed.
    pub(crate) fn ring_slots(&self) -> usize {
        self.ring
    }

    /// The largest MSM stage's bytes.
    pub(crate) fn msm_stage_peak(&self) -> u64 {
        self.stages
            .iter()
            .filter(|s| s.name.starts_with("msm"))
            .map(|s| s.bytes)
            .max()
            .unwrap_or(0)
    }

    /// The largest stage's bytes before the MSMs (a, b, c and the H
    /// polynomial).
    pub(crate) fn before_msm_peak(&self) -> u64 {
        self.stages
            .iter()
            .filter(|s| !s.name.starts_with("msm"))
            .map(|s| s.bytes)
            .max()
            .unwrap_or(0)
    }

    /// This plan with a streamed key's ring of four buffers and `extra`
    /// more (at most [`EXTRA_RING_SLOTS`]), their bytes in the MSM stages
    /// and the peak made again; a resident key's plan unchanged.
    pub(crate) fn with_extra_ring(mut self, extra: usize) -> VramPlan {
        let SrsMode::Streamed { chunk } = self.mode else {
            return self;
        };
        let extra = extra.min(EXTRA_RING_SLOTS);
        let slot = chunk as u64 * G1_BYTES;
        let had = self.ring.saturating_sub(RING) as u64;
        for st in self.stages.iter_mut().filter(|s| s.name.starts_with("msm")) {
            st.bytes = st.bytes - had * slot + extra as u64 * slot;
        }
        self.partition_peak = self.stages.iter().map(|s| s.bytes).max().unwrap_or(0);
        self.ring = RING + extra;
        self
    }

    /// This plan (a streamed key's, as chosen) with H's chunks summed into
    /// kept buckets ([`VramPlan::h_kept`]: one MSM over the section at its
    /// own window, one reduction, instead of an MSM per chunk) where the
    /// MSM stages have room for them within the budget and it costs no
    /// worker (of the first [`SHIFTED_H_WORKERS`]) or batch member (of the
    /// first [`BATCH_COUNTED`]): the cheapest window that room holds
    /// ([`Footprints::kept_h_window`]). The ring's extra buffers are made
    /// again after, from what is left below the largest stage (the buckets
    /// save more than a deeper ring: docs/small-cards.md).
    pub(crate) fn with_kept_h(self, fp: &dyn Footprints) -> VramPlan {
        let SrsMode::Streamed { chunk } = self.mode else {
            return self;
        };
        let base = self.with_extra_ring(0);
        // Workers and batch members beyond what runs at once cost nothing
        // when lost (a tiny circuit under a large budget fits dozens).
        let counted = |p: &VramPlan| {
            (
                p.workers_that_fit().min(SHIFTED_H_WORKERS),
                p.batch_room().min(BATCH_COUNTED),
            )
        };
        let (workers, batch) = counted(&base);
        // Beside the partition: the margin and resident matrices.
        let beside = base.peak() - base.partition_peak;
        let room = base.budget.saturating_sub(beside + base.msm_stage_peak());
        let kept = fp.kept_h_window(base.shape.h, chunk, room).and_then(|c| {
            let extra = fp.msm_g1_kept(base.msm_len, c);
            let mut p = base.clone();
            p.h_kept = Some(c);
            p.scratch_bytes += extra;
            for st in p.stages.iter_mut().filter(|s| s.name.starts_with("msm")) {
                st.bytes += extra;
            }
            p.partition_peak = p.stages.iter().map(|s| s.bytes).max().unwrap_or(0);
            let (w, b) = counted(&p);
            let keeps = p.fits() && w >= workers && b >= batch;
            keeps.then_some(p)
        });
        let plan = kept.unwrap_or(base);
        let slot = chunk as u64 * G1_BYTES;
        let below = plan.partition_peak.saturating_sub(plan.msm_stage_peak()) / slot;
        plan.with_extra_ring(below as usize)
    }

    /// This plan (a streamed key's, as chosen) with its ring deepened into
    /// what the budget leaves above its peak, when that room could serve
    /// neither a second worker nor a second member of a batch (so a deeper
    /// ring costs nothing else): up to [`EXTRA_RING_SLOTS`] in all.
    pub(crate) fn with_ring_room(self) -> VramPlan {
        let SrsMode::Streamed { chunk } = self.mode else {
            return self;
        };
        if self.workers_that_fit() > 1 || self.batch_room() > 1 {
            return self;
        }
        let above = self.budget.saturating_sub(self.peak()) / (chunk as u64 * G1_BYTES);
        let extra = self.ring.saturating_sub(RING) + above as usize;
        self.with_extra_ring(extra)
    }

    /// This plan with [`VramPlan::ring_ahead`] set: the ring buffers (at
    /// most [`RING_AHEAD`] and the ring's own count) that fit beside the
    /// largest stage before the MSMs within the partition's peak, so the
    /// peak is the same. A resident key's plan unchanged.
    pub fn with_ring_ahead(mut self) -> VramPlan {
        let SrsMode::Streamed { chunk } = self.mode else {
            return self;
        };
        let room =
            self.partition_peak.saturating_sub(self.before_msm_peak()) / (chunk as u64 * G1_BYTES);
        self.ring_ahead = (room as usize).min(RING_AHEAD).min(self.ring_slots());
        self
    }

    /// Whether the worker's scratch (and a streamed key's ring) is counted
    /// inside the MSM stages, made when they start and given back when they
    /// end: with the key streamed. A resident key's worker keeps its scratch
    /// beside every stage (the key's own bytes dwarf it, and a worker that
    /// keeps it makes it once).
    pub fn scratch_in_msm_stages(&self) -> bool {
        matches!(self.mode, SrsMode::Streamed { .. })
    }

    /// Device bytes at the plan's peak, with the margin.
    pub fn peak(&self) -> u64 {
        let key = match self.mode {
            SrsMode::Resident => self.srs_device_bytes,
            // The ring is inside the MSM stages.
            SrsMode::Streamed { .. } => 0,
        };
        key + self.matrix_bytes + self.worker_bytes() + self.margin
    }

    /// Whether a, b, c are evaluated on the device under this plan.
    pub fn abc_on_device(&self) -> bool {
        self.shape.device_abc.is_some()
    }

    /// `Some(terms)` when a, b, c are evaluated on the device from matrices
    /// streamed in chunks of `terms`; `None` when resident or on the host.
    pub fn matrices_streamed(&self) -> Option<usize> {
        self.shape.device_abc.and_then(|d| d.stream_terms)
    }

    /// One worker's bytes besides a resident key and resident matrices:
    /// its largest stage, plus its scratch when that is kept beside every
    /// stage (a streamed key's ring and the scratch are inside the MSM
    /// stages: [`VramPlan::scratch_in_msm_stages`]).
    pub fn worker_bytes(&self) -> u64 {
        let beside = match self.scratch_in_msm_stages() {
            true => 0,
            false => self.scratch_bytes,
        };
        beside + self.partition_peak
    }

    /// Whether the plan's peak is within its budget.
    pub fn fits(&self) -> bool {
        self.peak() <= self.budget
    }

    /// How many workers (each with its own scratch and one partition in
    /// flight) fit the budget together, sharing a resident key and resident
    /// matrices; a streaming worker needs its own chunk buffers.
    pub fn workers_that_fit(&self) -> usize {
        let shared = match self.mode {
            SrsMode::Resident => self.srs_device_bytes + self.matrix_bytes,
            SrsMode::Streamed { .. } => self.matrix_bytes,
        };
        // A streaming worker's ring is inside its worker bytes.
        let per = self.worker_bytes();
        let avail = self.budget.saturating_sub(shared + self.margin);
        (avail / per.max(1)) as usize
    }

    /// The stage with the most transient bytes.
    pub fn largest_stage(&self) -> StageBytes {
        *self
            .stages
            .iter()
            .max_by_key(|s| s.bytes)
            .expect("five or six stages")
    }
}
