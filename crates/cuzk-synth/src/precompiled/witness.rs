//! Witness-only synthesis: [`WitnessAssignment`] runs a circuit for its
//! input and aux values alone, never building a linear combination.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use crate::prefix::{check_fits, PieceFault, Prefix, PrefixJoin};

/// A circuit's assignments: inputs (ONE first) and aux variables, in
/// allocation order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Witness {
    /// Public inputs, ONE first.
    pub input_assignment: Vec<Fr>,
    /// Private (aux) variables.
    pub aux_assignment: Vec<Fr>,
}

/// Runs `circuit` for its witness the way bellperson's prover orders it:
/// ONE first, then the circuit's allocations.
pub fn witness<C: Circuit<Fr>>(circuit: C) -> Result<Witness, SynthesisError> {
    witness_into(circuit, WitnessAssignment::new())
}

/// [`witness`] into vectors presized for `inputs` inputs (ONE included)
/// and `aux` aux values, the circuit's recorded shape: the witness then
/// holds what it needs, where growth by doubling would hold up to twice
/// that (a 81 M-value update witness: 4.3 GB instead of 2.6).
pub fn witness_with_capacity<C: Circuit<Fr>>(
    circuit: C,
    inputs: usize,
    aux: usize,
) -> Result<Witness, SynthesisError> {
    witness_into(circuit, WitnessAssignment::with_capacity(inputs, aux))
}

fn witness_into<C: Circuit<Fr>>(
    circuit: C,
    mut cs: WitnessAssignment,
) -> Result<Witness, SynthesisError> {
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs.into_witness())
}

/// A constraint system that records only the values: `alloc` and
/// `alloc_input` call their closures and push the value; `enforce` calls
/// none of its closures, so no linear combination is ever built.
///
/// Extensible: pieces run on their own systems (ONE allocated first) and
/// joined in order with [`ConstraintSystem::extend`] give the witness of
/// the sequential run, as for the proving assignment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WitnessAssignment {
    witness: Witness,
}

impl WitnessAssignment {
    /// An empty system; not even ONE is allocated.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty system with room for `inputs` inputs and `aux` aux values.
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        Self {
            witness: Witness {
                input_assignment: Vec::with_capacity(inputs),
                aux_assignment: Vec::with_capacity(aux),
            },
        }
    }

    /// The aux values so far, for native generators (`crate::native`) that
    /// push what a gadget would allocate, in the gadget's order, without
    /// running it.
    pub fn aux_mut(&mut self) -> &mut Vec<Fr> {
        &mut self.witness.aux_assignment
    }

    /// The values recorded.
    pub fn into_witness(self) -> Witness {
        self.witness
    }
}

impl ConstraintSystem<Fr> for WitnessAssignment {
    crate::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let aux = &mut self.witness.aux_assignment;
        aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let inputs = &mut self.witness.input_assignment;
        inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _annotation: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`'s values; its input 0 is the ONE both allocated and
    /// is dropped.
    fn extend(&mut self, other: &Self) {
        let (inputs, aux) = (
            &mut self.witness.input_assignment,
            &mut self.witness.aux_assignment,
        );
        inputs.extend_from_slice(&other.witness.input_assignment[1..]);
        // On the pool, as the proving assignment's copies: a serial memcpy
        // would be the tail of a parallel synthesis.
        aux.par_extend(other.witness.aux_assignment.par_iter().copied());
    }
}

impl PrefixJoin for WitnessAssignment {
    /// Constraints are not kept: always 0.
    fn sizes(&self) -> Prefix {
        Prefix {
            inputs: self.witness.input_assignment.len(),
            aux: self.witness.aux_assignment.len(),
            constraints: 0,
        }
    }

    fn reserve(&mut self, additional: Prefix) {
        self.witness.input_assignment.reserve(additional.inputs);
        self.witness.aux_assignment.reserve(additional.aux);
    }

    /// See [`PrefixJoin::join_past`]; the prefix's values must be equal in
    /// both.
    fn join_past(&mut self, piece: Self, prefix: Prefix) -> Result<(), PieceFault> {
        check_fits(prefix, self.sizes(), piece.sizes())?;
        let (mine, theirs) = (&mut self.witness, &piece.witness);
        let (i, x) = (prefix.inputs, prefix.aux);
        if mine.input_assignment[..i] != theirs.input_assignment[..i] {
            return Err(PieceFault::PrefixValues("inputs"));
        }
        if mine.aux_assignment[..x] != theirs.aux_assignment[..x] {
            return Err(PieceFault::PrefixValues("aux values"));
        }
        mine.input_assignment
            .extend_from_slice(&theirs.input_assignment[i..]);
        mine.aux_assignment
            .par_extend(theirs.aux_assignment[x..].par_iter().copied());
        Ok(())
    }
}
