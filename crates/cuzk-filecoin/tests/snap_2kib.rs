//! SnapDeals (empty-sector update) end to end on a 2 KiB sector: a CC
//! sector sealed by filecoin-proofs in a temporary directory, updated with
//! a small piece by `empty_sector_update_encode_into`, its vanilla proofs
//! from `generate_partition_proofs` (bincode, as Curio sends them); test
//! keys for the update circuit generated from a seed into a parameter
//! cache under their official names; the proof made by cuzk, checked with
//! the crates' `verify_empty_sector_update_proof`, compared byte for byte
//! with bellperson's prover on the circuits the crates build, and bad
//! requests refused with their reason.
//!
//! `generate_empty_sector_update_proof_with_vanilla` draws r and s from
//! `OsRng` (storage-proofs-core's `CompoundProof::circuit_proofs`), so its
//! output cannot be reproduced: the comparison is with the bellperson call
//! it makes (`create_random_proof_batch`), on the circuits it builds, with
//! the parameters it loads from the cache, and a seeded RNG.

mod common;

use std::sync::{Arc, OnceLock};

use cuzk_filecoin::sample::{seal_cc_sector, update_sample_sector, SampleUpdate};
use cuzk_filecoin::{
    verify_update, CircuitSynthesis, Error, ParamsDir, PrecompiledCircuit, ProofType,
    SectorIdentity, UpdateRequest, UpdateSource, UpdateType, UPDATE_PROOF_BATCH,
};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{DefaultPieceDomain, PartitionProof, SectorShape2KiB, TreeRHasher};
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCompound, PublicInputs, PublicParams, SetupParams,
};

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
/// Seed of the proofs' r and s.
const RNG_SEED: u64 = 20261202;

struct Fixture {
    params: ParamsDir,
    update_type: UpdateType,
    update: SampleUpdate,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let seal = ProofType::new(SEAL).unwrap();
        let update_type = UpdateType::for_seal(seal);
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        cache.keys([update_type]);
        let seed = 0x5eed_5a4d_u64;
        eprintln!("sealing and updating a 2 KiB CC sector, seed {seed:#x}");
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let identity = SectorIdentity::from_actor(1000, 21);
        let sector = seal_cc_sector(seal, &cache.work, &identity, &mut rng).unwrap();
        let update = update_sample_sector(&sector, &cache.work, &mut rng).unwrap();
        Fixture {
            params: cache.params,
            update_type,
            update,
        }
    })
}

fn request() -> UpdateRequest {
    let f = fixture();
    let u = &f.update;
    UpdateRequest::new(
        f.update_type,
        u.vanilla_proofs.clone(),
        &u.comm_r_old,
        &u.comm_r_new,
        &u.comm_d_new,
    )
    .unwrap()
}

fn prove(request: &UpdateRequest) -> Vec<u8> {
    prove_as(request, &CircuitSynthesis::Full)
}

/// `request` proved by the serial scheduler on the CPU, its randomness drawn
/// from `RNG_SEED` in the crates' batches.
fn prove_as(request: &UpdateRequest, synthesis: &CircuitSynthesis) -> Vec<u8> {
    let f = fixture();
    let key = Arc::new(f.params.load_proving_key(f.update_type).unwrap());
    let source = UpdateSource::with_synthesis(request, &key, synthesis).unwrap();
    let job = cuzk_pipeline::Job::new(Arc::new(source), Arc::clone(&key))
        .seeded_in_batches(RNG_SEED, UPDATE_PROOF_BATCH);
    let out = cuzk_sched_serial::prove_one(cuzk_pipeline::EngineConfig::default(), job).unwrap();
    let shapes: Vec<_> = out.partitions.iter().map(|p| p.shape.clone()).collect();
    let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
    assert_eq!(shapes.len(), f.update_type.partitions());
    let s = &shapes[0];
    eprintln!(
        "{}: {} constraints, {} inputs, {} aux, B-input density {}",
        f.update_type.name(),
        s.num_constraints,
        s.num_inputs,
        s.num_aux,
        s.b_input_density
    );
    // The key's shape (what the engine reserves) is the witness's.
    cuzk_groth16::prover::check_key_shape(&key, s).unwrap();
    proof
}

fn crates_accept(request: &UpdateRequest, proof: &[u8]) -> bool {
    filecoin_proofs_api::update::verify_empty_sector_update_proof(
        request.update_type().registered(),
        proof,
        *request.comm_r_old(),
        *request.comm_r_new(),
        *request.comm_d_new(),
    )
    .unwrap_or(false)
}

/// bellperson's proofs, seeded, of the circuits the crates' prover builds.
fn bellperson_proof(request: &UpdateRequest) -> Vec<u8> {
    let ut = request.update_type();
    let config = ut.config();
    let partitions = usize::from(config.update_partitions);
    let inputs = PublicInputs {
        k: partitions,
        comm_r_old: <TreeRHasher as Hasher>::Domain::try_from_bytes(request.comm_r_old()).unwrap(),
        comm_d_new: DefaultPieceDomain::try_from_bytes(request.comm_d_new()).unwrap(),
        comm_r_new: <TreeRHasher as Hasher>::Domain::try_from_bytes(request.comm_r_new()).unwrap(),
        h: config.h,
    };
    let params =
        EmptySectorUpdateCompound::<SectorShape2KiB>::setup(&compound_proof::SetupParams {
            vanilla_params: SetupParams {
                sector_bytes: u64::from(config.sector_size),
            },
            partitions: Some(partitions),
            priority: false,
        })
        .unwrap();
    let circuits = request
        .vanilla_proofs()
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let proof: PartitionProof<SectorShape2KiB> = bincode::deserialize(bytes).unwrap();
            <EmptySectorUpdateCompound<SectorShape2KiB> as CompoundProof<_, _>>::circuit(
                &inputs,
                (),
                &proof,
                &params.vanilla_params,
                Some(k),
            )
            .unwrap()
        })
        .collect();
    let groth_params = <EmptySectorUpdateCompound<SectorShape2KiB> as CompoundProof<
        EmptySectorUpdate<SectorShape2KiB>,
        _,
    >>::groth_params::<rand::rngs::OsRng>(
        None, &PublicParams::from_sector_size(ut.sector_size())
    )
    .unwrap();
    common::bellperson_proofs(circuits, &groth_params, RNG_SEED)
}

fn reference_proof() -> &'static [u8] {
    static PROOF: OnceLock<Vec<u8>> = OnceLock::new();
    PROOF.get_or_init(|| prove(&request()))
}

#[test]
fn update_proof_is_filecoin_valid_and_matches_bellperson() {
    let f = fixture();
    eprintln!("proof randomness seed {RNG_SEED}");
    let request = request();
    let proof = reference_proof().to_vec();
    assert_eq!(proof.len(), 192 * f.update_type.partitions());
    let vk = f.params.load_verifying_key(f.update_type).unwrap();
    verify_update(&request, &proof, &vk).unwrap();
    assert!(crates_accept(&request, &proof));
    for at in [0, 96, proof.len() - 1] {
        let mut bad = proof.clone();
        bad[at] ^= 0x01;
        assert!(
            !crates_accept(&request, &bad),
            "verify_empty_sector_update_proof accepted the proof with byte {at} changed"
        );
        assert!(verify_update(&request, &bad, &vk).is_err());
    }
    assert_eq!(
        proof,
        bellperson_proof(&request),
        "cuzk and bellperson differ for the same seed"
    );
}

#[test]
fn the_pipelined_engine_proves_an_update_as_the_serial_scheduler_does() {
    let f = fixture();
    let key = Arc::new(f.params.load_proving_key(f.update_type).unwrap());
    let source = UpdateSource::new(&request(), &key).unwrap();
    assert_eq!(
        engine_proof(source, key),
        reference_proof(),
        "the engine's proof differs"
    );
}

/// `source` proved through cuzk-sched's engine on one CPU prover, seeded
/// with the proofs' RNG seed (one partition at 2 KiB: the engine's draw
/// order is the crates' one).
fn engine_proof(source: UpdateSource, key: Arc<cuzk_groth16::ProvingKey>) -> Vec<u8> {
    common::engine_proof(
        cuzk_pipeline::Job::new(Arc::new(source), key).seeded(RNG_SEED),
        1,
    )
}

/// Pre-compiled update: the partition circuit recorded from its blank
/// circuit, the witness alone synthesized and a, b, c evaluated from the
/// recording; the proof byte-identical to the full synthesis's, through
/// the serial scheduler and through the pipelined engine. A PoRep recording of the same
/// sector size (whose proof type has the update's name) is refused as
/// another circuit.
#[test]
fn a_precompiled_update_is_the_full_synthesis_proof() {
    use cuzk_pipeline::PartitionSource;
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("update.r1cs");
    cuzk_filecoin::precompile::precompile(f.update_type, &path).unwrap();
    let key = Arc::new(f.params.load_proving_key(f.update_type).unwrap());
    let pre = PrecompiledCircuit::open(&path, f.update_type, Some(&key)).unwrap();
    let synthesis = CircuitSynthesis::Precompiled(Arc::new(pre));

    let source = UpdateSource::with_synthesis(&request(), &key, &synthesis).unwrap();
    assert!(source.defers_abc());
    let witness = source.synthesize(0).unwrap();
    assert!(witness.deferred.is_some() && !witness.abc_on_host());
    // It holds no more than the engine reserves for it (presized from the
    // recorded shape, not grown by doubling: 4.3 GB for 2.6 at 32 GiB).
    let reserved = cuzk_pipeline::PartitionFootprint::of_witness(&source.shape(), false, 0);
    let held = cuzk_pipeline::witness_bytes(&witness);
    assert!(
        held <= reserved.witness + 24,
        "{held} B held, {} reserved",
        reserved.witness
    );
    assert_eq!(prove_as(&request(), &synthesis), reference_proof());

    let source = UpdateSource::with_synthesis(&request(), &key, &synthesis).unwrap();
    assert_eq!(
        engine_proof(source, Arc::clone(&key)),
        reference_proof(),
        "the engine's pre-compiled proof differs"
    );

    let porep = ProofType::new(SEAL).unwrap();
    let porep_file = dir.path().join("porep.r1cs");
    cuzk_filecoin::precompile::precompile(porep, &porep_file).unwrap();
    let e = PrecompiledCircuit::open(&porep_file, f.update_type, None).unwrap_err();
    assert!(
        e.to_string().contains("porep.r1cs") && e.to_string().contains("SnapDeals update"),
        "{e}"
    );
}

fn refused(result: Result<impl std::fmt::Debug, Error>, want: &str) {
    let text = match result {
        Ok(v) => panic!("accepted ({v:?}); wanted an error naming {want:?}"),
        Err(e) => e.to_string(),
    };
    assert!(text.contains(want), "error {text:?} does not name {want:?}");
}

#[test]
fn bad_update_requests_are_refused_with_their_reason() {
    let f = fixture();
    let u = &f.update;
    let ut = f.update_type;
    let key = f.params.load_proving_key(ut).unwrap();
    let new = |vanilla: Vec<Vec<u8>>, old: &[u8], new: &[u8], d: &[u8]| {
        UpdateRequest::new(ut, vanilla, old, new, d)
    };
    let source = |req: UpdateRequest| UpdateSource::new(&req, &key);
    refused(
        new(Vec::new(), &u.comm_r_old, &u.comm_r_new, &u.comm_d_new),
        "0 vanilla proofs for StackedDrg2KiBV1: it has 1 partition(s)",
    );
    refused(
        new(
            vec![u.vanilla_proofs[0].clone(); 2],
            &u.comm_r_old,
            &u.comm_r_new,
            &u.comm_d_new,
        ),
        "2 vanilla proofs",
    );
    refused(
        new(
            u.vanilla_proofs.clone(),
            &u.comm_r_old[..31],
            &u.comm_r_new,
            &u.comm_d_new,
        ),
        "comm_r_old is 31 bytes; a commitment is 32",
    );
    // The commitments of another update: the vanilla proofs do not prove it.
    refused(
        source(
            new(
                u.vanilla_proofs.clone(),
                &u.comm_r_new,
                &u.comm_r_old,
                &u.comm_d_new,
            )
            .unwrap(),
        ),
        "the vanilla proofs do not prove an update of comm_r_old to comm_r_new",
    );
    let mut other_d = u.comm_d_new;
    other_d[0] ^= 1;
    refused(
        source(
            new(
                u.vanilla_proofs.clone(),
                &u.comm_r_old,
                &u.comm_r_new,
                &other_d,
            )
            .unwrap(),
        ),
        "do not prove an update",
    );
    let mut not_field = u.comm_r_new;
    not_field[31] = 0xff;
    refused(
        source(
            new(
                u.vanilla_proofs.clone(),
                &u.comm_r_old,
                &not_field,
                &u.comm_d_new,
            )
            .unwrap(),
        ),
        "comm_r_new is not a field element",
    );
    refused(
        source(
            new(
                vec![b"garbage".to_vec()],
                &u.comm_r_old,
                &u.comm_r_new,
                &u.comm_d_new,
            )
            .unwrap(),
        ),
        "not a bincode PartitionProof of a 2KiB sector",
    );
    let mut trailing = u.vanilla_proofs[0].clone();
    trailing.push(0);
    refused(
        source(new(vec![trailing], &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap()),
        "has 1 bytes after its PartitionProof",
    );
    refused(
        UpdateType::from_name("StackedDrg4KiBV1"),
        "not a registered update proof type",
    );
}
