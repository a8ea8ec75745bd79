//! The fatbin built by `cargo xtask kernels`, embedded when the build script
//! found it current (cfg `cuzk_kernels`).

#[cfg(cuzk_kernels)]
static FATBIN: &[u8] = include_bytes!(env!("CUZK_FATBIN_PATH"));

#[cfg(cuzk_kernels)]
static ARCHS: &str = env!("CUZK_FATBIN_ARCHS");

/// The embedded fatbin, if this build has one.
pub fn fatbin() -> Option<&'static [u8]> {
    #[cfg(cuzk_kernels)]
    {
        Some(FATBIN)
    }
    #[cfg(not(cuzk_kernels))]
    {
        None
    }
}

/// The architectures the embedded fatbin was built for (e.g.
/// `sm_80,sm_86,sm_89,sm_90,sm_120+ptx`), or `none`.
pub fn archs() -> &'static str {
    #[cfg(cuzk_kernels)]
    {
        ARCHS.trim()
    }
    #[cfg(not(cuzk_kernels))]
    {
        "none"
    }
}

/// Whether this build embeds kernels.
pub fn available() -> bool {
    fatbin().is_some()
}
