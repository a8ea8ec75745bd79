//! How every proving command proves: its jobs through a scheduler on one
//! device, within one host budget, with one report. The serial scheduler
//! (one partition at a time, synthesis then proof) runs when one synthesis
//! worker and one job are asked for; cuzk-sched's pipelined engine runs
//! otherwise, synthesizing several partitions while the device proves.
//! Either way the same seed gives the same proof bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cuzk_pipeline::{
    memory::human, Device, EngineConfig, Job, JobHandle, JobOutput, Scheduler, Stage, Timeline,
};
use cuzk_sched::Engine;
use cuzk_sched_serial::SerialScheduler;
use cuzk_synth::CircuitShape;
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::{report_partitions, Stages};

/// Which scheduler proves a command's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// `cuzk-sched-serial`: each partition synthesized, then proved, then the next.
    Serial,
    /// `cuzk-sched`: this many synthesis workers beside the device's provers.
    Pipelined {
        /// Synthesis workers (rayon inside each).
        synthesis_workers: usize,
    },
}

impl Schedule {
    /// Serial for one synthesis worker and one job, pipelined otherwise.
    pub(crate) fn for_workers(synthesis_workers: usize, jobs: usize) -> Self {
        if synthesis_workers <= 1 && jobs <= 1 {
            Schedule::Serial
        } else {
            Schedule::Pipelined {
                synthesis_workers: synthesis_workers.max(1),
            }
        }
    }

    fn describe(self) -> String {
        match self {
            Schedule::Serial => "serial scheduler: one partition at a time".into(),
            Schedule::Pipelined { synthesis_workers } => format!(
                "pipelined engine: {synthesis_workers} synthesis worker(s) beside the provers"
            ),
        }
    }
}

/// What a run needs besides its jobs.
#[derive(Clone, Debug)]
pub(crate) struct RunSettings {
    /// The scheduler.
    pub(crate) schedule: Schedule,
    /// `--host-budget`; `None`: 3/4 of the memory less the key.
    pub(crate) host_budget: Option<u64>,
    /// Check every partition's proof in the engine's epilogue.
    pub(crate) verify: bool,
    /// What the progress bar calls the work ("partitions").
    pub(crate) what: &'static str,
}

/// A finished run: each job's output, in submission order, and how it went.
pub(crate) struct EngineRun {
    /// One per job, in submission order.
    pub(crate) outputs: Vec<JobOutput>,
    /// From the first submission to the last job's end.
    pub(crate) wall: Duration,
    /// Every partition's events.
    pub(crate) timeline: Arc<Timeline>,
    schedule: Schedule,
    provers: usize,
    prover: String,
}

/// Proves `jobs` (every one with a key of `shape`'s circuit, `key_bytes`
/// held in memory meanwhile) on `device`, as `settings` say, behind a
/// progress bar over their partitions. Refused before any work when the
/// host budget cannot hold one partition, with both numbers.
pub(crate) fn run_jobs(
    device: Device,
    jobs: Vec<Job>,
    shape: &CircuitShape,
    key_bytes: u64,
    settings: &RunSettings,
) -> Result<EngineRun> {
    let (budget, why) = match settings.host_budget {
        Some(b) => (b, "--host-budget".to_string()),
        None => cuzk_pipeline::host::budget_beside_key(key_bytes),
    };
    let workers = match settings.schedule {
        Schedule::Serial => 1,
        Schedule::Pipelined { synthesis_workers } => synthesis_workers,
    };
    let prover = prover_name(&device);
    let provers = device.backends.len().max(1);
    let timeline = Arc::new(Timeline::recording());
    let mut config = EngineConfig::default();
    config.synthesis_workers = workers;
    config.devices = vec![device];
    config.max_in_flight = workers + 1;
    config.memory_budget = budget;
    config.verify = settings.verify;
    config.largest_partition = Some(shape.clone());
    config.timeline = Arc::clone(&timeline);
    // A GPU that batches a streamed key's partitions gets them queued.
    let config = config.with_batch_room();
    eprintln!(
        "{}; host budget {} ({why}); proving on {prover}",
        settings.schedule.describe(),
        human(budget)
    );
    let t = Instant::now();
    let outputs = match settings.schedule {
        Schedule::Serial => prove_all::<SerialScheduler>(config, jobs, settings.what, |_| {}),
        // A GPU's recording pinned for streaming is counted in the engine's
        // host budget beside the partitions.
        Schedule::Pipelined { .. } => prove_all::<Engine>(config, jobs, settings.what, |engine| {
            cuzk_gpu::count_pinned_matrices_in(Arc::new(engine.host_lender()))
        }),
    }
    .with_context(|| format!("host budget: {why}"))?;
    Ok(EngineRun {
        outputs,
        wall: t.elapsed(),
        timeline,
        schedule: settings.schedule,
        provers,
        prover,
    })
}

/// Starts `S` (then `started` with it), submits every job at once (so the
/// next job's partitions fill the pipeline while the last ones of the
/// previous are proved), shows the partitions proved, waits for all, and
/// shuts down.
fn prove_all<S: Scheduler>(
    config: EngineConfig,
    jobs: Vec<Job>,
    what: &str,
    started: impl FnOnce(&S),
) -> Result<Vec<JobOutput>> {
    let engine = S::start(config).context("starting the engine")?;
    started(&engine);
    let mut handles = Vec::with_capacity(jobs.len());
    for job in jobs {
        let label = job.label.clone();
        handles.push(
            engine
                .submit(job)
                .with_context(|| format!("submitting {label}"))?,
        );
    }
    let total: usize = handles.iter().map(|h| h.progress().1).sum();
    let bar = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {{bar:30}} {{pos}}/{{len}} {what} proved [{{elapsed}}]"
        ))
        .expect("static template"),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    while let Some(waiting) = handles.iter().find(|h| !h.is_finished()) {
        waiting.wait_timeout(Duration::from_millis(250));
        bar.set_position(proved(&handles) as u64);
    }
    bar.finish_and_clear();
    let outputs = handles
        .into_iter()
        .map(|h| {
            let label = h.label().to_string();
            h.wait().with_context(|| format!("proving {label}"))
        })
        .collect::<Result<Vec<_>>>();
    engine.shutdown();
    outputs
}

fn proved(handles: &[JobHandle]) -> usize {
    handles.iter().map(|h| h.progress().0).sum()
}

impl EngineRun {
    /// Each job's proof bytes (192 per partition, in partition order).
    pub(crate) fn proof_bytes(&self) -> Vec<Vec<u8>> {
        self.outputs
            .iter()
            .map(|o| o.proofs.iter().flat_map(|p| p.to_bytes()).collect())
            .collect()
    }

    /// Prints one line per partition and pushes the run's stages:
    /// synthesis and proving summed over partitions, each job's latency and
    /// the steady state when there are several, the per-partition rate from
    /// the TIMELINE once past each prover's first partition, and the wall time.
    pub(crate) fn report(&self, stages: &mut Stages) {
        let (mut synthesis, mut proving) = (Duration::ZERO, Duration::ZERO);
        let several = self.outputs.len() > 1;
        for (j, out) in self.outputs.iter().enumerate() {
            let label = if several {
                format!("job {j} ")
            } else {
                String::new()
            };
            let (s, p) = report_partitions(&label, &out.partitions);
            synthesis += s;
            proving += p;
        }
        let shape = self
            .outputs
            .iter()
            .flat_map(|o| &o.partitions)
            .map(|p| &p.shape)
            .max_by_key(|s| s.num_constraints);
        stages.push((
            "synthesis".into(),
            synthesis,
            match shape {
                Some(s) => format!(
                    "summed over partitions; {} constraints, {} inputs, {} aux per partition",
                    s.num_constraints, s.num_inputs, s.num_aux
                ),
                None => "no partitions".into(),
            },
        ));
        stages.push((
            "proving".into(),
            proving,
            format!("summed stages, {}", self.prover),
        ));
        if several {
            for (j, out) in self.outputs.iter().enumerate() {
                stages.push((
                    format!("proof {j}"),
                    out.latency,
                    format!(
                        "from submission to verified proof, {} partitions",
                        out.proofs.len()
                    ),
                ));
            }
            let last = self.outputs.iter().map(|o| o.latency).max();
            let first = self.outputs.iter().map(|o| o.latency).min();
            if let (Some(last), Some(first)) = (last, first) {
                stages.push((
                    "steady state".into(),
                    (last - first) / (self.outputs.len() as u32 - 1),
                    "per proof: (last completion - first completion) / (proofs - 1)".into(),
                ));
            }
        }
        // Every prover's first partition carries the key's upload (a
        // long-running daemon pays it once).
        if let Some(rate) = self.timeline.stage_rate(Stage::Prove, self.provers) {
            stages.push((
                "per partition".into(),
                rate,
                format!(
                    "steady state, from the TIMELINE: (last proved - proved #{}) / partitions \
                     after it (each prover's first partition is warm-up)",
                    self.provers
                ),
            ));
        }
        let busy = self.timeline.stage_covered(Stage::Prove);
        stages.push((
            "pipeline".into(),
            self.wall,
            format!(
                "{}; prover busy {:.0}% of the wall time (from the TIMELINE)",
                self.schedule.describe(),
                100.0 * busy.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
            ),
        ));
    }
}

/// How an engine device proves, for reports: its backend's name and, when it
/// has several workers, how many (`cuda:0 ×2`).
pub(crate) fn prover_name(device: &Device) -> String {
    let name = device.backends.first().map_or("none", |b| b.name());
    match device.backends.len() {
        1 => name.to_string(),
        n => format!("{name} ×{n}"),
    }
}
