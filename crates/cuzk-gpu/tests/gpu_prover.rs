//! The CUDA backend against the CPU backend: same key, same witness, same r
//! and s ⇒ byte-identical proofs that verify. Without a CUDA device the
//! suite reports its tests ignored and says why in one line
//! (`cuzk_testkit::gpu_suite`); a device without usable kernels fails.
//!
//! Keys: the committed 2^10 fixture always (`$CUZK_FIXTURES` overrides where
//! fixtures/ is); more sizes from
//! `$CUZK_TEST_KEYS/demo-<k>-95.params` (as `cargo bench --bench prover`
//! caches them in target/bench-keys) for k in `$CUZK_TEST_SIZES` (e.g. "16 18").

use std::path::PathBuf;

use cuzk_field::{Field, Fr};
use cuzk_gpu::CudaBackend;
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::prover::{prove_with, Backend, CpuBackend, Proved};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize, DemoCircuit, Synthesized};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn backend() -> Option<CudaBackend> {
    match CudaBackend::first() {
        Ok(Some(b)) => Some(b),
        Ok(None) => {
            eprintln!("skipped: no CUDA device");
            None
        }
        // A device that is there but cannot prove (stale or missing kernels, a
        // driver error) is a failure, never a skip.
        Err(e) => panic!("a CUDA device is present but unusable: {e}"),
    }
}

/// The key of the 2^`k` demo circuit at `path`, its points checked on the
/// curve.
/// A run's stages as "name 1.23ms, …", `digits` after the point.
fn stage_list(stages: &[(&'static str, std::time::Duration)], digits: usize) -> String {
    let each: Vec<String> = stages
        .iter()
        .map(|(n, d)| format!("{n} {:.*}ms", digits, d.as_secs_f64() * 1e3))
        .collect();
    each.join(", ")
}

fn read_key(k: u32, path: &std::path::Path) -> ProvingKey {
    ProvingKey::read_from_path(path, PointCheck::OnCurve)
        .unwrap_or_else(|e| panic!("key for 2^{k}: {e}"))
}

/// The 2^`k` demo circuit from `seed`, recorded, as the deferred a, b, c of
/// its witnesses (any seed's: the recording holds no values).
fn deferred_abc(k: u32, seed: u64) -> cuzk_synth::precompiled::DeferredAbc {
    use cuzk_synth::precompiled::{record, DeferredAbc};
    let r1cs = record(DemoCircuit::new(k, 0.95, seed)).unwrap();
    DeferredAbc::new(r1cs.content_id(), std::sync::Arc::new(r1cs))
}

/// The 2^`k` demo circuit from `seed`, synthesized in full and as a
/// witness whose a, b, c are left to the prover (`deferred`).
fn full_and_deferred(
    deferred: &cuzk_synth::precompiled::DeferredAbc,
    k: u32,
    seed: u64,
) -> (Synthesized, Synthesized) {
    let circuit = DemoCircuit::new(k, 0.95, seed);
    let full = synthesize(circuit.clone()).unwrap();
    let w = deferred
        .synthesized(cuzk_synth::precompiled::witness(circuit).unwrap())
        .unwrap();
    (full, w)
}

/// Deferred witness `w` with its aux values held compact (classes and
/// the values other than 0 and 1).
fn compact_of(deferred: &cuzk_synth::precompiled::DeferredAbc, w: &Synthesized) -> Synthesized {
    use cuzk_synth::precompiled::{CompactWitness, Witness};
    deferred
        .synthesized_compact(CompactWitness::from_witness(&Witness {
            input_assignment: w.input_assignment.clone(),
            aux_assignment: w.aux_assignment.clone(),
        }))
        .unwrap()
}

/// The device's backend, a fresh seed (printed after `what`, so a failure
/// can be replayed) and an RNG from it; `None` without a device.
fn started(what: &str) -> Option<(CudaBackend, u64, ChaCha20Rng)> {
    let gpu = backend()?;
    let seed = fresh_seed();
    eprintln!("{what} on {}; seed {seed}", gpu.device_name());
    Some((gpu, seed, ChaCha20Rng::seed_from_u64(seed)))
}

/// A new seed per run (printed by each test, so a failure can be replayed).
fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Proves `gpu_witness` on `gpu` and `cpu_witness` on the CPU with the same
/// fresh r, s from `rng`, asserts the two proofs byte-identical (`what`
/// names the case) and returns the GPU's.
fn proved_as_on_cpu(
    gpu: &dyn Backend,
    key: &ProvingKey,
    gpu_witness: &Synthesized,
    cpu_witness: &Synthesized,
    rng: &mut ChaCha20Rng,
    what: &str,
) -> Proved {
    let (r, s) = (Fr::random(&mut *rng), Fr::random(&mut *rng));
    let cpu = prove_with(&CpuBackend, key, cpu_witness, r, s).unwrap();
    let out = prove_with(gpu, key, gpu_witness, r, s).unwrap();
    assert_eq!(
        out.proof.to_bytes(),
        cpu.proof.to_bytes(),
        "{what}: GPU proof differs from the CPU proof"
    );
    out
}

fn keys() -> Vec<(u32, PathBuf)> {
    // CUZK_FIXTURES: where fixtures/ is when the test runs away from its source tree.
    let fixtures = std::env::var("CUZK_FIXTURES").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"),
        PathBuf::from,
    );
    let mut v = vec![(10, fixtures.join("demo-k10-sha95.params"))];
    if let (Ok(dir), Ok(sizes)) = (
        std::env::var("CUZK_TEST_KEYS"),
        std::env::var("CUZK_TEST_SIZES"),
    ) {
        for k in sizes.split_whitespace().filter_map(|s| s.parse().ok()) {
            v.push((k, PathBuf::from(&dir).join(format!("demo-{k}-95.params"))));
        }
    }
    v
}

fn gpu_proofs_are_byte_identical_to_cpu_proofs() {
    let Some(gpu) = backend() else { return };
    let seed = fresh_seed();
    eprintln!(
        "backend {} on {}; seed {seed}",
        gpu_name(&gpu),
        gpu.device_name()
    );
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for (k, path) in keys() {
        let key = read_key(k, &path);
        let pvk = PreparedVerifyingKey::new(&key.vk);
        // Two witnesses per key: the second proof reuses the resident key.
        for witness_seed in [seed, seed ^ 1] {
            let circuit = DemoCircuit::new(k, 0.95, witness_seed);
            let inputs = circuit.public_inputs();
            let w = synthesize(circuit).unwrap();
            let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let cpu = prove_with(&CpuBackend, &key, &w, r, s).unwrap();
            let gpu_proof = prove_with(&gpu, &key, &w, r, s).unwrap();
            assert_eq!(
                gpu_proof.proof.to_bytes(),
                cpu.proof.to_bytes(),
                "2^{k}: GPU proof differs from CPU proof"
            );
            assert!(
                verify_proof(&pvk, &gpu_proof.proof, &inputs).unwrap(),
                "2^{k}: GPU proof invalid"
            );
            let stages = stage_list(&gpu_proof.timings.stages, 1);
            eprintln!(
                "2^{k}: identical; cpu {:.1} ms, gpu {:.1} ms [{}]",
                cpu.timings.total().as_secs_f64() * 1e3,
                gpu_proof.timings.total().as_secs_f64() * 1e3,
                stages
            );
        }
    }
}

/// H's MSM over shifted bases (`CUZK_SHIFTED_H`, forced on here): the
/// plan keeps H with shifted copies beside the key, and the proofs are
/// byte-identical to the CPU's, for a fresh worker (the copies made with the
/// key) and on a second witness (the resident copies reused); with a, b, c
/// from the host and from the device.
fn shifted_h_gives_the_cpu_proofs() {
    use cuzk_gpu::witness_shape;
    use cuzk_synth::precompiled::witness;
    if backend().is_none() {
        return;
    }
    let seed = fresh_seed();
    eprintln!("shifted H; seed {seed}");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for (k, path) in keys() {
        let key = read_key(k, &path);
        let pvk = PreparedVerifyingKey::new(&key.vk);
        let deferred = deferred_abc(k, seed);
        // A fresh worker per key, so its key (and H's copies) are made here.
        let gpu = backend().expect("a device");
        gpu.set_shifted_h(true);
        for (i, witness_seed) in [seed, seed ^ 1].into_iter().enumerate() {
            let circuit = DemoCircuit::new(k, 0.95, witness_seed);
            let inputs = circuit.public_inputs();
            let full = synthesize(circuit.clone()).unwrap();
            let w = if i == 0 {
                full.clone()
            } else {
                deferred.synthesized(witness(circuit).unwrap()).unwrap()
            };
            let plan = gpu.plan(witness_shape(&w)).unwrap();
            let h = plan
                .h_shift
                .unwrap_or_else(|| panic!("2^{k}: no room for H's copies: {plan}"));
            assert!(h.copies >= 2, "2^{k}: {plan}");
            let what = format!("2^{k}, witness {i}, H shifted ({plan})");
            let out = proved_as_on_cpu(&gpu, &key, &w, &full, &mut rng, &what);
            assert!(verify_proof(&pvk, &out.proof, &inputs).unwrap());
            eprintln!(
                "2^{k}, witness {i}: identical with H shifted (c = {}, {} sets, {} copies), msm_h {:.2} ms",
                h.window_bits,
                h.sets,
                h.copies,
                out.timings.get("msm_h").unwrap_or_default().as_secs_f64() * 1e3
            );
        }
    }
}

fn gpu_name(b: &CudaBackend) -> &'static str {
    use cuzk_groth16::prover::Backend;
    b.name()
}

fn key_mismatch_fails_before_any_kernel() {
    let Some(gpu) = backend() else { return };
    let key = ProvingKey::read_from_path(&keys()[0].1, PointCheck::OnCurve).unwrap();
    let w = synthesize(DemoCircuit::new(11, 0.95, 1)).unwrap();
    let err = prove_with(&gpu, &key, &w, Fr::ONE, Fr::ONE).unwrap_err();
    assert!(err.to_string().contains("h points"), "{err}");
}

/// The key streamed in several chunks gives the same proof as the key
/// resident, for every available size.
fn streamed_key_gives_the_same_proofs_as_resident() {
    use cuzk_gpu::{Shape, SrsMode};
    let Some(gpu) = backend() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for (k, path) in keys() {
        let key = ProvingKey::read_from_path(&path, PointCheck::OnCurve).unwrap();
        let w = synthesize(DemoCircuit::new(k, 0.95, 3)).unwrap();
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        gpu.force_mode(None);
        let resident = prove_with(&gpu, &key, &w, r, s).unwrap();
        assert_eq!(gpu.last_plan().unwrap().mode, SrsMode::Resident);
        // Four chunks or more (at least the planner's smallest chunk).
        let longest = Shape::of_circuit(&w.shape()).longest_msm();
        let chunk = (longest / 4).max(cuzk_gpu::MIN_CHUNK).next_power_of_two();
        gpu.force_mode(Some(SrsMode::Streamed { chunk }));
        let streamed = prove_with(&gpu, &key, &w, r, s).unwrap();
        assert_eq!(
            gpu.last_plan().unwrap().mode,
            SrsMode::Streamed { chunk },
            "2^{k}: the run meant to stream the key did not"
        );
        gpu.force_mode(None);
        assert_eq!(
            streamed.proof.to_bytes(),
            resident.proof.to_bytes(),
            "2^{k}: streamed (chunk {chunk}) and resident proofs differ"
        );
        eprintln!(
            "2^{k}: streamed in chunks of {chunk} = resident; resident {:.1} ms, streamed {:.1} ms",
            resident.timings.total().as_secs_f64() * 1e3,
            streamed.timings.total().as_secs_f64() * 1e3
        );
    }
}

/// A budget too small for one partition fails before any kernel runs, and
/// the error says what the plan needs and what the budget has.
fn too_small_a_budget_fails_with_both_numbers() {
    use cuzk_gpu::VramBudget;
    let Some(first) = backend() else { return };
    drop(first);
    let gpu = cuzk_cuda::Gpu::first().unwrap().unwrap();
    let small = CudaBackend::with_budget(gpu, VramBudget::Bytes(96 << 20)).unwrap();
    assert_eq!(small.budget_bytes(), 96 << 20);
    let key = ProvingKey::read_from_path(&keys()[0].1, PointCheck::OnCurve).unwrap();
    let w = synthesize(DemoCircuit::new(10, 0.95, 1)).unwrap();
    let before = small.arena_usage();
    let err = prove_with(&small, &key, &w, Fr::ONE, Fr::ONE).unwrap_err();
    assert_eq!(
        err.backend_failure(),
        Some(cuzk_groth16::prover::BackendFailure::OutOfDeviceMemory)
    );
    let msg = cuzk_pipeline::ErrorChain(&err).to_string();
    assert!(msg.contains("VRAM budget too small"), "{msg}");
    assert!(msg.contains("needs at least"), "{msg}");
    assert!(msg.contains("the budget has 96.0 MiB"), "{msg}");
    assert_eq!(
        small.arena_usage().in_use,
        before.in_use,
        "nothing allocated by the refused partition"
    );
}

/// Workers sharing a device keep several keys resident: proving with key A,
/// then B, then A again uploads A once, and a resident key can be evicted
/// by name (and is uploaded again on its next use).
fn shared_workers_keep_two_keys_resident() {
    let Some(first) = backend() else { return };
    drop(first);
    let gpu = cuzk_cuda::Gpu::first().unwrap().unwrap();
    let worker = CudaBackend::workers(&gpu, &cuzk_gpu::GpuConfig::default().with_workers(1))
        .unwrap()
        .remove(0);
    let slot = worker.resident_keys();
    let big = ProvingKey::read_from_path(&keys()[0].1, PointCheck::OnCurve).unwrap();
    let small = cuzk_groth16::setup::generate_key(
        DemoCircuit::new(8, 0.95, 0),
        &mut ChaCha20Rng::seed_from_u64(5),
    )
    .unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let mut prove = |key: &ProvingKey, k: u32| {
        let w = synthesize(DemoCircuit::new(k, 0.95, 4)).unwrap();
        let out = proved_as_on_cpu(&worker, key, &w, &w, &mut rng, &format!("2^{k}"));
        out.timings.stages.iter().any(|(n, _)| *n == "srs_upload")
    };
    assert!(prove(&big, 10), "first use uploads");
    assert!(prove(&small, 8), "another key uploads");
    assert!(!prove(&big, 10), "the first key is still resident");
    let usage = slot.usage();
    assert_eq!((usage.keys, usage.uploads, usage.evictions), (2, 2, 0));
    assert!(slot.holds(&big) && slot.holds(&small));
    assert_eq!(slot.evict(&big), Ok(true));
    assert!(!slot.holds(&big));
    assert!(prove(&big, 10), "evicted, so uploaded again");
    eprintln!("two keys resident: {:?}", slot.usage());
}

/// A witness that leaves a, b, c to the prover (pre-compiled circuit): the
/// GPU evaluates them from the recording's matrices, resident after the
/// first partition, and proves the bytes the CPU proves from the same
/// deferred witness and from full synthesis, with z uploaded packed (the
/// default: the demo witness is mostly bits) and plainly; fresh witnesses
/// each run.
fn deferred_abc_on_the_device_gives_the_cpu_proofs() {
    use cuzk_gpu::{witness_shape, ZUpload};
    use cuzk_synth::precompiled::witness;
    let Some((gpu, seed, mut rng)) = started("deferred a, b, c") else {
        return;
    };
    let slot = gpu.resident_matrices();
    for (k, path) in keys() {
        let key = read_key(k, &path);
        let pvk = PreparedVerifyingKey::new(&key.vk);
        let deferred = deferred_abc(k, seed);
        for (i, witness_seed) in [seed, seed ^ 1].into_iter().enumerate() {
            let circuit = DemoCircuit::new(k, 0.95, witness_seed);
            let inputs = circuit.public_inputs();
            let full = synthesize(circuit.clone()).unwrap();
            let w = deferred.synthesized(witness(circuit).unwrap()).unwrap();
            assert!(cuzk_gpu::CudaBackend::plan(&gpu, witness_shape(&w))
                .unwrap()
                .abc_on_device());
            let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let cpu = prove_with(&CpuBackend, &key, &full, r, s).unwrap();
            let cpu_deferred = prove_with(&CpuBackend, &key, &w, r, s).unwrap();
            gpu.set_z_upload(ZUpload::Packed);
            let out = prove_with(&gpu, &key, &w, r, s).unwrap();
            let z = gpu.last_z_upload().unwrap();
            // One piece at these sizes: packed when at most ~24% of the aux
            // values are other than 0 and 1 (the budget), plainly when well
            // above; the demo's mix depends on its size.
            let n = w.aux_assignment.len();
            let others = w
                .aux_assignment
                .iter()
                .filter(|v| !bool::from(v.is_zero()) && **v != Fr::ONE)
                .count();
            assert_eq!((z.mode, z.values), (ZUpload::Packed, n), "2^{k}: {z}");
            if others * 5 <= n {
                assert_eq!(
                    z.packed, n,
                    "2^{k}: {others} of {n} others, all packed ({z})"
                );
                assert_eq!(z.others, others, "2^{k}: {z}");
            } else if others * 10 >= n * 3 {
                assert_eq!(z.packed, 0, "2^{k}: {others} of {n} others, plain ({z})");
            }
            eprintln!("2^{k}: {others} of {n} aux values other than 0 and 1; z {z}");
            assert_eq!(
                cpu_deferred.proof.to_bytes(),
                cpu.proof.to_bytes(),
                "2^{k}: CPU"
            );
            assert_eq!(
                out.proof.to_bytes(),
                cpu.proof.to_bytes(),
                "2^{k}: GPU proof from device a, b, c differs from the CPU proof"
            );
            gpu.set_z_upload(ZUpload::Plain);
            let plain = prove_with(&gpu, &key, &w, r, s).unwrap();
            gpu.set_z_upload(ZUpload::Packed);
            assert_eq!(gpu.last_z_upload().unwrap().mode, ZUpload::Plain);
            assert_eq!(
                plain.proof.to_bytes(),
                cpu.proof.to_bytes(),
                "2^{k}: GPU proof with z uploaded plainly differs from the CPU proof"
            );
            assert!(verify_proof(&pvk, &out.proof, &inputs).unwrap());
            let stage = |name| out.timings.stages.iter().any(|(n, _)| *n == name);
            assert!(stage("abc") && stage("upload_z") && !stage("upload_abc"));
            assert_eq!(
                stage("r1cs_upload"),
                i == 0,
                "matrices uploaded once per circuit"
            );
            assert_eq!(slot.resident(), Some(*deferred.id()));
            let stages = stage_list(&out.timings.stages, 2);
            eprintln!(
                "2^{k}: identical; upload_z {z}; {} [{}]",
                gpu.last_run().unwrap_or_default(),
                stages
            );
        }
    }
    assert!(slot.evict(), "idle matrices can be evicted");
    assert_eq!(slot.bytes(), 0);
}

/// The same with a budget that holds the key and a partition but not the
/// matrices beside them: the plan streams the matrices from the host in
/// chunks, nothing is made resident, and the proof is still the CPU's.
fn deferred_abc_with_streamed_matrices_gives_the_cpu_proofs() {
    use cuzk_gpu::{witness_shape, CudaFootprints, SrsMode, VramBudget, VramPlan};
    let Some((_first, seed, mut rng)) = started("streamed matrices") else {
        return;
    };
    for (k, path) in keys() {
        let key = read_key(k, &path);
        let (full, w) = full_and_deferred(&deferred_abc(k, seed), k, seed ^ 7);
        // A budget with room for one chunk's staging, not for the three
        // matrices: a plan's peak is its own bytes plus a margin of
        // budget / 64 + 64 MiB, so the smallest budget a plan fits is
        // (bytes + 64 MiB) · 64/63.
        let mut shape = witness_shape(&w);
        let resident_bytes = {
            let p = VramPlan::with_mode(shape, 0, SrsMode::Resident, &CudaFootprints);
            p.peak() - p.margin
        };
        let d = shape.device_abc.as_mut().unwrap();
        d.stream_terms = Some(d.chunk_terms());
        let streamed_bytes = {
            let p = VramPlan::with_mode(shape, 0, SrsMode::Resident, &CudaFootprints);
            p.peak() - p.margin
        };
        assert!(
            streamed_bytes < resident_bytes,
            "2^{k}: streamed {streamed_bytes} against resident {resident_bytes} bytes"
        );
        let budget = ((streamed_bytes + (64 << 20)) * 64).div_ceil(63) + 64;
        let gpu = cuzk_cuda::Gpu::first().unwrap().unwrap();
        let small = CudaBackend::with_budget(gpu, VramBudget::Bytes(budget)).unwrap();
        let plan = small.plan(witness_shape(&w)).unwrap();
        assert!(
            plan.matrices_streamed().is_some(),
            "2^{k}: {plan} (resident {resident_bytes}, streamed {streamed_bytes} bytes)"
        );
        let what = format!("2^{k}, matrices streamed");
        let out = proved_as_on_cpu(&small, &key, &w, &full, &mut rng, &what);
        let stage = |name| out.timings.stages.iter().any(|(n, _)| *n == name);
        assert!(stage("abc") && !stage("r1cs_upload") && !stage("upload_abc"));
        assert_eq!(small.resident_matrices().resident(), None);
        eprintln!("2^{k}: identical under {plan}");
    }
}

/// Every layout a small card may get gives the CPU's proof: the key
/// resident or streamed in several chunks, a, b, c evaluated on the device
/// (from resident or streamed matrices) or on the host, the H polynomial
/// with a, b, c at once or lean (two vectors at a time), for a deferred
/// witness, its aux values plain or compact (what a pre-compiled PoRep
/// partition hands the prover: 2-bit classes, the others in full); each
/// run is checked to have taken the layout it was forced to.
fn every_small_card_layout_gives_the_cpu_proofs() {
    use cuzk_gpu::{witness_shape, HPoly, MatrixLayout, Shape, SrsMode};
    use std::sync::Arc;
    let Some((gpu, seed, mut rng)) = started("small-card layouts") else {
        return;
    };
    for (k, path) in keys() {
        let key = Arc::new(read_key(k, &path));
        let deferred = deferred_abc(k, seed);
        let (full, w) = full_and_deferred(&deferred, k, seed ^ 11);
        let compact = compact_of(&deferred, &w);
        assert!(compact.compact_aux.is_some());
        let longest = Shape::of_circuit(&w.shape()).longest_msm();
        let chunk = (longest / 4).max(cuzk_gpu::MIN_CHUNK).next_power_of_two();
        for mode in [SrsMode::Resident, SrsMode::Streamed { chunk }] {
            for h_poly in [HPoly::Full, HPoly::Lean] {
                // The deferred witness (a, b, c on the device) and the full
                // one (a, b, c from the host); with the key streamed and a,
                // b, c on the device, the matrices resident and streamed
                // beside it (a resident key beside streamed matrices: the
                // test above); a streamed key crossing through the staging
                // buffers and straight from its pin in host memory.
                let streamed_key = matches!(mode, SrsMode::Streamed { .. });
                let runs = [
                    (&w, true, MatrixLayout::Resident, false),
                    (&w, true, MatrixLayout::Streamed, false),
                    (&full, false, MatrixLayout::Resident, false),
                    (&w, true, MatrixLayout::Resident, true),
                    (&w, true, MatrixLayout::Streamed, true),
                    (&full, false, MatrixLayout::Resident, true),
                    (&compact, true, MatrixLayout::Resident, false),
                    (&compact, true, MatrixLayout::Streamed, true),
                ];
                for (witness, on_device, matrices, pinned) in runs {
                    if (matrices == MatrixLayout::Streamed || pinned) && !streamed_key {
                        continue;
                    }
                    gpu.force_layout_with(Some((mode, h_poly, matrices)));
                    if pinned {
                        gpu.prepare_key(&key).unwrap();
                        assert!(gpu.resident_keys().pinned_bytes() > 0);
                    } else if streamed_key {
                        gpu.resident_keys().evict(&key).unwrap();
                        assert_eq!(gpu.resident_keys().pinned_bytes(), 0);
                    }
                    let what = format!(
                        "2^{k}, {mode}, {h_poly:?} H, aux {}, a, b, c on the {}, key {}",
                        if witness.compact_aux.is_some() {
                            "compact"
                        } else {
                            "plain"
                        },
                        if on_device {
                            format!("device (matrices {matrices:?})")
                        } else {
                            "host".to_string()
                        },
                        if pinned { "pinned" } else { "staged" }
                    );
                    let out = proved_as_on_cpu(&gpu, &key, witness, &full, &mut rng, &what);
                    let plan = gpu.last_plan().unwrap();
                    assert_eq!((plan.mode, plan.h_poly), (mode, h_poly), "{what}: {plan}");
                    assert_eq!(plan.abc_on_device(), on_device, "{what}: {plan}");
                    if streamed_key && on_device {
                        assert_eq!(
                            plan.matrices_streamed().is_some(),
                            matrices == MatrixLayout::Streamed,
                            "{what}: {plan}"
                        );
                        assert_eq!(plan.gather_len, witness_shape(witness).aux, "{what}");
                        // L's, A's and B's chunks crossed among H's, in one
                        // stage.
                        assert!(plan.interleaved, "{what}: {plan}");
                        assert!(
                            out.timings.get("msm_h_l_a_b").is_some(),
                            "{what}: {:?}",
                            out.timings.stages
                        );
                    }
                    let stages = stage_list(&out.timings.stages, 2);
                    eprintln!("{what}: identical [{}]", stages);
                }
            }
        }
        gpu.force_layout(None);
        // The next key starts with none pinned.
        gpu.resident_keys().evict(&key).unwrap();
    }
}

/// Three partitions of one circuit (two plain witnesses and a compact
/// one) through `msm_sums_batch` with the key streamed and a, b, c on the
/// device, H full and lean, matrices resident and streamed: each member's
/// proof byte-identical to the CPU's with the same r and s, and the batch
/// moved the key bytes of one partition (every chunk crossed once: each
/// member's share a third).
fn a_batch_over_one_key_pass_gives_each_partition_the_cpu_proof() {
    use cuzk_gpu::{HPoly, MatrixLayout, Shape, SrsMode};
    use cuzk_groth16::prover::{finish, StageTimings};
    use std::sync::Arc;
    let Some((gpu, seed, mut rng)) = started("a batch over one key pass") else {
        return;
    };
    for (k, path) in keys() {
        let key = Arc::new(read_key(k, &path));
        let deferred = deferred_abc(k, seed);
        let (full0, w0) = full_and_deferred(&deferred, k, seed ^ 21);
        let (full1, w1) = full_and_deferred(&deferred, k, seed ^ 22);
        let (full2, w2) = full_and_deferred(&deferred, k, seed ^ 23);
        let compact2 = compact_of(&deferred, &w2);
        let longest = Shape::of_circuit(&w0.shape()).longest_msm();
        let chunk = (longest / 4).max(cuzk_gpu::MIN_CHUNK).next_power_of_two();
        let mode = SrsMode::Streamed { chunk };
        gpu.prepare_key(&key).unwrap();
        for h_poly in [HPoly::Full, HPoly::Lean] {
            for matrices in [MatrixLayout::Resident, MatrixLayout::Streamed] {
                gpu.force_layout_with(Some((mode, h_poly, matrices)));
                let what = format!("2^{k}, {mode}, {h_poly:?} H, matrices {matrices:?}");
                let alone = proved_as_on_cpu(&gpu, &key, &w0, &full0, &mut rng, &what);
                let one_pass = gpu.last_key_bytes();
                assert!(one_pass > 0, "{what}: the key streamed");
                let members = [&w0, &w1, &compact2];
                let mut t = vec![StageTimings::default(); 3];
                let sums = gpu.msm_sums_batch(&key, &members, &mut t).unwrap();
                assert_eq!(
                    gpu.last_key_bytes(),
                    one_pass / 3,
                    "{what}: a batch of three crosses the key once (each member's share a third)"
                );
                for (m, (sums, full)) in sums.iter().zip([&full0, &full1, &full2]).enumerate() {
                    let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
                    let cpu = prove_with(&CpuBackend, &key, full, r, s).unwrap();
                    assert_eq!(
                        finish(&key, sums, r, s).unwrap().to_bytes(),
                        cpu.proof.to_bytes(),
                        "{what}: member {m}'s batched proof differs from the CPU's"
                    );
                    assert!(
                        t[m].get("msm_batch_share").is_some(),
                        "{what}: {:?}",
                        t[m].stages
                    );
                }
                eprintln!(
                    "{what}: three partitions identical over one pass ({} key bytes; one alone: [{}]; member 0 in the batch: [{}])",
                    one_pass,
                    stage_list(&alone.timings.stages, 2),
                    stage_list(&t[0].stages, 2)
                );
            }
        }
        gpu.force_layout(None);
        gpu.resident_keys().evict(&key).unwrap();
    }
}

/// Three partitions with compact witnesses through `msm_sums_batch` as a
/// parked batch (`CudaBackend::force_parked`: the pass at the plan's own
/// small chunk, eight or more a section, so the members' H chunks cross
/// back through the two parked buffers ahead of their sums many times),
/// H full and lean, matrices resident and streamed: each member's proof
/// byte-identical to the CPU's with the same r and s, each member's share
/// of the key a third of one partition's bytes, its H coefficients n
/// scalars each way, and the report naming the batch.
fn a_parked_batch_gives_each_partition_the_cpu_proof() {
    use cuzk_gpu::{HPoly, MatrixLayout, Shape, SrsMode};
    use cuzk_groth16::prover::{finish, StageTimings};
    use std::sync::Arc;
    let Some((gpu, seed, mut rng)) = started("a parked batch") else {
        return;
    };
    for (k, path) in keys() {
        let key = Arc::new(read_key(k, &path));
        let deferred = deferred_abc(k, seed);
        let witnesses: Vec<(Synthesized, Synthesized)> = (0..3)
            .map(|i| {
                let (full, w) = full_and_deferred(&deferred, k, seed ^ (41 + i));
                let compact = compact_of(&deferred, &w);
                (full, compact)
            })
            .collect();
        let longest = Shape::of_circuit(&witnesses[0].1.shape()).longest_msm();
        let chunk = (longest / 8).next_power_of_two().max(64);
        let mode = SrsMode::Streamed { chunk };
        gpu.prepare_key(&key).unwrap();
        for h_poly in [HPoly::Full, HPoly::Lean] {
            for matrices in [MatrixLayout::Resident, MatrixLayout::Streamed] {
                gpu.force_layout_with(Some((mode, h_poly, matrices)));
                let what = format!("2^{k}, {mode}, {h_poly:?} H, matrices {matrices:?}");
                let (full0, w0) = &witnesses[0];
                proved_as_on_cpu(&gpu, &key, w0, full0, &mut rng, &what);
                let one_pass = gpu.last_key_bytes();
                assert!(one_pass > 0, "{what}: the key streamed");
                // What crossed: the key's pass and the aux values at least
                // (streamed matrices besides).
                let alone = gpu.last_crossed().unwrap();
                assert!(alone > one_pass, "{what}: {alone} bytes crossed");
                gpu.force_parked(true);
                let members: Vec<&Synthesized> = witnesses.iter().map(|(_, w)| w).collect();
                let mut t = vec![StageTimings::default(); 3];
                let sums = gpu.msm_sums_batch(&key, &members, &mut t);
                gpu.force_parked(false);
                let sums = sums.unwrap();
                let report = gpu.last_run().unwrap_or_default();
                assert!(report.contains("a parked batch of 3"), "{what}: {report}");
                assert_eq!(gpu.last_key_bytes(), one_pass / 3, "{what}: {report}");
                let n = Shape::of_circuit(&w0.shape()).domain as u64;
                assert_eq!(gpu.last_parked(), (3, (n - 1) * 32), "{what}: {report}");
                // A member's share: a third of the key's pass, its H
                // coefficients both ways, its aux values (compact) and
                // matrices.
                let member = gpu.last_crossed().unwrap();
                assert!(
                    member > one_pass / 3 + 2 * (n - 1) * 32,
                    "{what}: {member} bytes crossed a member"
                );
                for (m, (sums, (full, _))) in sums.iter().zip(&witnesses).enumerate() {
                    let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
                    let cpu = prove_with(&CpuBackend, &key, full, r, s).unwrap();
                    assert_eq!(
                        finish(&key, sums, r, s).unwrap().to_bytes(),
                        cpu.proof.to_bytes(),
                        "{what}: member {m}'s parked proof differs from the CPU's"
                    );
                    assert!(t[m].get("park_h").is_some(), "{what}: {:?}", t[m].stages);
                }
                eprintln!(
                    "{what}: three parked partitions identical ({report}; member 0: [{}])",
                    stage_list(&t[0].stages, 2)
                );
            }
        }
        gpu.force_layout(None);
        gpu.resident_keys().evict(&key).unwrap();
    }
}

/// The key streamed in small chunks (tens a section): the light sections'
/// other scalars are kept across chunks and summed when their buffer fills,
/// when their section ends, or by a chunk's own MSM when it has more than
/// the buffer holds (kept.rs). Each layout's proof is the CPU's: a, b, c on
/// the device (L's, A's and B's chunks among H's, their four buffers alive
/// at once), on the host (the sections in turn), the compact witness, and
/// a batch of two over one pass. A partition alone sums H's chunks into
/// kept buckets (cuzk-cuda `KeptBuckets`), or with them turned off each
/// chunk by an MSM of its own, as the batch's members do.
fn small_chunks_keep_the_others_and_give_the_cpu_proofs() {
    use cuzk_gpu::{HPoly, MatrixLayout, Shape, SrsMode};
    use cuzk_groth16::prover::{finish, StageTimings};
    let Some((gpu, seed, mut rng)) = started("small chunks") else {
        return;
    };
    for (k, path) in keys() {
        let key = read_key(k, &path);
        let deferred = deferred_abc(k, seed);
        let (full, w) = full_and_deferred(&deferred, k, seed ^ 31);
        let compact = compact_of(&deferred, &w);
        let longest = Shape::of_circuit(&w.shape()).longest_msm();
        let chunk = (longest / 32).next_power_of_two().max(64);
        let mode = SrsMode::Streamed { chunk };
        gpu.force_layout_with(Some((mode, HPoly::Full, MatrixLayout::Resident)));
        for (witness, which) in [(&w, "deferred"), (&full, "full"), (&compact, "compact")] {
            let what = format!("2^{k}, chunks of {chunk}, {which} witness");
            let out = proved_as_on_cpu(&gpu, &key, witness, &full, &mut rng, &what);
            let plan = gpu.last_plan().unwrap();
            assert_eq!(plan.mode, mode, "{what}: {plan}");
            assert_eq!(plan.interleaved, which != "full", "{what}: {plan}");
            // H's chunks summed into kept buckets (one MSM, one reduction).
            assert!(plan.h_kept.is_some(), "{what}: {plan}");
            eprintln!("{what}: identical [{}]", stage_list(&out.timings.stages, 2));
        }
        // The kept buckets off: each H chunk an MSM of its own, the same proof.
        gpu.set_kept_h(false);
        let what = format!("2^{k}, chunks of {chunk}, deferred witness, no kept buckets");
        proved_as_on_cpu(&gpu, &key, &w, &full, &mut rng, &what);
        let plan = gpu.last_plan().unwrap();
        gpu.set_kept_h(true);
        assert_eq!(plan.h_kept, None, "{what}: {plan}");
        eprintln!("{what}: identical");
        let (full1, w1) = full_and_deferred(&deferred, k, seed ^ 32);
        let mut t = vec![StageTimings::default(); 2];
        let sums = gpu.msm_sums_batch(&key, &[&w, &w1], &mut t).unwrap();
        for (m, (sums, full)) in sums.iter().zip([&full, &full1]).enumerate() {
            let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let cpu = prove_with(&CpuBackend, &key, full, r, s).unwrap();
            assert_eq!(
                finish(&key, sums, r, s).unwrap().to_bytes(),
                cpu.proof.to_bytes(),
                "2^{k}, chunks of {chunk}: member {m}'s batched proof differs from the CPU's"
            );
        }
        eprintln!("2^{k}, chunks of {chunk}: a batch of two identical");
        gpu.force_layout(None);
    }
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "gpu_prover",
        &cuzk_testkit::gpu_tests![
            gpu_proofs_are_byte_identical_to_cpu_proofs,
            shifted_h_gives_the_cpu_proofs,
            key_mismatch_fails_before_any_kernel,
            streamed_key_gives_the_same_proofs_as_resident,
            too_small_a_budget_fails_with_both_numbers,
            shared_workers_keep_two_keys_resident,
            deferred_abc_on_the_device_gives_the_cpu_proofs,
            deferred_abc_with_streamed_matrices_gives_the_cpu_proofs,
            every_small_card_layout_gives_the_cpu_proofs,
            a_batch_over_one_key_pass_gives_each_partition_the_cpu_proof,
            a_parked_batch_gives_each_partition_the_cpu_proof,
            small_chunks_keep_the_others_and_give_the_cpu_proofs
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
