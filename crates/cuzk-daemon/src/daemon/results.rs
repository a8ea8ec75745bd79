//! How jobs end and what is kept of them: the result recorded (journal
//! first), retention of results until delivered, `AwaitProof`,
//! `CancelProof`, and the SIGTERM drain.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Daemon, Outcome, Phase, Table};
use crate::error::RequestError;
use crate::kinds::{kind_index, KINDS};
use crate::proto::{await_proof_response::Status, AwaitProofResponse};

impl Daemon {
    /// Records a job's end: journal first, then the table, then the waiters.
    pub(super) fn finish(&self, id: &str, outcome: Outcome) {
        if let Outcome::Done(result) = &outcome {
            if let Err(e) = self.journal.finish(id, result) {
                tracing::error!(job = %id, error = %e, "could not journal a result; it is kept in memory only");
            }
            let k = self
                .table
                .lock()
                .jobs
                .get(id)
                .map_or(0, |e| kind_index(e.accepted.proof_kind));
            let counter = match Status::try_from(result.status) {
                Ok(Status::Completed) => &self.stats.completed[k],
                Ok(Status::Cancelled) => &self.stats.cancelled[k],
                _ => &self.stats.failed[k],
            };
            counter.fetch_add(1, Ordering::Relaxed);
            if result.status == Status::Completed as i32 {
                self.stats
                    .latency
                    .observe(KINDS[k], result.total_ms as f64 / 1000.0);
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
    pub(super) fn retain(&self, t: &mut Table) -> Vec<String> {
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
            t.forget(&id);
        }
        forgotten
    }

    /// Drops delivered results older than the retention time.
    pub(super) fn expire(&self) {
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
            t.forget(&id);
        }
    }

    /// `AwaitProof`: the job's result once it ends, or `TIMEOUT` after
    /// `timeout` (`None`: no limit).
    pub(crate) async fn await_job(
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
        // The drain stops the daemon as soon as its last running job ends,
        // so both may be ready at once: a job that finished is delivered
        // even then (the table says which), never answered "shutting down".
        let stopping = tokio::select! {
            ended = limited => {
                if !ended {
                    return Ok(AwaitProofResponse {
                        job_id: job_id.into(),
                        status: Status::Timeout as i32,
                        ..Default::default()
                    });
                }
                false
            }
            _ = stopped.wait_for(|s| *s) => true,
        };
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
                _ if stopping => return Err(shutting_down()),
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
    pub(crate) fn cancel(&self, job_id: &str) -> Result<bool, RequestError> {
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
            Phase::Queued(_) | Phase::Recovering => {
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
            Phase::Running(Some(canceller)) => {
                tracing::info!(job = %job_id, "running job cancelled");
                canceller.cancel();
                Ok(true)
            }
            Phase::Running(None) => {
                // An aggregation job: its result is dropped when the call ends.
                tracing::info!(job = %job_id, "running aggregation job cancelled");
                entry.cancel_requested = true;
                Ok(true)
            }
            Phase::Finished { .. } | Phase::Interrupted => Ok(false),
        }
    }

    /// SIGTERM: takes no new jobs, lets running ones finish for `grace`,
    /// cancels the rest (they stay unfinished in the journal), answers every
    /// waiting client, and stops the dispatcher.
    pub(crate) fn drain(&self, grace: Duration) {
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
                    Phase::Running(Some(c)) => {
                        e.interrupted = true;
                        c.cancel();
                    }
                    Phase::Running(None) => {
                        e.interrupted = true;
                        e.cancel_requested = true;
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
}
