#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub mod admission;
mod backend;
mod error;
pub mod keygen;
mod matrices;
mod plan;
mod resident;
mod srs;
mod streamed;
mod worker;

pub use backend::CudaBackend;
pub use cuzk_arena::human;
pub use cuzk_cuda::VramBudget;
pub use error::GpuError;
pub use matrices::{matrix_bytes, witness_shape, MatrixSlot};
pub use plan::{
    CudaFootprints, DeviceAbc, Footprints, PlanError, Shape, SrsMode, StageBytes, VramPlan,
    G1_BYTES, G2_BYTES, MIN_CHUNK, SCALAR_BYTES, STREAM_TERMS,
};
pub use resident::{KeyInUse, KeyShape};
pub use srs::{SlotUsage, SrsSlot};

/// Bytes of each of the two pinned staging buffers (allocated once per worker).
pub const STAGE_BYTES: usize = 64 << 20;

/// Threads of a worker's own pool that fill its pinned staging buffers. The
/// fill is a memory copy; on the global rayon pool it would queue behind
/// whatever else the host runs there (a parallel synthesis holds every
/// thread for ~0.3 s per task: on the H200 host the 2^24 a, b, c upload went
/// from 41 ms to 450 ms beside one). Four threads copy faster than the
/// PCIe link drains.
pub const FILL_THREADS: usize = 4;
