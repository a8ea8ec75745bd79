//! A submitted job's shared state ([`JobState`]) and the user's side of it
//! ([`JobHandle`]).
//!
//! Every scheduler keeps jobs the same way: partitions report to their
//! `JobState` (a proof, or the first error), the job resolves once (all
//! proofs, the first failure, a cancellation or a shutdown), and every later
//! report is discarded. A stage checks [`JobState::is_finished`] before it
//! starts work, so a cancelled or failed job's queued partitions are dropped
//! and its running ones finish and are thrown away.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use cuzk_groth16::prover::check_key_shape;
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::{Proof, ProvingKey};
use cuzk_synth::CircuitShape;
use parking_lot::{Condvar, Mutex};

use crate::job::{
    Job, JobError, JobId, JobOutput, JobResult, PartitionError, PartitionReport, PartitionSource,
    Priority,
};
use crate::memory::{PartitionFootprint, Provers};
use crate::metrics::JobCounters;
use crate::scheduler::SubmitError;

/// One job inside an engine: what its partitions need (source, key, `r`,
/// `s`) and where they report.
pub struct JobState {
    id: JobId,
    label: String,
    priority: Priority,
    source: Arc<dyn PartitionSource>,
    key: Arc<ProvingKey>,
    verifying_key: Option<Arc<PreparedVerifyingKey>>,
    shape: CircuitShape,
    footprint: PartitionFootprint,
    /// `(r, s)` per partition.
    randomness: Vec<(Fr, Fr)>,
    submitted: Instant,
    /// Set once the job is resolved; read lock-free by every stage.
    finished: AtomicBool,
    slot: Mutex<Slot>,
    resolved: Condvar,
    counters: Arc<JobCounters>,
}

struct Slot {
    outputs: Vec<Option<(Proof, PartitionReport)>>,
    remaining: usize,
    /// The outcome, until [`JobHandle::wait`] takes it (`finished` stays set).
    result: Option<JobResult>,
}

impl JobState {
    /// Checks a job and readies it for an engine: it must have partitions,
    /// its key must fit its shape (`check_key_shape`), and one partition's
    /// [`PartitionFootprint`] on the engine's `provers` must fit
    /// `memory_budget`. Draws `r` and `s` (see [`crate::Randomness`]) and, when
    /// `verify` is on and the job brought none, prepares the verifying key.
    pub fn prepare(
        id: JobId,
        job: Job,
        verify: bool,
        memory_budget: u64,
        provers: &Provers,
        counters: Arc<JobCounters>,
    ) -> Result<Arc<JobState>, SubmitError> {
        let partitions = job.source.num_partitions();
        if partitions == 0 {
            return Err(SubmitError::NoPartitions { label: job.label });
        }
        let shape = job.source.shape();
        check_key_shape(&job.key, &shape).map_err(|source| SubmitError::KeyMismatch {
            label: job.label.clone(),
            source,
        })?;
        if let Some((device, source)) = provers.device_too_small(&shape) {
            return Err(SubmitError::DeviceTooSmall {
                label: job.label,
                device,
                source,
            });
        }
        let footprint = match job.source.compact_others() {
            Some(others) => provers.footprint_compact(&shape, others),
            None => provers.footprint_of(&shape, job.source.defers_abc()),
        };
        if footprint.total() > memory_budget {
            return Err(SubmitError::BudgetTooSmall {
                label: job.label,
                needed: footprint.total(),
                witness: footprint.witness,
                working_set: footprint.working_set,
                budget: memory_budget,
            });
        }
        let randomness = job.randomness.draw(partitions);
        let verifying_key = match job.verifying_key {
            Some(pvk) => Some(pvk),
            None if verify => Some(Arc::new(PreparedVerifyingKey::new(&job.key.vk))),
            None => None,
        };
        counters.submitted.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(JobState {
            id,
            label: job.label,
            priority: job.priority,
            source: job.source,
            key: job.key,
            verifying_key,
            shape,
            footprint,
            randomness,
            submitted: Instant::now(),
            finished: AtomicBool::new(false),
            slot: Mutex::new(Slot {
                outputs: (0..partitions).map(|_| None).collect(),
                remaining: partitions,
                result: None,
            }),
            resolved: Condvar::new(),
            counters,
        }))
    }

    /// The job's number.
    pub fn id(&self) -> JobId {
        self.id
    }

    /// The job's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The job's priority class.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// Where its partitions come from.
    pub fn source(&self) -> &dyn PartitionSource {
        &*self.source
    }

    /// The proving key.
    pub fn key(&self) -> &ProvingKey {
        &self.key
    }

    /// The job's key as shared (for a backend's [`Backend::prepare_key`]).
    ///
    /// [`Backend::prepare_key`]: cuzk_groth16::prover::Backend::prepare_key
    pub fn shared_key(&self) -> &Arc<ProvingKey> {
        &self.key
    }

    /// The prepared verifying key (present when verification is on).
    pub fn verifying_key(&self) -> Option<&PreparedVerifyingKey> {
        self.verifying_key.as_deref()
    }

    /// The shape of every partition.
    pub fn shape(&self) -> &CircuitShape {
        &self.shape
    }

    /// What one partition reserves of the host-memory budget.
    pub fn footprint(&self) -> PartitionFootprint {
        self.footprint
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.randomness.len()
    }

    /// `(r, s)` of partition `index`.
    pub fn randomness(&self, index: usize) -> (Fr, Fr) {
        self.randomness[index]
    }

    /// When it was submitted.
    pub fn submitted_at(&self) -> Instant {
        self.submitted
    }

    /// Whether the job is resolved (done, failed, cancelled or shut down):
    /// work on its partitions is to be dropped.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Records partition `index`'s proof; resolves the job when it was the
    /// last. A report for a resolved job is discarded (returns `false`).
    pub fn complete_partition(&self, index: usize, proof: Proof, report: PartitionReport) -> bool {
        let mut slot = self.slot.lock();
        if self.is_finished() || slot.outputs[index].is_some() {
            return false;
        }
        slot.outputs[index] = Some((proof, report));
        slot.remaining -= 1;
        if slot.remaining == 0 {
            let (proofs, partitions) = slot
                .outputs
                .iter_mut()
                .map(|o| o.take().expect("every partition reported"))
                .unzip();
            self.resolve(
                &mut slot,
                Ok(JobOutput {
                    id: self.id,
                    label: self.label.clone(),
                    proofs,
                    partitions,
                    latency: self.submitted.elapsed(),
                }),
            );
        }
        true
    }

    /// Fails the job with partition `index`'s error (the first failure wins;
    /// later ones are logged and dropped).
    pub fn fail(&self, index: usize, error: PartitionError) {
        let mut slot = self.slot.lock();
        if self.is_finished() {
            tracing::warn!(job = %self.id, label = %self.label, partition = index,
                error = %crate::ErrorChain(&error), "partition of an already finished job failed; dropped");
            return;
        }
        tracing::error!(job = %self.id, label = %self.label, partition = index,
            error = %crate::ErrorChain(&error), "partition failed; failing its job");
        self.resolve(
            &mut slot,
            Err(JobError::Partition {
                partition: index,
                source: error,
            }),
        );
    }

    /// Cancels the job unless it already finished; `true` if this call did.
    pub fn cancel(&self) -> bool {
        let mut slot = self.slot.lock();
        if self.is_finished() {
            return false;
        }
        tracing::info!(job = %self.id, label = %self.label, "job cancelled");
        self.resolve(&mut slot, Err(JobError::Cancelled));
        true
    }

    /// Resolves an unfinished job as [`JobError::Shutdown`].
    pub fn abandon(&self) {
        let mut slot = self.slot.lock();
        if !self.is_finished() {
            self.resolve(&mut slot, Err(JobError::Shutdown));
        }
    }

    /// The user's handle on this job.
    pub fn handle(self: &Arc<Self>) -> JobHandle {
        JobHandle {
            state: Arc::clone(self),
        }
    }

    fn resolve(&self, slot: &mut Slot, result: JobResult) {
        let counter = match &result {
            Ok(_) => &self.counters.completed,
            Err(JobError::Cancelled) => &self.counters.cancelled,
            Err(JobError::Partition { .. }) => &self.counters.failed,
            Err(JobError::Shutdown) => &self.counters.shut_down,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        slot.result = Some(result);
        self.finished.store(true, Ordering::Release);
        self.resolved.notify_all();
    }
}

impl std::fmt::Debug for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobState")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("priority", &self.priority)
            .field("partitions", &self.partitions())
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

/// The submitter's side of a job: wait for it, or cancel it.
///
/// Dropping the handle does not cancel the job.
#[derive(Debug)]
pub struct JobHandle {
    state: Arc<JobState>,
}

impl JobHandle {
    /// The job's number.
    pub fn id(&self) -> JobId {
        self.state.id
    }

    /// The job's label.
    pub fn label(&self) -> &str {
        &self.state.label
    }

    /// Whether the job is resolved.
    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }

    /// Partitions proved so far (and verified, when verification is on), and
    /// the job's partition count: for progress bars.
    pub fn progress(&self) -> (usize, usize) {
        let slot = self.state.slot.lock();
        let total = slot.outputs.len();
        (total - slot.remaining, total)
    }

    /// Cancels the job: partitions not yet started are dropped, running ones
    /// finish and are discarded. `false` if it had already finished.
    pub fn cancel(&self) -> bool {
        self.state.cancel()
    }

    /// Something another thread can cancel the job with.
    pub fn canceller(&self) -> JobCanceller {
        JobCanceller(Arc::clone(&self.state))
    }

    /// Blocks until the job is resolved, for at most `timeout`; `true` if it is.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut slot = self.state.slot.lock();
        while !self.state.is_finished() {
            if self
                .state
                .resolved
                .wait_until(&mut slot, deadline)
                .timed_out()
            {
                return self.state.is_finished();
            }
        }
        true
    }

    /// Blocks until the job is resolved and returns its outcome.
    pub fn wait(self) -> JobResult {
        let mut slot = self.state.slot.lock();
        loop {
            if let Some(result) = slot.result.take() {
                return result;
            }
            self.state.resolved.wait(&mut slot);
        }
    }
}

/// Cancels one job from anywhere (see [`JobHandle::cancel`]).
#[derive(Debug, Clone)]
pub struct JobCanceller(Arc<JobState>);

impl JobCanceller {
    /// Cancels the job; `false` if it had already finished.
    pub fn cancel(&self) -> bool {
        self.0.cancel()
    }
}
