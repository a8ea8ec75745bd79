#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub mod abc;
pub mod arena;
pub mod compact;
mod decl;
mod device;
mod error;
mod ffi;
pub mod gather;
pub mod kernels;
pub mod keygen;
pub mod launch;
pub mod msm;
pub mod ntt;
pub mod packed;
#[cfg(feature = "tuning")]
pub mod probes;
mod scan;
pub mod staging;
#[cfg(feature = "testing")]
pub mod testing;

pub use arena::{fence_wait_on_this_thread, Arena, BudgetError, VramBudget};
pub use device::{
    devices, driver_present, driver_version, no_device, supported, DeviceBuffer, DeviceInfo, Event,
    Gpu, HostPin, PinnedBuffer, Stream, MIN_COMPUTE_CAPABILITY, MIN_DRIVER_CUDA,
};
pub use error::{Error, KernelsProblem, Result};
