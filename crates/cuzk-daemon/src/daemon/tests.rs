//! The job table's rules, on a daemon over an empty parameter cache (no
//! proof is made here: the integration tests in `tests/` prove).

use std::path::Path;
use std::sync::atomic::Ordering;

use prost::Message;

use super::accept::MAX_REQUEST_ID_BYTES;
use super::*;
use crate::journal::{Accepted, Journal, Replayed};

fn settings() -> Settings {
    Settings {
        max_queued_jobs: 2,
        max_queued_bytes: 1000,
        urgent_reserved_jobs: 1,
        urgent_reserved_bytes: 500,
        request_memory: 1 << 20,
        bulk_jobs_in_engine: 1,
        max_results: 16,
        delivered_retention: Duration::from_secs(600),
        local_files: crate::aggregate::LocalFiles::default(),
        post_aux_pool: Arc::new(cuzk_filecoin::AuxPool::new(0)),
    }
}

/// A daemon with no thread, over an empty parameter cache, its state in `dir`.
fn daemon(dir: &Path) -> Arc<Daemon> {
    let params = ParamsDir::new(dir.join("params"));
    let mut config = cuzk_pipeline::EngineConfig::default();
    config.memory_budget = 1 << 30;
    let engine = Engine::start(config).unwrap();
    let srs = SrsManager::new(
        params.clone(),
        1 << 30,
        None,
        Duration::from_secs(600),
        Duration::from_secs(1800),
    );
    let (journal, _) = Journal::open(&dir.join("state")).unwrap();
    Daemon::new(settings(), params, engine, Vec::new(), srs, journal)
}

#[test]
fn status_and_metrics_name_each_workers_backend_driver_and_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let params = ParamsDir::new(dir.path().join("params"));
    let (device, view) = crate::server::cpu_device();
    let mut config = cuzk_pipeline::EngineConfig::default();
    config.memory_budget = 1 << 30;
    config.devices = vec![device];
    let engine = Engine::start(config).unwrap();
    let srs = SrsManager::new(
        params.clone(),
        1 << 30,
        None,
        Duration::from_secs(600),
        Duration::from_secs(1800),
    );
    let (journal, _) = Journal::open(&dir.path().join("state")).unwrap();
    let d = Daemon::new(settings(), params, engine, vec![view], srs, journal);
    let status: serde_json::Value = serde_json::from_str(&crate::metrics::status_json(&d)).unwrap();
    let workers = status["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{status}");
    let w = &workers[0];
    assert_eq!(
        (&w["device"], &w["backend"], &w["driver"], &w["kernels"]),
        (
            &serde_json::json!("cpu-0"),
            &serde_json::json!("cpu"),
            &serde_json::json!("none"),
            &serde_json::json!("none")
        ),
        "{w}"
    );
    assert!(!w["model"].as_str().unwrap().is_empty(), "{w}");
    let text = crate::metrics::prometheus_text(&d);
    let line = text
        .lines()
        .find(|l| l.starts_with("cuzk_worker_info{"))
        .unwrap_or_else(|| panic!("no cuzk_worker_info in\n{text}"));
    assert!(
        line.contains("device=\"cpu-0\"")
            && line.contains("backend=\"cpu\"")
            && line.contains("driver=\"none\"")
            && line.contains("kernels=\"none\"")
            && line.ends_with(" 1.0"),
        "{line}"
    );
}

fn accepted(job_id: &str, request_id: &str, digest: &str) -> Accepted {
    Accepted {
        job_id: job_id.into(),
        request_id: request_id.into(),
        digest: digest.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        priority: Priority::Normal as i32,
        accepted_unix_ms: unix_ms(),
    }
}

fn ended(status: Status, delivered: bool) -> Phase {
    Phase::Finished {
        result: Arc::new(unproved(status, "ended".into(), Duration::ZERO)),
        at: Instant::now(),
        delivered,
    }
}

fn insert(t: &mut Table, job_id: &str, request_id: &str, digest: &str, phase: Phase) {
    let finished = matches!(phase, Phase::Finished { .. });
    let seq = t.next_seq;
    t.next_seq += 1;
    t.by_request.insert(request_id.into(), job_id.into());
    t.jobs.insert(
        job_id.into(),
        Entry {
            accepted: accepted(job_id, request_id, digest),
            accepted_at: Instant::now(),
            seq,
            bytes: 0,
            priority: Priority::Normal,
            phase,
            cancel_requested: false,
            interrupted: false,
            in_bulk_slot: false,
            key_asked: None,
            circuit: None,
            partitions: None,
            done: tokio::sync::watch::channel(finished).0,
        },
    );
}

fn exhausted(r: Result<(), RequestError>, words: &str) {
    match r {
        Err(RequestError::ResourceExhausted(m)) => assert!(m.contains(words), "{m}"),
        other => panic!("expected RESOURCE_EXHAUSTED with {words:?}, got {other:?}"),
    }
}

#[test]
fn a_queue_full_of_porep_refuses_porep_only() {
    let s = settings();
    let mut t = Table {
        unfinished: 2,
        ..Table::default()
    };
    for bulk in [Priority::Normal, Priority::Low] {
        exhausted(t.check_room(&s, 1, bulk), "limit 2 for");
    }
    for urgent in [Priority::High, Priority::Critical] {
        t.check_room(&s, 1, urgent).unwrap();
    }
    // The reserved room is one job: full too now.
    t.unfinished = 3;
    exhausted(
        t.check_room(&s, 1, Priority::Critical),
        "limits.urgent_reserved_jobs",
    );
    // Bytes likewise: 900 held, 1000 for bulk, 1500 for urgent jobs.
    t.unfinished = 0;
    t.unfinished_bytes = 900;
    exhausted(
        t.check_room(&s, 200, Priority::Normal),
        "limits.max_queued_bytes",
    );
    t.check_room(&s, 200, Priority::High).unwrap();
    exhausted(
        t.check_room(&s, 601, Priority::High),
        "limits.urgent_reserved_bytes",
    );
}

#[test]
fn a_failed_or_cancelled_job_does_not_hold_its_request_id() {
    let mut t = Table::default();
    insert(
        &mut t,
        "job-a",
        "porep-1-1",
        "d1",
        ended(Status::Failed, false),
    );
    insert(
        &mut t,
        "job-b",
        "porep-1-2",
        "d2",
        ended(Status::Cancelled, true),
    );
    insert(
        &mut t,
        "job-c",
        "porep-1-3",
        "d3",
        ended(Status::Completed, false),
    );
    insert(&mut t, "job-d", "porep-1-4", "d4", Phase::Starting);
    let mut superseded = None;
    // A retry after a failure: a new job; the old result is marked delivered
    // (the journal is told) and stays readable under its job id.
    assert!(t
        .existing("porep-1-1", "d1", &mut superseded)
        .unwrap()
        .is_none());
    assert_eq!(superseded.as_deref(), Some("job-a"));
    assert!(matches!(
        t.jobs["job-a"].phase,
        Phase::Finished {
            delivered: true,
            ..
        }
    ));
    assert!(!t.by_request.contains_key("porep-1-1"));
    // After a cancel (already delivered: nothing to tell the journal), even
    // with other content.
    superseded = None;
    assert!(t
        .existing("porep-1-2", "other", &mut superseded)
        .unwrap()
        .is_none());
    assert_eq!(superseded, None);
    // A finished proof not yet fetched is the answer, as a running job is.
    let known = t.existing("porep-1-3", "d3", &mut superseded).unwrap();
    assert_eq!(known.unwrap().job_id, "job-c");
    let known = t.existing("porep-1-4", "d4", &mut superseded).unwrap();
    assert_eq!(known.unwrap().job_id, "job-d");
    assert!(matches!(
        t.existing("porep-1-4", "other", &mut superseded),
        Err(RequestError::InvalidArgument(_))
    ));
    assert_eq!(superseded, None);
    // The retry holds the id now: dropping the old result leaves it alone.
    insert(&mut t, "job-e", "porep-1-1", "d1", Phase::Starting);
    t.forget("job-a");
    assert_eq!(t.by_request["porep-1-1"], "job-e");
    t.forget("job-e");
    assert!(!t.by_request.contains_key("porep-1-1"));
}

#[test]
fn a_panic_in_a_job_fails_that_job_and_gives_its_slot_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    {
        let mut t = d.table.lock();
        insert(&mut t, "job-p", "porep-1-9", "d", Phase::Starting);
        t.jobs.get_mut("job-p").unwrap().in_bulk_slot = true;
        t.bulk_in_engine = 1;
        t.unfinished = 1;
    }
    d.guarded("job-p", || panic!("injected: an assertion in a verifier"));
    {
        let t = d.table.lock();
        assert_eq!((t.bulk_in_engine, t.unfinished), (0, 0));
        match &t.jobs["job-p"].phase {
            Phase::Finished { result, .. } => {
                assert_eq!(result.status, Status::Failed as i32);
                assert!(
                    result
                        .error_message
                        .contains("injected: an assertion in a verifier"),
                    "{}",
                    result.error_message
                );
            }
            other => panic!("{}", other.name()),
        }
    }
    assert_eq!(d.stats.job_panics.load(Ordering::Relaxed), 1);
    // A client awaiting it hears FAILED with the reason.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let r = rt
        .block_on(d.await_job("job-p", Some(Duration::from_secs(60))))
        .unwrap();
    assert_eq!(r.status, Status::Failed as i32);
    // A body that does not panic leaves the job alone.
    d.guarded("job-p", || {});
    assert_eq!(d.stats.job_panics.load(Ordering::Relaxed), 1);
}

#[test]
fn a_job_that_finished_as_the_daemon_stopped_is_delivered_not_refused() {
    // The drain stops the daemon the moment its last running job ends: a
    // client awaiting that job sees both at once, and must get the proof.
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    {
        let mut t = d.table.lock();
        insert(
            &mut t,
            "job-f",
            "porep-1000-1",
            "d1",
            ended(Status::Completed, false),
        );
        insert(&mut t, "job-q", "porep-1000-2", "d2", Phase::Accepting);
    }
    d.stopped.send_replace(true);
    // Multi-threaded: delivering a result blocks in place (journal write).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // Both branches are ready at every try; the answer must not depend on
    // which one the select polls first.
    for _ in 0..32 {
        let r = rt
            .block_on(d.await_job("job-f", Some(Duration::from_secs(60))))
            .unwrap();
        assert_eq!(r.status, Status::Completed as i32);
    }
    // A job that has not ended is answered "shutting down".
    let err = rt
        .block_on(d.await_job("job-q", Some(Duration::from_secs(60))))
        .unwrap_err();
    assert!(err.to_string().contains("shutting down"), "{err}");
}

#[test]
fn restored_jobs_show_as_recovering_then_queue_or_fail_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    // b: a request file whose record was lost: a PoRep request for a key
    // that is not in this (empty) parameter cache.
    let b = SubmitProofRequest {
        request_id: "porep-1000-7".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        registered_proof: 5,
        sector_size: 2048,
        vanilla_proof: b"{}".to_vec(),
        sector_number: 7,
        miner_id: 1000,
        ..Default::default()
    };
    let replayed = vec![
        Replayed::Unfinished {
            accepted: accepted("job-a", "porep-1000-6", "da"),
            request: b"\xff\xff not protobuf".to_vec(),
        },
        Replayed::Recovered {
            job_id: "job-b".into(),
            request: b.encode_to_vec(),
            accepted_unix_ms: unix_ms(),
        },
        Replayed::Undelivered {
            accepted: accepted("job-c", "porep-1000-8", "dc"),
            result: unproved(Status::Completed, String::new(), Duration::ZERO),
        },
    ];
    let pending = d.restore(replayed);
    assert_eq!(pending.len(), 2);
    let c = d.counts();
    assert_eq!((c.recovering, c.queued[0], c.finished), (2, 2, 1));
    let status = crate::metrics::status_json(&d);
    assert!(status.contains("\"recovering_jobs\":2"), "{status}");
    // A client asking again meanwhile gets the recovering job.
    {
        let mut t = d.table.lock();
        let known = t.existing("porep-1000-7", &digest(&b), &mut None).unwrap();
        assert_eq!(known.unwrap().job_id, "job-b");
    }
    d.recover(pending);
    {
        let t = d.table.lock();
        assert_eq!(t.unfinished, 0);
        for (id, words) in [("job-a", "does not decode"), ("job-b", "")] {
            match &t.jobs[id].phase {
                Phase::Finished { result, .. } => {
                    assert_eq!(result.status, Status::Failed as i32, "{id}");
                    let m = &result.error_message;
                    assert!(
                        m.contains("after a restart the journaled request was refused")
                            && m.contains(words),
                        "{id}: {m}"
                    );
                }
                other => panic!("{id}: {}", other.name()),
            }
        }
    }
    assert_eq!(d.counts().recovering, 0);
    // b's accepted record was written again, with its request id.
    let text = std::fs::read_to_string(dir.path().join("state/journal.jsonl")).unwrap();
    assert!(
        text.contains("\"job_id\":\"job-b\",\"request_id\":\"porep-1000-7\""),
        "{text}"
    );
}

#[test]
fn a_burst_of_large_requests_beyond_the_budget_is_refused() {
    let budget = CheckingBudget::new(100 << 20);
    let porep = |n: usize| SubmitProofRequest {
        request_id: "porep-1-1".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        vanilla_proof: vec![b' '; n],
        ..Default::default()
    };
    let post = |n: usize| SubmitProofRequest {
        request_id: "winpost-1-00".into(),
        proof_kind: ProofKind::WinningPost as i32,
        vanilla_proofs: vec![vec![0; n]],
        ..Default::default()
    };
    // A 1 MiB C1 holds 32 MiB while checked: three fit in 100 MiB.
    let held: Vec<_> = (0..3)
        .map(|_| budget.reserve(&porep(1 << 20)).unwrap())
        .collect();
    match budget.reserve(&porep(1 << 20)) {
        Err(RequestError::ResourceExhausted(m)) => {
            assert!(m.contains("limits.request_memory"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // A PoSt's vanilla proofs cost twice their bytes: it fits in what is left.
    let small = budget.reserve(&post(1 << 20)).unwrap();
    drop(held);
    let again = budget.reserve(&porep(1 << 20)).unwrap();
    drop((small, again));
    assert_eq!(budget.used(), 0);
}

#[test]
fn a_request_id_longer_than_the_bound_is_refused() {
    let mut req = SubmitProofRequest {
        request_id: "p".repeat(MAX_REQUEST_ID_BYTES + 1),
        proof_kind: ProofKind::PorepSealCommit as i32,
        ..Default::default()
    };
    match check_envelope(&req) {
        Err(RequestError::InvalidArgument(m)) => assert!(m.contains("more than 256"), "{m}"),
        other => panic!("{other:?}"),
    }
    req.request_id.truncate(MAX_REQUEST_ID_BYTES);
    assert_eq!(check_envelope(&req).unwrap(), Priority::Normal);
}

#[test]
fn a_stage_that_ran_reads_at_least_one_millisecond() {
    assert_eq!(super::millis(Duration::ZERO), 0);
    assert_eq!(super::millis(Duration::from_nanos(1)), 1);
    assert_eq!(super::millis(Duration::from_micros(600)), 1);
    assert_eq!(super::millis(Duration::from_millis(3)), 3);
    assert_eq!(super::millis(Duration::from_micros(3_001)), 4);
    assert_eq!(super::millis(Duration::MAX), u64::MAX);
}
