//! Times a witness upload plainly and packed (`Staging::upload` against
//! `Staging::upload_packed`) as the GPU worker makes them: two 64 MiB
//! pinned buffers filled by a pool of 4 threads, into one device buffer,
//! CUDA-event times on the stream (the host's fill and packing included:
//! the stream waits for them). Values drawn at a 32 GiB PoRep partition's
//! measured aux mix unless told otherwise.
//!
//! `cargo run --release -p cuzk-cuda --example z_upload -- [values] [others]
//! [threads]` (default 130,200,000 values, 0.013 others, 4 threads; the
//! rest half zero, half one).

use cuzk_cuda::packed::MONT_ONE;
use cuzk_cuda::staging::Staging;
use cuzk_cuda::Gpu;
use cuzk_field::limbs::FrLimbs;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: f64| args.get(i).map_or(default, |a| a.parse().unwrap());
    let n = arg(0, 130_200_000.0) as usize;
    let others = arg(1, 0.013);
    let threads = arg(2, 4.0) as usize;
    let Some(gpu) = Gpu::first().expect("CUDA") else {
        eprintln!("no CUDA device");
        return;
    };
    // A cheap per-index hash decides each value's class and limbs.
    let values: Vec<FrLimbs> = (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ i;
            let u = (h >> 11) as f64 / (1u64 << 53) as f64;
            if u < others {
                FrLimbs([h, h >> 3, h >> 7, h >> 40])
            } else if u < others + (1.0 - others) / 2.0 {
                FrLimbs::default()
            } else {
                MONT_ONE
            }
        })
        .collect();
    let s = gpu.new_stream().unwrap();
    let mut d = s.alloc::<FrLimbs>(n).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut staging = Staging::new(&gpu, 64 << 20, Some(pool)).unwrap();
    let mut time = |packed: bool| {
        let start = s.record().unwrap();
        let report = if packed {
            Some(staging.upload_packed(&s, &values, &mut d, 0).unwrap())
        } else {
            staging.upload(&s, &values, &mut d, 0).unwrap();
            None
        };
        let end = s.record().unwrap();
        end.synchronize().unwrap();
        (start.elapsed_ms(&end).unwrap(), report)
    };
    let (mut plain, mut packed) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..4 {
        plain.push(time(false).0);
        let (ms, r) = time(true);
        packed.push(ms);
        last = r;
    }
    let median = |v: &mut Vec<f32>| {
        v.sort_by(f32::total_cmp);
        v[v.len() / 2]
    };
    let check = s.download_vec(&d).unwrap();
    assert!(check == values, "the packed upload differs from the values");
    println!(
        "{n} values, {others} others, {threads} fill threads: plain {:.1} ms, packed {:.1} ms \
         (median of 4; {last:?})",
        median(&mut plain),
        median(&mut packed)
    );
}
