//! `cuzk porep-c2`: Filecoin PoRep commit phase 2. Reads a C1 output (plain
//! JSON or Curio's wrapper), proves each partition, verifies the proof with
//! the Filecoin crates, and only then writes 192 bytes per partition.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::{
    check_c1, parse_c1, prove_partitions, verify, C1Input, ParamsDir, PorepSource, SectorIdentity,
    Verified,
};
use cuzk_groth16::prover::Backend;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{Device, EngineConfig, Job, PartitionSource, Scheduler};
use cuzk_sched::Engine;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;

use crate::backend::{select_backend, BackendArgs};
use crate::output::{rng_from, secs, spinner, stage_list, write_atomically};

#[derive(Args, Debug)]
pub(crate) struct PorepC2Args {
    /// The C1 output: filecoin-proofs-api's JSON, or Curio's
    /// {"SectorNum","Phase1Out","SectorSize"} wrapper of it.
    #[arg(long)]
    c1: PathBuf,
    /// Where to write the proof (192 bytes per partition, in order); written
    /// atomically, and only once it has verified.
    #[arg(long, short)]
    out: PathBuf,
    /// Parameter cache holding v28-….params and .vk (default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Miner actor id (f01000 or 1000). With it the C1 is checked to belong to the
    /// sector and the proof is verified with filecoin-proofs' verify_seal; without,
    /// it is verified on the C1's own replica id.
    #[arg(long)]
    prover_id: Option<String>,
    /// Sector number (default: Curio's SectorNum).
    #[arg(long)]
    sector_id: Option<u64>,
    /// Do not verify the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Partitions synthesized at once. 1: one after another on this thread,
    /// each proved as soon as it is synthesized. More: the partitions go
    /// through cuzk's pipeline engine, which synthesizes up to this many at
    /// once within its host-memory budget (3/4 of RAM; a 32 GiB partition
    /// takes ~16 GiB) while the backend proves the ones that are ready. The
    /// same seed gives the same proof either way.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_workers: u64,
    #[command(flatten)]
    backend: BackendArgs,
}

/// `f01000`, `t01000` or `1000` → 1000.
pub(crate) fn parse_actor(text: &str) -> Result<u64> {
    let digits = text
        .strip_prefix("f0")
        .or_else(|| text.strip_prefix("t0"))
        .unwrap_or(text);
    digits
        .parse()
        .with_context(|| format!("--prover-id {text:?} is not an actor id (like f01000 or 1000)"))
}

pub(crate) fn run(args: PorepC2Args) -> Result<()> {
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, on first use:
    // set it before anything touches the crates, so verify_seal and cuzk
    // read the same directory.
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let params = ParamsDir::filecoin();
    let mut stages: Vec<(&str, Duration, String)> = Vec::new();

    let t = Instant::now();
    let bytes = std::fs::read(&args.c1)
        .with_context(|| format!("reading the C1 file {}", args.c1.display()))?;
    let c1 = parse_c1(&bytes).with_context(|| format!("{}", args.c1.display()))?;
    drop(bytes);
    let pt = c1.proof_type;
    let form = match c1.curio {
        Some(c) => format!("Curio wrapper, sector {}", c.sector_num),
        None => "plain C1 JSON".into(),
    };
    stages.push((
        "parse",
        t.elapsed(),
        format!("{}, {} partition(s), {form}", pt.name(), pt.partitions()),
    ));

    let sector = match (&args.prover_id, args.sector_id.or(c1.sector_num())) {
        (Some(actor), Some(sector)) => {
            Some(SectorIdentity::from_actor(parse_actor(actor)?, sector))
        }
        (Some(_), None) => {
            bail!("--prover-id needs --sector-id (the C1 is not in Curio's wrapper)")
        }
        (None, _) => None,
    };
    if let (Some(id), Some(s)) = (args.sector_id, c1.sector_num()) {
        if sector.is_none() && id != s {
            bail!("the C1 output belongs to another sector: Curio's wrapper says sector {s}, --sector-id says {id}");
        }
    }

    // Cheap checks before anything long: key files present and whole, C1 consistent.
    let t = Instant::now();
    params.check(pt)?;
    check_c1(&c1, sector.as_ref())?;
    stages.push((
        "check",
        t.elapsed(),
        match sector {
            Some(s) => format!("vanilla proofs and replica id of sector {}", s.sector_id),
            None => "vanilla proofs (no --prover-id: sector binding not checked)".into(),
        },
    ));

    let backend = select_backend(&args.backend)?;
    let t = Instant::now();
    let key_path = params.params_path(pt)?;
    let s = spinner(format!("reading {}", key_path.display()));
    let key = params.load_proving_key(pt)?;
    s.finish_and_clear();
    stages.push(("key", t.elapsed(), key_path.display().to_string()));

    let proof = if args.synthesis_workers > 1 {
        let workers = args.synthesis_workers as usize;
        through_engine(&c1, key, backend, workers, &args, &mut stages)?
    } else {
        let proof = one_after_another(&c1, &key, backend.as_ref(), &args, &mut stages)?;
        drop(key);
        proof
    };

    if args.no_verify {
        stages.push((
            "verification",
            Duration::ZERO,
            "skipped (--no-verify)".into(),
        ));
    } else {
        let t = Instant::now();
        let vk = params.load_verifying_key(pt)?;
        let how = verify(&c1, &proof, &vk, sector.as_ref())?;
        stages.push((
            "verification",
            t.elapsed(),
            match how {
                Verified::VerifySeal => "filecoin-proofs verify_seal: valid".into(),
                Verified::ReplicaId => {
                    "StackedCompound::verify on the C1's replica id: valid".into()
                }
            },
        ));
    }

    write_atomically(&args.out, &proof)?;
    for (stage, d, note) in &stages {
        println!("{stage:<13} {:>10}  {note}", secs(*d));
    }
    println!("wrote {} ({} bytes)", args.out.display(), proof.len());
    Ok(())
}

/// Each partition synthesized on this thread, then proved, in order.
fn one_after_another(
    c1: &C1Input,
    key: &ProvingKey,
    backend: &dyn Backend,
    args: &PorepC2Args,
    stages: &mut Vec<(&str, Duration, String)>,
) -> Result<Vec<u8>> {
    let pt = c1.proof_type;
    let bar = ProgressBar::new(pt.partitions() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} partitions [{elapsed}] {msg}")
            .expect("static template"),
    );
    bar.set_message("synthesizing and proving");
    let mut synthesis = Duration::ZERO;
    let mut proving = Duration::ZERO;
    let mut shape = String::new();
    let mut backend_name = "";
    let mut rng = rng_from(args.rng_seed);
    let proof = prove_partitions(c1, key, backend, &mut rng, &mut |p| {
        synthesis += p.synthesis;
        proving += p.proving;
        backend_name = p.backend;
        shape = format!(
            "{} constraints, {} inputs, {} aux per partition",
            p.shape.num_constraints, p.shape.num_inputs, p.shape.num_aux
        );
        bar.inc(1);
        let plan = backend
            .last_run()
            .map_or_else(String::new, |how| format!("; {how}"));
        bar.suspend(|| {
            eprintln!(
                "partition {}/{}: synthesis {}, proving {} ({}: {}{plan})",
                p.partition + 1,
                p.of,
                secs(p.synthesis),
                secs(p.proving),
                p.backend,
                stage_list(&p.timings)
            )
        });
    })?;
    bar.finish_and_clear();
    stages.push(("synthesis", synthesis, shape));
    stages.push(("proving", proving, backend_name.to_string()));
    Ok(proof)
}

/// The partitions through cuzk-sched's engine: `workers` synthesis workers
/// (rayon inside each), the backend as the one device's one prover, the
/// engine's epilogue checking every partition's proof.
fn through_engine(
    c1: &C1Input,
    key: ProvingKey,
    backend: Box<dyn Backend>,
    workers: usize,
    args: &PorepC2Args,
    stages: &mut Vec<(&str, Duration, String)>,
) -> Result<Vec<u8>> {
    let pt = c1.proof_type;
    let source = PorepSource::new(c1, &key)?;
    let shape = source.shape();
    let key = Arc::new(key);
    let backend: Arc<dyn Backend> = Arc::from(backend);
    let device = Device::new(backend.name(), Arc::clone(&backend), 1);
    let engine = Engine::start(EngineConfig {
        synthesis_workers: workers,
        devices: vec![device],
        max_in_flight: workers + 1,
        verify: !args.no_verify,
        largest_partition: Some(shape.clone()),
        ..EngineConfig::default()
    })
    .context("starting the engine")?;
    let mut job = Job::new(Arc::new(source), key);
    if let Some(seed) = args.rng_seed {
        job = job.seeded(seed);
    }
    let s = spinner(format!(
        "{} partition(s) through the engine, {workers} synthesis workers",
        pt.partitions()
    ));
    let t = Instant::now();
    let out = engine.submit(job).context("submitting the job")?.wait();
    let wall = t.elapsed();
    s.finish_and_clear();
    engine.shutdown();
    let out = out.context("proving through the engine")?;
    let mut synthesis = Duration::ZERO;
    let mut gpu = Duration::ZERO;
    for (k, p) in out.partitions.iter().enumerate() {
        let busy = p.timings.total();
        synthesis += p.synthesis;
        gpu += busy;
        eprintln!(
            "partition {}/{}: synthesis {}, proving stages {} ({}: {}; {:?})",
            k + 1,
            out.partitions.len(),
            secs(p.synthesis),
            secs(busy),
            p.backend,
            stage_list(&p.timings),
            p.verification
        );
    }
    stages.push((
        "synthesis",
        synthesis,
        format!(
            "summed over partitions; {} constraints (at most), {} inputs, {} aux per partition",
            shape.num_constraints, shape.num_inputs, shape.num_aux
        ),
    ));
    stages.push(("proving", gpu, format!("summed stages, {}", backend.name())));
    stages.push((
        "pipeline",
        wall,
        format!("synthesis and proving overlapped, {workers} synthesis workers"),
    ));
    Ok(out.proofs.iter().flat_map(|p| p.to_bytes()).collect())
}
