//! The sweep's command line (clap): the workload, the grid and where the
//! results go.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use cuzk_synth::DemoCircuit;

/// Which circuit the jobs prove.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CircuitKind {
    /// cuzk's demo circuit of 2^K constraints (`--log-size`, `--share`).
    Demo,
    /// Filecoin PoRep C2: synthetic CC sectors of `--sector-size` (or `--c1` files),
    /// their key from the parameter cache, every proof checked with `verify_seal`.
    Porep,
}

/// Pipeline sweep: runs the engine over a grid of settings and reports
/// throughput, latency, busy fraction per stage and peak host memory, as a
/// table, JSON and an SVG chart. Every list option takes comma-separated
/// values; the grid is their product, or the explicit `--points` list.
#[derive(Parser, Debug, Clone)]
#[command(name = "sweep", version)]
pub(crate) struct Options {
    /// The circuit: the demo circuit, or Filecoin PoRep on synthetic sectors.
    #[arg(long, value_enum, default_value_t = CircuitKind::Demo)]
    pub circuit: CircuitKind,
    /// Demo circuit: 2^K constraints.
    #[arg(long, default_value_t = 14)]
    pub log_size: u32,
    /// Demo circuit: SHA-256 share.
    #[arg(long, default_value_t = DemoCircuit::DEFAULT_SHA_SHARE)]
    pub share: f64,
    /// PoRep: sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) of the synthetic
    /// CC sectors made for the jobs (sector j+1 of f01000, seed j+1).
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// PoRep: prove these C1 files (plain or Curio's wrapper) instead of
    /// synthetic sectors, one job each (`--jobs` is their number).
    #[arg(long)]
    pub c1: Vec<PathBuf>,
    /// PoRep: the miner actor id the sectors belong to (checked, and used by verify_seal).
    #[arg(long, default_value = "f01000")]
    pub prover_id: String,
    /// PoRep: the parameter cache (default FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    /// Jobs per grid point (PoRep with --c1: the number of files).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,
    /// Demo circuit: partitions per job (PoRep: the proof type's).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub partitions: u64,
    /// CPU devices, or GPUs with --backend cuda.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub devices: u64,
    /// Synthesis workers.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub synthesis: Vec<usize>,
    /// Prover workers per device (CUDA workers per GPU with --backend cuda).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub provers: Vec<usize>,
    /// Partitions admitted at once.
    #[arg(long, value_delimiter = ',', default_value = "4")]
    pub in_flight: Vec<usize>,
    /// Explicit points S:P:F (synthesis:provers:in-flight) instead of the
    /// product of the three lists above; budgets and VRAM budgets still multiply.
    #[arg(long, value_delimiter = ',', value_parser = triple)]
    pub points: Vec<(usize, usize, usize)>,
    /// Host-memory budgets: auto (3/4 of RAM, less the key for PoRep), Nx (N
    /// partition footprints), N[KiB|MiB|GiB] or bytes.
    #[arg(long = "budget", value_delimiter = ',', default_value = "auto")]
    pub budgets: Vec<String>,
    /// cpu, or cuda: --devices counts GPUs and --provers the CUDA workers per GPU.
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    pub backend: String,
    /// VRAM budgets per GPU (auto or sizes such as 16GiB; cuda only).
    #[arg(long, value_delimiter = ',')]
    pub vram: Vec<String>,
    /// Runs per point; the median wall time is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub repeats: u64,
    /// Turn the epilogue's verification off.
    #[arg(long)]
    pub no_verify: bool,
    /// Demo circuit: synthesize each partition's lanes on one thread (the
    /// profile of a single-threaded circuit such as PoRep's); by default
    /// they run in parallel on rayon.
    #[arg(long)]
    pub sequential_synthesis: bool,
    /// Demo circuit: the proving key (default target/bench-keys/demo-K-SHARE.params,
    /// generated with bellperson's generator when missing).
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Skip the warm-up run (one partition, outside the measurements; PoRep
    /// never warms up: one 32 GiB partition is a minute).
    #[arg(long)]
    pub no_warm_up: bool,
    /// Results directory (default benches/results/sweep-CIRCUIT-BACKEND, e.g. sweep-k14-cpu).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// One tiny point (demo 2^10 with the committed key, or PoRep 2 KiB with
    /// --circuit porep), as CI runs it.
    #[arg(long, alias = "test")]
    pub smoke: bool,
    /// Accepted and ignored (cargo bench passes it).
    #[arg(long, hide = true)]
    pub bench: bool,
}

fn triple(t: &str) -> Result<(usize, usize, usize), String> {
    let v = t
        .trim()
        .split(':')
        .map(|n| n.trim().parse::<usize>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<_>>>();
    match v.as_deref() {
        Some(&[s, p, f]) => Ok((s, p, f)),
        _ => Err(format!("`{t}` is not S:P:F (three positive integers)")),
    }
}

impl Options {
    /// Parses the command line and applies `--smoke`.
    pub(crate) fn from_args() -> Result<Options> {
        let mut o = Options::parse();
        if o.smoke {
            o.jobs = 1;
            o.synthesis = vec![1];
            o.provers = vec![1];
            o.in_flight = vec![2];
            o.points = Vec::new();
            match o.circuit {
                CircuitKind::Demo => {
                    o.log_size = 10;
                    o.partitions = 2;
                    o.key = Some(crate::workspace_root().join("fixtures/demo-k10-sha95.params"));
                }
                CircuitKind::Porep => o.sector_size = "2KiB".into(),
            }
            if o.out.is_none() {
                o.out = Some(crate::workspace_root().join("target/bench-results/sweep-smoke"));
            }
        }
        if o.circuit == CircuitKind::Porep && !o.c1.is_empty() {
            o.jobs = o.c1.len() as u64;
        }
        for (name, list) in [
            ("--synthesis", &o.synthesis),
            ("--provers", &o.provers),
            ("--in-flight", &o.in_flight),
        ] {
            if list.contains(&0) {
                bail!("{name}: every value must be at least 1");
            }
        }
        if o.circuit == CircuitKind::Demo && !o.c1.is_empty() {
            bail!("--c1 is for --circuit porep");
        }
        Ok(o)
    }
}

/// A budget: `auto` (the given default), `Nx` partition footprints,
/// `N[KiB|MiB|GiB]`, bytes.
pub(crate) fn parse_budget(s: &str, footprint: u64, auto: u64) -> Result<u64> {
    let s = s.trim();
    if s == "auto" {
        return Ok(auto);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix('x') {
        (n, footprint as f64)
    } else if let Some(n) = s.strip_suffix("GiB") {
        (n, (1u64 << 30) as f64)
    } else if let Some(n) = s.strip_suffix("MiB") {
        (n, (1u64 << 20) as f64)
    } else if let Some(n) = s.strip_suffix("KiB") {
        (n, 1024.0)
    } else {
        (s, 1.0)
    };
    let n: f64 = num
        .trim()
        .parse()
        .with_context(|| format!("budget `{s}`"))?;
    Ok((n * mult) as u64)
}
