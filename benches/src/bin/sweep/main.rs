//! Pipeline sweep: runs the engine over a grid of settings and reports
//! throughput, latency, busy fraction per stage and peak host memory, as a
//! table, JSON and an SVG chart. `cargo xtask bench` runs this.
//!
//! ```text
//! cargo run --release -p cuzk-benches --bin sweep -- \
//!     --log-size 14 --jobs 2 --partitions 3 --synthesis 1,2 --provers 1,2 \
//!     --in-flight 4 --budget auto --out benches/results/cpu-sample
//! cargo run --release -p cuzk-benches --bin sweep -- --circuit porep \
//!     --sector-size 32GiB --jobs 2 --points 4:1:5 --backend cuda
//! ```
//!
//! The demo circuit, or Filecoin PoRep C2 on synthetic CC sectors (or C1
//! files) with the key from the parameter cache, each proof checked with
//! `verify_seal` (`workload.rs`). `--smoke` runs one tiny point (CI runs it
//! for both circuits). Each point's TIMELINE is written next to the JSON
//! (`timeline-<label>.jsonl`), so its busy fractions can be recomputed.

mod chart;
mod options;
mod workload;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_benches::machine;
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_pipeline::memory::human as format_bytes;
use cuzk_pipeline::{
    Device, EngineConfig, Job, PartitionFootprint, Provers, Scheduler, Stage, Timeline,
};
use cuzk_sched::Engine;
use cuzk_synth::CircuitShape;
use serde_json::json;

use options::{parse_budget, Options};
use workload::Workload;

/// The budget label of the warm-up run, whose timeline is not kept.
const WARM_UP: &str = "warm-up";

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// `VmRSS` or `VmHWM` from /proc/self/status, bytes.
fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Samples VmRSS every 10 ms until dropped; `peak()` is the largest sample.
struct RssSampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl RssSampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(proc_status_kib("VmRSS:").unwrap_or(0));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak.max(proc_status_kib("VmRSS:").unwrap_or(0))
        });
        RssSampler {
            stop,
            thread: Some(thread),
        }
    }

    fn peak(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

#[derive(Debug, Clone)]
struct Point {
    synthesis: usize,
    provers: usize,
    in_flight: usize,
    budget_spec: String,
    vram: Option<String>,
}

impl Point {
    fn label(&self) -> String {
        let vram = self
            .vram
            .as_ref()
            .map_or(String::new(), |v| format!(" vram {v}"));
        format!(
            "s{} p{} f{} {}{vram}",
            self.synthesis, self.provers, self.in_flight, self.budget_spec
        )
    }
}

#[derive(Debug, Clone)]
struct Outcome {
    walls: Vec<f64>,
    wall: f64,
    latencies: Vec<f64>,
    busy: [f64; 3],
    peak_rss: u64,
    peak_reserved: u64,
    /// The host budget the point ran under, bytes.
    budget: u64,
    /// What one partition reserved on the point's devices.
    footprint: PartitionFootprint,
    /// Mean per partition of the backend's stages and of synthesis, ms.
    stage_ms: Vec<(String, f64)>,
}

impl Outcome {
    /// The busiest stage and its busy fraction.
    fn bottleneck(&self) -> (&'static str, f64) {
        let i = (0..3)
            .max_by(|&a, &b| self.busy[a].total_cmp(&self.busy[b]))
            .unwrap_or(0);
        (Stage::ALL[i].as_str(), self.busy[i])
    }
}

/// The devices of one grid point: CPU devices, or GPUs with CUDA workers
/// sharing a VRAM arena (the point's budget) under VRAM admission.
fn devices(o: &Options, p: &Point) -> Result<Vec<Device>> {
    if o.backend == "cpu" {
        return Ok((0..o.devices as usize)
            .map(|d| Device::cpu(d, p.provers))
            .collect());
    }
    let budget = match &p.vram {
        None => cuzk_cuda::VramBudget::Auto,
        Some(v) => cuzk_cuda::VramBudget::parse(v).map_err(anyhow::Error::msg)?,
    };
    (0..o.devices as usize)
        .map(|d| {
            let config = cuzk_gpu::GpuConfig::default()
                .with_budget(budget)
                .with_workers(p.provers);
            let gpu = cuzk_gpu::GpuDevice::open(d, &config)
                .with_context(|| format!("opening GPU {d} (VRAM budget {budget})"))?;
            Ok(gpu.pipeline_device())
        })
        .collect()
}

/// One grid point, `o.repeats` times: the median run.
fn run_point(
    o: &Options,
    w: &Workload,
    p: &Point,
    shape: &CircuitShape,
    pvk: &Arc<PreparedVerifyingKey>,
    out_dir: &Path,
) -> Result<Outcome> {
    let jobs = o.jobs as usize;
    let mut runs = Vec::new();
    for repeat in 0..o.repeats as usize {
        let timeline = Arc::new(Timeline::recording());
        let mut config = EngineConfig::default();
        config.synthesis_workers = p.synthesis;
        config.devices = devices(o, p)?;
        config.max_in_flight = p.in_flight;
        config.verify = !o.no_verify;
        config.timeline = Arc::clone(&timeline);
        config.largest_partition = Some(shape.clone());
        // The footprint on these devices' backends (a GPU keeps its working
        // set in VRAM); `auto` leaves the key's bytes out of 3/4 of RAM.
        let footprint = Provers::of(&config).footprint(shape);
        let auto = EngineConfig::default()
            .memory_budget
            .saturating_sub(w.key_bytes());
        let spec = if p.budget_spec == WARM_UP {
            "auto"
        } else {
            &p.budget_spec
        };
        config.memory_budget = parse_budget(spec, footprint.total(), auto)?;
        let budget = config.memory_budget;
        let rss = RssSampler::start();
        let engine = Engine::start(config)?;
        let started = Instant::now();
        let handles = (0..jobs)
            .map(|j| {
                let seed = 1000 * (repeat * jobs + j) as u64;
                let job = Job::new(w.source(j, seed)?, Arc::clone(w.key()))
                    .with_verifying_key(Arc::clone(pvk))
                    .with_label(format!("job-{j}"));
                Ok(engine.submit(job)?)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut latencies = Vec::new();
        let mut stage_ms: Vec<(String, f64)> = Vec::new();
        let per_run = (jobs * w.partitions()) as f64;
        let mut add = |name: &str, d: Duration| {
            let ms = d.as_secs_f64() * 1e3 / per_run;
            match stage_ms.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => *v += ms,
                None => stage_ms.push((name.to_string(), ms)),
            }
        };
        let mut outputs = Vec::new();
        for h in handles {
            let out = h.wait()?;
            latencies.push(out.latency.as_secs_f64());
            for part in &out.partitions {
                add("synthesis", part.synthesis);
                for (name, d) in &part.timings.stages {
                    add(name, *d);
                }
            }
            outputs.push(out);
        }
        let wall = started.elapsed().as_secs_f64();
        let metrics = engine.metrics();
        engine.shutdown();
        for (j, out) in outputs.iter().enumerate() {
            w.check(j, out)?;
        }
        if p.budget_spec != WARM_UP {
            write_timeline(&out_dir.join(timeline_file(p, repeat)), &timeline)?;
        }
        let peak_rss = rss.peak();
        let workers = [
            p.synthesis as f64,
            (p.provers * o.devices as usize) as f64,
            EngineConfig::default().epilogue_workers as f64,
        ];
        let mut busy = [0.0; 3];
        for (b, (stage, n)) in busy.iter_mut().zip(Stage::ALL.iter().zip(workers)) {
            *b = timeline.stage_busy(*stage).as_secs_f64() / (n * wall);
        }
        runs.push(Outcome {
            walls: vec![wall],
            wall,
            latencies,
            busy,
            peak_rss,
            peak_reserved: metrics.memory.peak_reserved,
            budget,
            footprint,
            stage_ms,
        });
    }
    let walls: Vec<f64> = runs.iter().map(|r| r.wall).collect();
    runs.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    let mut median = runs.swap_remove(runs.len() / 2);
    median.walls = walls;
    Ok(median)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The grid: the product of the worker lists (or `--points`), times the
/// budgets, times the VRAM budgets.
fn grid(o: &Options) -> Vec<Point> {
    let vrams: Vec<Option<String>> = if o.vram.is_empty() {
        vec![None]
    } else {
        o.vram.iter().cloned().map(Some).collect()
    };
    let workers: Vec<(usize, usize, usize)> = if o.points.is_empty() {
        let mut product = Vec::new();
        for &synthesis in &o.synthesis {
            for &provers in &o.provers {
                for &in_flight in &o.in_flight {
                    product.push((synthesis, provers, in_flight));
                }
            }
        }
        product
    } else {
        o.points.clone()
    };
    let mut points = Vec::new();
    for &(synthesis, provers, in_flight) in &workers {
        for spec in &o.budgets {
            for vram in &vrams {
                points.push(Point {
                    synthesis,
                    provers,
                    in_flight,
                    budget_spec: spec.clone(),
                    vram: vram.clone(),
                });
            }
        }
    }
    points
}

fn main() -> Result<()> {
    let o = Options::from_args()?;
    match o.backend.as_str() {
        "cpu" => {
            if !o.vram.is_empty() {
                eprintln!("note: --vram has no effect on the CPU backend; recorded only");
            }
        }
        _ => {
            let gpus = cuzk_cuda::devices().context("--backend cuda")?;
            anyhow::ensure!(
                gpus.len() as u64 >= o.devices,
                "--devices {} but this machine has {} GPU(s)",
                o.devices,
                gpus.len()
            );
            for g in gpus.iter().take(o.devices as usize) {
                eprintln!("backend: cuda on {g}");
            }
        }
    }
    let w = Workload::load(&o)?;
    let shape = w.shape()?;
    let pvk = Arc::new(PreparedVerifyingKey::new(&w.key().vk));
    let points = grid(&o);
    let out_dir = o.out.clone().unwrap_or_else(|| {
        workspace_root().join(format!("benches/results/sweep-{}-{}", w.slug(), o.backend))
    });
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Warm-up: page in the key and start rayon's pool outside the
    // measurements (the demo circuit only: a PoRep partition is too long).
    if !o.no_warm_up && matches!(w, Workload::Demo { .. }) {
        let warm = Point {
            synthesis: 1,
            provers: 1,
            in_flight: 1,
            budget_spec: WARM_UP.into(),
            vram: None,
        };
        let one = Options {
            jobs: 1,
            repeats: 1,
            devices: 1,
            budgets: vec!["auto".into()],
            ..o.clone()
        };
        let one_partition = Workload::Demo {
            log_size: o.log_size,
            share: o.share,
            partitions: 1,
            sequential: o.sequential_synthesis,
            key: Arc::clone(w.key()),
        };
        run_point(&one, &one_partition, &warm, &shape, &pvk, &out_dir)
            .context("the warm-up run")?;
    }

    let proofs = (o.jobs as usize * w.partitions()) as f64;
    println!(
        "\npipeline sweep on {}: {}, {} job(s) x {} partition(s), {} {} device(s), verify {}",
        machine(),
        w.describe(),
        o.jobs,
        w.partitions(),
        o.devices,
        o.backend,
        if o.no_verify { "off" } else { "on" }
    );
    println!(
        "partition: {} constraints, {} aux, domain 2^{}",
        shape.num_constraints, shape.num_aux, shape.domain_log2
    );
    println!(
        "{:>5} {:>8} {:>8} {:>10} {:>8} {:>10} {:>8} {:>9} {:>9} {:>6} {:>6} {:>6} {:>10} {:>10}",
        "synth",
        "prov/dev",
        "inflight",
        "budget",
        "wall s",
        "proofs/h",
        "jobs/h",
        "lat mean",
        "lat max",
        "syn%",
        "prv%",
        "epi%",
        "peak RSS",
        "peak rsv"
    );
    let mut rows = Vec::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    for p in &points {
        // A point that fails (say, a device error) is reported and the sweep
        // goes on: the other points' results are still worth having.
        let r = match run_point(&o, &w, p, &shape, &pvk, &out_dir) {
            Ok(r) => r,
            Err(e) => {
                println!(
                    "{:>5} {:>8} {:>8}  FAILED: {e:#}",
                    p.synthesis, p.provers, p.in_flight
                );
                failures.push((p.label(), format!("{e:#}")));
                continue;
            }
        };
        let per_hour = proofs / r.wall * 3600.0;
        let jobs_per_hour = o.jobs as f64 / r.wall * 3600.0;
        let lat_max = r.latencies.iter().copied().fold(0.0, f64::max);
        println!(
            "{:>5} {:>8} {:>8} {:>10} {:>8.2} {:>10.0} {:>8.0} {:>9.2} {:>9.2} {:>6.1} {:>6.1} {:>6.1} {:>10} {:>10}",
            p.synthesis,
            p.provers,
            p.in_flight,
            match &p.vram {
                Some(v) => format!("{}/{v}", p.budget_spec),
                None => p.budget_spec.clone(),
            },
            r.wall,
            per_hour,
            jobs_per_hour,
            mean(&r.latencies),
            lat_max,
            100.0 * r.busy[0],
            100.0 * r.busy[1],
            100.0 * r.busy[2],
            format_bytes(r.peak_rss),
            format_bytes(r.peak_reserved),
        );
        rows.push((p.clone(), r, per_hour, jobs_per_hour));
    }
    if let Some((_, r, ..)) = rows.first() {
        println!(
            "one partition reserves {} (witness {} + host working set {}); budget {}",
            format_bytes(r.footprint.total()),
            format_bytes(r.footprint.witness),
            format_bytes(r.footprint.working_set),
            format_bytes(r.budget)
        );
    }
    // Against the no-overlap point (one synthesis worker, one prover, one
    // partition in flight), when the grid has it.
    let baseline = rows
        .iter()
        .find(|(p, ..)| p.synthesis == 1 && p.provers == 1 && p.in_flight == 1)
        .map(|(_, r, ..)| r.wall);
    for (p, r, ..) in &rows {
        let (stage, busy) = r.bottleneck();
        let speedup = baseline.map_or(String::new(), |b| {
            format!(", {:.2}x the no-overlap point's throughput", b / r.wall)
        });
        println!(
            "{}: bottleneck {stage} busy {:.1}%{speedup}",
            p.label(),
            100.0 * busy
        );
    }
    let report = json!({
        "bench": "pipeline-sweep",
        "args": std::env::args().skip(1).collect::<Vec<_>>(),
        "machine": machine(),
        "unix_time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "backend": o.backend,
        "devices": o.devices,
        "verify": !o.no_verify,
        "circuit": w.json(&shape),
        "jobs": o.jobs,
        "partitions_per_job": w.partitions(),
        "repeats": o.repeats,
        "process_peak_rss_bytes": proc_status_kib("VmHWM:"),
        "points": rows.iter().map(|(p, r, per_hour, jobs_per_hour)| {
            let (bottleneck, bottleneck_busy) = r.bottleneck();
            json!({
                "label": p.label(),
                "synthesis_workers": p.synthesis,
                "provers_per_device": p.provers,
                "max_in_flight": p.in_flight,
                "memory_budget": p.budget_spec,
                "vram_budget": p.vram.clone().unwrap_or_else(|| "auto".into()),
                "memory_budget_bytes": r.budget,
                "footprint_bytes": r.footprint.total(),
                "witness_bytes": r.footprint.witness,
                "working_set_bytes": r.footprint.working_set,
                "wall_s": r.wall,
                "wall_s_repeats": r.walls,
                "proofs_per_hour": per_hour,
                "jobs_per_hour": jobs_per_hour,
                "latency_s": {
                    "mean": mean(&r.latencies),
                    "max": r.latencies.iter().copied().fold(0.0, f64::max),
                    "per_job": r.latencies,
                },
                "busy_fraction": {
                    "synthesis": r.busy[0],
                    "prove": r.busy[1],
                    "epilogue": r.busy[2],
                },
                "bottleneck": bottleneck,
                "bottleneck_busy_fraction": bottleneck_busy,
                "throughput_vs_no_overlap": baseline.map(|b| b / r.wall),
                "timeline": timeline_file(p, 0),
                "peak_rss_bytes": r.peak_rss,
                "peak_reserved_bytes": r.peak_reserved,
                "partition_stage_ms": r.stage_ms.iter()
                    .map(|(n, v)| (n.clone(), json!(v)))
                    .collect::<serde_json::Map<_, _>>(),
            })
        }).collect::<Vec<_>>(),
        "failed_points": failures.iter()
            .map(|(label, error)| json!({ "label": label, "error": error }))
            .collect::<Vec<_>>(),
    });
    let json_path = out_dir.join("sweep.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)?;
    let svg_path = out_dir.join("sweep.svg");
    let title = format!(
        "cuzk pipeline sweep: {}, {} x {} partitions, {} backend ({})",
        w.describe(),
        o.jobs,
        w.partitions(),
        o.backend,
        machine()
    );
    let bars: Vec<(String, f64, [f64; 3])> = rows
        .iter()
        .map(|(p, r, per_hour, _)| (p.label(), *per_hour, r.busy))
        .collect();
    std::fs::write(&svg_path, chart::svg_chart(&title, &bars))?;
    if let Some((p, r, _, _)) = rows.first() {
        let stages: Vec<String> = r
            .stage_ms
            .iter()
            .map(|(n, v)| format!("{n} {v:.1}"))
            .collect();
        println!(
            "mean per partition at {} (ms, wall time under the run's contention): {}",
            p.label(),
            stages.join(", ")
        );
    }
    println!(
        "results: {}\n         {}",
        json_path.display(),
        svg_path.display()
    );
    if !failures.is_empty() {
        bail!(
            "{} of {} point(s) failed: {}",
            failures.len(),
            points.len(),
            failures
                .iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

/// The file a point's TIMELINE (repeat `repeat`) is written to, in the
/// results directory: one JSON object per event.
fn timeline_file(p: &Point, repeat: usize) -> String {
    let label: String = p
        .label()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("timeline-{label}-r{repeat}.jsonl")
}

fn write_timeline(path: &Path, timeline: &Timeline) -> Result<()> {
    std::fs::write(path, timeline.json_lines())
        .with_context(|| format!("writing {}", path.display()))
}
