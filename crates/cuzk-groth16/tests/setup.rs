//! Key generation against bellperson 0.27's generator: the same seeded RNG
//! gives the same key bytes (a demo circuit and an irregular,
//! non-power-of-two one), the same refusals, and a key that proves and
//! verifies. A key from the circuit's recording (in memory or a mapped cache
//! file) equals the key from its synthesis, byte for byte, refusals
//! included.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multieq::MultiEq;
use bellperson::gadgets::multipack;
use bellperson::gadgets::uint32::UInt32;
use bellperson::groth16 as bp;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::prover::{prove_batch, CpuBackend};
use cuzk_groth16::setup::{generate_from_recording, generate_key, CpuFixedBase, SetupError};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_synth::precompiled::{cache, record, CircuitId, MappedR1cs, R1csRef};
use cuzk_synth::{synthesize, CircuitShape, DemoCircuit};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

/// An irregular circuit: several public inputs (some used in B), bit
/// gadgets, repeated variables in one combination, zero and full-width
/// coefficients, variables that never appear in A or in B, and a constraint
/// count that is not a power of two.
#[derive(Clone)]
struct Irregular {
    words: usize,
    seed: u64,
}

impl Circuit<Fr> for Irregular {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        let x = Fr::random(&mut rng);
        let x_in = cs.alloc_input(|| "x", || Ok(x))?;
        let x_aux = cs.alloc(|| "x aux", || Ok(x))?;
        // x_in * 1 = x_aux: an input in A, ONE in B.
        cs.enforce(
            || "copy",
            |lc| lc + x_in,
            |lc| lc + CS::one(),
            |lc| lc + x_aux,
        );
        let mut words = Vec::new();
        for i in 0..self.words {
            let v = rng.next_u32();
            words.push(UInt32::alloc(cs.namespace(|| format!("w{i}")), Some(v))?);
        }
        let mut acc = words[0].clone();
        for (i, w) in words.iter().enumerate().skip(1) {
            let r = w.rotr(i % 32);
            acc = acc.xor(cs.namespace(|| format!("xor{i}")), &r)?;
            let mut eq = MultiEq::new(cs.namespace(|| format!("add{i}")));
            acc = UInt32::addmany(eq.namespace(|| "sum"), &[acc, w.clone()])?;
        }
        let bits: Vec<Boolean> = acc.into_bits();
        multipack::pack_into_inputs(cs.namespace(|| "pack"), &bits)?;
        // A product chain with a weird combination: repeated variable,
        // zero coefficient, the input in B, a large coefficient in C.
        let k = Fr::random(&mut rng);
        let mut cur = x_aux;
        let mut cur_v = x;
        for i in 0..37 {
            let y = Fr::from(i as u64 + 3);
            let next_v = cur_v * (x + y + y) * Fr::ONE + k * Fr::ZERO;
            let next = cs.alloc(|| format!("chain{i}"), || Ok(next_v))?;
            cs.enforce(
                || format!("chain{i}"),
                |lc| lc + cur + (Fr::ZERO, x_aux),
                |lc| lc + x_in + (y, CS::one()) + (y, CS::one()),
                |lc| lc + next + (k, cur) - (k, cur),
            );
            cur = next;
            cur_v = next_v;
        }
        // A bit used only in C.
        let bit = AllocatedBit::alloc(cs.namespace(|| "lonely bit"), Some(false))?;
        cs.enforce(|| "c only", |lc| lc, |lc| lc, |lc| lc + bit.get_variable());
        let out = cs.alloc_input(|| "out", || Ok(cur_v))?;
        cs.enforce(|| "out", |lc| lc + cur, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

fn bellperson_bytes<C: Circuit<Fr>>(circuit: C, seed: u64) -> Result<Vec<u8>, SynthesisError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = bp::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng)?;
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    Ok(bytes)
}

/// Our key's bytes equal bellperson's for `seed`.
fn check_same_key<C: Circuit<Fr> + Clone>(circuit: C, seed: u64) {
    let theirs = bellperson_bytes(circuit.clone(), seed).unwrap();
    let ours = generate_key(circuit, &mut ChaCha20Rng::seed_from_u64(seed))
        .unwrap()
        .to_bytes();
    assert_eq!(ours.len(), theirs.len(), "seed {seed}: key length");
    if let Some(at) = ours.iter().zip(&theirs).position(|(a, b)| a != b) {
        panic!("seed {seed}: keys differ first at byte {at}");
    }
}

#[test]
fn demo_2_10_key_is_bellpersons() {
    check_same_key(
        DemoCircuit::new(10, 0.95, 0),
        cuzk_testkit::test_seed("demo_2_10_key_is_bellpersons"),
    );
}

#[test]
fn irregular_key_is_bellpersons() {
    let seed = cuzk_testkit::test_seed("irregular_key_is_bellpersons");
    let circuit = Irregular { words: 5, seed };
    let shape = synthesize(circuit.clone()).unwrap().shape();
    assert!(!shape.num_constraints.is_power_of_two(), "{shape:?}");
    check_same_key(circuit, seed);
}

struct Unconstrained;

impl Circuit<Fr> for Unconstrained {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let a = cs.alloc(|| "a", || Ok(Fr::ONE))?;
        cs.alloc(|| "unused", || Ok(Fr::ONE))?;
        cs.enforce(|| "a", |lc| lc + a, |lc| lc + a, |lc| lc + a);
        Ok(())
    }
}

#[test]
fn unconstrained_variable_is_refused_as_bellperson_does() {
    assert!(matches!(
        bellperson_bytes(Unconstrained, 1),
        Err(SynthesisError::UnconstrainedVariable)
    ));
    assert!(matches!(
        generate_key(Unconstrained, &mut ChaCha20Rng::seed_from_u64(1)),
        Err(SetupError::Synthesis(SynthesisError::UnconstrainedVariable))
    ));
}

#[test]
fn key_proves_and_verifies() {
    let seed = cuzk_testkit::test_seed("key_proves_and_verifies");
    let circuit = Irregular { words: 3, seed };
    let key = generate_key(circuit.clone(), &mut ChaCha20Rng::seed_from_u64(seed)).unwrap();
    let witness = synthesize(circuit).unwrap();
    let inputs = witness.input_assignment[1..].to_vec();
    let proved = prove_batch(
        &CpuBackend,
        &key,
        &[witness],
        &mut ChaCha20Rng::seed_from_u64(seed ^ 1),
    )
    .unwrap();
    let pvk = PreparedVerifyingKey::new(&key.vk);
    assert!(verify_proof(&pvk, &proved[0].proof, &inputs).unwrap());
    let mut wrong = inputs.clone();
    wrong[0] += Fr::ONE;
    assert!(!verify_proof(&pvk, &proved[0].proof, &wrong).unwrap());
}

/// The key from `recording` (with toxic waste from `seed`).
fn recording_key(recording: R1csRef<'_>, seed: u64) -> Result<Vec<u8>, SetupError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    Ok(generate_from_recording(recording, &mut rng, &CpuFixedBase)?.to_bytes())
}

/// The key from the circuit's recording equals the key from its synthesis,
/// for `seed`, byte for byte.
fn check_recording_gives_the_same_key<C: Circuit<Fr> + Clone>(circuit: C, seed: u64) {
    let r1cs = record(circuit.clone()).unwrap();
    let from_recording = recording_key(r1cs.as_ref(), seed).unwrap();
    let from_circuit = generate_key(circuit, &mut ChaCha20Rng::seed_from_u64(seed))
        .unwrap()
        .to_bytes();
    assert_eq!(
        from_recording.len(),
        from_circuit.len(),
        "seed {seed}: key length"
    );
    if let Some(at) = from_recording
        .iter()
        .zip(&from_circuit)
        .position(|(a, b)| a != b)
    {
        panic!("seed {seed}: keys differ first at byte {at}");
    }
}

#[test]
fn demo_keys_from_recordings_are_the_synthesized_ones() {
    let seed = cuzk_testkit::test_seed("demo_keys_from_recordings_are_the_synthesized_ones");
    // SHA-256 and chain, chain only, SHA-256 only; 2^10 to 2^16.
    for (log_size, sha_share) in [(10, 0.95), (12, 0.0), (14, 1.0), (16, 0.7)] {
        check_recording_gives_the_same_key(DemoCircuit::new(log_size, sha_share, seed), seed);
    }
}

#[test]
fn irregular_key_from_its_recording_is_the_synthesized_one() {
    let seed = cuzk_testkit::test_seed("irregular_key_from_its_recording_is_the_synthesized_one");
    check_recording_gives_the_same_key(Irregular { words: 5, seed }, seed);
}

#[test]
fn key_from_a_mapped_recording_is_the_synthesized_one() {
    let seed = cuzk_testkit::test_seed("key_from_a_mapped_recording_is_the_synthesized_one");
    let circuit = Irregular { words: 3, seed };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("irregular.r1cs");
    let id = CircuitId::from_name("irregular");
    cache::write(&path, &id, &record(circuit.clone()).unwrap()).unwrap();
    let mapped = MappedR1cs::open(&path, &id).unwrap();
    let from_circuit = generate_key(circuit, &mut ChaCha20Rng::seed_from_u64(seed))
        .unwrap()
        .to_bytes();
    assert!(recording_key(mapped.as_ref(), seed).unwrap() == from_circuit);
}

#[test]
fn unconstrained_variable_in_a_recording_is_refused_as_in_synthesis() {
    let r1cs = record(Unconstrained).unwrap();
    assert!(matches!(
        recording_key(r1cs.as_ref(), 1),
        Err(SetupError::Synthesis(SynthesisError::UnconstrainedVariable))
    ));
}

#[test]
fn malformed_recording_is_refused_naming_the_matrix() {
    let r1cs = record(Irregular { words: 1, seed: 0 }).unwrap();
    let check = |shape: CircuitShape, want: &str| {
        let recording = R1csRef {
            shape: &shape,
            ..r1cs.as_ref()
        };
        match recording_key(recording, 0) {
            Err(e @ SetupError::Recording(_)) => {
                let message = e.to_string();
                assert!(message.contains(want), "{message:?} lacks {want:?}");
            }
            other => panic!("{shape:?}: {:?}", other.map(|k| k.len())),
        }
    };
    let shape = r1cs.shape().clone();
    check(
        CircuitShape {
            num_constraints: shape.num_constraints - 1,
            ..shape.clone()
        },
        "matrix A has",
    );
    check(
        CircuitShape {
            num_aux: shape.num_aux - 1,
            ..shape
        },
        "past the circuit's",
    );
}
