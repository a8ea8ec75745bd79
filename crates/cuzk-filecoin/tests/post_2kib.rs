//! WinningPoSt and WindowPoSt end to end on a 2 KiB sector: one sector of
//! random data sealed by filecoin-proofs in a temporary directory; its
//! vanilla proofs made by filecoin-proofs-api (`generate_fallback_sector_challenges`,
//! `generate_single_vanilla_proof`), bincode-packed as Curio sends them;
//! test keys for both PoSt circuits generated from a seed into a parameter
//! cache under their official names; the proofs made by cuzk, checked with
//! the crates' `verify_winning_post` / `verify_window_post`, compared byte
//! for byte with bellperson's prover on the circuit the crates build, and
//! bad requests refused with their reason.
//!
//! `generate_winning_post_with_vanilla` and
//! `generate_single_window_post_with_vanilla` draw r and s from `OsRng`
//! (storage-proofs-core's `CompoundProof::circuit_proofs`), so their output
//! cannot be reproduced: the comparison is with the bellperson call they
//! make (`create_random_proof_batch_in_priority`, PoSt configs being
//! priority ones), on the circuit they build, with the parameters they load
//! from the cache, and a seeded RNG.
//!
//! A PoSt binds a sector number to a comm_r only through its challenges,
//! so the one sealed replica stands for the three sectors of the WindowPoSt
//! deadline (two partitions of 2 sectors at 2 KiB, the second one short,
//! padded as the crates pad it).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bellperson::groth16;
use cuzk_filecoin::precompile::{precompile, PrecompiledError};
use cuzk_filecoin::sample::{post_vanilla_proofs, seal_sample_sector, SampleSector};
use cuzk_filecoin::{
    verify_post, AuxPool, CircuitSynthesis, Error, ParamsDir, PostRequest, PostSource, PostType,
    PostVerified, PrecompiledCircuit, ProofType, SectorIdentity,
};
use cuzk_pipeline::{EngineConfig, Job};
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{
    window_post_public_params, window_post_setup_params, winning_post_public_params,
    winning_post_setup_params,
};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs,
    FallbackPoStSectorProof, SectorShape2KiB,
};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredSealProof, SectorId};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const ACTOR: u64 = 1000;
const SECTOR: u64 = 7;
/// The sector numbers of the WindowPoSt deadline (all backed by the one replica).
const DEADLINE: [u64; 3] = [7, 11, 12];

struct Fixture {
    params: ParamsDir,
    sector: SampleSector,
    prover_id: [u8; 32],
    winning: PostType,
    window: PostType,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let seal = ProofType::new(SEAL).unwrap();
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        let (winning, window) = cache.post_keys(seal);
        let seed = 0x5eed_9057_u64;
        eprintln!("sealing a 2 KiB sector of random data, seed {seed:#x}");
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR);
        let sector = seal_sample_sector(seal, &cache.work, &identity, &mut rng).unwrap();
        Fixture {
            params: cache.params,
            sector,
            prover_id: identity.prover_id,
            winning,
            window,
        }
    })
}

/// Chain randomness: 32 bytes, a field element (top two bits clear).
fn randomness(seed: u64) -> [u8; 32] {
    let mut r = [0u8; 32];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut r);
    r[31] &= 0x3f;
    r
}

const RANDOMNESS_SEED: u64 = 0xc4a1_2026;
/// Seed of the proofs' r and s.
const RNG_SEED: u64 = 20261201;

fn winning_request() -> PostRequest {
    let f = fixture();
    let r = randomness(RANDOMNESS_SEED);
    let vanilla = post_vanilla_proofs(f.winning, &r, f.prover_id, &[(SECTOR, &f.sector)]).unwrap();
    PostRequest::winning(f.winning, &r, f.prover_id, vanilla).unwrap()
}

/// The deadline's vanilla proofs, in sector order.
fn deadline_proofs() -> &'static Vec<Vec<u8>> {
    static PROOFS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    PROOFS.get_or_init(|| {
        let f = fixture();
        let sectors: Vec<_> = DEADLINE.iter().map(|&id| (id, &f.sector)).collect();
        post_vanilla_proofs(
            f.window,
            &randomness(RANDOMNESS_SEED),
            f.prover_id,
            &sectors,
        )
        .unwrap()
    })
}

fn window_request(partition: usize) -> PostRequest {
    let f = fixture();
    let per = f.window.sector_count();
    let all = deadline_proofs();
    let of_partition = all[partition * per..((partition + 1) * per).min(all.len())].to_vec();
    PostRequest::window(
        f.window,
        &randomness(RANDOMNESS_SEED),
        f.prover_id,
        of_partition,
        partition,
    )
    .unwrap()
}

fn prove(request: &PostRequest) -> Vec<u8> {
    prove_as(request, &CircuitSynthesis::Full)
}

/// `request` proved by the serial scheduler on the CPU, seeded with `RNG_SEED`.
fn prove_as(request: &PostRequest, synthesis: &CircuitSynthesis) -> Vec<u8> {
    let f = fixture();
    let key = Arc::new(f.params.load_proving_key(request.post_type()).unwrap());
    let (proof, report) = serial_proof(request, &key, synthesis).unwrap();
    eprintln!(
        "{}: {} constraints, {} inputs, {} aux, B-input density {}",
        request.post_type().name(),
        report.shape.num_constraints,
        report.shape.num_inputs,
        report.shape.num_aux,
        report.shape.b_input_density
    );
    // The key's shape (what the engine reserves) is the witness's.
    let source = PostSource::new(request, &key).unwrap();
    use cuzk_pipeline::PartitionSource;
    assert_eq!(report.shape.b_input_density, source.shape().b_input_density);
    cuzk_groth16::prover::check_key_shape(&key, &report.shape).unwrap();
    proof
}

/// `request` proved by the serial scheduler on the CPU, seeded with
/// `RNG_SEED`: its proof and its partition's report. A request the source
/// refuses (vanilla proofs, randomness) is that error.
fn serial_proof(
    request: &PostRequest,
    key: &Arc<cuzk_groth16::ProvingKey>,
    synthesis: &CircuitSynthesis,
) -> Result<(Vec<u8>, cuzk_pipeline::PartitionReport), Error> {
    let source = PostSource::with_synthesis(request, key, synthesis)?;
    let job = Job::new(Arc::new(source), Arc::clone(key)).seeded(RNG_SEED);
    let mut out = cuzk_sched_serial::prove_one(EngineConfig::default(), job)?;
    Ok((out.proofs[0].to_bytes().to_vec(), out.partitions.remove(0)))
}

fn groth_params(post_type: PostType) -> groth16::MappedParameters<blstrs::Bls12> {
    let config = post_type.config();
    let public = match post_type.kind() {
        cuzk_filecoin::PostKind::Winning => {
            winning_post_public_params::<SectorShape2KiB>(&config).unwrap()
        }
        cuzk_filecoin::PostKind::Window => {
            window_post_public_params::<SectorShape2KiB>(&config).unwrap()
        }
    };
    <FallbackPoStCompound<SectorShape2KiB> as CompoundProof<
        FallbackPoSt<'_, SectorShape2KiB>,
        _,
    >>::groth_params::<rand::rngs::OsRng>(None, &public)
    .unwrap()
}

/// bellperson's proof, seeded, of the circuit the crates' prover builds
/// from `request` (as `generate_*_with_vanilla` does, step by step).
fn bellperson_proof(request: &PostRequest) -> Vec<u8> {
    let pt = request.post_type();
    let config = pt.config();
    let proofs: Vec<FallbackPoStSectorProof<SectorShape2KiB>> = request
        .vanilla_proofs()
        .iter()
        .map(|b| bincode::deserialize(b).unwrap())
        .collect();
    type D = <<SectorShape2KiB as filecoin_proofs::MerkleTreeTrait>::Hasher as Hasher>::Domain;
    let randomness: D = as_safe_commitment(request.randomness(), "randomness").unwrap();
    let prover_id: D = as_safe_commitment(request.prover_id(), "prover_id").unwrap();
    let winning = pt.kind() == cuzk_filecoin::PostKind::Winning;
    let vanilla_params = if winning {
        winning_post_setup_params(&config).unwrap()
    } else {
        window_post_setup_params(&config)
    };
    let pub_params = FallbackPoStCompound::<SectorShape2KiB>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions: None,
        priority: config.priority,
    })
    .unwrap();
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: (!winning).then_some(request.partition_index()),
    };
    let partition = if winning {
        partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_inputs, 1, &proofs)
            .unwrap()
            .remove(0)
    } else {
        single_partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_inputs, &proofs)
            .unwrap()
    };
    let circuit = <FallbackPoStCompound<SectorShape2KiB> as CompoundProof<_, _>>::circuit(
        &pub_inputs,
        Default::default(),
        &partition,
        &pub_params.vanilla_params,
        Some(0),
    )
    .unwrap();
    let params = groth_params(pt);
    let mut rng = ChaCha20Rng::seed_from_u64(RNG_SEED);
    let theirs =
        groth16::create_random_proof_batch_in_priority(vec![circuit], &params, &mut rng).unwrap();
    common::proof_bytes(&theirs)
}

fn winning_accepts(request: &PostRequest, proof: &[u8]) -> bool {
    let f = fixture();
    let replicas: BTreeMap<_, _> = [(
        SectorId::from(SECTOR),
        PublicReplicaInfo::new(f.winning.registered(), f.sector.c1.comm_r),
    )]
    .into();
    filecoin_proofs_api::post::verify_winning_post(
        request.randomness(),
        proof,
        &replicas,
        f.prover_id,
    )
    .unwrap_or(false)
}

#[test]
fn winning_post_is_filecoin_valid_and_matches_bellperson() {
    let f = fixture();
    eprintln!("randomness seed {RANDOMNESS_SEED:#x}, proof randomness seed {RNG_SEED}");
    let request = winning_request();
    let proof = prove(&request);
    assert_eq!(proof.len(), 192);
    let vk = f.params.load_verifying_key(f.winning).unwrap();
    assert_eq!(
        verify_post(&request, &proof, &vk).unwrap(),
        PostVerified::FilecoinApi
    );
    assert!(winning_accepts(&request, &proof));
    for at in [0, 96, 191] {
        let mut bad = proof.clone();
        bad[at] ^= 0x01;
        assert!(
            !winning_accepts(&request, &bad),
            "verify_winning_post accepted the proof with byte {at} changed"
        );
        assert!(verify_post(&request, &bad, &vk).is_err());
    }
    // Another randomness: the same proof proves nothing for it.
    let other = PostRequest::winning(
        f.winning,
        &randomness(RANDOMNESS_SEED + 1),
        f.prover_id,
        request.vanilla_proofs().to_vec(),
    )
    .unwrap();
    assert!(!winning_accepts(&other, &proof));

    assert_eq!(
        proof,
        bellperson_proof(&request),
        "cuzk and bellperson differ for the same seed"
    );
}

#[test]
fn the_pipelined_engine_proves_a_post_as_the_serial_scheduler_does() {
    let f = fixture();
    let request = window_request(1);
    let key = Arc::new(f.params.load_proving_key(f.window).unwrap());
    let source = PostSource::new(&request, &key).unwrap();
    let proof = common::engine_proof(Job::new(Arc::new(source), key).seeded(RNG_SEED), 1);
    assert_eq!(proof, prove(&request), "the engine's proof differs");
}

#[test]
fn window_post_partitions_are_filecoin_valid_and_match_bellperson() {
    let f = fixture();
    eprintln!("randomness seed {RANDOMNESS_SEED:#x}, proof randomness seed {RNG_SEED}");
    assert_eq!(f.window.sector_count(), 2, "2 KiB WindowPoSt partitions");
    let vk = f.params.load_verifying_key(f.window).unwrap();
    let mut merged = Vec::new();
    for partition in 0..2 {
        let request = window_request(partition);
        let proof = prove(&request);
        assert_eq!(
            verify_post(&request, &proof, &vk).unwrap(),
            PostVerified::FilecoinApi,
            "partition {partition}"
        );
        assert_eq!(
            proof,
            bellperson_proof(&request),
            "partition {partition}: cuzk and bellperson differ for the same seed"
        );
        merged.extend_from_slice(&proof);
    }
    // The two partitions together are the deadline's WindowPoSt, as the
    // chain checks it: all three sectors, two partitions.
    let replicas: BTreeMap<_, _> = DEADLINE
        .iter()
        .map(|&id| {
            (
                SectorId::from(id),
                PublicReplicaInfo::new(f.window.registered(), f.sector.c1.comm_r),
            )
        })
        .collect();
    let verify = |proof: &[u8]| {
        filecoin_proofs_api::post::verify_window_post(
            &randomness(RANDOMNESS_SEED),
            &[(f.window.registered(), proof)],
            &replicas,
            f.prover_id,
        )
        .unwrap_or(false)
    };
    assert!(verify(&merged), "verify_window_post refused the deadline");
    for at in [0, 191, 192 + 100] {
        let mut bad = merged.clone();
        bad[at] ^= 0x01;
        assert!(!verify(&bad), "accepted with byte {at} changed");
    }

    // Sectors out of order: proved as the crates prove them, verified on
    // their order (the sorted-map verifier cannot check it).
    let all = deadline_proofs();
    let reversed = PostRequest::window(
        f.window,
        &randomness(RANDOMNESS_SEED),
        f.prover_id,
        vec![all[1].clone(), all[0].clone()],
        0,
    )
    .unwrap();
    let proof = prove(&reversed);
    assert_eq!(
        verify_post(&reversed, &proof, &vk).unwrap(),
        PostVerified::Compound
    );
}

/// Asserts `result` is an error whose message or one of its causes names `want`.
fn refused(result: Result<impl std::fmt::Debug, Error>, want: &str) {
    let text = match result {
        Ok(v) => panic!("accepted ({v:?}); wanted an error naming {want:?}"),
        Err(e) => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            text
        }
    };
    assert!(text.contains(want), "error {text:?} does not name {want:?}");
}

#[test]
fn bad_post_requests_are_refused_with_their_reason() {
    let f = fixture();
    let r = randomness(RANDOMNESS_SEED);
    let key = Arc::new(f.params.load_proving_key(f.window).unwrap());
    let winning = winning_request();
    let all = deadline_proofs();
    let prove_window = |proofs: Vec<Vec<u8>>, randomness: &[u8; 32]| {
        let req = PostRequest::window(f.window, randomness, f.prover_id, proofs, 0)?;
        serial_proof(&req, &key, &CircuitSynthesis::Full).map(|(p, _)| p)
    };

    // Counts.
    refused(
        PostRequest::winning(f.winning, &r, f.prover_id, all[..2].to_vec()),
        "2 vanilla proofs for StackedDrgWinning2KiBV1: it proves exactly 1 sector",
    );
    refused(
        PostRequest::window(f.window, &r, f.prover_id, all.clone(), 0),
        "3 vanilla proofs for one StackedDrgWindow2KiBV1_2 partition: it holds 1 to 2",
    );
    refused(
        PostRequest::window(f.window, &r, f.prover_id, Vec::new(), 0),
        "0 vanilla proofs",
    );
    // Randomness.
    refused(
        PostRequest::winning(
            f.winning,
            &r[..31],
            f.prover_id,
            winning.vanilla_proofs().to_vec(),
        ),
        "the randomness is 31 bytes; it must be 32",
    );
    let mut not_a_field_element = r;
    not_a_field_element[31] = 0xff;
    refused(
        prove_window(all[..2].to_vec(), &not_a_field_element),
        "the randomness is not a field element",
    );
    // Kinds.
    refused(
        PostRequest::window(
            f.winning,
            &r,
            f.prover_id,
            winning.vanilla_proofs().to_vec(),
            0,
        ),
        "StackedDrgWinning2KiBV1 is a WinningPoSt proof type",
    );
    refused(
        PostRequest::winning(f.window, &r, f.prover_id, all[..1].to_vec()),
        "WinningPoSt request refused: StackedDrgWindow2KiBV1_2 is a WindowPoSt proof type",
    );
    refused(PostType::from_name("StackedDrgWindow2KiBV1"), "before V1_2");
    refused(
        PostType::from_name("StackedDrgWindow4KiBV1_2"),
        "not a registered PoSt",
    );
    // A winning sector proof (66 challenges) in a window partition.
    refused(
        prove_window(winning.vanilla_proofs().to_vec(), &r),
        "holds 1 sector proof(s) with 66 inclusion proof(s); a StackedDrgWindow2KiBV1_2 sector proof is one with 10",
    );
    // Encoding.
    refused(
        prove_window(vec![b"not bincode".to_vec()], &r),
        "not a bincode FallbackPoStSectorProof of a 2KiB sector",
    );
    let mut trailing = all[0].clone();
    trailing.extend_from_slice(&[0, 0, 0]);
    refused(
        prove_window(vec![trailing], &r),
        "has 3 bytes after its FallbackPoStSectorProof",
    );
    refused(
        prove_window(vec![all[0].clone(), all[0].clone()], &r),
        "which an earlier one already proves",
    );
    // Vanilla proofs of other challenges (another randomness).
    refused(
        prove_window(all[..2].to_vec(), &randomness(RANDOMNESS_SEED + 1)),
        "the vanilla proofs do not prove the challenges",
    );
}

#[test]
fn post_types_map_from_seal_types() {
    for seal in ProofType::ALL {
        let Ok(pt) = ProofType::new(seal) else {
            continue;
        };
        let winning = PostType::winning_for(pt);
        let window = PostType::window_for(pt);
        assert_eq!(winning.sector_size(), pt.sector_size());
        assert_eq!(window.sector_size(), pt.sector_size());
        assert_eq!(winning.kind(), cuzk_filecoin::PostKind::Winning);
        assert!(window.name().ends_with("V1_2"), "{}", window.name());
        assert_eq!(winning.sector_count(), 1);
        assert_eq!(PostType::from_name(&window.name()).unwrap(), window);
    }
}

#[test]
fn synthetic_vanilla_proofs_prove_into_filecoin_valid_posts() {
    use cuzk_filecoin::synthetic_post::SyntheticPost;
    let f = fixture();
    let r = randomness(RANDOMNESS_SEED + 7);
    for (pt, sectors) in [(f.winning, vec![5]), (f.window, vec![5, 9])] {
        let made = SyntheticPost {
            post_type: pt,
            randomness: r,
            prover_id: f.prover_id,
            sectors,
            seed: 3,
        }
        .generate()
        .unwrap();
        let request = match pt.kind() {
            cuzk_filecoin::PostKind::Winning => {
                PostRequest::winning(pt, &r, f.prover_id, made.vanilla_proofs)
            }
            cuzk_filecoin::PostKind::Window => {
                PostRequest::window(pt, &r, f.prover_id, made.vanilla_proofs, 0)
            }
        }
        .unwrap();
        let proof = prove(&request);
        let vk = f.params.load_verifying_key(pt).unwrap();
        assert_eq!(
            verify_post(&request, &proof, &vk).unwrap(),
            PostVerified::FilecoinApi,
            "{}",
            pt.name()
        );
        let mut bad = proof.clone();
        bad[50] ^= 1;
        assert!(verify_post(&request, &bad, &vk).is_err(), "{}", pt.name());
    }
}

/// Pre-compiled PoSt: each circuit recorded from its blank circuit, the
/// witness alone synthesized (cuzk's native replay, sectors on rayon; a
/// witness that did not fit would fall back to full synthesis, whose a, b,
/// c are not deferred) and a, b, c evaluated from the recording; the proofs byte-identical to the
/// full synthesis's, the short window partition (padded) included. A key
/// made from the recording is the key made from the blank circuit; a
/// recording of one PoSt offered for the other is refused, naming it.
#[test]
fn precompiled_posts_are_the_full_synthesis_proofs() {
    use cuzk_pipeline::PartitionSource;
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let recording = |pt: PostType| {
        let path = dir.path().join(format!("{}.r1cs", pt.name()));
        let made = precompile(pt, &path).unwrap();
        let key = f.params.load_proving_key(pt).unwrap();
        let pre = PrecompiledCircuit::open(&path, pt, Some(&key)).unwrap();
        assert_eq!(made.shape, *pre.shape(), "{}", pt.name());
        (path, CircuitSynthesis::Precompiled(Arc::new(pre)))
    };
    let (winning_file, winning) = recording(f.winning);
    let (_, window) = recording(f.window);

    for (request, synthesis) in [
        (winning_request(), &winning),
        (window_request(0), &window),
        (window_request(1), &window),
    ] {
        let name = request.post_type().name();
        let key = f.params.load_proving_key(request.post_type()).unwrap();
        // The pre-compiled path ran: the witness leaves a, b, c to the prover.
        let source = PostSource::with_synthesis(&request, &key, synthesis).unwrap();
        assert!(source.defers_abc(), "{name}");
        let witness = source.synthesize(0).unwrap();
        assert!(
            witness.deferred.is_some() && !witness.abc_on_host(),
            "{name}"
        );
        // It holds no more than the engine reserves for it (presized from the
        // recorded shape, not grown by doubling).
        let reserved = cuzk_pipeline::PartitionFootprint::of_witness(&source.shape(), false, 0);
        let held = cuzk_pipeline::witness_bytes(&witness);
        assert!(
            held <= reserved.witness + 24,
            "{name}: {held} B held, {} reserved",
            reserved.witness
        );
        let full = prove(&request);
        assert_eq!(prove_as(&request, synthesis), full, "{name}: proofs differ");
        let vk = f.params.load_verifying_key(request.post_type()).unwrap();
        verify_post(&request, &full, &vk).unwrap();
    }

    // Pooled: the native witness takes its aux vector from the pool and the
    // engine gives it back after the proof; the proofs are the same bytes.
    let key = Arc::new(f.params.load_proving_key(f.window).unwrap());
    let pool = Arc::new(AuxPool::new(1 << 30));
    let request = window_request(0);
    let source = PostSource::pooled(&request, &key, &window, Arc::clone(&pool)).unwrap();
    let witness = source.synthesize(0).unwrap();
    assert_eq!(
        pool.held_bytes(),
        0,
        "nothing held before the first witness"
    );
    let aux_bytes = (witness.aux_assignment.capacity() * 32) as u64;
    assert_eq!(witness.aux_assignment.len(), source.shape().num_aux);
    source.recycle(0, witness);
    assert_eq!(
        pool.held_bytes(),
        aux_bytes,
        "the witness's vector came back"
    );
    for partition in [0, 1] {
        let request = window_request(partition);
        let source = PostSource::pooled(&request, &key, &window, Arc::clone(&pool)).unwrap();
        let job = Job::new(Arc::new(source), Arc::clone(&key)).seeded(RNG_SEED);
        let out = cuzk_sched_serial::prove_one(EngineConfig::default(), job).unwrap();
        assert_eq!(
            out.proofs[0].to_bytes().to_vec(),
            prove(&request),
            "pooled partition {partition}: proofs differ"
        );
        // Taken for the witness and given back after the proof: one vector.
        assert_eq!(pool.held_bytes(), aux_bytes, "partition {partition}");
    }
    // Synthesized in full, the pool is neither taken from nor given to.
    let full_source =
        PostSource::pooled(&request, &key, &CircuitSynthesis::Full, Arc::clone(&pool)).unwrap();
    let witness = full_source.synthesize(0).unwrap();
    full_source.recycle(0, witness);
    assert_eq!(pool.held_bytes(), aux_bytes);

    // The key from the recording is the key from the blank circuit.
    let from_recording = tempfile::tempdir().unwrap();
    let made = ParamsDir::new(from_recording.path())
        .generate_test_keys_from_recording(
            f.winning,
            cuzk_testkit::KEY_SEED,
            &winning_file,
            &cuzk_groth16::setup::CpuFixedBase,
        )
        .unwrap();
    assert_eq!(
        std::fs::read(&made.params).unwrap(),
        std::fs::read(f.params.params_path(f.winning).unwrap()).unwrap(),
        "the key from the recording differs"
    );

    // WinningPoSt's recording offered for the WindowPoSt circuit.
    let e = PrecompiledCircuit::open(&winning_file, f.window, None).unwrap_err();
    let message = e.to_string();
    assert!(
        matches!(e, Error::Precompiled(PrecompiledError::OtherCircuit { .. })),
        "{message}"
    );
    assert!(
        message.contains(&f.winning.name()) && message.contains(&f.window.name()),
        "{message}"
    );
    // The prover's view: refused, said why, synthesized in full.
    let (synthesis, why) =
        CircuitSynthesis::precompiled(f.window, &f.params, Some(&winning_file), None);
    assert!(matches!(synthesis, CircuitSynthesis::Full));
    assert!(why.unwrap().to_string().contains(".r1cs"));
}

/// The native PoSt witness (cuzk's replay of the circuit's allocations,
/// its Poseidon hashes and inclusion paths in plain code) is the gadgets'
/// witness-only run, value for value: WinningPoSt and both WindowPoSt
/// partitions of the sealed sector (the second one short, padded), and
/// synthetic vanilla proofs of fresh random sectors for the other tree
/// shapes (8 MiB: 8-4-0, a short WindowPoSt partition; 32 GiB: 8-8-0 and
/// 64 GiB: 8-8-2, WinningPoSt).
#[test]
fn native_post_witnesses_are_the_gadgets() {
    use cuzk_filecoin::synthetic_post::SyntheticPost;
    use cuzk_filecoin::{post_witness, WitnessSource};
    let check = |request: &PostRequest, what: &str| {
        let (gadgets, _) = post_witness(request, WitnessSource::Gadgets).unwrap();
        let (native, _) = post_witness(request, WitnessSource::Native).unwrap();
        cuzk_testkit::assert_same_assignment(
            what,
            (&native.input_assignment, &native.aux_assignment),
            (&gadgets.input_assignment, &gadgets.aux_assignment),
        );
    };
    check(&winning_request(), "WinningPoSt 2 KiB");
    check(&window_request(0), "WindowPoSt 2 KiB partition 0");
    check(&window_request(1), "WindowPoSt 2 KiB partition 1");

    let seed = cuzk_testkit::test_seed("native_post_witnesses_are_the_gadgets");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let prover_id = fixture().prover_id;
    for (pt, sectors) in [
        (PostType::from_name("StackedDrgWindow8MiBV1_2").unwrap(), 1),
        (PostType::from_name("StackedDrgWinning32GiBV1").unwrap(), 1),
        (PostType::from_name("StackedDrgWinning64GiBV1").unwrap(), 1),
    ] {
        let r = randomness(rng.next_u64());
        let made = SyntheticPost {
            post_type: pt,
            randomness: r,
            prover_id,
            sectors: (0..sectors).map(|_| rng.next_u64() >> 20).collect(),
            seed: rng.next_u64(),
        }
        .generate()
        .unwrap();
        let request = match pt.kind() {
            cuzk_filecoin::PostKind::Winning => {
                PostRequest::winning(pt, &r, prover_id, made.vanilla_proofs)
            }
            cuzk_filecoin::PostKind::Window => {
                PostRequest::window(pt, &r, prover_id, made.vanilla_proofs, 0)
            }
        }
        .unwrap();
        check(&request, &format!("synthetic {}", pt.name()));
    }
}
