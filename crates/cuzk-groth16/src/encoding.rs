//! Point encodings shared by key files and proofs, with exact reasons for
//! refusing a point.
//!
//! Encoding: the zcash BLS12-381 format that blstrs implements. Coordinates
//! are big-endian, 48 bytes per Fp; an Fp2 element `c0 + c1·u` is written
//! `c1 ‖ c0`. Uncompressed points are `x ‖ y` (G1 96 B, G2 192 B), compressed
//! points are `x` alone (G1 48 B, G2 96 B). The top three bits of the first
//! byte are flags: 0x80 compressed, 0x40 point at infinity, 0x20 the sign of
//! y (compressed only).
//!
//! Decoding is fast on the success path (blst's own on-curve decode, then
//! the subgroup check when asked for). Only a refused point pays for
//! the field arithmetic that tells *why* it was refused (the `diagnose_*`
//! functions), so a corrupt key names the precise problem at no cost to a
//! good one.
//!
//! Every decoder here refuses the point at infinity: no position in a
//! Groth16 key or proof may hold it (see [`crate::params`] for the one place
//! bellperson is more lenient).

use std::fmt;

use blstrs::{Fp, Fp2, G1Affine, G2Affine};
use ff::Field;
use group::prime::PrimeCurveAffine;

/// Bytes of an uncompressed G1 point.
pub const G1_UNCOMPRESSED_LEN: usize = 96;
/// Bytes of an uncompressed G2 point.
pub const G2_UNCOMPRESSED_LEN: usize = 192;
/// Bytes of a compressed G1 point.
pub const G1_COMPRESSED_LEN: usize = 48;
/// Bytes of a compressed G2 point.
pub const G2_COMPRESSED_LEN: usize = 96;

const FLAG_COMPRESSED: u8 = 0x80;
const FLAG_INFINITY: u8 = 0x40;
const FLAG_SIGN: u8 = 0x20;
const FLAGS: u8 = FLAG_COMPRESSED | FLAG_INFINITY | FLAG_SIGN;

/// How thoroughly a decoded point is checked.
///
/// Every mode checks the encoding, that the point is on the curve, and that
/// it is not the point at infinity. Those checks cost a few field
/// multiplications and catch any random corruption of a point (a random x, y
/// pair is on the curve with probability about 2^-381).
///
/// The subgroup check is what makes a point a valid group element for the
/// proof system, and it costs one or two scalar-multiplication-sized
/// computations per point: decoding a key with [`PointCheck::Full`] is about
/// a hundred times slower than with [`PointCheck::OnCurve`] (measurements in
/// [`crate::params`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PointCheck {
    /// Encoding, on-curve, not identity, and in the prime-order subgroup
    /// (bellperson's `checked = true`). Use for keys from an untrusted source.
    Full,
    /// Encoding, on-curve and not identity; subgroup membership not checked
    /// (bellperson's `checked = false`, which blst also decodes on-curve).
    /// Use for keys whose integrity is established otherwise, as Filecoin
    /// does by checking each parameter file's digest before use.
    OnCurve,
}

/// The reason one encoded curve point was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum PointError {
    /// The bytes are not a well-formed encoding (see [`EncodingFault`]).
    #[error("malformed encoding: {0}")]
    Encoding(EncodingFault),
    /// Canonical coordinates that do not satisfy the curve equation (for a
    /// compressed point: no y exists for this x).
    #[error("not on the curve")]
    NotOnCurve,
    /// On the curve, but not in the prime-order (r-torsion) subgroup.
    #[error("on the curve but not in the prime-order subgroup")]
    NotInSubgroup,
    /// The point at infinity, which this position never holds in a valid key
    /// or proof.
    #[error("the point at infinity, which is not allowed here")]
    Identity,
}

/// How a point's encoding is malformed, independent of curve arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncodingFault {
    /// The compression flag (0x80) does not match the encoding expected here.
    CompressionFlag {
        /// Whether this position expects a compressed encoding.
        expected_compressed: bool,
    },
    /// The infinity flag (0x40) is set but other bits are not zero.
    NonZeroInfinity,
    /// The sign flag (0x20) is set on an uncompressed point.
    SignFlag,
    /// A coordinate (or half of an Fp2 coordinate) is not below the field
    /// modulus p.
    NonCanonicalCoordinate,
}

impl fmt::Display for EncodingFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncodingFault::CompressionFlag {
                expected_compressed: true,
            } => "compression flag (0x80) missing in a compressed point",
            EncodingFault::CompressionFlag {
                expected_compressed: false,
            } => "compression flag (0x80) set in an uncompressed point",
            EncodingFault::NonZeroInfinity => {
                "infinity flag (0x40) set but the other bits are not zero"
            }
            EncodingFault::SignFlag => "sign flag (0x20) set on an uncompressed point",
            EncodingFault::NonCanonicalCoordinate => "a coordinate is not below the field modulus",
        })
    }
}

/// Decodes an uncompressed G1 point (96 bytes).
pub fn decode_g1_uncompressed(
    bytes: &[u8; G1_UNCOMPRESSED_LEN],
    check: PointCheck,
) -> Result<G1Affine, PointError> {
    // Refuse flags ourselves: blst would otherwise accept a compressed point
    // inside a 96-byte buffer, ignoring the second half.
    if bytes[0] & FLAGS != 0 {
        return Err(uncompressed_flag_fault(bytes));
    }
    match Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(bytes)) {
        Some(p) => finish_g1(p, check),
        None => Err(diagnose_g1_uncompressed(bytes)),
    }
}

/// Decodes an uncompressed G2 point (192 bytes).
pub fn decode_g2_uncompressed(
    bytes: &[u8; G2_UNCOMPRESSED_LEN],
    check: PointCheck,
) -> Result<G2Affine, PointError> {
    if bytes[0] & FLAGS != 0 {
        return Err(uncompressed_flag_fault(bytes));
    }
    match Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(bytes)) {
        Some(p) => finish_g2(p, check),
        None => Err(diagnose_g2_uncompressed(bytes)),
    }
}

/// Decodes a compressed G1 point (48 bytes).
pub fn decode_g1_compressed(
    bytes: &[u8; G1_COMPRESSED_LEN],
    check: PointCheck,
) -> Result<G1Affine, PointError> {
    compressed_flag_fault(bytes)?;
    match Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(bytes)) {
        Some(p) => finish_g1(p, check),
        None => Err(diagnose_g1_compressed(bytes)),
    }
}

/// Decodes a compressed G2 point (96 bytes).
pub fn decode_g2_compressed(
    bytes: &[u8; G2_COMPRESSED_LEN],
    check: PointCheck,
) -> Result<G2Affine, PointError> {
    compressed_flag_fault(bytes)?;
    match Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(bytes)) {
        Some(p) => finish_g2(p, check),
        None => Err(diagnose_g2_compressed(bytes)),
    }
}

/// Checks a point already in memory (e.g. a `Proof` built field by field):
/// on the curve, not the identity, and in the subgroup when `check` says so.
pub fn validate_g1(p: &G1Affine, check: PointCheck) -> Result<(), PointError> {
    if bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    if !bool::from(p.is_on_curve()) {
        return Err(PointError::NotOnCurve);
    }
    finish_g1(*p, check).map(|_| ())
}

/// G2 counterpart of [`validate_g1`].
pub fn validate_g2(p: &G2Affine, check: PointCheck) -> Result<(), PointError> {
    if bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    if !bool::from(p.is_on_curve()) {
        return Err(PointError::NotOnCurve);
    }
    finish_g2(*p, check).map(|_| ())
}

fn finish_g1(p: G1Affine, check: PointCheck) -> Result<G1Affine, PointError> {
    if bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    if check == PointCheck::Full && !bool::from(p.is_torsion_free()) {
        return Err(PointError::NotInSubgroup);
    }
    Ok(p)
}

fn finish_g2(p: G2Affine, check: PointCheck) -> Result<G2Affine, PointError> {
    if bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    if check == PointCheck::Full && !bool::from(p.is_torsion_free()) {
        return Err(PointError::NotInSubgroup);
    }
    Ok(p)
}

/// Names the fault of an uncompressed encoding whose flag bits are not all
/// zero. An all-zero body with only the infinity flag is the identity.
fn uncompressed_flag_fault(bytes: &[u8]) -> PointError {
    let flags = bytes[0] & FLAGS;
    if flags & FLAG_COMPRESSED != 0 {
        PointError::Encoding(EncodingFault::CompressionFlag {
            expected_compressed: false,
        })
    } else if flags & FLAG_SIGN != 0 {
        PointError::Encoding(EncodingFault::SignFlag)
    } else if body_is_zero(bytes) {
        PointError::Identity
    } else {
        PointError::Encoding(EncodingFault::NonZeroInfinity)
    }
}

/// Refuses a compressed encoding with bad flags, or the identity.
fn compressed_flag_fault(bytes: &[u8]) -> Result<(), PointError> {
    let flags = bytes[0] & FLAGS;
    if flags & FLAG_COMPRESSED == 0 {
        return Err(PointError::Encoding(EncodingFault::CompressionFlag {
            expected_compressed: true,
        }));
    }
    if flags & FLAG_INFINITY != 0 {
        return Err(if flags & FLAG_SIGN == 0 && body_is_zero(bytes) {
            PointError::Identity
        } else {
            PointError::Encoding(EncodingFault::NonZeroInfinity)
        });
    }
    Ok(())
}

/// True if every bit other than the flags is zero.
fn body_is_zero(bytes: &[u8]) -> bool {
    bytes[0] & !FLAGS == 0 && bytes[1..].iter().all(|&b| b == 0)
}

/// Reads one big-endian Fp from 48 bytes, ignoring the flag bits.
fn fp_at(bytes: &[u8], start: usize, mask_flags: bool) -> Result<Fp, PointError> {
    let mut be = [0u8; 48];
    be.copy_from_slice(&bytes[start..start + 48]);
    if mask_flags {
        be[0] &= !FLAGS;
    }
    Option::from(Fp::from_bytes_be(&be))
        .ok_or(PointError::Encoding(EncodingFault::NonCanonicalCoordinate))
}

/// Reads one Fp2 written `c1 ‖ c0`.
fn fp2_at(bytes: &[u8], start: usize, mask_flags: bool) -> Result<Fp2, PointError> {
    let c1 = fp_at(bytes, start, mask_flags)?;
    let c0 = fp_at(bytes, start + 48, false)?;
    Ok(Fp2::new(c0, c1))
}

/// G1: y^2 = x^3 + 4.
fn g1_rhs(x: &Fp) -> Fp {
    x.square() * x + Fp::from(4u64)
}

/// G2: y^2 = x^3 + 4(1 + u).
fn g2_rhs(x: &Fp2) -> Fp2 {
    x.square() * x + Fp2::new(Fp::from(4u64), Fp::from(4u64))
}

// The diagnosis functions run only after blst refused a point whose flags
// were fine. blst refuses, besides non-canonical or off-curve coordinates,
// the on-curve points (0, ±2) of G1 as "not in group" even in its unchecked
// decoders; recomputing the curve equation names that case correctly.

fn diagnose_g1_uncompressed(bytes: &[u8; G1_UNCOMPRESSED_LEN]) -> PointError {
    let coords = fp_at(bytes, 0, true).and_then(|x| Ok((x, fp_at(bytes, 48, false)?)));
    match coords {
        Err(e) => e,
        Ok((x, y)) if y.square() == g1_rhs(&x) => PointError::NotInSubgroup,
        Ok(_) => PointError::NotOnCurve,
    }
}

fn diagnose_g2_uncompressed(bytes: &[u8; G2_UNCOMPRESSED_LEN]) -> PointError {
    let coords = fp2_at(bytes, 0, true).and_then(|x| Ok((x, fp2_at(bytes, 96, false)?)));
    match coords {
        Err(e) => e,
        Ok((x, y)) if y.square() == g2_rhs(&x) => PointError::NotInSubgroup,
        Ok(_) => PointError::NotOnCurve,
    }
}

fn diagnose_g1_compressed(bytes: &[u8; G1_COMPRESSED_LEN]) -> PointError {
    match fp_at(bytes, 0, true) {
        Err(e) => e,
        Ok(x) if bool::from(g1_rhs(&x).sqrt().is_some()) => PointError::NotInSubgroup,
        Ok(_) => PointError::NotOnCurve,
    }
}

fn diagnose_g2_compressed(bytes: &[u8; G2_COMPRESSED_LEN]) -> PointError {
    match fp2_at(bytes, 0, true) {
        Err(e) => e,
        Ok(x) if bool::from(g2_rhs(&x).sqrt().is_some()) => PointError::NotInSubgroup,
        Ok(_) => PointError::NotOnCurve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_round_trips_in_every_encoding() {
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        assert_eq!(
            decode_g1_uncompressed(&g1.to_uncompressed(), PointCheck::Full),
            Ok(g1)
        );
        assert_eq!(
            decode_g2_uncompressed(&g2.to_uncompressed(), PointCheck::Full),
            Ok(g2)
        );
        assert_eq!(
            decode_g1_compressed(&g1.to_compressed(), PointCheck::Full),
            Ok(g1)
        );
        assert_eq!(
            decode_g2_compressed(&g2.to_compressed(), PointCheck::Full),
            Ok(g2)
        );
    }

    #[test]
    fn identity_and_flags_are_named() {
        let id1 = G1Affine::identity();
        assert_eq!(
            decode_g1_uncompressed(&id1.to_uncompressed(), PointCheck::OnCurve),
            Err(PointError::Identity)
        );
        assert_eq!(
            decode_g1_compressed(&id1.to_compressed(), PointCheck::OnCurve),
            Err(PointError::Identity)
        );
        assert_eq!(
            decode_g2_compressed(&G2Affine::identity().to_compressed(), PointCheck::OnCurve),
            Err(PointError::Identity)
        );

        // A compressed point in the first half of an uncompressed buffer:
        // blst would accept it, we do not.
        let mut sneaky = [0u8; 96];
        sneaky[..48].copy_from_slice(&G1Affine::generator().to_compressed());
        assert_eq!(
            decode_g1_uncompressed(&sneaky, PointCheck::OnCurve),
            Err(PointError::Encoding(EncodingFault::CompressionFlag {
                expected_compressed: false
            }))
        );

        let mut signed = G1Affine::generator().to_uncompressed();
        signed[0] |= FLAG_SIGN;
        assert_eq!(
            decode_g1_uncompressed(&signed, PointCheck::OnCurve),
            Err(PointError::Encoding(EncodingFault::SignFlag))
        );

        let mut dirty_infinity = id1.to_uncompressed();
        dirty_infinity[95] = 1;
        assert_eq!(
            decode_g1_uncompressed(&dirty_infinity, PointCheck::OnCurve),
            Err(PointError::Encoding(EncodingFault::NonZeroInfinity))
        );

        let uncompressed_as_compressed: [u8; 48] = G1Affine::generator().to_uncompressed()[..48]
            .try_into()
            .unwrap();
        assert_eq!(
            decode_g1_compressed(&uncompressed_as_compressed, PointCheck::OnCurve),
            Err(PointError::Encoding(EncodingFault::CompressionFlag {
                expected_compressed: true
            }))
        );
    }

    #[test]
    fn non_canonical_and_off_curve_coordinates_are_named() {
        let mut big_x = G1Affine::generator().to_uncompressed();
        big_x[..48].fill(0x1f); // > p with the flag bits clear
        assert_eq!(
            decode_g1_uncompressed(&big_x, PointCheck::OnCurve),
            Err(PointError::Encoding(EncodingFault::NonCanonicalCoordinate))
        );

        let mut off = G1Affine::generator().to_uncompressed();
        off[95] ^= 1;
        assert_eq!(
            decode_g1_uncompressed(&off, PointCheck::OnCurve),
            Err(PointError::NotOnCurve)
        );

        let mut off2 = G2Affine::generator().to_uncompressed();
        off2[191] ^= 1;
        assert_eq!(
            decode_g2_uncompressed(&off2, PointCheck::OnCurve),
            Err(PointError::NotOnCurve)
        );
    }

    #[test]
    fn blst_special_case_zero_x_is_not_in_subgroup() {
        // (0, 2) satisfies y^2 = x^3 + 4 but has order 3.
        let mut bytes = [0u8; 96];
        bytes[48..].copy_from_slice(&Fp::from(2u64).to_bytes_be());
        for check in [PointCheck::OnCurve, PointCheck::Full] {
            assert_eq!(
                decode_g1_uncompressed(&bytes, check),
                Err(PointError::NotInSubgroup)
            );
        }
        let mut compressed = [0u8; 48];
        compressed[0] = FLAG_COMPRESSED;
        assert_eq!(
            decode_g1_compressed(&compressed, PointCheck::OnCurve),
            Err(PointError::NotInSubgroup)
        );
    }
}
