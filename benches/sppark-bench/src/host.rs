//! Host-side data and references: random bases and scalars in blst's layout, blstrs' MSM, and
//! the Fr transform the device results are checked against.

use blst::{blst_fr, blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve as _, Group};
use rand::RngCore;

use crate::sppark::{Curve, G1, G2};

/// Fr's modulus r as four little-endian u64 limbs (from blstrs' `Scalar::char()`).
fn modulus_limbs() -> [u64; 4] {
    let bytes = Scalar::char();
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
}

/// `n` uniformly random Fr in blst's Montgomery form: limbs drawn below r by rejection (r <
/// 2^255, so the top bit is masked and about 9% of draws are redrawn). Every value below r is
/// the Montgomery form of exactly one element, so the elements are uniform too.
pub fn random_fr(rng: &mut impl RngCore, n: usize) -> Vec<blst_fr> {
    let r = modulus_limbs();
    let top_mask = u64::MAX >> r[3].leading_zeros();
    let below_r = |l: &[u64; 4]| {
        for i in (0..4).rev() {
            if l[i] != r[i] {
                return l[i] < r[i];
            }
        }
        false
    };
    (0..n)
        .map(|_| loop {
            let mut l = [0u64; 4];
            for limb in &mut l {
                *limb = rng.next_u64();
            }
            l[3] &= top_mask;
            if below_r(&l) {
                break blst_fr { l };
            }
        })
        .collect()
}

pub fn to_scalar(fr: &blst_fr) -> Scalar {
    Scalar::from(*fr)
}

/// What the host side needs of a curve: its blstrs types, random points and a reference MSM.
pub trait HostCurve: Curve {
    type Projective: Group<Scalar = Scalar> + Copy;

    /// `d` points k_i·G for random k_i, in blst's affine layout.
    fn random_points(rng: &mut impl RngCore, d: usize) -> Vec<Self::Affine>;
    /// Σ scalars[i]·points[i] by blstrs (blst's Pippenger on the CPU).
    fn host_msm(points: &[Self::Affine], scalars: &[Scalar]) -> Self::Projective;
    /// A blst Jacobian point as blstrs' projective type (no check: equality decides).
    fn from_jacobian(p: Self::Jacobian) -> Self::Projective;
}

impl HostCurve for G1 {
    type Projective = G1Projective;

    fn random_points(rng: &mut impl RngCore, d: usize) -> Vec<blst_p1_affine> {
        let g = G1Projective::generator();
        let proj: Vec<G1Projective> = (0..d).map(|_| g * Scalar::random(&mut *rng)).collect();
        let mut affine = vec![G1Affine::identity(); d];
        G1Projective::batch_normalize(&proj, &mut affine);
        affine.iter().map(|a| *a.as_ref()).collect()
    }

    fn host_msm(points: &[blst_p1_affine], scalars: &[Scalar]) -> G1Projective {
        let proj: Vec<G1Projective> = points.iter().map(|&p| G1::from_affine(p)).collect();
        G1Projective::multi_exp(&proj, scalars)
    }

    fn from_jacobian(p: blst::blst_p1) -> G1Projective {
        let mut out = G1Projective::identity();
        *out.as_mut() = p;
        out
    }
}

impl HostCurve for G2 {
    type Projective = G2Projective;

    fn random_points(rng: &mut impl RngCore, d: usize) -> Vec<blst_p2_affine> {
        let g = G2Projective::generator();
        let proj: Vec<G2Projective> = (0..d).map(|_| g * Scalar::random(&mut *rng)).collect();
        let mut affine = vec![G2Affine::identity(); d];
        G2Projective::batch_normalize(&proj, &mut affine);
        affine.iter().map(|a| *a.as_ref()).collect()
    }

    fn host_msm(points: &[blst_p2_affine], scalars: &[Scalar]) -> G2Projective {
        let proj: Vec<G2Projective> = points.iter().map(|&p| G2::from_affine(p)).collect();
        G2Projective::multi_exp(&proj, scalars)
    }

    fn from_jacobian(p: blst::blst_p2) -> G2Projective {
        let mut out = G2Projective::identity();
        *out.as_mut() = p;
        out
    }
}

impl G1 {
    fn from_affine(p: blst_p1_affine) -> G1Projective {
        let mut a = G1Affine::identity();
        *a.as_mut() = p;
        G1Projective::from(a)
    }
}

impl G2 {
    fn from_affine(p: blst_p2_affine) -> G2Projective {
        let mut a = G2Affine::identity();
        *a.as_mut() = p;
        G2Projective::from(a)
    }
}

/// `n` bases made by repeating `distinct`: base i is distinct[i mod d].
pub fn tile<T: Copy>(distinct: &[T], n: usize) -> Vec<T> {
    distinct.iter().copied().cycle().take(n).collect()
}

/// The scalars of an MSM over tiled bases folded onto the distinct ones:
/// Σ_i s_i·P_(i mod d) = Σ_j (Σ_(i ≡ j mod d) s_i)·P_j, so a d-point host MSM checks an
/// n-point device one.
pub fn fold(scalars: &[blst_fr], d: usize) -> Vec<Scalar> {
    let mut folded = vec![Scalar::ZERO; d];
    for (i, s) in scalars.iter().enumerate() {
        folded[i % d] += to_scalar(s);
    }
    folded
}

/// ω of the domain of size 2^log_n, as bellperson and cuzk take it: Fr::ROOT_OF_UNITY (order
/// 2^32) squared 32 − log_n times.
pub fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

/// e_j = Σ_i c_i·ω^(ij), every j, by the definition (O(n²): for small n only).
pub fn naive_dft(coeffs: &[blst_fr], log_n: u32) -> Vec<Scalar> {
    let w = omega(log_n);
    let mut wj = Scalar::ONE;
    let mut out = Vec::with_capacity(coeffs.len());
    for _ in 0..coeffs.len() {
        out.push(evaluate(coeffs, wj));
        wj *= w;
    }
    out
}

/// Σ_i c_i·x^i (Horner).
pub fn evaluate(coeffs: &[blst_fr], x: Scalar) -> Scalar {
    coeffs
        .iter()
        .rev()
        .fold(Scalar::ZERO, |acc, c| acc * x + to_scalar(c))
}

#[cfg(test)]
mod tests {
    //! Host-only checks (no GPU): the representation the device is handed and the identities
    //! the device results are checked with.

    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn fr_is_blst_montgomery_form() {
        // 1 in Montgomery form is R mod r = 2^256 mod r, which is what sppark's fr_t holds for
        // one (ff/bls12-381.hpp, BLS12_381_rONE).
        let one: blst_fr = Scalar::ONE.into();
        assert_eq!(
            one.l,
            [
                0x0000_0001_ffff_fffe,
                0x5884_b7fa_0003_4802,
                0x998c_4fef_ecbc_4ff5,
                0x1824_b159_acc5_056f
            ]
        );
        assert_eq!(std::mem::size_of::<blst_fr>(), 32);
        assert_eq!(std::mem::size_of::<blst_p1_affine>(), 96);
        assert_eq!(std::mem::size_of::<blst_p2_affine>(), 192);
    }

    #[test]
    fn random_fr_is_below_r_and_full_width() {
        let r = modulus_limbs();
        let values = random_fr(&mut ChaCha8Rng::seed_from_u64(1), 4096);
        assert!(values.iter().all(|v| {
            let l = v.l;
            (0..4)
                .rev()
                .find(|&i| l[i] != r[i])
                .is_some_and(|i| l[i] < r[i])
        }));
        // Full width: some values use the top limb's top bits.
        assert!(values.iter().any(|v| v.l[3] >> 60 >= 6));
    }

    #[test]
    fn folded_msm_equals_tiled_msm() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let points = G1::random_points(&mut rng, 5);
        let scalars = random_fr(&mut rng, 23);
        let tiled = tile(&points, 23);
        let all: Vec<Scalar> = scalars.iter().map(to_scalar).collect();
        assert_eq!(
            G1::host_msm(&tiled, &all),
            G1::host_msm(&points, &fold(&scalars, 5))
        );
        let points = G2::random_points(&mut rng, 3);
        let tiled = tile(&points, 23);
        assert_eq!(
            G2::host_msm(&tiled, &all),
            G2::host_msm(&points, &fold(&scalars, 3))
        );
    }

    #[test]
    fn omega_has_order_n_and_dft_matches_evaluation() {
        let w = omega(4);
        assert_eq!(w.pow_vartime([16u64]), Scalar::ONE);
        assert_eq!(w.pow_vartime([8u64]), -Scalar::ONE);
        let coeffs = random_fr(&mut ChaCha8Rng::seed_from_u64(3), 16);
        let dft = naive_dft(&coeffs, 4);
        assert_eq!(dft[0], coeffs.iter().map(to_scalar).sum::<Scalar>());
        assert_eq!(dft[5], evaluate(&coeffs, w.pow_vartime([5u64])));
    }
}
