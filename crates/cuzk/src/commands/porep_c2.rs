//! `cuzk porep-c2`: Filecoin PoRep commit phase 2. Reads C1 outputs (plain
//! JSON or Curio's wrapper), proves each partition, verifies every proof
//! with the Filecoin crates, and only then writes what `seal_commit_phase2`
//! returns: 192 bytes per partition for an interactive type; for a
//! non-interactive one (13 or 126 partitions, always through the engine),
//! the SnarkPack aggregate of the partition proofs, made by filecoin-proofs'
//! own aggregation. Several C1s of one proof type go through the pipeline
//! engine as jobs submitted back to back, which is how the steady state is
//! measured.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::{
    check_c1, parse_c1, prove_partitions_with, seal_proof, verify, C1Input, ParamsDir, PorepSource,
    PorepSynthesis, ProofType, SectorIdentity, SynthesisMode, Verified,
};
use cuzk_groth16::prover::Backend;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{Device, EngineConfig, Job, PartitionSource, Scheduler, Stage, Timeline};
use cuzk_sched::Engine;
use indicatif::{ProgressBar, ProgressStyle};

use crate::backend::{select_backend, select_engine_device, BackendArgs, GpuWorkerArgs};
use crate::output::{
    peak_rss, prover_name, read_key, report_partitions, rng_from, secs, spinner, stage_list,
    write_atomically, Stages,
};

#[derive(Args, Debug)]
pub(crate) struct PorepC2Args {
    /// The C1 output: filecoin-proofs-api's JSON, or Curio's
    /// {"SectorNum","Phase1Out","SectorSize"} wrapper of it. Repeat for
    /// several sectors of one proof type: they are proved back to back
    /// through the pipeline engine.
    #[arg(long, required = true)]
    c1: Vec<PathBuf>,
    /// Where to write each proof, one per --c1 in the same order; written
    /// atomically, and only once it has verified. What seal_commit_phase2
    /// returns: 192 bytes per partition, in order, for an interactive proof
    /// type; the SnarkPack aggregate of those for a non-interactive one.
    #[arg(long, short, required = true)]
    out: Vec<PathBuf>,
    /// Also write each sector's partition proofs (192 bytes per partition,
    /// what seal_commit_phase2_circuit_proofs returns), one per --c1: for a
    /// non-interactive type, the input of `cuzk aggregate` over several sectors.
    #[arg(long)]
    partition_proofs: Vec<PathBuf>,
    /// Parameter cache holding v28-….params and .vk, and for non-interactive types the
    /// SnarkPack SRS v28-fil-inner-product-v1.srs (default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Miner actor id (f01000 or 1000). With it the C1 is checked to belong to the
    /// sector and the proof is verified with filecoin-proofs' verify_seal; without,
    /// it is verified on the C1's own replica id.
    #[arg(long)]
    prover_id: Option<String>,
    /// Sector number (default: Curio's SectorNum; one --c1 only).
    #[arg(long)]
    sector_id: Option<u64>,
    /// Do not verify the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Partitions synthesized at once. 1 (with one --c1): one after another on
    /// this thread, each proved as soon as it is synthesized. More: the
    /// partitions go through cuzk's pipeline engine, which synthesizes up to
    /// this many at once within --host-budget while the backend proves the
    /// ones that are ready. The same seed gives the same proof either way.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_workers: u64,
    /// Host memory the engine may hold in synthesized partitions (a 32 GiB
    /// partition takes ~16 GiB until it is proved). Default: 3/4 of RAM less
    /// the proving key held in memory. A budget that cannot hold one partition
    /// is refused before any work, with both numbers.
    #[arg(long, value_parser = parse_size)]
    host_budget: Option<u64>,
    /// How each partition is synthesized: `parallel` (the default: the
    /// partition's challenges on every core, joined in order), `sequential`
    /// (the whole circuit on one thread, as bellperson's prover: the
    /// reference), or `precompiled` (the circuit recorded by `cuzk
    /// precompile`: only the witness, generated natively (the SHA-256 of the
    /// labelling and of comm_d in plain code), challenges in parallel, then
    /// a, b, c by sparse mat-vec, on the GPU when it proves; when the
    /// recording is missing, truncated, corrupt or
    /// for another circuit, the log says why and the run falls back to
    /// parallel). The proof bytes are the same in every mode.
    #[arg(long, default_value_t = SynthesisMode::Parallel)]
    synthesis: SynthesisMode,
    /// The pre-compiled circuit for --synthesis precompiled (default: beside
    /// the key in the parameter cache, v28-….r1cs).
    #[arg(long)]
    r1cs_cache: Option<PathBuf>,
    /// Write the engine's TIMELINE (one JSON object per line: t_us, job,
    /// partition, event, worker) to this file.
    #[arg(long)]
    timeline: Option<PathBuf>,
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    gpu_workers: GpuWorkerArgs,
}

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    match cuzk_cuda::VramBudget::parse(s).map_err(|e| e.to_string())? {
        cuzk_cuda::VramBudget::Bytes(n) => Ok(n),
        cuzk_cuda::VramBudget::Auto => Err("expected a size like 64GiB".into()),
    }
}

/// `f01000`, `t01000` or `1000` → 1000.
pub(crate) fn parse_actor(text: &str) -> Result<u64> {
    cuzk_filecoin::parse_actor_id(text)
        .with_context(|| format!("--prover-id {text:?} is not an actor id (like f01000 or 1000)"))
}

/// One C1 to prove and where its proof goes.
struct Sector {
    c1: C1Input,
    path: PathBuf,
    out: PathBuf,
    identity: Option<SectorIdentity>,
}

pub(crate) fn run(args: PorepC2Args) -> Result<()> {
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, on first use:
    // set it before anything touches the crates, so verify_seal and cuzk
    // read the same directory.
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    if args.c1.len() != args.out.len() {
        bail!(
            "{} --c1 files but {} --out files: give one --out per --c1, in the same order",
            args.c1.len(),
            args.out.len()
        );
    }
    if !args.partition_proofs.is_empty() && args.partition_proofs.len() != args.c1.len() {
        bail!(
            "{} --c1 files but {} --partition-proofs files: give one per --c1, in the same order",
            args.c1.len(),
            args.partition_proofs.len()
        );
    }
    if args.c1.len() > 1 && args.sector_id.is_some() {
        bail!("--sector-id names one sector: with several --c1, each must be in Curio's wrapper");
    }
    let params = ParamsDir::filecoin();
    let mut stages: Stages = Vec::new();

    let t = Instant::now();
    let mut sectors = Vec::new();
    for (path, out) in args.c1.iter().zip(&args.out) {
        sectors.push(read_sector(path, out, &args)?);
    }
    let pt = sectors[0].c1.proof_type;
    if let Some(other) = sectors.iter().find(|s| s.c1.proof_type != pt) {
        bail!(
            "{} is {} but {} is {}: one run proves one proof type (one key)",
            other.path.display(),
            other.c1.proof_type.name(),
            sectors[0].path.display(),
            pt.name()
        );
    }
    let form = match (&sectors[..], sectors[0].c1.curio) {
        ([_], Some(c)) => format!("Curio wrapper, sector {}", c.sector_num),
        ([_], None) => "plain C1 JSON".into(),
        (many, _) => format!("{} C1 files", many.len()),
    };
    stages.push((
        "parse".into(),
        t.elapsed(),
        format!("{}, {} partition(s), {form}", pt.name(), pt.partitions()),
    ));

    // Cheap checks before anything long: key files (and the SRS) present
    // and whole, C1s consistent.
    let t = Instant::now();
    params.check(pt)?;
    let srs = if pt.is_non_interactive() {
        Some(params.check_srs(pt.partitions())?)
    } else {
        None
    };
    for s in &sectors {
        check_c1(&s.c1, s.identity.as_ref()).with_context(|| format!("{}", s.path.display()))?;
    }
    stages.push((
        "check".into(),
        t.elapsed(),
        match (&sectors[..], sectors[0].identity) {
            ([_], Some(s)) => format!("vanilla proofs and replica id of sector {}", s.sector_id),
            ([_], None) => "vanilla proofs (no --prover-id: sector binding not checked)".into(),
            (many, _) => format!("vanilla proofs of {} sectors", many.len()),
        },
    ));

    // A non-interactive sector's many partitions always go through the
    // engine: several in flight within the host budget, each witness
    // released as soon as its partition is proved.
    let proofs = if args.synthesis_workers > 1 || sectors.len() > 1 || pt.is_non_interactive() {
        let device = select_engine_device(&args.backend, &args.gpu_workers)?;
        let key = read_key(&params, pt, &mut stages)?;
        let synthesis = synthesis_mode(&args, pt, &params, &key, &mut stages);
        through_engine(&sectors, key, &synthesis, device, &args, &mut stages)?
    } else {
        let backend = select_backend(&args.backend)?;
        let key = read_key(&params, pt, &mut stages)?;
        let synthesis = synthesis_mode(&args, pt, &params, &key, &mut stages);
        let proof = one_after_another(
            &sectors[0].c1,
            &key,
            &synthesis,
            backend.as_ref(),
            &args,
            &mut stages,
        )?;
        drop(key);
        vec![proof]
    };

    // What seal_commit_phase2 returns: for a non-interactive type, the
    // SnarkPack aggregate of each sector's partition proofs.
    let outputs = match &srs {
        None => proofs.clone(),
        Some(srs) => {
            let t = Instant::now();
            let outputs = sectors
                .iter()
                .zip(&proofs)
                .map(|(s, p)| {
                    seal_proof(&s.c1, p.clone()).with_context(|| format!("{}", s.path.display()))
                })
                .collect::<Result<Vec<_>>>()?;
            stages.push((
                "aggregation".into(),
                t.elapsed(),
                format!(
                    "SnarkPack v2 (filecoin-proofs' aggregate_seal_commit_proofs) of {} partition \
                     proofs per sector, padded to {}; {} bytes; SRS {}",
                    pt.partitions(),
                    cuzk_filecoin::aggregate::padded_len(pt.partitions()),
                    outputs[0].len(),
                    srs.path.display()
                ),
            ));
            outputs
        }
    };

    if args.no_verify {
        stages.push((
            "verification".into(),
            Duration::ZERO,
            "skipped (--no-verify)".into(),
        ));
    } else {
        let t = Instant::now();
        let vk = params.load_verifying_key(pt)?;
        let mut how = Vec::new();
        for (s, proof) in sectors.iter().zip(&outputs) {
            how.push(
                verify(&s.c1, proof, &vk, s.identity.as_ref())
                    .with_context(|| format!("{}", s.path.display()))?,
            );
        }
        let valid = |v: Verified| match v {
            Verified::VerifySeal => "filecoin-proofs verify_seal",
            Verified::ReplicaId if pt.is_non_interactive() => {
                "filecoin-proofs verify_aggregate_seal_commit_proofs on the C1's replica id"
            }
            Verified::ReplicaId => "StackedCompound::verify on the C1's replica id",
        };
        stages.push((
            "verification".into(),
            t.elapsed(),
            format!(
                "{}: {} of {} valid",
                valid(how[0]),
                how.len(),
                sectors.len()
            ),
        ));
    }

    for (s, proof) in sectors.iter().zip(&outputs) {
        write_atomically(&s.out, proof)?;
    }
    for (path, proof) in args.partition_proofs.iter().zip(&proofs) {
        write_atomically(path, proof)?;
    }
    for (stage, d, note) in &stages {
        println!("{stage:<13} {:>10}  {note}", secs(*d));
    }
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
    for (s, proof) in sectors.iter().zip(&outputs) {
        println!("wrote {} ({} bytes)", s.out.display(), proof.len());
    }
    for (path, proof) in args.partition_proofs.iter().zip(&proofs) {
        println!(
            "wrote {} ({} bytes: partition proofs)",
            path.display(),
            proof.len()
        );
    }
    Ok(())
}

fn read_sector(path: &Path, out: &Path, args: &PorepC2Args) -> Result<Sector> {
    let bytes =
        std::fs::read(path).with_context(|| format!("reading the C1 file {}", path.display()))?;
    let c1 = parse_c1(&bytes).with_context(|| format!("{}", path.display()))?;
    drop(bytes);
    let identity = match (&args.prover_id, args.sector_id.or(c1.sector_num())) {
        (Some(actor), Some(sector)) => {
            Some(SectorIdentity::from_actor(parse_actor(actor)?, sector))
        }
        (Some(_), None) => bail!(
            "{}: --prover-id needs --sector-id (the C1 is not in Curio's wrapper)",
            path.display()
        ),
        (None, _) => None,
    };
    if let (Some(id), Some(s)) = (args.sector_id, c1.sector_num()) {
        if identity.is_none() && id != s {
            bail!("the C1 output belongs to another sector: Curio's wrapper says sector {s}, --sector-id says {id}");
        }
    }
    Ok(Sector {
        c1,
        path: path.to_path_buf(),
        out: out.to_path_buf(),
        identity,
    })
}

/// `--synthesis`, with the recording opened (and its load time a stage)
/// for `precompiled`; a recording that cannot be used falls back to
/// parallel, as the log and the stage note say.
fn synthesis_mode(
    args: &PorepC2Args,
    pt: ProofType,
    params: &ParamsDir,
    key: &ProvingKey,
    stages: &mut Stages,
) -> PorepSynthesis {
    let t = Instant::now();
    let (synthesis, fallback) = PorepSynthesis::for_mode(
        args.synthesis,
        pt,
        params,
        args.r1cs_cache.as_deref(),
        Some(key),
    );
    let note = match (&synthesis, fallback) {
        (PorepSynthesis::Precompiled(pre), _) => format!(
            "precompiled: {} ({}, {} constraints)",
            pre.path().display(),
            cuzk_pipeline::memory::human(pre.file_bytes() as u64),
            pre.shape().num_constraints
        ),
        (_, Some(e)) => format!("parallel (the pre-compiled circuit is not usable: {e})"),
        (other, None) => other.mode().to_string(),
    };
    stages.push(("synthesis mode".into(), t.elapsed(), note));
    synthesis
}

/// Each partition synthesized (rayon inside), then proved, in order.
fn one_after_another(
    c1: &C1Input,
    key: &ProvingKey,
    how: &PorepSynthesis,
    backend: &dyn Backend,
    args: &PorepC2Args,
    stages: &mut Stages,
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
    let proof = prove_partitions_with(c1, key, how, backend, &mut rng, &mut |p| {
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
    stages.push(("synthesis".into(), synthesis, shape));
    stages.push(("proving".into(), proving, backend_name.to_string()));
    Ok(proof)
}

/// The host memory the engine may fill with partitions: `--host-budget`,
/// else 3/4 of RAM less the proving key, which stays in memory meanwhile.
fn host_budget(args: &PorepC2Args, key: &ProvingKey) -> (u64, String) {
    if let Some(b) = args.host_budget {
        return (b, "--host-budget".into());
    }
    let three_quarters = EngineConfig::default().memory_budget;
    let key_bytes = key.summary().file_len;
    (
        three_quarters.saturating_sub(key_bytes),
        format!(
            "3/4 of RAM ({}) less the proving key ({})",
            cuzk_pipeline::memory::human(three_quarters),
            cuzk_pipeline::memory::human(key_bytes)
        ),
    )
}

/// The C1s through cuzk-sched's engine, one job each, all submitted at
/// once (so the next sector's partitions fill the pipeline while the
/// last ones of the previous are proved): `--synthesis-workers` synthesis
/// workers (rayon inside each), the device's `--gpu-workers` proving (one
/// prover on the CPU), the engine's epilogue checking every partition's proof.
fn through_engine(
    sectors: &[Sector],
    key: ProvingKey,
    synthesis: &PorepSynthesis,
    device: Device,
    args: &PorepC2Args,
    stages: &mut Stages,
) -> Result<Vec<Vec<u8>>> {
    let workers = args.synthesis_workers as usize;
    let sources = sectors
        .iter()
        .map(|s| PorepSource::with_synthesis(&s.c1, &key, synthesis))
        .collect::<Result<Vec<_>, _>>()?;
    let shape = sources[0].shape();
    let (budget, why) = host_budget(args, &key);
    let key = Arc::new(key);
    let prover = prover_name(&device);
    let provers = device.backends.len().max(1);
    let timeline = Arc::new(Timeline::recording());
    let engine = Engine::start(EngineConfig {
        synthesis_workers: workers,
        devices: vec![device],
        max_in_flight: workers + 1,
        memory_budget: budget,
        verify: !args.no_verify,
        largest_partition: Some(shape.clone()),
        timeline: Arc::clone(&timeline),
        ..EngineConfig::default()
    })
    .with_context(|| format!("starting the engine (host budget: {why})"))?;
    eprintln!(
        "engine: {workers} synthesis workers, host budget {} ({why})",
        cuzk_pipeline::memory::human(budget)
    );
    let s = spinner(format!(
        "{} sector(s) of {} partition(s) through the engine, {workers} synthesis workers",
        sectors.len(),
        sectors[0].c1.proof_type.partitions()
    ));
    let t = Instant::now();
    let mut handles = Vec::new();
    for (i, source) in sources.into_iter().enumerate() {
        let mut job = Job::new(Arc::new(source), Arc::clone(&key))
            .with_label(sectors[i].path.display().to_string());
        if let Some(seed) = args.rng_seed {
            job = job.seeded(seed.wrapping_add(i as u64));
        }
        handles.push(engine.submit(job).context("submitting the job")?);
    }
    let outs = handles
        .into_iter()
        .map(|h| h.wait())
        .collect::<Result<Vec<_>, _>>();
    let wall = t.elapsed();
    s.finish_and_clear();
    engine.shutdown();
    let outs = outs.context("proving through the engine")?;

    let pt: ProofType = sectors[0].c1.proof_type;
    let (mut synthesis, mut gpu) = (Duration::ZERO, Duration::ZERO);
    for (j, out) in outs.iter().enumerate() {
        let (s, g) = report_partitions(&format!("sector {j} "), &out.partitions);
        synthesis += s;
        gpu += g;
    }
    stages.push((
        "synthesis".into(),
        synthesis,
        format!(
            "summed over partitions; {} constraints (at most), {} inputs, {} aux per partition",
            shape.num_constraints, shape.num_inputs, shape.num_aux
        ),
    ));
    stages.push(("proving".into(), gpu, format!("summed stages, {prover}")));
    for (j, out) in outs.iter().enumerate() {
        stages.push((
            format!("proof {j}"),
            out.latency,
            format!(
                "from submission to verified proof, {} partitions",
                pt.partitions()
            ),
        ));
    }
    if outs.len() > 1 {
        let last = outs.iter().map(|o| o.latency).max().unwrap_or_default();
        let first = outs.iter().map(|o| o.latency).min().unwrap_or_default();
        stages.push((
            "steady state".into(),
            (last - first) / (outs.len() as u32 - 1),
            "per proof: (last completion - first completion) / (proofs - 1)".into(),
        ));
    }
    // Partitions through the provers in steady state: every worker's first
    // one carries the key's upload (a long-running daemon pays it once).
    if let Some(rate) = timeline.stage_rate(Stage::Prove, provers) {
        stages.push((
            "per partition".into(),
            rate,
            format!(
                "steady state, from the TIMELINE: (last proved - proved #{}) / partitions after it \
                 (each prover's first partition is warm-up)",
                provers
            ),
        ));
    }
    // With several GPU workers the prove intervals overlap: busy is the
    // time at least one partition was being proved.
    let prove_busy = timeline.stage_covered(Stage::Prove);
    stages.push((
        "pipeline".into(),
        wall,
        format!(
            "synthesis and proving overlapped, {workers} synthesis workers; prover busy {:.0}% \
             (of the wall time, from the TIMELINE)",
            100.0 * prove_busy.as_secs_f64() / wall.as_secs_f64().max(1e-9)
        ),
    ));
    if let Some(path) = &args.timeline {
        write_atomically(path, timeline.json_lines().as_bytes())?;
        stages.push((
            "timeline".into(),
            Duration::ZERO,
            path.display().to_string(),
        ));
    }
    Ok(outs
        .iter()
        .map(|o| o.proofs.iter().flat_map(|p| p.to_bytes()).collect())
        .collect())
}
