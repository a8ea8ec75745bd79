//! Taking jobs in: `SubmitProof` (checked, journaled, queued) and the
//! journal's replay at start; the envelope check every kind shares.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;

use super::dispatch::engine_class;
use super::{digest, new_job_id, unix_ms, unproved, Daemon, Entry, Outcome, Phase};
use crate::error::RequestError;
use crate::journal::{Accepted, Finished, Replayed};
use crate::kinds::{check_request, default_priority, kind_index};
use crate::proto::{
    await_proof_response::Status, Priority, ProofKind, SubmitProofRequest, SubmitProofResponse,
};

/// A job restored from the journal whose request is checked again by the
/// recovery thread ([`Daemon::recover`]).
pub(super) struct ToRecover {
    id: String,
    request: Vec<u8>,
}

impl Daemon {
    /// Puts what the journal held in the table at once: results for their
    /// clients, unfinished jobs as `Recovering` (known to `SubmitProof`,
    /// `AwaitProof`, `CancelProof` and the status while their requests are
    /// checked again); returns those to check, in acceptance order.
    pub(super) fn restore(&self, replayed: Vec<Replayed>) -> Vec<ToRecover> {
        let now_ms = unix_ms();
        let mut pending = Vec::new();
        for r in replayed {
            let (accepted, phase, request) = match r {
                Replayed::Undelivered { accepted, result } => {
                    let phase = Phase::Finished {
                        result: Arc::new(result),
                        at: Instant::now(),
                        delivered: false,
                    };
                    (accepted, phase, None)
                }
                Replayed::Unfinished { accepted, request } => {
                    (accepted, Phase::Recovering, Some(request))
                }
                Replayed::Recovered {
                    job_id,
                    request,
                    accepted_unix_ms,
                } => match self.adopt(&job_id, &request, accepted_unix_ms) {
                    Ok(accepted) => (accepted, Phase::Recovering, Some(request)),
                    Err(why) => {
                        tracing::error!(job = %job_id, "journal: a request file without its record cannot be recovered ({why}); the file is left alone");
                        continue;
                    }
                },
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
                Phase::Recovering => t.unfinished += 1,
                _ => t.finished.push_back(id.clone()),
            }
            let finished = matches!(phase, Phase::Finished { .. });
            t.by_request.insert(accepted.request_id.clone(), id.clone());
            t.jobs.insert(
                id.clone(),
                Entry {
                    accepted,
                    accepted_at,
                    seq,
                    bytes: 0,
                    priority,
                    phase,
                    cancel_requested: false,
                    interrupted: false,
                    in_bulk_slot: false,
                    key_asked: None,
                    circuit: None,
                    partitions: None,
                    done: tokio::sync::watch::channel(finished).0,
                },
            );
            if let Some(request) = request {
                pending.push(ToRecover { id, request });
            }
        }
        pending
    }

    /// The `accepted` record of a job whose record the journal lost, rebuilt
    /// from its request (the same digest and priority `SubmitProof` gives)
    /// and journaled again.
    fn adopt(
        &self,
        job_id: &str,
        request: &[u8],
        accepted_unix_ms: u64,
    ) -> Result<Accepted, String> {
        let req = SubmitProofRequest::decode(request)
            .map_err(|e| format!("the request file does not decode: {e}"))?;
        let priority = check_internal_envelope(&req).map_err(|e| e.to_string())?;
        let accepted = Accepted {
            job_id: job_id.to_string(),
            request_id: req.request_id.clone(),
            digest: digest(&req),
            proof_kind: req.proof_kind,
            priority: priority as i32,
            accepted_unix_ms,
        };
        self.journal.adopt(&accepted).map_err(|e| e.to_string())?;
        Ok(accepted)
    }

    /// The recovery thread: checks each restored job's request again (as
    /// `SubmitProof` does) and queues it, or fails it naming why; stops
    /// early when the daemon drains (the rest stay in the journal).
    pub(super) fn recover(&self, pending: Vec<ToRecover>) {
        let total = pending.len();
        for (n, ToRecover { id, request }) in pending.into_iter().enumerate() {
            let priority = {
                let t = self.table.lock();
                if t.draining || t.stopping {
                    tracing::info!(
                        left = total - n,
                        "journal recovery stopped by the drain; the rest resume at the next start"
                    );
                    return;
                }
                match t.jobs.get(&id) {
                    Some(e) if matches!(e.phase, Phase::Recovering) => e.priority,
                    _ => continue,
                }
            };
            let checked = SubmitProofRequest::decode(&request[..])
                .map_err(|e| {
                    RequestError::Internal(format!("the journaled request does not decode: {e}"))
                })
                .and_then(|req| {
                    let c = check_request(&req, &self.params)?;
                    if c.needs_engine() {
                        self.srs
                            .check_fits(c.circuit(), engine_class(priority))
                            .map_err(|e| RequestError::ResourceExhausted(e.to_string()))?;
                    }
                    Ok((c, vanilla_bytes(&req)))
                });
            drop(request);
            let mut t = self.table.lock();
            let Some(entry) = t.jobs.get_mut(&id) else {
                continue;
            };
            if !matches!(entry.phase, Phase::Recovering) {
                // Cancelled meanwhile.
                continue;
            }
            match checked {
                Ok((c, bytes)) => {
                    entry.phase = Phase::Queued(Arc::new(c));
                    entry.bytes = bytes;
                    let key = (Reverse(entry.priority as i32), entry.seq);
                    t.unfinished_bytes += bytes;
                    t.queue.insert(key, id);
                    drop(t);
                    self.wake.notify_all();
                }
                Err(e) => {
                    entry.phase = Phase::Starting;
                    let took = entry.accepted_at.elapsed();
                    drop(t);
                    let result = unproved(
                        Status::Failed,
                        format!("after a restart the journaled request was refused: {e}"),
                        took,
                    );
                    tracing::error!(job = %id, error = %e, "a journaled job is refused after the restart");
                    self.finish(&id, Outcome::Done(result));
                }
            }
        }
        if total > 0 {
            tracing::info!(jobs = total, "journal recovery done");
        }
    }

    /// `SubmitProof` for a request whose envelope (kind, priority) was
    /// checked: blocking (it decodes and checks the vanilla proofs and
    /// fsyncs the journal).
    pub(crate) fn submit(
        &self,
        req: SubmitProofRequest,
        priority: Priority,
    ) -> Result<SubmitProofResponse, RequestError> {
        let digest = digest(&req);
        let bytes = vanilla_bytes(&req);
        let mut superseded = None;
        let (known, room) = {
            let mut t = self.table.lock();
            if t.draining {
                return Err(RequestError::Unavailable(
                    "the daemon is shutting down and takes no new jobs".into(),
                ));
            }
            let known = t.existing(&req.request_id, &digest, &mut superseded);
            let room = match known {
                Ok(None) => t.check_room(&self.settings, bytes, priority),
                _ => Ok(()),
            };
            (known, room)
        };
        self.journal_superseded(superseded.take());
        room?;
        if let Some(known) = known? {
            return Ok(known);
        }
        // Memory for checking it (a C1 is parsed into a JSON tree many times
        // its size), held until the check is done: a burst of large
        // requests beyond the budget is refused, never left to the OOM killer.
        let _checking = self.checking.reserve(&req)?;
        let checked = check_request(&req, &self.params)?;
        // A job that could never be admitted is refused now, with the
        // numbers, rather than left waiting in the engine for ever.
        if checked.needs_engine() {
            self.srs
                .check_fits(checked.circuit(), engine_class(priority))
                .map_err(|e| RequestError::ResourceExhausted(e.to_string()))?;
        }
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
            let known = t.existing(&req.request_id, &digest, &mut superseded);
            if let Ok(Some(known)) = known {
                drop(t);
                self.journal_superseded(superseded);
                return Ok(known);
            }
            known?;
            if let Err(e) = t.check_room(&self.settings, bytes, priority) {
                drop(t);
                self.journal_superseded(superseded);
                return Err(e);
            }
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
                    circuit: None,
                    partitions: None,
                    done: tokio::sync::watch::channel(false).0,
                },
            );
        }
        if let Err(e) = self.journal.accept(&accepted, &req.encode_to_vec()) {
            tracing::error!(job = %job_id, error = %e, "could not journal an accepted job; refused");
            let mut t = self.table.lock();
            t.forget(&job_id);
            t.unfinished -= 1;
            t.unfinished_bytes -= bytes;
            return Err(RequestError::Internal(format!(
                "the job could not be journaled, so it was not accepted: {e}"
            )));
        }
        self.journal_superseded(superseded);
        drop(req);
        self.stats.accepted[kind_index(accepted.proof_kind)].fetch_add(1, Ordering::Relaxed);
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

    /// Marks delivered the result of a job a retry took the request id of
    /// (so it is not kept across a restart for a client that moved on).
    fn journal_superseded(&self, superseded: Option<String>) {
        if let Some(old) = superseded {
            if let Err(e) = self.journal.deliver(&old) {
                tracing::error!(job = %old, error = %e, "journal");
            }
        }
    }

    pub(super) fn cancelled(&self, job_id: &str) -> Finished {
        let total = self
            .table
            .lock()
            .jobs
            .get(job_id)
            .map_or(Duration::ZERO, |e| e.accepted_at.elapsed());
        unproved(Status::Cancelled, "cancelled by CancelProof".into(), total)
    }
}

/// The longest request id taken: ids live in the job table and the journal.
pub(crate) const MAX_REQUEST_ID_BYTES: usize = 256;

/// Checks what every submission needs whatever its kind; returns the
/// priority (unspecified: the kind's default, [`default_priority`]).
pub(crate) fn check_envelope(req: &SubmitProofRequest) -> Result<Priority, RequestError> {
    check_envelope_of(req, false)
}

/// [`check_envelope`] of a request that may also be one the daemon made
/// itself (an aggregation job, [`crate::aggregate::AGGREGATE_KIND`], a
/// kind `SubmitProof` refuses).
pub(crate) fn check_internal_envelope(req: &SubmitProofRequest) -> Result<Priority, RequestError> {
    check_envelope_of(req, true)
}

fn check_envelope_of(req: &SubmitProofRequest, internal: bool) -> Result<Priority, RequestError> {
    if req.request_id.is_empty() {
        return Err(RequestError::InvalidArgument(
            "request_id is empty: it is the idempotency key (Curio sends porep-<miner>-<sector>)"
                .into(),
        ));
    }
    if req.request_id.len() > MAX_REQUEST_ID_BYTES {
        return Err(RequestError::InvalidArgument(format!(
            "request_id is {} bytes, more than {MAX_REQUEST_ID_BYTES} (Curio's are under 100: ps-porep-<miner>-<sector>-<task>)",
            req.request_id.len()
        )));
    }
    let kind = if internal && req.proof_kind == crate::aggregate::AGGREGATE_KIND {
        // Bulk work, as PoRep.
        ProofKind::PorepSealCommit
    } else {
        ProofKind::try_from(req.proof_kind).map_err(|_| {
            RequestError::InvalidArgument(format!("unknown proof_kind {}", req.proof_kind))
        })?
    };
    if kind == ProofKind::Unspecified {
        return Err(RequestError::InvalidArgument(
            "proof_kind is PROOF_KIND_UNSPECIFIED: say which proof to make".into(),
        ));
    }
    match Priority::try_from(req.priority) {
        Ok(Priority::Unspecified) => Ok(default_priority(kind)),
        Ok(p) => Ok(p),
        Err(_) => Err(RequestError::InvalidArgument(format!(
            "unknown priority {}",
            req.priority
        ))),
    }
}

/// The vanilla-proof bytes a request holds (the queue's memory bound).
fn vanilla_bytes(req: &SubmitProofRequest) -> u64 {
    req.vanilla_proof.len() as u64
        + req
            .vanilla_proofs
            .iter()
            .map(|v| v.len() as u64)
            .sum::<u64>()
}
