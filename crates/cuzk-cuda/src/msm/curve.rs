//! The BLS12-381 groups the MSM kernels are built for, [`G1`] and [`G2`],
//! behind one sealed trait: the device layout of a base and of an XYZZ
//! point, the names of each curve's kernels (one table, so no launch wrapper
//! spells a kernel name of its own), the tuning variants, and the host
//! arithmetic that turns a result's limbs into a blstrs point.

use std::fmt;

use cuzk_field::limbs::{DeviceRepr, Fq2Limbs, FqLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Fq, Fq2, G1Projective, G2Projective};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::G1 {}
    impl Sealed for super::G2 {}
}

/// The BLS12-381 groups the MSM kernels are built for: [`G1`] and [`G2`].
pub trait MsmCurve: sealed::Sealed + Send + Sync + 'static {
    /// "G1" or "G2", for messages.
    const NAME: &'static str;
    /// Affine base as the kernels read it (infinity = all zero).
    type Affine: DeviceRepr + Default + PartialEq + fmt::Debug;
    /// The host result type.
    type Projective: Copy + fmt::Debug + PartialEq;
    /// u64 words of one XYZZ point on the device (4 coordinates).
    #[doc(hidden)]
    const XYZZ_WORDS: usize;
    /// Kernel names: accumulate, merge, reduce_segments, sum_groups, horner,
    /// batch_sum_bitmap, batch_sum_indices, chain_bases, shift_bases.
    #[doc(hidden)]
    const KERNELS: [&'static str; 9];
    /// Accumulation kernels compiled with different launch bounds (index 0 is
    /// KERNELS' own); the benchmark times them. Only index 0 and the default
    /// are in the production units (kernels/msm/g1.cu, g2.cu); the others
    /// are in the benchmark units g1_variants.cu, g1_sqr_variants.cu and g2_variants.cu
    /// (kernels/manifest-dev.toml), so they are missing where those are.
    #[doc(hidden)]
    const ACCUMULATE_VARIANTS: &'static [&'static str];
    /// Likewise for the bitmap batch sum (index 0, the default, in
    /// production; the others in the benchmark units).
    #[doc(hidden)]
    const BITMAP_VARIANTS: &'static [&'static str];
    /// The variants used by default.
    #[doc(hidden)]
    const DEFAULT_ACCUMULATE_VARIANT: usize;
    #[doc(hidden)]
    const DEFAULT_BITMAP_VARIANT: usize;
    /// Builds the host point from Jacobian (X, Y, Z) Montgomery limbs, 3 ×
    /// XYZZ_WORDS / 4 words.
    #[doc(hidden)]
    fn from_jacobian_words(words: &[u64]) -> Self::Projective;
    /// Builds the host point from XYZZ (X, Y, ZZ, ZZZ) Montgomery limbs,
    /// XYZZ_WORDS words (ZZ = 0 is infinity).
    #[doc(hidden)]
    fn from_xyzz_words(words: &[u64]) -> Self::Projective;
    /// 2·p (host).
    #[doc(hidden)]
    fn double(p: &Self::Projective) -> Self::Projective;
    /// p + q (host).
    #[doc(hidden)]
    fn add(p: &Self::Projective, q: &Self::Projective) -> Self::Projective;
}

/// Jacobian (X·ZZ·ZZZ², Y·ZZZ⁴, ZZ·ZZZ) of an XYZZ point: the same map as
/// `xyzz_t::to_jacobian` on the device (x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²).
fn xyzz_to_jacobian<F: ff::Field>(x: F, y: F, zz: F, zzz: F) -> (F, F, F) {
    let zzz2 = zzz.square();
    (x * zz * zzz2, y * zzz2.square(), zz * zzz)
}

/// G1: bases [`G1AffineLimbs`], results [`G1Projective`].
#[derive(Clone, Copy, Debug)]
pub enum G1 {}
/// G2: bases [`G2AffineLimbs`], results [`G2Projective`].
#[derive(Clone, Copy, Debug)]
pub enum G2 {}

/// Indices into [`MsmCurve::KERNELS`].
pub(super) const K_ACCUMULATE: usize = 0;
pub(super) const K_MERGE: usize = 1;
pub(super) const K_REDUCE: usize = 2;
pub(super) const K_SUM_GROUPS: usize = 3;
pub(super) const K_HORNER: usize = 4;
pub(super) const K_BITMAP: usize = 5;
pub(super) const K_INDICES: usize = 6;
pub(super) const K_CHAIN: usize = 7;
pub(super) const K_SHIFT: usize = 8;

fn fq_from_words(w: &[u64]) -> Fq {
    let mut l = [0u64; 6];
    l.copy_from_slice(&w[..6]);
    Fq::from_raw_unchecked(l)
}

impl MsmCurve for G1 {
    const NAME: &'static str = "G1";
    type Affine = G1AffineLimbs;
    type Projective = G1Projective;
    const XYZZ_WORDS: usize = 4 * 6;
    const KERNELS: [&'static str; 9] = [
        "msm_accumulate_g1",
        "msm_merge_g1",
        "msm_reduce_segments_g1",
        "msm_sum_groups_g1",
        "msm_horner_g1",
        "msm_batch_sum_bitmap_g1",
        "msm_batch_sum_indices_g1",
        "msm_chain_bases_g1",
        "msm_shift_bases_g1",
    ];
    // Residency variants (kernels/msm/g1.cu); the default kernel carries the
    // launch bounds that won on the H200.
    const ACCUMULATE_VARIANTS: &'static [&'static str] = &[
        "msm_accumulate_g1",
        "msm_accumulate_g1_8x64",
        "msm_accumulate_g1_unbounded",
        // The default with Fq squarings as products (g1_sqr_variants.cu):
        // the baseline of the dedicated squaring.
        "msm_accumulate_g1_sqrmul",
    ];
    /// Unbounded registers: H200 17:51Z, 130.3 ms against 133.3 at 2^24, 468.3
    /// against 488.7 at 2^26.
    const DEFAULT_ACCUMULATE_VARIANT: usize = 2;
    const DEFAULT_BITMAP_VARIANT: usize = 0;
    const BITMAP_VARIANTS: &'static [&'static str] = &[
        "msm_batch_sum_bitmap_g1",
        "msm_batch_sum_bitmap_g1_4x128",
        "msm_batch_sum_bitmap_g1_unbounded",
    ];
    fn from_jacobian_words(w: &[u64]) -> G1Projective {
        G1Projective::from_raw_unchecked(
            fq_from_words(&w[0..6]),
            fq_from_words(&w[6..12]),
            fq_from_words(&w[12..18]),
        )
    }
    fn from_xyzz_words(w: &[u64]) -> G1Projective {
        let f = |i: usize| fq_from_words(&w[6 * i..6 * i + 6]);
        let (x, y, z) = xyzz_to_jacobian(f(0), f(1), f(2), f(3));
        G1Projective::from_raw_unchecked(x, y, z)
    }
    fn double(p: &G1Projective) -> G1Projective {
        cuzk_field::Group::double(p)
    }
    fn add(p: &G1Projective, q: &G1Projective) -> G1Projective {
        p + q
    }
}

impl MsmCurve for G2 {
    const NAME: &'static str = "G2";
    type Affine = G2AffineLimbs;
    type Projective = G2Projective;
    const XYZZ_WORDS: usize = 4 * 12;
    const KERNELS: [&'static str; 9] = [
        "msm_accumulate_g2",
        "msm_merge_g2",
        "msm_reduce_segments_g2",
        "msm_sum_groups_g2",
        "msm_horner_g2",
        "msm_batch_sum_bitmap_g2",
        "msm_batch_sum_indices_g2",
        "msm_chain_bases_g2",
        "msm_shift_bases_g2",
    ];
    const ACCUMULATE_VARIANTS: &'static [&'static str] = &[
        "msm_accumulate_g2",
        "msm_accumulate_g2_noprefetch",
        "msm_accumulate_g2_noprefetch_eager",
    ];
    const BITMAP_VARIANTS: &'static [&'static str] = &["msm_batch_sum_bitmap_g2"];
    /// Without the prefetch: fewer spills (H200 17:51Z, 2^24: 376 ms against 425).
    const DEFAULT_ACCUMULATE_VARIANT: usize = 1;
    const DEFAULT_BITMAP_VARIANT: usize = 0;
    fn from_jacobian_words(w: &[u64]) -> G2Projective {
        let fq2 = |w: &[u64]| Fq2::new(fq_from_words(&w[0..6]), fq_from_words(&w[6..12]));
        G2Projective::from_raw_unchecked(fq2(&w[0..12]), fq2(&w[12..24]), fq2(&w[24..36]))
    }
    fn from_xyzz_words(w: &[u64]) -> G2Projective {
        let f = |i: usize| {
            let w = &w[12 * i..12 * i + 12];
            Fq2::new(fq_from_words(&w[0..6]), fq_from_words(&w[6..12]))
        };
        let (x, y, z) = xyzz_to_jacobian(f(0), f(1), f(2), f(3));
        G2Projective::from_raw_unchecked(x, y, z)
    }
    fn double(p: &G2Projective) -> G2Projective {
        cuzk_field::Group::double(p)
    }
    fn add(p: &G2Projective, q: &G2Projective) -> G2Projective {
        p + q
    }
}

// Layout pins for the limb types the kernels reinterpret.
const _: () =
    assert!(std::mem::size_of::<FqLimbs>() == 48 && std::mem::size_of::<Fq2Limbs>() == 96);
const _: () = assert!(
    std::mem::size_of::<G1AffineLimbs>() == 96 && std::mem::size_of::<G2AffineLimbs>() == 192
);
