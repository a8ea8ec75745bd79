//! The pre-compiled path (record once, witness-only synthesis, a, b, c from
//! the matrices) against full synthesis, which stays the reference: the
//! `Synthesized` must be equal bit for bit.

mod common;

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_synth::precompiled::{record, witness, R1cs, WitnessError};
use cuzk_synth::{synthesize, DemoCircuit};
use ff::Field;
use proptest::prelude::*;

/// Records `circuit`, runs it witness-only, evaluates, and compares with
/// full synthesis; returns the recording.
fn check<C: Circuit<Fr> + Clone>(circuit: C) -> R1cs {
    let expected = synthesize(circuit.clone()).expect("full synthesis");
    let r1cs = record(circuit.clone()).expect("records");
    assert_eq!(*r1cs.shape(), expected.shape(), "recorded shape");
    let actual = r1cs
        .synthesize(witness(circuit).expect("witness"))
        .expect("the witness fits");
    common::assert_same(&actual, &expected);
    r1cs
}

#[test]
fn demo_circuits_2_10_to_2_16_match_full_synthesis() {
    for log_size in 10..=16 {
        let r1cs = check(DemoCircuit::new(
            log_size,
            DemoCircuit::DEFAULT_SHA_SHARE,
            7,
        ));
        let stats = r1cs.as_ref().stats();
        println!(
            "2^{log_size}: nonzeros {:?}, {} distinct coefficients, {:.2} bytes per nonzero",
            stats.nonzeros, stats.distinct_coeffs, stats.bytes_per_nonzero
        );
        assert_eq!(stats.coeff_id_bytes, 2);
    }
    // All multiplication chain, and all SHA.
    check(DemoCircuit::new(14, 0.0, 8));
    check(DemoCircuit::new(16, 1.0, 9));
}

/// The demo's native witness is the witness synthesis records, and with
/// the recording gives full synthesis's result.
#[test]
fn the_native_demo_witness_equals_synthesis() {
    // One lane of each kind at 2^10..2^16; several SHA lanes (the last
    // short); four chain lanes; SHA only.
    let cases = (10..=16)
        .map(|k| (k, DemoCircuit::DEFAULT_SHA_SHARE))
        .chain([(19, 1.0), (18, 0.0), (17, 1.0)]);
    for (log_size, share) in cases {
        let circuit = DemoCircuit::new(log_size, share, 11);
        let native = circuit.native_witness();
        let gadgets = witness(circuit.clone()).unwrap();
        cuzk_testkit::assert_same_assignment(
            &format!("2^{log_size} at {share}"),
            (&native.input_assignment, &native.aux_assignment),
            (&gadgets.input_assignment, &gadgets.aux_assignment),
        );
        if log_size <= 16 {
            let r1cs = record(circuit.clone()).unwrap();
            common::assert_same(
                &r1cs.synthesize(native).unwrap(),
                &synthesize(circuit).unwrap(),
            );
        }
    }
}

#[test]
fn one_recording_serves_every_seed() {
    let r1cs = record(DemoCircuit::new(16, 0.95, 1)).unwrap();
    for seed in [2, 3] {
        let circuit = DemoCircuit::new(16, 0.95, seed);
        let expected = synthesize(circuit.clone()).unwrap();
        let actual = r1cs.synthesize(witness(circuit).unwrap()).unwrap();
        common::assert_same(&actual, &expected);
    }
}

#[test]
fn parallel_and_sequential_recordings_agree() {
    // Two SHA lanes (the second short) and a chain lane; four chain lanes.
    for (log_size, share) in [(19, 1.0), (18, 0.0)] {
        let circuit = DemoCircuit::new(log_size, share, 3);
        assert!(circuit.plan().sha_lanes() + circuit.plan().chain_lanes() > 1);
        let parallel = record(circuit.clone()).unwrap();
        let sequential = record(circuit.clone().in_sequence()).unwrap();
        assert!(
            parallel == sequential,
            "2^{log_size} at {share}: the lane-parallel recording differs"
        );
        let parallel_witness = witness(circuit.clone()).unwrap();
        let sequential_witness = witness(circuit.in_sequence()).unwrap();
        assert!(
            parallel_witness == sequential_witness,
            "2^{log_size} witness"
        );
        assert_eq!(parallel.content_id(), sequential.content_id());
    }
}

#[test]
fn the_demo_needs_few_distinct_coefficients() {
    // Powers of two (bit packing, additions, MultiEq's shifts) and their
    // negations, 1 and -1: a few hundred values for millions of terms.
    let r1cs = record(DemoCircuit::new(18, 0.95, 1)).unwrap();
    let stats = r1cs.as_ref().stats();
    println!("2^18 demo: {stats:?}");
    assert!(stats.distinct_coeffs < 1 << 10, "{stats:?}");
}

#[test]
fn a_witness_of_another_length_is_refused_naming_both_counts() {
    let circuit = DemoCircuit::new(12, 0.95, 1);
    let r1cs = record(circuit.clone()).unwrap();
    let good = witness(circuit).unwrap();
    let shape = r1cs.shape().clone();

    let mut short = good.clone();
    short.aux_assignment.pop();
    let err = r1cs.synthesize(short).unwrap_err();
    assert_eq!(
        err,
        WitnessError::Aux {
            expected: shape.num_aux,
            found: shape.num_aux - 1
        }
    );
    let message = err.to_string();
    assert!(
        message.contains(&shape.num_aux.to_string())
            && message.contains(&(shape.num_aux - 1).to_string()),
        "{message}"
    );

    let mut long = good;
    long.input_assignment.push(Fr::ONE);
    let err = r1cs.synthesize(long).unwrap_err();
    assert_eq!(
        err,
        WitnessError::Inputs {
            expected: shape.num_inputs,
            found: shape.num_inputs + 1
        }
    );
}

#[test]
fn enforce_closures_are_never_called_by_the_witness_system() {
    #[derive(Clone)]
    struct Panics;
    impl Circuit<Fr> for Panics {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::from(5)))?;
            cs.enforce(
                || "never",
                |_| panic!("A built"),
                |_| panic!("B built"),
                |lc| lc + x,
            );
            cs.alloc_input(|| "y", || Ok(Fr::from(6)))?;
            Ok(())
        }
    }
    let w = witness(Panics).unwrap();
    assert_eq!(w.input_assignment, vec![Fr::ONE, Fr::from(6)]);
    assert_eq!(w.aux_assignment, vec![Fr::from(5)]);
}

/// A random circuit: allocations and inputs interleaved with constraints
/// over random earlier variables, with coefficients that are zero, ±1,
/// small, repeated (merged by bellperson) or cancelling.
#[derive(Clone, Debug)]
struct RandomCircuit {
    ops: Vec<Op>,
}

#[derive(Clone, Debug)]
enum Op {
    Aux(Value),
    Input(Value),
    /// Terms of A, B, C: (is an input, which variable as a fraction of
    /// those allocated so far, coefficient).
    Enforce([Vec<(bool, u16, Coeff)>; 3]),
}

#[derive(Clone, Copy, Debug)]
enum Value {
    Zero,
    One,
    Other(u64),
}

#[derive(Clone, Copy, Debug)]
enum Coeff {
    Zero,
    One,
    MinusOne,
    Small(u8),
    Wide(u64),
}

impl Value {
    fn fr(self) -> Fr {
        match self {
            Value::Zero => Fr::ZERO,
            Value::One => Fr::ONE,
            // A full-width value: a power of a seed-derived element.
            Value::Other(x) => Fr::from(x).pow_vartime([7]),
        }
    }
}

impl Coeff {
    fn fr(self) -> Fr {
        match self {
            Coeff::Zero => Fr::ZERO,
            Coeff::One => Fr::ONE,
            Coeff::MinusOne => -Fr::ONE,
            Coeff::Small(x) => Fr::from(u64::from(x)),
            Coeff::Wide(x) => -Fr::from(x).pow_vartime([5]),
        }
    }
}

impl Circuit<Fr> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut inputs = vec![CS::one()];
        let mut aux: Vec<Variable> = Vec::new();
        for op in self.ops {
            match op {
                Op::Aux(v) => aux.push(cs.alloc(|| "aux", || Ok(v.fr()))?),
                Op::Input(v) => inputs.push(cs.alloc_input(|| "input", || Ok(v.fr()))?),
                Op::Enforce(rows) => {
                    let lc = |terms: &[(bool, u16, Coeff)]| {
                        let mut lc = LinearCombination::zero();
                        for &(input, at, coeff) in terms {
                            let pool = if input || aux.is_empty() {
                                &inputs
                            } else {
                                &aux
                            };
                            let var = pool[usize::from(at) * pool.len() / (1 << 16)];
                            lc = lc + (coeff.fr(), var);
                            if matches!(coeff, Coeff::Small(3)) {
                                // A term that cancels: merged to zero.
                                lc = lc - (coeff.fr(), var);
                            }
                        }
                        lc
                    };
                    let [a, b, c] = [lc(&rows[0]), lc(&rows[1]), lc(&rows[2])];
                    cs.enforce(|| "random", |_| a, |_| b, |_| c);
                }
            }
        }
        Ok(())
    }
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => Just(Value::Zero),
        3 => Just(Value::One),
        2 => any::<u64>().prop_map(Value::Other),
    ]
}

fn coeff() -> impl Strategy<Value = Coeff> {
    prop_oneof![
        1 => Just(Coeff::Zero),
        4 => Just(Coeff::One),
        2 => Just(Coeff::MinusOne),
        2 => (0u8..8).prop_map(Coeff::Small),
        1 => any::<u64>().prop_map(Coeff::Wide),
    ]
}

fn row() -> impl Strategy<Value = Vec<(bool, u16, Coeff)>> {
    prop::collection::vec((prop::bool::weighted(0.2), any::<u16>(), coeff()), 0..6)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => value().prop_map(Op::Aux),
        1 => value().prop_map(Op::Input),
        4 => [row(), row(), row()].prop_map(Op::Enforce),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_circuits_match_full_synthesis(ops in prop::collection::vec(op(), 0..80)) {
        check(RandomCircuit { ops });
    }

    /// Recording in pieces joined with `extend` equals one recording.
    #[test]
    fn extended_recordings_match_sequential_ones(
        pieces in prop::collection::vec(prop::collection::vec(op(), 0..30), 1..5)
    ) {
        let circuit = Pieces(pieces.into_iter().map(|ops| RandomCircuit { ops }).collect());
        let parallel = record(circuit.clone()).unwrap();
        let sequential = record(Sequence(circuit.clone())).unwrap();
        prop_assert!(parallel == sequential);
        let parallel_witness = witness(circuit.clone()).unwrap();
        let sequential_witness = witness(Sequence(circuit.clone())).unwrap();
        prop_assert!(parallel_witness == sequential_witness);
        let expected = synthesize(circuit).unwrap();
        common::assert_same(&parallel.synthesize(parallel_witness).unwrap(), &expected);
    }
}

/// Independent random pieces, on rayon tasks joined with `extend` when the
/// system is extensible.
#[derive(Clone, Debug)]
struct Pieces(Vec<RandomCircuit>);

/// The same pieces, one after the other on the caller's system.
#[derive(Clone, Debug)]
struct Sequence(Pieces);

impl Circuit<Fr> for Pieces {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !CS::Root::is_extensible() {
            return Sequence(self).synthesize(cs);
        }
        cuzk_synth::synthesize_in_parallel(cs.get_root(), self.0, |piece, part| {
            piece.synthesize(part)
        })
    }
}

impl Circuit<Fr> for Sequence {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for piece in self.0 .0 {
            piece.synthesize(&mut cs.namespace(|| "piece"))?;
        }
        Ok(())
    }
}
