//! What the proving commands (`porep-c2`, `winning-post`, `window-post`,
//! `snap-prove`, `aggregate`) share: the parameter cache filecoin-proofs
//! reads, the key check, the verification stage, and the report printed
//! once the proof is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use cuzk_filecoin::{Circuit, ParamsDir, PrecompiledCircuit};

use crate::output::{peak_rss, secs, write_atomically, Stages};

/// The parameter cache, whether to verify the proof, and the seed of its
/// randomness: what `porep-c2`, `winning-post`, `window-post` and
/// `snap-prove` all take.
#[derive(Args, Debug)]
pub(crate) struct ProofArgs {
    /// Parameter cache holding v28-….params and .vk, and for non-interactive PoRep
    /// types the SnarkPack SRS v28-fil-inner-product-v1.srs (default:
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    pub(crate) params_dir: Option<PathBuf>,
    /// Do not verify the proof before writing it.
    #[arg(long)]
    pub(crate) no_verify: bool,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    pub(crate) rng_seed: Option<u64>,
}

/// The parameter cache: `dir` (`--params-dir`) when given, else
/// filecoin-proofs' own (`FIL_PROOFS_PARAMETER_CACHE`, else its default).
/// filecoin-proofs reads the variable once, on first use: it is set here,
/// before anything touches the crates, so their verifier and cuzk read the
/// same directory.
pub(crate) fn parameter_cache(dir: Option<&Path>) -> ParamsDir {
    if let Some(dir) = dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    ParamsDir::filecoin()
}

/// The `check` stage: `circuit`'s key files present and whole.
pub(crate) fn check_key(
    params: &ParamsDir,
    circuit: impl Into<Circuit>,
    stages: &mut Stages,
) -> Result<()> {
    let t = Instant::now();
    params.check(circuit)?;
    stages.push((
        "check".into(),
        t.elapsed(),
        "key files present and whole".into(),
    ));
    Ok(())
}

/// The `verification` stage: skipped with `--no-verify` (`skip`), else
/// `verify` timed, its note saying how the proof was found valid.
pub(crate) fn verification(
    skip: bool,
    stages: &mut Stages,
    verify: impl FnOnce() -> Result<String>,
) -> Result<()> {
    if skip {
        stages.push((
            "verification".into(),
            Duration::ZERO,
            "skipped (--no-verify)".into(),
        ));
    } else {
        let t = Instant::now();
        let note = verify()?;
        stages.push(("verification".into(), t.elapsed(), note));
    }
    Ok(())
}

/// Prints one line per stage, then the process's peak host RSS.
pub(crate) fn print_stages(stages: &Stages) {
    for (stage, d, note) in stages {
        println!("{stage:<13} {:>10}  {note}", secs(*d));
    }
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
}

/// Writes `proof` to `out` (atomically), then prints the stages and what
/// was written.
pub(crate) fn write_and_report(out: &Path, proof: &[u8], stages: &Stages) -> Result<()> {
    write_atomically(out, proof)?;
    print_stages(stages);
    println!("wrote {} ({} bytes)", out.display(), proof.len());
    Ok(())
}

/// The `synthesis mode` note of a usable recording: its file, size and
/// constraint count.
pub(crate) fn precompiled_note(pre: &PrecompiledCircuit) -> String {
    format!(
        "precompiled: {} ({}, {} constraints)",
        pre.path().display(),
        cuzk_pipeline::memory::human(pre.file_bytes() as u64),
        pre.shape().num_constraints
    )
}

/// `count` files of `flag` for `c1s` `--c1` files: one per `--c1`, in the
/// same order, else an error saying so.
pub(crate) fn one_per_c1(c1s: usize, count: usize, flag: &str) -> Result<()> {
    if count != c1s {
        bail!("{c1s} --c1 files but {count} {flag} files: give one {flag} per --c1, in the same order");
    }
    Ok(())
}
