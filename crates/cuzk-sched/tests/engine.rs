//! What only a pipelined engine can show: priorities at the provers' queue,
//! backpressure through the bounded channels, several devices, shutdown
//! with work queued. Outcomes are deterministic: gates hold a stage until
//! the state under test is reached (waited for, never timed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_pipeline::conformance::config;
use cuzk_pipeline::testing::{
    demo_inputs, demo_job, demo_source, verify_demo_output, BackendFault, FaultyBackend, Gate,
    GatedSource,
};
use cuzk_pipeline::{
    CountingAdmission, Device, EventKind, JobError, JobId, JobOutput, JobResult, Priority,
    Scheduler, Stage,
};
use cuzk_sched::Engine;

/// Waits (polling) until `done` holds; fails after a minute.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never reached: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn ok(result: JobResult) -> JobOutput {
    result.unwrap_or_else(|e| panic!("expected proofs: {e}"))
}

fn queued_for_prover(engine: &Engine, job: JobId) -> bool {
    engine
        .timeline()
        .first(job, 0, EventKind::QueuedForProver)
        .is_some()
}

#[test]
fn a_latency_partition_overtakes_bulk_ones_queued_for_the_prover() {
    let backend = FaultyBackend::new();
    backend.inject(demo_inputs(10, 1, 0), BackendFault::Gate);
    let mut cfg = config(2, 1);
    cfg.devices = vec![Device::new("gated-0", backend.clone(), 1)];
    let engine = Engine::start(cfg).unwrap();

    let blocker = engine
        .submit(demo_job(10, demo_source(10, 1, 1), 1))
        .unwrap();
    backend.gate().wait_held();
    let bulk = engine
        .submit(demo_job(10, demo_source(10, 2, 1), 2))
        .unwrap();
    let urgent = engine
        .submit(demo_job(10, demo_source(10, 3, 1), 3).with_priority(Priority::Latency))
        .unwrap();
    let (bulk_id, urgent_id) = (bulk.id(), urgent.id());
    // Both wait for the one prover; the bulk one was queued first or not.
    wait_until("both queued for the prover", || {
        queued_for_prover(&engine, bulk_id) && queued_for_prover(&engine, urgent_id)
    });
    backend.gate().open();
    for h in [blocker, bulk, urgent] {
        ok(h.wait());
    }
    let tl = engine.timeline();
    assert!(
        tl.first(urgent_id, 0, EventKind::ProveStart) < tl.first(bulk_id, 0, EventKind::ProveStart)
    );
    engine.shutdown();
}

#[test]
fn full_channels_hold_synthesis_back_and_metrics_show_it() {
    let backend = FaultyBackend::new();
    backend.inject(demo_inputs(10, 1, 0), BackendFault::Gate);
    let mut cfg = config(1, 1);
    cfg.devices = vec![Device::new("gated-0", backend.clone(), 1)];
    cfg.prover_queue = 1;
    let engine = Engine::start(cfg).unwrap();

    let mut handles = vec![engine
        .submit(demo_job(10, demo_source(10, 1, 1), 1))
        .unwrap()];
    backend.gate().wait_held();
    for seed in [2, 3, 4] {
        handles.push(
            engine
                .submit(demo_job(10, demo_source(10, seed, 1), seed))
                .unwrap(),
        );
    }
    // The prover holds job 1; job 2 fills the bulk lane (bound 1); job 3 is
    // synthesized and its worker blocks on the full lane; job 4 stays in the
    // intake although the budget and the in-flight limit would admit it.
    wait_until("the pipeline backs up", || {
        let m = engine.metrics();
        m.memory.partitions_in_flight == 3
            && m.memory.partitions_queued == 1
            && m.stage(Stage::Prove).queued == 1
            && m.stage(Stage::Prove).busy_workers == 1
            && m.stage(Stage::Synthesis).completed == 3
    });
    let m = engine.metrics();
    assert_eq!(m.stage(Stage::Synthesis).queued, 1);
    assert_eq!(m.stage(Stage::Synthesis).busy_workers, 0);
    assert!(m.memory.reserved > 0 && m.memory.reserved <= m.memory.budget);
    backend.gate().open();
    for (h, seed) in handles.into_iter().zip(1..) {
        let out = ok(h.wait());
        assert_eq!(verify_demo_output(&out, 10, seed), vec![true]);
    }
    engine.wait_idle();
    let m = engine.metrics();
    assert_eq!(m.memory.reserved, 0);
    assert_eq!(m.jobs.completed, 4);
    assert!(m
        .stages
        .iter()
        .all(|s| s.queued == 0 && s.busy_workers == 0));
    engine.shutdown();
}

#[test]
fn a_held_device_leaves_the_work_to_the_others() {
    // Both devices (one worker each) share one gated backend: while one
    // holds the gated partition, the other job can only go to the other.
    let backend = FaultyBackend::new();
    backend.inject(demo_inputs(10, 1, 0), BackendFault::Gate);
    let mut cfg = config(2, 1);
    cfg.devices = (0..2)
        .map(|d| Device::new(format!("dev-{d}"), backend.clone(), 1))
        .collect();
    let engine = Engine::start(cfg).unwrap();
    let held = engine
        .submit(demo_job(10, demo_source(10, 1, 1), 1))
        .unwrap();
    backend.gate().wait_held();
    let free = ok(engine
        .submit(demo_job(10, demo_source(10, 2, 2), 2))
        .unwrap()
        .wait());
    backend.gate().open();
    let held = ok(held.wait());
    let held_device = held.partitions[0].device;
    assert!(free.partitions.iter().all(|p| p.device == 1 - held_device));
    assert_eq!(verify_demo_output(&free, 10, 2), vec![true, true]);
    engine.shutdown();
}

#[test]
fn a_device_admits_no_more_than_its_admission_allows() {
    // Two workers, room for one partition: the second worker takes the next
    // partition and waits for the room until the held one is done.
    let backend = FaultyBackend::new();
    backend.inject(demo_inputs(10, 1, 0), BackendFault::Gate);
    let admission = Arc::new(CountingAdmission::new(1));
    let mut cfg = config(1, 1);
    cfg.devices = vec![Device::new("dev-0", backend.clone(), 2).with_admission(admission.clone())];
    let engine = Engine::start(cfg).unwrap();
    let held = engine
        .submit(demo_job(10, demo_source(10, 1, 1), 1))
        .unwrap();
    backend.gate().wait_held();
    let waiting = engine
        .submit(demo_job(10, demo_source(10, 2, 1), 2))
        .unwrap();
    let (held_id, waiting_id) = (held.id(), waiting.id());
    wait_until("the second worker holds the partition", || {
        queued_for_prover(&engine, waiting_id) && engine.metrics().stage(Stage::Prove).queued == 0
    });
    assert_eq!(cuzk_pipeline::Admission::usage(&*admission), (1, 1));
    backend.gate().open();
    ok(held.wait());
    ok(waiting.wait());
    let tl = engine.timeline();
    assert!(
        tl.first(held_id, 0, EventKind::ProveEnd) < tl.first(waiting_id, 0, EventKind::ProveStart)
    );
    engine.shutdown();
}

#[test]
fn dropping_the_engine_abandons_queued_jobs_and_finishes_running_ones() {
    let engine = Engine::start(config(1, 1)).unwrap();
    let gate = Gate::new();
    let running = engine
        .submit(demo_job(
            10,
            Arc::new(GatedSource::new(demo_source(10, 1, 1), gate.clone(), 0)),
            1,
        ))
        .unwrap();
    gate.wait_held();
    let queued = engine
        .submit(demo_job(10, demo_source(10, 2, 1), 2))
        .unwrap();
    let dropper = std::thread::spawn(move || drop(engine));
    assert!(matches!(queued.wait(), Err(JobError::Shutdown)));
    gate.open();
    dropper.join().unwrap();
    assert_eq!(verify_demo_output(&ok(running.wait()), 10, 1), vec![true]);
}
