#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

mod assignment;
pub mod demo;
mod density;
pub mod native;
mod parallel;
pub mod precompiled;
mod prefix;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

pub use assignment::{CircuitShape, ProvingAssignment, Synthesized};
pub use demo::DemoCircuit;
pub use density::Density;
pub use parallel::synthesize_in_parallel;
pub use prefix::{
    synthesize_piece, synthesize_with_shared_prefix, PieceError, PieceFault, Prefix, PrefixJoin,
    PrefixProbe,
};

/// Synthesizes one circuit (one partition) the way bellperson's prover does:
/// allocate the ONE input, run the circuit, append `input_i * 0 = 0` for every
/// input.
pub fn synthesize<C: Circuit<Fr>>(circuit: C) -> Result<Synthesized, SynthesisError> {
    synthesize_into(ProvingAssignment::new(), circuit)
}

/// [`synthesize`], reserving room for `shape` up front (for example the shape
/// of the previous partition of the same circuit), so the vectors never grow.
pub fn synthesize_with_capacity<C: Circuit<Fr>>(
    circuit: C,
    shape: &CircuitShape,
) -> Result<Synthesized, SynthesisError> {
    synthesize_into(ProvingAssignment::with_capacity(shape), circuit)
}

/// Synthesizes several circuits (partitions) in parallel on the rayon pool;
/// results are in the order of `circuits`. The first error, in that order, is
/// returned.
pub fn synthesize_many<C: Circuit<Fr> + Send>(
    circuits: Vec<C>,
) -> Result<Vec<Synthesized>, SynthesisError> {
    circuits.into_par_iter().map(synthesize).collect()
}

fn synthesize_into<C: Circuit<Fr>>(
    mut cs: ProvingAssignment,
    circuit: C,
) -> Result<Synthesized, SynthesisError> {
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs.finish())
}
