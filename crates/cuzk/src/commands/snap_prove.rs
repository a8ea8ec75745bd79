//! `cuzk snap-prove`: a SnapDeals (empty-sector update) proof from the
//! per-partition vanilla proofs and the three commitments, as
//! `generate_empty_sector_update_proof_with_vanilla` proves it, verified
//! with filecoin-proofs-api's `verify_empty_sector_update_proof` before it
//! is written (porep-c2's conventions: cache keys, atomic output, timing lines).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use cuzk_filecoin::{
    parse_sector_size, prove_update, verify_update, CircuitSynthesis, ParamsDir, ProofType,
    UpdateRequest, UpdateSource, UpdateType,
};
use cuzk_groth16::prover::Backend;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::memory::human;
use cuzk_pipeline::{Device, EngineConfig, Job, PartitionSource, Scheduler};
use cuzk_sched::Engine;

use crate::backend::{select_backend, select_engine_device, BackendArgs, GpuWorkerArgs};
use crate::commands::post::{parse_hex, vanilla_files, CircuitSynthesisArgs};
use crate::output::{
    peak_rss, prover_name, read_key, report_partitions, rng_from, secs, spinner, stage_list,
    write_atomically, Stages,
};

#[derive(Args, Debug)]
pub(crate) struct SnapProveArgs {
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB): the update proof type is
    /// that size's (its registry names are those of the V1 PoRep types).
    #[arg(long)]
    sector_size: String,
    /// One partition's vanilla proof: a bincode PartitionProof, as
    /// filecoin-proofs-api's generate_partition_proofs returns it and Curio
    /// sends it. Repeat per partition, in order (16 at 32 GiB); a directory
    /// stands for its files vanilla-0.bin, vanilla-1.bin, … in that order
    /// (what `cuzk fixtures synth-snap` writes).
    #[arg(long, required = true)]
    vanilla: Vec<PathBuf>,
    /// comm_r of the sector key (before the update), 32 bytes in hex.
    #[arg(long)]
    comm_r_old: String,
    /// comm_r of the updated replica, 32 bytes in hex.
    #[arg(long)]
    comm_r_new: String,
    /// comm_d of the new data, 32 bytes in hex.
    #[arg(long)]
    comm_d_new: String,
    /// Where to write the proof (192 bytes per partition); written atomically,
    /// and only once it has verified.
    #[arg(long, short)]
    out: PathBuf,
    /// Parameter cache holding v28-….params and .vk (default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Do not verify the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Partitions synthesized at once. 1: one after another on this thread,
    /// each proved as soon as it is synthesized, r and s drawn as the crates'
    /// prover draws them. More: the partitions go through cuzk's pipeline
    /// engine, which synthesizes up to this many at once within --host-budget
    /// while the backend proves the ones that are ready (a 32 GiB update
    /// partition is one circuit on one thread: ~81 M constraints).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_workers: u64,
    /// With --synthesis-workers: host memory the engine may hold in
    /// synthesized partitions. Default: 3/4 of RAM less the proving key held
    /// in memory.
    #[arg(long, value_parser = crate::commands::porep_c2::parse_size)]
    host_budget: Option<u64>,
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    gpu_workers: GpuWorkerArgs,
    #[command(flatten)]
    synthesis: CircuitSynthesisArgs,
}

pub(crate) fn run(args: SnapProveArgs) -> Result<()> {
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, on first use.
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let params = ParamsDir::filecoin();
    let mut stages: Stages = Vec::new();

    let t = Instant::now();
    let size = parse_sector_size(&args.sector_size).with_context(|| {
        format!(
            "--sector-size {:?} is not a size like 2KiB",
            args.sector_size
        )
    })?;
    let seal = ProofType::ALL
        .into_iter()
        .filter_map(|p| ProofType::new(p).ok())
        .find(|p| p.sector_size() == size)
        .with_context(|| format!("no registered proof type has {size}-byte sectors"))?;
    let update_type = UpdateType::for_seal(seal);
    let hex = |text: &str, name: &str| parse_hex(text).with_context(|| format!("--{name}"));
    let mut vanilla = Vec::with_capacity(args.vanilla.len());
    for path in vanilla_files(&args.vanilla)? {
        vanilla.push(
            std::fs::read(&path)
                .with_context(|| format!("reading the vanilla proof {}", path.display()))?,
        );
    }
    let bytes: usize = vanilla.iter().map(Vec::len).sum();
    let request = UpdateRequest::new(
        update_type,
        vanilla,
        &hex(&args.comm_r_old, "comm-r-old")?,
        &hex(&args.comm_r_new, "comm-r-new")?,
        &hex(&args.comm_d_new, "comm-d-new")?,
    )?;
    stages.push((
        "parse".into(),
        t.elapsed(),
        format!(
            "update {}, {} partition(s), {bytes} bytes of vanilla proofs",
            update_type.name(),
            update_type.partitions()
        ),
    ));

    let t = Instant::now();
    params.check(update_type)?;
    stages.push((
        "check".into(),
        t.elapsed(),
        "key files present and whole".into(),
    ));

    let proof = if args.synthesis_workers > 1 {
        let device = select_engine_device(&args.backend, &args.gpu_workers)?;
        let key = read_key(&params, update_type, &mut stages)?;
        let synthesis = args.synthesis.open(update_type, &params, &key, &mut stages);
        through_engine(&request, key, &synthesis, device, &args, &mut stages)?
    } else {
        let backend = select_backend(&args.backend)?;
        let key = read_key(&params, update_type, &mut stages)?;
        let synthesis = args.synthesis.open(update_type, &params, &key, &mut stages);
        one_after_another(&request, key, &synthesis, backend, &args, &mut stages)?
    };

    if args.no_verify {
        stages.push((
            "verification".into(),
            Duration::ZERO,
            "skipped (--no-verify)".into(),
        ));
    } else {
        let t = Instant::now();
        let vk = params.load_verifying_key(update_type)?;
        verify_update(&request, &proof, &vk)?;
        stages.push((
            "verification".into(),
            t.elapsed(),
            "valid: filecoin-proofs-api verify_empty_sector_update_proof".into(),
        ));
    }

    write_atomically(&args.out, &proof)?;
    for (stage, d, note) in &stages {
        println!("{stage:<13} {:>10}  {note}", secs(*d));
    }
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
    println!("wrote {} ({} bytes)", args.out.display(), proof.len());
    Ok(())
}

/// The partitions on this thread, in order, as the crates' prover goes.
fn one_after_another(
    request: &UpdateRequest,
    key: ProvingKey,
    how: &CircuitSynthesis,
    backend: Box<dyn Backend>,
    args: &SnapProveArgs,
    stages: &mut Stages,
) -> Result<Vec<u8>> {
    let mut synthesis = Duration::ZERO;
    let mut proving = Duration::ZERO;
    let mut shape = String::new();
    let mut backend_name = "";
    let mut rng = rng_from(args.rng_seed);
    let s = spinner("checking the vanilla proofs, synthesizing and proving".into());
    let proof = prove_update(request, &key, how, backend.as_ref(), &mut rng, &mut |p| {
        synthesis += p.synthesis;
        proving += p.proving;
        backend_name = p.backend;
        shape = format!(
            "{} constraints, {} inputs, {} aux per partition",
            p.shape.num_constraints, p.shape.num_inputs, p.shape.num_aux
        );
        s.suspend(|| {
            eprintln!(
                "partition {}/{}: synthesis {}, proving {} ({}: {})",
                p.partition + 1,
                p.of,
                secs(p.synthesis),
                secs(p.proving),
                p.backend,
                stage_list(&p.timings)
            )
        });
    })?;
    s.finish_and_clear();
    stages.push(("synthesis".into(), synthesis, shape));
    stages.push(("proving".into(), proving, backend_name.to_string()));
    Ok(proof)
}

/// The partitions through cuzk-sched's engine as one job:
/// `--synthesis-workers` partitions synthesized at once, proved by the
/// device's `--gpu-workers` (one prover on the CPU), the engine's epilogue checking every
/// partition's proof against the verifier's public inputs.
fn through_engine(
    request: &UpdateRequest,
    key: ProvingKey,
    synthesis: &CircuitSynthesis,
    device: Device,
    args: &SnapProveArgs,
    stages: &mut Stages,
) -> Result<Vec<u8>> {
    let workers = args.synthesis_workers as usize;
    let source = UpdateSource::with_synthesis(request, &key, synthesis)?;
    let shape = source.shape();
    let (budget, why) = match args.host_budget {
        Some(b) => (b, "--host-budget".to_string()),
        None => {
            let three_quarters = EngineConfig::default().memory_budget;
            let key_bytes = key.summary().file_len;
            (
                three_quarters.saturating_sub(key_bytes),
                format!(
                    "3/4 of RAM ({}) less the proving key ({})",
                    human(three_quarters),
                    human(key_bytes)
                ),
            )
        }
    };
    let key = Arc::new(key);
    let prover = prover_name(&device);
    let engine = Engine::start(EngineConfig {
        synthesis_workers: workers,
        devices: vec![device],
        max_in_flight: workers + 1,
        memory_budget: budget,
        verify: !args.no_verify,
        largest_partition: Some(shape.clone()),
        ..EngineConfig::default()
    })
    .with_context(|| format!("starting the engine (host budget: {why})"))?;
    eprintln!(
        "engine: {workers} synthesis workers, host budget {} ({why})",
        human(budget)
    );
    let s = spinner(format!(
        "{} partition(s) through the engine, {workers} synthesis workers",
        request.update_type().partitions()
    ));
    let t = Instant::now();
    let mut job = Job::new(Arc::new(source), Arc::clone(&key)).with_label("snap-prove");
    if let Some(seed) = args.rng_seed {
        job = job.seeded(seed);
    }
    let out = engine
        .submit(job)
        .context("submitting the job")
        .map(|h| h.wait());
    let wall = t.elapsed();
    s.finish_and_clear();
    engine.shutdown();
    let out = out?.context("proving through the engine")?;
    let (synthesis, busy) = report_partitions("", &out.partitions);
    stages.push((
        "synthesis".into(),
        synthesis,
        format!(
            "summed over partitions; {} constraints, {} inputs, {} aux per partition",
            shape.num_constraints, shape.num_inputs, shape.num_aux
        ),
    ));
    stages.push(("proving".into(), busy, format!("summed stages, {prover}")));
    stages.push((
        "pipeline".into(),
        wall,
        format!("synthesis and proving overlapped, {workers} synthesis workers"),
    ));
    Ok(out.proofs.iter().flat_map(|p| p.to_bytes()).collect())
}
