//! Density gather on the device (kernels/prover/gather.cu) against the host
//! gather, on fresh random values and bitmaps every run (the seed is printed;
//! `CUZK_TEST_SEED=<seed>` repeats a run), plus the edge cases: n = 1, n not a
//! multiple of 64, empty and full bitmaps, set bits beyond n (ignored), a
//! nonzero head offset; a long gather done by rank in chunks, the chunk
//! copy with zero padding, and the gather of rows by index (points of both
//! groups and scalars) into a buffer at an offset.
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

/// A long gather done by rank in chunks (`RankedBitmap`: the bitmap and its
/// word offsets on the device, each chunk's words found on the host from the
/// set bits before each word) gives the whole gather's values, at any chunk
/// size and head offset; bits past n are ignored. `copy_pad` copies a run
/// and zeroes the rest of its buffer. Out-of-range ranks are refused.
fn ranked_chunks_give_the_whole_gather() {
    use cuzk_cuda::gather::copy_pad;
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("gather_ranks"));
    let n: usize = 10_000 + 17;
    let values: Vec<FrLimbs> = (0..n)
        .map(|_| FrLimbs(std::array::from_fn(|_| rng.gen())))
        .collect();
    let bitmap: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.gen()).collect();
    let want = host_gather(&values, n, &bitmap);
    let dv = s.upload_new(&values).unwrap();
    let mut g = BitmapGather::new(&s, n).unwrap();
    let ranked = g.rank(&bitmap, n).unwrap();
    assert_eq!(ranked.ones(), want.len());
    let mut before = vec![0usize];
    for (w, word) in bitmap.iter().enumerate() {
        let keep = n.saturating_sub(w * 64).min(64);
        let mask = if keep == 64 { !0 } else { (1u64 << keep) - 1 };
        before.push(before[w] + (word & mask).count_ones() as usize);
    }
    let word_of = |r: usize| before.partition_point(|&b| b <= r) - 1;
    let head = 3;
    for chunk in [1usize, 37, 64, 1000, want.len()] {
        let mut out = s.alloc::<FrLimbs>(head + want.len()).unwrap();
        for r0 in (0..want.len()).step_by(chunk) {
            let r1 = (r0 + chunk).min(want.len());
            let span = (word_of(r0), word_of(r1 - 1));
            ranked
                .gather(&s, &dv, span, (r0, r1), &mut out, head + r0)
                .unwrap();
        }
        let got = s.download_vec(&out).unwrap();
        assert!(
            got[head..] == want[..],
            "chunks of {chunk}: gathered values differ"
        );
    }
    let mut out = s.alloc::<FrLimbs>(want.len()).unwrap();
    let err = ranked
        .gather(&s, &dv, (0, 1), (0, want.len() + 1), &mut out, 0)
        .unwrap_err();
    assert!(err.to_string().contains("ranks 0.."), "{err}");

    let mut dst = s.upload_new(&values[..10]).unwrap();
    copy_pad(&s, &dv, 5, 4, &mut dst).unwrap();
    let got = s.download_vec(&dst).unwrap();
    assert!(got[..4] == values[5..9], "copied values differ");
    assert!(
        got[4..].iter().all(|v| *v == FrLimbs::default()),
        "not zeroed"
    );
    let err = copy_pad(&s, &dv, n - 2, 4, &mut dst).unwrap_err();
    assert!(err.to_string().contains("4 values from"), "{err}");
}

/// `gather_rows` moves rows of 32, 96 and 192 bytes (a scalar, a G1 and a
/// G2 point's limbs) by index into a buffer at an offset, leaves the rest
/// of it alone, gives zeros for an index past the source, and refuses a
/// gather that would write past its buffer before launching.
fn rows_gathered_by_index() {
    use cuzk_cuda::gather::gather_rows;
    use cuzk_field::limbs::{G1AffineLimbs, G2AffineLimbs};
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("gather_rows"));
    fn check<T: cuzk_field::limbs::DeviceRepr + Copy + PartialEq + Default>(
        s: &cuzk_cuda::Stream,
        rng: &mut ChaCha20Rng,
        make: impl Fn(&mut ChaCha20Rng) -> T,
        what: &str,
    ) {
        let n = 5_000 + rng.gen_range(0..100);
        let src: Vec<T> = (0..n).map(|_| make(rng)).collect();
        // Increasing indices as the classifier writes them, one past the end.
        let mut idx: Vec<u32> = (0..n as u32).filter(|_| rng.gen_bool(0.05)).collect();
        idx.push(n as u32 + 3);
        let at = 7;
        let fill = make(rng);
        let mut dst_host = vec![fill; at + idx.len() + 5];
        let d_src = s.upload_new(&src).unwrap();
        let d_idx = s.upload_new(&idx).unwrap();
        let mut dst = s.upload_new(&dst_host).unwrap();
        gather_rows(s, &d_src, &d_idx, idx.len(), &mut dst, at).unwrap();
        for (j, &i) in idx.iter().enumerate() {
            dst_host[at + j] = src.get(i as usize).copied().unwrap_or_default();
        }
        let got = s.download_vec(&dst).unwrap();
        assert!(got == dst_host, "{what}: gathered rows differ");
        let err = gather_rows(s, &d_src, &d_idx, idx.len(), &mut dst, at + 6).unwrap_err();
        assert!(err.to_string().contains("indices into"), "{what}: {err}");
    }
    check(
        &s,
        &mut rng,
        |r| FrLimbs(std::array::from_fn(|_| r.gen())),
        "scalars",
    );
    check(
        &s,
        &mut rng,
        |r| {
            let mut p = G1AffineLimbs::default();
            p.x.0 = std::array::from_fn(|_| r.gen());
            p.y.0 = std::array::from_fn(|_| r.gen());
            p
        },
        "G1 points",
    );
    check(
        &s,
        &mut rng,
        |r| {
            let mut p = G2AffineLimbs::default();
            for c in [&mut p.x.c0, &mut p.x.c1, &mut p.y.c0, &mut p.y.c1] {
                c.0 = std::array::from_fn(|_| r.gen());
            }
            p
        },
        "G2 points",
    );
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "gather",
        &cuzk_testkit::gpu_tests![
            gather_matches_the_host,
            ranked_chunks_give_the_whole_gather,
            rows_gathered_by_index
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
