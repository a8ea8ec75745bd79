//! Groth16 verification: one proof, or a batch with a random linear
//! combination.
//!
//! A proof `(A, B, C)` for public inputs `x_1..x_n` is valid when
//!
//! ```text
//! e(A, B) = e(alpha, beta) · e(IC_0 + Σ x_i·IC_i, gamma) · e(C, delta)
//! ```
//!
//! evaluated as one multi-Miller loop over `(A, B)`, `(acc, −gamma)`,
//! `(C, −delta)` and one final exponentiation, compared with the precomputed
//! `e(alpha, beta)`. Public inputs exclude the leading ONE, as in
//! bellperson's `verify_proof`.
//!
//! Batch verification (zcash protocol spec, appendix B.2) raises each
//! proof's equation to a random 128-bit `z_j` and multiplies them: one
//! Miller loop per proof plus two shared ones, one final exponentiation. A
//! batch with an invalid proof passes with probability about 2^-128.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve};
use pairing::{Engine, MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::params::VerifyingKey;
use crate::proof::{Proof, ProofError};

/// A verifying key with its fixed pairing work done once.
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey {
    /// `e(alpha_g1, beta_g2)`.
    alpha_g1_beta_g2: Gt,
    /// `−gamma_g2`, prepared for Miller loops.
    neg_gamma_g2: G2Prepared,
    /// `−delta_g2`, prepared for Miller loops.
    neg_delta_g2: G2Prepared,
    /// The key's IC points (ONE's point first), projective for the MSM.
    ic: Vec<G1Projective>,
}

/// Why verification could not run. A proof that runs and fails is
/// `Ok(false)`, not an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The number of public inputs does not match the key.
    #[error(
        "expected {expected} public inputs (the verifying key has {} IC points, ONE included), got {actual}",
        .expected + 1
    )]
    InputCount {
        /// `ic.len() − 1`.
        expected: usize,
        /// Inputs given.
        actual: usize,
    },
    /// As [`VerifyError::InputCount`], for proof `index` of a batch.
    #[error("proof {index} of the batch: expected {expected} public inputs, got {actual}")]
    BatchInputCount {
        /// Position in the batch.
        index: usize,
        /// `ic.len() − 1`.
        expected: usize,
        /// Inputs given.
        actual: usize,
    },
    /// A batch with different numbers of proofs and input lists.
    #[error("batch has {proofs} proofs but {inputs} public-input lists")]
    BatchLength {
        /// Proofs given.
        proofs: usize,
        /// Input lists given.
        inputs: usize,
    },
    /// A batch with no proofs (refused rather than vacuously accepted).
    #[error("empty batch: no proofs to verify")]
    EmptyBatch,
    /// The verifying key has no IC point, so no input count can match.
    #[error("malformed verifying key: no IC points (ONE needs one)")]
    EmptyIc,
    /// A proof's points are invalid (only for proofs built in memory:
    /// [`Proof::from_bytes`] refuses these already).
    #[error("proof {index} is malformed")]
    BadProof {
        /// Position in the batch (0 for a single proof).
        index: usize,
        /// What is wrong.
        #[source]
        source: ProofError,
    },
}

impl PreparedVerifyingKey {
    /// Precomputes `e(alpha, beta)` and the negated, prepared `gamma` and
    /// `delta`.
    pub fn new(vk: &VerifyingKey) -> Self {
        PreparedVerifyingKey {
            alpha_g1_beta_g2: Bls12::pairing(&vk.alpha_g1, &vk.beta_g2),
            neg_gamma_g2: (-vk.gamma_g2).into(),
            neg_delta_g2: (-vk.delta_g2).into(),
            ic: vk.ic.iter().map(G1Affine::to_curve).collect(),
        }
    }

    /// Number of public inputs a proof carries (ONE excluded).
    pub fn public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    fn expected_inputs(&self) -> Result<usize, VerifyError> {
        self.ic.len().checked_sub(1).ok_or(VerifyError::EmptyIc)
    }

    /// `Σ scalars[i] · ic[i]` over the whole IC (the ONE's scalar first).
    fn ic_combination(&self, scalars: &[Scalar]) -> G1Affine {
        debug_assert_eq!(scalars.len(), self.ic.len());
        // Few inputs (Filecoin: tens to hundreds): plain scalar multiplications on
        // this thread. blst's Pippenger would queue behind a prover's MSMs in its
        // shared thread pool, stalling verification while proofs are being made.
        const PIPPENGER_FROM: usize = 512;
        if scalars.len() < PIPPENGER_FROM {
            let sum = self
                .ic
                .iter()
                .zip(scalars)
                .fold(<G1Projective as group::Group>::identity(), |acc, (p, s)| {
                    acc + p * s
                });
            return sum.to_affine();
        }
        G1Projective::multi_exp(&self.ic, scalars).to_affine()
    }
}

impl From<&VerifyingKey> for PreparedVerifyingKey {
    fn from(vk: &VerifyingKey) -> Self {
        PreparedVerifyingKey::new(vk)
    }
}

/// Verifies one proof against `public_inputs` (ONE excluded).
///
/// `Ok(true)`: valid. `Ok(false)`: well-formed but does not verify (a forged
/// or tampered proof, or the wrong inputs). `Err`: the question was
/// malformed (input count, or points a decoded proof could not have).
pub fn verify_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Scalar],
) -> Result<bool, VerifyError> {
    let expected = pvk.expected_inputs()?;
    if public_inputs.len() != expected {
        return Err(VerifyError::InputCount {
            expected,
            actual: public_inputs.len(),
        });
    }
    proof
        .validate()
        .map_err(|source| VerifyError::BadProof { index: 0, source })?;

    let scalars: Vec<Scalar> = std::iter::once(Scalar::ONE)
        .chain(public_inputs.iter().copied())
        .collect();
    let acc = pvk.ic_combination(&scalars);
    let b: G2Prepared = proof.b.into();
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Verifies many proofs for one key at once; `Ok(true)` only if every proof
/// is valid (up to probability 2^-128 over `rng`).
///
/// `public_inputs[j]` belongs to `proofs[j]` (ONE excluded). An invalid batch
/// says nothing about which proof is bad: verify them one by one to find it.
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    proofs: &[&Proof],
    public_inputs: &[&[Scalar]],
    rng: &mut R,
) -> Result<bool, VerifyError> {
    if proofs.len() != public_inputs.len() {
        return Err(VerifyError::BatchLength {
            proofs: proofs.len(),
            inputs: public_inputs.len(),
        });
    }
    if proofs.is_empty() {
        return Err(VerifyError::EmptyBatch);
    }
    let expected = pvk.expected_inputs()?;
    for (index, inputs) in public_inputs.iter().enumerate() {
        if inputs.len() != expected {
            return Err(VerifyError::BatchInputCount {
                index,
                expected,
                actual: inputs.len(),
            });
        }
    }
    for (index, proof) in proofs.iter().enumerate() {
        proof
            .validate()
            .map_err(|source| VerifyError::BadProof { index, source })?;
    }

    // Non-zero: z_j = 0 would drop proof j from the check.
    let z: Vec<Scalar> = proofs
        .iter()
        .map(|_| loop {
            let v = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            if v != 0 {
                break Scalar::from_u128(v);
            }
        })
        .collect();
    let z_sum: Scalar = z.iter().sum();

    // Σ_j z_j·acc_j = (Σ_j z_j)·IC_0 + Σ_i (Σ_j z_j·x_{j,i})·IC_{i+1}.
    let mut ic_scalars = vec![Scalar::ZERO; expected + 1];
    ic_scalars[0] = z_sum;
    for (zj, inputs) in z.iter().zip(public_inputs) {
        for (s, x) in ic_scalars[1..].iter_mut().zip(inputs.iter()) {
            *s += *zj * x;
        }
    }
    let acc = pvk.ic_combination(&ic_scalars);

    let cs: Vec<G1Projective> = proofs.iter().map(|p| p.c.to_curve()).collect();
    let c_acc = G1Projective::multi_exp(&cs, &z).to_affine();

    // Π_j e(z_j·A_j, B_j): the per-proof Miller loops, in parallel chunks
    // (Miller-loop results multiply, so partial loops combine by `+`).
    let ab_terms: Vec<(G1Affine, G2Prepared)> = proofs
        .par_iter()
        .zip(z.par_iter())
        .map(|(p, zj)| ((p.a * zj).to_affine(), G2Prepared::from(p.b)))
        .collect();
    let ml_ab = ab_terms
        .par_chunks(4)
        .map(|chunk| {
            let terms: Vec<(&G1Affine, &G2Prepared)> = chunk.iter().map(|(a, b)| (a, b)).collect();
            Bls12::multi_miller_loop(&terms)
        })
        .reduce(Default::default, |x, y| x + y);
    let ml =
        ml_ab + Bls12::multi_miller_loop(&[(&acc, &pvk.neg_gamma_g2), (&c_acc, &pvk.neg_delta_g2)]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2 * z_sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Group;

    #[test]
    fn default_miller_loop_result_is_the_neutral_element() {
        // The batch reduction starts from `Default`; it must be the identity
        // of the Miller-loop group, or every batch would be off by a factor.
        let g1 = G1Affine::generator();
        let g2: G2Prepared = blstrs::G2Affine::generator().into();
        let ml = Bls12::multi_miller_loop(&[(&g1, &g2)]);
        let sum = blstrs::MillerLoopResult::default() + ml;
        assert_eq!(sum.final_exponentiation(), ml.final_exponentiation());
        assert_ne!(ml.final_exponentiation(), Gt::identity());
    }
}
