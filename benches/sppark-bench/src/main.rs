//! `sppark-bench`: sppark's BLS12-381 G1 and G2 MSM and Fr forward NTT, built from crates.io
//! (sppark 0.1.16, the version supraseal-c2 0.1 uses), timed on data already in device memory,
//! so that cuzk's `msm_bench` and `ntt_bench` can be read beside it (benches/device/msm-vs-sppark.sh
//! prints the ratio). README.md says what is inside each timed region.
//!
//! Before any timing, sppark's results are checked on the host: the G1 and G2 MSM of 2^12 points
//! against blstrs' `multi_exp`, the NTT of 2^10 against the transform by its definition. Every
//! timed MSM's warm-up and repeats are checked too (folded onto the distinct bases, see
//! [`host::fold`]), and every timed NTT's warm-up at three outputs. A failed check ends the run
//! with exit status 1 before that size's timings are printed.

mod host;
mod sppark;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::Parser;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use host::HostCurve;
use sppark::{DeviceBuffer, Msm, G1, G2};

/// The sppark version this binary is built against (Cargo.toml pins it with `=`).
const SPPARK_VERSION: &str = "0.1.16";
/// The correctness checks' sizes (log₂): MSM against blstrs, NTT against the definition.
const CHECK_MSM_LOG: u32 = 12;
const CHECK_NTT_LOG: u32 = 10;
/// sppark's NTT supports domains up to 2^MAX_LG_DOMAIN_SIZE (ntt/parameters.cuh: 28).
const MAX_NTT_LOG: u32 = 28;
/// sppark's scalar breakdown asserts len ≤ 2^31.
const MAX_MSM_LOG: u32 = 31;

/// sppark's G1/G2 MSM and Fr NTT on device-resident data: median of repeats after one warm-up.
#[derive(Parser, Debug)]
#[command(name = "sppark-bench")]
struct Args {
    /// G1 MSM sizes (log₂, comma-separated; empty for none).
    #[arg(long, default_value = "24,26")]
    g1_logs: String,
    /// G2 MSM sizes (log₂, comma-separated; empty for none).
    #[arg(long, default_value = "24")]
    g2_logs: String,
    /// Forward NTT sizes (log₂, comma-separated; empty for none).
    #[arg(long, default_value = "27")]
    ntt_logs: String,
    /// Timed runs per size after the warm-up (the median is reported).
    #[arg(long, default_value_t = 7)]
    repeats: usize,
    /// Also write the rows as JSON to this file (rewritten after every size).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seed of the bases and scalars (from the clock when absent; printed either way).
    #[arg(long)]
    seed: Option<u64>,
    /// Distinct random bases per curve; the n bases of a size repeat them.
    #[arg(long, default_value_t = 4096)]
    distinct_bases: usize,
}

fn parse_logs(flag: &str, value: &str, max: u32) -> Result<Vec<u32>> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let log: u32 = s
                .parse()
                .with_context(|| format!("{flag}: {s:?} is not a number"))?;
            ensure!(
                (1..=max).contains(&log),
                "{flag}: 2^{log} is outside 2^1 … 2^{max}"
            );
            Ok(log)
        })
        .collect()
}

/// What timed a row.
#[derive(Clone, Copy)]
enum Timer {
    /// Host steady clock around `msm_t::invoke`, after a device synchronize.
    HostClock,
    /// CUDA events on sppark's stream around `NTT::Base_dev_ptr`.
    CudaEvents,
}

impl Timer {
    fn label(self) -> &'static str {
        match self {
            Timer::HostClock => "host clock around msm_t::invoke",
            Timer::CudaEvents => "CUDA events around NTT::Base_dev_ptr",
        }
    }
}

struct Row {
    what: String,
    log_n: u32,
    /// Sorted.
    samples_ms: Vec<f64>,
    timer: Timer,
}

impl Row {
    fn new(what: String, log_n: u32, mut samples_ms: Vec<f64>, timer: Timer) -> Self {
        samples_ms.sort_by(f64::total_cmp);
        let row = Row {
            what,
            log_n,
            samples_ms,
            timer,
        };
        println!(
            "  sppark {} 2^{}: median {:.2} ms (min {:.2}, max {:.2} over {} runs; {})",
            row.what,
            row.log_n,
            row.median(),
            row.samples_ms[0],
            row.max(),
            row.samples_ms.len(),
            row.timer.label()
        );
        row
    }

    fn median(&self) -> f64 {
        self.samples_ms[self.samples_ms.len() / 2]
    }

    fn max(&self) -> f64 {
        self.samples_ms[self.samples_ms.len() - 1]
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("sppark-bench: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    let g1_logs = parse_logs("--g1-logs", &args.g1_logs, MAX_MSM_LOG)?;
    let g2_logs = parse_logs("--g2-logs", &args.g2_logs, MAX_MSM_LOG)?;
    let ntt_logs = parse_logs("--ntt-logs", &args.ntt_logs, MAX_NTT_LOG)?;
    ensure!(args.repeats >= 1, "--repeats must be at least 1");
    ensure!(
        args.distinct_bases >= 1,
        "--distinct-bases must be at least 1"
    );

    let device = sppark::open()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "sppark-bench: sppark {SPPARK_VERSION} on {} ({} SMs), host {cores} cores",
        device.name, device.sm_count
    );
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    println!("seed {seed}");
    let d = args.distinct_bases;
    println!(
        "bases: {d} distinct random points k·G per curve, REPEATED to fill n (base i is point \
         i mod {d}; every base is still its own 96 or 192 bytes in device memory); scalars: \
         uniform full-width Fr, fresh for every size, Montgomery form"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let started = Instant::now();
    let g1_points = G1::random_points(&mut rng, d);
    let g2_points = G2::random_points(&mut rng, d);
    println!(
        "made the distinct bases in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Correctness first: no timing is printed unless all three hold.
    check_msm::<G1>(&g1_points, &mut rng, CHECK_MSM_LOG)?;
    check_msm::<G2>(&g2_points, &mut rng, CHECK_MSM_LOG)?;
    check_ntt(&mut rng, CHECK_NTT_LOG)?;

    let mut rows = Vec::new();
    for &log in &g1_logs {
        rows.push(time_msm::<G1>(&g1_points, log, args.repeats, &mut rng)?);
        write_json(args.json.as_ref(), &device, seed, d, &rows)?;
    }
    for &log in &g2_logs {
        rows.push(time_msm::<G2>(&g2_points, log, args.repeats, &mut rng)?);
        write_json(args.json.as_ref(), &device, seed, d, &rows)?;
    }
    for &log in &ntt_logs {
        rows.push(time_ntt(log, args.repeats, &mut rng)?);
        write_json(args.json.as_ref(), &device, seed, d, &rows)?;
    }
    print_table(&device, &rows);
    Ok(())
}

/// sppark's MSM of 2^log_n points against blstrs' `multi_exp` on the same bases and scalars.
fn check_msm<C: HostCurve>(points: &[C::Affine], rng: &mut ChaCha8Rng, log_n: u32) -> Result<()> {
    let n = 1usize << log_n;
    let bases = host::tile(points, n);
    let scalars = host::random_fr(rng, n);
    let d_bases = DeviceBuffer::upload(&bases)?;
    let d_scalars = DeviceBuffer::upload(&scalars)?;
    let mut msm = Msm::<C>::new(n)?;
    let (got, _) = msm.run(&d_bases, &d_scalars, n)?;
    let host_scalars: Vec<_> = scalars.iter().map(host::to_scalar).collect();
    let expected = C::host_msm(&bases, &host_scalars);
    if C::from_jacobian(got) != expected {
        bail!(
            "check FAILED: sppark's {} MSM of 2^{log_n} points differs from blstrs' multi_exp; no timings",
            C::NAME
        );
    }
    println!(
        "check: sppark {} MSM of 2^{log_n} = blstrs multi_exp: ok",
        C::NAME
    );
    Ok(())
}

/// sppark's forward NTT of 2^log_n values against e_j = Σ c_i·ω^(ij) for every j.
fn check_ntt(rng: &mut ChaCha8Rng, log_n: u32) -> Result<()> {
    let input = host::random_fr(rng, 1 << log_n);
    let mut data = DeviceBuffer::upload(&input)?;
    sppark::ntt_forward(&mut data)?;
    let got = data.download()?;
    let expected = host::naive_dft(&input, log_n);
    if let Some(j) = (0..got.len()).find(|&j| host::to_scalar(&got[j]) != expected[j]) {
        bail!(
            "check FAILED: sppark's forward NTT of 2^{log_n} differs from the definition at output {j} \
             (natural order, ω = ROOT_OF_UNITY^(2^(32-{log_n}))); no timings"
        );
    }
    println!("check: sppark forward NTT of 2^{log_n} = the transform by its definition: ok");
    Ok(())
}

/// One MSM size: data on the device, the engine made, one checked warm-up, then `repeats`
/// checked and timed runs.
fn time_msm<C: HostCurve>(
    points: &[C::Affine],
    log_n: u32,
    repeats: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Row> {
    let n = 1usize << log_n;
    let started = Instant::now();
    let scalars = host::random_fr(rng, n);
    let d_bases = DeviceBuffer::upload(&host::tile(points, n))?;
    let d_scalars = DeviceBuffer::upload(&scalars)?;
    let mut msm = Msm::<C>::new(n)?;
    let expected = C::host_msm(points, &host::fold(&scalars, points.len()));
    drop(scalars);
    println!(
        "{} MSM 2^{log_n}: data made, on the device, and the host reference computed in {:.1} s",
        C::NAME,
        started.elapsed().as_secs_f64()
    );
    let check = |got: C::Jacobian, which: &str| -> Result<()> {
        ensure!(
            C::from_jacobian(got) == expected,
            "check FAILED: sppark's {} MSM of 2^{log_n} points ({which}) differs from the host's \
             (blstrs multi_exp over the distinct bases with folded scalars); no timings",
            C::NAME
        );
        Ok(())
    };
    let (warm, warm_ms) = msm.run(&d_bases, &d_scalars, n)?;
    check(warm, "warm-up")?;
    println!("  warm-up {warm_ms:.2} ms, result checked");
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let (got, ms) = msm.run(&d_bases, &d_scalars, n)?;
        check(got, "a timed run")?;
        samples.push(ms);
    }
    Ok(Row::new(
        format!("{} MSM", C::NAME),
        log_n,
        samples,
        Timer::HostClock,
    ))
}

/// One NTT size: data on the device, one warm-up (which also builds sppark's twiddle tables)
/// checked at outputs 0, 1 and n/2, then `repeats` timed transforms of the same buffer in place.
fn time_ntt(log_n: u32, repeats: usize, rng: &mut ChaCha8Rng) -> Result<Row> {
    let n = 1usize << log_n;
    let input = host::random_fr(rng, n);
    let mut data = DeviceBuffer::upload(&input)?;
    let warm_ms = sppark::ntt_forward(&mut data)?;
    let got = data.download()?;
    // e_0 = Σ c_i; e_1 = Σ c_i·ω^i; e_(n/2) = Σ (−1)^i c_i (ω^(n/2) = −1).
    let (even, odd) = input.iter().enumerate().fold(
        (blstrs::Scalar::ZERO, blstrs::Scalar::ZERO),
        |(even, odd), (i, c)| {
            if i % 2 == 0 {
                (even + host::to_scalar(c), odd)
            } else {
                (even, odd + host::to_scalar(c))
            }
        },
    );
    let checks = [
        (0, even + odd),
        (1, host::evaluate(&input, host::omega(log_n))),
        (n / 2, even - odd),
    ];
    for (j, expected) in checks {
        ensure!(
            host::to_scalar(&got[j]) == expected,
            "check FAILED: sppark's forward NTT of 2^{log_n} differs from the definition at output {j}; no timings"
        );
    }
    drop((input, got));
    println!("NTT 2^{log_n}: warm-up {warm_ms:.2} ms, outputs 0, 1 and n/2 checked");
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        samples.push(f64::from(sppark::ntt_forward(&mut data)?));
    }
    Ok(Row::new(
        "NTT forward".to_string(),
        log_n,
        samples,
        Timer::CudaEvents,
    ))
}

fn print_table(device: &sppark::Device, rows: &[Row]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "\nsppark {SPPARK_VERSION} on {}: bases and scalars in device memory, median of the timed runs",
        device.name
    );
    let _ = writeln!(
        table,
        "| what | n | median ms | min ms | max ms | timed by |"
    );
    let _ = writeln!(table, "| --- | --- | --- | --- | --- | --- |");
    for r in rows {
        let _ = writeln!(
            table,
            "| {} | 2^{} | {:.2} | {:.2} | {:.2} | {} |",
            r.what,
            r.log_n,
            r.median(),
            r.samples_ms[0],
            r.max(),
            r.timer.label()
        );
    }
    print!("{table}");
}

fn write_json(
    path: Option<&PathBuf>,
    device: &sppark::Device,
    seed: u64,
    distinct_bases: usize,
    rows: &[Row],
) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut json = format!(
        "{{\"bench\": \"sppark\", \"sppark\": \"{SPPARK_VERSION}\", \"device\": \"{}\", \"seed\": {seed}, \"distinct_bases\": {distinct_bases}, \"rows\": [\n",
        device.name.replace(['"', '\\'], "'")
    );
    for (i, r) in rows.iter().enumerate() {
        let sep = if i + 1 < rows.len() { "," } else { "" };
        let samples: Vec<String> = r.samples_ms.iter().map(|s| format!("{s:.4}")).collect();
        let _ = writeln!(
            json,
            "  {{\"what\": \"{}\", \"n\": {}, \"log_n\": {}, \"median_ms\": {:.4}, \"min_ms\": {:.4}, \"max_ms\": {:.4}, \"samples_ms\": [{}], \"timer\": \"{}\"}}{sep}",
            r.what,
            1u64 << r.log_n,
            r.log_n,
            r.median(),
            r.samples_ms[0],
            r.max(),
            samples.join(", "),
            r.timer.label()
        );
    }
    json.push_str("]}\n");
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}
