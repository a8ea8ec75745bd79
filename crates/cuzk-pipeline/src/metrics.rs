//! Live counters of an engine and their [`MetricsSnapshot`]: per stage the
//! workers, how many are busy, what is queued and the busy fraction since
//! start; the memory account; job outcomes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::job::Stage;

/// Busy time and activity of one stage's workers.
#[derive(Debug)]
pub struct StageMeter {
    stage: Stage,
    workers: usize,
    busy_now: AtomicUsize,
    busy_ns: AtomicU64,
    completed: AtomicU64,
}

impl StageMeter {
    /// A meter for `workers` workers of `stage`.
    pub fn new(stage: Stage, workers: usize) -> Self {
        StageMeter {
            stage,
            workers,
            busy_now: AtomicUsize::new(0),
            busy_ns: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        }
    }

    /// Marks one worker busy until the guard drops.
    pub fn busy(&self) -> BusyGuard<'_> {
        self.busy_now.fetch_add(1, Ordering::Relaxed);
        BusyGuard {
            meter: self,
            since: Instant::now(),
        }
    }

    /// The stage's numbers over `uptime`, with `queued` items waiting.
    pub fn snapshot(&self, uptime: Duration, queued: usize) -> StageMetrics {
        let busy = Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed));
        let capacity = uptime.as_secs_f64() * self.workers as f64;
        StageMetrics {
            stage: self.stage,
            workers: self.workers,
            busy_workers: self.busy_now.load(Ordering::Relaxed),
            queued,
            completed: self.completed.load(Ordering::Relaxed),
            busy,
            busy_fraction: if capacity > 0.0 {
                (busy.as_secs_f64() / capacity).min(1.0)
            } else {
                0.0
            },
        }
    }
}

/// One worker's busy interval; counted when dropped.
#[derive(Debug)]
pub struct BusyGuard<'a> {
    meter: &'a StageMeter,
    since: Instant,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        let ns = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.meter.busy_ns.fetch_add(ns, Ordering::Relaxed);
        self.meter.completed.fetch_add(1, Ordering::Relaxed);
        self.meter.busy_now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many jobs ended which way.
#[derive(Debug, Default)]
pub struct JobCounters {
    /// Accepted by `submit`.
    pub submitted: AtomicU64,
    /// Resolved with proofs.
    pub completed: AtomicU64,
    /// Resolved with a partition's error.
    pub failed: AtomicU64,
    /// Cancelled.
    pub cancelled: AtomicU64,
    /// Abandoned at shutdown.
    pub shut_down: AtomicU64,
}

impl JobCounters {
    /// The counts now.
    pub fn counts(&self) -> JobCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        JobCounts {
            submitted: get(&self.submitted),
            completed: get(&self.completed),
            failed: get(&self.failed),
            cancelled: get(&self.cancelled),
            shut_down: get(&self.shut_down),
        }
    }
}

/// Every meter of an engine: one per stage, and the job counters.
#[derive(Debug)]
pub struct Meters {
    started: Instant,
    stages: [StageMeter; 3],
    /// Job outcomes.
    pub jobs: std::sync::Arc<JobCounters>,
}

impl Meters {
    /// Meters for an engine with this many workers per stage (synthesis,
    /// prove, epilogue).
    pub fn new(workers: [usize; 3]) -> Self {
        Meters {
            started: Instant::now(),
            stages: [
                StageMeter::new(Stage::Synthesis, workers[0]),
                StageMeter::new(Stage::Prove, workers[1]),
                StageMeter::new(Stage::Epilogue, workers[2]),
            ],
            jobs: Default::default(),
        }
    }

    /// The meter of `stage`.
    pub fn stage(&self, stage: Stage) -> &StageMeter {
        &self.stages[stage.index()]
    }

    /// A snapshot, given what is queued in front of each stage (synthesis,
    /// prove, epilogue) and the memory account.
    pub fn snapshot(&self, queued: [usize; 3], memory: MemoryMetrics) -> MetricsSnapshot {
        let uptime = self.started.elapsed();
        MetricsSnapshot {
            uptime,
            stages: self
                .stages
                .iter()
                .zip(queued)
                .map(|(m, q)| m.snapshot(uptime, q))
                .collect(),
            memory,
            jobs: self.jobs.counts(),
        }
    }
}

/// One stage in a [`MetricsSnapshot`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StageMetrics {
    /// Which stage.
    pub stage: Stage,
    /// Its workers (all devices' prover workers together for `Prove`).
    pub workers: usize,
    /// Workers busy right now.
    pub busy_workers: usize,
    /// Partitions waiting in front of it.
    pub queued: usize,
    /// Work items finished (busy intervals closed).
    pub completed: u64,
    /// Summed busy time of finished intervals.
    pub busy: Duration,
    /// `busy / (workers × uptime)`, in `[0, 1]`.
    pub busy_fraction: f64,
}

/// The host-memory account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryMetrics {
    /// The configured budget, bytes.
    pub budget: u64,
    /// Reserved now.
    pub reserved: u64,
    /// The most ever reserved at once (never above `budget`).
    pub peak_reserved: u64,
    /// Lent out of the budget to what shares the host (proving keys):
    /// `reserved + lent` never exceeds `budget`.
    pub lent: u64,
    /// Bytes of loans waiting for admitted partitions to leave room.
    pub lend_waiting: u64,
    /// Partitions admitted and not yet finished.
    pub partitions_in_flight: usize,
    /// Partitions waiting for admission.
    pub partitions_queued: usize,
}

/// Job outcome counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct JobCounts {
    /// Accepted.
    pub submitted: u64,
    /// With proofs.
    pub completed: u64,
    /// With an error.
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Abandoned at shutdown.
    pub shut_down: u64,
}

/// An engine's state at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Since the engine started.
    pub uptime: Duration,
    /// Synthesis, prove, epilogue, in that order.
    pub stages: Vec<StageMetrics>,
    /// The memory account.
    pub memory: MemoryMetrics,
    /// Job outcomes.
    pub jobs: JobCounts,
}

impl MetricsSnapshot {
    /// The numbers of `stage`.
    pub fn stage(&self, stage: Stage) -> &StageMetrics {
        &self.stages[stage.index()]
    }
}
