//! The proving constraint system: bellperson's private `ProvingAssignment`,
//! re-implemented so its output is ours to hand to a prover.
//!
//! For every constraint it stores the A, B and C linear combinations evaluated
//! at the witness (not the combinations themselves), the input and aux
//! assignments, and three density bitmaps. Everything it records equals, bit
//! for bit, what bellperson 0.27's prover records for the same circuit.

use std::fmt;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use crate::density::Density;
use crate::prefix::{check_fits, PieceFault, Prefix, PrefixJoin};

/// A constraint system that records what a Groth16 prover needs.
///
/// Behaviour, matching bellperson 0.27 (`groth16::prover::ProvingAssignment`
/// with `lc::eval_with_trackers`):
///
/// * `alloc` pushes the value onto the aux assignment and a clear bit onto the
///   A-aux and B-aux densities; `alloc_input` pushes onto the input assignment
///   and the B-input density. There is no A-input density: the prover treats
///   every input as present in A, because of the `input_i * 0 = 0`
///   constraints [`ProvingAssignment::finish`] appends.
/// * `enforce` evaluates A, B and C at the current assignment. A term whose
///   (merged) coefficient is zero is skipped entirely; every other term sets
///   its variable's bit: aux variables of A in the A-aux density, inputs of B
///   in the B-input density, aux variables of B in the B-aux density. C sets
///   no bits. Whether the *value* is zero does not matter.
/// * Namespaces and annotations are ignored (their closures are never called).
///
/// The usual entry point is [`crate::synthesize`]; use this type directly to
/// reserve capacity, or to synthesize independent pieces on several threads
/// and join them with [`ConstraintSystem::extend`].
#[derive(Clone, Default, PartialEq)]
pub struct ProvingAssignment {
    a: Vec<Fr>,
    b: Vec<Fr>,
    c: Vec<Fr>,
    input_assignment: Vec<Fr>,
    aux_assignment: Vec<Fr>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl ProvingAssignment {
    /// An empty system; not even the ONE input is allocated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty system with room for a circuit of `shape` (for example the
    /// previous partition's), so that synthesis never reallocates.
    pub fn with_capacity(shape: &CircuitShape) -> Self {
        Self {
            a: Vec::with_capacity(shape.num_constraints),
            b: Vec::with_capacity(shape.num_constraints),
            c: Vec::with_capacity(shape.num_constraints),
            input_assignment: Vec::with_capacity(shape.num_inputs),
            aux_assignment: Vec::with_capacity(shape.num_aux),
            a_aux_density: Density::with_capacity(shape.num_aux),
            b_input_density: Density::with_capacity(shape.num_inputs),
            b_aux_density: Density::with_capacity(shape.num_aux),
        }
    }

    /// Constraints enforced so far.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// Inputs allocated so far (ONE included once allocated).
    pub fn num_inputs(&self) -> usize {
        self.input_assignment.len()
    }

    /// Aux variables allocated so far.
    pub fn num_aux(&self) -> usize {
        self.aux_assignment.len()
    }

    /// Appends the constraint `input_i * 0 = 0` for every input (as
    /// bellperson's prover and key generator do, so that every input has a
    /// nonzero A polynomial) and returns the result.
    ///
    /// Call it once, after the circuit is synthesized: the circuit must have
    /// been run on a system whose first input is ONE.
    pub fn finish(mut self) -> Synthesized {
        let inputs = self.input_assignment.len();
        self.reserve_constraints(inputs);
        // A = input_i evaluates to the input's value exactly (0 + 1 * v = v);
        // B and C are empty, and inputs have no A density, so no bits change.
        self.a.extend_from_slice(&self.input_assignment);
        self.b.resize(self.b.len() + inputs, Fr::ZERO);
        self.c.resize(self.c.len() + inputs, Fr::ZERO);
        Synthesized {
            a: self.a,
            b: self.b,
            c: self.c,
            input_assignment: self.input_assignment,
            aux_assignment: self.aux_assignment,
            a_aux_density: self.a_aux_density,
            b_input_density: self.b_input_density,
            b_aux_density: self.b_aux_density,
            deferred: None,
            compact_aux: None,
        }
    }

    fn reserve_constraints(&mut self, additional: usize) {
        self.a.reserve(additional);
        self.b.reserve(additional);
        self.c.reserve(additional);
    }
}

/// Adds `coeff * value` to `acc`, skipping the multiplication for the values
/// and coefficients a bit-heavy witness is full of. Field elements are
/// canonical, so every path gives the same bits as the plain product.
#[inline(always)]
fn add_term(acc: &mut Fr, coeff: &Fr, value: &Fr) {
    if *value == Fr::ZERO {
        return;
    }
    if *value == Fr::ONE {
        *acc += coeff;
    } else if *coeff == Fr::ONE {
        *acc += value;
    } else {
        *acc += *value * coeff;
    }
}

/// Evaluates one variable kind of a linear combination, setting `density`'s
/// bit for every term with a nonzero coefficient.
#[inline(always)]
fn eval_terms<'a>(
    acc: &mut Fr,
    terms: impl Iterator<Item = (&'a usize, &'a Fr)>,
    values: &[Fr],
    mut density: Option<&mut Density>,
) {
    for (&index, coeff) in terms {
        if *coeff == Fr::ZERO {
            continue;
        }
        add_term(acc, coeff, &values[index]);
        if let Some(density) = density.as_deref_mut() {
            density.set(index);
        }
    }
}

impl ConstraintSystem<Fr> for ProvingAssignment {
    crate::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let inputs = &self.input_assignment;
        let aux = &self.aux_assignment;

        let a = a(LinearCombination::zero());
        let mut a_value = Fr::ZERO;
        eval_terms(&mut a_value, a.iter_inputs(), inputs, None);
        eval_terms(
            &mut a_value,
            a.iter_aux(),
            aux,
            Some(&mut self.a_aux_density),
        );
        drop(a);

        let b = b(LinearCombination::zero());
        let mut b_value = Fr::ZERO;
        eval_terms(
            &mut b_value,
            b.iter_inputs(),
            inputs,
            Some(&mut self.b_input_density),
        );
        eval_terms(
            &mut b_value,
            b.iter_aux(),
            aux,
            Some(&mut self.b_aux_density),
        );
        drop(b);

        let c = c(LinearCombination::zero());
        let mut c_value = Fr::ZERO;
        eval_terms(&mut c_value, c.iter_inputs(), inputs, None);
        eval_terms(&mut c_value, c.iter_aux(), aux, None);

        self.a.push(a_value);
        self.b.push(b_value);
        self.c.push(c_value);
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`, synthesized independently on a system that also
    /// allocated ONE first: its ONE is dropped from the inputs and merged into
    /// our B-input density bit 0; all else is concatenated. Variable indices
    /// inside `other` were local to it, which is fine because only evaluated
    /// constraints are kept.
    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        // The copies run on the rayon pool, in place (a 2^24 partition's
        // pieces hold ~2 GB): one thread's memcpy would be the serial tail of
        // a parallel synthesis.
        let (a, (b, (c, aux))) = (
            &mut self.a,
            (&mut self.b, (&mut self.c, &mut self.aux_assignment)),
        );
        rayon::join(
            || a.par_extend(other.a.par_iter().copied()),
            || {
                rayon::join(
                    || b.par_extend(other.b.par_iter().copied()),
                    || {
                        rayon::join(
                            || c.par_extend(other.c.par_iter().copied()),
                            || aux.par_extend(other.aux_assignment.par_iter().copied()),
                        )
                    },
                )
            },
        );
        // bellperson slices here too, so an `other` without ONE panics there as well.
        self.input_assignment
            .extend_from_slice(&other.input_assignment[1..]);
    }
}

impl PrefixJoin for ProvingAssignment {
    fn sizes(&self) -> Prefix {
        Prefix {
            inputs: self.input_assignment.len(),
            aux: self.aux_assignment.len(),
            constraints: self.a.len(),
        }
    }

    fn reserve(&mut self, additional: Prefix) {
        self.reserve_constraints(additional.constraints);
        self.input_assignment.reserve(additional.inputs);
        self.aux_assignment.reserve(additional.aux);
    }

    /// See [`PrefixJoin::join_past`]; the prefix's assignments and a, b, c
    /// must be equal in both (a piece that computed another preamble is
    /// refused, not joined).
    fn join_past(&mut self, piece: Self, prefix: Prefix) -> Result<(), PieceFault> {
        check_fits(prefix, self.sizes(), piece.sizes())?;
        let (i, x, n) = (prefix.inputs, prefix.aux, prefix.constraints);
        if self.input_assignment[..i] != piece.input_assignment[..i] {
            return Err(PieceFault::PrefixValues("inputs"));
        }
        if self.aux_assignment[..x] != piece.aux_assignment[..x] {
            return Err(PieceFault::PrefixValues("aux values"));
        }
        if self.a[..n] != piece.a[..n] || self.b[..n] != piece.b[..n] || self.c[..n] != piece.c[..n]
        {
            return Err(PieceFault::PrefixValues("constraint evaluations"));
        }
        self.a_aux_density
            .merge_prefix_and_extend(&piece.a_aux_density, x);
        self.b_input_density
            .merge_prefix_and_extend(&piece.b_input_density, i);
        self.b_aux_density
            .merge_prefix_and_extend(&piece.b_aux_density, x);
        let (a, (b, (c, aux))) = (
            &mut self.a,
            (&mut self.b, (&mut self.c, &mut self.aux_assignment)),
        );
        rayon::join(
            || a.par_extend(piece.a[n..].par_iter().copied()),
            || {
                rayon::join(
                    || b.par_extend(piece.b[n..].par_iter().copied()),
                    || {
                        rayon::join(
                            || c.par_extend(piece.c[n..].par_iter().copied()),
                            || aux.par_extend(piece.aux_assignment[x..].par_iter().copied()),
                        )
                    },
                )
            },
        );
        self.input_assignment
            .extend_from_slice(&piece.input_assignment[i..]);
        Ok(())
    }
}

impl fmt::Debug for ProvingAssignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvingAssignment")
            .field("constraints", &self.a.len())
            .field("inputs", &self.input_assignment.len())
            .field("aux", &self.aux_assignment.len())
            .field("a_aux_density", &self.a_aux_density)
            .field("b_input_density", &self.b_input_density)
            .field("b_aux_density", &self.b_aux_density)
            .finish()
    }
}

/// One partition's witness, ready to prove.
///
/// `a`, `b` and `c` hold one evaluation per constraint, the appended
/// `input_i * 0 = 0` constraints included, and are *not* padded to the
/// domain size ([`Synthesized::domain_log2`]); the prover pads with zeros.
/// `input_assignment[0]` is ONE. Densities are indexed by variable:
/// `a_aux_density` and `b_aux_density` have one bit per aux variable,
/// `b_input_density` one bit per input.
#[derive(Clone, PartialEq)]
pub struct Synthesized {
    /// A evaluated at the witness, one per constraint.
    pub a: Vec<Fr>,
    /// B evaluated at the witness, one per constraint.
    pub b: Vec<Fr>,
    /// C evaluated at the witness, one per constraint.
    pub c: Vec<Fr>,
    /// Public inputs, ONE first.
    pub input_assignment: Vec<Fr>,
    /// Private (aux) variables.
    pub aux_assignment: Vec<Fr>,
    /// Aux variables appearing in some A with a nonzero coefficient.
    pub a_aux_density: Density,
    /// Inputs appearing in some B with a nonzero coefficient.
    pub b_input_density: Density,
    /// Aux variables appearing in some B with a nonzero coefficient.
    pub b_aux_density: Density,
    /// `Some`: a, b and c are empty, left to the prover, which evaluates
    /// them from this recording (pre-compiled circuits,
    /// [`crate::precompiled::DeferredAbc`]).
    pub deferred: Option<crate::precompiled::DeferredAbc>,
    /// `Some`: the aux values, compact (a 2-bit class per value, the
    /// values other than 0 and 1 in full:
    /// [`crate::precompiled::CompactAux`]), and `aux_assignment` is empty.
    /// Made by [`crate::precompiled::DeferredAbc::synthesized_compact`];
    /// [`Synthesized::aux_values`] lends the values either way,
    /// [`Synthesized::expand_aux`] makes them the plain vector.
    pub compact_aux: Option<crate::precompiled::CompactAux>,
}

impl Synthesized {
    /// Number of aux variables (held plainly or compact).
    pub fn num_aux(&self) -> usize {
        match &self.compact_aux {
            Some(c) => c.len(),
            None => self.aux_assignment.len(),
        }
    }

    /// The aux values: borrowed when held plainly, expanded (on rayon,
    /// 32 bytes a value) when compact.
    pub fn aux_values(&self) -> std::borrow::Cow<'_, [Fr]> {
        match &self.compact_aux {
            Some(c) => std::borrow::Cow::Owned(c.expand()),
            None => std::borrow::Cow::Borrowed(&self.aux_assignment),
        }
    }

    /// Makes compact aux values the plain vector (nothing if they are
    /// already): afterwards `aux_assignment` holds them.
    pub fn expand_aux(&mut self) {
        if let Some(c) = self.compact_aux.take() {
            self.aux_assignment = c.expand();
        }
    }

    /// Number of constraints (the length of `a`, `b` and `c`, or of the
    /// recording's rows when they are deferred).
    pub fn num_constraints(&self) -> usize {
        match &self.deferred {
            Some(d) => d.rows(),
            None => self.a.len(),
        }
    }

    /// The smallest `k` with `2^k >= num_constraints()`: the evaluation
    /// domain bellperson's prover would use.
    pub fn domain_log2(&self) -> u32 {
        domain_log2(self.num_constraints())
    }

    /// The sizes that must agree with a proving key.
    pub fn shape(&self) -> CircuitShape {
        CircuitShape {
            num_constraints: self.num_constraints(),
            num_inputs: self.input_assignment.len(),
            num_aux: self.num_aux(),
            a_aux_density: self.a_aux_density.count_ones(),
            b_input_density: self.b_input_density.count_ones(),
            b_aux_density: self.b_aux_density.count_ones(),
            domain_log2: self.domain_log2(),
        }
    }
}

impl fmt::Debug for Synthesized {
    /// Summarises: the vectors of a real partition hold ~10^8 elements.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Synthesized")
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

/// The smallest `k` with `2^k >= n` (0 for `n <= 1`).
pub(crate) fn domain_log2(n: usize) -> u32 {
    n.max(1).next_power_of_two().trailing_zeros()
}

/// The sizes of a synthesized circuit: what a proving key, a VRAM plan or a
/// scheduler needs to know about a partition without its values.
///
/// Two witnesses of the same circuit have the same shape; a proving key fits
/// a witness only if their shapes agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints, the appended `input_i * 0 = 0` ones included.
    pub num_constraints: usize,
    /// Inputs, ONE included.
    pub num_inputs: usize,
    /// Aux (private) variables.
    pub num_aux: usize,
    /// Set bits of the A-aux density.
    pub a_aux_density: usize,
    /// Set bits of the B-input density.
    pub b_input_density: usize,
    /// Set bits of the B-aux density.
    pub b_aux_density: usize,
    /// `log2` of the evaluation domain: smallest `k` with `2^k >= num_constraints`.
    pub domain_log2: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_log2_is_the_smallest_covering_power() {
        for (n, k) in [
            (0, 0),
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (1 << 20, 20),
        ] {
            assert_eq!(domain_log2(n), k, "n = {n}");
        }
        assert_eq!(domain_log2((1 << 27) + 1), 28);
    }
}
