//! The priority part of the conformance suite (feature `conformance`): the
//! four classes start in order, FIFO within a class, whatever order they were
//! submitted in. Kept beside [`crate::conformance`] so the classes' contract
//! reads in one place; the
//! [`priority_conformance_tests!`](crate::priority_conformance_tests) macro
//! turns the checks into `#[test]`s for one scheduler type.
//!
//! Deterministic: a gate holds the only synthesis worker on a blocker job
//! until every competing job is queued, so the order the worker takes them
//! in is the intake's order and nothing else.

use std::sync::Arc;

use crate::conformance::config;
use crate::job::{JobId, Priority};
use crate::scheduler::Scheduler;
use crate::testing::{demo_job, demo_source, verify_demo_output, Gate, GatedSource};
use crate::timeline::EventKind;

/// One job of the order check: its class and partition count.
struct Queued {
    priority: Priority,
    partitions: usize,
}

/// Submits `jobs` (in that order) behind a gated blocker on one synthesis
/// worker, opens the gate, and checks that partitions started synthesis in
/// `expected` order: (index into `jobs`, partition).
fn check_start_order<S: Scheduler>(jobs: &[Queued], expected: &[(usize, usize)]) {
    let sched = S::start(config(1, 1)).expect("the engine starts");
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
            let job =
                demo_job(10, demo_source(10, seed, q.partitions), seed).with_priority(q.priority);
            (seed, sched.submit(job).expect("accepted"))
        })
        .collect();
    let ids: Vec<JobId> = handles.iter().map(|(_, h)| h.id()).collect();
    gate.open();
    blocker.wait().expect("the blocker proves");
    for (seed, h) in handles {
        let out = h.wait().expect("every class proves");
        assert!(verify_demo_output(&out, 10, seed).iter().all(|v| *v));
    }
    let tl = sched.timeline();
    let started: Vec<_> = expected
        .iter()
        .map(|&(job, p)| {
            tl.first(ids[job], p, EventKind::SynthesisStart)
                .unwrap_or_else(|| panic!("job {job} p{p}: no synthesis start"))
        })
        .collect();
    for (w, pair) in started.windows(2).enumerate() {
        let (a, b) = (expected[w], expected[w + 1]);
        assert!(
            pair[0] < pair[1],
            "job {} ({}) p{} must start before job {} ({}) p{}",
            a.0,
            jobs[a.0].priority,
            a.1,
            b.0,
            jobs[b.0].priority,
            b.1
        );
    }
    sched.wait_idle();
    assert_eq!(sched.metrics().memory.reserved, 0, "drained");
    sched.shutdown();
}

/// Submitted least urgent first, two jobs per class for FIFO, a two-partition
/// job for index order: they start CRITICAL, HIGH, NORMAL, LOW, each class in
/// submission order, each job's partitions in index order.
pub fn classes_start_in_order_fifo_within_a_class<S: Scheduler>() {
    use Priority::{Critical, High, Low, Normal};
    let q = |priority, partitions| Queued {
        priority,
        partitions,
    };
    check_start_order::<S>(
        &[
            q(Low, 1),      // 0
            q(Normal, 2),   // 1
            q(High, 1),     // 2
            q(Critical, 1), // 3
            q(Normal, 1),   // 4
            q(High, 1),     // 5
            q(Critical, 1), // 6
            q(Low, 1),      // 7
        ],
        &[
            (3, 0),
            (6, 0),
            (2, 0),
            (5, 0),
            (1, 0),
            (1, 1),
            (4, 0),
            (0, 0),
            (7, 0),
        ],
    );
}

/// Expands to one `#[test]` per priority check for the scheduler type
/// `$sched`.
#[macro_export]
macro_rules! priority_conformance_tests {
    ($sched:ty) => {
        $crate::priority_conformance_tests!(@tests $sched;
            classes_start_in_order_fifo_within_a_class,
        );
    };
    (@tests $sched:ty; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::priority_conformance::$check::<$sched>();
            }
        )*
    };
}
