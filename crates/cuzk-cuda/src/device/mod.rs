//! Device discovery, the per-device handle with its loaded kernels, streams,
//! events, and typed device and pinned-host buffers.//!
//! `gpu.rs` is [`Gpu`] (opening a device once per process, its kernels and
//! arena), `stream.rs` [`Stream`] and [`Event`] (launches, copies, ordering,
//! timing), `buffer.rs` [`DeviceBuffer`] and [`PinnedBuffer`]; this file is
//! discovery ([`devices`], [`DeviceInfo`]) and the launch-shape helper.

mod buffer;
mod gpu;
mod hostpin;
mod stream;

pub use buffer::{DeviceBuffer, PinnedBuffer};
pub(crate) use buffer::{KernelOut, MappedBuffer};
pub use gpu::{supported, Gpu, MIN_COMPUTE_CAPABILITY, MIN_DRIVER_CUDA};
pub use hostpin::HostPin;
pub(crate) use hostpin::PAGE;
pub use stream::{Event, Stream};

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, LaunchConfig,
};
use cuzk_field::limbs::{as_bytes, DeviceRepr};

use crate::arena::{self, Arena, Region, VramBudget};
use crate::error::{DriverContext, Error, KernelsProblem, Result};
use crate::ffi::{self, KernelArgs};
use crate::kernels;
use crate::launch::{Args, DevPtr, DevPtrMut, Kernel};

/// What a device is, for logs and for sizing work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The CUDA device ordinal (0 for the first device).
    pub ordinal: usize,
    /// The model name the driver reports (e.g. "NVIDIA H100 80GB HBM3").
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for an H100/H200.
    pub compute_capability: (i32, i32),
    /// Device memory, bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GPU {}: {} (sm_{}{}, {} SMs, {:.1} GiB)",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.multiprocessors,
            self.total_memory as f64 / (1u64 << 30) as f64
        )
    }
}

/// Whether the CUDA driver library can be loaded at all. Every other driver
/// call panics inside cudarc when it cannot, so this is asked first.
pub fn driver_present() -> bool {
    ffi::driver_library_present()
}

/// The CUDA version the driver supports, as `cuDriverGetVersion` writes it
/// (13000 for 13.0); `Err(Error::NoDevice)` without a driver.
pub fn driver_version() -> Result<i32> {
    if !driver_present() {
        return Err(Error::NoDevice(
            "the CUDA driver library (libcuda) is not installed".into(),
        ));
    }
    ffi::driver_version().cuda("cuDriverGetVersion", || "the driver".into())
}

/// Why this machine has no CUDA device at all, in words ("no CUDA device
/// (…)"), or `None` where the driver reports one, usable or not: what a GPU
/// test suite says when it skips (an unusable device fails it instead).
pub fn no_device() -> Option<String> {
    match devices() {
        Err(Error::NoDevice(why)) => Some(format!("no CUDA device ({why})")),
        _ => None,
    }
}

/// The CUDA devices of this machine. No driver, no device, or a driver that
/// fails to initialize all give `Err(Error::NoDevice(why))`, never a panic.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    if !driver_present() {
        return Err(Error::NoDevice(
            "the CUDA driver library (libcuda) is not installed".into(),
        ));
    }
    let count = CudaContext::device_count()
        .map_err(|e| Error::NoDevice(format!("cuInit/cuDeviceGetCount: {e}")))?;
    if count <= 0 {
        return Err(Error::NoDevice("the driver reports 0 devices".into()));
    }
    (0..count as usize).map(device_info).collect()
}

pub(crate) fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    let what = || format!("device {ordinal}");
    let ctx = CudaContext::new(ordinal).cuda("cuCtxCreate/cuDevicePrimaryCtxRetain", what)?;
    info_of(&ctx)
}

pub(crate) fn info_of(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let ordinal = ctx.ordinal();
    let what = || format!("device {ordinal}");
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().cuda("cuDeviceGetName", what)?,
        compute_capability: ctx
            .compute_capability()
            .cuda("cuDeviceGetAttribute", what)?,
        total_memory: ctx.total_mem().cuda("cuDeviceTotalMem", what)?,
        multiprocessors: ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .cuda("cuDeviceGetAttribute", what)? as u32,
    })
}

/// A 1-D launch configuration: `blocks` × `threads`, no dynamic shared memory.
pub(crate) fn grid(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}
