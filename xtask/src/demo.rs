//! `cargo xtask demo [DEMO ARGS]`: the README's main command. On a machine with
//! an NVIDIA GPU it builds the kernels for that GPU's architecture when they are
//! missing or stale, then runs `cuzk demo` (which proves on the GPU); without a
//! GPU it says so and runs `cuzk demo` on the CPU.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

pub(crate) fn run(root: &Path, demo_args: &[String]) -> Result<()> {
    match local_gpu_arch() {
        Some(arch) => {
            println!("GPU found ({arch}): building the kernels if needed");
            crate::kernels::build(
                root,
                &crate::kernels::Options::parse(&["--arch".into(), arch])?,
            )?;
        }
        None => println!("no NVIDIA GPU found (nvidia-smi): proving on the CPU"),
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["run", "--release", "-p", "cuzk", "--", "demo"])
        .args(demo_args)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cuzk demo failed");
    }
    Ok(())
}

/// `sm_XY` of the first GPU, from `nvidia-smi`; `None` when there is none.
fn local_gpu_arch() -> Option<String> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let cap = text.lines().next()?.trim().to_string();
    let (major, minor) = cap.split_once('.')?;
    Some(format!("sm_{major}{minor}"))
}
