//! A demo circuit synthesized lane by lane in parallel (the proving
//! assignment is extensible) equals the same circuit synthesized in one
//! sequence, which is what a key generator sees.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_synth::{synthesize, DemoCircuit, ProvingAssignment, Synthesized};
use ff::Field;

/// A proving assignment that says it is not extensible, so circuits take
/// their sequential path.
struct Sequential(ProvingAssignment);

impl ConstraintSystem<Fr> for Sequential {
    cuzk_synth::own_root_without_namespaces!();

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, a: A, la: LA, lb: LB, lc: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.enforce(a, la, lb, lc)
    }
}

fn sequential(circuit: DemoCircuit) -> Synthesized {
    let mut cs = Sequential(ProvingAssignment::new());
    assert!(!Sequential::is_extensible());
    let one = cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    assert_eq!(one, Variable::new_unchecked(Index::Input(0)));
    circuit.synthesize(&mut cs).unwrap();
    cs.0.finish()
}

#[test]
fn parallel_and_sequential_synthesis_agree() {
    assert!(ProvingAssignment::is_extensible());
    // Several SHA lanes (the last one short) and one chain lane; then no SHA
    // and four chain lanes (the last one short); then one lane of each.
    for (log_size, share, seed) in [(19, 1.0, 3), (18, 0.0, 4), (16, 0.95, 5)] {
        let circuit = DemoCircuit::new(log_size, share, seed);
        let inputs = circuit.public_inputs();
        let parallel = synthesize(circuit.clone()).unwrap();
        let sequential = sequential(circuit);
        assert!(
            parallel == sequential,
            "2^{log_size} at {share}: the parallel synthesis differs"
        );
        assert_eq!(&parallel.input_assignment[1..], &inputs[..]);
        assert_eq!(parallel.shape(), DemoCircuit::shape_for(log_size, share));
    }
}

#[test]
fn lanes_draw_different_witnesses() {
    // Two SHA lanes of the same length must not repeat each other's blocks.
    let circuit = DemoCircuit::new(19, 1.0, 9);
    let inputs = circuit.public_inputs();
    let plan = circuit.plan();
    assert_eq!(plan.sha_lanes(), 2);
    assert_ne!(inputs[0..2], inputs[2..4]);
    assert_eq!(inputs.len(), 2 * plan.sha_lanes() + plan.chain_lanes());
}

#[test]
fn in_sequence_is_the_same_witness_on_one_thread() {
    let circuit = DemoCircuit::new(18, 0.0, 6);
    assert!(circuit.parallel());
    let sequential_circuit = circuit.clone().in_sequence();
    assert!(!sequential_circuit.parallel());
    assert!(synthesize(sequential_circuit).unwrap() == synthesize(circuit).unwrap());
}

#[test]
fn a_one_thread_pool_joins_the_same_witness() {
    // The joining task helps run the lanes: nothing waits on a busy pool.
    let circuit = DemoCircuit::new(19, 1.0, 8);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let single = one.install(|| synthesize(circuit.clone())).unwrap();
    assert!(single == synthesize(circuit).unwrap());
}

#[test]
fn the_first_error_in_piece_order_is_returned() {
    use cuzk_synth::synthesize_in_parallel;
    let piece = |i: u64, cs: &mut ProvingAssignment| -> Result<(), SynthesisError> {
        match i {
            3 => Err(SynthesisError::AssignmentMissing),
            5 => Err(SynthesisError::DivisionByZero),
            _ => {
                let x = cs.alloc(|| "x", || Ok(Fr::from(i)))?;
                cs.enforce(|| "x = x", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + x);
                Ok(())
            }
        }
    };
    type CS = ProvingAssignment;
    let mut root = ProvingAssignment::new();
    root.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    let err = synthesize_in_parallel(&mut root, (0..8).collect(), piece).unwrap_err();
    assert!(matches!(err, SynthesisError::AssignmentMissing), "{err:?}");
    // Without failures the pieces are appended in order.
    let mut root = ProvingAssignment::new();
    root.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    synthesize_in_parallel(&mut root, vec![1u64, 2, 4, 6], piece).unwrap();
    let done = root.finish();
    assert_eq!(done.aux_assignment, [1u64, 2, 4, 6].map(Fr::from).to_vec());
}
