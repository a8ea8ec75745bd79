//! The daemon's job table and its threads: what was accepted, what waits in
//! the daemon's queue (in priority order), what runs in the engine, and the
//! results kept for their clients.
//!
//! A job goes `Accepting` (checked, being journaled) → `Queued` → `Starting`
//! (its key being made HOT, its circuits built) → `Running` (in the engine)
//! → `Finished`. The dispatcher thread hands the queue's head to the engine:
//! HIGH and CRITICAL jobs at once (in the engine's class of the same name, so
//! their partitions overtake every lower-class partition not yet started),
//! NORMAL and LOW ones while fewer than `bulk_jobs_in_engine` bulk jobs are
//! in it; one
//! waiter thread per running job waits for its proofs, checks them with
//! filecoin-proofs' `verify_seal`, and records the result, journal first.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cuzk_filecoin::{ParamsDir, PorepSource};
use cuzk_pipeline::{
    Admission, Job, JobCanceller, JobError, JobHandle, MetricsSnapshot, Scheduler,
};
use cuzk_sched::Engine;
use parking_lot::{Condvar, Mutex};
use prost::Message;
use sha2::{Digest, Sha256};

use crate::error::RequestError;
use crate::journal::{Accepted, Finished, Journal, Replayed};
use crate::porep::{check_request, PorepRequest, TimedSource};
use crate::proto::{
    await_proof_response::Status, AwaitProofResponse, Priority, ProofKind, SubmitProofRequest,
    SubmitProofResponse,
};
use crate::srs::SrsManager;

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
    Queued(Arc<PorepRequest>),
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

/// Counters for the metrics.
#[derive(Debug, Default)]
pub struct Stats {
    pub accepted: AtomicU64,
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub cancelled: AtomicU64,
    pub results_dropped: AtomicU64,
    /// gRPC code name → refused submissions.
    pub rejected: Mutex<BTreeMap<&'static str, u64>>,
    /// Total seconds of completed proofs, per bucket bound (`LATENCY_BUCKETS`).
    pub latency: Mutex<Histogram>,
}

/// Upper bounds of the proof latency histogram, seconds: a 2 KiB CPU proof
/// takes ~10 s, a 32 GiB GPU proof ~30-140 s, a queued one minutes.
pub const LATENCY_BUCKETS: [f64; 12] = [
    1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0,
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

/// Counts of the table, for the status and metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableCounts {
    pub queued: u32,
    pub running: u32,
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
    request: Arc<PorepRequest>,
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

    fn restore(&self, replayed: Vec<Replayed>) {
        let now_ms = unix_ms();
        for r in replayed {
            let (accepted, phase, bytes) = match r {
                Replayed::Undelivered { accepted, result } => {
                    let phase = Phase::Finished {
                        result: Arc::new(result),
                        at: Instant::now(),
                        delivered: false,
                    };
                    (accepted, phase, 0)
                }
                Replayed::Unfinished { accepted, request } => {
                    let checked = SubmitProofRequest::decode(&request[..])
                        .map_err(|e| {
                            RequestError::Internal(format!(
                                "the journaled request does not decode: {e}"
                            ))
                        })
                        .and_then(|req| {
                            check_request(&req, &self.params)
                                .map(|c| (c, req.vanilla_proof.len() as u64))
                        });
                    match checked {
                        Ok((c, bytes)) => (accepted, Phase::Queued(Arc::new(c)), bytes),
                        Err(e) => {
                            let result = unproved(
                                Status::Failed,
                                format!("after a restart the journaled request was refused: {e}"),
                                Duration::ZERO,
                            );
                            if let Err(e) = self.journal.finish(&accepted.job_id, &result) {
                                tracing::error!(error = %e, "journal");
                            }
                            let phase = Phase::Finished {
                                result: Arc::new(result),
                                at: Instant::now(),
                                delivered: false,
                            };
                            (accepted, phase, 0)
                        }
                    }
                }
            };
            let age = Duration::from_millis(now_ms.saturating_sub(accepted.accepted_unix_ms));
            let accepted_at = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
            let priority = Priority::try_from(accepted.priority).unwrap_or(Priority::Normal);
            let mut t = self.table.lock();
            let seq = t.next_seq;
            t.next_seq += 1;
            let id = accepted.job_id.clone();
            tracing::info!(job = %id, request_id = %accepted.request_id, phase = phase.name(),
                "restored from the journal");
            match &phase {
                Phase::Queued(_) => {
                    t.queue.insert((Reverse(priority as i32), seq), id.clone());
                    t.unfinished += 1;
                    t.unfinished_bytes += bytes;
                }
                _ => t.finished.push_back(id.clone()),
            }
            let finished = matches!(phase, Phase::Finished { .. });
            t.by_request.insert(accepted.request_id.clone(), id.clone());
            t.jobs.insert(
                id,
                Entry {
                    accepted,
                    accepted_at,
                    seq,
                    bytes,
                    priority,
                    phase,
                    cancel_requested: false,
                    interrupted: false,
                    in_bulk_slot: false,
                    key_asked: None,
                    done: tokio::sync::watch::channel(finished).0,
                },
            );
        }
    }

    /// `SubmitProof` for a `POREP_SEAL_COMMIT` request whose kind and
    /// priority were checked: blocking (it parses and checks the C1 and
    /// fsyncs the journal).
    pub fn submit(
        &self,
        req: SubmitProofRequest,
        priority: Priority,
    ) -> Result<SubmitProofResponse, RequestError> {
        let digest = digest(&req);
        let bytes = req.vanilla_proof.len() as u64;
        {
            let t = self.table.lock();
            if t.draining {
                return Err(RequestError::Unavailable(
                    "the daemon is shutting down and takes no new jobs".into(),
                ));
            }
            if let Some(known) = t.existing(&req.request_id, &digest)? {
                return Ok(known);
            }
            t.check_room(&self.settings, bytes)?;
        }
        let checked = check_request(&req, &self.params)?;
        let job_id = new_job_id();
        let accepted = Accepted {
            job_id: job_id.clone(),
            request_id: req.request_id.clone(),
            digest: digest.clone(),
            proof_kind: req.proof_kind,
            priority: priority as i32,
            accepted_unix_ms: unix_ms(),
        };
        {
            let mut t = self.table.lock();
            if t.draining {
                return Err(RequestError::Unavailable(
                    "the daemon is shutting down and takes no new jobs".into(),
                ));
            }
            // A twin submission may have won the race while this one was checked.
            if let Some(known) = t.existing(&req.request_id, &digest)? {
                return Ok(known);
            }
            t.check_room(&self.settings, bytes)?;
            let seq = t.next_seq;
            t.next_seq += 1;
            t.unfinished += 1;
            t.unfinished_bytes += bytes;
            t.by_request.insert(req.request_id.clone(), job_id.clone());
            t.jobs.insert(
                job_id.clone(),
                Entry {
                    accepted: accepted.clone(),
                    accepted_at: Instant::now(),
                    seq,
                    bytes,
                    priority,
                    phase: Phase::Accepting,
                    cancel_requested: false,
                    interrupted: false,
                    in_bulk_slot: false,
                    key_asked: None,
                    done: tokio::sync::watch::channel(false).0,
                },
            );
        }
        if let Err(e) = self.journal.accept(&accepted, &req.encode_to_vec()) {
            tracing::error!(job = %job_id, error = %e, "could not journal an accepted job; refused");
            let mut t = self.table.lock();
            t.jobs.remove(&job_id);
            t.by_request.remove(&req.request_id);
            t.unfinished -= 1;
            t.unfinished_bytes -= bytes;
            return Err(RequestError::Internal(format!(
                "the job could not be journaled, so it was not accepted: {e}"
            )));
        }
        drop(req);
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        let mut t = self.table.lock();
        let entry = t.jobs.get_mut(&job_id).expect("inserted above");
        if entry.cancel_requested {
            entry.phase = Phase::Starting;
            drop(t);
            self.finish(&job_id, Outcome::Done(self.cancelled(&job_id)));
            return Ok(SubmitProofResponse {
                job_id,
                queue_position: 0,
                assigned_gpu: String::new(),
            });
        }
        entry.phase = Phase::Queued(Arc::new(checked));
        let key = (Reverse(priority as i32), entry.seq);
        t.queue.insert(key, job_id.clone());
        let queue_position = t.position(&job_id);
        drop(t);
        tracing::info!(job = %job_id, request_id = %accepted.request_id,
            priority = priority.as_str_name(), queue_position, "job accepted");
        self.wake.notify_all();
        Ok(SubmitProofResponse {
            job_id,
            queue_position,
            assigned_gpu: String::new(),
        })
    }

    fn cancelled(&self, job_id: &str) -> Finished {
        let total = self
            .table
            .lock()
            .jobs
            .get(job_id)
            .map_or(Duration::ZERO, |e| e.accepted_at.elapsed());
        unproved(Status::Cancelled, "cancelled by CancelProof".into(), total)
    }

    fn dispatch_loop(self: Arc<Self>) {
        let mut last_tick = Instant::now();
        loop {
            let (picked, failed) = {
                let mut t = self.table.lock();
                loop {
                    if t.stopping {
                        return;
                    }
                    if !t.draining {
                        let (picked, failed) = self.pick(&mut t);
                        if picked.is_some() || !failed.is_empty() {
                            break (picked, failed);
                        }
                    }
                    self.wake.wait_for(&mut t, Duration::from_secs(1));
                    if last_tick.elapsed() >= Duration::from_secs(1) {
                        break (None, Vec::new());
                    }
                }
            };
            for (id, error) in failed {
                self.fail_before_engine(&id, error);
            }
            match picked {
                Some(started) => {
                    let daemon = Arc::clone(&self);
                    std::thread::Builder::new()
                        .name(started.id.clone())
                        .spawn(move || daemon.run_job(started))
                        .expect("spawning a job thread");
                }
                None if last_tick.elapsed() >= Duration::from_secs(1) => {
                    last_tick = Instant::now();
                    self.srs.tick();
                    self.expire();
                }
                None => {}
            }
        }
    }

    /// Takes the first queued job that may enter the engine now and whose
    /// key is HOT. A job whose key is loading stays queued (its loader
    /// thread wakes the dispatcher), so other circuits' jobs go past it;
    /// jobs whose key failed to load are returned to be failed.
    #[allow(clippy::type_complexity)]
    fn pick(&self, t: &mut Table) -> (Option<Started>, Vec<(String, String)>) {
        let mut failed = Vec::new();
        let candidates: Vec<((Reverse<i32>, u64), String)> =
            t.queue.iter().map(|(k, id)| (*k, id.clone())).collect();
        for (key, id) in candidates {
            let latency = key.0 .0 >= Priority::High as i32;
            if !latency && t.bulk_in_engine >= self.settings.bulk_jobs_in_engine {
                // Everything behind a bulk job is bulk too.
                break;
            }
            let entry = t.jobs.get_mut(&id).expect("queued jobs are in the table");
            let Phase::Queued(request) = &entry.phase else {
                unreachable!("a queued job in phase {}", entry.phase.name());
            };
            let request = Arc::clone(request);
            let asked = *entry.key_asked.get_or_insert_with(Instant::now);
            let lease = match self.srs.try_acquire(request.proof_type, asked) {
                Ok(Some(lease)) => lease,
                Ok(None) => continue,
                Err(e) => {
                    t.queue.remove(&key);
                    entry.phase = Phase::Starting;
                    // SrsError's messages carry their causes.
                    failed.push((id, format!("the proving key: {e}")));
                    continue;
                }
            };
            t.queue.remove(&key);
            entry.phase = Phase::Starting;
            entry.in_bulk_slot = !latency;
            if !latency {
                t.bulk_in_engine += 1;
            }
            return (Some(Started { id, request, lease }), failed);
        }
        (None, failed)
    }

    fn fail_before_engine(&self, id: &str, message: String) {
        let total = self
            .table
            .lock()
            .jobs
            .get(id)
            .map_or(Duration::ZERO, |e| e.accepted_at.elapsed());
        tracing::error!(job = %id, error = %message, "job failed before the engine");
        self.finish(id, Outcome::Done(unproved(Status::Failed, message, total)));
    }

    /// A job thread: builds the job's circuits, hands it to the engine, waits
    /// for its proofs and records the outcome.
    fn run_job(self: Arc<Self>, started: Started) {
        let Started { id, request, lease } = started;
        let source = match PorepSource::new(&request.c1, &lease.key) {
            Ok(s) => TimedSource::new(s),
            Err(e) => {
                return self
                    .fail_before_engine(&id, format!("building the partition circuits: {e}"))
            }
        };
        let (priority, label) = {
            let t = self.table.lock();
            let e = &t.jobs[&id];
            (e.priority, format!("{id} ({})", e.accepted.request_id))
        };
        let class = engine_class(priority);
        let job = Job::new(
            Arc::clone(&source) as Arc<dyn cuzk_pipeline::PartitionSource>,
            Arc::clone(&lease.key),
        )
        .with_priority(class)
        .with_verifying_key(Arc::clone(&lease.prepared))
        .with_label(label);
        let handle: JobHandle = match self.engine.submit(job) {
            Ok(h) => h,
            Err(e) => {
                return self.fail_before_engine(&id, format!("the engine refused the job: {e}"))
            }
        };
        {
            let mut t = self.table.lock();
            let entry = t.jobs.get_mut(&id).expect("a started job is in the table");
            entry.phase = Phase::Running(handle.canceller());
            if entry.cancel_requested {
                handle.cancel();
            }
        }
        tracing::info!(job = %id, engine_job = %handle.id(), class = class.as_str(), "job in the engine");
        let result = handle.wait();
        let outcome = self.outcome(&id, result, &request, &lease, &source);
        drop(lease);
        self.finish(&id, outcome);
    }

    fn outcome(
        &self,
        id: &str,
        result: cuzk_pipeline::JobResult,
        request: &PorepRequest,
        lease: &crate::srs::SrsLease,
        source: &TimedSource,
    ) -> Outcome {
        let (accepted_at, interrupted) = {
            let t = self.table.lock();
            let e = &t.jobs[id];
            (e.accepted_at, e.interrupted)
        };
        let total = accepted_at.elapsed();
        match result {
            Ok(out) => {
                let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
                let device = out
                    .partitions
                    .first()
                    .and_then(|p| self.devices.get(p.device))
                    .map_or_else(String::new, |d| d.name.clone());
                let synthesis: Duration = out.partitions.iter().map(|p| p.synthesis).sum();
                let gpu: Duration = out.partitions.iter().map(|p| p.timings.total()).sum();
                let queue_wait = source
                    .first_synthesis()
                    .map_or(total, |t| t.saturating_duration_since(accepted_at));
                match cuzk_filecoin::verify(
                    &request.c1,
                    &proof,
                    &lease.filecoin_vk,
                    Some(&request.identity),
                ) {
                    Ok(how) => {
                        tracing::info!(job = %id, verified = ?how, total_ms = millis(total), "proof verified");
                        Outcome::Done(Finished {
                            status: Status::Completed as i32,
                            proof_hex: hex::encode(&proof),
                            error_message: String::new(),
                            queue_wait_ms: millis(queue_wait),
                            srs_load_ms: millis(lease.load_time),
                            synthesis_ms: millis(synthesis),
                            gpu_compute_ms: millis(gpu),
                            total_ms: millis(total),
                            device,
                        })
                    }
                    Err(e) => {
                        tracing::error!(job = %id, error = %e, "a proof did not verify; not returned");
                        Outcome::Done(unproved(
                            Status::Failed,
                            format!("the proof did not pass verify_seal and is not returned: {e}"),
                            total,
                        ))
                    }
                }
            }
            Err(JobError::Cancelled) if interrupted => Outcome::Interrupted,
            Err(JobError::Cancelled) => Outcome::Done(unproved(
                Status::Cancelled,
                "cancelled by CancelProof".into(),
                total,
            )),
            Err(e) => {
                let mut message = e.to_string();
                let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&e);
                while let Some(s) = source {
                    message.push_str(&format!(": {s}"));
                    source = s.source();
                }
                tracing::error!(job = %id, error = %message, "job failed in the engine");
                Outcome::Done(unproved(Status::Failed, message, total))
            }
        }
    }

    /// Records a job's end: journal first, then the table, then the waiters.
    fn finish(&self, id: &str, outcome: Outcome) {
        if let Outcome::Done(result) = &outcome {
            if let Err(e) = self.journal.finish(id, result) {
                tracing::error!(job = %id, error = %e, "could not journal a result; it is kept in memory only");
            }
            let counter = match Status::try_from(result.status) {
                Ok(Status::Completed) => &self.stats.completed,
                Ok(Status::Cancelled) => &self.stats.cancelled,
                _ => &self.stats.failed,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            if result.status == Status::Completed as i32 {
                self.stats
                    .latency
                    .lock()
                    .observe(result.total_ms as f64 / 1000.0);
            }
        }
        let forgotten = {
            let mut t = self.table.lock();
            let Some(entry) = t.jobs.get_mut(id) else {
                return;
            };
            let (bytes, bulk) = (entry.bytes, entry.in_bulk_slot);
            entry.in_bulk_slot = false;
            entry.phase = match outcome {
                Outcome::Done(result) => Phase::Finished {
                    result: Arc::new(result),
                    at: Instant::now(),
                    delivered: false,
                },
                Outcome::Interrupted => Phase::Interrupted,
            };
            // `send` would drop the value while nobody waits; a later waiter must see it.
            entry.done.send_replace(true);
            t.unfinished -= 1;
            t.unfinished_bytes -= bytes;
            if bulk {
                t.bulk_in_engine -= 1;
            }
            t.finished.push_back(id.to_string());
            self.retain(&mut t)
        };
        for id in forgotten {
            let _ = self.journal.deliver(&id);
        }
        self.wake.notify_all();
    }

    /// Drops the oldest results beyond `max_results` (delivered ones first);
    /// returns the undelivered ones dropped (to be marked in the journal).
    fn retain(&self, t: &mut Table) -> Vec<String> {
        let mut forgotten = Vec::new();
        while t.finished.len() > self.settings.max_results {
            let delivered = t.finished.iter().position(|id| {
                matches!(
                    t.jobs.get(id).map(|e| &e.phase),
                    Some(Phase::Finished {
                        delivered: true,
                        ..
                    })
                )
            });
            let at = delivered.unwrap_or(0);
            let id = t.finished.remove(at).expect("in range");
            if delivered.is_none() {
                tracing::warn!(job = %id, max_results = self.settings.max_results,
                    "retention full: an undelivered result is dropped");
                self.stats.results_dropped.fetch_add(1, Ordering::Relaxed);
                forgotten.push(id.clone());
            }
            if let Some(e) = t.jobs.remove(&id) {
                t.by_request.remove(&e.accepted.request_id);
            }
        }
        forgotten
    }

    /// Drops delivered results older than the retention time.
    fn expire(&self) {
        let mut t = self.table.lock();
        let keep = self.settings.delivered_retention;
        let expired: Vec<String> = t
            .finished
            .iter()
            .filter(|id| {
                matches!(t.jobs.get(*id).map(|e| &e.phase),
                    Some(Phase::Finished { delivered: true, at, .. }) if at.elapsed() >= keep)
            })
            .cloned()
            .collect();
        for id in expired {
            t.finished.retain(|f| *f != id);
            if let Some(e) = t.jobs.remove(&id) {
                t.by_request.remove(&e.accepted.request_id);
            }
        }
    }

    /// `AwaitProof`: the job's result once it ends, or `TIMEOUT` after
    /// `timeout` (`None`: no limit).
    pub async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, RequestError> {
        let unknown = || {
            RequestError::NotFound(format!(
                "unknown job id {job_id:?}: not accepted by this daemon, or its result was delivered and has expired"
            ))
        };
        let mut done = {
            let t = self.table.lock();
            t.jobs.get(job_id).ok_or_else(unknown)?.done.subscribe()
        };
        let mut stopped = self.stopped.subscribe();
        let finished = async {
            let _ = done.wait_for(|d| *d).await;
        };
        let limited = async {
            match timeout {
                Some(t) => tokio::time::timeout(t, finished).await.is_ok(),
                None => {
                    finished.await;
                    true
                }
            }
        };
        let shutting_down = || {
            RequestError::Unavailable(format!(
                "the daemon is shutting down; job {job_id} stays in its journal and resumes when the daemon restarts"
            ))
        };
        tokio::select! {
            ended = limited => if !ended {
                return Ok(AwaitProofResponse {
                    job_id: job_id.into(),
                    status: Status::Timeout as i32,
                    ..Default::default()
                });
            },
            _ = stopped.wait_for(|s| *s) => return Err(shutting_down()),
        }
        let (result, first_delivery) = {
            let mut t = self.table.lock();
            let entry = t.jobs.get_mut(job_id).ok_or_else(unknown)?;
            match &mut entry.phase {
                Phase::Finished {
                    result, delivered, ..
                } => {
                    let first = !*delivered;
                    *delivered = true;
                    (Arc::clone(result), first)
                }
                Phase::Interrupted => return Err(shutting_down()),
                other => unreachable!("a job signalled done in phase {}", other.name()),
            }
        };
        if first_delivery {
            if let Err(e) = tokio::task::block_in_place(|| self.journal.deliver(job_id)) {
                tracing::error!(job = %job_id, error = %e, "journal");
            }
        }
        Ok(AwaitProofResponse {
            job_id: job_id.into(),
            status: result.status,
            proof: hex::decode(&result.proof_hex).unwrap_or_default(),
            error_message: result.error_message.clone(),
            queue_wait_ms: result.queue_wait_ms,
            srs_load_ms: result.srs_load_ms,
            synthesis_ms: result.synthesis_ms,
            gpu_compute_ms: result.gpu_compute_ms,
            total_ms: result.total_ms,
        })
    }

    /// `CancelProof`: `true` if the job had left the queue (it was being
    /// started or was running in the engine).
    pub fn cancel(&self, job_id: &str) -> Result<bool, RequestError> {
        let mut t = self.table.lock();
        let entry = t
            .jobs
            .get_mut(job_id)
            .ok_or_else(|| RequestError::NotFound(format!("unknown job id {job_id:?}")))?;
        match &entry.phase {
            Phase::Accepting => {
                entry.cancel_requested = true;
                Ok(false)
            }
            Phase::Queued(_) => {
                let key = (Reverse(entry.priority as i32), entry.seq);
                entry.phase = Phase::Starting;
                t.queue.remove(&key);
                drop(t);
                tracing::info!(job = %job_id, "queued job cancelled");
                self.finish(job_id, Outcome::Done(self.cancelled(job_id)));
                Ok(false)
            }
            Phase::Starting => {
                entry.cancel_requested = true;
                Ok(true)
            }
            Phase::Running(canceller) => {
                tracing::info!(job = %job_id, "running job cancelled");
                canceller.cancel();
                Ok(true)
            }
            Phase::Finished { .. } | Phase::Interrupted => Ok(false),
        }
    }

    /// SIGTERM: takes no new jobs, lets running ones finish for `grace`,
    /// cancels the rest (they stay unfinished in the journal), answers every
    /// waiting client, and stops the dispatcher.
    pub fn drain(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let running = |t: &Table| {
            t.jobs
                .values()
                .filter(|e| {
                    matches!(
                        e.phase,
                        Phase::Starting | Phase::Running(_) | Phase::Accepting
                    )
                })
                .count()
        };
        let mut t = self.table.lock();
        t.draining = true;
        tracing::info!(
            running = running(&t),
            queued = t.queue.len(),
            grace_s = grace.as_secs(),
            "draining: no new jobs; running jobs get the grace period"
        );
        while running(&t) > 0 && Instant::now() < deadline {
            self.wake.wait_until(
                &mut t,
                deadline.min(Instant::now() + Duration::from_millis(200)),
            );
        }
        let left = running(&t);
        if left > 0 {
            tracing::warn!(
                jobs = left,
                "grace period over: cancelling running jobs (they resume at the next start)"
            );
            for e in t.jobs.values_mut() {
                match &e.phase {
                    Phase::Running(c) => {
                        e.interrupted = true;
                        c.cancel();
                    }
                    Phase::Starting | Phase::Accepting => {
                        e.interrupted = true;
                        e.cancel_requested = true;
                    }
                    _ => {}
                }
            }
            let stop_by = Instant::now() + Duration::from_secs(30);
            while running(&t) > 0 && Instant::now() < stop_by {
                self.wake
                    .wait_until(&mut t, Instant::now() + Duration::from_millis(100));
            }
        }
        t.stopping = true;
        drop(t);
        self.wake.notify_all();
        self.stopped.send_replace(true);
    }

    /// Counts of the table.
    pub fn counts(&self) -> TableCounts {
        let t = self.table.lock();
        let mut c = TableCounts {
            unfinished_bytes: t.unfinished_bytes,
            ..Default::default()
        };
        for e in t.jobs.values() {
            match e.phase {
                Phase::Accepting | Phase::Queued(_) | Phase::Starting => c.queued += 1,
                Phase::Running(_) => c.running += 1,
                Phase::Finished { .. } | Phase::Interrupted => c.finished += 1,
            }
        }
        c
    }

    /// The oldest running job's id, for `GPUStatus.current_job_id`.
    pub fn oldest_running(&self) -> Option<String> {
        let t = self.table.lock();
        t.jobs
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Running(_)))
            .min_by_key(|(_, e)| e.seq)
            .map(|(id, _)| id.clone())
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

/// The engine's class for a wire priority (unspecified is NORMAL).
pub fn engine_class(priority: Priority) -> cuzk_pipeline::Priority {
    match priority {
        Priority::Critical => cuzk_pipeline::Priority::Critical,
        Priority::High => cuzk_pipeline::Priority::High,
        Priority::Normal | Priority::Unspecified => cuzk_pipeline::Priority::Normal,
        Priority::Low => cuzk_pipeline::Priority::Low,
    }
}

/// Checks what every submission needs whatever its kind, and refuses kinds
/// not proved yet by name; returns the priority (unspecified is NORMAL).
pub fn check_envelope(req: &SubmitProofRequest) -> Result<Priority, RequestError> {
    if req.request_id.is_empty() {
        return Err(RequestError::InvalidArgument(
            "request_id is empty: it is the idempotency key (Curio sends porep-<miner>-<sector>)"
                .into(),
        ));
    }
    let kind = ProofKind::try_from(req.proof_kind).map_err(|_| {
        RequestError::InvalidArgument(format!("unknown proof_kind {}", req.proof_kind))
    })?;
    match kind {
        ProofKind::PorepSealCommit => {}
        ProofKind::Unspecified => {
            return Err(RequestError::InvalidArgument(
                "proof_kind is PROOF_KIND_UNSPECIFIED: say which proof to make".into(),
            ))
        }
        other => {
            return Err(RequestError::Unimplemented(format!(
                "proof kind {} is not supported by this daemon yet (only POREP_SEAL_COMMIT is)",
                other.as_str_name()
            )))
        }
    }
    match Priority::try_from(req.priority) {
        Ok(Priority::Unspecified) => Ok(Priority::Normal),
        Ok(p) => Ok(p),
        Err(_) => Err(RequestError::InvalidArgument(format!(
            "unknown priority {}",
            req.priority
        ))),
    }
}
