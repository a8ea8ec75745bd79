//! [`GpuError`]: why the GPU backend could not prove a partition, and how it
//! maps onto the prover's [`ProveError`].

use cuzk_arena::human;
use cuzk_groth16::prover::{BackendFailure, ProveError};

use crate::plan::PlanError;

/// Why the GPU backend could not prove a partition.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// A CUDA call or kernel launch failed, or the arena ran out.
    #[error(transparent)]
    Cuda(#[from] cuzk_cuda::Error),
    /// No VRAM plan fits the worker's budget.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The plan mode forced by [`CudaBackend::force_mode`](crate::CudaBackend::force_mode) does not fit.
    #[error("the forced plan does not fit: {plan} (budget {})", human(*.budget))]
    ForcedPlanDoesNotFit {
        /// The forced plan, described.
        plan: String,
        /// The VRAM budget it had to fit, bytes.
        budget: u64,
    },
    /// A batch's members' held state does not fit the budget beside the plan.
    #[error(
        "a batch of {members} partitions needs {} of VRAM (the plan's peak and each further \
         member's H scalars and aux values), the budget is {}",
        human(*.needed),
        human(*.budget)
    )]
    BatchDoesNotFit {
        /// Partitions in the batch.
        members: usize,
        /// Device bytes the batch needs, at its peak.
        needed: u64,
        /// The VRAM budget, bytes.
        budget: u64,
    },
}

impl GpuError {
    /// Whether the device lacked memory (the partition would fit elsewhere)
    /// or failed.
    pub fn failure(&self) -> BackendFailure {
        match self {
            GpuError::Cuda(e) if e.is_out_of_memory() => BackendFailure::OutOfDeviceMemory,
            GpuError::Cuda(_) => BackendFailure::Fault,
            GpuError::Plan(_)
            | GpuError::ForcedPlanDoesNotFit { .. }
            | GpuError::BatchDoesNotFit { .. } => BackendFailure::OutOfDeviceMemory,
        }
    }
}

impl From<GpuError> for ProveError {
    fn from(e: GpuError) -> Self {
        ProveError::backend("cuda", e.failure(), e)
    }
}

pub(crate) fn gpu_err(e: cuzk_cuda::Error) -> ProveError {
    GpuError::Cuda(e).into()
}
