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

impl Daemon {
    pub(super) fn restore(&self, replayed: Vec<Replayed>) {
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
                            let c = check_request(&req, &self.params)?;
                            let priority =
                                Priority::try_from(accepted.priority).unwrap_or(Priority::Normal);
                            self.srs
                                .check_fits(c.circuit(), engine_class(priority))
                                .map_err(|e| RequestError::ResourceExhausted(e.to_string()))?;
                            Ok((c, vanilla_bytes(&req)))
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
                    circuit: None,
                    done: tokio::sync::watch::channel(finished).0,
                },
            );
        }
    }

    /// `SubmitProof` for a request whose envelope (kind, priority) was
    /// checked: blocking (it decodes and checks the vanilla proofs and
    /// fsyncs the journal).
    pub fn submit(
        &self,
        req: SubmitProofRequest,
        priority: Priority,
    ) -> Result<SubmitProofResponse, RequestError> {
        let digest = digest(&req);
        let bytes = vanilla_bytes(&req);
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
        // A job that could never be admitted is refused now, with the
        // numbers, rather than left waiting in the engine for ever.
        self.srs
            .check_fits(checked.circuit(), engine_class(priority))
            .map_err(|e| RequestError::ResourceExhausted(e.to_string()))?;
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
                    circuit: None,
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

/// Checks what every submission needs whatever its kind; returns the
/// priority (unspecified: the kind's default, [`default_priority`]).
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
