//! Errors of cuzk-cuda: each names the CUDA call or kernel, and the sizes.

use cudarc::driver::DriverError;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA device: no driver library, no device, or the driver
    /// refused to initialize. A normal answer on machines without a GPU.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// The kernel fatbins cannot be had: none found, one missing or built
    /// from other sources, or unreadable ([`crate::kernels`]).
    #[error(transparent)]
    Kernels(#[from] KernelsProblem),
    /// A CUDA driver call failed (the driver's own error is the source).
    #[error("CUDA call {call} failed ({what})")]
    Driver {
        /// The driver API call (e.g. `cuLaunchKernel`).
        call: &'static str,
        /// What it was doing: the kernel and sizes, or the buffer sizes.
        what: String,
        /// The driver's error.
        source: DriverError,
    },
    /// The device or its driver is too old for the kernels this build
    /// carries (a Turing card, a driver older than CUDA 13): says which, what
    /// is needed, and what to do instead.
    #[error("{0}")]
    Unsupported(String),
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
        /// What was wrong with the arguments.
        message: String,
    },
    /// Host memory could not be page-locked in place ([`crate::HostPin`]):
    /// says how much, this process's locked-memory limit, and how to lift it.
    #[error("{}", host_pin_message(*bytes, *limit, source))]
    HostPin {
        /// Bytes that were to be pinned.
        bytes: u64,
        /// The process's locked-memory limit (`ulimit -l`), `None` when
        /// unlimited or unknown.
        limit: Option<u64>,
        /// The driver's refusal.
        source: Box<Error>,
    },
}

fn host_pin_message(bytes: u64, limit: Option<u64>, source: &Error) -> String {
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let limit = match limit {
        Some(l) => format!("the locked-memory limit of this process is {}", gib(l)),
        None => "the locked-memory limit of this process is unlimited".to_string(),
    };
    format!(
        "could not pin {} of host memory in place ({limit}): {source}; raise the limit \
         (`ulimit -l unlimited`, systemd `LimitMEMLOCK=infinity`, docker `--ulimit memlock=-1`) \
         or free host memory",
        gib(bytes)
    )
}

impl Error {
    /// Whether the device lacked memory: the arena was exhausted or too
    /// small, or a driver call answered `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Error::OutOfMemory(_) => true,
            Error::Driver { source, .. } => {
                source.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
            }
            _ => false,
        }
    }
}

/// Why the kernel fatbins could not be loaded; each names the file and says
/// what to run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelsProblem {
    /// No folder of the search path holds any fatbin.
    #[error("CUDA kernels not built: no fatbins in {searched}; run {} (or point proving.kernels_dir or $CUZK_FATBIN_DIR at the folder that has them)", crate::kernels::REBUILD)]
    NotBuilt {
        /// The folders looked in, in order.
        searched: String,
    },
    /// The folder has fatbins, but not this unit's.
    #[error("kernels/{unit} is not built ({} is missing): run {}", path.display(), crate::kernels::REBUILD)]
    Missing {
        /// The unit's path under `kernels/`.
        unit: &'static str,
        /// The fatbin file that is missing.
        path: std::path::PathBuf,
    },
    /// The fatbin was built from other sources, or is not the one its stamp
    /// describes.
    #[error("kernels/{unit}: {} {why}: run {}", path.display(), crate::kernels::REBUILD)]
    Stale {
        /// The unit's path under `kernels/`.
        unit: &'static str,
        /// The fatbin file.
        path: std::path::PathBuf,
        /// What differs (the stamp's source hash or the file's own hash).
        why: String,
    },
    #[error("reading {}", path.display())]
    /// A fatbin or its stamp could not be read.
    Read {
        /// The file.
        path: std::path::PathBuf,
        #[source]
        /// The I/O error.
        source: std::io::Error,
    },
    /// A kernel's Rust declaration (`src/decl.rs`) disagrees with the
    /// loaded fatbin: the kernel is not in its unit, or its parameters'
    /// count or sizes differ (from the driver's parameter info).
    #[error("{0}: the Rust declaration (crates/cuzk-cuda/src/decl.rs) and the kernel's C signature disagree")]
    Declaration(String),
    /// The build script could not read the kernel manifest.
    #[error("the kernel manifest: {0}")]
    Manifest(String),
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
