//! Shared code of cuzk's benchmarks: argument handling (`--test` smoke runs),
//! medians over repeats, random inputs that are never zeros, and the table +
//! JSON report every benchmark prints.
//!
//! Benchmarks run with `cargo bench -p cuzk-benches --bench NAME`; with
//! `-- --test` (as CI does) each runs once at a tiny size, to prove it works.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::{Curve, Group};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// How a benchmark binary was asked to run.
#[derive(Debug, Clone)]
pub struct BenchArgs {
    /// `--test`: one repeat at the smallest size (CI smoke run).
    pub smoke: bool,
    /// Repeats per measurement (median reported).
    pub repeats: usize,
    /// Positional filters (substring match on the case name), as cargo passes them.
    pub filters: Vec<String>,
}

impl BenchArgs {
    /// Parses `std::env::args`: `--test`, `--repeats N`, ignores `--bench`.
    pub fn from_env() -> Self {
        let mut smoke = false;
        let mut repeats = 5;
        let mut filters = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--test" => smoke = true,
                "--bench" => {}
                "--repeats" => {
                    repeats = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .expect("--repeats N");
                }
                other if other.starts_with("--") => {}
                other => filters.push(other.to_string()),
            }
        }
        if smoke {
            repeats = 1;
        }
        BenchArgs {
            smoke,
            repeats,
            filters,
        }
    }

    /// Whether a case named `name` is selected by the filters.
    pub fn wants(&self, name: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| name.contains(f.as_str()))
    }
}

/// Runs `f` `repeats` times (after one warm-up unless `smoke`) and returns the median.
pub fn median_time(repeats: usize, warm_up: bool, mut f: impl FnMut()) -> Duration {
    if warm_up {
        f();
    }
    let mut times: Vec<Duration> = (0..repeats.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// One row of a benchmark report.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured (e.g. "msm g1").
    pub case: String,
    /// log2 of the input size.
    pub size_log2: u32,
    /// cuzk's median time, milliseconds.
    pub ours_ms: f64,
    /// What it is compared with (e.g. "bellperson").
    pub baseline: String,
    /// The baseline's median time, milliseconds.
    pub baseline_ms: f64,
}

impl Row {
    /// ours / baseline: below 1 means cuzk is faster.
    pub fn ratio(&self) -> f64 {
        self.ours_ms / self.baseline_ms
    }
}

/// Prints the rows as a table and writes them as JSON under `target/bench-results/NAME.json`.
pub fn report(name: &str, rows: &[Row]) {
    let machine = machine();
    println!("\n{name} on {machine}");
    println!(
        "{:<28} {:>5} {:>12} {:>22} {:>12} {:>7}",
        "case", "log2", "cuzk ms", "baseline", "base ms", "ratio"
    );
    for r in rows {
        println!(
            "{:<28} {:>5} {:>12.2} {:>22} {:>12.2} {:>7.3}",
            r.case,
            r.size_log2,
            r.ours_ms,
            r.baseline,
            r.baseline_ms,
            r.ratio()
        );
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    if std::fs::create_dir_all(&dir).is_ok() {
        let json = serde_json::json!({
            "bench": name,
            "machine": machine,
            "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            "rows": rows.iter().map(|r| serde_json::json!({
                "case": r.case, "size_log2": r.size_log2, "cuzk_ms": r.ours_ms,
                "baseline": r.baseline, "baseline_ms": r.baseline_ms, "ratio": r.ratio(),
            })).collect::<Vec<_>>(),
        });
        let path = dir.join(format!("{name}.json"));
        if std::fs::write(
            &path,
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        )
        .is_ok()
        {
            println!("results: {}", path.display());
        }
    }
}

/// "N cores, CPU model" from /proc/cpuinfo where available.
pub fn machine() -> String {
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

/// A deterministic RNG for a benchmark (inputs are random, never zeros).
pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Random full-width scalars.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut r = rng(seed);
    (0..n).map(|_| Fr::random(&mut r)).collect()
}

/// n distinct G1 points cheaply: a random start plus multiples of a random step
/// (one addition each, one batch normalization), so large sizes are quick to make.
pub fn random_g1(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut r = rng(seed);
    let step = G1Projective::random(&mut r);
    let mut acc = G1Projective::random(&mut r);
    let proj: Vec<G1Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut out = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&proj, &mut out);
    out
}

/// n distinct G2 points, made like [`random_g1`].
pub fn random_g2(n: usize, seed: u64) -> Vec<G2Affine> {
    let mut r = rng(seed);
    let step = G2Projective::random(&mut r);
    let mut acc = G2Projective::random(&mut r);
    let proj: Vec<G2Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut out = vec![G2Affine::default(); n];
    G2Projective::batch_normalize(&proj, &mut out);
    out
}

/// Milliseconds as f64.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// user + system CPU seconds of the whole process (all threads), from
/// /proc/self/stat (fields 14 and 15, in USER_HZ = 100 ticks per second on
/// Linux): what getrusage(RUSAGE_SELF) reports, at tick resolution.
pub fn cpu_seconds() -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| anyhow::anyhow!("reading /proc/self/stat: {e}"))?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow::anyhow!("/proc/self/stat has no command field"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')' come field 3 (state) onwards: utime is field 14, stime 15.
    let ticks = |i: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(i - 3)
            .ok_or_else(|| anyhow::anyhow!("/proc/self/stat is too short"))?
            .parse::<u64>()? as f64)
    };
    Ok((ticks(14)? + ticks(15)?) / 100.0)
}

/// Resets the peak resident set (VmHWM) to the current one; Linux only.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set (VmHWM), the figure getrusage reports as ru_maxrss.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
