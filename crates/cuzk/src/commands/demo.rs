//! `cuzk demo`: the main job in one command: a key for a demo circuit
//! (generated once and cached), a batch of partitions proved on the best
//! backend, verification, and the time of every stage.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;

use crate::backend::{select_engine_device, BackendArgs};
use crate::commands::prove::{check_share, load_key, prove_partitions, write_outputs, CircuitArgs};
use crate::commands::setup::setup;
use crate::commands::verify::verify_files;
use crate::output::secs;

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// log2 of the constraint count.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(10..=27))]
    log_size: u32,
    /// Share of SHA-256 rows (the rest is a multiplication chain).
    #[arg(long, default_value_t = 0.95)]
    sha_share: f64,
    /// Partitions to prove.
    #[arg(long, default_value_t = 2)]
    partitions: u64,
    /// Folder for the cached key and the outputs.
    #[arg(long, default_value = "target/demo")]
    dir: PathBuf,
    #[command(flatten)]
    backend: BackendArgs,
}

pub(crate) fn run(args: DemoArgs) -> Result<()> {
    let circuit = CircuitArgs {
        log_size: args.log_size,
        sha_share: args.sha_share,
    };
    let (partitions, dir) = (args.partitions, &args.dir);
    check_share(circuit.sha_share)?;
    let device = select_engine_device(&args.backend, 1)?;
    let backend = crate::run::prover_name(&device);
    let key_path = dir.join(format!(
        "demo-2^{}-sha{}.params",
        circuit.log_size,
        (circuit.sha_share * 100.0).round() as u32
    ));
    println!(
        "cuzk demo: 2^{} constraints ({:.0}% SHA-256 rows), {} partitions, backend {}",
        circuit.log_size,
        circuit.sha_share * 100.0,
        partitions,
        backend
    );
    let setup_time = if key_path.exists() {
        println!("key: {} (cached)", key_path.display());
        None
    } else {
        let t = setup(circuit, &key_path, 0)?;
        println!("key: {} generated in {}", key_path.display(), secs(t));
        Some(t)
    };
    let t = Instant::now();
    let key = load_key(&key_path)?;
    let load = t.elapsed();
    let t = Instant::now();
    let report = prove_partitions(device, key, circuit, 1, partitions, None)?;
    let prove_all = t.elapsed();
    let proofs = dir.join("demo.proofs");
    let inputs = dir.join("demo.inputs.json");
    write_outputs(&report, &proofs, &inputs)?;
    let t = Instant::now();
    let valid = verify_files(&key_path, &proofs, &inputs)?;
    let verify = t.elapsed();
    println!();
    report.print_timings();
    println!();
    if let Some(t) = setup_time {
        println!("setup      {}", secs(t));
    }
    println!("key load   {}", secs(load));
    println!(
        "synth+prove {} for {} partitions ({} per partition)",
        secs(prove_all),
        partitions,
        secs(prove_all / partitions as u32)
    );
    println!("verify     {}", secs(verify));
    if !valid {
        bail!("a demo proof did not verify");
    }
    println!(
        "all {partitions} proofs valid; proofs in {}",
        proofs.display()
    );
    Ok(())
}
