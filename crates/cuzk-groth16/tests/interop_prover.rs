//! The CPU prover against bellperson 0.27, the interop oracle: same key, same
//! circuit, same seeded RNG ⇒ the same proof bytes; each side verifies the
//! other's proofs; tampering is caught by both.

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::proof::proofs_to_bytes;
use cuzk_groth16::prover::{prove_batch, CpuBackend};
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::{Proof, ProvingKey};
use cuzk_synth::{synthesize_many, DemoCircuit};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

struct Fixture {
    key: ProvingKey,
    bp_params: bp::Parameters<Bls12>,
}

fn fixture(log_size: u32, sha_share: f64) -> Fixture {
    let mut rng = ChaCha20Rng::seed_from_u64(0xC0FFEE);
    let key = generate_key(DemoCircuit::new(log_size, sha_share, 0), &mut rng).unwrap();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    let bp_params = bp::Parameters::<Bls12>::read(&bytes[..], true).unwrap();
    Fixture { key, bp_params }
}

/// Proves `seeds.len()` partitions with both provers from the same RNG seed
/// and checks bytes, cross-verification and tamper rejection.
fn check(log_size: u32, sha_share: f64, seeds: &[u64]) {
    let f = fixture(log_size, sha_share);
    let circuits: Vec<DemoCircuit> = seeds
        .iter()
        .map(|&s| DemoCircuit::new(log_size, sha_share, s))
        .collect();
    let inputs: Vec<Vec<Fr>> = circuits.iter().map(|c| c.public_inputs()).collect();

    let witnesses = synthesize_many(circuits.clone()).unwrap();
    let ours = prove_batch(
        &CpuBackend,
        &f.key,
        &witnesses,
        &mut ChaCha20Rng::seed_from_u64(7),
    )
    .unwrap();
    let ours: Vec<Proof> = ours.into_iter().map(|p| p.proof).collect();

    let theirs =
        bp::create_random_proof_batch(circuits, &f.bp_params, &mut ChaCha20Rng::seed_from_u64(7))
            .unwrap();
    let mut their_bytes = Vec::new();
    for p in &theirs {
        p.write(&mut their_bytes).unwrap();
    }
    assert_eq!(
        proofs_to_bytes(&ours),
        their_bytes,
        "2^{log_size}: proof bytes differ from bellperson's"
    );

    let pvk = PreparedVerifyingKey::new(&f.key.vk);
    let bp_pvk = bp::prepare_verifying_key(&f.bp_params.vk);
    for (i, (proof, theirs)) in ours.iter().zip(&theirs).enumerate() {
        let ours_all = &ours;
        let ours = proof;
        // bellperson verifies ours, we verify theirs.
        let as_bp = bp::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
        assert!(bp::verify_proof(&bp_pvk, &as_bp, &inputs[i]).unwrap());
        let mut tb = Vec::new();
        theirs.write(&mut tb).unwrap();
        assert!(verify_proof(&pvk, &Proof::from_bytes(&tb).unwrap(), &inputs[i]).unwrap());

        // Wrong public inputs are rejected by both.
        let mut wrong = inputs[i].clone();
        wrong[0] += Fr::from(1);
        assert!(!verify_proof(&pvk, ours, &wrong).unwrap());
        assert!(!bp::verify_proof(&bp_pvk, &as_bp, &wrong).unwrap());

        // A proof of another partition does not verify this one's inputs.
        if let Some(other) = ours_other(ours_all, i) {
            assert!(!verify_proof(&pvk, &other, &inputs[i]).unwrap());
        }
        // A tampered proof: swap A and C (both valid points).
        let tampered = Proof {
            a: ours.c,
            b: ours.b,
            c: ours.a,
        };
        assert!(!verify_proof(&pvk, &tampered, &inputs[i]).unwrap());
        let as_bp = bp::Proof::<Bls12>::read(&tampered.to_bytes()[..]).unwrap();
        assert!(!bp::verify_proof(&bp_pvk, &as_bp, &inputs[i]).unwrap());
    }
}

fn ours_other(proofs: &[Proof], i: usize) -> Option<Proof> {
    (proofs.len() > 1).then(|| proofs[(i + 1) % proofs.len()])
}

#[test]
fn mul_chain_2_10_matches_bellperson() {
    check(10, 0.95, &[1, 2]);
}

#[test]
fn sha_and_chain_2_15_matches_bellperson() {
    check(15, 0.95, &[3]);
}

#[test]
fn half_sha_2_16_matches_bellperson() {
    check(16, 0.5, &[4]);
}

/// Two multiplication lanes: both provers synthesize them in parallel and
/// join them with `extend`, while the key generator ran them in sequence.
#[test]
fn parallel_lanes_2_17_match_bellperson() {
    assert_eq!(DemoCircuit::plan_for(17, 0.0).chain_lanes(), 2);
    check(17, 0.0, &[5]);
}

#[test]
fn key_mismatch_is_refused_before_proving() {
    let f = fixture(10, 0.95);
    let w = cuzk_synth::synthesize(DemoCircuit::new(11, 0.95, 1)).unwrap();
    let err = prove_batch(
        &CpuBackend,
        &f.key,
        &[w],
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("h points") && msg.contains("1023") && msg.contains("2047"),
        "{msg}"
    );
}
