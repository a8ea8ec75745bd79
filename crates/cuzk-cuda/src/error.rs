//! Errors of cuzk-cuda: each names the CUDA call or kernel, and the sizes.

use cudarc::driver::DriverError;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable CUDA device: no driver library, no device, or the driver
    /// refused to initialize. A normal answer on machines without a GPU.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// This build embeds no fatbin, or one built from other sources.
    #[error("CUDA kernels not built (or stale: sources changed since the last build): run `cargo xtask kernels`")]
    KernelsNotBuilt,
    /// A CUDA driver call failed.
    #[error("CUDA call {call} failed ({what}): {source}")]
    Driver {
        /// The driver API call (e.g. `cuLaunchKernel`).
        call: &'static str,
        /// What it was doing: the kernel and sizes, or the buffer sizes.
        what: String,
        source: DriverError,
    },
    /// Device memory could not be had: the arena is exhausted, or the device
    /// has less free memory than the budget asks for. Says how much was asked
    /// and how much there is.
    #[error("out of device memory: {0}")]
    OutOfMemory(String),
    /// Arguments that a launch wrapper rejected before launching.
    #[error("kernel {kernel}: {message}")]
    BadArguments {
        /// The kernel's name (e.g. `ntt_pass`).
        kernel: &'static str,
        message: String,
    },
}

/// Attaches the call name and context to a driver result.
pub(crate) trait DriverContext<T> {
    fn cuda(self, call: &'static str, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, DriverError> {
    fn cuda(self, call: &'static str, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Driver {
            call,
            what: what(),
            source,
        })
    }
}

/// Shorthand for a size check in a launch wrapper.
pub(crate) fn ensure(
    kernel: &'static str,
    ok: bool,
    message: impl FnOnce() -> String,
) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::BadArguments {
            kernel,
            message: message(),
        })
    }
}
