//! `cuzk`: the command line of the cuzk Groth16 engine.
//!
//! `setup` makes a proving key for a demo circuit, `prove` proves partitions
//! of it, `verify` checks proofs, `info` describes a key file and the
//! machine, and `demo` does all of it in one go, printing each stage's time.

mod porep;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use cuzk_cuda::VramBudget;
use cuzk_field::{Fr, PrimeField};
use cuzk_gpu::CudaBackend;
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::params::KeySummary;
use cuzk_groth16::proof::{proofs_from_bytes, proofs_to_bytes};
use cuzk_groth16::prover::{check_key_shape, prove_with, Backend, CpuBackend, StageTimings};
use cuzk_groth16::setup::{generate_key_with, CpuFixedBase, FixedBase};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize, DemoCircuit, Synthesized};
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk",
    version,
    about = "Pipelined Groth16 prover for BLS12-381 (bellperson-compatible keys and proofs)",
    long_about = "cuzk proves Groth16 circuits over BLS12-381 with keys in bellperson's .params \
                  format and 192-byte proofs. Logs go to stderr; set RUST_LOG=debug for more."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a proving key for a demo circuit (cuzk's generator: bellperson's bytes).
    Setup {
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
    },
    /// Prove partitions of a demo circuit; writes concatenated 192-byte proofs.
    Prove {
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
    },
    /// Verify proofs against a key and public inputs; exits non-zero if any is invalid.
    Verify {
        /// Proving key (.params) or verifying key (.vk).
        #[arg(long, short)]
        key: PathBuf,
        /// Concatenated 192-byte proofs.
        #[arg(long, short)]
        proofs: PathBuf,
        /// Public inputs JSON written by `cuzk prove` (one array of hex scalars per proof).
        #[arg(long, short)]
        inputs: PathBuf,
    },
    /// Describe a key file (counts, sizes) and the available backends.
    Info {
        /// A proving key to summarize (read from its section counts; no point is decoded).
        #[arg(long, short)]
        key: Option<PathBuf>,
    },
    /// Filecoin PoRep commit phase 2: C1 output in, verified partition proofs out.
    PorepC2(porep::PorepC2Args),
    /// One command end to end: key (cached), a batch of partitions, verification, timings.
    Demo {
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
    },
}

#[derive(Args, Debug, Clone, Copy)]
struct CircuitArgs {
    /// log2 of the demo circuit's constraint count (10..=27).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(10..=27))]
    log_size: u32,
    /// Share of SHA-256 rows in the demo circuit.
    #[arg(long, default_value_t = 0.95)]
    sha_share: f64,
}

#[derive(Args, Debug, Clone)]
struct BackendArgs {
    /// Backend: `auto` (the first CUDA device when there is one and the kernels are built, else the CPU, saying why), `cuda` or `cpu`.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Device memory the GPU backend may use: `auto` (what is free, less a margin) or a size such as `16GiB`; a budget smaller than the key streams the key from host memory.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    vram_budget: VramBudget,
}

fn parse_budget(s: &str) -> Result<VramBudget, String> {
    VramBudget::parse(s)
}

/// The CUDA backend on the first device with `budget`; `Ok(None)` without a device.
fn cuda_backend(budget: VramBudget) -> Result<Option<CudaBackend>, cuzk_cuda::Error> {
    match cuzk_cuda::Gpu::first_with(budget)? {
        None => Ok(None),
        Some(gpu) => CudaBackend::new(gpu).map(Some),
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Setup {
            circuit,
            out,
            setup_seed,
            backend,
        } => {
            let fixed_base = select_fixed_base(&backend)?;
            let t = setup_with(circuit, &out, setup_seed, fixed_base.as_ref())?;
            println!(
                "wrote {} in {} (key {}, write {}; fixed-base step on {})",
                out.display(),
                secs(t.generate + t.write),
                secs(t.generate),
                secs(t.write),
                fixed_base.name()
            );
            Ok(())
        }
        Command::Prove {
            circuit,
            key,
            partitions,
            seed,
            rng_seed,
            out,
            inputs_out,
            backend,
        } => {
            let backend = select_backend(&backend)?;
            let key = load_key(&key)?;
            let mut rng = rng_from(rng_seed);
            let report =
                prove_partitions(backend.as_ref(), &key, circuit, seed, partitions, &mut rng)?;
            let inputs_out = inputs_out.unwrap_or_else(|| out.with_extension("inputs.json"));
            write_outputs(&report, &out, &inputs_out)?;
            report.print_timings();
            println!("wrote {} and {}", out.display(), inputs_out.display());
            Ok(())
        }
        Command::Verify {
            key,
            proofs,
            inputs,
        } => {
            let all_valid = verify_files(&key, &proofs, &inputs)?;
            if !all_valid {
                bail!("verification failed");
            }
            Ok(())
        }
        Command::Info { key } => info(key.as_deref()),
        Command::PorepC2(args) => porep::run(args),
        Command::Demo {
            log_size,
            sha_share,
            partitions,
            dir,
            backend,
        } => demo(
            CircuitArgs {
                log_size,
                sha_share,
            },
            partitions,
            &dir,
            &backend,
        ),
    }
}

fn select_backend(args: &BackendArgs) -> Result<Box<dyn Backend>> {
    let announce = |gpu: &CudaBackend| {
        eprintln!(
            "backend: {} ({}, VRAM arena {})",
            gpu.name(),
            gpu.device_name(),
            cuzk_gpu::human(gpu.budget_bytes())
        );
    };
    match args.backend.as_str() {
        "cpu" => {
            eprintln!("backend: cpu (asked for)");
            Ok(Box::new(CpuBackend))
        }
        "cuda" => match cuda_backend(args.vram_budget) {
            Ok(Some(gpu)) => {
                announce(&gpu);
                Ok(Box::new(gpu))
            }
            Ok(None) => bail!("--backend cuda: no CUDA device on this machine"),
            Err(e) => bail!("--backend cuda: {e}"),
        },
        "auto" => match cuda_backend(args.vram_budget) {
            Ok(Some(gpu)) => {
                announce(&gpu);
                Ok(Box::new(gpu))
            }
            Ok(None) => {
                eprintln!("backend: cpu (no CUDA device)");
                Ok(Box::new(CpuBackend))
            }
            Err(e) => {
                eprintln!("backend: cpu — a CUDA device is present but unusable: {e}");
                Ok(Box::new(CpuBackend))
            }
        },
        other => bail!("unknown backend {other:?}: expected `auto`, `cuda` or `cpu`"),
    }
}

/// What the GPU side of this machine looks like, for `cuzk info`.
fn gpu_status() -> String {
    match cuzk_cuda::devices() {
        Err(e) => e.to_string(),
        Ok(devs) => {
            let kernels = if cuzk_cuda::kernels::available() {
                format!("kernels built for {}", cuzk_cuda::kernels::archs())
            } else {
                "kernels not built: run `cargo xtask kernels`".to_string()
            };
            let names: Vec<String> = devs.iter().map(|d| d.to_string()).collect();
            format!("{}; {kernels}", names.join("; "))
        }
    }
}

/// The fixed-base step for `setup --backend`; says on stderr which one runs
/// and, for `auto`, why it is the CPU's when it falls back.
fn select_fixed_base(backend: &str) -> Result<Box<dyn FixedBase>> {
    let (chosen, note) =
        cuzk_gpu::keygen::select_fixed_base(backend).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        eprintln!("setup: {note}");
    }
    eprintln!("setup backend: {}", chosen.name());
    Ok(chosen)
}

/// Time to generate a key and to write it.
struct SetupTimes {
    generate: Duration,
    write: Duration,
}

/// A key for the demo circuit with the fixed-base step on the CPU.
fn setup(circuit: CircuitArgs, out: &Path, setup_seed: u64) -> Result<Duration> {
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

fn load_key(path: &Path) -> Result<ProvingKey> {
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

struct ProveReport {
    partitions: Vec<PartitionReport>,
}

impl ProveReport {
    fn print_timings(&self) {
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

fn prove_partitions(
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

fn write_outputs(report: &ProveReport, proofs: &Path, inputs: &Path) -> Result<()> {
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

fn hex_scalar(x: &Fr) -> String {
    let repr = x.to_repr();
    repr.as_ref()
        .iter()
        .rev()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_scalar(s: &str) -> Result<Fr> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() != 64 {
        bail!(
            "a public input must be 64 hex digits (big-endian), got {} characters",
            s.len()
        );
    }
    let mut repr = [0u8; 32];
    for (i, byte) in repr.iter_mut().rev().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .with_context(|| format!("bad hex in public input {s:?}"))?;
    }
    Option::from(Fr::from_repr(repr))
        .with_context(|| format!("public input {s} is not below the field modulus"))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    // Temporary files start owner-only; proofs and inputs are public data.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

fn verify_files(key: &Path, proofs: &Path, inputs: &Path) -> Result<bool> {
    let vk = match ProvingKey::read_from_path(key, PointCheck::OnCurve) {
        Ok(pk) => pk.vk,
        Err(pk_err) => cuzk_groth16::VerifyingKey::read_from_path(key).map_err(|vk_err| {
            anyhow::anyhow!(
                "{} is neither a proving key ({pk_err}) nor a verifying key ({vk_err})",
                key.display()
            )
        })?,
    };
    let bytes = std::fs::read(proofs).with_context(|| format!("reading {}", proofs.display()))?;
    let proofs_v =
        proofs_from_bytes(&bytes).with_context(|| format!("decoding {}", proofs.display()))?;
    let text =
        std::fs::read_to_string(inputs).with_context(|| format!("reading {}", inputs.display()))?;
    let json: Vec<Vec<String>> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a JSON array of arrays of hex strings",
            inputs.display()
        )
    })?;
    if json.len() != proofs_v.len() {
        bail!(
            "{} has {} proofs but {} has inputs for {}",
            proofs.display(),
            proofs_v.len(),
            inputs.display(),
            json.len()
        );
    }
    let pvk = PreparedVerifyingKey::new(&vk);
    let mut all = true;
    for (i, (proof, inputs)) in proofs_v.iter().zip(&json).enumerate() {
        let scalars = inputs
            .iter()
            .map(|s| parse_scalar(s))
            .collect::<Result<Vec<_>>>()?;
        let ok = verify_proof(&pvk, proof, &scalars).with_context(|| format!("proof {i}"))?;
        println!("proof {i}: {}", if ok { "valid" } else { "INVALID" });
        all &= ok;
    }
    Ok(all)
}

fn info(key: Option<&Path>) -> Result<()> {
    println!("cuzk {}", env!("CARGO_PKG_VERSION"));
    println!("cpu backend: {} rayon threads", rayon_threads());
    println!("gpu backend: {}", gpu_status());
    if let Some(path) = key {
        let summary =
            KeySummary::from_path(path).with_context(|| format!("reading {}", path.display()))?;
        println!("{}:", path.display());
        println!("{summary}");
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn demo(circuit: CircuitArgs, partitions: u64, dir: &Path, backend: &BackendArgs) -> Result<()> {
    check_share(circuit.sha_share)?;
    let backend = select_backend(backend)?;
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
        backend.name()
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
    let mut rng = ChaCha20Rng::from_entropy();
    let t = Instant::now();
    let report = prove_partitions(backend.as_ref(), &key, circuit, 1, partitions, &mut rng)?;
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

fn check_share(share: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&share) {
        bail!("--sha-share must be between 0 and 1, got {share}");
    }
    Ok(())
}

fn rng_from(seed: Option<u64>) -> ChaCha20Rng {
    seed.map_or_else(ChaCha20Rng::from_entropy, ChaCha20Rng::seed_from_u64)
}

fn spinner(msg: String) -> ProgressBar {
    let s = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"),
    );
    s.set_message(msg);
    s.enable_steady_tick(Duration::from_millis(120));
    s
}

fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

/// "h_poly 0.053s, msm_h 0.216s, ...": a backend's stages in order.
fn stage_list(timings: &StageTimings) -> String {
    let stages: Vec<String> = timings
        .stages
        .iter()
        .map(|(name, d)| format!("{name} {}", secs(*d)))
        .collect();
    stages.join(", ")
}
