#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub mod admission;
mod backend;
mod batch;
mod breakdown;
mod clock;
mod dense;
mod device;
mod error;
mod interleave;
mod kept;
pub mod keygen;
mod matrices;
mod plan;
mod resident;
mod srs;
mod streamed;
mod worker;

pub use backend::CudaBackend;
pub use cuzk_arena::human;
/// What a program needs of the CUDA bindings beside opening a device, so
/// that it depends on this crate alone: the devices and driver this box
/// has, whether a card is supported, where the kernels are read from, and
/// the VRAM budget's syntax.
pub use cuzk_cuda::{
    devices, driver_version, kernels, supported, BudgetError, DeviceInfo, Error as CudaError,
    VramBudget,
};
pub use device::{
    resolve, BackendChoice, GpuConfig, GpuDevice, ResolveError, Resolved, DEFAULT_GPU_WORKERS,
};
pub use error::GpuError;
pub use matrices::{
    count_pinned_matrices_in, host_matrices, matrix_bytes, witness_shape, MatrixSlot,
};
pub use plan::{
    CudaFootprints, DeviceAbc, Footprints, HPoly, MatrixLayout, ParkedBatch, PlanError,
    PlanOptions, Shape, ShiftedH, SrsMode, StageBytes, VramPlan, G1_BYTES, G2_BYTES, MIN_CHUNK,
    PARKED_CHUNK_GAIN, PREFERRED_MIN_CHUNK, RING_AHEAD, SCALAR_BYTES, SHIFTED_H_WORKERS,
    STREAM_TERMS,
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

/// How a deferred witness's z = (inputs, aux) goes up to the device.
///
/// Plain is the default: measured on the H200 (2026-12-03, `z_upload` at a
/// 32 GiB PoRep partition's mix, 130.2 M values, 1.3% others), packing on
/// the host costs more than the PCIe time it saves — plain 243 ms against
/// packed 278 ms with 4 fill threads, 166 against 184 with 8 — because the
/// host still reads all 4.2 GB to classify them. It pays only once the
/// witness comes out of synthesis already packed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZUpload {
    /// The aux values packed (cuzk-cuda `packed`: a 2-bit class per value,
    /// only the values other than 0 and 1 in full) in pieces of one
    /// staging buffer's words, expanded on the device; a piece with more
    /// than ~24% others goes plainly.
    Packed,
    /// Every value in full through the staging buffers.
    #[default]
    Plain,
}

/// What one z upload moved (`CudaBackend::last_z_upload`; logged at debug
/// as `upload_z …`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZUploadReport {
    /// How it went: packed pieces or every value plain.
    pub mode: ZUpload,
    /// Aux values uploaded.
    pub values: usize,
    /// Of them, in packed pieces.
    pub packed: usize,
    /// Of the packed ones, sent in full (neither 0 nor 1).
    pub others: usize,
    /// Bytes that crossed PCIe for the aux values.
    pub bytes: u64,
    /// Host time of a plain upload: filling the pinned buffers, and waiting
    /// for a buffer's previous copy (zero for a packed one).
    pub staging: cuzk_cuda::staging::StagingTimes,
}

impl ZUploadReport {
    /// The report of a packed upload.
    pub fn packed(p: cuzk_cuda::staging::PackedUpload) -> Self {
        ZUploadReport {
            mode: ZUpload::Packed,
            values: p.values,
            packed: p.packed,
            others: p.others,
            bytes: p.bytes,
            staging: Default::default(),
        }
    }
}

impl std::fmt::Display for ZUploadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plain = human(self.values as u64 * SCALAR_BYTES);
        match self.mode {
            ZUpload::Plain => write!(
                f,
                "plain: {} values, {plain}; host fill {:.3} s, waiting for copies {:.3} s",
                self.values,
                self.staging.fill.as_secs_f64(),
                self.staging.wait.as_secs_f64()
            ),
            ZUpload::Packed => {
                write!(
                    f,
                    "packed: {} of {} values full, {} instead of {plain}",
                    self.others,
                    self.values,
                    human(self.bytes)
                )?;
                if self.packed < self.values {
                    write!(
                        f,
                        " ({} values in pieces that went plain)",
                        self.values - self.packed
                    )?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_upload_reports_say_the_path_and_the_bytes() {
        let values = 130_200_000;
        let packed = ZUploadReport {
            mode: ZUpload::Packed,
            values,
            packed: values,
            others: 1_690_000,
            bytes: 86_000_000,
            staging: Default::default(),
        };
        assert_eq!(
            packed.to_string(),
            "packed: 1690000 of 130200000 values full, 82.0 MiB instead of 3.88 GiB"
        );
        let some_plain = ZUploadReport {
            packed: values - 1000,
            ..packed
        };
        assert!(some_plain
            .to_string()
            .ends_with("(1000 values in pieces that went plain)"));
        let plain = ZUploadReport {
            mode: ZUpload::Plain,
            values,
            packed: 0,
            others: 0,
            bytes: values as u64 * 32,
            staging: cuzk_cuda::staging::StagingTimes {
                fill: std::time::Duration::from_millis(120),
                wait: std::time::Duration::from_millis(1480),
            },
        };
        assert_eq!(
            plain.to_string(),
            "plain: 130200000 values, 3.88 GiB; host fill 0.120 s, waiting for copies 1.480 s"
        );
    }
}
