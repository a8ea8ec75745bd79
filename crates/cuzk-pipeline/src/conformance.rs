//! The conformance suite every scheduler passes (feature `conformance`).
//!
//! Each check is a function generic over the [`Scheduler`]; the
//! [`scheduler_conformance_tests!`](crate::scheduler_conformance_tests) macro
//! turns them all into `#[test]`s for one scheduler type:
//!
//! ```ignore
//! cuzk_pipeline::scheduler_conformance_tests!(my_sched::MyScheduler);
//! ```
//!
//! Outcomes are deterministic: the only ordering facts checked are those
//! the contract guarantees by construction (a gate holds a stage until both
//! competing jobs are queued; a budget of one partition admits one at a
//! time). Circuits are the 2^10 demo (committed key) and 2^11 (key generated
//! once per process), so the whole suite takes seconds.

use std::sync::Arc;

use cuzk_groth16::prover::{prove_batch, BackendFailure, CpuBackend, ProveError};
use cuzk_synth::synthesize;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::config::{Device, EngineConfig};
use crate::job::{
    JobError, JobId, JobOutput, JobResult, PartitionError, PartitionSource, Priority, Stage,
    Verification,
};
use crate::memory::PartitionFootprint;
use crate::scheduler::{Scheduler, StartError, SubmitError};
use crate::state::JobHandle;
use crate::testing::{
    demo_job, demo_key, demo_source, verify_demo_output, BackendFault, FaultyBackend, FaultySource,
    Gate, GatedSource, RecyclingSource, SourceFault, INJECTED,
};
use crate::timeline::{EventKind, Timeline};

/// The suite's default engine: `synthesis` synthesis workers, one CPU device
/// with `provers` workers, 8 partitions in flight, 1 GiB, verification on,
/// a recording timeline.
pub fn config(synthesis: usize, provers: usize) -> EngineConfig {
    EngineConfig {
        synthesis_workers: synthesis,
        devices: vec![Device::cpu(0, provers)],
        max_in_flight: 8,
        memory_budget: 1 << 30,
        timeline: Arc::new(Timeline::recording()),
        ..EngineConfig::default()
    }
}

fn start<S: Scheduler>(config: EngineConfig) -> S {
    S::start(config).expect("the engine starts")
}

fn expect_ok(result: JobResult, what: &str) -> JobOutput {
    result.unwrap_or_else(|e| panic!("{what}: expected proofs, got: {e}"))
}

fn assert_all_valid(out: &JobOutput, log_size: u32, seed: u64) {
    let valid = verify_demo_output(out, log_size, seed);
    assert!(
        valid.iter().all(|v| *v),
        "{}: proofs verify: {valid:?}",
        out.label
    );
}

/// A 2^10 job of `partitions` partitions from `seed` (its proofs' seed too),
/// submitted.
fn submit_demo<S: Scheduler>(sched: &S, seed: u64, partitions: usize) -> JobHandle {
    sched
        .submit(demo_job(10, demo_source(10, seed, partitions), seed))
        .expect("the job is accepted")
}

/// [`submit_demo`]'s job, proved (`what` names it if it fails).
fn prove_demo<S: Scheduler>(sched: &S, seed: u64, partitions: usize, what: &str) -> JobOutput {
    expect_ok(submit_demo(sched, seed, partitions).wait(), what)
}

/// A one-partition 2^10 job from `seed` whose synthesis is held at the gate
/// returned; returns once a synthesis worker holds it.
fn held_job<S: Scheduler>(sched: &S, seed: u64) -> (Arc<Gate>, JobHandle) {
    let gate = Gate::new();
    let job = sched
        .submit(demo_job(
            10,
            Arc::new(GatedSource::new(demo_source(10, seed, 1), gate.clone(), 0)),
            seed,
        ))
        .expect("the job is accepted");
    gate.wait_held();
    (gate, job)
}

/// `backend` with each `(seed, partition, fault)`: the fault on that
/// partition of the 2^10 demo job from that seed.
fn with_faults(
    backend: Arc<FaultyBackend>,
    faults: &[(u64, usize, BackendFault)],
) -> Arc<FaultyBackend> {
    for &(seed, partition, fault) in faults {
        backend.inject(crate::testing::demo_inputs(10, seed, partition), fault);
    }
    backend
}

/// [`config`]`(1, 1)` with its one device proving on `backend` (`faulty-0`).
fn faulty_config(backend: Arc<FaultyBackend>) -> EngineConfig {
    let mut cfg = config(1, 1);
    cfg.devices = vec![Device::new("faulty-0", backend, 1)];
    cfg
}

fn assert_drained<S: Scheduler>(sched: &S) {
    sched.wait_idle();
    let m = sched.metrics();
    assert_eq!(m.memory.reserved, 0, "memory accounting returns to zero");
    assert_eq!(m.memory.partitions_in_flight, 0, "nothing in flight");
    assert!(
        m.memory.peak_reserved <= m.memory.budget,
        "peak {} within budget {}",
        m.memory.peak_reserved,
        m.memory.budget
    );
}

/// Many jobs of mixed priorities, sizes (2^10, 2^11) and partition counts
/// all complete; every proof verifies (checked here, independently of the
/// engine); the memory account returns to zero; the metrics count them.
pub fn mixed_jobs_complete_and_verify<S: Scheduler>() {
    let sched: S = start(config(2, 2));
    let mut jobs = Vec::new();
    let mut total_partitions = 0;
    for i in 0..10u64 {
        let k = if i % 3 == 0 { 11 } else { 10 };
        let partitions = 1 + (i % 3) as usize;
        let priority = if i % 4 == 1 {
            Priority::High
        } else {
            Priority::Normal
        };
        let seed = 100 * i;
        total_partitions += partitions as u64;
        let job = demo_job(k, demo_source(k, seed, partitions), i).with_priority(priority);
        jobs.push((k, seed, partitions, sched.submit(job).expect("accepted")));
    }
    for (k, seed, partitions, handle) in jobs {
        let out = expect_ok(handle.wait(), "mixed job");
        assert_eq!(out.proofs.len(), partitions);
        assert!(out
            .partitions
            .iter()
            .all(|p| p.verification == Verification::Valid));
        assert_all_valid(&out, k, seed);
    }
    assert_drained(&sched);
    let m = sched.metrics();
    assert_eq!((m.jobs.submitted, m.jobs.completed), (10, 10));
    for stage in Stage::ALL {
        assert_eq!(m.stage(stage).completed, total_partitions, "{stage}");
    }
    sched.shutdown();
}

/// A seeded job gives the same proofs as `cuzk_groth16::prove_batch` with
/// the same seed (bellperson's randomness order), whatever the schedule.
pub fn seeded_jobs_match_prove_batch<S: Scheduler>() {
    let sched: S = start(config(2, 2));
    let source = demo_source(10, 7, 3);
    let out = expect_ok(
        sched
            .submit(demo_job(10, source.clone(), 42))
            .unwrap()
            .wait(),
        "seeded job",
    );
    let witnesses: Vec<_> = (0..3)
        .map(|i| synthesize(source.circuit(i)).unwrap())
        .collect();
    let expected = prove_batch(
        &CpuBackend,
        &demo_key(10),
        &witnesses,
        &mut ChaCha20Rng::seed_from_u64(42),
    )
    .unwrap();
    let expected: Vec<_> = expected.into_iter().map(|p| p.proof).collect();
    assert_eq!(out.proofs, expected);
    sched.shutdown();
}

/// With one synthesis worker held at a gate on a bulk job, a bulk job and
/// then a latency job are submitted; once the gate opens, the latency job's
/// partition is synthesized, proved and finished before the bulk job's.
pub fn latency_jobs_overtake_bulk<S: Scheduler>() {
    let sched: S = start(config(1, 1));
    let (gate, blocker) = held_job(&sched, 1);
    let bulk = submit_demo(&sched, 2, 2);
    let urgent = sched
        .submit(demo_job(10, demo_source(10, 3, 1), 3).with_priority(Priority::High))
        .unwrap();
    let (bulk_id, urgent_id) = (bulk.id(), urgent.id());
    gate.open();
    for h in [blocker, bulk, urgent] {
        expect_ok(h.wait(), "gated jobs");
    }
    let tl = sched.timeline();
    let at = |job: JobId, p: usize, kind| {
        tl.first(job, p, kind)
            .unwrap_or_else(|| panic!("{job} p{p}: no {kind} event"))
    };
    for kind in [
        EventKind::SynthesisStart,
        EventKind::ProveStart,
        EventKind::EpilogueEnd,
    ] {
        assert!(
            at(urgent_id, 0, kind) < at(bulk_id, 0, kind),
            "latency job's {kind} before the bulk job's"
        );
    }
    assert_drained(&sched);
    sched.shutdown();
}

/// Cancelling a queued job drops its partitions unstarted; cancelling a job
/// whose partition is running lets it finish and discards it; the engine
/// carries on and the memory account returns to zero.
pub fn cancellation_drops_queued_and_discards_running<S: Scheduler>() {
    let sched: S = start(config(1, 1));

    // A queued job, cancelled while the only synthesis worker is held.
    let (gate, blocker) = held_job(&sched, 1);
    let queued = submit_demo(&sched, 10, 3);
    let after = submit_demo(&sched, 20, 1);
    let queued_id = queued.id();
    assert!(queued.cancel());
    assert!(!queued.cancel(), "a second cancel is a no-op");
    assert!(matches!(queued.wait(), Err(JobError::Cancelled)));
    gate.open();
    assert_all_valid(&expect_ok(blocker.wait(), "blocker"), 10, 1);
    assert_all_valid(&expect_ok(after.wait(), "job after"), 10, 20);

    // A running job, cancelled while its partition is being synthesized.
    let (gate, running) = held_job(&sched, 30);
    let running_id = running.id();
    running.canceller().cancel();
    gate.open();
    assert!(matches!(running.wait(), Err(JobError::Cancelled)));

    assert_drained(&sched);
    let tl = sched.timeline();
    for p in 0..3 {
        assert_eq!(
            tl.partition_events(queued_id, p),
            vec![],
            "a cancelled queued partition never starts"
        );
    }
    let events = tl.partition_events(running_id, 0);
    assert_eq!(
        events.first(),
        Some(&EventKind::SynthesisStart),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&EventKind::Discarded), "{events:?}");
    assert!(!events.contains(&EventKind::EpilogueEnd));

    let later = submit_demo(&sched, 40, 2);
    assert_all_valid(&expect_ok(later.wait(), "job after cancellations"), 10, 40);
    assert_eq!(sched.metrics().jobs.cancelled, 2);
    assert_drained(&sched);
    sched.shutdown();
}

/// Synthesis errors and panics, public-input errors, backend errors and
/// panics, injected among many good jobs: each faulty job fails with its
/// error, every other job completes with valid proofs, nothing leaks, and
/// the engine still proves afterwards.
pub fn faults_are_isolated_under_load<S: Scheduler>() {
    let backend = with_faults(
        FaultyBackend::new(),
        &[
            (4000, 0, BackendFault::Error),
            (5000, 1, BackendFault::Panic),
        ],
    );
    let mut cfg = config(2, 2);
    cfg.devices = vec![Device::new("faulty-0", backend.clone(), 2)];
    let sched: S = start(cfg);

    let faulty_source = |seed, fault| -> Arc<dyn PartitionSource> {
        Arc::new(FaultySource::new(demo_source(10, seed, 3), 1, fault))
    };
    let bad: Vec<(u64, Arc<dyn PartitionSource>)> = vec![
        (1000, faulty_source(1000, SourceFault::SynthesisError)),
        (2000, faulty_source(2000, SourceFault::SynthesisPanic)),
        (3000, faulty_source(3000, SourceFault::PublicInputsError)),
        (4000, demo_source(10, 4000, 2)),
        (5000, demo_source(10, 5000, 2)),
    ];
    let mut good = Vec::new();
    let mut faulty = Vec::new();
    for (i, (seed, source)) in bad.into_iter().enumerate() {
        for j in 0..2u64 {
            let s = 10 * (i as u64) + j;
            let h = submit_demo(&sched, s, 2);
            good.push((s, h));
        }
        faulty.push((seed, sched.submit(demo_job(10, source, seed)).unwrap()));
    }
    let check = |seed: u64, err: &JobError| match (seed, err) {
        (
            1000,
            JobError::Partition {
                partition: 1,
                source: PartitionError::Synthesis(e),
            },
        ) => e.message.contains(INJECTED),
        (
            2000,
            JobError::Partition {
                partition: 1,
                source:
                    PartitionError::Panic {
                        stage: Stage::Synthesis,
                        message,
                    },
            },
        ) => message.contains(INJECTED),
        (
            3000,
            JobError::Partition {
                partition: 1,
                source: PartitionError::PublicInputs(e),
            },
        ) => e.message.contains(INJECTED),
        (
            4000,
            JobError::Partition {
                partition: 0,
                source:
                    PartitionError::Prove(
                        e @ ProveError::Backend {
                            failure: BackendFailure::Fault,
                            ..
                        },
                    ),
            },
        ) => std::error::Error::source(e).is_some_and(|s| s.to_string().contains(INJECTED)),
        (
            5000,
            JobError::Partition {
                partition: 1,
                source:
                    PartitionError::Panic {
                        stage: Stage::Prove,
                        message,
                    },
            },
        ) => message.contains(INJECTED),
        _ => false,
    };
    for (seed, h) in faulty {
        match h.wait() {
            Ok(_) => panic!("faulty job {seed} completed"),
            Err(e) => assert!(check(seed, &e), "faulty job {seed}: unexpected error {e:?}"),
        }
    }
    for (seed, h) in good {
        assert_all_valid(&expect_ok(h.wait(), "good job among faults"), 10, seed);
    }
    assert_drained(&sched);
    assert_eq!(sched.metrics().jobs.failed, 5);
    let after = submit_demo(&sched, 777, 2);
    assert_all_valid(&expect_ok(after.wait(), "job after faults"), 10, 777);
    sched.shutdown();
}

/// An invalid proof from a backend is proved again on the fallback and
/// returned valid, marked in the job's report; if the fallback's proof is
/// invalid too, the job fails with `InvalidProof`.
pub fn invalid_proofs_are_retried_on_the_fallback<S: Scheduler>() {
    let backend = with_faults(
        FaultyBackend::new(),
        &[
            (60, 1, BackendFault::WrongSums),
            (70, 0, BackendFault::WrongSums),
        ],
    );
    let mut cfg = faulty_config(backend.clone());
    let sched: S = start(cfg.clone());
    let out = prove_demo(&sched, 60, 2, "job with an invalid proof");
    assert_all_valid(&out, 10, 60);
    assert_eq!(out.retried_partitions(), vec![1]);
    assert_eq!(
        out.partitions[1].verification,
        Verification::ValidAfterRetry {
            invalid_from: "faulty",
            retried_on: "cpu"
        }
    );
    assert_eq!(out.partitions[1].backend, "cpu");
    assert_eq!(out.partitions[0].verification, Verification::Valid);
    sched.shutdown();

    // The fallback is wrong too: the job fails, loudly.
    cfg.fallback = backend;
    let sched: S = start(cfg);
    let err = submit_demo(&sched, 70, 1)
        .wait()
        .expect_err("invalid twice");
    assert!(
        matches!(
            err,
            JobError::Partition {
                partition: 0,
                source: PartitionError::InvalidProof {
                    backend: "faulty",
                    retried_on: "faulty"
                }
            }
        ),
        "{err:?}"
    );
    assert_drained(&sched);
    sched.shutdown();
}

/// A partition the device has not the memory for is proved on the
/// fallback (the CPU) and reported as proved there; the job succeeds.
pub fn out_of_device_memory_is_proved_on_the_fallback<S: Scheduler>() {
    let backend = with_faults(
        FaultyBackend::new(),
        &[(90, 1, BackendFault::OutOfDeviceMemory)],
    );
    let sched: S = start(faulty_config(backend));
    let out = prove_demo(&sched, 90, 2, "job with a partition out of device memory");
    assert_all_valid(&out, 10, 90);
    assert_eq!(out.partitions[0].backend, "faulty");
    assert_eq!(out.partitions[1].backend, "cpu");
    assert_eq!(out.partitions[1].verification, Verification::Valid);
    assert_drained(&sched);
    sched.shutdown();
}

/// On a device whose backend keeps its working set off the host (a GPU), a
/// partition reserves only its witness; one the device has not the memory
/// for grows its reservation by the fallback's (the CPU's) working set
/// before the fallback proves it. With a budget of exactly one witness, the
/// grown partition is the only one admitted, so it goes over the budget
/// rather than wait forever, and the peak shows the growth.
pub fn the_host_working_set_is_the_backends<S: Scheduler>() {
    let shape = demo_source(10, 0, 1).shape();
    let witness = PartitionFootprint::cpu(&shape).witness;
    let cpu = cuzk_groth16::prover::cpu_host_working_set(&shape);
    let backend = with_faults(
        FaultyBackend::in_vram(),
        &[(95, 1, BackendFault::OutOfDeviceMemory)],
    );
    let mut cfg = config(1, 1);
    cfg.devices = vec![Device::new("in-vram-0", backend, 1)];
    cfg.memory_budget = witness;
    cfg.largest_partition = Some(shape.clone());
    assert_eq!(crate::Provers::of(&cfg).footprint(&shape).total(), witness);
    let sched: S = start(cfg);
    let out = prove_demo(&sched, 95, 2, "job on a device with no host working set");
    assert_all_valid(&out, 10, 95);
    assert_eq!(out.partitions[0].backend, "faulty");
    assert_eq!(out.partitions[1].backend, "cpu");
    sched.wait_idle();
    let m = sched.metrics().memory;
    assert_eq!((m.reserved, m.partitions_in_flight), (0, 0), "drained");
    // The witness's estimate less what synthesis did not use, plus the CPU's.
    assert!(
        m.peak_reserved > witness && m.peak_reserved <= witness + cpu,
        "peak {} for a witness of {witness} and a CPU working set of {cpu}",
        m.peak_reserved
    );
    sched.shutdown();
}

/// With verification off, proofs come back unchecked (an invalid one too,
/// as this check's own verification shows), marked `Skipped`.
pub fn verification_can_be_turned_off<S: Scheduler>() {
    let backend = with_faults(FaultyBackend::new(), &[(80, 1, BackendFault::WrongSums)]);
    let mut cfg = faulty_config(backend);
    cfg.verify = false;
    let sched: S = start(cfg);
    let out = prove_demo(&sched, 80, 2, "unverified job");
    assert!(out
        .partitions
        .iter()
        .all(|p| p.verification == Verification::Skipped));
    assert_eq!(verify_demo_output(&out, 10, 80), vec![true, false]);
    assert_drained(&sched);
    sched.shutdown();
}

/// Every proved partition's witness goes back to its source once
/// ([`PartitionSource::recycle`]), with verification on (after the
/// epilogue) and off (after the prove step); a failed partition's does not.
pub fn witnesses_go_back_to_their_source<S: Scheduler>() {
    for verify in [true, false] {
        let backend = with_faults(FaultyBackend::new(), &[(91, 2, BackendFault::Error)]);
        let mut cfg = faulty_config(backend);
        cfg.verify = verify;
        let sched: S = start(cfg);
        let source = RecyclingSource::new(demo_source(10, 90, 3));
        let out = expect_ok(
            sched
                .submit(demo_job(10, source.clone(), 90))
                .expect("the job is accepted")
                .wait(),
            "recycled job",
        );
        assert_all_valid(&out, 10, 90);
        let aux = source.shape().num_aux;
        let mut returned = source.returned();
        returned.sort_unstable();
        assert_eq!(
            returned,
            vec![(0, aux), (1, aux), (2, aux)],
            "verify {verify}: each witness once, whole"
        );

        let failing = RecyclingSource::new(demo_source(10, 91, 3));
        let result = sched
            .submit(demo_job(10, failing.clone(), 91))
            .expect("the job is accepted")
            .wait();
        assert!(result.is_err(), "partition 2's device fault fails its job");
        sched.wait_idle();
        assert!(
            failing.returned().iter().all(|&(p, _)| p != 2),
            "verify {verify}: the failed partition's witness is dropped: {:?}",
            failing.returned()
        );
        assert_drained(&sched);
        sched.shutdown();
    }
}

/// A job whose circuit does not fit its key, or that has no partitions, is
/// refused at submission, before any work.
pub fn bad_jobs_are_refused_at_submission<S: Scheduler>() {
    let sched: S = start(config(1, 1));
    let wrong_key = crate::job::Job::new(demo_source(11, 0, 2), demo_key(10));
    match sched.submit(wrong_key) {
        Err(SubmitError::KeyMismatch { source, .. }) => {
            assert!(matches!(source, ProveError::KeyMismatch { .. }))
        }
        other => panic!("expected KeyMismatch, got {other:?}"),
    }
    let empty = demo_job(10, demo_source(10, 0, 0), 0);
    assert!(matches!(
        sched.submit(empty),
        Err(SubmitError::NoPartitions { .. })
    ));
    assert_eq!(sched.metrics().jobs.submitted, 0);
    assert!(sched.timeline().events().is_empty(), "no work started");
    sched.shutdown();
}

/// A device that can never hold a partition (a VRAM budget below the
/// smallest plan) refuses the job at submission, naming the device and
/// keeping the admission's reason, before any synthesis.
pub fn devices_too_small_are_refused_at_submission<S: Scheduler>() {
    #[derive(Debug)]
    struct TooSmall;
    impl crate::Admission for TooSmall {
        fn admit(
            &self,
            _shape: &cuzk_synth::CircuitShape,
        ) -> Result<crate::AdmissionTicket, crate::AdmissionError> {
            Err(crate::AdmissionError::new(
                "needs 9 GiB, the budget has 4 GiB",
            ))
        }
        fn check(&self, shape: &cuzk_synth::CircuitShape) -> Result<(), crate::AdmissionError> {
            self.admit(shape).map(|_| ())
        }
        fn usage(&self) -> (u64, u64) {
            (0, 4)
        }
    }
    let mut cfg = config(1, 1);
    cfg.devices
        .push(Device::new("small-gpu", Arc::new(CpuBackend), 1).with_admission(Arc::new(TooSmall)));
    let sched: S = start(cfg);
    match sched.submit(demo_job(10, demo_source(10, 0, 1), 0)) {
        Err(e @ SubmitError::DeviceTooSmall { .. }) => {
            let chain = crate::ErrorChain(&e).to_string();
            assert!(chain.contains("small-gpu"), "{chain}");
            assert!(
                chain.contains("needs 9 GiB, the budget has 4 GiB"),
                "{chain}"
            );
        }
        other => panic!("expected DeviceTooSmall, got {other:?}"),
    }
    assert_eq!(sched.metrics().jobs.submitted, 0);
    assert!(sched.timeline().events().is_empty(), "no work started");
    sched.shutdown();
}

/// A budget too small for one partition is refused at start (when the
/// largest partition is declared) or at submission, with the numbers.
pub fn small_budgets_are_refused_with_the_numbers<S: Scheduler>() {
    let shape = demo_source(10, 0, 1).shape();
    let need = PartitionFootprint::cpu(&shape).total();
    let mut cfg = config(1, 1);
    cfg.memory_budget = need - 1;
    cfg.largest_partition = Some(shape);
    match S::start(cfg.clone()) {
        Err(StartError::BudgetTooSmall { budget, needed, .. }) => {
            assert_eq!((budget, needed), (need - 1, need));
        }
        Err(e) => panic!("expected BudgetTooSmall, got {e}"),
        Ok(_) => panic!("expected BudgetTooSmall, the engine started"),
    }
    cfg.largest_partition = None;
    let sched: S = start(cfg);
    match sched.submit(demo_job(10, demo_source(10, 0, 1), 0)) {
        Err(e @ SubmitError::BudgetTooSmall { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&need.to_string()), "{msg}");
            assert!(msg.contains(&(need - 1).to_string()), "{msg}");
        }
        other => panic!("expected BudgetTooSmall, got {other:?}"),
    }
    sched.shutdown();
}

/// With a budget of exactly one partition, partitions run one at a time
/// (each one's events from `synthesis_start` to `epilogue_end` form a block
/// no other partition's start enters), and the peak reservation is one
/// footprint.
pub fn the_memory_budget_is_never_exceeded<S: Scheduler>() {
    let shape = demo_source(10, 0, 1).shape();
    let need = PartitionFootprint::cpu(&shape).total();
    let mut cfg = config(2, 2);
    cfg.memory_budget = need;
    let sched: S = start(cfg);
    let handles: Vec<(u64, JobHandle)> = (0..3u64)
        .map(|i| {
            let seed = 500 + 10 * i;
            (seed, submit_demo(&sched, seed, 2))
        })
        .collect();
    for (seed, h) in handles {
        assert_all_valid(&expect_ok(h.wait(), "budgeted job"), 10, seed);
    }
    assert_drained(&sched);
    assert_eq!(sched.metrics().memory.peak_reserved, need);
    let mut open: Option<(JobId, usize)> = None;
    for e in sched.timeline().events() {
        match e.kind {
            EventKind::SynthesisStart => {
                assert_eq!(open, None, "{e:?} started while {open:?} held the budget");
                open = Some((e.job, e.partition));
            }
            EventKind::EpilogueEnd => {
                assert_eq!(open, Some((e.job, e.partition)));
                open = None;
            }
            _ => {}
        }
    }
    sched.shutdown();
}

/// Every partition of a completed job emits the seven TIMELINE events, in
/// pipeline order.
pub fn the_timeline_has_every_step_in_order<S: Scheduler>() {
    let sched: S = start(config(2, 2));
    let a = submit_demo(&sched, 90, 2);
    let b = sched
        .submit(demo_job(11, demo_source(11, 95, 1), 95).with_priority(Priority::High))
        .unwrap();
    let ids = [(a.id(), 2), (b.id(), 1)];
    expect_ok(a.wait(), "a");
    expect_ok(b.wait(), "b");
    for (id, partitions) in ids {
        for p in 0..partitions {
            assert_eq!(
                sched.timeline().partition_events(id, p),
                vec![
                    EventKind::SynthesisStart,
                    EventKind::SynthesisEnd,
                    EventKind::QueuedForProver,
                    EventKind::ProveStart,
                    EventKind::ProveEnd,
                    EventKind::EpilogueStart,
                    EventKind::EpilogueEnd,
                ],
                "{id} partition {p}"
            );
        }
    }
    sched.shutdown();
}

/// `shutdown` finishes every job already queued.
pub fn shutdown_finishes_queued_jobs<S: Scheduler>() {
    let sched: S = start(config(1, 1));
    let handles: Vec<(u64, JobHandle)> = (0..3u64)
        .map(|i| {
            let seed = 900 + i;
            (seed, submit_demo(&sched, seed, 1))
        })
        .collect();
    sched.shutdown();
    for (seed, h) in handles {
        assert_all_valid(&expect_ok(h.wait(), "job queued before shutdown"), 10, seed);
    }
}

/// Invalid configurations are refused at start.
pub fn invalid_configurations_are_refused<S: Scheduler>() {
    let mut cfg = config(1, 1);
    cfg.devices.clear();
    assert!(matches!(S::start(cfg), Err(StartError::NoDevices)));
    let mut cfg = config(1, 1);
    cfg.devices[0].backends.clear();
    assert!(matches!(
        S::start(cfg),
        Err(StartError::DeviceWithoutWorkers { .. })
    ));
    let mut cfg = config(1, 1);
    cfg.max_in_flight = 0;
    assert!(matches!(
        S::start(cfg),
        Err(StartError::Zero {
            what: "max_in_flight"
        })
    ));
}

/// Expands to one `#[test]` per conformance check for the scheduler type
/// `$sched` (which implements [`Scheduler`]).
#[macro_export]
macro_rules! scheduler_conformance_tests {
    ($sched:ty) => {
        $crate::scheduler_conformance_tests!(@tests $sched;
            mixed_jobs_complete_and_verify,
            seeded_jobs_match_prove_batch,
            latency_jobs_overtake_bulk,
            cancellation_drops_queued_and_discards_running,
            faults_are_isolated_under_load,
            invalid_proofs_are_retried_on_the_fallback,
            out_of_device_memory_is_proved_on_the_fallback,
            the_host_working_set_is_the_backends,
            verification_can_be_turned_off,
            witnesses_go_back_to_their_source,
            bad_jobs_are_refused_at_submission,
            small_budgets_are_refused_with_the_numbers,
            devices_too_small_are_refused_at_submission,
            the_memory_budget_is_never_exceeded,
            the_timeline_has_every_step_in_order,
            shutdown_finishes_queued_jobs,
            invalid_configurations_are_refused,
        );
    };
    (@tests $sched:ty; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::conformance::$check::<$sched>();
            }
        )*
    };
}
