//! The daemon's job table and its threads: what was accepted, what waits in
//! the daemon's queue (in priority order), what runs in the engine, and the
//! results kept for their clients.
//!
//! A job goes `Accepting` (checked, being journaled) → `Queued` (waiting for
//! its turn and for its key to be HOT) → `Starting` (its circuits being
//! built) → `Running` (in the engine) → `Finished`. The dispatcher thread
//! hands the first queued job whose key is HOT to the engine: HIGH and
//! CRITICAL jobs at once (in the engine's class of the same name, so their
//! partitions overtake every lower-class partition not yet started), NORMAL
//! and LOW ones while fewer than `bulk_jobs_in_engine` bulk jobs are in it; a
//! cold key loads on its own thread meanwhile. One thread per started job
//! builds its circuits, waits for its proofs, checks them with
//! the Filecoin crates' verifier of its kind (`kinds`), and records the
//! result, journal first.
//!
//! The table and its types are here; the methods are split by concern:
//! `accept` (submissions and the journal's replay), `dispatch` (the
//! dispatcher and the job threads), `results` (endings, retention,
//! `AwaitProof`, `CancelProof`, the drain).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cuzk_filecoin::ParamsDir;
use cuzk_pipeline::{Admission, JobCanceller, MetricsSnapshot, Scheduler};
use cuzk_sched::Engine;
use parking_lot::{Condvar, Mutex};
use sha2::{Digest, Sha256};

use crate::error::RequestError;
use crate::journal::{Accepted, Finished, Journal, Replayed};
use crate::kinds::{kind_index, Request, KINDS};
use crate::proto::{
    await_proof_response::Status, Priority, ProofKind, SubmitProofRequest, SubmitProofResponse,
};
use crate::srs::SrsManager;

mod accept;
mod dispatch;
mod results;

pub use accept::check_envelope;
pub use dispatch::engine_class;

/// The numbers the job table keeps to.
#[derive(Debug, Clone)]
pub struct Settings {
    pub max_queued_jobs: usize,
    pub max_queued_bytes: u64,
    pub bulk_jobs_in_engine: usize,
    pub max_results: usize,
    pub delivered_retention: Duration,
}

/// A proving device as the status and metrics show it.
#[derive(Clone)]
pub struct DeviceView {
    /// "cpu-0", "cuda-0".
    pub name: String,
    /// The CUDA ordinal, for GPUs.
    pub gpu: Option<GpuView>,
    /// Its admission (VRAM in use and capacity on a GPU).
    pub admission: Arc<dyn Admission>,
    /// Its prover workers.
    pub workers: usize,
}

/// What a GPU device reports.
#[derive(Debug, Clone)]
pub struct GpuView {
    pub ordinal: u32,
    pub model: String,
    pub vram_total: u64,
    /// The keys resident in its VRAM, shared by its workers (a CPU device
    /// has no `GpuView`, hence no slot: it proves from the host key).
    pub keys: cuzk_gpu::SrsSlot,
}

impl std::fmt::Debug for DeviceView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceView")
            .field("name", &self.name)
            .field("gpu", &self.gpu)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

enum Phase {
    Accepting,
    Queued(Arc<Request>),
    Starting,
    Running(JobCanceller),
    Finished {
        result: Arc<Finished>,
        at: Instant,
        delivered: bool,
    },
    /// Cancelled by a shutdown: still unfinished in the journal.
    Interrupted,
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Phase::Accepting => "accepting",
            Phase::Queued(_) => "queued",
            Phase::Starting => "starting",
            Phase::Running(_) => "running",
            Phase::Finished { .. } => "finished",
            Phase::Interrupted => "interrupted",
        }
    }
}

struct Entry {
    accepted: Accepted,
    accepted_at: Instant,
    seq: u64,
    bytes: u64,
    priority: Priority,
    phase: Phase,
    cancel_requested: bool,
    /// Cancelled because the daemon is stopping (not by a client).
    interrupted: bool,
    in_bulk_slot: bool,
    /// When the dispatcher first asked for the job's key (its SRS wait starts).
    key_asked: Option<Instant>,
    /// Its circuit, once the dispatcher has taken it (for the wait log).
    circuit: Option<cuzk_filecoin::Circuit>,
    done: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct Table {
    jobs: HashMap<String, Entry>,
    by_request: HashMap<String, String>,
    /// Dispatch order: priority (highest first), then acceptance.
    queue: BTreeMap<(Reverse<i32>, u64), String>,
    next_seq: u64,
    bulk_in_engine: usize,
    unfinished: usize,
    unfinished_bytes: u64,
    /// Finished jobs, oldest first (retention).
    finished: VecDeque<String>,
    draining: bool,
    stopping: bool,
}

impl Table {
    /// The answer for a request id already known, or a refusal if its
    /// content differs.
    fn existing(
        &self,
        request_id: &str,
        digest: &str,
    ) -> Result<Option<SubmitProofResponse>, RequestError> {
        let Some(job_id) = self.by_request.get(request_id) else {
            return Ok(None);
        };
        let entry = &self.jobs[job_id];
        if entry.accepted.digest != digest {
            return Err(RequestError::InvalidArgument(format!(
                "request_id {request_id:?} is already job {job_id} with other content (a different proof kind, sector or vanilla proof); use a new request id"
            )));
        }
        Ok(Some(SubmitProofResponse {
            job_id: job_id.clone(),
            queue_position: self.position(job_id),
            assigned_gpu: String::new(),
        }))
    }

    /// 1-based place in the daemon's queue; 0 once handed to the engine.
    fn position(&self, job_id: &str) -> u32 {
        self.queue
            .values()
            .position(|id| id == job_id)
            .map_or(0, |p| p as u32 + 1)
    }

    fn check_room(&self, settings: &Settings, bytes: u64) -> Result<(), RequestError> {
        if self.unfinished >= settings.max_queued_jobs {
            return Err(RequestError::ResourceExhausted(format!(
                "queue full: {} jobs accepted and not finished, limit {} (limits.max_queued_jobs); retry later",
                self.unfinished, settings.max_queued_jobs
            )));
        }
        if self.unfinished_bytes + bytes > settings.max_queued_bytes {
            return Err(RequestError::ResourceExhausted(format!(
                "queue memory full: {} bytes of vanilla proofs held for unfinished jobs, this request adds {bytes}, limit {} (limits.max_queued_bytes); retry later",
                self.unfinished_bytes, settings.max_queued_bytes
            )));
        }
        Ok(())
    }
}

/// Counters for the metrics; the per-kind ones indexed as [`KINDS`].
#[derive(Debug, Default)]
pub struct Stats {
    pub accepted: [AtomicU64; 4],
    pub completed: [AtomicU64; 4],
    pub failed: [AtomicU64; 4],
    pub cancelled: [AtomicU64; 4],
    pub results_dropped: AtomicU64,
    /// gRPC code name → refused submissions.
    pub rejected: Mutex<BTreeMap<&'static str, u64>>,
    /// Completed proofs' latencies, per kind.
    pub latency: Mutex<[Histogram; 4]>,
}

/// The sum of a per-kind counter.
pub fn total(counter: &[AtomicU64; 4]) -> u64 {
    counter
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        .sum()
}

/// Upper bounds of the proof latency histogram, seconds: a 32 GiB
/// WinningPoSt should take under 1 s, a 2 KiB CPU proof ~10 s, a 32 GiB GPU
/// PoRep ~30-140 s, a queued one minutes.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0,
];

/// A Prometheus histogram's state.
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    /// Per bucket of [`LATENCY_BUCKETS`] (not cumulative).
    pub counts: [u64; LATENCY_BUCKETS.len()],
    pub count: u64,
    pub sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| seconds <= *b) {
            self.counts[i] += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// Counts of the table, for the status and metrics (per kind, as [`KINDS`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct TableCounts {
    pub queued: [u32; 4],
    pub running: [u32; 4],
    pub finished: u32,
    pub unfinished_bytes: u64,
}

/// The daemon (see the module docs).
pub struct Daemon {
    settings: Settings,
    params: ParamsDir,
    engine: Engine,
    devices: Vec<DeviceView>,
    srs: Arc<SrsManager>,
    journal: Journal,
    table: Mutex<Table>,
    wake: Condvar,
    stats: Stats,
    started: Instant,
    stopped: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("settings", &self.settings)
            .field("devices", &self.devices)
            .finish_non_exhaustive()
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// What identifies a request's content (not its id or priority).
fn digest(req: &SubmitProofRequest) -> String {
    let mut h = Sha256::new();
    h.update(req.proof_kind.to_le_bytes());
    for n in [
        req.sector_size,
        req.registered_proof,
        req.sector_number,
        req.miner_id,
    ] {
        h.update(n.to_le_bytes());
    }
    h.update((req.vanilla_proof.len() as u64).to_le_bytes());
    h.update(&req.vanilla_proof);
    // The other kinds' fields, only when set: a PoRep request's digest is
    // the one journals written before these kinds hold.
    let others = !req.vanilla_proofs.is_empty()
        || !req.randomness.is_empty()
        || req.partition_index != 0
        || !req.comm_r_old.is_empty()
        || !req.comm_r_new.is_empty()
        || !req.comm_d_new.is_empty();
    if others {
        h.update((req.vanilla_proofs.len() as u64).to_le_bytes());
        for bytes in req.vanilla_proofs.iter().chain([
            &req.randomness,
            &req.comm_r_old,
            &req.comm_r_new,
            &req.comm_d_new,
        ]) {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        h.update(req.partition_index.to_le_bytes());
    }
    hex::encode(h.finalize())
}

fn new_job_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 8];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("job-{}", hex::encode(bytes))
}

/// A result with no proof.
fn unproved(status: Status, message: String, total: Duration) -> Finished {
    Finished {
        status: status as i32,
        proof_hex: String::new(),
        error_message: message,
        queue_wait_ms: 0,
        srs_load_ms: 0,
        synthesis_ms: 0,
        gpu_compute_ms: 0,
        total_ms: millis(total),
        device: String::new(),
    }
}

enum Outcome {
    Done(Finished),
    Interrupted,
}

/// A job the dispatcher took from the queue, with its key leased.
struct Started {
    id: String,
    request: Arc<Request>,
    lease: crate::srs::SrsLease,
}

impl Daemon {
    /// The daemon over a started engine, its devices, key manager and
    /// journal; `replayed` is what the journal held (queued again or kept
    /// for delivery). Starts the dispatcher thread.
    pub fn start(
        settings: Settings,
        params: ParamsDir,
        engine: Engine,
        devices: Vec<DeviceView>,
        srs: Arc<SrsManager>,
        journal: Journal,
        replayed: Vec<Replayed>,
    ) -> Arc<Daemon> {
        let daemon = Arc::new(Daemon {
            settings,
            params,
            engine,
            devices,
            srs,
            journal,
            table: Mutex::new(Table::default()),
            wake: Condvar::new(),
            stats: Stats::default(),
            started: Instant::now(),
            stopped: tokio::sync::watch::channel(false).0,
        });
        daemon.restore(replayed);
        // A key loaded (or failed) may let queued jobs start: wake the dispatcher.
        let weak = Arc::downgrade(&daemon);
        daemon.srs.on_load_end(move || {
            if let Some(d) = weak.upgrade() {
                d.wake.notify_all();
            }
        });
        let d = Arc::clone(&daemon);
        std::thread::Builder::new()
            .name("dispatcher".into())
            .spawn(move || d.dispatch_loop())
            .expect("spawning the dispatcher");
        daemon
    }

    /// Counts of the table.
    pub fn counts(&self) -> TableCounts {
        let t = self.table.lock();
        let mut c = TableCounts {
            unfinished_bytes: t.unfinished_bytes,
            ..Default::default()
        };
        for e in t.jobs.values() {
            let k = kind_index(e.accepted.proof_kind);
            match e.phase {
                Phase::Accepting | Phase::Queued(_) | Phase::Starting => c.queued[k] += 1,
                Phase::Running(_) => c.running[k] += 1,
                Phase::Finished { .. } | Phase::Interrupted => c.finished += 1,
            }
        }
        c
    }

    /// The oldest running job's id and kind, for `GPUStatus.current_job_id`.
    pub fn oldest_running(&self) -> Option<(String, ProofKind)> {
        let t = self.table.lock();
        t.jobs
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Running(_)))
            .min_by_key(|(_, e)| e.seq)
            .map(|(id, e)| (id.clone(), KINDS[kind_index(e.accepted.proof_kind)]))
    }

    /// The engine's meters.
    pub fn engine_metrics(&self) -> MetricsSnapshot {
        self.engine.metrics()
    }

    /// The devices.
    pub fn devices(&self) -> &[DeviceView] {
        &self.devices
    }

    /// The key manager.
    pub fn srs(&self) -> &Arc<SrsManager> {
        &self.srs
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Since the daemon started.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Counts a refused submission under its gRPC code.
    pub fn count_rejection(&self, e: &RequestError) {
        let code = match e {
            RequestError::InvalidArgument(_) => "invalid_argument",
            RequestError::Unimplemented(_) => "unimplemented",
            RequestError::ResourceExhausted(_) => "resource_exhausted",
            RequestError::NotFound(_) => "not_found",
            RequestError::FailedPrecondition(_) => "failed_precondition",
            RequestError::Unavailable(_) => "unavailable",
            RequestError::Internal(_) => "internal",
        };
        *self.stats.rejected.lock().entry(code).or_default() += 1;
    }
}
