//! `cuzk snap-prove`: a SnapDeals (empty-sector update) proof from the
//! per-partition vanilla proofs and the three commitments, as
//! `generate_empty_sector_update_proof_with_vanilla` proves it, verified
//! with filecoin-proofs-api's `verify_empty_sector_update_proof` before it
//! is written (porep-c2's conventions: cache keys, atomic output, timing lines).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_filecoin::{
    parse_sector_size, verify_update, ProofType, UpdateRequest, UpdateSource, UpdateType,
    UPDATE_PROOF_BATCH,
};
use cuzk_pipeline::{Job, PartitionSource};

use crate::backend::{select_engine_device, BackendArgs, GpuWorkerArgs};
use crate::commands::post::{parse_hex, read_vanilla, CircuitSynthesisArgs};
use crate::commands::proving::{
    check_key, parameter_cache, verification, write_and_report, ProofArgs,
};
use crate::output::{read_key, Stages};
use crate::run::{run_jobs, RunSettings, Schedule};

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
    #[command(flatten)]
    proof: ProofArgs,
    /// Partitions synthesized at once. 1: the serial scheduler, each
    /// partition synthesized, then proved, then the next. More: cuzk's
    /// pipelined engine, which synthesizes up to this many at once within
    /// --host-budget while the device proves the ones that are ready (a 32
    /// GiB update partition is one circuit on one thread: ~81 M
    /// constraints). Either way r and s are drawn as the crates' prover draws
    /// them (batches of 10), so a seed gives the crates' proof.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_workers: u64,
    /// Host memory the engine may hold in synthesized partitions. Default:
    /// 3/4 of the memory (cgroup-aware) less the proving key held in memory.
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
    let params = parameter_cache(args.proof.params_dir.as_deref());
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
    let vanilla = read_vanilla(&args.vanilla)?;
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

    check_key(&params, update_type, &mut stages)?;

    let schedule = Schedule::for_workers(args.synthesis_workers as usize, 1);
    let gpu_workers = match schedule {
        Schedule::Serial => 1,
        Schedule::Pipelined { .. } => args.gpu_workers.gpu_workers as usize,
    };
    let device = select_engine_device(&args.backend, gpu_workers)?;
    let key = read_key(&params, update_type, &mut stages)?;
    let synthesis = args.synthesis.open(update_type, &params, &key, &mut stages);
    let source = UpdateSource::with_synthesis(&request, &key, &synthesis)?;
    let shape = source.shape();
    let key_bytes = key.summary().file_len;
    let mut job = Job::new(Arc::new(source), Arc::new(key)).with_label("snap-prove");
    if let Some(seed) = args.proof.rng_seed {
        job = job.seeded_in_batches(seed, UPDATE_PROOF_BATCH);
    }
    let settings = RunSettings {
        schedule,
        host_budget: args.host_budget,
        verify: !args.proof.no_verify,
        what: "partitions",
    };
    let run = run_jobs(device, vec![job], &shape, key_bytes, &settings)?;
    run.report(&mut stages);
    let proof = run.proof_bytes().remove(0);

    verification(args.proof.no_verify, &mut stages, || {
        let vk = params.load_verifying_key(update_type)?;
        verify_update(&request, &proof, &vk)?;
        Ok("valid: filecoin-proofs-api verify_empty_sector_update_proof".into())
    })?;

    write_and_report(&args.out, &proof, &stages)
}
