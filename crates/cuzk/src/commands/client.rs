//! `cuzk client`: talk to a running `cuzk daemon` over gRPC. `prove` sends
//! a PoRep C1 as Curio does (`Prove`, request id `porep-<miner>-<sector>`,
//! Curio's wrapper as the vanilla proof) and prints the daemon's own timings
//! beside the call's wall time here, whose difference is what the transport
//! and the request's handling outside the engine cost; `winning-post` and
//! `window-post` do the same for a PoSt (Curio's request ids and packing,
//! the kind's default priority); `preload` makes a key HOT, `evict` drops it; `status` prints
//! `GetStatus`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use clap::{Args, Subcommand, ValueEnum};
use cuzk_daemon::client::Client;
use cuzk_daemon::proto::{
    await_proof_response::Status, srs_status::Tier, Priority, ProofKind, SubmitProofRequest,
};
use cuzk_filecoin::{parse_c1, PostType, ProofType};

use super::porep_c2::parse_actor;
use super::post::{PostInput, PostInputArgs};
use crate::output::write_atomically;

#[derive(Subcommand, Debug)]
pub(crate) enum ClientCommand {
    /// Prove a PoRep C1 through the daemon and print its timings.
    Prove(ProveArgs),
    /// Prove a WinningPoSt through the daemon (CRITICAL unless --priority).
    WinningPost(PostClientArgs),
    /// Prove one WindowPoSt partition through the daemon (HIGH unless --priority).
    WindowPost(PostClientArgs),
    /// Make a key HOT (PreloadSRS), by circuit id: porep-32g, winning-32g, wpost-32g, snap-32g.
    Preload(PreloadArgs),
    /// Drop a key to COLD (EvictSRS), from host memory and every GPU, by circuit id.
    Evict(PreloadArgs),
    /// Print the daemon's GetStatus: GPUs, keys and their tiers, queues.
    Status(StatusArgs),
}

#[derive(Args, Debug)]
pub(crate) struct PreloadArgs {
    /// The daemon's address: unix:PATH or HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:9820")]
    daemon: String,
    /// The circuit id.
    #[arg(long)]
    circuit_id: String,
}

/// Where a proving call goes, where its proof is written and how long it
/// may take (`client prove` and the PoSt calls).
#[derive(Args, Debug)]
pub(crate) struct CallArgs {
    /// The daemon's address: unix:PATH or HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:9820")]
    daemon: String,
    /// Where to write the proof (192 bytes per PoRep partition or PoSt), atomically.
    #[arg(long, short)]
    out: PathBuf,
    /// Give up after this many seconds (0: wait as long as it takes).
    #[arg(long, default_value_t = 0)]
    timeout_secs: u64,
}

#[derive(Args, Debug)]
pub(crate) struct PostClientArgs {
    #[command(flatten)]
    call: CallArgs,
    #[command(flatten)]
    input: PostInputArgs,
    /// The WindowPoSt partition index.
    #[arg(long, default_value_t = 0)]
    partition: u32,
    /// The request id (default: Curio's `winpost-<miner>-<randomness>` / `wdpost-…`).
    #[arg(long)]
    request_id: Option<String>,
    /// The job's priority (default: the kind's, CRITICAL or HIGH).
    #[arg(long, value_enum)]
    priority: Option<ClientPriority>,
}

#[derive(Args, Debug)]
pub(crate) struct StatusArgs {
    /// The daemon's address: unix:PATH or HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:9820")]
    daemon: String,
}

#[derive(Args, Debug)]
pub(crate) struct ProveArgs {
    #[command(flatten)]
    call: CallArgs,
    /// The C1 output (plain JSON or Curio's wrapper; a plain one is wrapped as Curio does).
    #[arg(long)]
    c1: PathBuf,
    /// Miner actor id (f01000 or 1000).
    #[arg(long)]
    prover_id: String,
    /// Sector number (default: the wrapper's SectorNum).
    #[arg(long)]
    sector_id: Option<u64>,
    /// The request id (default: Curio's `porep-<miner>-<sector>`).
    #[arg(long)]
    request_id: Option<String>,
    /// The job's priority.
    #[arg(long, value_enum, default_value_t = ClientPriority::Normal)]
    priority: ClientPriority,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum ClientPriority {
    Low,
    Normal,
    High,
    Critical,
}

impl From<ClientPriority> for Priority {
    fn from(p: ClientPriority) -> Priority {
        match p {
            ClientPriority::Low => Priority::Low,
            ClientPriority::Normal => Priority::Normal,
            ClientPriority::High => Priority::High,
            ClientPriority::Critical => Priority::Critical,
        }
    }
}

pub(crate) fn run(command: ClientCommand) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the client's runtime")?;
    match command {
        ClientCommand::Prove(args) => runtime.block_on(prove(args)),
        ClientCommand::WinningPost(args) => runtime.block_on(post(ProofKind::WinningPost, args)),
        ClientCommand::WindowPost(args) => {
            runtime.block_on(post(ProofKind::WindowPostPartition, args))
        }
        ClientCommand::Preload(args) => runtime.block_on(preload(args)),
        ClientCommand::Evict(args) => runtime.block_on(evict(args)),
        ClientCommand::Status(args) => runtime.block_on(status(args)),
    }
}

async fn prove(args: ProveArgs) -> Result<()> {
    let bytes = std::fs::read(&args.c1)
        .with_context(|| format!("reading the C1 file {}", args.c1.display()))?;
    let c1 = parse_c1(&bytes).with_context(|| format!("{}", args.c1.display()))?;
    let miner = parse_actor(&args.prover_id)?;
    let Some(sector) = args.sector_id.or(c1.sector_num()) else {
        bail!(
            "{}: --sector-id is needed (the C1 is not in Curio's wrapper)",
            args.c1.display()
        );
    };
    let registered = ProofType::ALL
        .iter()
        .position(|p| *p == c1.proof_type.registered())
        .context("the C1's proof type has no registry number")?;
    let sector_size = c1.proof_type.sector_size();
    let vanilla = if c1.curio.is_some() {
        bytes
    } else {
        let wrapper = serde_json::json!({
            "SectorNum": sector,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&bytes),
            "SectorSize": sector_size,
        });
        serde_json::to_vec(&wrapper)?
    };
    drop(c1);
    let request_id = args
        .request_id
        .clone()
        .unwrap_or_else(|| format!("porep-{miner}-{sector}"));
    let request_bytes = vanilla.len();
    let submit = SubmitProofRequest {
        request_id,
        proof_kind: ProofKind::PorepSealCommit.into(),
        sector_size,
        registered_proof: registered as u64,
        priority: Priority::from(args.priority).into(),
        vanilla_proof: vanilla,
        sector_number: sector,
        miner_id: miner,
        ..SubmitProofRequest::default()
    };

    send(submit, request_bytes, &args.call).await
}

/// Connects to the call's daemon, sends `submit` with `Prove` (waiting at
/// most its `timeout_secs`, 0 for no limit), writes the proof to its `out`
/// and prints the daemon's timings beside the call's wall time.
async fn send(submit: SubmitProofRequest, request_bytes: usize, call: &CallArgs) -> Result<()> {
    let CallArgs {
        daemon,
        out,
        timeout_secs,
    } = call;
    let mut client = Client::connect(daemon).await?;
    let deadline = (*timeout_secs > 0).then(|| Duration::from_secs(*timeout_secs));
    let request_id = submit.request_id.clone();
    eprintln!(
        "{request_id}: {} of vanilla proof to {daemon}",
        cuzk_pipeline::memory::human(request_bytes as u64),
    );
    let t = Instant::now();
    let r = client.prove(submit, deadline).await?;
    let wall = t.elapsed();
    match r.status() {
        Status::Completed => {}
        other => bail!(
            "{request_id} (job {}) ended {}: {}",
            r.job_id,
            other.as_str_name(),
            r.error_message
        ),
    }
    write_atomically(out, &r.proof)?;
    let ms = |v: u64| format!("{:.3} s", v as f64 / 1e3);
    println!(
        "job {}: {} bytes of proof to {}",
        r.job_id,
        r.proof.len(),
        out.display()
    );
    println!(
        "daemon: total {} (queue {}, key load {}, synthesis {}, proving {})",
        ms(r.total_ms),
        ms(r.queue_wait_ms),
        ms(r.srs_load_ms),
        ms(r.synthesis_ms),
        ms(r.gpu_compute_ms)
    );
    let overhead = wall.as_secs_f64() - r.total_ms as f64 / 1e3;
    println!(
        "client: Prove call {:.3} s; outside the daemon's total: {overhead:.3} s ({:.2}% of the call)",
        wall.as_secs_f64(),
        100.0 * overhead / wall.as_secs_f64().max(1e-9)
    );
    Ok(())
}

async fn post(kind: ProofKind, args: PostClientArgs) -> Result<()> {
    let PostInput {
        post_type,
        randomness,
        actor: miner,
        vanilla,
    } = args.input.read()?;
    let registered = PostType::ALL
        .iter()
        .position(|p| *p == post_type.registered())
        .expect("PostType::ALL lists every registered PoSt proof");
    let request_bytes = vanilla.iter().map(Vec::len).sum();
    let request_id = args.request_id.clone().unwrap_or_else(|| {
        cuzk_daemon::client::post_request_id(
            kind == ProofKind::WinningPost,
            miner,
            args.partition,
            &randomness,
        )
    });
    let submit = SubmitProofRequest {
        request_id,
        proof_kind: kind.into(),
        sector_size: post_type.sector_size(),
        registered_proof: registered as u64,
        priority: args
            .priority
            .map_or(Priority::Unspecified, Priority::from)
            .into(),
        vanilla_proofs: vanilla,
        miner_id: miner,
        randomness,
        partition_index: args.partition,
        ..SubmitProofRequest::default()
    };
    send(submit, request_bytes, &args.call).await
}

async fn preload(args: PreloadArgs) -> Result<()> {
    let mut client = Client::connect(&args.daemon).await?;
    let t = Instant::now();
    let (already, load_ms) = client.preload(&args.circuit_id).await?;
    println!(
        "key {}: HOT ({}; the daemon's load {:.3} s, the call {:.3} s)",
        args.circuit_id,
        if already { "it already was" } else { "loaded" },
        load_ms as f64 / 1e3,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn evict(args: PreloadArgs) -> Result<()> {
    let mut client = Client::connect(&args.daemon).await?;
    let (was_hot, freed) = client.evict(&args.circuit_id).await?;
    println!(
        "key {}: COLD ({}; {} of host memory freed)",
        args.circuit_id,
        if was_hot {
            "it was HOT"
        } else {
            "it was not HOT"
        },
        cuzk_pipeline::memory::human(freed)
    );
    Ok(())
}

async fn status(args: StatusArgs) -> Result<()> {
    let mut client = Client::connect(&args.daemon).await?;
    let s = client.status().await?;
    let human = |b: u64| cuzk_pipeline::memory::human(b);
    println!(
        "up {} s; {} proofs completed, {} failed",
        s.uptime_seconds, s.total_proofs_completed, s.total_proofs_failed
    );
    for g in &s.gpus {
        println!(
            "gpu {}: {} ({} of {} VRAM free){}",
            g.ordinal,
            g.name,
            human(g.vram_free_bytes),
            human(g.vram_total_bytes),
            if g.current_job_id.is_empty() {
                String::new()
            } else {
                format!(", running {} ({})", g.current_job_id, g.current_proof_kind)
            }
        );
    }
    for k in &s.loaded_srs {
        let tier = Tier::try_from(k.tier).map_or("?", |t| t.as_str_name());
        println!(
            "key {}: {tier}, {}, {} job(s) using it",
            k.circuit_id,
            human(k.size_bytes),
            k.ref_count
        );
    }
    for q in &s.queues {
        println!(
            "queue {}: {} pending, {} in progress",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    Ok(())
}
