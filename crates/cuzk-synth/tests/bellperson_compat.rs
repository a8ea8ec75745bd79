//! Agreement with bellperson itself: its `TestConstraintSystem` (is the demo
//! circuit satisfied, do the counts and values agree) and its key generator
//! (do the proving key's query sizes equal our densities).

use bellperson::groth16::generate_random_parameters;
use bellperson::util_cs::test_cs::TestConstraintSystem;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use cuzk_synth::{synthesize, CircuitShape, DemoCircuit};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Runs `circuit` through bellperson's `TestConstraintSystem` and through
/// `synthesize`, and checks satisfaction, public inputs, counts and values.
fn check_test_cs(circuit: DemoCircuit) {
    let label = format!("{circuit:?}");
    let public_inputs = circuit.public_inputs();
    let mut test_cs = TestConstraintSystem::<Fr>::new();
    circuit.clone().synthesize(&mut test_cs).unwrap();
    assert!(
        test_cs.is_satisfied(),
        "{label}: unsatisfied at {:?}",
        test_cs.which_is_unsatisfied()
    );
    assert!(test_cs.verify(&public_inputs), "{label}: public inputs");

    let ours = synthesize(circuit).unwrap();
    // bellperson's TestConstraintSystem does not append `input_i * 0 = 0`.
    assert_eq!(
        ours.num_constraints(),
        test_cs.num_constraints() + test_cs.num_inputs(),
        "{label}"
    );
    assert_eq!(ours.input_assignment, test_cs.scalar_inputs(), "{label}");
    assert!(ours.aux_assignment == test_cs.scalar_aux(), "{label}: aux");
    // A satisfied witness has a * b = c in every row.
    for i in 0..ours.num_constraints() {
        assert_eq!(ours.a[i] * ours.b[i], ours.c[i], "{label}: row {i}");
    }
}

#[test]
fn demo_circuits_satisfy_bellpersons_test_cs() {
    for (log_size, sha_share, seed) in [(10, 0.95, 1), (15, 0.95, 2), (16, 0.95, 3), (16, 0.5, 4)] {
        check_test_cs(DemoCircuit::new(log_size, sha_share, seed));
    }
}

#[test]
fn seeds_change_the_witness_not_the_shape() {
    let one = synthesize(DemoCircuit::new(15, 0.95, 1)).unwrap();
    let two = synthesize(DemoCircuit::new(15, 0.95, 2)).unwrap();
    assert_eq!(one.shape(), two.shape());
    assert_ne!(one.input_assignment, two.input_assignment);
    assert!(one.aux_assignment != two.aux_assignment);
}

/// Keygen sizes: `a` holds every input (all are in A through the appended
/// constraints) plus the dense aux variables, `b_g1`/`b_g2` the B-dense
/// inputs and aux variables; points at infinity are left out.
fn check_key_queries<C: Circuit<Fr> + Clone>(circuit: C) -> CircuitShape {
    let shape = synthesize(circuit.clone()).unwrap().shape();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let params = generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    assert_eq!(params.vk.ic.len(), shape.num_inputs);
    assert_eq!(params.l.len(), shape.num_aux);
    assert_eq!(params.a.len(), shape.num_inputs + shape.a_aux_density);
    assert_eq!(
        params.b_g1.len(),
        shape.b_input_density + shape.b_aux_density
    );
    assert_eq!(
        params.b_g2.len(),
        shape.b_input_density + shape.b_aux_density
    );
    assert_eq!(params.h.len(), (1 << shape.domain_log2) - 1);
    shape
}

/// A variable whose only A term cancels is absent from the key's A query.
#[derive(Clone)]
struct CancelledInA;

impl Circuit<Fr> for CancelledInA {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Fr::from(3)))?;
        let y = cs.alloc(|| "y", || Ok(Fr::from(2)))?;
        let p = cs.alloc_input(|| "p", || Ok(Fr::from(6)))?;
        cs.enforce(|| "xy", |lc| lc + x + y - y, |lc| lc + y, |lc| lc + p);
        cs.enforce(|| "y", |lc| lc + (Fr::ZERO, y), |lc| lc, |lc| lc + y - y);
        Ok(())
    }
}

#[test]
fn proving_key_queries_match_densities() {
    let shape = check_key_queries(CancelledInA);
    assert_eq!(
        (
            shape.a_aux_density,
            shape.b_aux_density,
            shape.b_input_density
        ),
        (1, 1, 0)
    );
    let shape = check_key_queries(DemoCircuit::new(10, 0.95, 5));
    assert_eq!(shape.num_constraints, 1 << 10);
}
