//! NTT benchmark: Fr transforms 2^16 … 2^27 on data in device memory, timed
//! with CUDA events after warm-up (median of repeats, fresh random data), with
//! two floors measured in the same run:
//!
//! * bytes: one read and one write of the vector (64·n bytes) over the
//!   measured device-to-device copy bandwidth;
//! * products: (n/2)·log₂n Montgomery products over the measured Fr product
//!   rate (probe kernel: independent product chains on every thread);
//!
//! plus the pinned host↔device copy rate and the other probes' rates (the
//! product's CIOS and reduced-radix forms, the Fq square, inversions, and
//! the FP64 pipe alone and beside Fq products: MSM kernel experiments read
//! them). Prints a table last; with
//! `CUZK_BENCH_OUT=dir` also writes `dir/ntt_bench.json` and appends the
//! table to `dir/summary.txt`.
//!
//! `cargo run --release -p cuzk-benches --bin ntt_bench -- [--smoke] [--min-log K]
//! [--max-log K]`. Without a CUDA device it says it skipped and exits 0, so CI
//! smoke-runs it (`.ci/run`). The product-rate probe kernels are in the test
//! unit (kernels/manifest-dev.toml), which a bundle carries.

use std::fmt::Write as _;
use std::time::Instant;

use clap::Parser;
use cuzk_cuda::ntt::{h_step, ntt, ntt_with, pass_plan, NttConfig, NttKind};
use cuzk_cuda::probes::{mul_throughput_probe, ProbeProduct, DFMA_PER_STEP, MUL_PROBE_CHAINS};
use cuzk_cuda::{DeviceBuffer, Gpu, PinnedBuffer, Stream, VramBudget};
use cuzk_field::limbs::{FqLimbs, FrLimbs};

/// The target for a forward 2^27 NTT (ms).
const TARGET_2_27_MS: f64 = 40.0;

fn main() {
    if let Err(e) = run() {
        eprintln!("ntt_bench: {e}");
        std::process::exit(1);
    }
}

/// GPU NTT benchmark over Fr, with the copy and product-rate ceilings
/// measured in the same run.
#[derive(Parser, Debug)]
#[command(name = "ntt_bench")]
struct Args {
    /// A smoke run: 2^10 … 2^12, one repeat, small ceiling probes.
    #[arg(long, alias = "test")]
    smoke: bool,
    /// Smallest transform (log2).
    #[arg(long, default_value_t = 16)]
    min_log: u32,
    /// Largest transform (log2).
    #[arg(long, default_value_t = 27)]
    max_log: u32,
    /// Device memory the bindings may reserve: `auto` (what is free, less a
    /// margin) or a size such as `40GiB` (room for a profiler beside it).
    #[arg(long, default_value = "auto", value_parser = VramBudget::parse)]
    vram_budget: VramBudget,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Args {
    /// The command line, with a smoke run's sizes applied.
    fn parse_smoke_aware() -> Self {
        let mut a = Args::parse();
        if a.smoke {
            a.min_log = 10;
            a.max_log = 12;
        }
        a
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse_smoke_aware();
    let Some(gpu) = Gpu::first_with(args.vram_budget)? else {
        println!("ntt_bench: skipped: no CUDA device");
        return Ok(());
    };
    let stream = gpu.new_stream()?;
    println!(
        "ntt_bench on {} (host: {})",
        gpu.info(),
        cuzk_benches::machine()
    );
    let reps = |log_n: u32| {
        if args.smoke {
            1
        } else if log_n >= 24 {
            7
        } else {
            21
        }
    };

    // ---- ceilings measured in this run --------------------------------------
    let copy_bytes: usize = if args.smoke { 1 << 24 } else { 1 << 31 };
    let d2d_bw = measure_d2d(&stream, copy_bytes, if args.smoke { 1 } else { 5 })?;
    let (h2d_bw, d2h_bw) = measure_pinned(
        &gpu,
        &stream,
        if args.smoke { 1 << 24 } else { 1 << 30 },
        if args.smoke { 1 } else { 5 },
    )?;
    let rate = |fq: bool, product| {
        if fq {
            measure_mul_rate::<FqLimbs>(&gpu, &stream, args.smoke, product)
        } else {
            measure_mul_rate::<FrLimbs>(&gpu, &stream, args.smoke, product)
        }
    };
    let fr_rate = rate(false, ProbeProduct::Default)?;
    let fq_rate = rate(true, ProbeProduct::Default)?;
    let fr_rate_cios = rate(false, ProbeProduct::Cios)?;
    let fq_rate_cios = rate(true, ProbeProduct::Cios)?;
    let fr_rate_rr = rate(false, ProbeProduct::ReducedRadix)?;
    let fq_rate_rr = rate(true, ProbeProduct::ReducedRadix)?;
    let fr_inv = rate(false, ProbeProduct::Inverse)?;
    let fq_inv = rate(true, ProbeProduct::Inverse)?;
    let fq_inv_fermat = rate(true, ProbeProduct::InverseFermat)?;
    let fq_sqr = rate(true, ProbeProduct::Square)?;
    let dfma = rate(true, ProbeProduct::Dfma)? * DFMA_PER_STEP as f64;
    let fq_with_dfma = rate(true, ProbeProduct::DefaultWithDfma)?;
    let fq_fp64 = rate(true, ProbeProduct::Fp64)?;
    let fq_mixed = rate(true, ProbeProduct::Mixed)?;
    let products = format!(
        "Fr product {fr_rate:.3e}/s (CIOS form {fr_rate_cios:.3e}/s, reduced radix {fr_rate_rr:.3e}/s), Fq product {fq_rate:.3e}/s (CIOS form {fq_rate_cios:.3e}/s, reduced radix {fq_rate_rr:.3e}/s), Fq square {fq_sqr:.3e}/s; inversions: Fr {fr_inv:.3e}/s, Fq {fq_inv:.3e}/s (Fermat {fq_inv_fermat:.3e}/s): one Fq inversion = {:.0} products ({:.0} by Fermat); FP64: {dfma:.3e} DFMA/s alone, Fq products with {DFMA_PER_STEP} DFMAs each beside them {fq_with_dfma:.3e}/s ({:.2} of the product rate alone; {:.2} of the DFMA rate); Fq product with its schoolbook half on FP64 {fq_fp64:.3e}/s, half the chains each way {fq_mixed:.3e}/s ({:.2} of the product rate)",
        fq_rate / fq_inv,
        fq_rate / fq_inv_fermat,
        fq_with_dfma / fq_rate,
        fq_with_dfma * DFMA_PER_STEP as f64 / dfma,
        fq_mixed / fq_rate,
    );
    println!(
        "ceilings: device copy {:.0} GB/s (read + write), pinned H2D {:.1} GB/s, D2H {:.1} GB/s; {products}",
        d2d_bw / 1e9,
        h2d_bw / 1e9,
        d2h_bw / 1e9,
    );

    // ---- transforms -----------------------------------------------------------
    let mut rows = Vec::new();
    let mut seed = seed_from_time();
    println!("random data seed {seed}");
    for log_n in args.min_log..=args.max_log {
        let n = 1usize << log_n;
        let host = random_fr_limbs(n, &mut seed);
        let mut buf = stream.upload_new(&host)?;
        drop(host);
        let mut times = Vec::new();
        for kind in NttKind::ALL {
            // Warm-up (twiddle tables, module, clocks), then the repeats.
            for _ in 0..2 {
                ntt(&stream, &mut buf, kind)?;
            }
            let mut samples = Vec::new();
            for _ in 0..reps(log_n) {
                let start = stream.record()?;
                ntt(&stream, &mut buf, kind)?;
                let end = stream.record()?;
                samples.push(start.elapsed_ms(&end)? as f64);
            }
            times.push(median(&mut samples));
        }
        let bytes_floor_ms = 64.0 * n as f64 / d2d_bw * 1e3;
        let products = (n as f64 / 2.0) * log_n as f64;
        let mul_floor_ms = products / fr_rate * 1e3;
        rows.push(Row {
            log_n,
            plan: pass_plan(log_n),
            ms: times,
            bytes_floor_ms,
            mul_floor_ms,
        });
        let r = rows.last().expect("pushed");
        println!(
            "2^{log_n:<2} {:?}: forward {:.3} ms, inverse {:.3}, coset {:.3}, coset inverse {:.3}",
            r.plan, r.ms[0], r.ms[1], r.ms[2], r.ms[3]
        );
    }

    // ---- launch-shape sweep (forward) at 2^24 and the largest size -------------
    let mut sweep = Vec::new();
    for log_n in [24u32.min(args.max_log), args.max_log] {
        if sweep.iter().any(|(l, _, _)| *l == log_n) {
            continue;
        }
        let n = 1usize << log_n;
        let mut buf = stream.upload_new(&random_fr_limbs(n, &mut seed))?;
        for config in NttConfig::all() {
            let mut run = || -> Result<f64, Box<dyn std::error::Error>> {
                ntt_with(&stream, &mut buf, NttKind::Forward, config)?;
                let mut samples = Vec::new();
                for _ in 0..reps(log_n) {
                    let start = stream.record()?;
                    ntt_with(&stream, &mut buf, NttKind::Forward, config)?;
                    let end = stream.record()?;
                    samples.push(start.elapsed_ms(&end)? as f64);
                }
                Ok(median(&mut samples))
            };
            match run() {
                Ok(ms) => sweep.push((log_n, config, ms)),
                Err(e) => println!("2^{log_n} {config:?}: {e}"),
            }
        }
    }

    // ---- one partition's H polynomial at the largest size ---------------------
    let h_log = args.max_log;
    let h_ms = measure_h_pipeline(&stream, h_log, &mut seed, if args.smoke { 1 } else { 3 })?;

    // ---- table last -------------------------------------------------------------
    let mut table = String::new();
    writeln!(
        table,
        "NTT over Fr on {} (data in device memory; median ms over repeats)",
        gpu.info()
    )?;
    writeln!(
        table,
        "ceilings measured: copy {:.0} GB/s, pinned H2D {:.1} GB/s, D2H {:.1} GB/s;\n{products}",
        d2d_bw / 1e9,
        h2d_bw / 1e9,
        d2h_bw / 1e9,
    )?;
    writeln!(
        table,
        "{:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}  plan",
        "log n", "forward", "inverse", "coset", "coset inv", "floor B", "floor mul", "% floor"
    )?;
    for r in &rows {
        let floor = r.bytes_floor_ms.max(r.mul_floor_ms);
        writeln!(
            table,
            "{:>5} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>6.0}%  {:?}",
            r.log_n,
            r.ms[0],
            r.ms[1],
            r.ms[2],
            r.ms[3],
            r.bytes_floor_ms,
            r.mul_floor_ms,
            100.0 * floor / r.ms[0],
            r.plan
        )?;
    }
    // Launch shapes, fastest first per size (ntt() uses NttConfig::for_log_n).
    for log_n in [24u32.min(args.max_log), args.max_log] {
        let mut shapes: Vec<_> = sweep.iter().filter(|(l, _, _)| *l == log_n).collect();
        if shapes.is_empty() {
            continue;
        }
        shapes.sort_by(|a, b| a.2.total_cmp(&b.2));
        write!(
            table,
            "2^{log_n} forward by launch shape (tile_log/threads/max_regs, what is off):"
        )?;
        for (_, c, ms) in shapes {
            write!(table, " {} {ms:.3};", shape_label(c))?;
        }
        writeln!(table)?;
        if args.max_log == 24 {
            break;
        }
    }
    if let Some(r) = rows.iter().find(|r| r.log_n == 27) {
        let verdict = if r.ms[0] <= TARGET_2_27_MS {
            "meets"
        } else {
            "MISSES"
        };
        writeln!(
            table,
            "target: 2^27 forward ≤ {TARGET_2_27_MS} ms: {:.3} ms, {verdict} it",
            r.ms[0]
        )?;
    }
    writeln!(
        table,
        "H polynomial at 2^{h_log} (3 iNTT + 3 coset NTT + H step + coset iNTT): {h_ms:.3} ms"
    )?;
    println!("\n{table}");

    if let Ok(dir) = std::env::var("CUZK_BENCH_OUT") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir)?;
        let mut json = String::from("{\"bench\":\"ntt\",");
        write!(
            json,
            "\"device\":\"{}\",\"copy_gbps\":{:.1},\"h2d_gbps\":{:.2},\"d2h_gbps\":{:.2},\"fr_mul_per_s\":{:.4e},\"fq_mul_per_s\":{:.4e},\"fr_mul_cios_per_s\":{fr_rate_cios:.4e},\"fq_mul_cios_per_s\":{fq_rate_cios:.4e},\"fr_mul_rr_per_s\":{fr_rate_rr:.4e},\"fq_mul_rr_per_s\":{fq_rate_rr:.4e},\"h_pipeline_log\":{h_log},\"h_pipeline_ms\":{h_ms:.4},\"rows\":[",
            gpu.info().name,
            d2d_bw / 1e9,
            h2d_bw / 1e9,
            d2h_bw / 1e9,
            fr_rate,
            fq_rate
        )?;
        for (i, r) in rows.iter().enumerate() {
            write!(
                json,
                "{}{{\"log_n\":{},\"forward_ms\":{:.4},\"inverse_ms\":{:.4},\"coset_ms\":{:.4},\"coset_inverse_ms\":{:.4},\"bytes_floor_ms\":{:.4},\"mul_floor_ms\":{:.4}}}",
                if i > 0 { "," } else { "" },
                r.log_n,
                r.ms[0],
                r.ms[1],
                r.ms[2],
                r.ms[3],
                r.bytes_floor_ms,
                r.mul_floor_ms
            )?;
        }
        json.push_str("],\"launch_shapes\":[");
        for (i, (log_n, c, ms)) in sweep.iter().enumerate() {
            write!(
                json,
                "{}{{\"log_n\":{log_n},\"tile_log\":{},\"threads\":{},\"max_regs\":{},\"fuse_edges\":{},\"fuse_reversal\":{},\"stream_hint\":{},\"forward_ms\":{ms:.4}}}",
                if i > 0 { "," } else { "" },
                c.tile_log,
                c.threads,
                c.max_regs,
                c.fuse_edges,
                c.fuse_reversal,
                c.stream_hint
            )?;
        }
        json.push_str("]}\n");
        std::fs::write(dir.join("ntt_bench.json"), json)?;
        let mut summary = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("summary.txt"))?;
        std::io::Write::write_all(&mut summary, table.as_bytes())?;
    }
    Ok(())
}

/// "11/256/80" for a shape with both fusions and the cache hint, then what is off.
fn shape_label(c: &NttConfig) -> String {
    let mut off = String::new();
    for (on, name) in [
        (c.fuse_edges, " -edges"),
        (c.fuse_reversal, " -reversal"),
        (c.stream_hint, " -hint"),
    ] {
        if !on {
            off.push_str(name);
        }
    }
    format!("{}/{}/{}{off}", c.tile_log, c.threads, c.max_regs)
}

struct Row {
    log_n: u32,
    plan: Vec<u32>,
    /// Median ms: forward, inverse, coset forward, coset inverse.
    ms: Vec<f64>,
    bytes_floor_ms: f64,
    mul_floor_ms: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn seed_from_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1
}

/// SplitMix64: fast enough for gigabytes of benchmark data.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Uniformly random limbs below 2^254 < r: valid reduced Montgomery values
/// (of uniformly spread field elements), never zeros.
fn random_fr_limbs(n: usize, state: &mut u64) -> Vec<FrLimbs> {
    (0..n)
        .map(|_| {
            let mut l = [next(state), next(state), next(state), next(state)];
            l[3] &= (1 << 62) - 1;
            FrLimbs(l)
        })
        .collect()
}

/// Device copy bandwidth, bytes read + written per second.
fn measure_d2d(
    stream: &Stream,
    bytes: usize,
    reps: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let n = bytes / 32;
    let src: DeviceBuffer<FrLimbs> = stream.alloc(n)?;
    let mut dst: DeviceBuffer<FrLimbs> = stream.alloc(n)?;
    stream.copy(&src, &mut dst)?;
    let mut samples = Vec::new();
    for _ in 0..reps {
        let a = stream.record()?;
        stream.copy(&src, &mut dst)?;
        let b = stream.record()?;
        samples.push(a.elapsed_ms(&b)? as f64);
    }
    Ok(2.0 * (n * 32) as f64 / (median(&mut samples) / 1e3))
}

/// Pinned host → device and device → host rates, bytes per second.
fn measure_pinned(
    gpu: &Gpu,
    stream: &Stream,
    bytes: usize,
    reps: usize,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let n = bytes / 32;
    let t = Instant::now();
    let mut host: PinnedBuffer<FrLimbs> = PinnedBuffer::new(gpu, n)?;
    let mut seed = 7;
    host.write(&random_fr_limbs(n, &mut seed))?;
    let alloc_s = t.elapsed().as_secs_f64();
    let mut dev: DeviceBuffer<FrLimbs> = stream.alloc(n)?;
    stream.upload_pinned(&host, &mut dev)?;
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let a = stream.record()?;
        stream.upload_pinned(&host, &mut dev)?;
        let b = stream.record()?;
        stream.download_pinned(&dev, &mut host)?;
        let c = stream.record()?;
        up.push(a.elapsed_ms(&b)? as f64);
        down.push(b.elapsed_ms(&c)? as f64);
    }
    println!(
        "pinned buffer of {} MiB allocated and filled in {alloc_s:.2} s",
        bytes >> 20
    );
    let b = (n * 32) as f64;
    Ok((b / (median(&mut up) / 1e3), b / (median(&mut down) / 1e3)))
}

/// Field products per second on the whole device.
fn measure_mul_rate<F>(
    gpu: &Gpu,
    stream: &Stream,
    smoke: bool,
    product: ProbeProduct,
) -> Result<f64, Box<dyn std::error::Error>>
where
    F: cuzk_cuda::probes::ProbeField + Default + Clone,
    F: From<FrOrFq>,
{
    // Enough threads to fill every SM many times over; inversions cost tens to
    // hundreds of products, so they get fewer steps.
    let n = (gpu.info().multiprocessors as usize * 2048 * 4).max(1 << 16);
    let iters = match (smoke, product) {
        (true, _) => 16,
        (false, ProbeProduct::Inverse) => 8,
        (false, ProbeProduct::InverseFermat) => 1,
        (false, _) => 256,
    };
    let mut seed = 11;
    let host: Vec<F> = (0..n)
        .map(|_| F::from(FrOrFq(random_fr_limbs(1, &mut seed)[0])))
        .collect();
    let mut buf = stream.upload_new(&host)?;
    mul_throughput_probe(stream, &mut buf, iters, product)?; // warm-up
    let mut samples = Vec::new();
    for _ in 0..if smoke { 1 } else { 5 } {
        let a = stream.record()?;
        mul_throughput_probe(stream, &mut buf, iters, product)?;
        let b = stream.record()?;
        samples.push(a.elapsed_ms(&b)? as f64);
    }
    Ok(n as f64 * iters as f64 * MUL_PROBE_CHAINS as f64 / (median(&mut samples) / 1e3))
}

/// Random limbs for either probe field (Fq: the Fr limbs widened, < 2^254 < q).
struct FrOrFq(FrLimbs);
impl From<FrOrFq> for FrLimbs {
    fn from(v: FrOrFq) -> Self {
        v.0
    }
}
impl From<FrOrFq> for FqLimbs {
    fn from(v: FrOrFq) -> Self {
        let l = v.0 .0;
        FqLimbs([l[0], l[1], l[2], l[3], l[0] ^ l[1], l[2] & ((1 << 60) - 1)])
    }
}

/// One partition's H polynomial on the GPU: iNTT a, b, c; coset NTT each;
/// H step; coset iNTT. Median ms.
fn measure_h_pipeline(
    stream: &Stream,
    log_n: u32,
    seed: &mut u64,
    reps: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let n = 1usize << log_n;
    let mut a = stream.upload_new(&random_fr_limbs(n, seed))?;
    let mut b = stream.upload_new(&random_fr_limbs(n, seed))?;
    let mut c = stream.upload_new(&random_fr_limbs(n, seed))?;
    let once = |a: &mut DeviceBuffer<FrLimbs>,
                b: &mut DeviceBuffer<FrLimbs>,
                c: &mut DeviceBuffer<FrLimbs>|
     -> cuzk_cuda::Result<()> {
        for v in [&mut *a, &mut *b, &mut *c] {
            ntt(stream, v, NttKind::Inverse)?;
            ntt(stream, v, NttKind::CosetForward)?;
        }
        h_step(stream, a, b, c)?;
        ntt(stream, a, NttKind::CosetInverse)
    };
    once(&mut a, &mut b, &mut c)?;
    let mut samples = Vec::new();
    for _ in 0..reps {
        let s = stream.record()?;
        once(&mut a, &mut b, &mut c)?;
        let e = stream.record()?;
        samples.push(s.elapsed_ms(&e)? as f64);
    }
    Ok(median(&mut samples))
}
