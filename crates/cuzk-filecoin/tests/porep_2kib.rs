//! End to end on the 2 KiB sector (StackedDrg2KiBV1_1, and its synthetic-PoRep
//! variant): seal random data
//! with filecoin-proofs (pre-commit phases 1 and 2, commit phase 1) in a
//! temporary directory, with test keys generated from a seed into a
//! parameter cache under their official names; prove the C1 with cuzk;
//! check it with filecoin-proofs' `verify_seal`; compare it byte for byte
//! with bellperson's prover on the same circuits and the same seeded RNG;
//! and check that broken inputs are refused with the right reason.
//!
//! `seal_commit_phase2` itself draws its randomness from `OsRng` (in
//! storage-proofs-core's `CompoundProof::circuit_proofs`), so its output
//! cannot be reproduced; the comparison is with the same bellperson call it
//! makes (`create_random_proof_batch`), on the circuits it builds, with the
//! parameters it loads from the cache, and a seeded RNG.
//!
//! One sector is sealed per test process (filecoin-proofs reads its
//! settings, the parameter cache included, once per process).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bellperson::groth16;
use blstrs::Bls12;
use cuzk_filecoin::{
    parse_c1, partition_circuits, verify, C1Input, Error, ParamsDir, PorepSource, ProofType,
    SectorIdentity, Verified,
};
use cuzk_pipeline::{EngineConfig, Job, PartitionSource};
use filecoin_proofs::{DefaultPieceHasher, SectorShape2KiB};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const ACTOR: u64 = 1000;
const SECTOR: u64 = 7;

struct Sealed {
    /// The parameter cache (kept under the target directory between runs:
    /// the keys are deterministic, regenerated when absent or incomplete).
    dir: PathBuf,
    params: ParamsDir,
    c1_json: Vec<u8>,
    c1: C1Input,
    identity: SectorIdentity,
    /// File names in the parameter cache after our own key generation.
    cache_files: BTreeSet<String>,
}

fn sealed() -> &'static Sealed {
    static SEALED: OnceLock<Sealed> = OnceLock::new();
    SEALED.get_or_init(|| {
        let proof_type = ProofType::new(PROOF).unwrap();
        // The test SnarkPack SRS (seeded) too, for the aggregates below.
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        cache.keys([proof_type]);
        cache.srs();
        let cache_files = list(&cache.dir);

        let seed = 0x5eed_2c1d_u64;
        eprintln!("sealing a 2 KiB sector of random data, seed {seed:#x}");
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR);
        let c1 =
            cuzk_filecoin::sample::seal_random_sector(proof_type, &cache.work, &identity, &mut rng)
                .unwrap();
        let c1_json = serde_json::to_vec(&c1).unwrap();
        let c1 = parse_c1(&c1_json).unwrap();
        Sealed {
            dir: cache.dir,
            params: cache.params,
            c1_json,
            c1,
            identity,
            cache_files,
        }
    })
}

fn list(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `c1` proved by the serial scheduler on the CPU, seeded with `rng_seed`.
fn prove(c1: &C1Input, params: &ParamsDir, rng_seed: u64) -> Vec<u8> {
    let key = Arc::new(params.load_proving_key(c1.proof_type).unwrap());
    let source = PorepSource::new(c1, &key).unwrap();
    let out = cuzk_sched_serial::prove_one(
        EngineConfig::default(),
        Job::new(Arc::new(source), key).seeded(rng_seed),
    )
    .unwrap();
    let shapes: Vec<_> = out.partitions.iter().map(|p| p.shape.clone()).collect();
    let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
    // The 2 KiB circuit as docs/facts.md records it, measured through a bellperson-compatible
    // system (its constraint count is the circuit's own, without the appended
    // `input_i * 0 = 0` ones that cuzk's count includes).
    assert_eq!(shapes.len(), 1);
    let s = &shapes[0];
    assert_eq!(
        (
            s.num_constraints - s.num_inputs,
            s.num_inputs,
            s.num_aux,
            s.domain_log2
        ),
        (2_687_921, 40, 2_685_673, 22)
    );
    assert_eq!((s.a_aux_density, s.b_aux_density), (2_674_908, 685_521));
    proof
}

/// The randomness seed of the reference proof.
const RNG_SEED: u64 = 20261130;

/// cuzk's proof of the sealed sector by the serial scheduler (CPU backend,
/// `RNG_SEED`), made once per test process.
fn reference_proof() -> &'static [u8] {
    static PROOF: OnceLock<Vec<u8>> = OnceLock::new();
    PROOF.get_or_init(|| {
        let s = sealed();
        cuzk_filecoin::check_c1(&s.c1, Some(&s.identity)).unwrap();
        prove(&s.c1, &s.params, RNG_SEED)
    })
}

#[test]
fn the_pipelined_engine_proves_the_c1_as_the_serial_scheduler_does() {
    let s = sealed();
    let key = std::sync::Arc::new(s.params.load_proving_key(s.c1.proof_type).unwrap());
    let source = PorepSource::new(&s.c1, &key).unwrap();
    assert_eq!(source.num_partitions(), 1);
    // Same seeded randomness, drawn in bellperson's order: the same bytes.
    let job = Job::new(std::sync::Arc::new(source), key).seeded(RNG_SEED);
    let proof = common::engine_proof(job, 2);
    assert_eq!(proof, reference_proof(), "the engine's proof differs");
    let vk = s.params.load_verifying_key(s.c1.proof_type).unwrap();
    assert_eq!(
        verify(&s.c1, &proof, &vk, Some(&s.identity)).unwrap(),
        Verified::VerifySeal
    );

    // A source is consumed partition by partition: asking twice is an error.
    let key = s.params.load_proving_key(s.c1.proof_type).unwrap();
    let source = PorepSource::new(&s.c1, &key).unwrap();
    cuzk_groth16::prover::check_key_shape(&key, &source.shape()).unwrap();
    let witness = source.synthesize(0).unwrap();
    assert_eq!(
        witness.shape().b_input_density,
        source.shape().b_input_density
    );
    let again = source.synthesize(0).unwrap_err().to_string();
    assert!(again.contains("already synthesized"), "{again}");
}

#[test]
fn cuzk_proof_is_filecoin_valid_and_matches_bellperson() {
    let s = sealed();
    let rng_seed = RNG_SEED;
    eprintln!("proof randomness seed {rng_seed}");
    let proof = reference_proof().to_vec();
    assert_eq!(proof.len(), 192);

    // filecoin-proofs' verify_seal accepts it, and refuses it with one byte changed.
    let vk = s.params.load_verifying_key(s.c1.proof_type).unwrap();
    assert_eq!(
        verify(&s.c1, &proof, &vk, Some(&s.identity)).unwrap(),
        Verified::VerifySeal
    );
    assert_eq!(
        verify(&s.c1, &proof, &vk, None).unwrap(),
        Verified::ReplicaId
    );
    let o = &s.c1.output;
    for at in [0, 100, 191] {
        let mut bad = proof.clone();
        bad[at] ^= 0x01;
        let accepted = filecoin_proofs_api::seal::verify_seal(
            PROOF,
            o.comm_r,
            o.comm_d,
            s.identity.prover_id,
            SectorId::from(s.identity.sector_id),
            o.ticket,
            o.seed,
            &bad,
        )
        .unwrap_or(false);
        assert!(
            !accepted,
            "verify_seal accepted the proof with byte {at} changed"
        );
        assert!(matches!(
            verify(&s.c1, &bad, &vk, Some(&s.identity)),
            Err(Error::InvalidProof(_) | Error::Filecoin { .. })
        ));
    }

    // bellperson's prover, as seal_commit_phase2 calls it, on the same circuits,
    // with the parameters filecoin-proofs finds in its cache, and the same RNG.
    let public =
        filecoin_proofs::parameters::public_params::<SectorShape2KiB>(&s.c1.proof_type.config())
            .unwrap();
    let groth_params = <StackedCompound<SectorShape2KiB, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, SectorShape2KiB, DefaultPieceHasher>,
        _,
    >>::groth_params::<rand::rngs::OsRng>(None, &public)
    .unwrap();
    let circuits = partition_circuits::<SectorShape2KiB>(&s.c1)
        .unwrap()
        .into_iter()
        .map(|p| p.circuit)
        .collect();
    assert_eq!(
        proof,
        common::bellperson_proofs(circuits, &groth_params, rng_seed),
        "cuzk and bellperson differ for the same seed"
    );

    // filecoin-proofs found everything it needed and made nothing itself.
    assert_eq!(list(&s.dir), s.cache_files);
    let _: &groth16::VerifyingKey<Bls12> = &vk;
}

fn expect_refused(c1_json: &[u8], identity: Option<&SectorIdentity>, want: &str) -> Error {
    let err = match parse_c1(c1_json) {
        Err(e) => e,
        Ok(c1) => match cuzk_filecoin::check_c1(&c1, identity) {
            Err(e) => e,
            Ok(()) => panic!("accepted; wanted an error containing {want:?}"),
        },
    };
    let text = err.to_string();
    assert!(text.contains(want), "error {text:?} does not name {want:?}");
    err
}

fn edited(json: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(json).unwrap();
    edit(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn bump(v: &mut serde_json::Value, field: &str) {
    let byte = &mut v[field][0];
    *byte = (byte.as_u64().unwrap() ^ 1).into();
}

#[test]
fn broken_c1_is_refused_with_its_reason() {
    let s = sealed();
    let json = &s.c1_json;
    let id = Some(&s.identity);
    expect_refused(b"not json", id, "not JSON");
    expect_refused(b"{\"hello\": 1}", id, "not a commit phase 1 output");
    expect_refused(
        &edited(json, |v| bump(v, "comm_r")),
        id,
        "comm_r is not H(comm_c, comm_r_last)",
    );
    expect_refused(&edited(json, |v| bump(v, "comm_d")), None, "changed comm_d");
    expect_refused(&edited(json, |v| bump(v, "seed")), id, "changed seed");
    // Another sector's C1: the identity derives another replica id.
    let other = SectorIdentity::from_actor(ACTOR, SECTOR + 1);
    expect_refused(json, Some(&other), "belongs to another sector");
    let other_miner = SectorIdentity::from_actor(ACTOR + 1, SECTOR);
    expect_refused(json, Some(&other_miner), "belongs to another sector");
    // The proof type of another sector size.
    expect_refused(
        &edited(json, |v| {
            v["registered_proof"] = "StackedDrg8MiBV1_1".into()
        }),
        id,
        "wrong sector size",
    );
    // An interactive C1 declared non-interactive: its one partition is named.
    expect_refused(
        &edited(json, |v| {
            v["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into()
        }),
        id,
        "1 partitions of vanilla proofs, StackedDrg2KiBV1_2_Feat_NonInteractivePoRep has 13 \
         (StackedDrg2KiBV1_1 has 1: an interactive C1 declared non-interactive)",
    );
    // A partition with a challenge missing.
    expect_refused(
        &edited(json, |v| {
            v["vanilla_proofs"]["StackedDrg2KiBV1"][0]
                .as_array_mut()
                .unwrap()
                .pop();
        }),
        id,
        "partition 0 has 1 vanilla proofs (challenges), StackedDrg2KiBV1_1 has 2 per partition",
    );
    // Curio's wrapper: accepted as is; its SectorNum and SectorSize are checked.
    let curio = |num: u64, size: u64| cuzk_testkit::curio_wrapper(json, num, size);
    let wrapped = parse_c1(&curio(SECTOR, 2048)).unwrap();
    assert_eq!(wrapped.sector_num(), Some(SECTOR));
    assert_eq!(wrapped.output.comm_r, s.c1.output.comm_r);
    cuzk_filecoin::check_c1(&wrapped, id).unwrap();
    expect_refused(&curio(SECTOR + 1, 2048), id, "belongs to another sector");
    expect_refused(
        &curio(SECTOR, 8 << 20),
        id,
        "Curio's SectorSize says 8388608",
    );
}

#[test]
fn key_files_have_the_official_names() {
    let s = sealed();
    let pt = s.c1.proof_type;
    for name in [pt.params_file_name().unwrap(), pt.vk_file_name().unwrap()] {
        assert!(
            storage_proofs_core::parameter_cache::PARAMETERS.contains_key(&name),
            "{name} is not in the crates' parameters.json"
        );
        assert!(s.cache_files.contains(&name));
    }
}

#[test]
fn missing_and_truncated_keys_name_the_file_and_the_fix() {
    let s = sealed();
    let pt = s.c1.proof_type;
    let empty = tempfile::tempdir().unwrap();
    let dir = ParamsDir::new(empty.path());
    let text = dir.check(pt).unwrap_err().to_string();
    let name = pt.params_file_name().unwrap();
    for want in [name.as_str(), "looked for it in", "cargo xtask fixtures"] {
        assert!(text.contains(want), "{text:?} lacks {want:?}");
    }
    // A truncated copy of the real key.
    let real = s.params.params_path(pt).unwrap();
    let mut prefix = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(&real).unwrap(), 10 << 20),
        &mut prefix,
    )
    .unwrap();
    std::fs::write(empty.path().join(&name), &prefix).unwrap();
    std::fs::copy(
        s.params.vk_path(pt).unwrap(),
        empty.path().join(pt.vk_file_name().unwrap()),
    )
    .unwrap();
    let text = dir.check(pt).unwrap_err().to_string();
    assert!(
        text.contains(&name) && text.contains("cargo xtask fixtures"),
        "{text}"
    );
}

#[test]
fn synthetic_porep_c1_is_proved_and_verified() {
    let s = sealed();
    let proof_type =
        ProofType::new(RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep).unwrap();
    // One circuit per sector size: the synthetic type uses the same key files.
    assert_eq!(
        proof_type.params_file_name().unwrap(),
        s.c1.proof_type.params_file_name().unwrap()
    );
    let work = tempfile::tempdir().unwrap();
    let seed = 0x5e7_u64;
    eprintln!("sealing a synthetic-PoRep 2 KiB sector, seed {seed:#x}");
    let identity = SectorIdentity::from_actor(ACTOR, SECTOR + 100);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let sealed =
        cuzk_filecoin::sample::seal_random_sector(proof_type, work.path(), &identity, &mut rng)
            .unwrap();
    let c1 = parse_c1(&serde_json::to_vec(&sealed).unwrap()).unwrap();
    assert_eq!(c1.proof_type, proof_type);
    cuzk_filecoin::check_c1(&c1, Some(&identity)).unwrap();
    let proof = prove(&c1, &s.params, 99);
    let vk = s.params.load_verifying_key(proof_type).unwrap();
    assert_eq!(
        verify(&c1, &proof, &vk, Some(&identity)).unwrap(),
        Verified::VerifySeal
    );
}

#[test]
fn a_synthetic_sector_is_proved_and_verify_seal_accepts_it() {
    use cuzk_filecoin::synthetic::SyntheticSector;
    let s = sealed();
    let identity = SectorIdentity::from_actor(ACTOR, SECTOR + 200);
    let made = SyntheticSector {
        proof_type: s.c1.proof_type,
        identity,
        seed: 0x5717,
    }
    .generate()
    .unwrap();
    // Through its JSON, as `cuzk porep-c2` reads it.
    let c1 = parse_c1(&serde_json::to_vec(&made.output).unwrap()).unwrap();
    cuzk_filecoin::check_c1(&c1, Some(&identity)).unwrap();
    let proof = prove(&c1, &s.params, 0x5717);
    let vk = s.params.load_verifying_key(c1.proof_type).unwrap();
    assert_eq!(
        verify(&c1, &proof, &vk, Some(&identity)).unwrap(),
        Verified::VerifySeal
    );
    let mut bad = proof.clone();
    bad[150] ^= 0x01;
    assert!(verify(&c1, &bad, &vk, Some(&identity)).is_err());
}

/// A really sealed C1 and a synthetic one go through the same checks: a
/// changed path element of either is refused before synthesis, naming the
/// partition and the challenge.
#[test]
fn a_changed_path_element_is_refused_naming_the_challenge() {
    use cuzk_filecoin::synthetic::SyntheticSector;
    let s = sealed();
    let synthetic = SyntheticSector {
        proof_type: s.c1.proof_type,
        identity: s.identity,
        seed: 3,
    }
    .generate()
    .unwrap();
    for (name, json) in [
        ("sealed", s.c1_json.clone()),
        ("synthetic", serde_json::to_vec(&synthetic.output).unwrap()),
    ] {
        cuzk_filecoin::check_c1(&parse_c1(&json).unwrap(), Some(&s.identity)).unwrap();
        let bad = edited(&json, |v| {
            let hash = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["comm_r_last_proof"]
                ["data"]["Single"]["path"]["path"][1]["hashes"][5];
            let byte = &mut hash[0];
            *byte = (byte.as_u64().unwrap() ^ 1).into();
        });
        let err = expect_refused(&bad, Some(&s.identity), "partition 0, challenge 1");
        assert!(err.to_string().contains("comm_r_last"), "{name}: {err}");
    }
}

/// A non-interactive 2 KiB sector sealed by filecoin-proofs (13 partitions
/// of 2 challenges), once per test process.
fn sealed_non_interactive() -> &'static (Vec<u8>, SectorIdentity) {
    static NI: OnceLock<(Vec<u8>, SectorIdentity)> = OnceLock::new();
    NI.get_or_init(|| {
        // The settings (parameter and parent caches) first.
        let _ = sealed();
        let proof_type = ProofType::new(NI_PROOF).unwrap();
        let work = tempfile::tempdir().unwrap();
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR + 300);
        let mut rng = ChaCha20Rng::seed_from_u64(0x41);
        let c1 =
            cuzk_filecoin::sample::seal_random_sector(proof_type, work.path(), &identity, &mut rng)
                .unwrap();
        (serde_json::to_vec(&c1).unwrap(), identity)
    })
}

const NI_PROOF: RegisteredSealProof =
    RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;

/// SnarkPack v2 straight from bellperson, as docs/ni-porep.md says
/// filecoin-proofs calls it: the proofs padded to a power of two with the
/// last one, the SRS file specialized for that count, the transcript input
/// given.
fn snarkpack(params: &ParamsDir, proofs: &[u8], transcript: [u8; 32]) -> Vec<u8> {
    use bellperson::groth16::aggregate::{aggregate_proofs, AggregateVersion, GenericSRS};
    let mut ps: Vec<groth16::Proof<Bls12>> = proofs
        .chunks(192)
        .map(|c| groth16::Proof::read(c).unwrap())
        .collect();
    let n = ps.len().max(2).next_power_of_two();
    while ps.len() < n {
        ps.push(ps.last().unwrap().clone());
    }
    let bytes = std::fs::read(params.srs_path()).unwrap();
    let srs = GenericSRS::<Bls12>::read(&mut &bytes[..]).unwrap();
    let (pk, _) = srs.specialize(n);
    let agg = aggregate_proofs(&pk, &transcript, &ps, AggregateVersion::V2).unwrap();
    let mut out = Vec::new();
    agg.write(&mut out).unwrap();
    out
}

fn sha256(parts: &[&[u8; 32]]) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The aggregates are filecoin-proofs' bytes and follow its rules (padding,
/// transcript input: seed and comm_r interactive, comm_r alone
/// non-interactive), checked against bellperson's SnarkPack called
/// directly. The proofs need not be valid to be aggregated, so the
/// non-interactive sector's 13 "partition proofs" are copies of the
/// interactive proof (no NI proving here: `cuzk porep-c2`'s test proves
/// real ones); the interactive aggregates are of a real proof and verify.
#[test]
fn aggregates_are_filecoin_proofs_bytes_and_bad_sets_are_refused() {
    use cuzk_filecoin::{aggregate, seal_proof, verify_aggregate, CommitProofs};
    let s = sealed();
    let proof = reference_proof().to_vec();

    // Interactive, one sector: 1 proof padded to 2, transcript H(seed, comm_r).
    let o = &s.c1.output;
    let one = CommitProofs::new(&s.c1, proof.clone()).unwrap();
    let ours = aggregate(std::slice::from_ref(&one)).unwrap();
    assert_eq!(
        ours,
        snarkpack(&s.params, &proof, sha256(&[&o.seed, &o.comm_r]))
    );
    verify_aggregate(std::slice::from_ref(&one), &ours).unwrap();
    // The same sector twice: 2 proofs, transcript H(seed, comm_r, seed, comm_r).
    let two = [one.clone(), one.clone()];
    let ours2 = aggregate(&two).unwrap();
    assert_eq!(
        ours2,
        snarkpack(
            &s.params,
            &[proof.clone(), proof.clone()].concat(),
            sha256(&[&o.seed, &o.comm_r, &o.seed, &o.comm_r])
        )
    );
    verify_aggregate(&two, &ours2).unwrap();
    // A changed byte anywhere is refused (not decoding, or not verifying).
    for at in [0, 600, ours2.len() / 2, ours2.len() - 1] {
        let mut bad = ours2.clone();
        bad[at] ^= 0x01;
        assert!(
            verify_aggregate(&two, &bad).is_err(),
            "byte {at} of {} changed and still accepted",
            ours2.len()
        );
    }
    // The aggregate of one sector does not verify as another count.
    let err = verify_aggregate(&two, &ours).unwrap_err().to_string();
    assert!(err.contains("does not verify"), "{err}");

    // Non-interactive: 13 proofs padded to 16, transcript H(comm_r) alone.
    let (ni_json, ni_identity) = sealed_non_interactive();
    let ni = parse_c1(ni_json).unwrap();
    assert_eq!(ni.proof_type.partitions(), 13);
    cuzk_filecoin::check_c1(&ni, Some(ni_identity)).unwrap();
    let copies = proof.repeat(13);
    let ours = seal_proof(&ni, copies.clone()).unwrap();
    assert_eq!(
        ours,
        snarkpack(&s.params, &copies, sha256(&[&ni.output.comm_r]))
    );
    let theirs = filecoin_proofs_api::seal::aggregate_seal_commit_proofs(
        NI_PROOF,
        filecoin_proofs_api::RegisteredAggregationProof::SnarkPackV2,
        &[ni.output.comm_r],
        &[ni.output.seed],
        &[filecoin_proofs_api::seal::SealCommitPhase2Output {
            proof: copies.clone(),
        }],
    )
    .unwrap();
    assert_eq!(ours, theirs);
    // Copies of another circuit's proof: well formed, and refused by verify_seal.
    let vk = s.params.load_verifying_key(ni.proof_type).unwrap();
    assert!(verify(&ni, &ours, &vk, Some(ni_identity)).is_err());

    // Sets that cannot be aggregated, each named.
    let ni_proofs = CommitProofs::new(&ni, copies).unwrap();
    let refused = |sectors: &[CommitProofs], want: &str| {
        let err = aggregate(sectors).unwrap_err().to_string();
        assert!(err.contains(want), "{err:?} lacks {want:?}");
    };
    refused(
        &[one.clone(), ni_proofs.clone()],
        "sector 1 is StackedDrg2KiBV1_2_Feat_NonInteractivePoRep but sector 0 is \
         StackedDrg2KiBV1_1",
    );
    refused(
        &vec![ni_proofs.clone(); 66],
        "66 sectors; an aggregate takes 1 to 65",
    );
    refused(&[], "no sectors");
    let short = CommitProofs::new(&ni, proof.repeat(12))
        .unwrap_err()
        .to_string();
    assert!(short.contains("2304 bytes of partition proofs"), "{short}");
    // An NI C2 output (already an aggregate) is not partition proofs.
    let agg = CommitProofs::new(&ni, ours).unwrap_err().to_string();
    assert!(agg.contains("already an aggregate"), "{agg}");
    // And an interactive C2 output is not aggregated on its own.
    assert!(seal_proof(&s.c1, proof).is_err());
}

/// A synthetic non-interactive sector: every node labelled, challenges from
/// its comm_r; cuzk's check and storage-proofs' vanilla verification accept it.
#[test]
fn a_synthetic_non_interactive_sector_passes_the_vanilla_checks() {
    use cuzk_filecoin::synthetic::SyntheticSector;
    let identity = SectorIdentity::from_actor(ACTOR, SECTOR + 400);
    let made = SyntheticSector {
        proof_type: ProofType::new(NI_PROOF).unwrap(),
        identity,
        seed: 0x41,
    }
    .generate()
    .unwrap();
    assert_eq!(made.challenges, 26);
    assert_eq!(made.labelled_nodes, 63);
    let c1 = parse_c1(&serde_json::to_vec(&made.output).unwrap()).unwrap();
    cuzk_filecoin::check_c1(&c1, Some(&identity)).unwrap();
    // Declared interactive, its 13 partitions are named.
    let json = edited(&serde_json::to_vec(&made.output).unwrap(), |v| {
        v["registered_proof"] = "StackedDrg2KiBV1_1".into()
    });
    expect_refused(
        &json,
        Some(&identity),
        "(StackedDrg2KiBV1_2_Feat_NonInteractivePoRep has 13: a non-interactive C1 declared \
         interactive)",
    );
    // 32 GiB would be a sealing: refused with the sizes that are made.
    let err = SyntheticSector {
        proof_type: ProofType::new(
            RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        )
        .unwrap(),
        identity,
        seed: 1,
    }
    .generate()
    .unwrap_err()
    .to_string();
    assert!(err.contains("labels every node"), "{err}");
}
