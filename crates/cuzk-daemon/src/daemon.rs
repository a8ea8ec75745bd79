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
use prost::Message as _;

mod accept;
mod dispatch;
mod results;
#[cfg(test)]
mod tests;

pub(crate) use accept::{check_envelope, check_internal_envelope};

/// The numbers the job table keeps to.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Jobs accepted and not finished, of any priority.
    pub max_queued_jobs: usize,
    /// Their vanilla proofs' bytes.
    pub max_queued_bytes: u64,
    /// Room beyond both limits that only HIGH and CRITICAL jobs (PoSt) may
    /// take: a queue full of PoRep still takes a WindowPoSt.
    pub urgent_reserved_jobs: usize,
    /// Bytes beyond `max_queued_bytes` that only HIGH and CRITICAL jobs may take.
    pub urgent_reserved_bytes: u64,
    /// The memory budget of requests being checked ([`checking_cost`]).
    pub request_memory: u64,
    /// NORMAL and LOW jobs in the engine at once; the rest wait in the table.
    pub bulk_jobs_in_engine: usize,
    /// Finished jobs kept for AwaitProof.
    pub max_results: usize,
    /// How long a result stays after its first delivery.
    pub delivered_retention: Duration,
    /// Where cuzk's own RPCs may read vanilla proofs and C1s from
    /// (`limits.vanilla_file_dirs`).
    pub local_files: crate::aggregate::LocalFiles,
    /// Where native PoSt witnesses take their aux vectors from and give
    /// them back to (`proving.post_aux_pool`; a pool of 0 bytes keeps none).
    pub post_aux_pool: Arc<cuzk_filecoin::AuxPool>,
}

/// A proving device as the status and metrics show it.
#[derive(Clone)]
pub(crate) struct DeviceView {
    /// "cpu-0", "cuda-0".
    pub name: String,
    /// The CUDA ordinal, for GPUs.
    pub gpu: Option<GpuView>,
    /// Its admission (VRAM in use and capacity on a GPU).
    pub admission: Arc<dyn Admission>,
    /// Its prover workers.
    pub workers: usize,
    /// Whether it is in service (GPUs; a fault takes one out).
    pub health: Option<Arc<crate::health::DeviceHealth>>,
    /// What proves on it (the start-up log, `GET /status`'s `workers`,
    /// `cuzk_worker_info`).
    pub build: WorkerBuild,
}

/// What a device proves with, as the start-up log, `GET /status` and the
/// metrics name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerBuild {
    /// "cpu" or "cuda".
    pub backend: &'static str,
    /// The GPU's name and architecture, or the CPU's model.
    pub model: String,
    /// The NVIDIA driver and the CUDA version it supports; "none" on the CPU.
    pub driver: String,
    /// The kernels' build id, architectures and folder; "none" on the CPU.
    pub kernels: String,
}

/// What a GPU device reports.
#[derive(Debug, Clone)]
pub(crate) struct GpuView {
    /// The CUDA ordinal.
    pub ordinal: u32,
    /// The model the driver reports.
    pub model: String,
    /// Device memory, bytes.
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
            .field("build", &self.build)
            .finish_non_exhaustive()
    }
}

enum Phase {
    Accepting,
    /// Restored from the journal, its request being checked again (the
    /// recovery thread queues it).
    Recovering,
    Queued(Arc<Request>),
    Starting,
    /// In the engine, or (`None`) an aggregation job on its own thread.
    Running(Option<JobCanceller>),
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
            Phase::Recovering => "recovering",
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
    /// Partitions proved and in all, once in the engine (`GET /status`).
    partitions: Option<(usize, usize)>,
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
    /// content differs. A job of that id that FAILED or was CANCELLED does
    /// not hold the id: the request is a retry and runs again (the old
    /// result stays readable under its job id until it expires, marked
    /// delivered: its id is returned in `superseded`). A finished proof
    /// not yet fetched is the answer, as a running job is.
    fn existing(
        &mut self,
        request_id: &str,
        digest: &str,
        superseded: &mut Option<String>,
    ) -> Result<Option<SubmitProofResponse>, RequestError> {
        let Some(job_id) = self.by_request.get(request_id).cloned() else {
            return Ok(None);
        };
        let entry = self
            .jobs
            .get_mut(&job_id)
            .expect("by_request names jobs in the table");
        if let Phase::Finished {
            result, delivered, ..
        } = &mut entry.phase
        {
            let status = Status::try_from(result.status);
            if matches!(status, Ok(Status::Failed | Status::Cancelled)) {
                tracing::info!(job = %job_id, request_id, status = ?status,
                    "a retry of a request whose job did not complete: it runs again as a new job");
                if !*delivered {
                    *delivered = true;
                    *superseded = Some(job_id.clone());
                }
                self.by_request.remove(request_id);
                return Ok(None);
            }
        }
        let job_id = &job_id;
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

    /// Drops a job from the table, and its request id unless a retry holds it now.
    fn forget(&mut self, id: &str) {
        if let Some(e) = self.jobs.remove(id) {
            if self
                .by_request
                .get(&e.accepted.request_id)
                .map(String::as_str)
                == Some(id)
            {
                self.by_request.remove(&e.accepted.request_id);
            }
        }
    }

    /// 1-based place in the daemon's queue; 0 once handed to the engine.
    fn position(&self, job_id: &str) -> u32 {
        self.queue
            .values()
            .position(|id| id == job_id)
            .map_or(0, |p| p as u32 + 1)
    }

    /// Whether a job of `bytes` of vanilla proofs may be queued: bulk jobs
    /// up to the limits, urgent ones (HIGH, CRITICAL) also into the room
    /// reserved for them beyond.
    fn check_room(
        &self,
        settings: &Settings,
        bytes: u64,
        priority: Priority,
    ) -> Result<(), RequestError> {
        let urgent = is_urgent(priority);
        let (jobs, job_limit, bytes_limit) = if urgent {
            (
                "limits.max_queued_jobs + limits.urgent_reserved_jobs",
                settings.max_queued_jobs + settings.urgent_reserved_jobs,
                settings.max_queued_bytes + settings.urgent_reserved_bytes,
            )
        } else {
            (
                "limits.max_queued_jobs",
                settings.max_queued_jobs,
                settings.max_queued_bytes,
            )
        };
        if self.unfinished >= job_limit {
            return Err(RequestError::ResourceExhausted(format!(
                "queue full: {} jobs accepted and not finished, limit {job_limit} for {} jobs ({jobs}); retry later",
                self.unfinished,
                priority.as_str_name()
            )));
        }
        if self.unfinished_bytes + bytes > bytes_limit {
            let which = if urgent {
                "limits.max_queued_bytes + limits.urgent_reserved_bytes"
            } else {
                "limits.max_queued_bytes"
            };
            return Err(RequestError::ResourceExhausted(format!(
                "queue memory full: {} bytes of vanilla proofs held for unfinished jobs, this request adds {bytes}, limit {bytes_limit} for {} jobs ({which}); retry later",
                self.unfinished_bytes,
                priority.as_str_name()
            )));
        }
        Ok(())
    }
}

/// What checking a request holds at its peak, beside the request itself:
/// a PoRep C1 is parsed into a generic JSON tree (16-32 times its bytes;
/// the larger is counted), the other kinds decode their vanilla proofs
/// once (counted twice their bytes).
pub(crate) fn checking_cost(req: &SubmitProofRequest) -> u64 {
    let factor = if req.proof_kind == ProofKind::PorepSealCommit as i32 {
        32
    } else {
        2
    };
    (req.encoded_len() as u64).saturating_mul(factor)
}

/// The memory budget of requests being checked: each submission holds
/// its [`checking_cost`] from before its check until it is queued or
/// refused; one beyond the budget is refused at once.
#[derive(Debug)]
pub(crate) struct CheckingBudget {
    limit: u64,
    used: Mutex<u64>,
}

/// A submission's share of the [`CheckingBudget`], given back on drop.
#[derive(Debug)]
pub(crate) struct CheckingShare<'a> {
    budget: &'a CheckingBudget,
    bytes: u64,
}

impl CheckingBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Self {
        CheckingBudget {
            limit,
            used: Mutex::new(0),
        }
    }

    /// Bytes held now.
    pub(crate) fn used(&self) -> u64 {
        *self.used.lock()
    }

    /// Takes `req`'s share, or refuses it with the numbers.
    pub(crate) fn reserve(
        &self,
        req: &SubmitProofRequest,
    ) -> Result<CheckingShare<'_>, RequestError> {
        let bytes = checking_cost(req);
        let mut used = self.used.lock();
        if used.saturating_add(bytes) > self.limit {
            return Err(RequestError::ResourceExhausted(format!(
                "requests being checked hold {} of the {} budget (limits.request_memory); this one needs {} to check ({} received); retry later",
                cuzk_gpu::human(*used),
                cuzk_gpu::human(self.limit),
                cuzk_gpu::human(bytes),
                cuzk_gpu::human(req.encoded_len() as u64),
            )));
        }
        *used += bytes;
        Ok(CheckingShare {
            budget: self,
            bytes,
        })
    }
}

impl Drop for CheckingShare<'_> {
    fn drop(&mut self) {
        *self.budget.used.lock() -= self.bytes;
    }
}

/// HIGH and CRITICAL: the PoSt kinds' defaults, whose deadlines cost a
/// storage provider its power or a block reward.
fn is_urgent(priority: Priority) -> bool {
    matches!(priority, Priority::High | Priority::Critical)
}

/// Counters for the metrics; the per-kind ones indexed as [`KINDS`].
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Jobs accepted, per kind.
    pub accepted: [AtomicU64; 4],
    /// Jobs that ended with a proof, per kind.
    pub completed: [AtomicU64; 4],
    /// Jobs that ended with an error, per kind.
    pub failed: [AtomicU64; 4],
    /// Jobs cancelled, per kind.
    pub cancelled: [AtomicU64; 4],
    /// Partitions proved, per kind (a non-interactive PoRep counts its 13
    /// or 126 like any other kind's).
    pub partitions_proved: [AtomicU64; 4],
    /// Finished results dropped by retention before they were delivered.
    pub results_dropped: AtomicU64,
    /// Jobs whose thread panicked (each failed with the panic's message).
    pub job_panics: AtomicU64,
    /// gRPC code name → refused submissions.
    pub rejected: Mutex<BTreeMap<&'static str, u64>>,
    /// Completed proofs' latencies, per kind.
    pub latency: crate::metrics::Latency,
}

/// The sum of a per-kind counter.
pub(crate) fn total(counter: &[AtomicU64; 4]) -> u64 {
    counter
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        .sum()
}

/// Upper bounds of the proof latency histogram, seconds: a 32 GiB
/// WinningPoSt should take under 1 s, a 2 KiB CPU proof ~10 s, a 32 GiB GPU
/// PoRep ~30-140 s, a queued one minutes.
pub(crate) const LATENCY_BUCKETS: [f64; 14] = [
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0,
];

/// Counts of the table, for the status and metrics (per kind, as [`KINDS`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TableCounts {
    /// Jobs waiting, per kind.
    pub queued: [u32; 4],
    /// Of the queued: restored from the journal and being checked again.
    pub recovering: u32,
    /// Jobs in the engine, per kind.
    pub running: [u32; 4],
    /// Finished jobs kept for delivery.
    pub finished: u32,
    /// Vanilla-proof bytes of the jobs not finished.
    pub unfinished_bytes: u64,
}

/// A job in the engine, as `GET /status` lists it.
#[derive(Debug, Clone)]
pub(crate) struct RunningJob {
    /// The daemon's id of the job.
    pub job_id: String,
    /// The client's id of the request.
    pub request_id: String,
    /// The proof kind of the wire.
    pub kind: ProofKind,
    /// The circuit's proof type name (`StackedDrg2KiBV1_2_Feat_NonInteractivePoRep`).
    pub circuit: String,
    /// Partitions proved so far (read every quarter second).
    pub partitions_proved: usize,
    /// Partitions in all (0 until the engine reports).
    pub partitions: usize,
}

/// The daemon (see the module docs).
pub(crate) struct Daemon {
    settings: Settings,
    params: ParamsDir,
    engine: Engine,
    devices: Vec<DeviceView>,
    srs: Arc<SrsManager>,
    journal: Journal,
    table: Mutex<Table>,
    checking: CheckingBudget,
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

/// Whole milliseconds, rounded up: a stage that ran reads at least 1, so 0
/// on the wire means the stage did not run (a 2 KiB PoSt's synthesis takes
/// well under a millisecond on a fast host).
fn millis(d: Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    ms.try_into().unwrap_or(u64::MAX)
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

/// A job the dispatcher took from the queue, with its key leased (none
/// for an aggregation job, which needs no proving key).
struct Started {
    id: String,
    request: Arc<Request>,
    lease: Option<crate::srs::SrsLease>,
}

impl Daemon {
    /// The daemon over a started engine, its devices, key manager and
    /// journal; `replayed` is what the journal held (queued again or kept
    /// for delivery). Starts the dispatcher thread.
    pub(crate) fn start(
        settings: Settings,
        params: ParamsDir,
        engine: Engine,
        devices: Vec<DeviceView>,
        srs: Arc<SrsManager>,
        journal: Journal,
        replayed: Vec<Replayed>,
    ) -> Arc<Daemon> {
        let daemon = Daemon::new(settings, params, engine, devices, srs, journal);
        let pending = daemon.restore(replayed);
        // A key loaded (or failed) may let queued jobs start: wake the dispatcher.
        let weak = Arc::downgrade(&daemon);
        daemon.srs.on_load_end(move || {
            if let Some(d) = weak.upgrade() {
                d.wake.notify_all();
            }
        });
        let d = Arc::clone(&daemon);
        std::thread::Builder::new()
            .name("journal-recovery".into())
            .spawn(move || d.recover(pending))
            .expect("spawning the recovery thread");
        let d = Arc::clone(&daemon);
        std::thread::Builder::new()
            .name("dispatcher".into())
            .spawn(move || d.watch_dispatcher())
            .expect("spawning the dispatcher");
        daemon
    }

    /// The daemon with an empty table and no thread (see [`Daemon::start`]).
    fn new(
        settings: Settings,
        params: ParamsDir,
        engine: Engine,
        devices: Vec<DeviceView>,
        srs: Arc<SrsManager>,
        journal: Journal,
    ) -> Arc<Daemon> {
        let checking = CheckingBudget::new(settings.request_memory);
        Arc::new(Daemon {
            checking,
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
        })
    }

    /// Counts of the table.
    pub(crate) fn counts(&self) -> TableCounts {
        let t = self.table.lock();
        let mut c = TableCounts {
            unfinished_bytes: t.unfinished_bytes,
            ..Default::default()
        };
        for e in t.jobs.values() {
            let k = kind_index(e.accepted.proof_kind);
            match e.phase {
                Phase::Recovering => {
                    c.queued[k] += 1;
                    c.recovering += 1;
                }
                Phase::Accepting | Phase::Queued(_) | Phase::Starting => c.queued[k] += 1,
                Phase::Running(_) => c.running[k] += 1,
                Phase::Finished { .. } | Phase::Interrupted => c.finished += 1,
            }
        }
        c
    }

    /// The oldest running job's id and kind, for `GPUStatus.current_job_id`.
    pub(crate) fn oldest_running(&self) -> Option<(String, ProofKind)> {
        let t = self.table.lock();
        t.jobs
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Running(_)))
            .min_by_key(|(_, e)| e.seq)
            .map(|(id, e)| (id.clone(), KINDS[kind_index(e.accepted.proof_kind)]))
    }

    /// The jobs in the engine, oldest first, with their partitions.
    pub(crate) fn running_jobs(&self) -> Vec<RunningJob> {
        let t = self.table.lock();
        let mut jobs: Vec<(u64, RunningJob)> = t
            .jobs
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Running(_)))
            .map(|(id, e)| {
                let (proved, total) = e.partitions.unwrap_or((0, 0));
                let job = RunningJob {
                    job_id: id.clone(),
                    request_id: e.accepted.request_id.clone(),
                    kind: KINDS[kind_index(e.accepted.proof_kind)],
                    circuit: e.circuit.map_or_else(String::new, |c| c.name()),
                    partitions_proved: proved,
                    partitions: total,
                };
                (e.seq, job)
            })
            .collect();
        jobs.sort_by_key(|(seq, _)| *seq);
        jobs.into_iter().map(|(_, j)| j).collect()
    }

    /// The engine's meters.
    pub(crate) fn engine_metrics(&self) -> MetricsSnapshot {
        self.engine.metrics()
    }

    /// The devices.
    pub(crate) fn devices(&self) -> &[DeviceView] {
        &self.devices
    }

    /// The key manager.
    pub(crate) fn srs(&self) -> &Arc<SrsManager> {
        &self.srs
    }

    /// Bytes held by requests being checked.
    pub(crate) fn checking_used(&self) -> u64 {
        self.checking.used()
    }

    /// The counters.
    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Since the daemon started.
    pub(crate) fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The parameter cache.
    pub(crate) fn params(&self) -> &ParamsDir {
        &self.params
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Counts a refused submission under its gRPC code.
    pub(crate) fn count_rejection(&self, e: &RequestError) {
        let code = match e {
            RequestError::InvalidArgument(_) => "invalid_argument",
            RequestError::ResourceExhausted(_) => "resource_exhausted",
            RequestError::NotFound(_) => "not_found",
            RequestError::FailedPrecondition(_) => "failed_precondition",
            RequestError::Unavailable(_) => "unavailable",
            RequestError::Internal(_) => "internal",
        };
        *self.stats.rejected.lock().entry(code).or_default() += 1;
    }
}
