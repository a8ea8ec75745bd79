//! GPU MSM benchmarks: G1 (2^16 … 2^26) and G2 (2^16 … 2^24) Pippenger with
//! random scalars, batch sums of 2^26 G1 / 2^24 G2 points under a density-½
//! bitmap, and scalar classification; bases and scalars already in device
//! memory. CUDA events around each call, one warm-up, median of repeats,
//! fresh random scalars before every repeat (never zeros).
//!
//! Bases are P_i = p0 + i·step made on the device (distinct points; their
//! discrete logs are unrelated to the random scalars, so bucket behaviour is
//! that of random data). Scalars come from a counter-based hash on the device.
//!
//! Floors: Pippenger needs n·W mixed additions plus ≈2 full additions per
//! bucket; counting field products as 2·N² 32-bit multiply-adds (N limbs,
//! product plus Montgomery reduction), over the measured 1.6e13 IMAD.WIDE/s
//! of the H200 (shared/GPU-NOTES.md). Batch sums: the larger of that and the
//! bytes read over 4.3 TB/s. Classification: bytes over 4.3 TB/s.
//!
//! `cargo run --release -p cuzk-benches --bin msm_bench -- [--smoke] [--sweep]
//! [--max-log-g1 K] [--max-log-g2 K] [--repeats R] [--json PATH]
//! [--g1-logs 20,24,26] [--g2-logs 24] [--msm-only] [--variants] [--compare-sorts]
//! [--seed S]` (`--help` says what each does). Without a CUDA device it says it
//! skipped and exits 0, so CI smoke-runs it (`.ci/run`). The tuning variants
//! and the benchmark bases' kernels are in the test and benchmark units
//! (kernels/manifest-dev.toml), which a bundle carries.

use std::fmt::Write as _;

use clap::Parser;
use cuzk_cuda::msm::{
    choose_shifted_shape, choose_window_bits, data, BatchSum, BucketSort, Classifier, Msm,
    MsmCurve, ShiftedBases, G1, G2,
};
use cuzk_cuda::{DeviceBuffer, Gpu, Stream, VramBudget};
use cuzk_field::limbs::{FrLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Curve, Field, Fr, G1Projective, G2Projective, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// 32×32→64 multiply-adds per second (GPU-NOTES.md, H200).
const IMAD_PER_S: f64 = 1.6e13;
/// Device copy bandwidth, bytes read + written per second (GPU-NOTES.md).
const BYTES_PER_S: f64 = 4.3e12;
/// 32-bit multiply-adds of one Fq product: 12² for the product, 12² for the
/// Montgomery reduction.
const IMAD_PER_FQ_MUL: f64 = 2.0 * 12.0 * 12.0;

/// GPU MSM, batch-sum and classification benchmarks (bases and scalars in
/// device memory, CUDA events, median of repeats).
#[derive(Parser, Debug)]
#[command(name = "msm_bench")]
struct Args {
    /// A smoke run: 2^10/2^12 (G1) and 2^8/2^10 (G2), two repeats, no sweep.
    #[arg(long, alias = "test")]
    smoke: bool,
    /// Also time every window size around the model's choice at 2^24 (and
    /// 2^26 for G1).
    #[arg(long)]
    sweep: bool,
    /// Window sizes to time at chosen G1 sizes instead of --sweep's, as
    /// `log:from-to` (e.g. `27:19-23`).
    #[arg(long, value_delimiter = ',')]
    g1_sweep: Option<Vec<String>>,
    /// Largest G1 size (log2) of the default 2^16, 2^18, … series.
    #[arg(long, default_value_t = 26)]
    max_log_g1: u32,
    /// Largest G2 size (log2) of the default series.
    #[arg(long, default_value_t = 24)]
    max_log_g2: u32,
    /// Repeats per measurement (median reported).
    #[arg(long, default_value_t = 7)]
    repeats: usize,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    json: Option<String>,
    /// G1 sizes (log2, comma-separated) instead of the default series.
    #[arg(long, value_delimiter = ',')]
    g1_logs: Option<Vec<u32>>,
    /// G2 sizes (log2, comma-separated) instead of the default series.
    #[arg(long, value_delimiter = ',')]
    g2_logs: Option<Vec<u32>>,
    /// Only the MSMs: no variant timings, batch sums or classification.
    #[arg(long)]
    msm_only: bool,
    /// Time the accumulation variants even with --msm-only.
    #[arg(long)]
    variants: bool,
    /// Time every size with both bucket sorts (rows "… counting" / "… radix").
    #[arg(long)]
    compare_sorts: bool,
    /// Also time every MSM size over shifted bases (precomputed copies
    /// 2^(c·S·k)·P, issue 17), each checked equal to the plain MSM on the
    /// same scalars first; rows "… MSM shifted". The shape is
    /// `choose_shifted_shape`'s for the free arena unless --shifted-shapes.
    #[arg(long)]
    shifted: bool,
    /// Shapes to time with --shifted instead of the automatic one, as
    /// `c:sets` pairs (e.g. `22:1,24:1`); shapes that do not fit are skipped.
    #[arg(long, value_delimiter = ',')]
    shifted_shapes: Option<Vec<String>>,
    /// Seed of the bases and scalars (random when absent; printed either way).
    #[arg(long)]
    seed: Option<u64>,
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
            a.max_log_g1 = a.max_log_g1.min(12);
            a.max_log_g2 = a.max_log_g2.min(10);
            a.repeats = 2;
            a.sweep = false;
            a.g1_sweep = None;
        }
        a
    }
}

/// Field products (in Fq units) of the curve's mixed and full additions.
trait BenchCurve: MsmCurve {
    const MADD_FQ_MULS: f64;
    const ADD_FQ_MULS: f64;
    const TARGET_2_24_MS: Option<f64>;
    fn p0_step(rng: &mut ChaCha20Rng) -> (Self::Affine, Self::Affine);
}

impl BenchCurve for G1 {
    const MADD_FQ_MULS: f64 = 10.0; // 8 M + 2 S
    const ADD_FQ_MULS: f64 = 14.0; // 12 M + 2 S
    const TARGET_2_24_MS: Option<f64> = Some(100.0);
    fn p0_step(rng: &mut ChaCha20Rng) -> (G1AffineLimbs, G1AffineLimbs) {
        let p = (G1Projective::generator() * Fr::random(&mut *rng)).to_affine();
        let q = (G1Projective::generator() * Fr::random(&mut *rng)).to_affine();
        (p.into(), q.into())
    }
}

impl BenchCurve for G2 {
    const MADD_FQ_MULS: f64 = 8.0 * 3.0 + 2.0 * 2.0; // Fq2: M = 3 Fq M, S = 2
    const ADD_FQ_MULS: f64 = 12.0 * 3.0 + 2.0 * 2.0;
    const TARGET_2_24_MS: Option<f64> = Some(300.0);
    fn p0_step(rng: &mut ChaCha20Rng) -> (G2AffineLimbs, G2AffineLimbs) {
        let p = (G2Projective::generator() * Fr::random(&mut *rng)).to_affine();
        let q = (G2Projective::generator() * Fr::random(&mut *rng)).to_affine();
        (p.into(), q.into())
    }
}

struct Row {
    what: String,
    n: usize,
    c: u32,
    ms: f64,
    floor_ms: f64,
    target_ms: Option<f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn msm_floor_ms<C: BenchCurve>(n: usize, c: u32) -> f64 {
    let w = cuzk_cuda::msm::windows_for(c) as f64;
    let buckets = w * (1u64 << (c - 1)) as f64;
    let fq_muls = n as f64 * w * C::MADD_FQ_MULS + 2.0 * buckets * C::ADD_FQ_MULS;
    fq_muls * IMAD_PER_FQ_MUL / IMAD_PER_S * 1e3
}

/// Times `repeats` MSMs of the first n bases with window c (None: automatic).
fn time_msm<C: BenchCurve>(
    s: &Stream,
    bases: &DeviceBuffer<C::Affine>,
    n: usize,
    (c, variant, sort): (Option<u32>, Option<usize>, Option<BucketSort>),
    repeats: usize,
    seed: &mut u64,
    phases: bool,
) -> BoxResult<(u32, f64)>
where
    C::Projective: IdentityCheck,
{
    let mut scalars: DeviceBuffer<FrLimbs> = s.alloc(n)?;
    let mut msm = match (c, variant) {
        (Some(c), Some(v)) => Msm::<C>::with_tuning(s, n, c, v)?,
        (Some(c), None) => Msm::<C>::with_window_bits(s, n, c)?,
        (None, _) => Msm::<C>::new(s, n)?,
    };
    if let Some(sort) = sort {
        msm.set_bucket_sort(sort)?;
    }
    let c = msm.plan().window_bits;
    data::random_scalars(s, &mut scalars, *seed)?;
    *seed += 1;
    let warm = msm.run(bases, &scalars)?; // warm-up
    if warm == C::Projective::default_identity() {
        return Err(format!("{} MSM of {n} random scalars gave infinity", C::NAME).into());
    }
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        data::random_scalars(s, &mut scalars, *seed)?;
        *seed += 1;
        let start = s.record()?;
        msm.enqueue(bases, &scalars, None, n)?;
        let end = s.record()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    if phases {
        msm.set_profiling(true);
        msm.enqueue(bases, &scalars, None, n)?;
        if let Some(p) = msm.last_phases()? {
            let steps: Vec<String> = p.iter().map(|(k, ms)| format!("{k} {ms:.2}")).collect();
            println!("    steps (ms): {}; {:?}", steps.join(", "), msm.plan());
        }
    }
    Ok((c, median(times)))
}

/// Builds shifted copies of the first n bases for (c, sets), checks one MSM
/// over them against the plain MSM on the same scalars, and times
/// `repeats` of them; (median ms, build ms, copies).
fn time_shifted<C: BenchCurve>(
    s: &Stream,
    bases: &DeviceBuffer<C::Affine>,
    n: usize,
    (c, sets): (u32, u32),
    repeats: usize,
    seed: &mut u64,
) -> BoxResult<(f64, f32, u32)>
where
    C::Projective: IdentityCheck,
{
    let mut scalars: DeviceBuffer<FrLimbs> = s.alloc(n)?;
    data::random_scalars(s, &mut scalars, *seed)?;
    *seed += 1;
    let want = Msm::<C>::new(s, n)?.run(bases, &scalars)?;
    let shifted = ShiftedBases::<C>::build(s, bases, n, c, sets)?;
    let mut msm = Msm::<C>::for_shifted(s, n, &shifted)?;
    let got = msm.run_shifted(&shifted, &scalars)?;
    if got != want || got == C::Projective::default_identity() {
        return Err(format!(
            "{} MSM over shifted bases (c = {c}, {sets} sets) differs from the plain MSM at 2^{}",
            C::NAME,
            n.trailing_zeros()
        )
        .into());
    }
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        data::random_scalars(s, &mut scalars, *seed)?;
        *seed += 1;
        let start = s.record()?;
        msm.enqueue_shifted(&shifted, &scalars, None, n)?;
        let end = s.record()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    msm.set_profiling(true);
    msm.enqueue_shifted(&shifted, &scalars, None, n)?;
    if let Some(p) = msm.last_phases()? {
        let steps: Vec<String> = p.iter().map(|(k, ms)| format!("{k} {ms:.2}")).collect();
        println!("    steps (ms): {}; {:?}", steps.join(", "), msm.plan());
    }
    Ok((median(times), shifted.build_ms(), shifted.copies()))
}

/// The shifted shapes to time at n: the explicit list, or the automatic
/// choice for the arena's free bytes (less 4 GiB for the plain MSM's check).
fn shifted_shapes<C: BenchCurve>(s: &Stream, n: usize, explicit: &[(u32, u32)]) -> Vec<(u32, u32)> {
    if !explicit.is_empty() {
        return explicit.to_vec();
    }
    let u = s.arena().usage();
    let free = u.capacity.saturating_sub(u.in_use + u.pending + (4 << 30)) as usize;
    choose_shifted_shape(n, C::XYZZ_WORDS * 8, std::mem::size_of::<C::Affine>(), free)
        .into_iter()
        .collect()
}

/// `Default`-free identity check for the two projective types.
trait IdentityCheck {
    fn default_identity() -> Self;
}
impl IdentityCheck for G1Projective {
    fn default_identity() -> Self {
        G1Projective::identity()
    }
}
impl IdentityCheck for G2Projective {
    fn default_identity() -> Self {
        G2Projective::identity()
    }
}

#[allow(clippy::too_many_arguments)]
fn msm_rows<C: BenchCurve>(
    s: &Stream,
    rng: &mut ChaCha20Rng,
    logs: &[u32],
    sweep: &[(u32, std::ops::RangeInclusive<u32>)],
    repeats: usize,
    variants: bool,
    compare_sorts: bool,
    shifted: Option<&[(u32, u32)]>,
    rows: &mut Vec<Row>,
) -> BoxResult<()>
where
    C::Projective: IdentityCheck,
{
    let max_log = logs
        .iter()
        .chain(sweep.iter().map(|(l, _)| l))
        .copied()
        .max()
        .unwrap_or(0);
    let n_max = 1usize << max_log;
    let mut bases: DeviceBuffer<C::Affine> = s.alloc(n_max)?;
    let (p0, step) = C::p0_step(rng);
    let t = std::time::Instant::now();
    data::chain_bases::<C>(s, p0, step, &mut bases)?;
    println!(
        "{}: made 2^{max_log} bases on the device in {:.0} ms",
        C::NAME,
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut seed: u64 = rng.gen();
    let sorts: Vec<(Option<BucketSort>, &str)> = if compare_sorts {
        vec![
            (Some(BucketSort::Counting), " counting"),
            (Some(BucketSort::Radix), " radix"),
        ]
    } else {
        vec![(None, "")]
    };
    for &log in logs {
        for &(sort, sort_name) in &sorts {
            let n = 1usize << log;
            let (c, ms) =
                time_msm::<C>(s, &bases, n, (None, None, sort), repeats, &mut seed, true)?;
            let floor = msm_floor_ms::<C>(n, c);
            let target = if log == 24 {
                C::TARGET_2_24_MS
            } else if log == 26 && C::NAME == "G1" {
                Some(350.0)
            } else {
                None
            };
            println!(
                "  {} MSM{sort_name} 2^{log}: c = {c}, {ms:.2} ms (floor {floor:.2} ms, {:.0}%)",
                C::NAME,
                100.0 * floor / ms
            );
            rows.push(Row {
                what: format!("{} MSM{sort_name}", C::NAME),
                n,
                c,
                ms,
                floor_ms: floor,
                target_ms: target,
            });
        }
        let Some(explicit) = shifted else { continue };
        let n = 1usize << log;
        for (c, sets) in shifted_shapes::<C>(s, n, explicit) {
            match time_shifted::<C>(s, &bases, n, (c, sets), repeats, &mut seed) {
                Ok((ms, build_ms, copies)) => {
                    println!(
                        "  {} MSM shifted 2^{log}: c = {c}, {sets} sets, {copies} copies \
                         (built in {build_ms:.0} ms), {ms:.2} ms, equal to the plain MSM",
                        C::NAME
                    );
                    rows.push(Row {
                        what: format!("{} MSM shifted ({sets} sets, {copies} copies)", C::NAME),
                        n,
                        c,
                        ms,
                        floor_ms: msm_floor_ms::<C>(n, c) * sets as f64
                            / cuzk_cuda::msm::windows_for(c) as f64,
                        target_ms: match (C::NAME, log) {
                            ("G1", 24) => Some(90.0),
                            ("G1", 26) => Some(330.0),
                            ("G2", 24) => Some(280.0),
                            _ => None,
                        },
                    });
                }
                Err(e) if e.to_string().contains("differs") => return Err(e),
                Err(e) => println!(
                    "  {} MSM shifted 2^{log}: c = {c}, {sets} sets: skipped ({e})",
                    C::NAME
                ),
            }
        }
    }
    // Accumulation kernel variants (launch bounds, prefetch, Fq2 product) at
    // 2^24 (or the largest size below) and at the largest size above it.
    let mut variant_logs: Vec<u32> = logs
        .iter()
        .copied()
        .filter(|&l| l <= 24)
        .max()
        .into_iter()
        .collect();
    variant_logs.extend(logs.iter().copied().filter(|&l| l > 24).max());
    if !(variants && C::ACCUMULATE_VARIANTS.len() > 1) {
        variant_logs.clear();
    }
    for log in variant_logs {
        let n = 1usize << log;
        let c = choose_window_bits(n, C::XYZZ_WORDS * 8, usize::MAX);
        for (v, name) in C::ACCUMULATE_VARIANTS.iter().enumerate() {
            let (c, ms) = time_msm::<C>(
                s,
                &bases,
                n,
                (Some(c), Some(v), None),
                repeats.min(5),
                &mut seed,
                true,
            )?;
            println!("  variant {name}, 2^{log}, c = {c}: {ms:.2} ms");
            rows.push(Row {
                what: format!("{} {name}", C::NAME),
                n,
                c,
                ms,
                floor_ms: msm_floor_ms::<C>(n, c),
                target_ms: None,
            });
        }
    }
    for (log, range) in sweep {
        let n = 1usize << log;
        let auto = choose_window_bits(n, C::XYZZ_WORDS * 8, usize::MAX);
        for c in range.clone() {
            let (c, ms) = time_msm::<C>(
                s,
                &bases,
                n,
                (Some(c), None, None),
                repeats.min(3),
                &mut seed,
                true,
            )?;
            let mark = if c == auto { " (model's choice)" } else { "" };
            println!("  sweep {} 2^{log}: c = {c}: {ms:.2} ms{mark}", C::NAME);
            rows.push(Row {
                what: format!("{} sweep", C::NAME),
                n,
                c,
                ms,
                floor_ms: msm_floor_ms::<C>(n, c),
                target_ms: None,
            });
        }
    }
    Ok(())
}

fn batch_row<C: BenchCurve>(
    s: &Stream,
    rng: &mut ChaCha20Rng,
    log: u32,
    repeats: usize,
    rows: &mut Vec<Row>,
) -> BoxResult<()> {
    let n = 1usize << log;
    let mut bases: DeviceBuffer<C::Affine> = s.alloc(n)?;
    let (p0, step) = C::p0_step(rng);
    data::chain_bases::<C>(s, p0, step, &mut bases)?;
    let bitmap: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.gen()).collect();
    let selected: u64 = bitmap.iter().map(|w| w.count_ones() as u64).sum();
    let dm = s.upload_new(&bitmap)?;
    let mut best: Option<(usize, f64)> = None;
    for v in 0..C::BITMAP_VARIANTS.len() {
        let mut sum = BatchSum::<C>::with_variant(s, v)?;
        sum.sum_bitmap(&bases, &dm, n)?; // warm-up
        let mut times = Vec::new();
        for _ in 0..repeats {
            let start = s.record()?;
            sum.enqueue_bitmap(&bases, &dm, n)?;
            let end = s.record()?;
            times.push(start.elapsed_ms(&end)? as f64);
        }
        let ms = median(times);
        if C::BITMAP_VARIANTS.len() > 1 {
            println!("    bitmap variant {}: {ms:.2} ms", C::BITMAP_VARIANTS[v]);
        }
        if best.is_none_or(|(_, b)| ms < b) {
            best = Some((v, ms));
        }
    }
    let (best_v, ms) = best.expect("at least one variant");
    let times = vec![ms];
    let ms = median(times);
    let bytes = selected as f64 * std::mem::size_of::<C::Affine>() as f64 + n as f64 / 8.0;
    let math = selected as f64 * C::MADD_FQ_MULS * IMAD_PER_FQ_MUL / IMAD_PER_S;
    let floor = (bytes / BYTES_PER_S).max(math) * 1e3;
    let target = (C::NAME == "G1" && log == 26).then_some(25.0);
    println!(
        "  {} batch sum 2^{log}, {selected} selected: {ms:.2} ms (floor {floor:.2} ms, {:.0}%)",
        C::NAME,
        100.0 * floor / ms
    );
    rows.push(Row {
        what: format!("{} batch sum ½ ({})", C::NAME, C::BITMAP_VARIANTS[best_v]),
        n,
        c: 0,
        ms,
        floor_ms: floor,
        target_ms: target,
    });
    Ok(())
}

fn classify_row(
    s: &Stream,
    rng: &mut ChaCha20Rng,
    log: u32,
    repeats: usize,
    rows: &mut Vec<Row>,
) -> BoxResult<()> {
    let n = 1usize << log;
    let one = FrLimbs::from(Fr::ONE);
    let r = cuzk_field::limbs::FR_MODULUS;
    let host: Vec<FrLimbs> = (0..n)
        .map(|_| match rng.gen_range(0..4) {
            0 => FrLimbs([0; 4]),
            1 | 2 => one,
            _ => FrLimbs([rng.gen(), rng.gen(), rng.gen(), rng.gen::<u64>() % r[3]]),
        })
        .collect();
    let ds = s.upload_new(&host)?;
    let mut c = Classifier::new(s, n)?;
    c.classify(&ds)?;
    let mut times = Vec::new();
    for _ in 0..repeats {
        let start = std::time::Instant::now();
        c.classify(&ds)?; // includes the small download of the two counts
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let ms = median(times);
    // Two passes over the scalars, plus the index lists written.
    let bytes = 2.0 * n as f64 * 32.0 + 0.75 * n as f64 * 4.0;
    let floor = bytes / BYTES_PER_S * 1e3;
    println!("  classification 2^{log}: {ms:.2} ms (host clock, with the count download; floor {floor:.2} ms)");
    rows.push(Row {
        what: "classify".into(),
        n,
        c: 0,
        ms,
        floor_ms: floor,
        target_ms: None,
    });
    Ok(())
}

/// `log:from-to` window sweeps.
fn parse_sweeps(list: &[String]) -> BoxResult<Vec<(u32, std::ops::RangeInclusive<u32>)>> {
    list.iter()
        .map(|p| {
            let bad = || format!("G1 sweep {p:?}: want log:from-to, e.g. 27:19-23");
            let (log, range) = p.split_once(':').ok_or_else(bad)?;
            let (from, to) = range.split_once('-').ok_or_else(bad)?;
            Ok((
                log.trim().parse()?,
                from.trim().parse()?..=to.trim().parse()?,
            ))
        })
        .collect()
}

/// `c:sets` pairs.
fn parse_shapes(list: &[String]) -> BoxResult<Vec<(u32, u32)>> {
    list.iter()
        .map(|p| {
            let (c, sets) = p
                .split_once(':')
                .ok_or_else(|| format!("shifted shape {p:?}: want c:sets, e.g. 22:1"))?;
            Ok((c.trim().parse()?, sets.trim().parse()?))
        })
        .collect()
}

fn main() -> BoxResult<()> {
    let args = Args::parse_smoke_aware();
    let Some(gpu) = Gpu::first_with(args.vram_budget)? else {
        println!("msm_bench: skipped: no CUDA device");
        return Ok(());
    };
    println!("{} (host: {})", gpu.info(), cuzk_benches::machine());
    let s = gpu.new_stream()?;
    let seed: u64 = args.seed.unwrap_or_else(rand::random);
    println!("seed {seed}");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut rows = Vec::new();

    let logs = |max: u32, from: u32| (from..=max).step_by(2).collect::<Vec<_>>();
    let (mut g1_logs, mut g2_logs) = if args.smoke {
        (vec![10, 12], vec![8, 10])
    } else {
        (logs(args.max_log_g1, 16), logs(args.max_log_g2, 16))
    };
    if let Some(l) = &args.g1_logs {
        g1_logs = l.clone();
    }
    if let Some(l) = &args.g2_logs {
        g2_logs = l.clone();
    }
    let g1_sweep = match &args.g1_sweep {
        Some(list) => parse_sweeps(list)?,
        None if args.sweep => vec![(24, 18..=21), (26, 18..=22)],
        None => vec![],
    };
    let g2_sweep = if args.sweep {
        vec![(24, 17..=21)]
    } else {
        vec![]
    };
    let variants = !args.msm_only || args.variants;
    let cmp = args.compare_sorts;
    let reps = args.repeats;
    let explicit = parse_shapes(args.shifted_shapes.as_deref().unwrap_or(&[]))?;
    let shifted = args.shifted.then_some(explicit.as_slice());
    msm_rows::<G1>(
        &s, &mut rng, &g1_logs, &g1_sweep, reps, variants, cmp, shifted, &mut rows,
    )?;
    msm_rows::<G2>(
        &s, &mut rng, &g2_logs, &g2_sweep, reps, variants, cmp, shifted, &mut rows,
    )?;
    if !args.msm_only {
        batch_rows(&s, &mut rng, &args, &mut rows)?;
    }
    print_table(&rows, args.json.as_deref())
}

fn batch_rows(
    s: &Stream,
    rng: &mut ChaCha20Rng,
    args: &Args,
    rows: &mut Vec<Row>,
) -> BoxResult<()> {
    batch_row::<G1>(
        s,
        rng,
        if args.smoke { 12 } else { args.max_log_g1 },
        args.repeats,
        rows,
    )?;
    batch_row::<G2>(
        s,
        rng,
        if args.smoke { 10 } else { args.max_log_g2 },
        args.repeats,
        rows,
    )?;
    classify_row(s, rng, if args.smoke { 12 } else { 24 }, args.repeats, rows)
}

fn print_table(rows: &[Row], json_path: Option<&str>) -> BoxResult<()> {
    let mut table = String::new();
    writeln!(
        table,
        "\n| what | n | c | median ms | floor ms | of floor | target ms | meets |"
    )?;
    writeln!(table, "| --- | --- | --- | --- | --- | --- | --- | --- |")?;
    for r in rows {
        let target = r.target_ms.map_or("—".to_string(), |t| format!("{t:.0}"));
        let meets = r
            .target_ms
            .map_or("", |t| if r.ms <= t { "yes" } else { "NO" });
        writeln!(
            table,
            "| {} | 2^{} | {} | {:.2} | {:.2} | {:.0}% | {target} | {meets} |",
            r.what,
            r.n.trailing_zeros(),
            if r.c == 0 {
                "—".to_string()
            } else {
                r.c.to_string()
            },
            r.ms,
            r.floor_ms,
            100.0 * r.floor_ms / r.ms
        )?;
    }
    print!("{table}");
    if let Some(path) = json_path {
        let mut json = String::from("[\n");
        for (i, r) in rows.iter().enumerate() {
            let sep = if i + 1 < rows.len() { "," } else { "" };
            writeln!(
                json,
                "  {{\"what\": \"{}\", \"n\": {}, \"c\": {}, \"median_ms\": {:.4}, \"floor_ms\": {:.4}, \"target_ms\": {}}}{sep}",
                r.what,
                r.n,
                r.c,
                r.ms,
                r.floor_ms,
                r.target_ms.map_or("null".to_string(), |t| t.to_string())
            )?;
        }
        json.push_str("]\n");
        std::fs::write(path, json)?;
    }
    Ok(())
}
