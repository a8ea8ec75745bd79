//! A batch whose members park their state off the card's way
//! ([`ParkedBatch`]): on a card whose plan fills it, a member cannot hold
//! its H scalars and aux values in VRAM through the key's pass (8.5 GB at
//! 32 GiB), so no batch of held members forms and every partition moves
//! the whole key across PCIe. Parked, each member's H coefficients go to
//! pinned host memory right after its H polynomial and come back a chunk
//! at a time beside H's chunks, and its aux values stay on the device in
//! their compact form (cuzk-cuda `CompactOnDevice`, ~0.1 GB at 32 GiB),
//! read in place by L's, A's and B's chunks. The pass then holds, beside
//! the ring and the scratch, two chunks of parked scalars and each
//! member's compact aux values, rank bitmaps and kept others: a batch of
//! ten fits a 16 GiB card, and the key's 47.4 GB cross once for all of
//! them (the H coefficients' 4.3 GB cross twice per member instead).

use super::*;
use cuzk_cuda::compact::CompactOnDevice;

/// A parked batch is chosen only where its pass reaches a chunk at least
/// this many times the plan's own. Parked, H's chunks are summed by one
/// MSM per member and chunk (a member's kept buckets are 1.3 GB) and each
/// member's H coefficients cross twice; one doubling of the chunk repays
/// both on the H100 (H's kernels without kept buckets 1.12 s at 2^23
/// against 1.067 s with them at 2^22; L's, A's and B's 60 ms lighter at
/// the larger chunk; the round trip ~80 ms at 55 GB/s, docs/small-cards.md).
/// A card whose plan already streams the largest chunks (32 GiB) gains
/// nothing by parking and proves its partitions one at a time.
pub const PARKED_CHUNK_GAIN: usize = 2;

/// The pass of a parked batch under one budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParkedBatch {
    /// The pass's plan: the partition plan's shape, budget, H polynomial
    /// and matrices (its stages before the MSMs unchanged), the pass's
    /// chunk and scratch, a ring of four, no kept buckets.
    pub plan: VramPlan,
    /// Members the pass holds (at most the caller's bound).
    pub members: usize,
    /// Device bytes of each member's state through the pass.
    pub member_bytes: u64,
    /// Device bytes of the pass with `members` members, beside the margin
    /// and resident matrices.
    pub pass_bytes: u64,
}

impl ParkedBatch {
    /// Device bytes the batch needs at its peak: its largest stage (one
    /// member's a, b, c and H polynomial, or the pass), the margin and
    /// resident matrices.
    pub fn peak(&self) -> u64 {
        let beside = self.plan.peak() - self.plan.partition_peak;
        beside + self.plan.before_msm_peak().max(self.pass_bytes)
    }

    /// Pinned host bytes the members' parked H coefficients take.
    pub fn host_bytes(&self) -> u64 {
        self.members as u64 * parked_host_bytes(&self.plan.shape)
    }
}

/// Pinned host bytes one member's parked H coefficients take (n scalars).
pub(crate) fn parked_host_bytes(shape: &Shape) -> u64 {
    shape.domain as u64 * SCALAR_BYTES
}

impl VramPlan {
    /// Device bytes one parked member holds through the pass at chunk
    /// `chunk`: its aux values compact (`others` of them in full), A's and
    /// B's ranked bitmaps and inputs, its light sections' kept others.
    pub(crate) fn parked_member_bytes(shape: &Shape, chunk: usize, others: usize) -> u64 {
        CompactOnDevice::bytes_for(shape.aux, others)
            + ranked_bytes(shape)
            + kept_bytes(chunk, 3, 1)
    }

    /// The pass's device bytes with `members` parked members: this
    /// (streamed, interleaved) plan's MSM stage without the one member it
    /// counts (its H scalars, z, rank bitmaps and kept others), with two
    /// chunks of parked H scalars (one summed while the next crosses) and
    /// each member's [`VramPlan::parked_member_bytes`].
    fn parked_pass_bytes(&self, chunk: usize, members: usize, others: usize) -> u64 {
        let shape = &self.shape;
        let held = shape.domain as u64 * SCALAR_BYTES
            + shape.device_abc.map_or(0, |d| d.z as u64 * SCALAR_BYTES)
            + ranked_bytes(shape)
            + kept_bytes(chunk, 3, 1);
        self.msm_stage_peak() - held
            + 2 * chunk as u64 * SCALAR_BYTES
            + members as u64 * Self::parked_member_bytes(shape, chunk, others)
    }

    /// The parked batch for this plan's partitions (a streamed key, a, b,
    /// c on the device), `others` the most aux values a member holds in
    /// full, at most `most` members: of the chunks from the longest
    /// section's down to [`PARKED_CHUNK_GAIN`] times this plan's, the one
    /// whose pass holds the most members beside the margin and resident
    /// matrices (the key's bytes per partition fall with each member), the
    /// largest of those (fewer sums per section). `None` where none holds
    /// two (or `most` < 2), and where this plan keeps the matrices
    /// resident: the partitions go one at a time.
    ///
    /// Only where the matrices stream (a 16 GiB card): there a partition
    /// alone moves the most bytes (53 GB), and a parked member took 1.95 s
    /// against 1.88 alone for 38% of them in a batch of ten; where they
    /// stay resident (24 and 32 GiB) parked members took 1.78 and 1.79 s
    /// against 1.69 and 1.60 alone (H100, 2026-12-06, docs/small-cards.md).
    pub fn parked_batch(
        &self,
        fp: &dyn Footprints,
        others: usize,
        most: usize,
    ) -> Option<ParkedBatch> {
        let SrsMode::Streamed { chunk: own } = self.mode else {
            return None;
        };
        if !self.interleaved || most < 2 || self.matrices_streamed().is_none() {
            return None;
        }
        let longest = self.shape.longest_msm().max(MIN_CHUNK).next_power_of_two();
        let lowest = own.saturating_mul(PARKED_CHUNK_GAIN);
        let chunks = std::iter::successors(Some(longest), |c| Some(c / 2))
            .take_while(|&c| c >= lowest && c >= MIN_CHUNK);
        let mut best: Option<ParkedBatch> = None;
        for chunk in chunks {
            // Chunks are tried largest first: a smaller one only for more members.
            match self.parked_at(fp, chunk, others, most) {
                Some(b) if best.as_ref().is_none_or(|x| b.members > x.members) => best = Some(b),
                _ => {}
            }
        }
        best
    }

    /// The parked batch for this plan's partitions with the pass at
    /// `chunk` points (whatever this plan's own chunk), as many members as
    /// fit up to `most`; `None` where the stages before the MSMs or two
    /// members do not fit, or this plan does not stream the key with a,
    /// b, c on the device. [`VramPlan::parked_batch`] picks the chunk;
    /// tests force one.
    pub fn parked_at(
        &self,
        fp: &dyn Footprints,
        chunk: usize,
        others: usize,
        most: usize,
    ) -> Option<ParkedBatch> {
        if !matches!(self.mode, SrsMode::Streamed { .. }) || !self.interleaved || most < 2 {
            return None;
        }
        let matrices = match self.matrices_streamed() {
            Some(_) => MatrixLayout::Streamed,
            None => MatrixLayout::Resident,
        };
        let mode = SrsMode::Streamed { chunk };
        let plan =
            VramPlan::with_matrices(self.shape, self.budget, mode, self.h_poly, matrices, fp)
                .with_extra_ring(0);
        let beside = plan.peak() - plan.partition_peak;
        if beside + plan.before_msm_peak() > plan.budget {
            return None;
        }
        let member = Self::parked_member_bytes(&plan.shape, chunk, others);
        let base = plan.parked_pass_bytes(chunk, 0, others);
        let room = plan.budget.saturating_sub(beside + base);
        let members = ((room / member.max(1)) as usize).min(most);
        (members >= 2).then(|| ParkedBatch {
            pass_bytes: plan.parked_pass_bytes(chunk, members, others),
            plan,
            members,
            member_bytes: member,
        })
    }
}
