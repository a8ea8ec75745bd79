//! The timeline's tests: the JSON lines, busy time, the completion rate.

use super::*;
use tracing_subscriber::layer::SubscriberExt;

/// JSON lines, parsed.
fn parsed(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_json_lines_layer_writes_timeline_events_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.jsonl");
    let subscriber = tracing_subscriber::registry().with(json_lines_layer(&path).unwrap());
    let timeline = Timeline::recording();
    tracing::subscriber::with_default(subscriber, || {
        timeline.emit(JobId(3), 1, EventKind::ProveStart, "cpu-0/w0");
        tracing::info!("an ordinary log line");
        timeline.emit(JobId(3), 1, EventKind::ProveEnd, "cpu-0/w0");
    });
    let lines = parsed(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(lines.len(), 2);
    for (line, event) in lines.iter().zip(["prove_start", "prove_end"]) {
        assert_eq!(line["event"], event);
        assert_eq!(line["job"], 3);
        assert_eq!(line["partition"], 1);
        assert_eq!(line["worker"], "cpu-0/w0");
        assert!(line["unix_us"].as_u64().unwrap() > 0);
    }
    assert!(lines[0]["t_us"].as_u64() <= lines[1]["t_us"].as_u64());

    let events = timeline.events();
    assert_eq!(events.len(), 2);
    assert_eq!(
        timeline.stage_busy(Stage::Prove),
        events[1].at - events[0].at
    );
    assert_eq!(
        timeline.partition_events(JobId(3), 1),
        vec![EventKind::ProveStart, EventKind::ProveEnd]
    );
}

/// A batch's `prove_end` names its size and each member's bytes over
/// PCIe, in the JSON layer's lines and the recorded ones; other events
/// name neither, and a backend that says nothing of bytes leaves them
/// out.
#[test]
fn prove_end_names_the_batch_and_the_bytes_crossed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.jsonl");
    let subscriber = tracing_subscriber::registry().with(json_lines_layer(&path).unwrap());
    let timeline = Timeline::recording();
    let members = [(JobId(1), 0), (JobId(2), 4)];
    tracing::subscriber::with_default(subscriber, || {
        timeline.emit_together(&members, EventKind::ProveStart, "cuda-0/w0");
        timeline.emit_prove_end(&members, "cuda-0/w0", 2, Some(19_400_000_000));
        timeline.emit_prove_end(&[(JobId(3), 0)], "cpu-0/w0", 1, None);
    });
    let logged = parsed(&std::fs::read_to_string(&path).unwrap());
    let recorded = parsed(&timeline.json_lines());
    for lines in [&logged, &recorded] {
        assert_eq!(lines.len(), 5);
        for start in &lines[..2] {
            assert_eq!(start["event"], "prove_start");
            assert!(start.get("batch").is_none() && start.get("pcie_bytes").is_none());
        }
        for end in &lines[2..4] {
            assert_eq!(end["event"], "prove_end");
            assert_eq!(end["batch"], 2);
            assert_eq!(end["pcie_bytes"], 19_400_000_000u64);
        }
        assert_eq!(lines[4]["batch"], 1);
        assert!(lines[4].get("pcie_bytes").is_none());
    }
    assert_eq!(recorded[2]["t_us"], recorded[3]["t_us"], "one instant");
    let events = timeline.events();
    assert_eq!(events[3].job, JobId(2));
    assert_eq!(events[3].partition, 4);
    assert_eq!(
        (events[3].batch, events[3].crossed),
        (Some(2), Some(19_400_000_000))
    );
}

/// Two provers overlapping: the union counts the overlap once, the sum twice.
#[test]
fn covered_time_is_the_union_of_the_intervals() {
    let at = |ms: u64, job: u64, partition: usize, kind: EventKind| TimelineEvent {
        at: Duration::from_millis(ms),
        job: JobId(job),
        partition,
        kind,
        worker: "w".into(),
        batch: None,
        crossed: None,
    };
    use EventKind::{ProveEnd as End, ProveStart as Start};
    let events = [
        at(0, 0, 0, Start),
        at(10, 0, 1, Start), // overlaps partition 0 for 20 ms
        at(30, 0, 0, End),
        at(40, 0, 1, End),
        at(100, 1, 0, Start), // a gap of 60 ms, then 5 ms alone
        at(105, 1, 0, End),
    ];
    assert_eq!(covered(&events, Stage::Prove), Duration::from_millis(45));
    assert_eq!(covered(&events, Stage::Synthesis), Duration::ZERO);
}

fn ends(times_ms: &[u64]) -> Vec<TimelineEvent> {
    times_ms
        .iter()
        .enumerate()
        .map(|(partition, &ms)| TimelineEvent {
            at: Duration::from_millis(ms),
            job: JobId(0),
            partition,
            kind: EventKind::ProveEnd,
            worker: "w".into(),
            batch: None,
            crossed: None,
        })
        .collect()
}

#[test]
fn the_completion_rate_skips_warm_up_and_ignores_order() {
    // Two workers' first partitions end late (a key upload), then one
    // completion every 10 ms; emitted out of time order.
    let events = ends(&[500, 520, 540, 530, 550]);
    let rate = |skip| completion_rate(&events, Stage::Prove, skip);
    assert_eq!(rate(0), Some(Duration::from_micros(12_500)));
    assert_eq!(rate(1), Some(Duration::from_micros(12_500)));
    assert_eq!(rate(2), Some(Duration::from_millis(10)));
    assert_eq!(rate(4), Some(Duration::from_millis(10)));
    assert_eq!(rate(5), None);
    assert_eq!(completion_rate(&events, Stage::Synthesis, 0), None);
    assert_eq!(completion_rate(&ends(&[7]), Stage::Prove, 0), None);
}

/// Two workers that finish together every 2 s prove one partition a
/// second: the rate must say 1 s, not the 0.8 s that counting from the
/// first completion after warm-up gives (the H200 TIMELINE of
/// 2026-12-04 had this shape: pairs 1–80 ms apart).
#[test]
fn paired_completions_give_the_true_rate() {
    let paired = ends(&[
        1_000, 1_001, 3_000, 3_001, 5_000, 5_001, 7_000, 7_001, 9_000, 9_001,
    ]);
    assert_eq!(
        completion_rate(&paired, Stage::Prove, 2),
        Some(Duration::from_millis(1_000))
    );
    // Staggered by half a period, the same throughput reads the same.
    let staggered = ends(&[
        1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000, 10_000,
    ]);
    assert_eq!(
        completion_rate(&staggered, Stage::Prove, 2),
        Some(Duration::from_millis(1_000))
    );
    // One worker: every completion is its own period.
    let single = ends(&[1_500, 3_000, 4_500, 6_000]);
    assert_eq!(
        completion_rate(&single, Stage::Prove, 1),
        Some(Duration::from_millis(1_500))
    );
}

/// A partition alone, then a batch of nine completing at one instant
/// 18 s later (a 16 GiB card's parked batch): 2 s per partition from
/// the partition alone to the batch, whatever the warm-up skipped (the
/// window never starts inside the batch, which would count its members
/// in no time); two batches in a row, 1.5 s per member of the second.
#[test]
fn a_batch_completing_at_once_is_counted_from_the_completion_before_it() {
    let mut batch = vec![2_000u64];
    batch.extend([20_000; 9]);
    let events = ends(&batch);
    for skip in [1, 2, 5] {
        assert_eq!(
            completion_rate(&events, Stage::Prove, skip),
            Some(Duration::from_millis(2_000)),
            "skip {skip}"
        );
    }
    let mut two = vec![2_000u64, 20_000, 20_000];
    two.extend([26_000; 4]);
    assert_eq!(
        completion_rate(&ends(&two), Stage::Prove, 3),
        Some(Duration::from_millis(1_500))
    );
    // The last group wholly warm-up: nothing after it.
    assert_eq!(
        completion_rate(&ends(&[5_000, 5_000]), Stage::Prove, 2),
        None
    );
    // The first completions a batch of three (with the warm-up), then
    // batches of two and three: 1.5 s per member after the first batch,
    // never a member of it counted in no time.
    let first_batch = ends(&[9_000, 9_000, 9_000, 12_000, 12_000, 16_500, 16_500, 16_500]);
    for skip in [1, 2, 3] {
        assert_eq!(
            completion_rate(&first_batch, Stage::Prove, skip),
            Some(Duration::from_millis(1_500)),
            "skip {skip}"
        );
    }
}
