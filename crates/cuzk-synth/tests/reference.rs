//! `synthesize` against naive references written independently of it.
//!
//! Two references: `record` + `naive_synthesized` (capture every constraint's
//! merged terms, then evaluate by plain multiply-and-add and derive the
//! densities from the nonzero terms), used for real gadget circuits; and
//! `reference_from_ops`, which computes everything straight from a random
//! circuit's description (merging repeated terms itself), used by proptest.

mod common;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_synth::{
    synthesize, synthesize_many, synthesize_with_capacity, DemoCircuit, Density, ProvingAssignment,
    Synthesized,
};
use ff::Field;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Terms = Vec<(Index, Fr)>;

/// Records values and each constraint's terms; knows nothing about densities.
#[derive(Default)]
struct RecordingCs {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    constraints: Vec<[Terms; 3]>,
}

fn terms(lc: &LinearCombination<Fr>) -> Terms {
    lc.iter()
        .map(|(var, coeff)| (var.get_unchecked(), *coeff))
        .collect()
}

impl ConstraintSystem<Fr> for RecordingCs {
    cuzk_synth::own_root_without_namespaces!();

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let zero = LinearCombination::zero;
        self.constraints
            .push([terms(&a(zero())), terms(&b(zero())), terms(&c(zero()))]);
    }
}

fn record<C: Circuit<Fr>>(circuit: C) -> RecordingCs {
    let mut cs = RecordingCs::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    circuit.synthesize(&mut cs).unwrap();
    cs
}

/// What bellperson's prover computes, the slow and obvious way.
fn naive_synthesized(mut cs: RecordingCs) -> Synthesized {
    for i in 0..cs.inputs.len() {
        cs.constraints
            .push([vec![(Index::Input(i), Fr::ONE)], vec![], vec![]]);
    }
    let value = |index: &Index| match *index {
        Index::Input(i) => cs.inputs[i],
        Index::Aux(i) => cs.aux[i],
    };
    let eval = |terms: &Terms| {
        terms
            .iter()
            .fold(Fr::ZERO, |acc, (index, coeff)| acc + value(index) * coeff)
    };
    let mut a_aux = vec![false; cs.aux.len()];
    let mut b_input = vec![false; cs.inputs.len()];
    let mut b_aux = vec![false; cs.aux.len()];
    for [a, b, _] in &cs.constraints {
        for (index, _) in a.iter().filter(|(_, coeff)| *coeff != Fr::ZERO) {
            if let Index::Aux(i) = index {
                a_aux[*i] = true;
            }
        }
        for (index, _) in b.iter().filter(|(_, coeff)| *coeff != Fr::ZERO) {
            match *index {
                Index::Input(i) => b_input[i] = true,
                Index::Aux(i) => b_aux[i] = true,
            }
        }
    }
    Synthesized {
        a: cs.constraints.iter().map(|[a, _, _]| eval(a)).collect(),
        b: cs.constraints.iter().map(|[_, b, _]| eval(b)).collect(),
        c: cs.constraints.iter().map(|[_, _, c]| eval(c)).collect(),
        input_assignment: cs.inputs.clone(),
        aux_assignment: cs.aux.clone(),
        a_aux_density: Density::from_bools(a_aux),
        b_input_density: Density::from_bools(b_input),
        b_aux_density: Density::from_bools(b_aux),
        deferred: None,
        compact_aux: None,
    }
}

/// Synthesizes `circuit` and compares everything with the naive reference.
fn check<C: Circuit<Fr> + Clone>(circuit: C) -> Synthesized {
    let expected = naive_synthesized(record(circuit.clone()));
    let actual = synthesize(circuit).unwrap();
    common::assert_same(&actual, &expected);
    actual
}

#[test]
fn demo_circuits_match_naive_evaluation() {
    for (log_size, sha_share) in [(10, 0.95), (12, 0.0), (15, 0.95), (16, 0.5)] {
        let witness = check(DemoCircuit::new(log_size, sha_share, 3));
        assert_eq!(witness.num_constraints(), 1 << log_size);
    }
}

/// Terms that cancel or carry a zero coefficient set no density bit, even
/// though the variable is in the combination; a zero value still does.
#[derive(Clone)]
struct Cancellations;

impl Circuit<Fr> for Cancellations {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Fr::from(3)))?; // aux 0
        let y = cs.alloc(|| "y", || Ok(Fr::ZERO))?; // aux 1
        let z = cs.alloc(|| "z", || Ok(Fr::ONE))?; // aux 2
        let w = cs.alloc(|| "w", || Ok(Fr::from(5)))?; // aux 3
        let p = cs.alloc_input(|| "p", || Ok(Fr::from(15)))?; // input 1
                                                              // (x + y - y + 0 z) * w = p
        cs.enforce(
            || "xw",
            |lc| lc + x + y - y + (Fr::ZERO, z),
            |lc| lc + w,
            |lc| lc + p,
        );
        // 1 * (y + z) = y + z
        cs.enforce(
            || "one",
            |lc| lc + CS::one(),
            |lc| lc + y + z,
            |lc| lc + y + z,
        );
        // z * 1 = z
        cs.enforce(|| "z", |lc| lc + z, |lc| lc + CS::one(), |lc| lc + z);
        Ok(())
    }
}

#[test]
fn zero_coefficients_set_no_density_bits() {
    let witness = check(Cancellations);
    let ones = |d: &Density| d.iter_ones().collect::<Vec<_>>();
    assert_eq!(ones(&witness.a_aux_density), [0, 2], "x and z; y cancelled");
    assert_eq!(ones(&witness.b_aux_density), [1, 2, 3], "y, z, w");
    assert_eq!(ones(&witness.b_input_density), [0], "ONE");
    assert_eq!(witness.num_constraints(), 3 + 2);
    assert_eq!(witness.a[3..], [Fr::ONE, Fr::from(15)], "input_i * 0 = 0");
    assert_eq!(witness.b[3..], [Fr::ZERO, Fr::ZERO]);
}

#[test]
fn synthesize_many_equals_sequential() {
    let circuits: Vec<DemoCircuit> = [(13, 1), (15, 2), (15, 3), (10, 4)]
        .into_iter()
        .map(|(log_size, seed)| DemoCircuit::new(log_size, 0.95, seed))
        .collect();
    let sequential: Vec<Synthesized> = circuits
        .iter()
        .map(|c| synthesize(c.clone()).unwrap())
        .collect();
    assert!(synthesize_many(circuits).unwrap() == sequential);
}

#[test]
fn reserving_capacity_changes_nothing() {
    let circuit = DemoCircuit::new(15, 0.95, 9);
    let plain = synthesize(circuit.clone()).unwrap();
    assert!(synthesize_with_capacity(circuit, &plain.shape()).unwrap() == plain);
}

#[test]
fn extend_equals_synthesizing_in_sequence() {
    let parts = [DemoCircuit::new(15, 0.95, 1), DemoCircuit::new(10, 0.0, 2)];
    assert!(ProvingAssignment::is_extensible());

    let mut sequential = ProvingAssignment::new();
    sequential.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    let mut joined = sequential.clone();
    for part in parts {
        part.clone().synthesize(&mut sequential).unwrap();
        let mut piece = ProvingAssignment::new();
        piece.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        part.synthesize(&mut piece).unwrap();
        joined.extend(&piece);
    }
    common::assert_same(&joined.finish(), &sequential.finish());
}

/// A circuit whose witness can or cannot be computed.
#[derive(Clone)]
enum MaybeFailing {
    Fails,
    Succeeds,
}

impl Circuit<Fr> for MaybeFailing {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        cs.alloc(
            || "x",
            || match self {
                MaybeFailing::Fails => Err(SynthesisError::AssignmentMissing),
                MaybeFailing::Succeeds => Ok(Fr::ONE),
            },
        )?;
        Ok(())
    }
}

#[test]
fn synthesis_errors_are_returned() {
    assert!(matches!(
        synthesize(MaybeFailing::Fails),
        Err(SynthesisError::AssignmentMissing)
    ));
    let many = synthesize_many(vec![MaybeFailing::Succeeds, MaybeFailing::Fails]);
    assert!(matches!(many, Err(SynthesisError::AssignmentMissing)));
}

// ---- random circuits -------------------------------------------------------

/// A value or coefficient, drawn so that 0, 1, -1 and cancellations are common.
#[derive(Debug, Clone, Copy)]
enum Elem {
    Zero,
    One,
    MinusOne,
    Small(u64),
    Big(u64),
}

impl Elem {
    fn to_fr(self) -> Fr {
        match self {
            Elem::Zero => Fr::ZERO,
            Elem::One => Fr::ONE,
            Elem::MinusOne => -Fr::ONE,
            Elem::Small(v) => Fr::from(v),
            // Full width: -(v+1) is close to the modulus.
            Elem::Big(v) => -Fr::from(v + 1) * Fr::from(0x1234_5678_9abc_def1),
        }
    }
}

fn elem() -> impl Strategy<Value = Elem> {
    prop_oneof![
        Just(Elem::Zero),
        Just(Elem::One),
        Just(Elem::MinusOne),
        (2u64..5).prop_map(Elem::Small),
        any::<u64>().prop_map(Elem::Big),
    ]
}

/// A term picks a variable by number among those allocated so far.
#[derive(Debug, Clone, Copy)]
struct Term {
    input: bool,
    pick: usize,
    coeff: Elem,
}

#[derive(Debug, Clone)]
enum Op {
    Alloc(Elem),
    AllocInput(Elem),
    Enforce([Vec<Term>; 3]),
}

/// Up to 5 terms over a small pool of variables, so repeats are common.
fn lc() -> impl Strategy<Value = Vec<Term>> {
    let term = (prop::bool::weighted(0.2), 0usize..8, elem())
        .prop_map(|(input, pick, coeff)| Term { input, pick, coeff });
    prop::collection::vec(term, 0..6)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => elem().prop_map(Op::Alloc),
        1 => elem().prop_map(Op::AllocInput),
        4 => [lc(), lc(), lc()].prop_map(Op::Enforce),
    ]
}

#[derive(Debug, Clone)]
struct RandomCircuit(Vec<Op>);

/// The variable a term refers to, given how many of each kind exist (ONE
/// included): an input when it asks for one or no aux variable exists yet.
fn resolve(term: &Term, inputs: usize, aux: usize) -> Index {
    if term.input || aux == 0 {
        Index::Input(term.pick % inputs)
    } else {
        Index::Aux(term.pick % aux)
    }
}

/// `Index` has no order; this key sorts inputs before aux variables.
fn key(index: Index) -> (bool, usize) {
    match index {
        Index::Input(i) => (false, i),
        Index::Aux(i) => (true, i),
    }
}

impl Circuit<Fr> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (mut inputs, mut aux) = (1, 0);
        for op in self.0 {
            match op {
                Op::Alloc(v) => {
                    cs.alloc(|| "", || Ok(v.to_fr()))?;
                    aux += 1;
                }
                Op::AllocInput(v) => {
                    cs.alloc_input(|| "", || Ok(v.to_fr()))?;
                    inputs += 1;
                }
                Op::Enforce([a, b, c]) => {
                    let build = |terms: Vec<Term>| {
                        move |mut lc: LinearCombination<Fr>| {
                            for t in &terms {
                                let var = Variable::new_unchecked(resolve(t, inputs, aux));
                                lc = lc + (t.coeff.to_fr(), var);
                            }
                            lc
                        }
                    };
                    cs.enforce(|| "", build(a), build(b), build(c));
                }
            }
        }
        Ok(())
    }
}

/// Everything computed from the op list directly: repeated terms merged by
/// summing coefficients, a variable dense where its merged coefficient is
/// nonzero.
fn reference_from_ops(ops: &[Op]) -> Synthesized {
    let mut inputs = vec![Fr::ONE];
    let mut aux = vec![];
    let mut merged_lcs: Vec<[BTreeMap<(bool, usize), Fr>; 3]> = vec![];
    for op in ops {
        match op {
            Op::Alloc(v) => aux.push(v.to_fr()),
            Op::AllocInput(v) => inputs.push(v.to_fr()),
            Op::Enforce(lcs) => merged_lcs.push(lcs.clone().map(|terms| {
                let mut merged = BTreeMap::new();
                for t in &terms {
                    let index = resolve(t, inputs.len(), aux.len());
                    *merged.entry(key(index)).or_insert(Fr::ZERO) += t.coeff.to_fr();
                }
                merged
            })),
        }
    }
    for i in 0..inputs.len() {
        let a = BTreeMap::from([(key(Index::Input(i)), Fr::ONE)]);
        merged_lcs.push([a, BTreeMap::new(), BTreeMap::new()]);
    }
    let value = |&(is_aux, i): &(bool, usize)| if is_aux { aux[i] } else { inputs[i] };
    let eval = |lc: &BTreeMap<(bool, usize), Fr>| {
        lc.iter()
            .fold(Fr::ZERO, |acc, (index, coeff)| acc + value(index) * coeff)
    };
    let dense = |which: usize, index: Index| {
        merged_lcs
            .iter()
            .any(|lcs| lcs[which].get(&key(index)).is_some_and(|c| *c != Fr::ZERO))
    };
    Synthesized {
        a: merged_lcs.iter().map(|l| eval(&l[0])).collect(),
        b: merged_lcs.iter().map(|l| eval(&l[1])).collect(),
        c: merged_lcs.iter().map(|l| eval(&l[2])).collect(),
        a_aux_density: (0..aux.len()).map(|i| dense(0, Index::Aux(i))).collect(),
        b_input_density: (0..inputs.len())
            .map(|i| dense(1, Index::Input(i)))
            .collect(),
        b_aux_density: (0..aux.len()).map(|i| dense(1, Index::Aux(i))).collect(),
        input_assignment: inputs.clone(),
        aux_assignment: aux.clone(),
        deferred: None,
        compact_aux: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_circuits_match_reference(ops in prop::collection::vec(op(), 0..60)) {
        let expected = reference_from_ops(&ops);
        let actual = synthesize(RandomCircuit(ops.clone())).unwrap();
        common::assert_same(&actual, &expected);
        common::assert_same(&naive_synthesized(record(RandomCircuit(ops))), &expected);
    }
}
