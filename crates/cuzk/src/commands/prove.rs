//! `cuzk prove`: partitions of a demo circuit proved on a backend, written as
//! concatenated 192-byte proofs with their public inputs as JSON.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_field::{Fr, PrimeField};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::proof::proofs_to_bytes;
use cuzk_groth16::prover::{check_key_shape, prove_with, Backend, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize, DemoCircuit, Synthesized};
use indicatif::{ProgressBar, ProgressStyle};
use rand_core::RngCore;

use crate::backend::{select_backend, BackendArgs};
use crate::output::{rng_from, secs, spinner, stage_list, write_atomically};

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
    let backend = select_backend(&args.backend)?;
    let key = load_key(&args.key)?;
    let mut rng = rng_from(args.rng_seed);
    let report = prove_partitions(
        backend.as_ref(),
        &key,
        args.circuit,
        args.seed,
        args.partitions,
        &mut rng,
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

struct PartitionReport {
    proof: cuzk_groth16::Proof,
    inputs: Vec<Fr>,
    synthesis: Duration,
    timings: StageTimings,
    /// Wall time of proving (after synthesis).
    wall: Duration,
    backend: &'static str,
}

pub(crate) struct ProveReport {
    partitions: Vec<PartitionReport>,
}

impl ProveReport {
    pub(crate) fn print_timings(&self) {
        println!(
            "{:>9} {:>8} {:>10} {:>10}  stages (device stages: CUDA-event times)",
            "partition", "backend", "synth", "prove"
        );
        for (i, p) in self.partitions.iter().enumerate() {
            println!(
                "{:>9} {:>8} {:>10} {:>10}  {}",
                i,
                p.backend,
                secs(p.synthesis),
                secs(p.wall),
                stage_list(&p.timings)
            );
        }
    }
}

pub(crate) fn prove_partitions(
    backend: &dyn Backend,
    key: &ProvingKey,
    circuit: CircuitArgs,
    first_seed: u64,
    partitions: u64,
    rng: &mut impl RngCore,
) -> Result<ProveReport> {
    check_share(circuit.sha_share)?;
    if partitions == 0 {
        bail!("--partitions must be at least 1");
    }
    // The key must fit the circuit before any work: compare against the shape.
    check_key_shape(
        key,
        &DemoCircuit::shape_for(circuit.log_size, circuit.sha_share),
    )
    .context("the key was not made for this circuit (check --log-size and --sha-share)")?;
    // bellperson's order: every r, then every s.
    let r: Vec<Fr> = (0..partitions).map(|_| Fr::random_from(rng)).collect();
    let s: Vec<Fr> = (0..partitions).map(|_| Fr::random_from(rng)).collect();
    let bar = ProgressBar::new(partitions).with_style(
        ProgressStyle::with_template("{spinner} partition {pos}/{len} {msg} [{elapsed}]")
            .expect("static template"),
    );
    let mut out = Vec::new();
    for i in 0..partitions {
        let c = DemoCircuit::new(circuit.log_size, circuit.sha_share, first_seed + i);
        let inputs = c.public_inputs();
        bar.set_message("synthesizing");
        let t = Instant::now();
        let w: Synthesized = synthesize(c).context("synthesizing the demo circuit")?;
        let synthesis = t.elapsed();
        bar.set_message(format!("proving on {}", backend.name()));
        let proved = prove_with(backend, key, &w, r[i as usize], s[i as usize])?;
        if let Some(how) = backend.last_run() {
            bar.suspend(|| eprintln!("partition {i}: {how}"));
        }
        out.push(PartitionReport {
            proof: proved.proof,
            inputs,
            synthesis,
            timings: proved.timings,
            wall: proved.wall,
            backend: proved.backend,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(ProveReport { partitions: out })
}

/// Drawing r and s as bellperson does (`Field::random`).
trait RandomFrom {
    fn random_from(rng: &mut impl RngCore) -> Self;
}

impl RandomFrom for Fr {
    fn random_from(rng: &mut impl RngCore) -> Self {
        <Fr as cuzk_field::Field>::random(rng)
    }
}

pub(crate) fn write_outputs(report: &ProveReport, proofs: &Path, inputs: &Path) -> Result<()> {
    let bytes = proofs_to_bytes(
        &report
            .partitions
            .iter()
            .map(|p| p.proof)
            .collect::<Vec<_>>(),
    );
    let json: Vec<Vec<String>> = report
        .partitions
        .iter()
        .map(|p| p.inputs.iter().map(hex_scalar).collect())
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
