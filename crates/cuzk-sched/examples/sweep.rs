//! Pipeline sweep: runs the engine over a grid of settings and reports
//! throughput, latency, busy fraction per stage and peak host memory, as a
//! table, JSON and an SVG chart. `cargo xtask bench` runs this.
//!
//! ```text
//! cargo run --release -p cuzk-sched --example sweep -- \
//!     --log-size 14 --jobs 2 --partitions 3 --synthesis 1,2 --provers 1,2 \
//!     --in-flight 4 --budget auto --out benches/results/cpu-sample
//! ```
//!
//! Every list option takes comma-separated values; the grid is their
//! product, or the explicit `--points` list. `--smoke` runs one tiny point
//! (2^10, the committed key). Each point's TIMELINE is written next to the
//! JSON (`timeline-<label>.jsonl`), so its busy fractions can be recomputed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::memory::human as format_bytes;
use cuzk_pipeline::{
    DemoSource, Device, EngineConfig, Job, PartitionFootprint, PartitionSource, Scheduler, Stage,
    Timeline,
};
use cuzk_sched::Engine;
use cuzk_synth::DemoCircuit;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::json;

const USAGE: &str = "\
usage: sweep [options]
  --log-size K          demo circuit of 2^K constraints (default 14)
  --share S             SHA-256 share of the demo circuit (default 0.95)
  --jobs J              jobs per grid point (default 2)
  --partitions P        partitions per job (default 3)
  --devices N           CPU devices (default 1)
  --synthesis LIST      synthesis workers (default 1,2)
  --provers LIST        prover workers per device (default 1,2)
  --in-flight LIST      partitions admitted at once (default 4)
  --points LIST         explicit points S:P:F (synthesis:provers:in-flight),
                        comma-separated, instead of the product of the three
                        lists above; budgets and VRAM budgets still multiply
  --budget LIST         host-memory budget: auto (3/4 of RAM), Nx (N partition
                        footprints), N[KiB|MiB|GiB] or bytes (default auto)
  --backend B           cpu (default) or cuda: with cuda, --devices counts GPUs and
                        --provers the CUDA workers per GPU (VRAM admission)
  --vram LIST           VRAM budgets per GPU (auto or sizes such as 16GiB; cuda only)
  --repeats R           runs per point; the median wall time is reported (default 1)
  --no-verify           turn the epilogue's verification off
  --sequential-synthesis
                        synthesize each partition's lanes on one thread (the
                        profile of a single-threaded circuit such as PoRep's);
                        by default they run in parallel on rayon
  --key PATH            proving key (default: target/bench-keys/demo-K-SHARE.params,
                        generated with bellperson's generator when missing)
  --out DIR             results directory (default benches/results/sweep-kK-cpu)
  --smoke               one tiny point (2^10, committed key), for CI
";

/// The budget label of the warm-up run, whose timeline is not kept.
const WARM_UP: &str = "warm-up";

#[derive(Debug, Clone)]
struct Options {
    log_size: u32,
    share: f64,
    jobs: usize,
    partitions: usize,
    devices: usize,
    synthesis: Vec<usize>,
    provers: Vec<usize>,
    in_flight: Vec<usize>,
    /// Explicit (synthesis, provers, in-flight) points; empty: the product.
    points: Vec<(usize, usize, usize)>,
    budgets: Vec<String>,
    vram: Vec<String>,
    repeats: usize,
    verify: bool,
    sequential: bool,
    key: Option<PathBuf>,
    out: Option<PathBuf>,
    backend: String,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            log_size: 14,
            share: DemoCircuit::DEFAULT_SHA_SHARE,
            jobs: 2,
            partitions: 3,
            devices: 1,
            synthesis: vec![1, 2],
            provers: vec![1, 2],
            in_flight: vec![4],
            points: Vec::new(),
            budgets: vec!["auto".into()],
            vram: Vec::new(),
            repeats: 1,
            verify: true,
            sequential: false,
            key: None,
            out: None,
            backend: "cpu".into(),
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .with_context(|| format!("{flag} needs a value"))
                    .cloned()
            };
            match flag.as_str() {
                "--log-size" => o.log_size = value()?.parse()?,
                "--share" => o.share = value()?.parse()?,
                "--jobs" => o.jobs = value()?.parse()?,
                "--partitions" => o.partitions = value()?.parse()?,
                "--devices" => o.devices = value()?.parse()?,
                "--synthesis" => o.synthesis = list(&value()?)?,
                "--provers" => o.provers = list(&value()?)?,
                "--in-flight" => o.in_flight = list(&value()?)?,
                "--points" => o.points = triples(&value()?)?,
                "--budget" => o.budgets = value()?.split(',').map(str::to_string).collect(),
                "--vram" => o.vram = value()?.split(',').map(str::to_string).collect(),
                "--repeats" => o.repeats = value()?.parse::<usize>()?.max(1),
                "--no-verify" => o.verify = false,
                "--sequential-synthesis" => o.sequential = true,
                "--key" => o.key = Some(value()?.into()),
                "--backend" => o.backend = value()?,
                "--out" => o.out = Some(value()?.into()),
                "--smoke" | "--test" => {
                    o.log_size = 10;
                    o.jobs = 1;
                    o.partitions = 2;
                    o.synthesis = vec![1];
                    o.provers = vec![1];
                    o.in_flight = vec![2];
                    o.points = Vec::new();
                    o.key = Some(workspace_root().join("fixtures/demo-k10-sha95.params"));
                    if o.out.is_none() {
                        o.out = Some(workspace_root().join("target/bench-results/sweep-smoke"));
                    }
                }
                "--bench" => {}
                "-h" | "--help" => {
                    print!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown option `{other}`\n{USAGE}"),
            }
        }
        if o.jobs == 0 || o.partitions == 0 || o.devices == 0 {
            bail!("--jobs, --partitions and --devices must be at least 1");
        }
        Ok(o)
    }
}

/// `S:P:F,...` into (synthesis, provers, in-flight) triples, each at least 1.
fn triples(s: &str) -> Result<Vec<(usize, usize, usize)>> {
    s.split(',')
        .map(|t| {
            let v = t
                .trim()
                .split(':')
                .map(|n| n.trim().parse::<usize>().ok().filter(|&n| n > 0))
                .collect::<Option<Vec<_>>>();
            match v.as_deref() {
                Some(&[s, p, f]) => Ok((s, p, f)),
                _ => bail!("--points: `{t}` is not S:P:F (three positive integers)"),
            }
        })
        .collect()
}

fn list(s: &str) -> Result<Vec<usize>> {
    s.split(',')
        .map(|v| v.trim().parse().with_context(|| format!("`{v}` in `{s}`")))
        .collect()
}

/// A budget: `auto`, `Nx` partition footprints, `N[KiB|MiB|GiB]`, bytes.
fn parse_budget(s: &str, footprint: u64) -> Result<u64> {
    let s = s.trim();
    if s == "auto" {
        return Ok(EngineConfig::default().memory_budget);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix('x') {
        (n, footprint as f64)
    } else if let Some(n) = s.strip_suffix("GiB") {
        (n, (1u64 << 30) as f64)
    } else if let Some(n) = s.strip_suffix("MiB") {
        (n, (1u64 << 20) as f64)
    } else if let Some(n) = s.strip_suffix("KiB") {
        (n, 1024.0)
    } else {
        (s, 1.0)
    };
    let n: f64 = num
        .trim()
        .parse()
        .with_context(|| format!("budget `{s}`"))?;
    Ok((n * mult) as u64)
}

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn load_key(o: &Options) -> Result<ProvingKey> {
    let path = o.key.clone().unwrap_or_else(|| {
        workspace_root().join(format!(
            "target/bench-keys/demo-{}-{}.params",
            o.log_size,
            (o.share * 100.0) as u32
        ))
    });
    if let Ok(key) = ProvingKey::read_from_path(&path, PointCheck::OnCurve) {
        return Ok(key);
    }
    if o.key.is_some() {
        bail!("cannot read the key {}", path.display());
    }
    eprintln!(
        "generating the 2^{} demo key with bellperson's generator (cached at {})",
        o.log_size,
        path.display()
    );
    let t = Instant::now();
    let key = generate_key(
        DemoCircuit::new(o.log_size, o.share, 0),
        &mut ChaCha20Rng::seed_from_u64(u64::from(o.log_size)),
    )?;
    eprintln!("  {:.1} s", t.elapsed().as_secs_f64());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    key.write_to_path(&path)?;
    Ok(key)
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
    budget: u64,
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
        return Ok((0..o.devices).map(|d| Device::cpu(d, p.provers)).collect());
    }
    let budget = match &p.vram {
        None => cuzk_cuda::VramBudget::Auto,
        Some(v) => cuzk_cuda::VramBudget::parse(v).map_err(anyhow::Error::msg)?,
    };
    (0..o.devices)
        .map(|d| {
            let gpu = cuzk_cuda::Gpu::open(d).with_context(|| format!("opening GPU {d}"))?;
            cuzk_gpu::admission::pipeline_device(&gpu, p.provers, budget)
                .with_context(|| format!("CUDA workers on GPU {d} (VRAM budget {budget})"))
        })
        .collect()
}

fn run_point(
    o: &Options,
    p: &Point,
    key: &Arc<ProvingKey>,
    pvk: &Arc<PreparedVerifyingKey>,
    out_dir: &Path,
) -> Result<Outcome> {
    let mut runs = Vec::new();
    for repeat in 0..o.repeats {
        let timeline = Arc::new(Timeline::recording());
        let config = EngineConfig {
            synthesis_workers: p.synthesis,
            devices: devices(o, p)?,
            max_in_flight: p.in_flight,
            memory_budget: p.budget,
            verify: o.verify,
            timeline: Arc::clone(&timeline),
            largest_partition: Some(DemoCircuit::shape_for(o.log_size, o.share)),
            ..EngineConfig::default()
        };
        let rss = RssSampler::start();
        let engine = Engine::start(config)?;
        let started = Instant::now();
        let handles = (0..o.jobs)
            .map(|j| {
                let seed = 1000 * (repeat * o.jobs + j) as u64;
                let source = DemoSource::new(o.log_size, o.share, seed, o.partitions);
                let source: Arc<dyn PartitionSource> = Arc::new(if o.sequential {
                    source.in_sequence()
                } else {
                    source
                });
                engine.submit(
                    Job::new(source, Arc::clone(key))
                        .with_verifying_key(Arc::clone(pvk))
                        .with_label(format!("job-{j}")),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut latencies = Vec::new();
        let mut stage_ms: Vec<(String, f64)> = Vec::new();
        let mut add = |name: &str, d: Duration| {
            let ms = d.as_secs_f64() * 1e3 / proofs_per_run(o);
            match stage_ms.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => *v += ms,
                None => stage_ms.push((name.to_string(), ms)),
            }
        };
        for h in handles {
            let out = h.wait()?;
            latencies.push(out.latency.as_secs_f64());
            for part in &out.partitions {
                add("synthesis", part.synthesis);
                for (name, d) in &part.timings.stages {
                    add(name, *d);
                }
            }
        }
        let wall = started.elapsed().as_secs_f64();
        let metrics = engine.metrics();
        engine.shutdown();
        if p.budget_spec != WARM_UP {
            write_timeline(&out_dir.join(timeline_file(p, repeat)), &timeline)?;
        }
        let peak_rss = rss.peak();
        let workers = [
            p.synthesis as f64,
            (p.provers * o.devices) as f64,
            EngineConfig::default().epilogue_workers as f64,
        ];
        let mut busy = [0.0; 3];
        for (b, (stage, w)) in busy.iter_mut().zip(Stage::ALL.iter().zip(workers)) {
            *b = timeline.stage_busy(*stage).as_secs_f64() / (w * wall);
        }
        runs.push(Outcome {
            walls: vec![wall],
            wall,
            latencies,
            busy,
            peak_rss,
            peak_reserved: metrics.memory.peak_reserved,
            stage_ms,
        });
    }
    let walls: Vec<f64> = runs.iter().map(|r| r.wall).collect();
    runs.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    let mut median = runs.swap_remove(runs.len() / 2);
    median.walls = walls;
    Ok(median)
}

fn proofs_per_run(o: &Options) -> f64 {
    (o.jobs * o.partitions) as f64
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores, {model}")
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = Options::parse(&args)?;
    let shape = DemoCircuit::shape_for(o.log_size, o.share);
    let footprint = PartitionFootprint::cpu(&shape);
    let key = Arc::new(load_key(&o)?);
    let pvk = Arc::new(PreparedVerifyingKey::new(&key.vk));
    match o.backend.as_str() {
        "cpu" => {
            if !o.vram.is_empty() {
                eprintln!("note: --vram has no effect on the CPU backend; recorded only");
            }
        }
        "cuda" => {
            let gpus = cuzk_cuda::devices().context("--backend cuda")?;
            anyhow::ensure!(
                gpus.len() >= o.devices,
                "--devices {} but this machine has {} GPU(s)",
                o.devices,
                gpus.len()
            );
            for g in gpus.iter().take(o.devices) {
                eprintln!("backend: cuda on {g}");
            }
        }
        other => bail!("--backend {other}: expected cpu or cuda"),
    }
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
                    budget: parse_budget(spec, footprint.total())?,
                    vram: vram.clone(),
                });
            }
        }
    }

    let out_dir = o.out.clone().unwrap_or_else(|| {
        workspace_root().join(format!(
            "benches/results/sweep-k{}-{}",
            o.log_size, o.backend
        ))
    });
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Warm-up: page in the key and start rayon's pool outside the measurements.
    {
        let warm = Point {
            synthesis: 1,
            provers: 1,
            in_flight: 1,
            budget_spec: WARM_UP.into(),
            budget: EngineConfig::default().memory_budget,
            vram: None,
        };
        let one = Options {
            jobs: 1,
            partitions: 1,
            repeats: 1,
            devices: 1,
            ..o.clone()
        };
        run_point(&one, &warm, &key, &pvk, &out_dir)?;
    }

    let proofs = (o.jobs * o.partitions) as f64;
    println!(
        "\npipeline sweep on {}: demo 2^{} (share {}), {} job(s) x {} partition(s), {} {} device(s), verify {}",
        machine(),
        o.log_size,
        o.share,
        o.jobs,
        o.partitions,
        o.devices,
        o.backend,
        if o.verify { "on" } else { "off" }
    );
    println!(
        "one partition reserves {} (witness {} + working set {})",
        format_bytes(footprint.total()),
        format_bytes(footprint.witness),
        format_bytes(footprint.working_set)
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
        let r = match run_point(&o, p, &key, &pvk, &out_dir) {
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
        "args": args,
        "machine": machine(),
        "unix_time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "backend": o.backend,
        "devices": o.devices,
        "verify": o.verify,
        "circuit": {
            "kind": "demo",
            "log_size": o.log_size,
            "sha_share": o.share,
            "synthesis": if o.sequential { "sequential" } else { "parallel lanes" },
            "constraints": shape.num_constraints,
            "aux": shape.num_aux,
            "footprint_bytes": footprint.total(),
            "witness_bytes": footprint.witness,
            "working_set_bytes": footprint.working_set,
        },
        "jobs": o.jobs,
        "partitions_per_job": o.partitions,
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
                "memory_budget_bytes": p.budget,
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
        "cuzk pipeline sweep: demo 2^{}, {} x {} partitions, {} backend ({})",
        o.log_size,
        o.jobs,
        o.partitions,
        o.backend,
        machine()
    );
    let bars: Vec<(String, f64, [f64; 3])> = rows
        .iter()
        .map(|(p, r, per_hour, _)| (p.label(), *per_hour, r.busy))
        .collect();
    std::fs::write(&svg_path, svg_chart(&title, &bars))?;
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

/// A bar chart of proofs per hour per grid point, with each point's busy
/// fractions (synthesis, prove, epilogue) under its bar. Labels are
/// "s1 p2 | f4 auto": the first line the workers, the second the admission.
fn svg_chart(title: &str, bars: &[(String, f64, [f64; 3])]) -> String {
    let (left, right, top, plot_h) = (70.0, 20.0, 50.0, 300.0);
    // Wide enough for the title and the legend even with one bar.
    let width = (left + right + bars.len() as f64 * 100.0).max(880.0);
    let slot = (width - left - right) / bars.len().max(1) as f64;
    let bar_w = (slot * 0.6).min(70.0);
    let height = top + plot_h + 130.0;
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1.0);
    // A round axis maximum: 1, 2 or 5 times a power of ten.
    let magnitude = 10f64.powf(max.log10().floor());
    let axis_max = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&v| v >= max)
        .unwrap_or(10.0 * magnitude);
    let y = |v: f64| top + plot_h * (1.0 - v / axis_max);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{left}" y="24" font-size="14" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    for i in 0..=5 {
        let v = axis_max * i as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{:.0}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.0}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
            width - right,
            left - 6.0,
            y(v) + 4.0,
            y = y(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(16,{:.0}) rotate(-90)" text-anchor="middle">proofs per hour</text>"#,
        top + plot_h / 2.0
    );
    for (i, (label, value, busy)) in bars.iter().enumerate() {
        let cx = left + slot * (i as f64 + 0.5);
        let x = cx - bar_w / 2.0;
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{bar_w:.1}" height="{:.1}" fill="#4878a8"/><text x="{cx:.1}" y="{:.1}" text-anchor="middle">{value:.0}</text>"##,
            y(*value),
            top + plot_h - y(*value),
            y(*value) - 4.0
        );
        let mut words = label.split(' ');
        let workers: Vec<&str> = words.by_ref().take(2).collect();
        let admission: Vec<&str> = words.collect();
        for (row, line) in [workers.join(" "), admission.join(" ")].iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{cx:.1}" y="{:.0}" text-anchor="middle">{}</text>"#,
                top + plot_h + 16.0 + 14.0 * row as f64,
                xml_escape(line)
            );
        }
        for (row, (name, b)) in ["syn", "prv", "epi"].iter().zip(busy).enumerate() {
            let _ = writeln!(
                s,
                r##"<text x="{cx:.1}" y="{:.0}" text-anchor="middle" fill="#555">{name} {:.0}%</text>"##,
                top + plot_h + 48.0 + 14.0 * row as f64,
                100.0 * b
            );
        }
    }
    for (row, line) in [
        "s: synthesis workers, p: prover workers per device, f: partitions in flight, then the host-memory budget.",
        "Under each bar: busy fraction of each stage (synthesis, prove, epilogue) over the run, from the TIMELINE.",
    ]
    .iter()
    .enumerate()
    {
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="{:.0}" fill="#555">{line}</text>"##,
            height - 26.0 + 14.0 * row as f64
        );
    }
    s.push_str("</svg>\n");
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
