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

/// The part of a `bellperson::ConstraintSystem` impl that every system here
/// writes the same way: it is its own root, and namespaces (names for
/// debugging) are ignored. Expands inside the impl block; with
/// `new_from_default`, `ConstraintSystem::new` is `Default::default` too.
///
/// ```
/// use bellperson::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
/// use blstrs::Scalar as Fr;
///
/// #[derive(Default)]
/// struct Nothing;
///
/// impl ConstraintSystem<Fr> for Nothing {
///     cuzk_synth::own_root_without_namespaces!();
///
///     fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
///     where
///         F: FnOnce() -> Result<Fr, SynthesisError>,
///         A: FnOnce() -> AR,
///         AR: Into<String>,
///     {
///         Err(SynthesisError::AssignmentMissing)
///     }
///
///     fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
///     where
///         F: FnOnce() -> Result<Fr, SynthesisError>,
///         A: FnOnce() -> AR,
///         AR: Into<String>,
///     {
///         Err(SynthesisError::AssignmentMissing)
///     }
///
///     fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
///     where
///         A: FnOnce() -> AR,
///         AR: Into<String>,
///         LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
///         LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
///         LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
///     {
///     }
/// }
///
/// let mut cs = Nothing;
/// assert!(cs.alloc(|| "x", || Ok(Fr::from(1u64))).is_err());
/// ```
#[macro_export]
macro_rules! own_root_without_namespaces {
    (new_from_default) => {
        $crate::own_root_without_namespaces!();

        fn new() -> Self {
            Self::default()
        }
    };
    () => {
        type Root = Self;

        fn push_namespace<NR, N>(&mut self, _name_fn: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}
