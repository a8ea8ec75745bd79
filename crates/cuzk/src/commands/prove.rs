//! `cuzk prove`: partitions of a demo circuit proved through the serial
//! scheduler, written as concatenated 192-byte proofs with their public
//! inputs as JSON.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_field::{Fr, PrimeField};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::proof::proofs_to_bytes;
use cuzk_groth16::prover::check_key_shape;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{DemoSource, Device, Job, JobOutput, PartitionSource};
use cuzk_synth::DemoCircuit;

use crate::backend::{select_engine_device, BackendArgs};
use crate::output::{secs, spinner, stage_list, write_atomically};
use crate::run::{run_jobs, RunSettings, Schedule};

#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct CircuitArgs {
    /// log2 of the demo circuit's constraint count (10..=27).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(10..=27))]
    pub(crate) log_size: u32,
    /// Share of SHA-256 rows in the demo circuit.
    #[arg(long, default_value_t = 0.95)]
    pub(crate) sha_share: f64,
}

#[derive(Args, Debug)]
pub(crate) struct ProveArgs {
    #[command(flatten)]
    circuit: CircuitArgs,
    /// Proving key (.params).
    #[arg(long, short)]
    key: PathBuf,
    /// Number of partitions (one witness seed each: seed, seed+1, ...).
    #[arg(long, default_value_t = 1)]
    partitions: u64,
    /// First witness seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Where to write the proofs (written atomically).
    #[arg(long, short)]
    out: PathBuf,
    /// Where to write the public inputs as JSON (default: OUT with .inputs.json).
    #[arg(long)]
    inputs_out: Option<PathBuf>,
    #[command(flatten)]
    backend: BackendArgs,
}

pub(crate) fn run(args: ProveArgs) -> Result<()> {
    let device = select_engine_device(&args.backend, 1)?;
    let key = load_key(&args.key)?;
    let report = prove_partitions(
        device,
        key,
        args.circuit,
        args.seed,
        args.partitions,
        args.rng_seed,
    )?;
    let inputs_out = args
        .inputs_out
        .unwrap_or_else(|| args.out.with_extension("inputs.json"));
    write_outputs(&report, &args.out, &inputs_out)?;
    report.print_timings();
    println!("wrote {} and {}", args.out.display(), inputs_out.display());
    Ok(())
}

pub(crate) fn check_share(share: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&share) {
        bail!("--sha-share must be between 0 and 1, got {share}");
    }
    Ok(())
}

pub(crate) fn load_key(path: &Path) -> Result<ProvingKey> {
    let spinner = spinner(format!("reading {}", path.display()));
    let key = ProvingKey::read_from_path(path, PointCheck::OnCurve)
        .with_context(|| format!("reading proving key {}", path.display()))?;
    spinner.finish_and_clear();
    Ok(key)
}

/// The proofs of a run and the public inputs of each partition.
pub(crate) struct ProveReport {
    output: JobOutput,
    inputs: Vec<Vec<Fr>>,
}

impl ProveReport {
    pub(crate) fn print_timings(&self) {
        println!(
            "{:>9} {:>8} {:>10} {:>10}  stages (device stages: CUDA-event times)",
            "partition", "backend", "synth", "prove"
        );
        for (i, p) in self.output.partitions.iter().enumerate() {
            println!(
                "{:>9} {:>8} {:>10} {:>10}  {}",
                i,
                p.backend,
                secs(p.synthesis),
                secs(p.timings.total()),
                stage_list(&p.timings)
            );
        }
    }
}

/// Demo circuits `first_seed..first_seed + partitions` proved with `key` on
/// `device` by the serial scheduler (the proofs are checked by `cuzk
/// verify`, not here); `rng_seed` makes them reproducible.
pub(crate) fn prove_partitions(
    device: Device,
    key: ProvingKey,
    circuit: CircuitArgs,
    first_seed: u64,
    partitions: u64,
    rng_seed: Option<u64>,
) -> Result<ProveReport> {
    check_share(circuit.sha_share)?;
    if partitions == 0 {
        bail!("--partitions must be at least 1");
    }
    // The key must fit the circuit before any work: compare against the shape.
    check_key_shape(
        &key,
        &DemoCircuit::shape_for(circuit.log_size, circuit.sha_share),
    )
    .context("the key was not made for this circuit (check --log-size and --sha-share)")?;
    let source = DemoSource::new(
        circuit.log_size,
        circuit.sha_share,
        first_seed,
        partitions as usize,
    );
    let inputs = (0..partitions as usize)
        .map(|i| source.circuit(i).public_inputs())
        .collect();
    let shape = source.shape();
    let key_bytes = key.summary().file_len;
    let mut job = Job::new(Arc::new(source), Arc::new(key));
    if let Some(seed) = rng_seed {
        job = job.seeded(seed);
    }
    let settings = RunSettings {
        schedule: Schedule::Serial,
        host_budget: None,
        verify: false,
        what: "partitions",
    };
    let mut run = run_jobs(device, vec![job], &shape, key_bytes, &settings)?;
    for (i, p) in run.outputs[0].partitions.iter().enumerate() {
        if let Some(plan) = &p.plan {
            eprintln!("partition {i}: {plan}");
        }
    }
    Ok(ProveReport {
        output: run.outputs.remove(0),
        inputs,
    })
}

pub(crate) fn write_outputs(report: &ProveReport, proofs: &Path, inputs: &Path) -> Result<()> {
    let bytes = proofs_to_bytes(&report.output.proofs);
    let json: Vec<Vec<String>> = report
        .inputs
        .iter()
        .map(|inputs| inputs.iter().map(hex_scalar).collect())
        .collect();
    write_atomically(proofs, &bytes)?;
    write_atomically(inputs, serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(())
}

/// A scalar as 64 big-endian hex digits (what `cuzk verify --inputs` reads).
fn hex_scalar(x: &Fr) -> String {
    let repr = x.to_repr();
    repr.as_ref()
        .iter()
        .rev()
        .map(|b| format!("{b:02x}"))
        .collect()
}
