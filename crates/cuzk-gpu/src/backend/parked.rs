//! The backend's side of parked batches (`VramPlan::parked_batch`,
//! `streamed/parked.rs`): which batch a witness's partitions park in, and
//! the device's pinned buffers made ahead in the background.

use std::sync::Arc;

use cuzk_synth::Synthesized;

use super::CudaBackend;
use crate::plan::{CudaFootprints, ParkedBatch, SrsMode, VramPlan};

impl CudaBackend {
    /// The parked batch for `ws` under `plan`: `None` when parked batches
    /// are off, a member's witness is not compact, or the plan parks no
    /// batch. Sized for the most others a member holds plus 1/256 (the
    /// count varies between a proof's partitions); forced (tests), at the
    /// plan's own chunk. Its members are then capped by what the pool may
    /// pin ([`crate::GpuConfig::parked_pins`]: a third of the process's
    /// memory, at most 40 GiB, the pinned memory whose page tables the
    /// arena left room for), the pass unchanged (fewer members at its
    /// chunk stay within what admission reserved); fewer than two: `None`.
    pub(super) fn parked_for(
        &self,
        plan: &VramPlan,
        ws: &[&Synthesized],
        most: usize,
    ) -> Option<ParkedBatch> {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.parked_batches.load(Relaxed) {
            return None;
        }
        let others = ws
            .iter()
            .map(|w| w.compact_aux.as_ref().map(|c| c.others().len()))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max()?;
        let others = others + others / 256;
        let batch = match (self.force_parked.load(Relaxed), plan.mode) {
            (true, SrsMode::Streamed { chunk }) => {
                plan.parked_at(&CudaFootprints, chunk, others, most)
            }
            _ => plan.parked_batch(&CudaFootprints, others, most),
        }?;
        let per = (plan.shape.domain as u64 * crate::plan::SCALAR_BYTES).max(1);
        let members = batch.members.min((self.parked_pins / per) as usize);
        (members >= 2).then_some(ParkedBatch { members, ..batch })
    }

    /// Starts pinning the device's parked buffers for `members` partitions
    /// of domain `n` in the background when it holds fewer (a slow host
    /// call: 40 GiB took 20–35 s on the H100's host), a buffer at a time;
    /// a batch that finds them not ready meanwhile proves its partitions
    /// one at a time. One such thread per device.
    pub(super) fn warm_parked(&self, n: usize, members: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        // One warming thread per device at a time.
        if self.warming.swap(true, Relaxed) {
            return;
        }
        let (pool, gpu) = (Arc::clone(&self.parked_pool), self.gpu.clone());
        let warming = Arc::clone(&self.warming);
        let spawned = std::thread::Builder::new()
            .name("cuzk-parked-pin".into())
            .spawn(move || {
                crate::streamed::warm_parked(&gpu, &pool, members, n);
                warming.store(false, Relaxed);
            });
        if let Err(e) = spawned {
            self.warming.store(false, Relaxed);
            tracing::warn!("no thread to pin the parked buffers ahead ({e}): the batch pins them");
        }
    }
}
