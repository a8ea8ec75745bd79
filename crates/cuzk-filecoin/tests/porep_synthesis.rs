//! A PoRep partition synthesized challenge by challenge in parallel, and
//! through the pre-compiled circuit (its witness generated natively and
//! compact, expanded and checked value for value against the crates'
//! gadgets; the compact form checked against the recording), equals the sequential
//! synthesis of the whole partition circuit bit for bit (a, b, c,
//! assignments, densities);
//! the three modes give the same proof bytes; a pre-compiled circuit file
//! that is truncated, corrupt, missing or for another circuit is refused
//! naming the file, and the prover falls back to parallel synthesis. A test
//! key generated from the recording equals the one generated from the blank
//! circuit, byte for byte; another circuit's recording is refused, naming
//! both.
//!
//! The C1s: a 2 KiB sector sealed here with filecoin-proofs (as
//! porep_2kib.rs seals one) and synthetic sectors (cuzk's generator);
//! 512 MiB in an ignored test (`cargo test --release -p cuzk-filecoin
//! --test porep_synthesis -- --ignored`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cuzk_filecoin::precompile::{precompile, PrecompiledCircuit, PrecompiledError};
use cuzk_filecoin::synthetic::SyntheticSector;
use cuzk_filecoin::{
    challenge_circuits, parse_c1, partition_circuits, partition_compact_witness, partition_witness,
    synthesize_challenges, verify, witness_challenges, C1Input, Error, ParamsDir, PorepSource,
    PorepSynthesis, ProofType, SectorIdentity, SynthesisMode, Verified, WitnessSource,
};
use cuzk_groth16::setup::CpuFixedBase;
use cuzk_pipeline::{EngineConfig, Job};
use cuzk_synth::precompiled::{CacheError, CompactWitness, Witness, WitnessError};
use filecoin_proofs::{MerkleTreeTrait, SectorShape2KiB, SectorShape512MiB};
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const ACTOR: u64 = 1000;
const SECTOR: u64 = 7;
/// The test keys' seed (porep_2kib.rs's, so the cached keys are shared).
const KEY_SEED: u64 = 0;

fn proof_type(p: RegisteredSealProof) -> ProofType {
    ProofType::new(p).unwrap()
}

fn params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters")
}

/// Sets filecoin-proofs' caches before its settings are read (once per
/// process): the shared test-key directory and a private parent cache.
fn settings() -> &'static PathBuf {
    static WORK: OnceLock<PathBuf> = OnceLock::new();
    WORK.get_or_init(|| {
        let work = tempfile::tempdir().unwrap().keep();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params_dir());
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.join("parents"));
        work
    })
}

fn sealed_2kib() -> &'static C1Input {
    static C1: OnceLock<C1Input> = OnceLock::new();
    C1.get_or_init(|| {
        let work = settings();
        let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_2c1d);
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR);
        let c1 = cuzk_filecoin::sample::seal_random_sector(
            proof_type(RegisteredSealProof::StackedDrg2KiBV1_1),
            work,
            &identity,
            &mut rng,
        )
        .unwrap();
        parse_c1(&serde_json::to_vec(&c1).unwrap()).unwrap()
    })
}

fn synthetic(p: RegisteredSealProof, seed: u64) -> C1Input {
    settings();
    let made = SyntheticSector {
        proof_type: proof_type(p),
        identity: SectorIdentity::from_actor(ACTOR, SECTOR),
        seed,
    }
    .generate()
    .unwrap();
    parse_c1(&serde_json::to_vec(&made.output).unwrap()).unwrap()
}

/// Every partition: parallel == sequential, bit for bit; at least two
/// challenges each, so the join is exercised.
fn parallel_equals_sequential<Tree: 'static + MerkleTreeTrait>(c1: &C1Input) {
    let whole = partition_circuits::<Tree>(c1).unwrap();
    let pieces = challenge_circuits::<Tree>(c1).unwrap();
    assert_eq!(whole.len(), c1.proof_type.partitions());
    assert_eq!(pieces.len(), whole.len());
    for (k, (partition, challenges)) in whole.into_iter().zip(pieces).enumerate() {
        assert!(
            challenges.len() >= 2,
            "partition {k}: {} challenges",
            challenges.len()
        );
        let sequential = cuzk_synth::synthesize(partition.circuit).unwrap();
        let parallel = synthesize_challenges(challenges).unwrap();
        assert_eq!(
            sequential.input_assignment.get(1..),
            Some(&partition.public_inputs[..]),
            "partition {k}: the verifier's inputs"
        );
        assert!(
            parallel == sequential,
            "partition {k}: {parallel:?} against {sequential:?}"
        );
    }
}

/// Every partition through the recording at `path` equals full synthesis.
fn precompiled_equals_sequential<Tree: 'static + MerkleTreeTrait>(c1: &C1Input, path: &Path) {
    let pre = PrecompiledCircuit::open(path, c1.proof_type, None).unwrap();
    let whole = partition_circuits::<Tree>(c1).unwrap();
    for (k, (partition, challenges)) in whole
        .into_iter()
        .zip(challenge_circuits::<Tree>(c1).unwrap())
        .enumerate()
    {
        let sequential = cuzk_synth::synthesize(partition.circuit).unwrap();
        let witness = witness_challenges(challenges).unwrap();
        assert_eq!(
            witness.aux_assignment, sequential.aux_assignment,
            "partition {k}"
        );
        let native = partition_witness(c1, k, WitnessSource::Native).unwrap();
        assert_same_witness(k, &native, &witness);
        let compact = partition_compact_witness(c1, k).unwrap();
        assert_eq!(pre.r1cs().check_compact(&compact), Ok(()), "partition {k}");
        let mut short = compact.clone();
        short.input_assignment.pop();
        assert_eq!(
            pre.r1cs().check_compact(&short).unwrap_err().to_string(),
            WitnessError::Inputs {
                expected: compact.input_assignment.len(),
                found: compact.input_assignment.len() - 1
            }
            .to_string(),
            "a compact witness of another shape is refused naming both numbers"
        );
        let mut precompiled = pre.synthesize(witness).unwrap();
        assert!(!precompiled.abc_on_host(), "a, b, c are left to the prover");
        assert_eq!(precompiled.shape(), sequential.shape(), "partition {k}");
        precompiled.evaluate_abc();
        assert!(
            precompiled == sequential,
            "partition {k}: {precompiled:?} against {sequential:?}"
        );
        // What the engine gets pre-compiled: the compact witness, kept
        // compact; expanded, it is the full synthesis.
        let mut kept = pre.synthesize_compact(compact).unwrap();
        assert!(kept.compact_aux.is_some() && kept.aux_assignment.is_empty());
        assert_eq!(kept.shape(), sequential.shape(), "partition {k}");
        kept.expand_aux();
        kept.evaluate_abc();
        assert!(kept == sequential, "partition {k}: compact, expanded");
    }
}

/// Partition `k`'s native witness, made compact, against the gadgets':
/// expanded, value for value; and compact, the gadgets' values classified
/// (codes, counts and the others in full all equal).
fn check_native_witness(c1: &C1Input, k: usize, gadgets: &Witness) {
    let compact = partition_compact_witness(c1, k).unwrap();
    assert_same_witness(k, &compact.expand(), gadgets);
    assert!(
        compact == CompactWitness::from_witness(gadgets),
        "partition {k}: the compact witness's parts differ from the gadgets' values classified"
    );
    assert_eq!(compact.aux.check(), Ok(()), "partition {k}");
}

/// The native witness against the gadgets', value for value, naming the
/// first difference (its index and both lengths) when there is one.
fn assert_same_witness(k: usize, native: &Witness, gadgets: &Witness) {
    for (what, n, g) in [
        ("input", &native.input_assignment, &gadgets.input_assignment),
        ("aux", &native.aux_assignment, &gadgets.aux_assignment),
    ] {
        let first = n.iter().zip(g.iter()).position(|(a, b)| a != b);
        assert!(
            first.is_none() && n.len() == g.len(),
            "partition {k}: native {what} values differ from the gadgets' at {first:?} \
             (native {} values, gadgets {})",
            n.len(),
            g.len()
        );
    }
}

#[test]
fn the_native_witness_equals_the_gadgets_on_every_2kib_partition() {
    let sealed = sealed_2kib();
    let others = [1, 2].map(|seed| synthetic(RegisteredSealProof::StackedDrg2KiBV1_1, seed));
    for c1 in std::iter::once(sealed).chain(&others) {
        for k in 0..c1.proof_type.partitions() {
            let native = partition_witness(c1, k, WitnessSource::Native).unwrap();
            let gadgets = partition_witness(c1, k, WitnessSource::Gadgets).unwrap();
            assert_same_witness(k, &native, &gadgets);
            check_native_witness(c1, k, &gadgets);
        }
    }
}

#[test]
fn the_sealed_2kib_partition_in_parallel_equals_sequential_synthesis() {
    parallel_equals_sequential::<SectorShape2KiB>(sealed_2kib());
}

#[test]
fn synthetic_2kib_partitions_in_parallel_equal_sequential_synthesis() {
    for seed in [1, 2] {
        parallel_equals_sequential::<SectorShape2KiB>(&synthetic(
            RegisteredSealProof::StackedDrg2KiBV1_1,
            seed,
        ));
    }
}

#[test]
fn the_precompiled_2kib_partition_equals_full_synthesis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("porep-2kib.r1cs");
    let made = precompile(sealed_2kib().proof_type, &path).unwrap();
    assert!(made.file_bytes > 1024 && made.stats.distinct_coeffs >= 2);
    precompiled_equals_sequential::<SectorShape2KiB>(sealed_2kib(), &path);
    let other = synthetic(RegisteredSealProof::StackedDrg2KiBV1_1, 3);
    precompiled_equals_sequential::<SectorShape2KiB>(&other, &path);
}

#[test]
fn every_mode_gives_the_same_proof_bytes() {
    let c1 = sealed_2kib();
    let pt = c1.proof_type;
    let params = ParamsDir::new(params_dir());
    if params.check(pt).is_err() {
        params.generate_test_keys(pt, KEY_SEED).unwrap();
    }
    let key = params.load_proving_key(pt).unwrap();
    let vk = params.load_verifying_key(pt).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("porep-2kib.r1cs");
    precompile(pt, &path).unwrap();
    let pre = PorepSynthesis::for_mode(
        SynthesisMode::Precompiled,
        pt,
        &params,
        Some(&path),
        Some(&key),
    );
    assert!(
        matches!(pre, (PorepSynthesis::Precompiled(_), None)),
        "{pre:?}"
    );
    let mut proofs = Vec::new();
    let key = Arc::new(key);
    // Pre-compiled, every partition's witness is compact and within what
    // the engine reserves for it (partition 0's count of values other than
    // 0 and 1 and a 1/256 margin, the compact size; the count differs a
    // little between partitions: by 65 of 1.69 M at 32 GiB).
    {
        use cuzk_pipeline::PartitionSource;
        let source = PorepSource::with_synthesis(c1, &key, &pre.0).unwrap();
        let others = source.compact_others().expect("compact witnesses");
        assert!(others > 0 && source.defers_abc());
        let reserved =
            cuzk_pipeline::PartitionFootprint::of_compact_witness(&source.shape(), others, 0);
        for k in 0..source.num_partitions() {
            let w = source.synthesize(k).unwrap();
            let compact = w.compact_aux.as_ref().expect("a compact witness");
            let count = compact.others().len();
            if k == 0 {
                assert_eq!(
                    others,
                    count + count.div_ceil(256),
                    "partition 0's and a margin"
                );
            }
            assert!(count <= others, "partition {k}");
            assert!(w.aux_assignment.is_empty(), "partition {k}");
            let held = cuzk_pipeline::witness_bytes(&w);
            assert!(
                held <= reserved.witness,
                "partition {k}: {held} B held, {} reserved",
                reserved.witness
            );
        }
    }
    for synthesis in [PorepSynthesis::Sequential, PorepSynthesis::Parallel, pre.0] {
        let source = PorepSource::with_synthesis(c1, &key, &synthesis).unwrap();
        let job = Job::new(Arc::new(source), Arc::clone(&key)).seeded(42);
        let out = cuzk_sched_serial::prove_one(EngineConfig::default(), job).unwrap();
        let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
        proofs.push((synthesis.mode(), proof));
    }
    for (mode, proof) in &proofs {
        assert_eq!(proof, &proofs[0].1, "{mode} against {}", proofs[0].0);
    }
    assert_eq!(
        verify(c1, &proofs[0].1, &vk, None).unwrap(),
        Verified::ReplicaId
    );
}

fn cache_fault(e: Error) -> CacheError {
    match e {
        Error::Precompiled(PrecompiledError::Cache { source, .. }) => source,
        other => panic!("not a cache error: {other}"),
    }
}

#[test]
fn unusable_cache_files_are_refused_naming_them_and_fall_back_to_parallel() {
    let pt = proof_type(RegisteredSealProof::StackedDrg2KiBV1_1);
    settings();
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.r1cs");
    precompile(pt, &good).unwrap();
    let bytes = std::fs::read(&good).unwrap();

    let truncated = dir.path().join("truncated.r1cs");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = PrecompiledCircuit::open(&truncated, pt, None).unwrap_err();
    assert!(e.to_string().contains("truncated.r1cs"), "{e}");
    assert!(matches!(cache_fault(e), CacheError::Truncated { .. }));

    let corrupt = dir.path().join("corrupt.r1cs");
    let mut flipped = bytes.clone();
    let at = flipped.len() - 100;
    flipped[at] ^= 1;
    std::fs::write(&corrupt, &flipped).unwrap();
    let e = PrecompiledCircuit::open(&corrupt, pt, None).unwrap_err();
    assert!(e.to_string().contains("corrupt.r1cs"), "{e}");
    assert!(matches!(
        cache_fault(e),
        CacheError::Checksum { .. } | CacheError::Malformed { .. }
    ));

    // The 2 KiB recording offered as another proof type's.
    let other = proof_type(RegisteredSealProof::StackedDrg8MiBV1_1);
    let e = PrecompiledCircuit::open(&good, other, None).unwrap_err();
    assert!(e.to_string().contains("good.r1cs"), "{e}");
    assert!(matches!(
        e,
        Error::Precompiled(PrecompiledError::OtherCircuit { .. })
    ));

    // The prover's view: refused, said why, synthesized in parallel.
    let params = ParamsDir::new(dir.path());
    for path in [&truncated, &corrupt, &dir.path().join("absent.r1cs")] {
        let (synthesis, why) =
            PorepSynthesis::for_mode(SynthesisMode::Precompiled, pt, &params, Some(path), None);
        assert!(
            matches!(synthesis, PorepSynthesis::Parallel),
            "{}",
            path.display()
        );
        let why = why.unwrap().to_string();
        assert!(
            why.contains(&*path.file_name().unwrap().to_string_lossy()),
            "{why}"
        );
    }
    // With no file given, the default is beside the key (absent here).
    let (synthesis, why) =
        PorepSynthesis::for_mode(SynthesisMode::Precompiled, pt, &params, None, None);
    assert!(matches!(synthesis, PorepSynthesis::Parallel));
    assert!(why.unwrap().to_string().contains(".r1cs"));
    let opened = PrecompiledCircuit::open(&good, pt, None)
        .map(Arc::new)
        .unwrap();
    assert_eq!(opened.circuit(), pt.into());
}

#[test]
fn synthesis_modes_parse_by_name() {
    for mode in SynthesisMode::ALL {
        assert_eq!(mode.name().parse::<SynthesisMode>().unwrap(), mode);
    }
    assert_eq!(SynthesisMode::default(), SynthesisMode::Parallel);
    let e = "fast".parse::<SynthesisMode>().unwrap_err();
    assert!(e.contains("sequential, parallel, precompiled"), "{e}");
}

/// 512 MiB (one partition, two challenges), parallel and pre-compiled
/// against sequential. Minutes in a release build.
#[test]
#[ignore = "512 MiB: minutes and a few GiB; run with --ignored in release"]
fn synthetic_512mib_partition_in_every_mode_equals_sequential_synthesis() {
    let c1 = synthetic(RegisteredSealProof::StackedDrg512MiBV1_1, 5);
    parallel_equals_sequential::<SectorShape512MiB>(&c1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("porep-512mib.r1cs");
    precompile(c1.proof_type, &path).unwrap();
    precompiled_equals_sequential::<SectorShape512MiB>(&c1, &path);
}

/// 512 MiB (one partition, two challenges): the compact native witness
/// against the gadgets' alone (seconds in a release build, where the test
/// above takes minutes).
#[test]
#[ignore = "512 MiB: a few GiB; run with --ignored in release"]
fn the_compact_native_witness_equals_the_gadgets_on_a_512mib_partition() {
    let c1 = synthetic(RegisteredSealProof::StackedDrg512MiBV1_1, 5);
    let gadgets = partition_witness(&c1, 0, WitnessSource::Gadgets).unwrap();
    check_native_witness(&c1, 0, &gadgets);
    let counts = CompactWitness::from_witness(&gadgets).aux.counts();
    assert!(
        counts.others * 20 < gadgets.aux_assignment.len(),
        "a PoRep partition is mostly bits: {counts:?}"
    );
}

#[test]
fn the_2kib_key_from_its_recording_is_the_synthesized_key() {
    let pt = proof_type(RegisteredSealProof::StackedDrg2KiBV1_1);
    settings();
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("porep-2kib.r1cs");
    precompile(pt, &recording).unwrap();
    // The synthesized key is the shared test key (seed 0, made from the
    // blank circuit once for every test here), so only one key is made.
    let shared = ParamsDir::new(params_dir());
    if shared.check(pt).is_err() {
        shared.generate_test_keys(pt, KEY_SEED).unwrap();
    }
    let synthesized = [shared.params_path(pt).unwrap(), shared.vk_path(pt).unwrap()];
    let recorded = ParamsDir::new(dir.path().join("recorded"))
        .generate_test_keys_from_recording(pt, KEY_SEED, &recording, &CpuFixedBase)
        .unwrap();
    for (a, b) in [
        (&synthesized[0], &recorded.params),
        (&synthesized[1], &recorded.vk),
    ] {
        assert_eq!(a.file_name(), b.file_name());
        let (a_bytes, b_bytes) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(
            a_bytes == b_bytes,
            "{} ({} bytes) differs from {} ({} bytes)",
            b.display(),
            b_bytes.len(),
            a.display(),
            a_bytes.len()
        );
    }
}

#[test]
fn a_key_from_another_circuits_recording_is_refused_naming_both() {
    let recorded = proof_type(RegisteredSealProof::StackedDrg2KiBV1_1);
    let wanted = proof_type(RegisteredSealProof::StackedDrg8MiBV1_1);
    settings();
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("porep-2kib.r1cs");
    precompile(recorded, &recording).unwrap();
    let params = ParamsDir::new(dir.path().join("keys"));
    let e = params
        .generate_test_keys_from_recording(wanted, KEY_SEED, &recording, &CpuFixedBase)
        .unwrap_err();
    let message = e.to_string();
    for name in ["porep-2kib.r1cs", &wanted.name(), &recorded.name()] {
        assert!(message.contains(name), "{message:?} does not name {name}");
    }
    assert!(matches!(
        e,
        Error::Precompiled(PrecompiledError::OtherCircuit { .. })
    ));
    assert!(!params.params_path(wanted).unwrap().exists());
}
