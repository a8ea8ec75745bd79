//! Key generation for test and demo circuits.
//!
//! This uses bellperson 0.27's own generator (`generate_random_parameters`)
//! and converts its output through the `.params` byte format, so a key made
//! here is exactly the key bellperson would make from the same RNG. It is
//! slow (about 55 s at 2^18 constraints on 2 cores); a GPU generator for
//! large benchmark keys is separate work.

use bellperson::{groth16, Circuit};
use blstrs::{Bls12, Scalar as Fr};
use rand_core::RngCore;

use crate::encoding::PointCheck;
use crate::params::{KeyError, ProvingKey};

/// Why a key could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("circuit synthesis failed during setup: {0}")]
    Synthesis(#[from] bellperson::SynthesisError),
    #[error("bellperson could not serialize its key: {0}")]
    Io(#[from] std::io::Error),
    #[error("key produced by bellperson did not read back: {0}")]
    Key(#[from] KeyError),
}

/// Generates a proving key for `circuit` with toxic waste drawn from `rng`.
pub fn generate_key<C: Circuit<Fr>>(
    circuit: C,
    rng: &mut impl RngCore,
) -> Result<ProvingKey, SetupError> {
    let params = groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?;
    let mut bytes = Vec::new();
    params.write(&mut bytes)?;
    Ok(ProvingKey::read(&bytes[..], PointCheck::OnCurve)?)
}
