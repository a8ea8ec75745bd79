//! What the 2 KiB end-to-end tests share: a job proved through the
//! pipelined engine, for comparison with the serial scheduler's proof, and
//! bellperson's proofs of the same circuits from a seeded RNG.

// Each test binary uses part of this module.
#![allow(dead_code)]

use bellperson::groth16::{self, ParameterSource, Proof};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_pipeline::{Device, EngineConfig, Job, Scheduler};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// `job` proved through cuzk-sched's engine with `synthesis_workers`
/// synthesis workers and one CPU prover: its proofs' bytes, in order.
pub(crate) fn engine_proof(job: Job, synthesis_workers: usize) -> Vec<u8> {
    let mut config = EngineConfig::default();
    config.synthesis_workers = synthesis_workers;
    config.devices = vec![Device::cpu(0, 1)];
    let engine = cuzk_sched::Engine::start(config).unwrap();
    let out = engine.submit(job).unwrap().wait().unwrap();
    engine.shutdown();
    out.proofs.iter().flat_map(|p| p.to_bytes()).collect()
}

/// Proofs in their 192-byte encoding, one after another.
pub(crate) fn proof_bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for p in proofs {
        p.write(&mut bytes).unwrap();
    }
    bytes
}

/// bellperson's proofs of `circuits` (`create_random_proof_batch`, as
/// filecoin-proofs calls it) with `params` and an RNG from `seed`, encoded.
pub(crate) fn bellperson_proofs<C, P>(circuits: Vec<C>, params: P, seed: u64) -> Vec<u8>
where
    C: Circuit<Fr> + Send,
    P: ParameterSource<Bls12>,
{
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    proof_bytes(&groth16::create_random_proof_batch(circuits, params, &mut rng).unwrap())
}
