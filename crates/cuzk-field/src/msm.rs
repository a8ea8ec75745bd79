//! CPU multi-scalar multiplication for G1 and G2.
//!
//! Σ sᵢ·Pᵢ is split by scalar class (see [`crate::classify`]): zeros are
//! skipped, ones are summed by blst's batch-affine point addition, and the rest
//! go through blst's multi-threaded Pippenger, itself split by scalar width so
//! that small scalars (≤ 64 bits, common in SHA-256 circuits' packed words) run
//! a 64-bit Pippenger instead of a 255-bit one. blst's Pippenger was measured
//! against blstrs' `multi_exp` (which first converts projective bases to affine
//! and always runs 255 bits); see BENCHMARKS.md.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::PrimeField;
use group::Group;
use rayon::prelude::*;

use crate::classify::classify;

/// Σ `scalars[i]·bases[i]` in G1. Infinity among the bases is allowed.
///
/// # Panics
/// If the lengths differ.
pub fn msm_g1(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    msm_generic::<G1>(bases, scalars)
}

/// Σ `scalars[i]·bases[i]` in G2. Infinity among the bases is allowed.
///
/// # Panics
/// If the lengths differ.
pub fn msm_g2(bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    msm_generic::<G2>(bases, scalars)
}

/// Σ `bases[i]` over `indices` in G1 (the "one-scalar" sum).
pub fn sum_g1(bases: &[G1Affine], indices: &[u32]) -> G1Projective {
    G1::sum(bases, indices)
}

/// Σ `bases[i]` over `indices` in G2.
pub fn sum_g2(bases: &[G2Affine], indices: &[u32]) -> G2Projective {
    G2::sum(bases, indices)
}

/// Reference: Σ sᵢ·Pᵢ by plain scalar multiplications (slow; tests only).
pub fn naive_msm_g1(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    bases
        .par_iter()
        .zip(scalars.par_iter())
        .map(|(p, s)| G1Projective::from(p) * s)
        .reduce(G1Projective::identity, |a, b| a + b)
}

/// Reference: Σ sᵢ·Pᵢ in G2 by plain scalar multiplications.
pub fn naive_msm_g2(bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    bases
        .par_iter()
        .zip(scalars.par_iter())
        .map(|(p, s)| G2Projective::from(p) * s)
        .reduce(G2Projective::identity, |a, b| a + b)
}

/// Scalars at most this wide go through the narrow Pippenger.
const NARROW_BITS: usize = 64;

fn msm_generic<C: BlstCurve>(bases: &[C::Affine], scalars: &[Fr]) -> C::Projective {
    assert_eq!(
        bases.len(),
        scalars.len(),
        "MSM: {} bases but {} scalars",
        bases.len(),
        scalars.len()
    );
    let classes = classify(scalars);
    let (ones, rest) = rayon::join(
        || C::sum(bases, &classes.ones),
        || {
            // Canonical little-endian bytes and bit width of each remaining scalar.
            let reprs: Vec<([u8; 32], usize)> = classes
                .others
                .par_iter()
                .map(|&i| {
                    let r = scalars[i as usize].to_repr();
                    let bytes: [u8; 32] = r.as_ref().try_into().unwrap();
                    (bytes, bit_width(&bytes))
                })
                .collect();
            let (narrow, wide): (Vec<usize>, Vec<usize>) =
                (0..reprs.len()).partition(|&k| reprs[k].1 <= NARROW_BITS);
            let pippenger = |ks: &[usize]| -> C::Projective {
                let Some(bits) = ks.iter().map(|&k| reprs[k].1).max() else {
                    return C::identity();
                };
                let nbytes = bits.div_ceil(8);
                let mut bytes = vec![0u8; ks.len() * nbytes];
                bytes
                    .par_chunks_mut(nbytes)
                    .zip(ks.par_iter())
                    .for_each(|(dst, &k)| dst.copy_from_slice(&reprs[k].0[..nbytes]));
                if ks.len() == bases.len() {
                    // Every scalar is in this group (e.g. random scalars): no gather.
                    return C::pippenger(bases, &bytes, bits);
                }
                let points: Vec<C::Affine> = ks
                    .par_iter()
                    .map(|&k| bases[classes.others[k] as usize])
                    .collect();
                C::pippenger(&points, &bytes, bits)
            };
            let (a, b) = rayon::join(|| pippenger(&narrow), || pippenger(&wide));
            C::add(a, b)
        },
    );
    C::add(ones, rest)
}

fn bit_width(le: &[u8; 32]) -> usize {
    match le.iter().rposition(|&b| b != 0) {
        None => 0,
        Some(i) => i * 8 + (8 - le[i].leading_zeros() as usize),
    }
}

/// The operations the split MSM needs from a curve, backed by blst.
trait BlstCurve {
    type Affine: Copy + Send + Sync;
    type Projective: Copy + Send;
    fn identity() -> Self::Projective;
    fn add(a: Self::Projective, b: Self::Projective) -> Self::Projective;
    fn sum(bases: &[Self::Affine], indices: &[u32]) -> Self::Projective;
    fn pippenger(points: &[Self::Affine], scalar_bytes: &[u8], bits: usize) -> Self::Projective;
}

struct G1;
struct G2;

impl BlstCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    fn identity() -> G1Projective {
        G1Projective::identity()
    }
    fn add(a: G1Projective, b: G1Projective) -> G1Projective {
        a + b
    }
    fn sum(bases: &[G1Affine], indices: &[u32]) -> G1Projective {
        if indices.is_empty() {
            return G1Projective::identity();
        }
        let points: Vec<G1Affine> = indices.par_iter().map(|&i| bases[i as usize]).collect();
        blst_glue::g1_sum(&points)
    }
    fn pippenger(points: &[G1Affine], scalar_bytes: &[u8], bits: usize) -> G1Projective {
        blst_glue::g1_pippenger(points, scalar_bytes, bits)
    }
}

impl BlstCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn identity() -> G2Projective {
        G2Projective::identity()
    }
    fn add(a: G2Projective, b: G2Projective) -> G2Projective {
        a + b
    }
    fn sum(bases: &[G2Affine], indices: &[u32]) -> G2Projective {
        if indices.is_empty() {
            return G2Projective::identity();
        }
        let points: Vec<G2Affine> = indices.par_iter().map(|&i| bases[i as usize]).collect();
        blst_glue::g2_sum(&points)
    }
    fn pippenger(points: &[G2Affine], scalar_bytes: &[u8], bits: usize) -> G2Projective {
        blst_glue::g2_pippenger(points, scalar_bytes, bits)
    }
}

/// The only place that reinterprets blstrs values as blst values.
#[allow(unsafe_code)]
mod blst_glue {
    use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

    const _: () = assert!(size_of::<G1Affine>() == size_of::<blst_p1_affine>());
    const _: () = assert!(size_of::<G2Affine>() == size_of::<blst_p2_affine>());
    const _: () = assert!(size_of::<G1Projective>() == size_of::<blst_p1>());
    const _: () = assert!(size_of::<G2Projective>() == size_of::<blst_p2>());

    fn p1_affines(points: &[G1Affine]) -> &[blst_p1_affine] {
        // SAFETY: blstrs' G1Affine is `repr(transparent)` over blst_p1_affine.
        unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
    }

    fn p2_affines(points: &[G2Affine]) -> &[blst_p2_affine] {
        // SAFETY: blstrs' G2Affine is `repr(transparent)` over blst_p2_affine.
        unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
    }

    fn g1(p: blst_p1) -> G1Projective {
        // SAFETY: G1Projective is `repr(transparent)` over blst_p1 (sizes asserted).
        unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) }
    }

    fn g2(p: blst_p2) -> G2Projective {
        // SAFETY: G2Projective is `repr(transparent)` over blst_p2 (sizes asserted).
        unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) }
    }

    pub(super) fn g1_sum(points: &[G1Affine]) -> G1Projective {
        g1(p1_affines(points).add())
    }

    pub(super) fn g2_sum(points: &[G2Affine]) -> G2Projective {
        g2(p2_affines(points).add())
    }

    pub(super) fn g1_pippenger(points: &[G1Affine], bytes: &[u8], bits: usize) -> G1Projective {
        g1(p1_affines(points).mult(bytes, bits))
    }

    pub(super) fn g2_pippenger(points: &[G2Affine], bytes: &[u8], bits: usize) -> G2Projective {
        g2(p2_affines(points).mult(bytes, bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn fresh_rng() -> ChaCha20Rng {
        let s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        eprintln!("seed {s}");
        ChaCha20Rng::seed_from_u64(s)
    }

    /// A scalar drawn from the mixes the prover sees: 0, 1, small, r − 1, full width.
    fn mixed_scalar(rng: &mut impl Rng) -> Fr {
        match rng.gen_range(0..6) {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            2 => Fr::from(rng.gen::<u32>() as u64),
            3 => Fr::from(rng.gen::<u64>()),
            4 => -Fr::ONE,
            _ => Fr::random(&mut *rng),
        }
    }

    fn g1_points(rng: &mut impl Rng, n: usize) -> Vec<G1Affine> {
        let mut v: Vec<G1Affine> = (0..n)
            .map(|_| (G1Projective::generator() * Fr::random(&mut *rng)).to_affine())
            .collect();
        if n > 3 {
            v[1] = G1Affine::identity(); // infinity among the bases
            v[3] = v[2]; // a repeated base
        }
        v
    }

    fn g2_points(rng: &mut impl Rng, n: usize) -> Vec<G2Affine> {
        let mut v: Vec<G2Affine> = (0..n)
            .map(|_| (G2Projective::generator() * Fr::random(&mut *rng)).to_affine())
            .collect();
        if n > 3 {
            v[1] = G2Affine::identity();
            v[3] = v[2];
        }
        v
    }

    /// One check per scalar pattern and size, both curves.
    fn check(n: usize, scalar: impl Fn(&mut ChaCha20Rng, usize) -> Fr) {
        let mut rng = fresh_rng();
        let p1 = g1_points(&mut rng, n);
        let p2 = g2_points(&mut rng, n);
        let s: Vec<Fr> = (0..n).map(|i| scalar(&mut rng, i)).collect();
        assert_eq!(msm_g1(&p1, &s), naive_msm_g1(&p1, &s), "G1 n={n}");
        assert_eq!(msm_g2(&p2, &s), naive_msm_g2(&p2, &s), "G2 n={n}");
    }

    #[test]
    fn mixed_scalars_match_naive() {
        for n in [1, 2, 3, 7, 64, 300, 1025] {
            check(n, |rng, _| mixed_scalar(rng));
        }
    }

    #[test]
    fn edge_patterns_match_naive() {
        check(0, |_, _| Fr::ONE);
        check(33, |_, _| Fr::ZERO);
        check(33, |_, _| Fr::ONE);
        check(33, |_, _| -Fr::ONE);
        check(100, |_, _| Fr::from(0xdead_beef_u64)); // all equal, narrow
        check(100, |_, i| if i % 2 == 0 { Fr::ONE } else { Fr::ZERO });
        check(70, |_, i| Fr::from(1u64 << (i % 64)));
    }

    #[test]
    fn sums_match_naive() {
        let mut rng = fresh_rng();
        let p = g1_points(&mut rng, 50);
        let idx: Vec<u32> = (0..50).filter(|i| i % 3 != 0).collect();
        let expect = idx
            .iter()
            .fold(G1Projective::identity(), |a, &i| a + p[i as usize]);
        assert_eq!(sum_g1(&p, &idx), expect);
        assert_eq!(sum_g1(&p, &[]), G1Projective::identity());
        let q = g2_points(&mut rng, 10);
        let expect = q.iter().fold(G2Projective::identity(), |a, b| a + b);
        assert_eq!(sum_g2(&q, &(0..10).collect::<Vec<_>>()), expect);
    }

    #[test]
    #[should_panic(expected = "MSM: 2 bases but 1 scalars")]
    fn length_mismatch_is_refused() {
        msm_g1(&[G1Affine::generator(); 2], &[Fr::ONE]);
    }

    #[test]
    fn bit_width_counts() {
        let mut b = [0u8; 32];
        assert_eq!(bit_width(&b), 0);
        b[0] = 1;
        assert_eq!(bit_width(&b), 1);
        b[8] = 0x80;
        assert_eq!(bit_width(&b), 72);
    }
}
