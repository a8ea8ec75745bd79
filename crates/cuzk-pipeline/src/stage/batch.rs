//! The prove step for several partitions of one key in one backend call
//! (`Backend::msm_sums_batch`): which partitions may share a call, and the
//! step itself, beside the single partition's
//! ([`SynthesizedPartition::prove`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cuzk_groth16::prover::{check_key_shape, StageTimings};
use cuzk_synth::Synthesized;

use super::{catch_panic, ProvedPartition, Run, StageContext, SynthesizedPartition};
use crate::config::DeviceWorker;
use crate::job::{PartitionError, Priority, Stage};
use crate::timeline::EventKind;

impl SynthesizedPartition {
    /// How many partitions this one may be proved with in one backend call
    /// on `on` (its backend's
    /// [`Backend::batch_room`](cuzk_groth16::prover::Backend::batch_room)):
    /// 1 for a CRITICAL partition (a deadline never waits on a batch's other
    /// members), a finished job's, or where the backend gains nothing.
    pub fn batch_room(&self, on: &DeviceWorker) -> usize {
        if self.job.priority() == Priority::Critical || self.job.is_finished() {
            return 1;
        }
        let room = catch_unwind(AssertUnwindSafe(|| {
            on.backend.batch_room(self.job.key(), &self.witness)
        }));
        room.unwrap_or(1).max(1)
    }

    /// Whether `other` may be proved in one batch with this one: a
    /// partition of the same key and circuit, not CRITICAL.
    pub fn batches_with(&self, other: &SynthesizedPartition) -> bool {
        other.job.priority() != Priority::Critical
            && Arc::ptr_eq(self.job.shared_key(), other.job.shared_key())
            && self.witness.shape() == other.witness.shape()
            && self.witness.deferred == other.witness.deferred
    }

    /// The prove step for several partitions of one key in one backend
    /// call
    /// ([`Backend::msm_sums_batch`](cuzk_groth16::prover::Backend::msm_sums_batch):
    /// a GPU streaming the key passes it once for all of them), under one
    /// admission ticket for the batch ([`crate::Admission::admit_batch`]).
    /// Members of finished jobs are dropped first; where the device admits
    /// no such batch, or the batch fails as a whole, each member is proved
    /// on its own ([`SynthesizedPartition::prove`]: its own fallback or
    /// failure; the TIMELINE then shows the failed batch's span and the
    /// member's own). Each proved member reports the batch's size.
    pub fn prove_batch(
        batch: Vec<SynthesizedPartition>,
        on: &DeviceWorker,
        ctx: &StageContext,
        worker: &str,
    ) -> Vec<ProvedPartition> {
        let live = live_members(batch, ctx, worker);
        let n = live.len();
        if n < 2 {
            return one_by_one(live, on, ctx, worker);
        }
        let ticket = match live[0].reserve_batch(on, n) {
            Some(t) => t,
            // No batch of n here, or a refusal each member meets on its own.
            None => return one_by_one(live, on, ctx, worker),
        };
        Self::prove_batch_admitted(live, ticket, on, ctx, worker)
    }

    /// The device's room for a batch of up to `members` partitions like
    /// this one ([`crate::Admission::admit_batch`], after the key is
    /// prepared), waiting while the device proves others: an engine may
    /// reserve it before the batch forms, so that the partitions queued
    /// while it waited join ([`SynthesizedPartition::prove_batch_admitted`]
    /// under the ticket, any size from 2 to `members`). `None` where the
    /// device admits no such batch, or the key or admission refused (each
    /// member then meets that on its own).
    pub fn reserve_batch(
        &self,
        on: &DeviceWorker,
        members: usize,
    ) -> Option<crate::AdmissionTicket> {
        let ticket = catch_panic(Stage::Prove, || {
            on.backend
                .prepare_key(self.job.shared_key())
                .map_err(PartitionError::from)?;
            Ok(on
                .admission
                .admit_batch(self.job.shape(), &self.witness, members))
        });
        match ticket {
            Ok(Some(Ok(t))) => Some(t),
            _ => None,
        }
    }

    /// [`SynthesizedPartition::prove_batch`] under `ticket`, the device's
    /// room for a batch of at least this many ([`SynthesizedPartition::reserve_batch`]).
    /// Members of finished jobs are dropped first; fewer than two left,
    /// the ticket is given back and each is proved on its own.
    pub fn prove_batch_admitted(
        batch: Vec<SynthesizedPartition>,
        ticket: crate::AdmissionTicket,
        on: &DeviceWorker,
        ctx: &StageContext,
        worker: &str,
    ) -> Vec<ProvedPartition> {
        let live = live_members(batch, ctx, worker);
        let n = live.len();
        if n < 2 {
            drop(ticket);
            return one_by_one(live, on, ctx, worker);
        }
        let job = Arc::clone(&live[0].job);
        let members: Vec<_> = live.iter().map(|p| (p.job.id(), p.partition)).collect();
        ctx.timeline
            .emit_together(&members, EventKind::ProveStart, worker);
        let mut timings = vec![StageTimings::default(); n];
        let result = {
            let _busy = ctx.meters.stage(Stage::Prove).busy();
            let ws: Vec<&Synthesized> = live.iter().map(|p| &p.witness).collect();
            catch_panic(Stage::Prove, || {
                for w in &ws {
                    check_key_shape(job.key(), &w.shape())?;
                }
                Ok(on
                    .backend
                    .msm_sums_batch(job.key(), &ws, &mut timings, ticket.plan())?)
            })
        };
        let sums = match result {
            Ok(sums) if sums.len() == n => sums,
            other => {
                let why = match other {
                    Err(e) => crate::ErrorChain(&e).to_string(),
                    Ok(s) => format!("{} sums for {n} partitions", s.len()),
                };
                tracing::warn!(job = %job.id(), members = n, error = %why,
                    "a batch failed as a whole; proving its partitions one by one");
                for p in &live {
                    ctx.timeline
                        .emit(p.job.id(), p.partition, EventKind::ProveEnd, worker);
                }
                drop(ticket);
                return one_by_one(live, on, ctx, worker);
            }
        };
        let plan = on.backend.last_run();
        // The backend may have proved them one at a time (its pool of
        // pinned buffers not ready): the report says so.
        let together = on.backend.last_batch().unwrap_or(n);
        let crossed = on.backend.last_crossed();
        ctx.timeline
            .emit_prove_end(&members, worker, together, crossed);
        drop(ticket);
        live.into_iter()
            .zip(sums)
            .zip(timings)
            .map(|((p, sums), timings)| {
                let run = Run {
                    backend: on.backend.name(),
                    device: on.device,
                    plan: plan.clone(),
                    grown: 0,
                    batch: together,
                    crossed,
                };
                p.proved(ctx, sums, timings, run)
            })
            .collect()
    }
}

/// `batch` without the members of finished jobs (their reservations given
/// back).
fn live_members(
    batch: Vec<SynthesizedPartition>,
    ctx: &StageContext,
    worker: &str,
) -> Vec<SynthesizedPartition> {
    let mut live = Vec::with_capacity(batch.len());
    for p in batch {
        match p.job.is_finished() {
            true => ctx.discard(&p.job, p.partition, worker, p.reservation),
            false => live.push(p),
        }
    }
    live
}

/// Each of `live` proved on its own ([`SynthesizedPartition::prove`]).
fn one_by_one(
    live: Vec<SynthesizedPartition>,
    on: &DeviceWorker,
    ctx: &StageContext,
    worker: &str,
) -> Vec<ProvedPartition> {
    live.into_iter()
        .filter_map(|p| p.prove(on, ctx, worker))
        .collect()
}
