//! The TIMELINE: one event per step of every partition, through `tracing`
//! (target [`TIMELINE_TARGET`]) and, when asked, kept in memory.
//!
//! Every event carries the job, the partition, the event kind, the worker
//! that emitted it and `t_us`, microseconds since the engine's timeline
//! started. A partition that completes emits, in this order:
//! `synthesis_start`, `synthesis_end`, `queued_for_prover`, `prove_start`,
//! `prove_end`, `epilogue_start`, `epilogue_end`. One that is dropped emits
//! `discarded` (its job was cancelled or failed) or `failed` (its own error).
//!
//! To write the timeline to a file as JSON lines, add
//! [`JsonLinesLayer`] to a `tracing_subscriber` registry, or call
//! [`install_json_lines`]; to analyse it in-process, start the engine with a
//! [`Timeline::recording`] timeline and read [`Timeline::events`].

use std::fmt;
use std::fs::File;
use std::io::{self, LineWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::job::{JobId, Stage};

/// The `tracing` target of timeline events.
pub const TIMELINE_TARGET: &str = "cuzk::timeline";

/// What happened to a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum EventKind {
    /// A synthesis worker started it (its memory is reserved).
    SynthesisStart,
    /// Its witness is ready.
    SynthesisEnd,
    /// It waits for a prover.
    QueuedForProver,
    /// A prover worker started its MSMs (after device admission).
    ProveStart,
    /// Its MSM sums are ready.
    ProveEnd,
    /// The epilogue started on it.
    EpilogueStart,
    /// Its proof is made (and verified, when verification is on).
    EpilogueEnd,
    /// Dropped: its job was cancelled or failed meanwhile.
    Discarded,
    /// It failed (the job fails with its error).
    Failed,
}

impl EventKind {
    /// The snake_case name used in `tracing` fields and JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::SynthesisStart => "synthesis_start",
            EventKind::SynthesisEnd => "synthesis_end",
            EventKind::QueuedForProver => "queued_for_prover",
            EventKind::ProveStart => "prove_start",
            EventKind::ProveEnd => "prove_end",
            EventKind::EpilogueStart => "epilogue_start",
            EventKind::EpilogueEnd => "epilogue_end",
            EventKind::Discarded => "discarded",
            EventKind::Failed => "failed",
        }
    }

    /// The (start, end) events of a stage's busy interval.
    pub const fn interval(stage: Stage) -> (EventKind, EventKind) {
        match stage {
            Stage::Synthesis => (EventKind::SynthesisStart, EventKind::SynthesisEnd),
            Stage::Prove => (EventKind::ProveStart, EventKind::ProveEnd),
            Stage::Epilogue => (EventKind::EpilogueStart, EventKind::EpilogueEnd),
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimelineEvent {
    /// Since the timeline started.
    pub at: Duration,
    /// The job.
    pub job: JobId,
    /// The partition within the job.
    pub partition: usize,
    /// What happened.
    pub kind: EventKind,
    /// The worker that emitted it ("synth-0", "cpu-0/w1", ...).
    pub worker: String,
    /// On `prove_end` ([`Timeline::emit_prove_end`]): the partitions proved
    /// in the same backend call, this one among them.
    pub batch: Option<usize>,
    /// On `prove_end`: the bytes it moved between host and device, when
    /// the backend says ([`cuzk_groth16::prover::Backend::last_crossed`]).
    pub crossed: Option<u64>,
}

/// An engine's timeline: emits every event through `tracing` and, if
/// recording, keeps it.
#[derive(Debug)]
pub struct Timeline {
    epoch: Instant,
    recorded: Option<Mutex<Vec<TimelineEvent>>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    /// A timeline that only emits through `tracing`.
    pub fn new() -> Self {
        Timeline {
            epoch: Instant::now(),
            recorded: None,
        }
    }

    /// A timeline that also keeps every event in memory (a few dozen bytes
    /// per event: fine for benches and tests, not for a daemon that runs for
    /// months).
    pub fn recording() -> Self {
        Timeline {
            epoch: Instant::now(),
            recorded: Some(Mutex::new(Vec::new())),
        }
    }

    /// When `t_us = 0` is.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Emits one event.
    pub fn emit(&self, job: JobId, partition: usize, kind: EventKind, worker: &str) {
        self.emit_at(self.epoch.elapsed(), job, partition, kind, worker);
    }

    /// One `kind` event for each of `members` (job, partition) at one
    /// instant: a batch's members start and end together, and the rate
    /// ([`Timeline::stage_rate`]) groups completions of one instant.
    pub fn emit_together(&self, members: &[(JobId, usize)], kind: EventKind, worker: &str) {
        let at = self.epoch.elapsed();
        for &(job, partition) in members {
            self.emit_at(at, job, partition, kind, worker);
        }
    }

    /// `prove_end` for each of `members` at one instant, naming the
    /// backend call's size (`batch`) and the bytes each moved between host
    /// and device (`crossed`, when the backend says): the TIMELINE's record
    /// of which partitions shared a pass of the key and what crossed PCIe.
    pub fn emit_prove_end(
        &self,
        members: &[(JobId, usize)],
        worker: &str,
        batch: usize,
        crossed: Option<u64>,
    ) {
        let at = self.epoch.elapsed();
        for &(job, partition) in members {
            let e = TimelineEvent {
                at,
                job,
                partition,
                kind: EventKind::ProveEnd,
                worker: worker.to_string(),
                batch: Some(batch),
                crossed,
            };
            self.record(e);
        }
    }

    fn emit_at(&self, at: Duration, job: JobId, partition: usize, kind: EventKind, worker: &str) {
        self.record(TimelineEvent {
            at,
            job,
            partition,
            kind,
            worker: worker.to_string(),
            batch: None,
            crossed: None,
        });
    }

    /// Emits `e` through `tracing` (a `batch` and `pcie_bytes` field where
    /// it has them) and keeps it when recording.
    fn record(&self, e: TimelineEvent) {
        let t_us = u64::try_from(e.at.as_micros()).unwrap_or(u64::MAX);
        let (job, partition, event, worker) = (
            e.job.0,
            e.partition as u64,
            e.kind.as_str(),
            e.worker.as_str(),
        );
        match (e.batch, e.crossed) {
            (None, _) => {
                tracing::info!(target: TIMELINE_TARGET, t_us, job, partition, event, worker)
            }
            (Some(batch), None) => tracing::info!(target: TIMELINE_TARGET, t_us, job, partition,
                event, worker, batch = batch as u64),
            (Some(batch), Some(pcie_bytes)) => tracing::info!(target: TIMELINE_TARGET, t_us, job,
                partition, event, worker, batch = batch as u64, pcie_bytes),
        }
        if let Some(events) = &self.recorded {
            events.lock().push(e);
        }
    }

    /// The recorded events in emission order (empty unless recording).
    pub fn events(&self) -> Vec<TimelineEvent> {
        self.recorded
            .as_ref()
            .map(|e| e.lock().clone())
            .unwrap_or_default()
    }

    /// The recorded events as JSON lines, one object per event with `t_us`,
    /// `job`, `partition`, `event` and `worker`, and on `prove_end` its
    /// `batch` and (when the backend says) `pcie_bytes` (what the sweep and
    /// `cuzk porep-c2 --timeline` write, and `benches/tools/timeline_svg.py`
    /// draws).
    pub fn json_lines(&self) -> String {
        let mut text = String::new();
        for e in self.events() {
            let mut line = serde_json::json!({
                "t_us": u64::try_from(e.at.as_micros()).unwrap_or(u64::MAX),
                "job": e.job.0,
                "partition": e.partition,
                "event": e.kind.as_str(),
                "worker": e.worker,
            });
            if let Some(batch) = e.batch {
                line["batch"] = batch.into();
            }
            if let Some(bytes) = e.crossed {
                line["pcie_bytes"] = bytes.into();
            }
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text
    }

    /// The event kinds of one partition, in order.
    pub fn partition_events(&self, job: JobId, partition: usize) -> Vec<EventKind> {
        self.events()
            .into_iter()
            .filter(|e| e.job == job && e.partition == partition)
            .map(|e| e.kind)
            .collect()
    }

    /// The first time `kind` happened to (job, partition), if recorded.
    pub fn first(&self, job: JobId, partition: usize, kind: EventKind) -> Option<Duration> {
        self.events()
            .into_iter()
            .find(|e| e.job == job && e.partition == partition && e.kind == kind)
            .map(|e| e.at)
    }

    /// Summed busy time of `stage` over the recorded events: every
    /// (start, end) pair of the same partition.
    pub fn stage_busy(&self, stage: Stage) -> Duration {
        let (start, end) = EventKind::interval(stage);
        let events = self.events();
        let mut open: Vec<(JobId, usize, Duration)> = Vec::new();
        let mut busy = Duration::ZERO;
        for e in &events {
            if e.kind == start {
                open.push((e.job, e.partition, e.at));
            } else if e.kind == end {
                if let Some(i) = open
                    .iter()
                    .position(|(j, p, _)| *j == e.job && *p == e.partition)
                {
                    busy += e.at.saturating_sub(open.swap_remove(i).2);
                }
            }
        }
        busy
    }
    /// Wall time during which at least one partition was in `stage`: the
    /// union of the (start, end) intervals, which with several workers per
    /// stage is less than [`Timeline::stage_busy`].
    pub fn stage_covered(&self, stage: Stage) -> Duration {
        covered(&self.events(), stage)
    }
    /// Time per partition through `stage` in steady state: from the
    /// `skip`-th completion (the end of warm-up: each worker's first
    /// partition, which carries a key's upload) to the last, divided by the
    /// completions after the `skip`-th. `None` with too few completions.
    pub fn stage_rate(&self, stage: Stage, skip: usize) -> Option<Duration> {
        completion_rate(&self.events(), stage, skip)
    }
}

/// Steady-state time per partition through `stage`: the span from the
/// `skip`-th completion (the last of the warm-up ones) to the last
/// completion, over the completions in that span; `None` without a
/// completion after warm-up (or without two completions when `skip` is 0).
///
/// The span starts at a completion and counts only the completions after
/// it, so each counted partition's whole period lies inside it. Starting at
/// the first counted completion instead (and dividing by one less) reads
/// fast whenever workers finish together: two workers finishing in pairs
/// every 2T make a span of k·2T − ε hold 2k + 1 completions, which read as
/// ~2k/(2k + 1) of T (1.396 s for 1.483 s per partition on the H200's
/// TIMELINE of 2026-12-04, twenty partitions).
fn completion_rate(events: &[TimelineEvent], stage: Stage, skip: usize) -> Option<Duration> {
    let (_, end) = EventKind::interval(stage);
    let mut ends: Vec<Duration> = events
        .iter()
        .filter(|e| e.kind == end)
        .map(|e| e.at)
        .collect();
    ends.sort_unstable();
    // The span's first completion is the window's start, not one of its
    // partitions: the last warm-up one, or the very first when none is skipped.
    // A batch's members complete at one instant: a window starting inside
    // such a group starts before it instead (the members' period lies
    // between the completion before the group and the group), or, for the
    // very first group (nothing before it), at its end, counting none of it.
    let mut start = skip.max(1) - 1;
    if start + 1 < ends.len() && ends[start + 1] == ends[start] {
        let (mut first, mut last) = (start, start);
        while first > 0 && ends[first - 1] == ends[start] {
            first -= 1;
        }
        while last + 1 < ends.len() && ends[last + 1] == ends[start] {
            last += 1;
        }
        start = if first > 0 { first - 1 } else { last };
    }
    let counted = ends.len().checked_sub(start + 1).filter(|&c| c > 0)?;
    let last = *ends.last()?;
    Some((last - ends[start]) / counted as u32)
}

/// The union of `stage`'s (start, end) intervals in `events` (emission order).
fn covered(events: &[TimelineEvent], stage: Stage) -> Duration {
    let (start, end) = EventKind::interval(stage);
    let mut open: Vec<(JobId, usize)> = Vec::new();
    let (mut covered, mut since) = (Duration::ZERO, Duration::ZERO);
    for e in events {
        if e.kind == start {
            if open.is_empty() {
                since = e.at;
            }
            open.push((e.job, e.partition));
        } else if e.kind == end {
            if let Some(i) = open
                .iter()
                .position(|&(j, p)| j == e.job && p == e.partition)
            {
                open.swap_remove(i);
                if open.is_empty() {
                    covered += e.at.saturating_sub(since);
                }
            }
        }
    }
    covered
}

/// A `tracing_subscriber` layer that writes every timeline event (target
/// [`TIMELINE_TARGET`]) as one JSON object per line: the event's fields plus
/// `unix_us`, the wall-clock time. Other events are ignored.
#[derive(Debug)]
pub struct JsonLinesLayer<W: Write + Send + 'static> {
    out: Mutex<W>,
}

impl<W: Write + Send + 'static> JsonLinesLayer<W> {
    /// Writes to `out`.
    pub fn new(out: W) -> Self {
        JsonLinesLayer {
            out: Mutex::new(out),
        }
    }
}

/// A [`JsonLinesLayer`] writing to a new file at `path` (flushed per line).
pub fn json_lines_layer(path: &Path) -> io::Result<JsonLinesLayer<LineWriter<File>>> {
    Ok(JsonLinesLayer::new(LineWriter::new(File::create(path)?)))
}

/// Why [`install_json_lines`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The file could not be created.
    #[error("cannot create timeline file {}", path.display())]
    Create {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A global `tracing` subscriber is already set.
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadySet(String),
}

/// Installs a global subscriber whose only layer writes the timeline to
/// `path` as JSON lines. For more (e.g. logs to stderr as well), build a
/// registry with [`json_lines_layer`] and your other layers instead.
pub fn install_json_lines(path: &Path) -> Result<(), InstallError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let layer = json_lines_layer(path).map_err(|source| InstallError::Create {
        path: path.to_owned(),
        source,
    })?;
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .map_err(|e| InstallError::AlreadySet(e.to_string()))
}

impl<S, W> Layer<S> for JsonLinesLayer<W>
where
    S: Subscriber,
    W: Write + Send + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != TIMELINE_TARGET {
            return;
        }
        let mut fields = JsonFields(serde_json::Map::new());
        let unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        fields.0.insert("unix_us".into(), unix_us.into());
        event.record(&mut fields);
        let line = serde_json::Value::Object(fields.0).to_string();
        // A full disk must not take the engine down: the timeline is a report.
        let _ = writeln!(self.out.lock(), "{line}");
    }
}

struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl Visit for JsonFields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests;
