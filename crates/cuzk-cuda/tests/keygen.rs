//! GPU fixed-base multiplication (kernels/keygen/) against blstrs' scalar
//! multiplication, on fresh random scalars every run (the seed is printed;
//! `CUZK_TEST_SEED=<seed>` repeats a run) plus the edge cases 0, 1, r − 1,
//! digits at the window boundaries, runs of zeros (infinity) longer than one
//! conversion run, and chunk boundaries.
//!
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use cuzk_cuda::keygen::{FixedBaseTable, KeygenCurve, Staging, AFFINE_RUN};
use cuzk_cuda::msm::{G1, G2};
use cuzk_field::limbs::{fr_as_limbs, g1_as_limbs, g2_as_limbs};
use cuzk_field::{Curve, Field, Fr, G1Affine, G1Projective, G2Affine, G2Projective, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use cuzk_cuda::testing::test_stream as stream;
use cuzk_testkit::test_seed;

fn rng(test: &str) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(test_seed(test))
}

/// The host side of one curve: the reference product and the table, built
/// the plain way (repeated additions, then normalization).
trait HostCurve: KeygenCurve {
    type Proj: Curve<AffineRepr = Self::Aff> + Group<Scalar = Fr> + Copy;
    type Aff: Copy + PartialEq + std::fmt::Debug + Default;
    fn limbs(points: &[Self::Aff]) -> Vec<Self::Affine>;
    fn from_limbs(limbs: &[Self::Affine]) -> Vec<Self::Aff>;
}

impl HostCurve for G1 {
    type Proj = G1Projective;
    type Aff = G1Affine;
    fn limbs(points: &[G1Affine]) -> Vec<Self::Affine> {
        g1_as_limbs(points).to_vec()
    }
    fn from_limbs(limbs: &[Self::Affine]) -> Vec<G1Affine> {
        cuzk_field::limbs::limbs_as_g1(limbs).to_vec()
    }
}

impl HostCurve for G2 {
    type Proj = G2Projective;
    type Aff = G2Affine;
    fn limbs(points: &[G2Affine]) -> Vec<Self::Affine> {
        g2_as_limbs(points).to_vec()
    }
    fn from_limbs(limbs: &[Self::Affine]) -> Vec<G2Affine> {
        cuzk_field::limbs::limbs_as_g2(limbs).to_vec()
    }
}

/// table[j·half + d − 1] = d · 2^(w·j) · base, with w·windows ≥ 256.
fn table<C: HostCurve>(base: C::Proj, w: u32) -> (Vec<C::Affine>, u32) {
    let windows = 256u32.div_ceil(w);
    let half = 1usize << (w - 1);
    let mut proj = Vec::with_capacity(windows as usize * half);
    let mut row_base = base;
    for _ in 0..windows {
        let mut p = row_base;
        for _ in 0..half {
            proj.push(p);
            p += row_base;
        }
        for _ in 0..w {
            row_base = row_base.double();
        }
    }
    let mut aff = vec![C::Aff::default(); proj.len()];
    C::Proj::batch_normalize(&proj, &mut aff);
    (C::limbs(&aff), windows)
}

/// Edge scalars, then `random` random ones.
fn scalars(rng: &mut ChaCha20Rng, w: u32, random: usize) -> Vec<Fr> {
    let mut s = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64), -Fr::from(2u64)];
    let half = Fr::from(1u64 << (w - 1));
    let radix = Fr::from(1u64 << w);
    s.extend([
        half,
        half + Fr::ONE,
        half - Fr::ONE,
        radix - Fr::ONE,
        -half,
        radix * half,
    ]);
    // More zeros in a row than one conversion run holds.
    s.extend(std::iter::repeat_n(Fr::ZERO, AFFINE_RUN as usize + 3));
    s.extend((0..random).map(|_| Fr::random(&mut *rng)));
    s.push(Fr::ZERO);
    s
}

/// How the products are run.
#[derive(Clone, Copy)]
enum Mode {
    /// `mul`: default chunks, pageable copies.
    Plain,
    /// `mul_in_chunks` with this many points per chunk.
    Chunks(usize),
    /// `mul_staged` with pinned buffers holding this many points of either curve.
    Staged(usize),
}

fn check<C: HostCurve>(test: &str, w: u32, random: usize, mode: Mode) {
    let Some(stream) = stream() else { return };
    let mut rng = rng(test);
    let base = C::Proj::random(&mut rng);
    let (points, windows) = table::<C>(base, w);
    let table = FixedBaseTable::<C>::upload(&stream, &points, w, windows).unwrap();
    let s = scalars(&mut rng, w, random);
    let mut out = vec![C::Affine::default(); s.len()];
    match mode {
        Mode::Plain => table.mul(&stream, fr_as_limbs(&s), &mut out),
        Mode::Chunks(c) => table.mul_in_chunks(&stream, fr_as_limbs(&s), &mut out, c),
        Mode::Staged(points) => {
            let mut staging = Staging::with_sizes(stream.gpu(), 32 * points, 192 * points).unwrap();
            let times = table.mul_staged(&stream, &mut staging, fr_as_limbs(&s), &mut out);
            times.map(|t| assert!(t.mul_ms > 0.0 && t.affine_ms > 0.0, "{t:?}"))
        }
    }
    .unwrap();
    let got = C::from_limbs(&out);
    for (i, (s, p)) in s.iter().zip(&got).enumerate() {
        assert_eq!(
            *p,
            (base * s).to_affine(),
            "{test}: scalar {i} ({s:?}), {windows} windows of {w} bits"
        );
    }
}

fn g1_fixed_base_matches_cpu() {
    check::<G1>("g1 w=16", 16, 2000, Mode::Plain);
    check::<G1>("g1 w=7", 7, 300, Mode::Plain);
}

fn g2_fixed_base_matches_cpu() {
    check::<G2>("g2 w=13", 13, 700, Mode::Plain);
    check::<G2>("g2 w=5", 5, 100, Mode::Plain);
}

fn chunk_boundaries() {
    // 97 points per chunk: runs and chunks end at unrelated places.
    check::<G1>("g1 chunks of 97", 9, 400, Mode::Chunks(97));
    check::<G2>("g2 chunks of 33", 9, 100, Mode::Chunks(33));
}

fn staged_through_pinned_buffers() {
    // 61 points per chunk: several chunks, both staging slots, a short last one.
    check::<G1>("g1 staged, 61 per chunk", 11, 500, Mode::Staged(61));
    check::<G2>("g2 staged, 61 per chunk", 8, 200, Mode::Staged(61));
    // One chunk holding everything.
    check::<G1>("g1 staged, one chunk", 12, 300, Mode::Staged(1 << 12));
}

fn bad_tables_are_refused() {
    let Some(stream) = stream() else { return };
    let (points, windows) = table::<G1>(G1Projective::generator(), 4);
    let err = FixedBaseTable::<G1>::upload(&stream, &points[1..], 4, windows).unwrap_err();
    assert!(err.to_string().contains("want"), "{err}");
    let err = FixedBaseTable::<G1>::upload(&stream, &points, 4, windows - 1).unwrap_err();
    assert!(err.to_string().contains("256"), "{err}");
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "keygen",
        &cuzk_testkit::gpu_tests![
            g1_fixed_base_matches_cpu,
            g2_fixed_base_matches_cpu,
            chunk_boundaries,
            staged_through_pinned_buffers,
            bad_tables_are_refused
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
