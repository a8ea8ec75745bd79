//! The [`Scheduler`] trait: what every scheduler crate implements, and what
//! the conformance suite checks.

use std::sync::Arc;

use cuzk_groth16::prover::ProveError;

use crate::config::EngineConfig;
use crate::job::Job;
use crate::metrics::MetricsSnapshot;
use crate::state::JobHandle;
use crate::timeline::Timeline;
use cuzk_arena::human as format_bytes;

/// An engine that takes jobs and returns proofs.
///
/// The contract, beyond the signatures (the conformance suite checks each):
///
/// * `submit` refuses a job whose key does not fit its shape, or one
///   partition of which does not fit the memory budget, before any work
///   (use [`crate::JobState::prepare`]).
/// * Partitions start in [`crate::Priority`] order at every free slot (FIFO
///   within a class); the sum of live [`crate::Reservation`]s never exceeds
///   the budget, and partitions of classes below
///   [`EngineConfig::reserve_class`] never take the
///   [`EngineConfig::critical_reserve`] (use [`crate::Intake`]).
/// * A partition's failure or panic fails its job only; the engine carries
///   on. A cancelled job's queued partitions never start; running ones finish
///   and are discarded.
/// * With verification on, every returned proof verified (use the stage
///   steps in [`crate::stage`], which also emit the TIMELINE).
/// * When `wait_idle` returns, nothing is queued or running and the memory
///   account is back to zero.
pub trait Scheduler: Send + Sync {
    /// Starts the engine's threads. Refuses a configuration it cannot run
    /// ([`EngineConfig::validate`]).
    fn start(config: EngineConfig) -> Result<Self, StartError>
    where
        Self: Sized;

    /// A short name ("pipelined", "serial").
    fn name(&self) -> &'static str;

    /// Queues a job.
    fn submit(&self, job: Job) -> Result<JobHandle, SubmitError>;

    /// Queue depths, busy fractions, memory reserved, job counts.
    fn metrics(&self) -> MetricsSnapshot;

    /// The timeline the engine emits to.
    fn timeline(&self) -> &Arc<Timeline>;

    /// Blocks until no partition is queued or running.
    fn wait_idle(&self);

    /// Finishes every queued job, then stops the threads.
    fn shutdown(self)
    where
        Self: Sized;
}

/// Why an engine refused to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// No proving device configured.
    #[error("no proving device configured")]
    NoDevices,
    /// A count that must be positive is zero.
    #[error("{what} must be at least 1")]
    Zero {
        /// Which setting.
        what: &'static str,
    },
    /// A device with no workers.
    #[error("device {device} has no workers")]
    DeviceWithoutWorkers {
        /// The device.
        device: String,
    },
    /// The host-memory reserve leaves nothing for the other classes.
    #[error(
        "critical_reserve of {reserve} bytes ({}) must be less than the host-memory budget of {budget} bytes ({})",
        format_bytes(*.reserve), format_bytes(*.budget)
    )]
    ReserveTooLarge {
        /// The configured reserve.
        reserve: u64,
        /// The budget.
        budget: u64,
    },
    /// The memory budget cannot hold one partition of the largest shape.
    #[error(
        "host-memory budget of {budget} bytes ({}) cannot hold one partition: it needs {needed} bytes ({}) = witness {witness} + working set {working_set}",
        format_bytes(*.budget), format_bytes(*.needed)
    )]
    BudgetTooSmall {
        /// The configured budget.
        budget: u64,
        /// One partition's footprint.
        needed: u64,
        /// Its witness part.
        witness: u64,
        /// Its working-set part.
        working_set: u64,
    },
}

/// Why a job was refused at submission.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The job has no partitions.
    #[error("job `{label}` has no partitions")]
    NoPartitions {
        /// The job's label.
        label: String,
    },
    /// The key was made for another circuit.
    #[error("job `{label}` refused")]
    KeyMismatch {
        /// The job's label.
        label: String,
        /// The first mismatch.
        #[source]
        source: ProveError,
    },
    /// One partition needs more memory than the whole budget.
    #[error(
        "job `{label}` refused: one partition needs {needed} bytes ({}) of host memory = witness {witness} + working set {working_set}, but the budget is {budget} bytes ({})",
        format_bytes(*.needed), format_bytes(*.budget)
    )]
    BudgetTooSmall {
        /// The job's label.
        label: String,
        /// One partition's footprint.
        needed: u64,
        /// Its witness part.
        witness: u64,
        /// Its working-set part.
        working_set: u64,
        /// The engine's budget.
        budget: u64,
    },
    /// A device can never hold one partition (its VRAM budget is below the
    /// smallest plan): refused before any synthesis.
    #[error("job `{label}` refused: a partition can never fit on device {device}")]
    DeviceTooSmall {
        /// The job's label.
        label: String,
        /// The device's name.
        device: String,
        /// Why (the plan's numbers).
        #[source]
        source: crate::AdmissionError,
    },
    /// The engine no longer takes jobs.
    #[error("the engine is shut down")]
    ShutDown,
}
