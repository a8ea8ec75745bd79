//! Density gather on the device (kernels/prover/gather.cu) against the host
//! gather, on fresh random values and bitmaps every run (the seed is printed;
//! `CUZK_TEST_SEED=<seed>` repeats a run), plus the edge cases: n = 1, n not a
//! multiple of 64, empty and full bitmaps, set bits beyond n (ignored), a
//! nonzero head offset, and a long gather done in word-aligned chunks.
//!
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use cuzk_cuda::gather::BitmapGather;
use cuzk_field::limbs::FrLimbs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use cuzk_cuda::testing::test_stream as stream;
use cuzk_testkit::test_seed;

fn host_gather(values: &[FrLimbs], n: usize, bitmap: &[u64]) -> Vec<FrLimbs> {
    (0..n)
        .filter(|&i| (bitmap[i / 64] >> (i % 64)) & 1 == 1)
        .map(|i| values[i])
        .collect()
}

fn gather_matches_the_host() {
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("gather"));
    let max = (1 << 20) + 77;
    let mut g = BitmapGather::new(&s, max).unwrap();
    // (n, density of set bits, head)
    let cases: [(usize, f64, usize); 9] = [
        (1, 1.0, 0),
        (63, 0.5, 0),
        (64, 0.5, 3),
        (65, 0.5, 0),
        (1000, 0.0, 0),
        (1000, 1.0, 5),
        (4097, 0.03, 0),
        (max, 0.5, 40),
        (max - 1, 0.9, 0),
    ];
    for (n, density, head) in cases {
        let values: Vec<FrLimbs> = (0..n + 64)
            .map(|_| FrLimbs(std::array::from_fn(|_| rng.gen())))
            .collect();
        // Bits beyond n are set on purpose: they must be ignored.
        let mut bitmap: Vec<u64> = vec![0; n.div_ceil(64) + 1];
        for i in 0..bitmap.len() * 64 {
            if i >= n || rng.gen_bool(density) {
                bitmap[i / 64] |= 1 << (i % 64);
            }
        }
        let want = host_gather(&values, n, &bitmap);
        let dv = s.upload_new(&values).unwrap();
        let mut out = s.alloc::<FrLimbs>(head + want.len() + 1).unwrap();
        let count = g.gather(&dv, n, &bitmap, &mut out, head).unwrap();
        assert_eq!(count, want.len(), "n {n}: count");
        let got = s.download_vec(&out).unwrap();
        assert!(
            got[..head].iter().all(|v| *v == FrLimbs::default()),
            "n {n}: the head was written"
        );
        assert!(
            got[head..head + count] == want[..],
            "n {n}: gathered values differ"
        );
        assert_eq!(
            got[head + count],
            FrLimbs::default(),
            "n {n}: wrote past the end"
        );
    }
    // Too small an output is refused before launching.
    let dv = s.upload_new(&[FrLimbs::default(); 8]).unwrap();
    let mut out = s.alloc::<FrLimbs>(2).unwrap();
    let err = g.gather(&dv, 8, &[0xff], &mut out, 0).unwrap_err();
    assert!(err.to_string().contains("8 gathered values"), "{err}");
}

/// A long gather done in chunks with `gather_at` (a word-aligned start, the
/// chunk's bitmap words) gives the whole gather's values, chunk after chunk;
/// a start that is not a multiple of 64 is refused.
fn chunked_gathers_give_the_whole_one() {
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("gather_at"));
    let n: usize = 10_000 + 17;
    let values: Vec<FrLimbs> = (0..n)
        .map(|_| FrLimbs(std::array::from_fn(|_| rng.gen())))
        .collect();
    let bitmap: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.gen()).collect();
    let want = host_gather(&values, n, &bitmap);
    let dv = s.upload_new(&values).unwrap();
    let mut g = BitmapGather::new(&s, n).unwrap();
    let mut out = s.alloc::<FrLimbs>(want.len()).unwrap();
    let mut done = 0;
    // Chunks of 3 words (192 values), the last one shorter.
    for w0 in (0..bitmap.len()).step_by(3) {
        let at = w0 * 64;
        let len = (n - at).min(192);
        let words = &bitmap[w0..(w0 + 3).min(bitmap.len())];
        done += g.gather_at(&dv, at, len, words, &mut out, done).unwrap();
    }
    assert_eq!(done, want.len());
    assert!(
        s.download_vec(&out).unwrap() == want,
        "chunked gathers differ"
    );
    let err = g.gather_at(&dv, 32, 64, &bitmap, &mut out, 0).unwrap_err();
    assert!(err.to_string().contains("a multiple of 64"), "{err}");
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "gather",
        &cuzk_testkit::gpu_tests![gather_matches_the_host, chunked_gathers_give_the_whole_one],
        cuzk_cuda::no_device().as_deref(),
    )
}
