//! The BLS12-381 groups the MSM kernels are built for, [`G1`] and [`G2`],
//! behind one sealed trait: the device layout of a base and of an XYZZ
//! point, each curve's kernels (typed handles declared in `src/decl.rs`,
//! so generic code launches the curve's kernel with arguments the compiler
//! checks), the tuning variants (`tuning` feature), and the host arithmetic
//! that turns a result's limbs into a blstrs point.

use std::fmt;

use cuzk_field::limbs::{DeviceRepr, Fq2Limbs, FqLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Fq, Fq2, G1Projective, G2Projective};

use crate::decl::{
    self, MsmAccumulate, MsmBitmapSum, MsmChainBases, MsmHorner, MsmIndicesSum, MsmMerge,
    MsmReduceSegments, MsmShiftBases, MsmSumGroups,
};
use crate::launch::Kernel;

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
    /// The bucket accumulation (the production variant).
    #[doc(hidden)]
    const ACCUMULATE: Kernel<MsmAccumulate<Self::Affine>>;
    #[doc(hidden)]
    const MERGE: Kernel<MsmMerge>;
    /// The accumulation, merge and reduction of buckets kept across calls
    /// ([`KeptBuckets`](super::KeptBuckets)); `None` where the curve has
    /// none (G2: no streamed section needs it, and its unit would take
    /// minutes more to compile).
    #[doc(hidden)]
    const KEPT: Option<KeptKernels<Self::Affine>>;
    #[doc(hidden)]
    const REDUCE_SEGMENTS: Kernel<MsmReduceSegments>;
    #[doc(hidden)]
    const SUM_GROUPS: Kernel<MsmSumGroups>;
    #[doc(hidden)]
    const HORNER: Kernel<MsmHorner>;
    /// The bitmap batch sum (the production variant).
    #[doc(hidden)]
    const BITMAP_SUM: Kernel<MsmBitmapSum<Self::Affine>>;
    #[doc(hidden)]
    const INDICES_SUM: Kernel<MsmIndicesSum<Self::Affine>>;
    #[doc(hidden)]
    const CHAIN_BASES: Kernel<MsmChainBases<Self::Affine>>;
    #[doc(hidden)]
    const SHIFT_BASES: Kernel<MsmShiftBases<Self::Affine>>;
    /// Accumulation kernels compiled with other launch bounds, prefetch or
    /// products, which the benchmark times; `ACCUMULATE` is
    /// `ACCUMULATE_VARIANTS[DEFAULT_ACCUMULATE_VARIANT]`. Besides the
    /// production units' two, they are in the benchmark units
    /// g1_variants.cu, g1_sqr_variants.cu and g2_variants.cu
    /// (kernels/manifest-dev.toml), so they are missing where those are.
    #[cfg(feature = "tuning")]
    #[doc(hidden)]
    const ACCUMULATE_VARIANTS: &'static [Kernel<MsmAccumulate<Self::Affine>>];
    /// Likewise for the bitmap batch sum (`BITMAP_SUM` is index 0).
    #[cfg(feature = "tuning")]
    #[doc(hidden)]
    const BITMAP_VARIANTS: &'static [Kernel<MsmBitmapSum<Self::Affine>>];
    /// The index of `ACCUMULATE` among the variants (what
    /// `MsmPlan::accumulate_variant` holds by default).
    #[doc(hidden)]
    const DEFAULT_ACCUMULATE_VARIANT: usize;
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

/// A curve's kernels for buckets kept across calls (kernels/msm/pippenger.cuh,
/// `CUZK_MSM_KEPT_KERNELS`).
#[doc(hidden)]
#[derive(Debug)]
pub struct KeptKernels<P> {
    /// Accumulation: a run wholly inside a thread's share starts from its
    /// bucket's sum.
    pub accumulate: Kernel<MsmAccumulate<P>>,
    /// Merge: a final run is added to its bucket's sum.
    pub merge: Kernel<MsmMerge>,
    /// Reduction of every bucket (offsets unread).
    pub reduce: Kernel<MsmReduceSegments>,
}

impl<P> Clone for KeptKernels<P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for KeptKernels<P> {}

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

/// The accumulation kernel of variant `variant` (an index into
/// `ACCUMULATE_VARIANTS`); without the `tuning` feature, only the default
/// is there.
pub(super) fn accumulate_kernel<C: MsmCurve>(
    variant: usize,
) -> crate::Result<Kernel<MsmAccumulate<C::Affine>>> {
    #[cfg(feature = "tuning")]
    let kernel = C::ACCUMULATE_VARIANTS.get(variant).copied();
    #[cfg(not(feature = "tuning"))]
    let kernel = (variant == C::DEFAULT_ACCUMULATE_VARIANT).then_some(C::ACCUMULATE);
    kernel.ok_or_else(|| crate::Error::BadArguments {
        kernel: C::ACCUMULATE.name(),
        message: format!("no accumulation variant {variant} in this build"),
    })
}

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
    /// Unbounded registers: H200 17:51Z, 130.3 ms against 133.3 at 2^24, 468.3
    /// against 488.7 at 2^26 (msm_accumulate_g1's launch bounds).
    const ACCUMULATE: Kernel<MsmAccumulate<G1AffineLimbs>> = decl::msm_accumulate_g1_unbounded;
    const MERGE: Kernel<MsmMerge> = decl::msm_merge_g1;
    const KEPT: Option<KeptKernels<G1AffineLimbs>> = Some(KeptKernels {
        accumulate: decl::msm_accumulate_kept_g1,
        merge: decl::msm_merge_kept_g1,
        reduce: decl::msm_reduce_kept_g1,
    });
    const REDUCE_SEGMENTS: Kernel<MsmReduceSegments> = decl::msm_reduce_segments_g1;
    const SUM_GROUPS: Kernel<MsmSumGroups> = decl::msm_sum_groups_g1;
    const HORNER: Kernel<MsmHorner> = decl::msm_horner_g1;
    const BITMAP_SUM: Kernel<MsmBitmapSum<G1AffineLimbs>> = decl::msm_batch_sum_bitmap_g1;
    const INDICES_SUM: Kernel<MsmIndicesSum<G1AffineLimbs>> = decl::msm_batch_sum_indices_g1;
    const CHAIN_BASES: Kernel<MsmChainBases<G1AffineLimbs>> = decl::msm_chain_bases_g1;
    const SHIFT_BASES: Kernel<MsmShiftBases<G1AffineLimbs>> = decl::msm_shift_bases_g1;
    // Residency variants (kernels/msm/g1.cu, g1_variants.cu).
    #[cfg(feature = "tuning")]
    const ACCUMULATE_VARIANTS: &'static [Kernel<MsmAccumulate<G1AffineLimbs>>] = &[
        decl::msm_accumulate_g1,
        decl::msm_accumulate_g1_8x64,
        decl::msm_accumulate_g1_unbounded,
        // The default with Fq squarings as products (g1_sqr_variants.cu):
        // the baseline of the dedicated squaring.
        decl::msm_accumulate_g1_sqrmul,
    ];
    const DEFAULT_ACCUMULATE_VARIANT: usize = 2;
    #[cfg(feature = "tuning")]
    const BITMAP_VARIANTS: &'static [Kernel<MsmBitmapSum<G1AffineLimbs>>] = &[
        decl::msm_batch_sum_bitmap_g1,
        decl::msm_batch_sum_bitmap_g1_4x128,
        decl::msm_batch_sum_bitmap_g1_unbounded,
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
    /// Without the prefetch: fewer spills (H200 17:51Z, 2^24: 376 ms against 425).
    const ACCUMULATE: Kernel<MsmAccumulate<G2AffineLimbs>> = decl::msm_accumulate_g2_noprefetch;
    const MERGE: Kernel<MsmMerge> = decl::msm_merge_g2;
    const KEPT: Option<KeptKernels<G2AffineLimbs>> = None;
    const REDUCE_SEGMENTS: Kernel<MsmReduceSegments> = decl::msm_reduce_segments_g2;
    const SUM_GROUPS: Kernel<MsmSumGroups> = decl::msm_sum_groups_g2;
    const HORNER: Kernel<MsmHorner> = decl::msm_horner_g2;
    const BITMAP_SUM: Kernel<MsmBitmapSum<G2AffineLimbs>> = decl::msm_batch_sum_bitmap_g2;
    const INDICES_SUM: Kernel<MsmIndicesSum<G2AffineLimbs>> = decl::msm_batch_sum_indices_g2;
    const CHAIN_BASES: Kernel<MsmChainBases<G2AffineLimbs>> = decl::msm_chain_bases_g2;
    const SHIFT_BASES: Kernel<MsmShiftBases<G2AffineLimbs>> = decl::msm_shift_bases_g2;
    #[cfg(feature = "tuning")]
    const ACCUMULATE_VARIANTS: &'static [Kernel<MsmAccumulate<G2AffineLimbs>>] = &[
        decl::msm_accumulate_g2,
        decl::msm_accumulate_g2_noprefetch,
        decl::msm_accumulate_g2_noprefetch_eager,
    ];
    const DEFAULT_ACCUMULATE_VARIANT: usize = 1;
    #[cfg(feature = "tuning")]
    const BITMAP_VARIANTS: &'static [Kernel<MsmBitmapSum<G2AffineLimbs>>] =
        &[decl::msm_batch_sum_bitmap_g2];
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

// The defaults are the variants the index names.
#[cfg(feature = "tuning")]
#[test]
fn the_default_variants_are_the_production_kernels() {
    fn check<C: MsmCurve>() {
        assert_eq!(
            C::ACCUMULATE_VARIANTS[C::DEFAULT_ACCUMULATE_VARIANT].name(),
            C::ACCUMULATE.name()
        );
        assert_eq!(C::BITMAP_VARIANTS[0].name(), C::BITMAP_SUM.name());
    }
    check::<G1>();
    check::<G2>();
}
