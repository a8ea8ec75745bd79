//! Proofs through the pre-compiled path are the bytes of proofs through full
//! synthesis, for the same key and seed (cuzk-groth16's CPU prover), and
//! verify; so are proofs of witnesses whose aux values are held compact.

use std::path::PathBuf;

use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::proof::proofs_to_bytes;
use cuzk_groth16::prover::{prove_batch, CpuBackend};
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;
use std::sync::Arc;

use cuzk_synth::precompiled::{cache, record, witness, CompactWitness, DeferredAbc, MappedR1cs};
use cuzk_synth::{synthesize, DemoCircuit, Synthesized};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Proves `witnesses` with the proof randomness drawn from `seed`.
fn proofs(key: &ProvingKey, witnesses: &[Synthesized], seed: u64) -> Vec<u8> {
    let proved = prove_batch(
        &CpuBackend,
        key,
        witnesses,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    proofs_to_bytes(&proved.iter().map(|p| p.proof).collect::<Vec<_>>())
}

/// Full synthesis and the pre-compiled path (through a cache file; a, b, c
/// evaluated at synthesis, or left to the prover) prove the same bytes for
/// `circuits`, which all verify.
fn check(key: &ProvingKey, circuits: &[DemoCircuit], seed: u64) {
    println!("proof randomness seed {seed}");
    let full: Vec<Synthesized> = circuits
        .iter()
        .map(|c| synthesize(c.clone()).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.r1cs");
    let recording = record(circuits[0].clone()).unwrap();
    let id = recording.content_id();
    cache::write(&path, &id, &recording).unwrap();
    let mapped = Arc::new(MappedR1cs::open(&path, &id).unwrap());
    let deferred = DeferredAbc::new(id, mapped.clone());
    let left_to_the_prover: Vec<Synthesized> = circuits
        .iter()
        .map(|c| deferred.synthesized(witness(c.clone()).unwrap()).unwrap())
        .collect();
    assert!(left_to_the_prover
        .iter()
        .all(|w| !w.abc_on_host() && w.a.is_empty() && w.shape() == full[0].shape()));
    let precompiled: Vec<Synthesized> = circuits
        .iter()
        .map(|c| {
            MappedR1cs::as_ref(&mapped)
                .synthesize(witness(c.clone()).unwrap())
                .unwrap()
        })
        .collect();
    let expected = proofs(key, &full, seed);
    let actual = proofs(key, &precompiled, seed);
    assert_eq!(
        actual, expected,
        "pre-compiled proofs differ from full synthesis's"
    );
    assert_eq!(
        proofs(key, &left_to_the_prover, seed),
        expected,
        "proofs with a, b, c evaluated by the prover differ from full synthesis's"
    );
    let compact: Vec<Synthesized> = circuits
        .iter()
        .map(|c| {
            let plain = witness(c.clone()).unwrap();
            deferred
                .synthesized_compact(CompactWitness::from_witness(&plain))
                .unwrap()
        })
        .collect();
    assert!(compact
        .iter()
        .all(|w| w.aux_assignment.is_empty() && w.shape() == full[0].shape()));
    assert_eq!(
        proofs(key, &compact, seed),
        expected,
        "proofs of compact witnesses differ from full synthesis's"
    );
    let mut expanded = compact[0].clone();
    expanded.expand_aux();
    assert!(expanded == left_to_the_prover[0], "expand_aux");
    let mut evaluated = left_to_the_prover[0].clone();
    evaluated.evaluate_abc();
    assert!(evaluated.abc_on_host());
    assert!(
        evaluated == full[0],
        "evaluate_abc gives full synthesis's a, b, c"
    );
    let pvk = PreparedVerifyingKey::new(&key.vk);
    for (proof, circuit) in actual.chunks(192).zip(circuits) {
        let proof = cuzk_groth16::proof::Proof::from_bytes(proof).unwrap();
        assert!(verify_proof(&pvk, &proof, &circuit.public_inputs()).unwrap());
    }
}

#[test]
fn the_committed_2_10_key_proves_the_same_bytes() {
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-k10-sha95.params");
    let key = ProvingKey::read_from_path(&fixture, PointCheck::Full).unwrap();
    let circuits: Vec<DemoCircuit> = (1..=3).map(|s| DemoCircuit::new(10, 0.95, s)).collect();
    check(&key, &circuits, 42);
}

#[test]
fn a_sha_circuit_proves_the_same_bytes() {
    // 2^15: one SHA-256 block (bits, 506 distinct coefficients) and a chain.
    let circuit = DemoCircuit::new(15, DemoCircuit::DEFAULT_SHA_SHARE, 1);
    let key_seed = 5;
    println!("key seed {key_seed}");
    let key = generate_key(circuit.clone(), &mut ChaCha20Rng::seed_from_u64(key_seed)).unwrap();
    check(
        &key,
        &[
            circuit,
            DemoCircuit::new(15, DemoCircuit::DEFAULT_SHA_SHARE, 2),
        ],
        7,
    );
}
