//! The kernel fatbins built by `cargo xtask kernels`, one per unit of
//! `kernels/manifest.toml`, embedded when the build script found every unit
//! current (cfg `cuzk_kernels`). Each becomes its own CUDA module on a device.

#[cfg(cuzk_kernels)]
include!(concat!(env!("OUT_DIR"), "/fatbins.rs"));

/// The embedded fatbins as `(unit, bytes)` (`("msm/g1.cu", …)`), empty when
/// this build has no kernels.
pub fn fatbins() -> &'static [(&'static str, &'static [u8])] {
    #[cfg(cuzk_kernels)]
    {
        UNITS
    }
    #[cfg(not(cuzk_kernels))]
    {
        &[]
    }
}

/// The architectures the embedded fatbins were built for (e.g.
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
    !fatbins().is_empty()
}
