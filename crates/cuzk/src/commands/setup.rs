//! `cuzk setup`: a proving key for a demo circuit, made by cuzk's generator
//! (bellperson's bytes), the fixed-base step on the GPU or the CPU.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use cuzk_groth16::setup::{generate_key_with, CpuFixedBase, FixedBase};
use cuzk_synth::DemoCircuit;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::backend::select_fixed_base;
use crate::commands::prove::{check_share, CircuitArgs};
use crate::output::{secs, spinner};

#[derive(Args, Debug)]
pub(crate) struct SetupArgs {
    #[command(flatten)]
    circuit: CircuitArgs,
    /// Where to write the key (written atomically).
    #[arg(long, short)]
    out: PathBuf,
    /// Seed of the toxic waste. Test keys only: anyone with the seed can forge proofs.
    #[arg(long, default_value_t = 0)]
    setup_seed: u64,
    /// Where the fixed-base multiplications run: `auto` (the first CUDA device when there is one and the kernels are built, else the CPU, saying why), `cuda` or `cpu`. Same key bytes either way.
    #[arg(long, default_value = "auto")]
    backend: String,
}

pub(crate) fn run(args: SetupArgs) -> Result<()> {
    let fixed_base = select_fixed_base("setup", &args.backend)?;
    let t = setup_with(
        args.circuit,
        &args.out,
        args.setup_seed,
        fixed_base.as_ref(),
    )?;
    println!(
        "wrote {} in {} (key {}, write {}; fixed-base step on {})",
        args.out.display(),
        secs(t.generate + t.write),
        secs(t.generate),
        secs(t.write),
        fixed_base.name()
    );
    Ok(())
}

/// Time to generate a key and to write it.
struct SetupTimes {
    generate: Duration,
    write: Duration,
}

/// A key for the demo circuit with the fixed-base step on the CPU.
pub(crate) fn setup(circuit: CircuitArgs, out: &Path, setup_seed: u64) -> Result<Duration> {
    let t = setup_with(circuit, out, setup_seed, &CpuFixedBase)?;
    Ok(t.generate + t.write)
}

fn setup_with(
    circuit: CircuitArgs,
    out: &Path,
    setup_seed: u64,
    fixed_base: &dyn FixedBase,
) -> Result<SetupTimes> {
    check_share(circuit.sha_share)?;
    let spinner = spinner(format!(
        "generating key for the 2^{} demo circuit (fixed-base step on {})",
        circuit.log_size,
        fixed_base.name()
    ));
    let start = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(setup_seed);
    let key = generate_key_with(
        DemoCircuit::new(circuit.log_size, circuit.sha_share, 0),
        &mut rng,
        fixed_base,
    )
    .context("generating the proving key")?;
    let generate = start.elapsed();
    spinner.set_message(format!("writing {}", out.display()));
    let start = Instant::now();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    key.write_to_path(out)?;
    spinner.finish_and_clear();
    Ok(SetupTimes {
        generate,
        write: start.elapsed(),
    })
}
