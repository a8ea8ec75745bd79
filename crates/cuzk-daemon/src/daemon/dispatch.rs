//! The dispatcher thread (the queue's first job whose key is HOT goes to
//! the engine; a cold key loads meanwhile) and the job threads (circuits,
//! engine, the kind's Filecoin verifier, the result).

use std::cmp::Reverse;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_pipeline::{Job, JobError, JobHandle, Scheduler};

use super::{millis, unproved, Daemon, Outcome, Phase, Started, Table};
use crate::journal::Finished;
use crate::kinds::{Request, TimedSource};
use crate::proto::{await_proof_response::Status, Priority};
use crate::srs::Tier;

/// How often waits for the host budget are logged while they last.
const WAIT_LOG_EVERY: Duration = Duration::from_secs(30);

/// The message of a caught panic.
pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// How often a job thread reads its job's progress in the engine.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

impl Daemon {
    /// The dispatcher, watched: a panic in it is logged and it starts again
    /// (the table is behind a mutex that does not poison; the job it was
    /// starting, if any, is failed by its own guard).
    pub(super) fn watch_dispatcher(self: Arc<Self>) {
        loop {
            let d = Arc::clone(&self);
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.dispatch_loop())) {
                Ok(()) => return,
                Err(p) => {
                    tracing::error!(panic = %panic_message(&*p), "the dispatcher panicked; restarting it");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    pub(super) fn dispatch_loop(self: Arc<Self>) {
        let mut last_tick = Instant::now();
        let mut last_wait_log = Instant::now();
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
                        .spawn(move || daemon.run_guarded(started))
                        .expect("spawning a job thread");
                }
                None if last_tick.elapsed() >= Duration::from_secs(1) => {
                    last_tick = Instant::now();
                    self.srs.tick();
                    self.expire();
                    if last_wait_log.elapsed() >= WAIT_LOG_EVERY {
                        last_wait_log = Instant::now();
                        self.log_host_waits();
                    }
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
    pub(super) fn pick(&self, t: &mut Table) -> (Option<Started>, Vec<(String, String)>) {
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
            let lease = if !request.needs_engine() {
                None
            } else {
                match self.srs.try_acquire(request.circuit(), asked) {
                    Ok(Some(lease)) => Some(lease),
                    Ok(None) => continue,
                    Err(e) => {
                        t.queue.remove(&key);
                        entry.phase = Phase::Starting;
                        // SrsError's messages carry their causes.
                        failed.push((id, format!("the proving key: {e}")));
                        continue;
                    }
                }
            };
            t.queue.remove(&key);
            entry.phase = Phase::Starting;
            entry.circuit = Some(request.circuit());
            entry.in_bulk_slot = !latency;
            if !latency {
                t.bulk_in_engine += 1;
            }
            return (Some(Started { id, request, lease }), failed);
        }
        (None, failed)
    }

    /// Says, at info level, what partitions and key loads waiting for the
    /// engine's host budget wait for, and what holds it (called every
    /// [`WAIT_LOG_EVERY`] while anything waits).
    fn log_host_waits(&self) {
        let m = self.engine.metrics().memory;
        if m.partitions_queued == 0 && m.lend_waiting == 0 {
            return;
        }
        // The engine does not say whose partitions wait: the largest
        // partition among the jobs running in it bounds what the next needs.
        let circuits: Vec<cuzk_filecoin::Circuit> = {
            let t = self.table.lock();
            t.jobs
                .values()
                .filter(|e| matches!(e.phase, Phase::Running(_)))
                .filter_map(|e| e.circuit)
                .collect()
        };
        let running = circuits.len();
        let next_needs = circuits
            .into_iter()
            .filter_map(|c| self.srs.needs(c))
            .map(|n| n.partition.total())
            .max()
            .unwrap_or(0);
        let hot: Vec<String> = self
            .srs
            .statuses()
            .iter()
            .filter(|s| s.tier == Tier::Hot)
            .map(|s| {
                format!(
                    "{} {} ({} job(s))",
                    s.circuit_id,
                    cuzk_gpu::human(s.size_bytes),
                    s.ref_count
                )
            })
            .collect();
        let free = m.budget.saturating_sub(m.reserved + m.lent);
        tracing::info!(
            partitions_waiting = m.partitions_queued,
            jobs_in_engine = running,
            partition_needs_at_most = next_needs,
            key_loans_waiting = m.lend_waiting,
            free,
            budget = m.budget,
            held_by_partitions = m.reserved,
            partitions_in_flight = m.partitions_in_flight,
            lent_to_hot_keys = m.lent,
            hot_keys = %hot.join(", "),
            "waiting for host budget: {} partition(s) wait for admission (each needs at most {}, {} free of {}; partitions in flight hold {}, HOT keys {}), key loads wait for {}",
            m.partitions_queued,
            cuzk_gpu::human(next_needs),
            cuzk_gpu::human(free),
            cuzk_gpu::human(m.budget),
            cuzk_gpu::human(m.reserved),
            cuzk_gpu::human(m.lent),
            cuzk_gpu::human(m.lend_waiting),
        );
    }

    pub(super) fn fail_before_engine(&self, id: &str, message: String) {
        let total = self
            .table
            .lock()
            .jobs
            .get(id)
            .map_or(Duration::ZERO, |e| e.accepted_at.elapsed());
        tracing::error!(job = %id, error = %message, "job failed before the engine");
        self.finish(id, Outcome::Done(unproved(Status::Failed, message, total)));
    }

    /// A job thread, guarded: a panic anywhere in it (building circuits,
    /// the verifier, the Filecoin crates) fails that job with the panic's
    /// message, gives its key lease and engine slot back, and leaves every
    /// other job alone.
    pub(super) fn run_guarded(self: Arc<Self>, started: Started) {
        let id = started.id.clone();
        let d = Arc::clone(&self);
        self.guarded(&id, move || d.run_job(started));
    }

    /// Runs `body` for job `id`; if it panics, fails the job ([`Daemon::fail_panicked`]).
    pub(super) fn guarded(&self, id: &str, body: impl FnOnce()) {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            self.fail_panicked(id, &panic_message(&*p));
        }
    }

    /// Fails a job whose thread panicked, unless it had already finished.
    pub(super) fn fail_panicked(&self, id: &str, message: &str) {
        self.stats
            .job_panics
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (open, total) = {
            let t = self.table.lock();
            t.jobs.get(id).map_or((false, Duration::ZERO), |e| {
                (
                    !matches!(e.phase, Phase::Finished { .. } | Phase::Interrupted),
                    e.accepted_at.elapsed(),
                )
            })
        };
        tracing::error!(job = %id, panic = %message, "the job's thread panicked; the job fails");
        if open {
            self.finish(
                id,
                Outcome::Done(unproved(
                    Status::Failed,
                    format!("internal error, the job was stopped: {message}"),
                    total,
                )),
            );
        }
    }

    /// A job thread: builds the job's circuits, hands it to the engine, waits
    /// for its proofs and records the outcome.
    pub(super) fn run_job(self: Arc<Self>, started: Started) {
        let Started { id, request, lease } = started;
        let Some(lease) = lease else {
            let outcome = self.run_aggregate(&id, &request);
            return self.finish(&id, outcome);
        };
        let source =
            match request.source(&lease.key, &lease.synthesis, &self.settings.post_aux_pool) {
                Ok(s) => s,
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
            entry.phase = Phase::Running(Some(handle.canceller()));
            if entry.cancel_requested {
                handle.cancel();
            }
        }
        tracing::info!(job = %id, engine_job = %handle.id(), class = class.as_str(), "job in the engine");
        // Partitions proved, for `GET /status` and the metrics: every kind
        // counts its partitions the same way (a non-interactive PoRep has
        // 13 or 126 of them).
        let kind = {
            let t = self.table.lock();
            crate::kinds::kind_index(t.jobs[&id].accepted.proof_kind)
        };
        let mut counted = 0;
        loop {
            let finished = handle.wait_timeout(PROGRESS_EVERY);
            let (proved, total) = handle.progress();
            if proved > counted {
                self.stats.partitions_proved[kind].fetch_add(
                    (proved - counted) as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
                counted = proved;
            }
            if let Some(e) = self.table.lock().jobs.get_mut(&id) {
                e.partitions = Some((proved, total));
            }
            if finished {
                break;
            }
        }
        let result = handle.wait();
        let outcome = self.outcome(&id, result, &request, &lease, &source);
        drop(lease);
        self.finish(&id, outcome);
    }

    /// An aggregation job, on its own thread (no engine, no key): the
    /// aggregate made, then checked with
    /// `verify_aggregate_seal_commit_proofs` before it is kept.
    fn run_aggregate(&self, id: &str, request: &Request) -> Outcome {
        let Request::Aggregate(r) = request else {
            unreachable!("only an aggregation job runs without a key");
        };
        let accepted_at = {
            let mut t = self.table.lock();
            let e = t.jobs.get_mut(id).expect("a started job is in the table");
            // Not cancellable once started: it is one call of filecoin-proofs.
            e.phase = Phase::Running(None);
            e.accepted_at
        };
        let what = crate::aggregate::describe(r.sectors.len(), r.proof_type);
        tracing::info!(job = %id, "aggregating {what}");
        let started = Instant::now();
        let failed = |message: String| {
            tracing::error!(job = %id, error = %message, "aggregation job failed");
            Outcome::Done(unproved(Status::Failed, message, accepted_at.elapsed()))
        };
        let proof = match r.aggregate() {
            Ok(p) => p,
            Err(e) => return failed(format!("aggregating {what}: {e}")),
        };
        let made = started.elapsed();
        {
            let t = self.table.lock();
            if let Some(e) = t.jobs.get(id) {
                if e.interrupted {
                    return Outcome::Interrupted;
                }
                if e.cancel_requested {
                    return Outcome::Done(unproved(
                        Status::Cancelled,
                        "cancelled by CancelProof".into(),
                        accepted_at.elapsed(),
                    ));
                }
            }
        }
        if let Err(e) = r.verify(&proof) {
            return failed(format!(
                "the aggregate did not pass verify_aggregate_seal_commit_proofs and is not returned: {e}"
            ));
        }
        let total = accepted_at.elapsed();
        tracing::info!(job = %id, bytes = proof.len(), aggregation_ms = millis(made),
            total_ms = millis(total), "aggregate made and verified");
        Outcome::Done(Finished {
            status: Status::Completed as i32,
            proof_hex: hex::encode(&proof),
            error_message: String::new(),
            queue_wait_ms: millis(started.saturating_duration_since(accepted_at)),
            srs_load_ms: 0,
            synthesis_ms: 0,
            gpu_compute_ms: millis(made),
            total_ms: millis(total),
            device: "cpu".into(),
        })
    }

    pub(super) fn outcome(
        &self,
        id: &str,
        result: cuzk_pipeline::JobResult,
        request: &Request,
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
                let partition_proofs: Vec<u8> =
                    out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
                let aggregating = Instant::now();
                let proof = match request.output(partition_proofs) {
                    Ok(proof) => proof,
                    Err(e) => {
                        tracing::error!(job = %id, error = %e, "aggregating the partition proofs failed");
                        return Outcome::Done(unproved(
                            Status::Failed,
                            format!("aggregating the {} partition proofs: {e}", out.proofs.len()),
                            accepted_at.elapsed(),
                        ));
                    }
                };
                if request.is_non_interactive() {
                    tracing::info!(job = %id, partitions = out.proofs.len(), bytes = proof.len(),
                        took_ms = millis(aggregating.elapsed()),
                        "partition proofs aggregated (SnarkPack v2, filecoin-proofs' aggregate_seal_commit_proofs)");
                }
                let total = accepted_at.elapsed();
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
                match request.verify(&proof, lease) {
                    Ok(how) => {
                        tracing::info!(job = %id, verified = %how, total_ms = millis(total), "proof verified");
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
                            format!(
                                "the proof did not pass {} and is not returned: {e}",
                                request.verifier()
                            ),
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
}

/// The engine's class for a wire priority (unspecified is NORMAL).
pub(crate) fn engine_class(priority: Priority) -> cuzk_pipeline::Priority {
    match priority {
        Priority::Critical => cuzk_pipeline::Priority::Critical,
        Priority::High => cuzk_pipeline::Priority::High,
        Priority::Normal | Priority::Unspecified => cuzk_pipeline::Priority::Normal,
        Priority::Low => cuzk_pipeline::Priority::Low,
    }
}
