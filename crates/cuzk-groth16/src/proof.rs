//! The 192-byte Groth16 proof.
//!
//! Layout: `A` (G1 compressed, 48 B) ‖ `B` (G2 compressed, 96 B) ‖ `C` (G1
//! compressed, 48 B), zcash BLS12-381 encoding (see [`crate::encoding`]),
//! the bytes bellperson's `Proof::write` produces. Filecoin concatenates the
//! proofs of a sector's partitions (10 × 192 B for 32 GiB PoRep):
//! [`proofs_to_bytes`] and [`proofs_from_bytes`] handle that form.
//!
//! Decoding refuses, with distinct errors, a wrong length, a malformed
//! encoding, a point not on the curve, not in the prime-order subgroup, or
//! the point at infinity (bellperson refuses the identity for all three).

use blstrs::{Bls12, G1Affine, G2Affine};
use rayon::prelude::*;

use crate::encoding::{
    decode_g1_compressed, decode_g2_compressed, validate_g1, validate_g2, PointCheck, PointError,
    G1_COMPRESSED_LEN, G2_COMPRESSED_LEN,
};

/// Bytes of one encoded proof.
pub const PROOF_LEN: usize = 2 * G1_COMPRESSED_LEN + G2_COMPRESSED_LEN;

/// A Groth16 proof: three affine points.
///
/// A proof decoded by [`Proof::from_bytes`] has all three points in the
/// prime-order subgroup and none at infinity; one built field by field has
/// whatever it was given ([`Proof::validate`] checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// `A` in G1.
    pub a: G1Affine,
    /// `B` in G2.
    pub b: G2Affine,
    /// `C` in G1.
    pub c: G1Affine,
}

/// One of the three points of a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProofPoint {
    /// `A`, bytes 0..48.
    A,
    /// `B`, bytes 48..144.
    B,
    /// `C`, bytes 144..192.
    C,
}

impl ProofPoint {
    /// Byte offset of this point within one encoded proof.
    pub const fn offset(self) -> usize {
        match self {
            ProofPoint::A => 0,
            ProofPoint::B => G1_COMPRESSED_LEN,
            ProofPoint::C => G1_COMPRESSED_LEN + G2_COMPRESSED_LEN,
        }
    }
}

impl std::fmt::Display for ProofPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProofPoint::A => "A",
            ProofPoint::B => "B",
            ProofPoint::C => "C",
        })
    }
}

/// Proof bytes that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// One proof of the wrong length.
    #[error("a proof is {expected} bytes, got {actual}")]
    Length {
        /// Always [`PROOF_LEN`].
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// Concatenated proofs whose total length is not a positive multiple of
    /// [`PROOF_LEN`].
    #[error("concatenated proofs must be a positive multiple of {PROOF_LEN} bytes, got {actual}")]
    ConcatenatedLength {
        /// The length given.
        actual: usize,
    },
    /// One point failed its checks.
    #[error("proof {index}, point {point} (byte {offset}): {problem}")]
    BadPoint {
        /// Which proof (0 for a single proof).
        index: usize,
        /// Which point.
        point: ProofPoint,
        /// Byte offset of the point in the input.
        offset: usize,
        /// What is wrong with it.
        problem: PointError,
    },
}

impl Proof {
    /// The 192-byte encoding.
    pub fn to_bytes(&self) -> [u8; PROOF_LEN] {
        let mut out = [0u8; PROOF_LEN];
        out[..G1_COMPRESSED_LEN].copy_from_slice(&self.a.to_compressed());
        out[ProofPoint::B.offset()..ProofPoint::C.offset()]
            .copy_from_slice(&self.b.to_compressed());
        out[ProofPoint::C.offset()..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes exactly one proof, fully checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, ProofError> {
        if bytes.len() != PROOF_LEN {
            return Err(ProofError::Length {
                expected: PROOF_LEN,
                actual: bytes.len(),
            });
        }
        decode_at(bytes, 0)
    }

    /// Checks the points of a proof held in memory: on the curve, in the
    /// subgroup, not the identity. [`Proof::from_bytes`] already did this.
    pub fn validate(&self) -> Result<(), ProofError> {
        let fail = |point: ProofPoint| {
            move |problem| ProofError::BadPoint {
                index: 0,
                point,
                offset: point.offset(),
                problem,
            }
        };
        validate_g1(&self.a, PointCheck::Full).map_err(fail(ProofPoint::A))?;
        validate_g2(&self.b, PointCheck::Full).map_err(fail(ProofPoint::B))?;
        validate_g1(&self.c, PointCheck::Full).map_err(fail(ProofPoint::C))
    }
}

/// Decodes the proof starting at `bytes[index * PROOF_LEN]`.
fn decode_at(bytes: &[u8], index: usize) -> Result<Proof, ProofError> {
    let base = index * PROOF_LEN;
    let field = |point: ProofPoint, len: usize| {
        let start = base + point.offset();
        (&bytes[start..start + len], start)
    };
    let fail = |point: ProofPoint, offset: usize| {
        move |problem| ProofError::BadPoint {
            index,
            point,
            offset,
            problem,
        }
    };
    let (a, a_at) = field(ProofPoint::A, G1_COMPRESSED_LEN);
    let (b, b_at) = field(ProofPoint::B, G2_COMPRESSED_LEN);
    let (c, c_at) = field(ProofPoint::C, G1_COMPRESSED_LEN);
    Ok(Proof {
        a: decode_g1_compressed(a.try_into().expect("48 bytes"), PointCheck::Full)
            .map_err(fail(ProofPoint::A, a_at))?,
        b: decode_g2_compressed(b.try_into().expect("96 bytes"), PointCheck::Full)
            .map_err(fail(ProofPoint::B, b_at))?,
        c: decode_g1_compressed(c.try_into().expect("48 bytes"), PointCheck::Full)
            .map_err(fail(ProofPoint::C, c_at))?,
    })
}

/// Concatenates the encodings of `proofs` (Filecoin's multi-partition form).
pub fn proofs_to_bytes(proofs: &[Proof]) -> Vec<u8> {
    proofs.iter().flat_map(|p| p.to_bytes()).collect()
}

/// Decodes concatenated proofs, in parallel. On failure reports the first
/// bad proof (lowest index), whatever order the threads ran in.
pub fn proofs_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>, ProofError> {
    if bytes.is_empty() || bytes.len() % PROOF_LEN != 0 {
        return Err(ProofError::ConcatenatedLength {
            actual: bytes.len(),
        });
    }
    let decoded: Vec<Result<Proof, ProofError>> = (0..bytes.len() / PROOF_LEN)
        .into_par_iter()
        .map(|i| decode_at(bytes, i))
        .collect();
    decoded.into_iter().collect()
}

impl From<&bellperson::groth16::Proof<Bls12>> for Proof {
    fn from(p: &bellperson::groth16::Proof<Bls12>) -> Self {
        Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl From<&Proof> for bellperson::groth16::Proof<Bls12> {
    fn from(p: &Proof) -> Self {
        bellperson::groth16::Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::prime::PrimeCurveAffine;

    #[test]
    fn layout_is_a_b_c_compressed() {
        assert_eq!(PROOF_LEN, 192);
        let p = Proof {
            a: G1Affine::generator(),
            b: G2Affine::generator(),
            c: -G1Affine::generator(),
        };
        let bytes = p.to_bytes();
        assert_eq!(bytes[..48], G1Affine::generator().to_compressed());
        assert_eq!(bytes[48..144], G2Affine::generator().to_compressed());
        assert_eq!(bytes[144..], (-G1Affine::generator()).to_compressed());
        assert_eq!(Proof::from_bytes(&bytes), Ok(p));
    }
}
