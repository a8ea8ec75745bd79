//! `cargo xtask bench`: pipeline sweeps.
//!
//! xtask stays small, so the sweep itself is the `sweep` binary of
//! `cuzk-benches` (release build); this forwards the arguments to it. See
//! `cargo xtask bench --help` for the options (the circuit: demo or PoRep on
//! synthetic sectors, jobs, partitions, the grid of synthesis workers ×
//! prover workers per device × partitions in flight × memory budget, output
//! directory).

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Runs `cargo run --release -p cuzk-benches --bin sweep -- ARGS` from the
/// workspace root.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask lives one level below the workspace root")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "run",
            "--release",
            "-p",
            "cuzk-benches",
            "--bin",
            "sweep",
            "--",
        ])
        .args(args)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("the sweep failed ({status})");
    }
    Ok(())
}
