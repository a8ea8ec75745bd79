//! What a plan holds at its peak, and how many partitions or ring buffers
//! that leaves room for: the plan's accounting, beside the arithmetic that
//! makes its stages (`mod.rs`).

use super::*;

impl VramPlan {
    /// Chunk buffers in the streamed key's ring: the four the plan counts
    /// in `srs_device_bytes` (two G2 staging buffers' bytes, inside the MSM
    /// stages), and up to [`EXTRA_RING_SLOTS`] more of a G1 chunk each
    /// where the MSM stages leave room below the partition's largest stage
    /// (a, b, c or the H polynomial), so the plan's peak holds with them. More buffers let
    /// the copies run further ahead of the sums: after an H chunk (tens of
    /// milliseconds of sums) come several light chunks (a few each), and
    /// with four buffers the next H chunk's copy could not start until the
    /// previous H chunk was summed. 0 for a resident key.
    pub(crate) fn ring_slots(&self) -> usize {
        let SrsMode::Streamed { chunk } = self.mode else {
            return 0;
        };
        let msm = self
            .stages
            .iter()
            .filter(|s| s.name.starts_with("msm"))
            .map(|s| s.bytes)
            .max()
            .unwrap_or(0);
        let room = self.partition_peak.saturating_sub(msm) / (chunk as u64 * G1_BYTES).max(1);
        4 + (room as usize).min(EXTRA_RING_SLOTS)
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
