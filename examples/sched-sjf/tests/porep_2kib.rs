//! A real job through the outside scheduler: a 2 KiB PoRep sector of random
//! data, sealed with filecoin-proofs (pre-commit and commit phase 1) with test
//! keys generated from a seed, proved by `ShortestJobFirst` on the CPU, and
//! checked with filecoin-proofs' `verify_seal`.
//!
//! The keys go to `<target dir>/tmp/filecoin-proof-parameters`, where
//! cuzk-filecoin's own 2 KiB tests keep them: with `--target-dir` pointing at
//! the workspace's target (as .ci/run does) they are generated once for both.

use std::path::PathBuf;
use std::sync::Arc;

use cuzk_filecoin::{
    parse_c1, verify, ParamsDir, PorepSource, ProofType, SectorIdentity, Verified,
};
use cuzk_pipeline::{EngineConfig, Job, PartitionSource, Scheduler, Verification};
use cuzk_sched_sjf::ShortestJobFirst;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Seed of the test keys' toxic waste (what `cargo xtask fixtures keys` and
/// cuzk-filecoin's tests use).
const KEY_SEED: u64 = 0;
const SEAL_SEED: u64 = 0x5eed_51f0_u64;

#[test]
fn a_sealed_2kib_sector_is_proved_and_passes_verify_seal() {
    let params_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters");
    let work = tempfile::tempdir().unwrap();
    // Before filecoin-proofs reads its settings (once per process, on first use).
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.path().join("parents"));
    let params = ParamsDir::new(&params_dir);
    assert_eq!(
        ParamsDir::filecoin(),
        params,
        "filecoin-proofs reads another cache"
    );
    let proof_type = ProofType::new(RegisteredSealProof::StackedDrg2KiBV1_1).unwrap();
    if params.check(proof_type).is_err() {
        params.generate_test_keys(proof_type, KEY_SEED).unwrap();
    }

    let identity = SectorIdentity::from_actor(1000, 9);
    let mut rng = ChaCha20Rng::seed_from_u64(SEAL_SEED);
    let c1 =
        cuzk_filecoin::sample::seal_random_sector(proof_type, work.path(), &identity, &mut rng)
            .unwrap();
    let c1 = parse_c1(&serde_json::to_vec(&c1).unwrap()).unwrap();

    let key = Arc::new(params.load_proving_key(c1.proof_type).unwrap());
    let source = PorepSource::new(&c1, &key).unwrap();
    assert_eq!(
        source.num_partitions(),
        1,
        "a 2 KiB sector is one partition"
    );
    // One CPU device with one worker.
    let sched = ShortestJobFirst::start(EngineConfig::default()).unwrap();
    let out = sched
        .submit(Job::new(Arc::new(source), key).with_label("porep-2kib"))
        .unwrap()
        .wait()
        .unwrap();
    sched.shutdown();
    assert!(
        out.partitions
            .iter()
            .all(|p| p.verification == Verification::Valid),
        "the engine verified every partition"
    );

    let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
    let vk = params.load_verifying_key(c1.proof_type).unwrap();
    assert_eq!(
        verify(&c1, &proof, &vk, Some(&identity)).unwrap(),
        Verified::VerifySeal,
        "filecoin-proofs accepts the proof"
    );
}
