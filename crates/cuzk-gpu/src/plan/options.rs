//! [`PlanOptions`]: the settings of `GpuConfig` the planner reads.

/// What a plan may use beyond the layout its budget decides: the settings
/// of `GpuConfig` the planner reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanOptions {
    /// H's MSM over shifted bases beside a resident key, where there is
    /// room ([`VramPlan::with_shifted_h`](super::VramPlan::with_shifted_h)).
    /// Off by default.
    pub shifted_h: bool,
    /// A streamed key's H chunks into kept buckets, where the MSM stage has
    /// room ([`VramPlan::h_kept`](super::VramPlan::h_kept)). On by default;
    /// off to measure against.
    pub kept_h: bool,
    /// A streamed key's first chunks crossing while a partition's H
    /// polynomial runs, where the ring's buffers fit beside it
    /// ([`VramPlan::ring_ahead`](super::VramPlan::ring_ahead)). On by
    /// default; off to measure against.
    pub ring_ahead: bool,
    /// Batches of a streamed key's partitions with their state parked
    /// (H coefficients in pinned host memory, aux values compact in VRAM)
    /// where no held member fits and the pass reaches a larger chunk
    /// ([`VramPlan::parked_batch`](super::VramPlan::parked_batch)). On by
    /// default; off to measure against.
    pub parked_batches: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            shifted_h: false,
            kept_h: true,
            ring_ahead: true,
            parked_batches: true,
        }
    }
}

impl PlanOptions {
    /// These options with H over shifted bases allowed or not.
    pub fn with_shifted_h(mut self, on: bool) -> Self {
        self.shifted_h = on;
        self
    }

    /// These options with H's kept buckets allowed or not.
    pub fn with_kept_h(mut self, on: bool) -> Self {
        self.kept_h = on;
        self
    }

    /// These options with the ring's first buffers filled during the H
    /// polynomial or not.
    pub fn with_ring_ahead(mut self, on: bool) -> Self {
        self.ring_ahead = on;
        self
    }

    /// These options with parked batches allowed or not.
    pub fn with_parked_batches(mut self, on: bool) -> Self {
        self.parked_batches = on;
        self
    }
}
