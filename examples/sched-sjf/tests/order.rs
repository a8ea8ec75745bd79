//! The order this scheduler adds to the contract: within a priority class the
//! shortest job starts first; a short job never overtakes a more urgent class.
//!
//! Deterministic as the shared priority check is: a gate holds the worker on
//! a blocker job until every competing job is queued, so the order the jobs
//! start in is the scheduler's choice and nothing else.

use std::sync::Arc;

use cuzk_pipeline::conformance::config;
use cuzk_pipeline::testing::{demo_job, demo_source, verify_demo_output, Gate, GatedSource};
use cuzk_pipeline::{EventKind, JobId, Priority, Scheduler};
use cuzk_sched_sjf::ShortestJobFirst;

/// One competing job: its class and its circuit's size (2^log_size).
struct Queued {
    priority: Priority,
    log_size: u32,
}

/// Submits `jobs` in that order behind a gated blocker, opens the gate, and
/// checks that their first partitions started synthesis in `expected` order
/// (indices into `jobs`), and that every proof verifies.
fn check(jobs: &[Queued], expected: &[usize]) {
    let sched = ShortestJobFirst::start(config(1, 1)).expect("the engine starts");
    let gate = Gate::new();
    let blocker = sched
        .submit(demo_job(
            10,
            Arc::new(GatedSource::new(demo_source(10, 1, 1), gate.clone(), 0)),
            1,
        ))
        .expect("accepted");
    gate.wait_held();
    let handles: Vec<_> = jobs
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let seed = 10 + 10 * i as u64;
            let job = demo_job(q.log_size, demo_source(q.log_size, seed, 1), seed)
                .with_priority(q.priority);
            (q.log_size, seed, sched.submit(job).expect("accepted"))
        })
        .collect();
    let ids: Vec<JobId> = handles.iter().map(|(_, _, h)| h.id()).collect();
    gate.open();
    blocker.wait().expect("the blocker proves");
    for (log_size, seed, h) in handles {
        let out = h.wait().expect("every job proves");
        assert!(verify_demo_output(&out, log_size, seed).iter().all(|v| *v));
    }
    let tl = sched.timeline();
    let started: Vec<_> = expected
        .iter()
        .map(|&job| {
            tl.first(ids[job], 0, EventKind::SynthesisStart)
                .unwrap_or_else(|| panic!("job {job}: no synthesis start"))
        })
        .collect();
    for (w, pair) in started.windows(2).enumerate() {
        let (a, b) = (expected[w], expected[w + 1]);
        assert!(
            pair[0] < pair[1],
            "job {a} ({}, 2^{}) must start before job {b} ({}, 2^{})",
            jobs[a].priority,
            jobs[a].log_size,
            jobs[b].priority,
            jobs[b].log_size,
        );
    }
    sched.wait_idle();
    assert_eq!(sched.metrics().memory.reserved, 0, "drained");
    sched.shutdown();
}

#[test]
fn the_shortest_job_of_the_most_urgent_class_starts_first() {
    use Priority::{High, Low, Normal};
    let q = |priority, log_size| Queued { priority, log_size };
    check(
        &[
            q(Normal, 11), // 0: long
            q(Low, 10),    // 1: short, but the least urgent class
            q(Normal, 10), // 2: short: overtakes 0
            q(High, 11),   // 3: long, but the most urgent class here
            q(Normal, 10), // 4: as short as 2, submitted after it
        ],
        &[3, 2, 4, 0, 1],
    );
}
