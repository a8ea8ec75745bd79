//! `cargo xtask fixtures <keys|fetch|seal|synth-sector|synth-post|synth-snap> [ARGS]`: Filecoin
//! fixtures, through `cuzk fixtures` (built in release mode: key generation
//! and sealing are heavy, and xtask itself stays free of the Filecoin crates).
//!
//! * `keys [--sector-size 2KiB | --proof-type NAME] [--seed N] [--dir DIR] [--force]
//!   [--backend auto|cuda|cpu] [--from-recording [FILE]]`:
//!   PoRep test keys (`.params` and `.vk`), generated offline and
//!   deterministically from the seed, under their official names in the
//!   parameter cache (DIR, else `FIL_PROOFS_PARAMETER_CACHE`, else
//!   `/var/tmp/filecoin-proof-parameters`); the fixed-base step on a CUDA
//!   device when there is one (same bytes); with `--from-recording`, the QAP
//!   from the circuit's recording (`cuzk precompile`) instead of a synthesis.
//! * `fetch [--sector-size SIZE] [--porep-only] [--dir DIR] [--gateway URL]`:
//!   the official files of the crates' `parameters.json`, each checked
//!   against its published digest before it is put in the cache.
//! * `seal [--proof-type NAME] [--actor ID] [--sector N] [--seed N] [--curio] --out FILE`:
//!   seals a sector of random data and writes its C1 output.
//! * `synth-sector [--sector-size SIZE | --proof-type NAME] [--seed S] [--sector-id N]
//!   [--prover-id f0ID] [--plain] --out FILE`: the C1 output of a synthetic CC
//!   sector of any size, in seconds (test data: consistent, not sealed).
//! * `synth-post --proof-type NAME --randomness HEX --sectors LIST [--seed S] --out DIR`:
//!   synthetic WinningPoSt / WindowPoSt vanilla proofs, one file per sector.
//! * `synth-snap [--sector-size SIZE] [--seed S] --out DIR`: synthetic SnapDeals vanilla
//!   proofs, one file per partition, and the update's three commitments.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

const TASKS: [&str; 6] = [
    "keys",
    "fetch",
    "seal",
    "synth-sector",
    "synth-post",
    "synth-snap",
];

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some(task) if TASKS.contains(&task) => {}
        Some(other) => bail!("unknown fixtures task `{other}` (expected one of {TASKS:?})"),
        None => bail!("cargo xtask fixtures needs a task: one of {TASKS:?}"),
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "cuzk",
            "--bin",
            "cuzk",
            "--",
            "fixtures",
        ])
        .args(args)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo xtask fixtures {} failed", args[0]);
    }
    Ok(())
}
