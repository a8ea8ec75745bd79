//! What one stream's host-to-device copies wait for while another stream is
//! busy (issue 17: with two GPU workers, a 32 GiB partition's `upload_z`
//! took 1.6 s against 0.17–0.20 s with one, about the other worker's
//! kernels' time). Rows, each the median of `--repeats` after a warm-up:
//!
//! * A uploads `--mib` MiB through a `Staging` (two 64 MiB pinned buffers,
//!   four fill threads, as a GPU worker does) on an idle device;
//! * the same while thread B has `--ntts` forward NTTs of 2^`--log` queued
//!   on its own stream (kernels that fill the GPU, as the other worker's
//!   MSMs do) and a 48 KiB pageable download queued behind them (an MSM's
//!   window sums), A on an ordinary stream and on one of top priority;
//! * the same with B's download issued only once its NTTs are done (what
//!   `Stream::download` does now);
//! * A uploads 10 KiB of pageable memory while B waits for its queued
//!   download.
//!
//! A's time is host wall time from the first call to its stream's end;
//! for the staged rows also the fill and the waits for earlier copies
//! (`StagingTimes`). H200, 2026-12-04 (BENCHMARKS.md, issue 17): 53.5 ms
//! idle, 743 ms beside B's NTTs with B's download queued (waiting for copies
//! 691 ms), 0.046 ms for the small pageable upload.
//!
//! `cargo run --release -p cuzk-benches --bin copy_overlap -- [--smoke]`;
//! without a CUDA device it says so and exits 0.

use std::time::{Duration, Instant};

use clap::Parser;
use cuzk_cuda::ntt::{ntt, NttKind};
use cuzk_cuda::staging::{Staging, StagingTimes};
use cuzk_cuda::{DeviceBuffer, Gpu, Stream};
use cuzk_field::limbs::FrLimbs;

type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derive(Parser, Debug)]
#[command(name = "copy_overlap")]
struct Args {
    /// A smoke run: 2^16, two NTTs, 16 MiB, two repeats.
    #[arg(long, alias = "test")]
    smoke: bool,
    /// Size (log2) of B's NTTs.
    #[arg(long, default_value_t = 26)]
    log: u32,
    /// NTTs B queues.
    #[arg(long, default_value_t = 40)]
    ntts: usize,
    /// MiB A uploads through the staging buffers.
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Accepted for `cargo bench` compatibility.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A's side of one round.
#[derive(Clone, Copy, Default)]
struct Sample {
    a: Duration,
    staging: StagingTimes,
    b: Duration,
}

/// What thread B does: nothing, or its NTTs followed by a 48 KiB download,
/// the copy queued behind them (`Stream::download_queued`) or issued once
/// they are done (`Stream::download`, what the prover does).
#[derive(Clone, Copy, PartialEq)]
enum B {
    Idle,
    Queued,
    Waited,
}

/// B's side on thread B while `a_side` runs on this thread 20 ms later;
/// `B::Idle`: `a_side` alone.
fn round(
    b: &Stream,
    data: &mut DeviceBuffer<FrLimbs>,
    ntts: usize,
    busy: B,
    a_side: impl FnOnce() -> BoxResult<(Duration, StagingTimes)> + Send,
) -> BoxResult<Sample> {
    b.synchronize()?;
    if busy == B::Idle {
        let (a, staging) = a_side()?;
        return Ok(Sample {
            a,
            staging,
            b: Duration::ZERO,
        });
    }
    let sums = b.alloc::<u64>(6144)?;
    std::thread::scope(|sc| {
        let queue = sc.spawn(|| -> BoxResult<Duration> {
            let t = Instant::now();
            for _ in 0..ntts {
                ntt(b, data, NttKind::Forward)?;
            }
            let mut host = vec![0u64; sums.len()];
            if busy == B::Queued {
                b.download_queued(&sums, &mut host)?;
            } else {
                b.download(&sums, &mut host)?;
            }
            Ok(t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(20));
        let (a, staging) = a_side()?;
        let b = queue.join().map_err(|_| "thread B panicked")??;
        Ok(Sample { a, staging, b })
    })
}

fn median(mut v: Vec<Sample>) -> Sample {
    v.sort_by_key(|s| s.a);
    v[v.len() / 2]
}

fn main() -> BoxResult<()> {
    let mut args = Args::parse();
    if args.smoke {
        (args.log, args.ntts, args.mib, args.repeats) = (16, 2, 16, 2);
    }
    let Some(gpu) = Gpu::first()? else {
        println!("copy_overlap: skipped: no CUDA device");
        return Ok(());
    };
    println!("{} (host: {})", gpu.info(), cuzk_benches::machine());
    let (a, b) = (gpu.new_stream()?, gpu.new_stream()?);
    let hi = gpu.new_priority_stream_in(a.arena())?;
    let mut data = b.alloc::<FrLimbs>(1 << args.log)?;
    let fill = rayon::ThreadPoolBuilder::new().num_threads(4).build()?;
    let mut staging = Staging::new(&gpu, 64 << 20, Some(fill))?;
    let words = args.mib << 17; // u64 words
    let host: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let mut big = a.alloc::<u64>(words)?;
    let small_host: Vec<u32> = (0..2624u32).collect();
    let mut small = a.alloc::<u32>(small_host.len())?;
    let mut rows = Vec::new();
    for (name, busy, staged, on) in [
        ("A's staged upload, device idle", B::Idle, true, &a),
        (
            "A's staged upload, B's NTTs and download queued",
            B::Queued,
            true,
            &a,
        ),
        (
            "A's staged upload, top-priority stream, B's NTTs and download queued",
            B::Queued,
            true,
            &hi,
        ),
        (
            "A's staged upload, B's NTTs queued, its download after them",
            B::Waited,
            true,
            &a,
        ),
        (
            "A's 10 KiB pageable upload, B's download queued",
            B::Queued,
            false,
            &a,
        ),
    ] {
        let mut samples = Vec::new();
        for r in 0..=args.repeats {
            let s = round(&b, &mut data, args.ntts, busy, || {
                let t = Instant::now();
                if staged {
                    staging.take_times();
                    staging.upload(on, &host, &mut big, 0)?;
                } else {
                    on.upload_at(&small_host, &mut small, 0)?;
                }
                on.synchronize()?;
                Ok((t.elapsed(), staging.take_times()))
            })?;
            if r > 0 {
                samples.push(s);
            }
        }
        rows.push((name, median(samples)));
    }
    if a.download_vec(&big)? != host || a.download_vec(&small)? != small_host {
        return Err("an upload arrived wrong".into());
    }
    println!(
        "| row ({} MiB staged; B: {} NTTs of 2^{}) | A | A's fill | A's waits for copies | B |",
        args.mib, args.ntts, args.log
    );
    println!("| --- | --- | --- | --- | --- |");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (name, s) in rows {
        println!(
            "| {name} | {:.3} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
            ms(s.a),
            ms(s.staging.fill),
            ms(s.staging.wait),
            ms(s.b)
        );
    }
    Ok(())
}
