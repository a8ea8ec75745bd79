//! Plain-old-data limb layouts that cross to the GPU.
//!
//! Every type here is `#[repr(C)]`, holds only `u64` limbs, and has the exact
//! layout of the matching `blst` type that `blstrs` wraps (`repr(transparent)`),
//! so a slice of `blstrs` values can be viewed as a slice of limbs without a copy.
//!
//! * [`FrLimbs`]: an Fr element, four 64-bit limbs, little-endian, **Montgomery
//!   form** with R = 2^256 (`blst_fr`).
//! * [`FqLimbs`]: an Fq element, six 64-bit limbs, little-endian, **Montgomery
//!   form** with R = 2^384 (`blst_fp`).
//! * [`Fq2Limbs`]: `c0 + c1·u` with u² = −1, `c0` first (`blst_fp2`).
//! * [`G1AffineLimbs`] / [`G2AffineLimbs`]: affine `x` then `y` (`blst_p1_affine`,
//!   `blst_p2_affine`); the point at infinity is all-zero limbs.
//!
//! Tests in this module pin sizes, alignments and known values' bytes.
#![allow(unsafe_code)]

use blstrs::{G1Affine, G2Affine, Scalar as Fr};

/// An Fr element: 4 little-endian `u64` limbs in Montgomery form (R = 2^256).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FrLimbs(pub [u64; 4]);

/// An Fq element: 6 little-endian `u64` limbs in Montgomery form (R = 2^384).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FqLimbs(pub [u64; 6]);

/// An Fq2 element `c0 + c1·u` (u² = −1), each coefficient in [`FqLimbs`] form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Fq2Limbs {
    /// The real coefficient.
    pub c0: FqLimbs,
    /// The coefficient of `u`.
    pub c1: FqLimbs,
}

/// A G1 point in affine form; infinity is `x = y = 0`. 96 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct G1AffineLimbs {
    /// The x coordinate.
    pub x: FqLimbs,
    /// The y coordinate.
    pub y: FqLimbs,
}

/// A G2 point in affine form; infinity is all zero. 192 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct G2AffineLimbs {
    /// The x coordinate.
    pub x: Fq2Limbs,
    /// The y coordinate.
    pub y: Fq2Limbs,
}

/// Marker for types whose bytes may be copied to and from the device as they are.
///
/// # Safety
/// Implementors are `#[repr(C)]` or `#[repr(transparent)]`, contain no padding,
/// no pointers, and every bit pattern of their size is a valid value.
pub unsafe trait DeviceRepr: Copy + Send + Sync + 'static {}

// SAFETY: arrays of u64 limbs; no padding, every bit pattern valid.
unsafe impl DeviceRepr for FrLimbs {}
// SAFETY: as above.
unsafe impl DeviceRepr for FqLimbs {}
// SAFETY: two FqLimbs, no padding.
unsafe impl DeviceRepr for Fq2Limbs {}
// SAFETY: two FqLimbs, no padding.
unsafe impl DeviceRepr for G1AffineLimbs {}
// SAFETY: two Fq2Limbs, no padding.
unsafe impl DeviceRepr for G2AffineLimbs {}
// SAFETY: plain integers.
unsafe impl DeviceRepr for u32 {}
// SAFETY: plain integers.
unsafe impl DeviceRepr for u64 {}
// SAFETY: plain integers.
unsafe impl DeviceRepr for u8 {}
// SAFETY: plain integers.
unsafe impl DeviceRepr for u16 {}

macro_rules! zero_copy_view {
    ($outer:ty, $limbs:ty, $as_limbs:ident, $as_limbs_mut:ident, $from_limbs:ident, $from_limbs_mut:ident) => {
        const _: () = assert!(std::mem::size_of::<$outer>() == std::mem::size_of::<$limbs>());
        const _: () = assert!(std::mem::align_of::<$outer>() == std::mem::align_of::<$limbs>());

        /// Views a slice of `blstrs` values as limbs, without copying.
        pub fn $as_limbs(values: &[$outer]) -> &[$limbs] {
            // SAFETY: `$outer` is `repr(transparent)` over the blst struct whose
            // layout `$limbs` reproduces (size and alignment asserted above,
            // field order pinned by tests); both are plain u64 limbs.
            unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), values.len()) }
        }

        /// Views a mutable slice of `blstrs` values as limbs, without copying.
        pub fn $as_limbs_mut(values: &mut [$outer]) -> &mut [$limbs] {
            // SAFETY: as for the shared view; the borrow is exclusive.
            unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), values.len()) }
        }

        /// Views limbs as `blstrs` values, without copying or checking.
        ///
        /// The limbs must hold reduced Montgomery values (and, for points, points
        /// on the curve) for the values to be meaningful; no check is made.
        pub fn $from_limbs(limbs: &[$limbs]) -> &[$outer] {
            // SAFETY: same layout; every bit pattern is a valid blst struct.
            unsafe { std::slice::from_raw_parts(limbs.as_ptr().cast(), limbs.len()) }
        }

        /// Mutable form of the limb-to-value view.
        pub fn $from_limbs_mut(limbs: &mut [$limbs]) -> &mut [$outer] {
            // SAFETY: same layout; the borrow is exclusive.
            unsafe { std::slice::from_raw_parts_mut(limbs.as_mut_ptr().cast(), limbs.len()) }
        }
    };
}

zero_copy_view!(
    Fr,
    FrLimbs,
    fr_as_limbs,
    fr_as_limbs_mut,
    limbs_as_fr,
    limbs_as_fr_mut
);
zero_copy_view!(
    G1Affine,
    G1AffineLimbs,
    g1_as_limbs,
    g1_as_limbs_mut,
    limbs_as_g1,
    limbs_as_g1_mut
);
zero_copy_view!(
    G2Affine,
    G2AffineLimbs,
    g2_as_limbs,
    g2_as_limbs_mut,
    limbs_as_g2,
    limbs_as_g2_mut
);

impl From<Fr> for FrLimbs {
    fn from(value: Fr) -> Self {
        fr_as_limbs(std::slice::from_ref(&value))[0]
    }
}

impl From<FrLimbs> for Fr {
    /// Reinterprets Montgomery limbs; the caller guarantees they are reduced.
    fn from(value: FrLimbs) -> Self {
        limbs_as_fr(std::slice::from_ref(&value))[0]
    }
}

impl From<G1Affine> for G1AffineLimbs {
    fn from(value: G1Affine) -> Self {
        g1_as_limbs(std::slice::from_ref(&value))[0]
    }
}

impl From<G2Affine> for G2AffineLimbs {
    fn from(value: G2Affine) -> Self {
        g2_as_limbs(std::slice::from_ref(&value))[0]
    }
}

/// Views any slice of device-representable values as bytes.
pub fn as_bytes<T: DeviceRepr>(values: &[T]) -> &[u8] {
    // SAFETY: DeviceRepr types have no padding, so every byte is initialized.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// Fr's modulus r, little-endian 64-bit limbs (canonical, not Montgomery).
pub const FR_MODULUS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// Fq's modulus q, little-endian 64-bit limbs.
pub const FQ_MODULUS: [u64; 6] = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

#[cfg(test)]
mod tests {
    use super::*;
    use ff::{Field, PrimeField};
    use group::prime::PrimeCurveAffine;

    #[test]
    fn sizes_and_alignments_are_pinned() {
        use std::mem::{align_of, size_of};
        assert_eq!((size_of::<FrLimbs>(), align_of::<FrLimbs>()), (32, 8));
        assert_eq!((size_of::<FqLimbs>(), align_of::<FqLimbs>()), (48, 8));
        assert_eq!((size_of::<Fq2Limbs>(), align_of::<Fq2Limbs>()), (96, 8));
        assert_eq!(
            (size_of::<G1AffineLimbs>(), align_of::<G1AffineLimbs>()),
            (96, 8)
        );
        assert_eq!(
            (size_of::<G2AffineLimbs>(), align_of::<G2AffineLimbs>()),
            (192, 8)
        );
    }

    #[test]
    fn one_is_montgomery_r_mod_r() {
        // R mod r = 2^256 mod r.
        let one = FrLimbs::from(Fr::ONE);
        assert_eq!(
            one.0,
            [
                0x0000_0001_ffff_fffe,
                0x5884_b7fa_0003_4802,
                0x998c_4fef_ecbc_4ff5,
                0x1824_b159_acc5_056f
            ]
        );
        assert_eq!(Fr::from(one), Fr::ONE);
    }

    #[test]
    fn canonical_repr_matches_modulus_arithmetic() {
        // r − 1 serialized canonically is the modulus minus one.
        let minus_one = -Fr::ONE;
        let repr = minus_one.to_repr();
        let mut limbs = [0u64; 4];
        for (i, l) in limbs.iter_mut().enumerate() {
            *l = u64::from_le_bytes(repr.as_ref()[i * 8..i * 8 + 8].try_into().unwrap());
        }
        let mut expect = FR_MODULUS;
        expect[0] -= 1;
        assert_eq!(limbs, expect);
    }

    #[test]
    fn g1_generator_x_then_y_in_montgomery_form() {
        let g = G1Affine::generator();
        let limbs = G1AffineLimbs::from(g);
        // x of the generator, Montgomery form, first limb (blst's BLS12_381_G1.X).
        assert_eq!(limbs.x.0[0], 0x5cb3_8790_fd53_0c16);
        assert_eq!(limbs.y.0[0], 0xbaac_93d5_0ce7_2271);
        let inf = G1AffineLimbs::from(G1Affine::identity());
        assert_eq!(inf, G1AffineLimbs::default());
    }

    #[test]
    fn g2_infinity_is_zero() {
        let inf = G2AffineLimbs::from(G2Affine::identity());
        assert_eq!(inf, G2AffineLimbs::default());
        let g = G2AffineLimbs::from(G2Affine::generator());
        assert_ne!(g.x.c0, g.x.c1);
    }

    #[test]
    fn views_round_trip() {
        let mut v = vec![Fr::ONE, Fr::ZERO, -Fr::ONE];
        let l = fr_as_limbs(&v).to_vec();
        assert_eq!(limbs_as_fr(&l), &v[..]);
        fr_as_limbs_mut(&mut v)[1] = FrLimbs::from(Fr::ONE);
        assert_eq!(v[1], Fr::ONE);
        assert_eq!(as_bytes(&l).len(), 96);
    }
}
