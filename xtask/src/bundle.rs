//! `cargo xtask bundle`: see main.rs.
use anyhow::Result;
use std::path::Path;

pub fn build(_root: &Path, _opts: &crate::kernels::Options) -> Result<()> {
    anyhow::bail!("bundle: not yet implemented")
}
