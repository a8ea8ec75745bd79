//! `cuzk precompile`: records a circuit once (a PoRep or SnapDeals update
//! partition, a WinningPoSt or WindowPoSt; from the crates' blank circuit,
//! the constraints key generation sees) into the pre-compiled circuit file
//! that `--synthesis precompiled` reads (porep-c2, winning-post,
//! window-post, snap-prove), then opens it again to check it.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_filecoin::precompile::{default_cache_path, precompile, PrecompiledCircuit};
use cuzk_filecoin::ParamsDir;
use cuzk_pipeline::memory::human;

use crate::commands::fixtures::circuit_arg;
use crate::output::spinner;

#[derive(Args, Debug)]
pub(crate) struct PrecompileArgs {
    /// A registered proof type (StackedDrg32GiBV1_1, StackedDrgWinning32GiBV1,
    /// StackedDrgWindow32GiBV1_2, ...); an update circuit is named with
    /// --sector-size and --kind instead (its type names are the V1 PoRep ones).
    #[arg(long)]
    proof_type: Option<String>,
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB), with --kind.
    #[arg(long, default_value = "2KiB", conflicts_with = "proof_type")]
    sector_size: String,
    /// With --sector-size: `porep`, `winning-post`, `window-post` or `update`.
    #[arg(long, default_value = "porep", conflicts_with = "proof_type")]
    kind: String,
    /// Parameter cache the file goes into, beside the key (default:
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Write the file here instead (`--r1cs-cache` of the provers reads it there).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: PrecompileArgs) -> Result<()> {
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let pt = circuit_arg(&args.sector_size, &args.kind, args.proof_type.as_deref())?;
    let path = match &args.out {
        Some(p) => p.clone(),
        None => default_cache_path(&ParamsDir::filecoin(), pt)?,
    };
    let bar = spinner(format!(
        "recording the {} circuit{} into {}",
        pt.name(),
        match pt {
            cuzk_filecoin::Circuit::Update(_) => " (SnapDeals update)",
            _ => "",
        },
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
    let opened = PrecompiledCircuit::open(&path, pt, None)?;
    println!(
        "checked    {:>8.1} s  opened, checksums and structure verified ({} constraints)",
        t.elapsed().as_secs_f64(),
        opened.shape().num_constraints
    );
    Ok(())
}
