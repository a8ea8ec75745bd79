//! What only a pipelined engine can show: priorities at the provers' queue,
//! the host-memory reserve, backpressure through the bounded channels,
//! several devices, shutdown with work queued. Outcomes are deterministic: gates hold a stage until
//! the state under test is reached (waited for, never timed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_pipeline::conformance::config;
use cuzk_pipeline::testing::{
    demo_inputs, demo_job, demo_source, verify_demo_output, BackendFault, FaultyBackend, Gate,
    GatedSource,
};
use cuzk_pipeline::{
    CountingAdmission, Device, EventKind, JobError, JobHandle, JobId, JobOutput, JobResult,
    Priority, Provers, Scheduler, Stage, StartError, SubmitError,
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
        .submit(demo_job(10, demo_source(10, 3, 1), 3).with_priority(Priority::High))
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

/// One 2^10 demo partition's host footprint on the suite's CPU device.
fn one_partition() -> u64 {
    let shape = cuzk_pipeline::PartitionSource::shape(&*demo_source(10, 0, 1));
    Provers::of(&config(1, 1)).footprint(&shape).total()
}

/// Two synthesis workers, one partition in flight, a budget of two
/// partitions of which one is reserved for `reserve_class`: a NORMAL job of
/// three partitions holds the first worker (and the one in-flight slot) at a
/// gate on partition 0, and the second worker may not admit partition 1
/// (it would take the reserve). A job of `class` submitted then is admitted
/// from the reserve and finishes while the gate is still closed; the NORMAL
/// job's partition 1 has not started.
fn check_reserve_lets_through(reserve_class: Priority, class: Priority) {
    let need = one_partition();
    let mut cfg = config(2, 1);
    cfg.max_in_flight = 1;
    cfg.memory_budget = 2 * need;
    cfg.critical_reserve = need;
    cfg.reserve_class = reserve_class;
    let engine = Engine::start(cfg).unwrap();
    let gate = Gate::new();
    let bulk = engine
        .submit(demo_job(
            10,
            Arc::new(GatedSource::new(demo_source(10, 1, 3), gate.clone(), 0)),
            1,
        ))
        .unwrap();
    gate.wait_held();
    let urgent = engine
        .submit(demo_job(10, demo_source(10, 5, 1), 5).with_priority(class))
        .unwrap();
    let urgent_id = urgent.id();
    // A hang guard, not a timing check: without the reserve the job would
    // wait for the gate. The gate opens before any assertion, so a failure
    // fails the test instead of hanging it in the engine's drop.
    let finished_while_held = urgent.wait_timeout(Duration::from_secs(120));
    let bulk_p1_started = engine
        .timeline()
        .first(bulk.id(), 1, EventKind::SynthesisStart)
        .is_some();
    gate.open();
    assert!(
        finished_while_held,
        "the {class} job never finished while NORMAL work held the budget (reserve for {reserve_class})"
    );
    assert!(
        !bulk_p1_started,
        "NORMAL p1 must not start from the reserve of {reserve_class}"
    );
    let out = ok(urgent.wait());
    assert_eq!(verify_demo_output(&out, 10, 5), vec![true]);
    assert!(engine
        .timeline()
        .first(urgent_id, 0, EventKind::EpilogueEnd)
        .is_some());
    let out = ok(bulk.wait());
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    engine.wait_idle();
    let m = engine.metrics().memory;
    assert_eq!(m.reserved, 0);
    assert!(m.peak_reserved <= m.budget);
    engine.shutdown();
}

#[test]
fn a_critical_job_starts_from_the_reserve_while_normal_work_fills_the_rest() {
    check_reserve_lets_through(Priority::Critical, Priority::Critical);
}

#[test]
fn a_reserve_for_high_lets_high_and_critical_through() {
    check_reserve_lets_through(Priority::High, Priority::High);
    check_reserve_lets_through(Priority::High, Priority::Critical);
}

#[test]
fn the_reserve_is_checked_at_start_and_at_submission() {
    let need = one_partition();
    let mut cfg = config(1, 1);
    cfg.memory_budget = need;
    cfg.critical_reserve = need;
    assert_eq!(
        Engine::start(cfg.clone()).err(),
        Some(StartError::ReserveTooLarge {
            reserve: need,
            budget: need
        })
    );
    // One partition fits the whole budget but not the budget less the
    // reserve: a CRITICAL job is taken, a NORMAL one refused with the numbers.
    cfg.critical_reserve = need / 2;
    let engine = Engine::start(cfg).unwrap();
    let refused = engine.submit(demo_job(10, demo_source(10, 2, 1), 2));
    match refused {
        Err(SubmitError::BudgetTooSmall { budget, needed, .. }) => {
            assert_eq!((budget, needed), (need - need / 2, need))
        }
        other => panic!("expected BudgetTooSmall, got {other:?}"),
    }
    let critical = engine
        .submit(demo_job(10, demo_source(10, 3, 1), 3).with_priority(Priority::Critical))
        .unwrap();
    assert_eq!(verify_demo_output(&ok(critical.wait()), 10, 3), vec![true]);
    engine.shutdown();
}

/// A budget of two partitions; a job of three with partition 0 held at a
/// gate. A loan of the whole budget waits for that partition to finish and
/// keeps every other partition out while it waits (it was asked first) and
/// while it is held: lent memory is not the partitions'.
#[test]
fn a_loan_waits_for_admitted_partitions_and_shrinks_what_is_admitted() {
    let need = one_partition();
    let mut cfg = config(1, 1);
    cfg.memory_budget = 2 * need;
    let engine = Arc::new(Engine::start(cfg).unwrap());
    assert!(
        engine.host_lender().lend(2 * need + 1).is_none(),
        "never fits"
    );
    let (gate, job) = gated_job(&engine);
    let job_id = job.id();
    gate.wait_held();
    let lender = engine.host_lender();
    let borrower = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            let loan = lender.lend(2 * need).expect("fits the budget");
            let m = engine.metrics().memory;
            let p1_started = engine
                .timeline()
                .first(job_id, 1, EventKind::SynthesisStart)
                .is_some();
            drop(loan);
            (m, p1_started)
        })
    };
    wait_until("the loan waits", || {
        engine.metrics().memory.lend_waiting == 2 * need
    });
    gate.open();
    let (at_loan, p1_started) = borrower.join().unwrap();
    assert_eq!(
        (at_loan.lent, at_loan.reserved),
        (2 * need, 0),
        "the loan came when partition 0 had given its memory back"
    );
    assert!(!p1_started, "partition 1 waited behind the loan");
    let out = ok(job.wait());
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    engine.wait_idle();
    let m = engine.metrics().memory;
    assert_eq!((m.lent, m.lend_waiting, m.reserved), (0, 0, 0));
}

/// A three-partition demo job whose partition 0 holds in synthesis until
/// the gate opens.
fn gated_job(engine: &Engine) -> (Arc<Gate>, JobHandle) {
    let gate = Gate::new();
    let job = engine
        .submit(demo_job(
            10,
            Arc::new(GatedSource::new(demo_source(10, 1, 3), gate.clone(), 0)),
            1,
        ))
        .unwrap();
    (gate, job)
}

/// A loan tried now never waits: refused while admitted partitions hold
/// the room it needs, made from what they leave, given back on drop.
#[test]
fn a_loan_tried_now_takes_only_the_room_there_is() {
    let need = one_partition();
    let mut cfg = config(1, 1);
    cfg.memory_budget = 2 * need;
    let engine = Arc::new(Engine::start(cfg).unwrap());
    let lender = engine.host_lender();
    let (gate, job) = gated_job(&engine);
    gate.wait_held();
    let held = engine.metrics().memory.reserved;
    assert!(held >= need, "partition 0 holds its room: {held}");
    assert!(
        lender.try_lend(2 * need).is_none(),
        "no room now: refused at once"
    );
    let room = 2 * need - held;
    let loan = lender.try_lend(room).expect("the room left");
    assert_eq!(engine.metrics().memory.lent, room);
    assert!(lender.try_lend(1).is_none(), "the budget is full");
    drop(loan);
    assert_eq!(engine.metrics().memory.lent, 0);
    gate.open();
    let out = ok(job.wait());
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    engine.wait_idle();
    let loan = lender.try_lend(2 * need).expect("idle: the whole budget");
    drop(loan);
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

/// An engine with one prover whose test backend batches up to three
/// partitions (`inject` adds its faults), held at the gate by a
/// one-partition job (seed 9), which went alone: nothing was queued when
/// it came.
fn held_batching_engine(
    inject: impl FnOnce(&FaultyBackend),
) -> (Arc<FaultyBackend>, Engine, JobHandle) {
    let backend = FaultyBackend::new();
    backend.set_batch_room(3);
    backend.inject(demo_inputs(10, 9, 0), BackendFault::Gate);
    inject(&backend);
    let mut cfg = config(2, 1);
    cfg.devices = vec![Device::new("batching-0", backend.clone(), 1)];
    cfg.prover_queue = 8;
    let engine = Engine::start(cfg).unwrap();
    let holder = engine
        .submit(demo_job(10, demo_source(10, 9, 1), 9))
        .unwrap();
    backend.gate().wait_held();
    (backend, engine, holder)
}

/// A three-partition bulk job queued behind `held_batching_engine`'s
/// holder, then the gate opened: the holder's output and the bulk job's.
fn three_behind_the_holder(
    backend: &FaultyBackend,
    engine: &Engine,
    holder: JobHandle,
) -> (JobOutput, JobOutput) {
    let job = engine
        .submit(demo_job(10, demo_source(10, 1, 3), 1))
        .unwrap();
    wait_until("three partitions queued", || {
        engine.metrics().stage(Stage::Prove).queued == 3
    });
    backend.gate().open();
    (ok(holder.wait()), ok(job.wait()))
}

/// A backend that gains from batches (room 3) gets the partitions of one
/// key already queued for its prover in one call, never waiting for more:
/// four queued bulk partitions go in batches of at most three, each proof
/// the one it makes alone, each report naming its batch; a CRITICAL job's
/// partition queued beside them joins no batch and is proved first.
#[test]
fn queued_partitions_of_one_key_are_proved_in_batches_and_critical_ones_alone() {
    // A one-partition job holds the prover while the bulk job's five
    // partitions queue.
    let (backend, engine, holder) = held_batching_engine(|_| {});
    let bulk = engine
        .submit(demo_job(10, demo_source(10, 1, 5), 1))
        .unwrap();
    wait_until("five bulk partitions queued", || {
        engine.metrics().stage(Stage::Prove).queued == 5
    });
    let urgent = engine
        .submit(demo_job(10, demo_source(10, 20, 1), 20).with_priority(Priority::Critical))
        .unwrap();
    wait_until("the critical partition queued too", || {
        engine.metrics().stage(Stage::Prove).queued == 6
    });
    backend.gate().open();
    let holder = ok(holder.wait());
    let bulk = ok(bulk.wait());
    let urgent = ok(urgent.wait());
    assert_eq!(verify_demo_output(&holder, 10, 9), vec![true]);
    assert_eq!(holder.partitions[0].batch, 1);
    assert_eq!(verify_demo_output(&bulk, 10, 1), vec![true; 5]);
    assert_eq!(verify_demo_output(&urgent, 10, 20), vec![true]);
    let first = |seed: u64, i: usize| demo_inputs(10, seed, i)[0];
    let batches = backend.batches();
    assert!(!batches.is_empty(), "no batch was formed");
    let critical = first(20, 0);
    for b in &batches {
        assert!((2..=3).contains(&b.len()), "{} in a batch", b.len());
        assert!(!b.contains(&critical), "the critical partition in a batch");
    }
    // Five queued partitions in batches of at most three: two batches (3 +
    // 2), every partition in exactly one, its report naming the batch's size.
    let batched: Vec<_> = batches.iter().flatten().copied().collect();
    let mut sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    sizes.sort();
    assert_eq!(sizes, vec![2, 3], "{batches:?}");
    for (i, p) in bulk.partitions.iter().enumerate() {
        assert_eq!(batched.iter().filter(|&&x| x == first(1, i)).count(), 1);
        let size = batches
            .iter()
            .find(|b| b.contains(&first(1, i)))
            .unwrap()
            .len();
        assert_eq!(p.batch, size, "partition {i}");
    }
    assert_eq!(urgent.partitions[0].batch, 1);
    // The critical partition was proved before the batch it was queued
    // beside (it was taken while the batch formed, or first of all).
    let tl = engine.timeline();
    let critical_end = tl.first(urgent.id, 0, EventKind::ProveEnd).expect("proved");
    let first_bulk = (0..5)
        .filter_map(|i| tl.first(bulk.id, i, EventKind::ProveStart))
        .min()
        .expect("bulk proved");
    assert!(
        critical_end <= first_bulk,
        "the critical partition waited for the bulk"
    );
    engine.shutdown();
}

/// The TIMELINE's `prove_end` and each partition's report name the batch
/// it ran in and the bytes the backend says it moved: a batch of three's
/// members their share, the partition proved alone its own.
#[test]
fn the_timeline_and_the_reports_name_each_partitions_batch_and_bytes() {
    let (backend, engine, holder) = held_batching_engine(|b| b.set_crossed(Some(19_400)));
    let (holder, out) = three_behind_the_holder(&backend, &engine, holder);
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    assert_eq!(backend.batches().len(), 1);
    let ends: Vec<_> = engine
        .timeline()
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::ProveEnd)
        .collect();
    assert_eq!(ends.len(), 4, "{ends:?}");
    for e in &ends {
        let batch = if e.job == out.id { 3 } else { 1 };
        assert_eq!((e.batch, e.crossed), (Some(batch), Some(19_400)), "{e:?}");
    }
    assert!(out
        .partitions
        .iter()
        .all(|p| p.batch == 3 && p.crossed == Some(19_400)));
    assert_eq!(holder.partitions[0].crossed, Some(19_400));
    engine.shutdown();
}

/// A batch the backend proved one member at a time (a GPU whose pinned
/// pool was not ready) is reported as such: each partition a batch of one,
/// though the engine gave the backend all three in one call.
#[test]
fn a_batch_proved_one_at_a_time_is_reported_so() {
    let (backend, engine, holder) = held_batching_engine(|b| b.set_one_at_a_time(true));
    let (_, out) = three_behind_the_holder(&backend, &engine, holder);
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    let sizes: Vec<usize> = backend.batches().iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![3], "one call for the three");
    assert!(out.partitions.iter().all(|p| p.batch == 1));
    engine.shutdown();
}

/// A batch that fails as a whole (one member out of device memory) is
/// proved one by one: the others on the device, that member on the
/// fallback, every proof valid, every report a batch of one, and the
/// TIMELINE shows the failed batch's span and each member's own.
#[test]
fn a_failed_batch_is_proved_one_by_one() {
    let (backend, engine, holder) =
        held_batching_engine(|b| b.inject(demo_inputs(10, 1, 1), BackendFault::OutOfDeviceMemory));
    let (_, out) = three_behind_the_holder(&backend, &engine, holder);
    assert_eq!(verify_demo_output(&out, 10, 1), vec![true; 3]);
    assert_eq!(backend.batches().len(), 1, "one batch tried");
    assert!(out.partitions.iter().all(|p| p.batch == 1));
    assert_eq!(out.partitions[1].backend, "cpu", "the fallback proved it");
    let starts = engine
        .timeline()
        .events()
        .into_iter()
        .filter(|e| e.job == out.id && e.kind == EventKind::ProveStart)
        .count();
    assert_eq!(starts, 6, "the batch's three spans and each member's own");
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

/// Two provers on a device with room for one partition (or one batch) at
/// a time, a backend that batches up to three: while one prover holds the
/// device, the other takes the next partition and reserves the batch's
/// room before the batch forms, so the partitions queued while it waited
/// join it (a 16 GiB card's parked batch): one batch of three, not a
/// partition alone and then a batch of two.
#[test]
fn a_batch_waiting_for_the_device_takes_the_partitions_queued_meanwhile() {
    let backend = FaultyBackend::new();
    backend.set_batch_room(3);
    backend.inject(demo_inputs(10, 9, 0), BackendFault::Gate);
    let admission = Arc::new(CountingAdmission::new(1));
    let mut cfg = config(2, 1);
    cfg.devices = vec![Device::new("dev-0", backend.clone(), 2).with_admission(admission.clone())];
    cfg.prover_queue = 8;
    let engine = Engine::start(cfg).unwrap();
    let holder = engine
        .submit(demo_job(10, demo_source(10, 9, 1), 9))
        .unwrap();
    backend.gate().wait_held();
    let bulk = engine
        .submit(demo_job(10, demo_source(10, 1, 3), 1))
        .unwrap();
    // The second prover took one bulk partition (waiting for the room),
    // the other two queued behind it.
    wait_until("one bulk partition taken, two queued", || {
        engine.metrics().stage(Stage::Prove).queued == 2
            && engine.metrics().stage(Stage::Synthesis).completed == 4
    });
    assert_eq!(cuzk_pipeline::Admission::usage(&*admission), (1, 1));
    backend.gate().open();
    ok(holder.wait());
    let bulk = ok(bulk.wait());
    assert_eq!(verify_demo_output(&bulk, 10, 1), vec![true; 3]);
    let sizes: Vec<usize> = backend.batches().iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        vec![3],
        "the partitions queued while it waited joined"
    );
    assert!(bulk.partitions.iter().all(|p| p.batch == 3));
    engine.shutdown();
}

/// A device whose backend batches up to ten gets ten partitions queued
/// for its provers and room in flight for two such batches and its two
/// workers;
/// one that does not batch leaves the configuration as it was.
#[test]
fn the_engine_makes_room_for_its_devices_batches() {
    let backend = FaultyBackend::new();
    let with_room = |backend: &Arc<FaultyBackend>| {
        let mut cfg = config(4, 1);
        cfg.devices = vec![Device::new("d", backend.clone(), 2)];
        cfg.max_in_flight = 5;
        cfg.with_batch_room()
    };
    let plain = with_room(&backend);
    assert_eq!((plain.prover_queue, plain.max_in_flight), (2, 5));
    backend.set_batch_room(10);
    let batching = with_room(&backend);
    assert_eq!((batching.prover_queue, batching.max_in_flight), (10, 22));
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
