//! `cuzk precompile`: records a PoRep proof type's partition circuit once
//! (from the crates' blank circuit, the constraints key generation sees)
//! into the pre-compiled circuit file that `porep-c2 --synthesis
//! precompiled` reads, then opens it again to check it.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_filecoin::precompile::{default_cache_path, precompile, PrecompiledPorep};
use cuzk_filecoin::{ParamsDir, ProofType};
use cuzk_pipeline::memory::human;

use crate::output::spinner;

#[derive(Args, Debug)]
pub(crate) struct PrecompileArgs {
    /// The PoRep proof type (StackedDrg2KiBV1_1, StackedDrg32GiBV1_1, ...).
    #[arg(long)]
    proof_type: String,
    /// Parameter cache the file goes into, beside the key (default:
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Write the file here instead (`porep-c2 --r1cs-cache` reads it there).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: PrecompileArgs) -> Result<()> {
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let pt = ProofType::from_name(&args.proof_type)?;
    let path = match &args.out {
        Some(p) => p.clone(),
        None => default_cache_path(&ParamsDir::filecoin(), pt)?,
    };
    let bar = spinner(format!(
        "recording the {} partition circuit into {}",
        pt.name(),
        path.display()
    ));
    let made = precompile(pt, &path).with_context(|| format!("writing {}", path.display()))?;
    bar.finish_and_clear();
    let stats = &made.stats;
    println!(
        "recorded   {:>8.1} s  {} constraints, {} inputs, {} aux; {} + {} + {} nonzeros, {} distinct coefficients",
        made.record_secs,
        made.shape.num_constraints,
        made.shape.num_inputs,
        made.shape.num_aux,
        stats.nonzeros[0],
        stats.nonzeros[1],
        stats.nonzeros[2],
        stats.distinct_coeffs
    );
    println!(
        "written    {:>8.1} s  {} ({}, {:.2} bytes per nonzero)",
        made.write_secs,
        path.display(),
        human(made.file_bytes),
        stats.bytes_per_nonzero
    );
    let t = Instant::now();
    let opened = PrecompiledPorep::open(&path, pt, None)?;
    println!(
        "checked    {:>8.1} s  opened, checksums and structure verified ({} constraints)",
        t.elapsed().as_secs_f64(),
        opened.shape().num_constraints
    );
    Ok(())
}
