//! `cuzk porep-c2`: Filecoin PoRep commit phase 2. Reads C1 outputs (plain
//! JSON or Curio's wrapper), proves each partition, verifies every proof
//! with the Filecoin crates, and only then writes what `seal_commit_phase2`
//! returns: 192 bytes per partition for an interactive type; for a
//! non-interactive one (13 or 126 partitions, always through the pipelined
//! engine), the SnarkPack aggregate of the partition proofs, made by
//! filecoin-proofs' own aggregation. Every C1 is a job of a scheduler
//! ([`crate::run`](mod@crate::run)): the serial one for one interactive C1 and one synthesis
//! worker, the pipelined engine otherwise; several C1s of one proof type are
//! submitted back to back, which is how the steady state is measured.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::{
    check_c1, parse_c1, seal_proof, verify, C1Input, ParamsDir, PorepSource, PorepSynthesis,
    ProofType, SectorIdentity, SynthesisMode, Verified,
};
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{Device, Job, PartitionSource};

use crate::backend::{select_engine_device, BackendArgs, GpuWorkerArgs};
use crate::commands::proving::{
    one_per_c1, parameter_cache, precompiled_note, print_stages, verification, ProofArgs,
};
use crate::output::{read_key, write_atomically, Stages};
use crate::run::{run_jobs, RunSettings, Schedule};

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
    /// Miner actor id (f01000 or 1000). With it the C1 is checked to belong to the
    /// sector and the proof is verified with filecoin-proofs' verify_seal; without,
    /// it is verified on the C1's own replica id.
    #[arg(long)]
    prover_id: Option<String>,
    /// Sector number (default: Curio's SectorNum; one --c1 only).
    #[arg(long)]
    sector_id: Option<u64>,
    #[command(flatten)]
    proof: ProofArgs,
    /// Partitions synthesized at once. 1 (with one interactive --c1): the
    /// serial scheduler, each partition synthesized, then proved, then the
    /// next. More (or several --c1, or a non-interactive type): cuzk's
    /// pipelined engine, which synthesizes up to this many at once within
    /// --host-budget while the device proves the ones that are ready. The
    /// same seed gives the same proof either way.
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
    match cuzk_gpu::VramBudget::parse(s).map_err(|e| e.to_string())? {
        cuzk_gpu::VramBudget::Bytes(n) => Ok(n),
        cuzk_gpu::VramBudget::Auto => Err("expected a size like 64GiB".into()),
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
    let params = parameter_cache(args.proof.params_dir.as_deref());
    one_per_c1(args.c1.len(), args.out.len(), "--out")?;
    if !args.partition_proofs.is_empty() {
        one_per_c1(
            args.c1.len(),
            args.partition_proofs.len(),
            "--partition-proofs",
        )?;
    }
    if args.c1.len() > 1 && args.sector_id.is_some() {
        bail!("--sector-id names one sector: with several --c1, each must be in Curio's wrapper");
    }
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
    // pipelined engine: several in flight within the host budget, each
    // witness released as soon as its partition is proved.
    let schedule = if pt.is_non_interactive() {
        Schedule::Pipelined {
            synthesis_workers: args.synthesis_workers as usize,
        }
    } else {
        Schedule::for_workers(args.synthesis_workers as usize, sectors.len())
    };
    let device = select_engine_device(&args.backend, gpu_workers(schedule, &args))?;
    let key = read_key(&params, pt, &mut stages)?;
    let synthesis = synthesis_mode(&args, pt, &params, &key, &mut stages);
    let proofs = prove_sectors(
        &sectors,
        key,
        &synthesis,
        device,
        schedule,
        &args,
        &mut stages,
    )?;

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

    verification(args.proof.no_verify, &mut stages, || {
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
        Ok(format!(
            "{}: {} of {} valid",
            valid(how[0]),
            how.len(),
            sectors.len()
        ))
    })?;

    for (s, proof) in sectors.iter().zip(&outputs) {
        write_atomically(&s.out, proof)?;
    }
    for (path, proof) in args.partition_proofs.iter().zip(&proofs) {
        write_atomically(path, proof)?;
    }
    print_stages(&stages);
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
        (PorepSynthesis::Precompiled(pre), _) => precompiled_note(pre),
        (_, Some(e)) => format!("parallel (the pre-compiled circuit is not usable: {e})"),
        (other, None) => other.mode().to_string(),
    };
    stages.push(("synthesis mode".into(), t.elapsed(), note));
    synthesis
}

/// The serial scheduler proves one partition at a time: one GPU worker then
/// has the device to itself.
fn gpu_workers(schedule: Schedule, args: &PorepC2Args) -> usize {
    match schedule {
        Schedule::Serial => 1,
        Schedule::Pipelined { .. } => args.gpu_workers.gpu_workers as usize,
    }
}

/// The C1s as jobs of the scheduler `schedule` names, one job each, all
/// submitted at once; the engine's epilogue checks every partition's proof
/// (unless --no-verify). Returns each sector's partition proofs.
fn prove_sectors(
    sectors: &[Sector],
    key: ProvingKey,
    synthesis: &PorepSynthesis,
    device: Device,
    schedule: Schedule,
    args: &PorepC2Args,
    stages: &mut Stages,
) -> Result<Vec<Vec<u8>>> {
    let sources = sectors
        .iter()
        .map(|s| PorepSource::with_synthesis(&s.c1, &key, synthesis))
        .collect::<Result<Vec<_>, _>>()?;
    let shape = sources[0].shape();
    let key_bytes = key.summary().file_len;
    let key = Arc::new(key);
    let jobs = sources
        .into_iter()
        .zip(sectors)
        .enumerate()
        .map(|(i, (source, sector))| {
            let job = Job::new(Arc::new(source), Arc::clone(&key))
                .with_label(sector.path.display().to_string());
            match args.proof.rng_seed {
                Some(seed) => job.seeded(seed.wrapping_add(i as u64)),
                None => job,
            }
        })
        .collect();
    let settings = RunSettings {
        schedule,
        host_budget: args.host_budget,
        verify: !args.proof.no_verify,
        what: "partitions",
    };
    let run = run_jobs(device, jobs, &shape, key_bytes, &settings)?;
    run.report(stages);
    if let Some(path) = &args.timeline {
        write_atomically(path, run.timeline.json_lines().as_bytes())?;
        stages.push((
            "timeline".into(),
            Duration::ZERO,
            path.display().to_string(),
        ));
    }
    Ok(run.proof_bytes())
}
