#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

pub mod admission;
pub mod chain;
pub mod channel;
pub mod config;
pub mod host;
pub mod intake;
pub mod job;
pub mod memory;
pub mod metrics;
pub mod scheduler;
pub mod stage;
pub mod state;
pub mod timeline;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod priority_conformance;
#[cfg(feature = "conformance")]
pub mod testing;

pub use admission::{Admission, AdmissionError, AdmissionTicket, AlwaysAdmit, CountingAdmission};
pub use chain::ErrorChain;
pub use channel::{priority_channel, PriorityReceiver, PrioritySender};
pub use config::{Device, DeviceWorker, EngineConfig};
pub use intake::{Admitted, HostLoan, HostReserve, Intake, Reservation};
pub use job::{
    DemoSource, Job, JobError, JobId, JobOutput, JobResult, PartitionError, PartitionReport,
    PartitionSource, Priority, Randomness, SourceError, Stage, Verification,
};
pub use memory::{witness_bytes, HostBudget, PartitionFootprint, Provers};
pub use metrics::{JobCounts, MemoryMetrics, Meters, MetricsSnapshot, StageMetrics};
pub use scheduler::{Scheduler, StartError, SubmitError};
pub use stage::{ProvedPartition, StageContext, SynthesizedPartition};
pub use state::{JobCanceller, JobHandle, JobState};
pub use timeline::{EventKind, Timeline, TimelineEvent, TIMELINE_TARGET};
