//! Snapshots of seeded proofs over the committed 2^10 demo key
//! (fixtures/demo-k10-sha95.params, made by `cuzk setup --log-size 10 --setup-seed 0`).
//! Proofs are deterministic for a seeded RNG; a changed byte here means the
//! prover's output changed.

use std::path::PathBuf;

use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::params::KeySummary;
use cuzk_groth16::proof::proofs_to_bytes;
use cuzk_groth16::prover::{prove_batch, CpuBackend};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize_many, DemoCircuit};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-k10-sha95.params")
}

#[test]
fn key_summary() {
    let summary = KeySummary::from_path(&fixture()).unwrap();
    insta::assert_snapshot!(summary.to_string());
}

#[test]
fn seeded_demo_proofs() {
    let key = ProvingKey::read_from_path(&fixture(), PointCheck::Full).unwrap();
    let circuits: Vec<DemoCircuit> = (1..=3).map(|s| DemoCircuit::new(10, 0.95, s)).collect();
    let witnesses = synthesize_many(circuits.clone()).unwrap();
    let proved = prove_batch(
        &CpuBackend,
        &key,
        &witnesses,
        &mut ChaCha20Rng::seed_from_u64(42),
    )
    .unwrap();
    let pvk = PreparedVerifyingKey::new(&key.vk);
    for (p, c) in proved.iter().zip(&circuits) {
        assert!(verify_proof(&pvk, &p.proof, &c.public_inputs()).unwrap());
    }
    let bytes = proofs_to_bytes(&proved.iter().map(|p| p.proof).collect::<Vec<_>>());
    let hex: Vec<String> = bytes.chunks(48).map(hex_line).collect();
    insta::assert_snapshot!(hex.join("\n"));
}

fn hex_line(chunk: &[u8]) -> String {
    chunk.iter().map(|b| format!("{b:02x}")).collect()
}
