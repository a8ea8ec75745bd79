//! The GPU path at a real PoRep partition's size, on a machine that has a
//! CUDA device, the sector's key and a C1 (made by `cuzk fixtures keys` and
//! `cuzk fixtures synth-sector`; `benches/device/full-scale.sh` runs this):
//! one partition synthesized once, proved by the CUDA backend and by the CPU
//! backend with the same r and s, must give the same 192 bytes, valid under
//! the key with the partition's public inputs. At 32 GiB that is a domain of
//! 2^27 rows and 130 M aux variables: indices, plans and scratch at full
//! size.
//!
//! With a recording (`CUZK_GPU_R1CS`, made by `cuzk precompile`) the
//! partition takes the path `porep-c2 --synthesis precompiled` takes: the
//! native witness, a, b, c left to the prover (computed on the device from
//! the recording's matrices), and the GPU proves it twice, H's MSM over plain
//! and over shifted bases; all three proofs must be equal. Without one it is
//! synthesized in full, challenges in parallel.
//!
//! Environment: `CUZK_GPU_C1` (the C1 file), `FIL_PROOFS_PARAMETER_CACHE`
//! (the key's folder), `CUZK_GPU_PARTITION` (default 0), `CUZK_GPU_R1CS`
//! (optional). Without `CUZK_GPU_C1` or a CUDA device the test is reported
//! ignored and one line says why (`cuzk_testkit::gpu_suite`); a device that
//! is present but unusable (stale kernels, a driver error) fails.

use std::path::PathBuf;
use std::time::Instant;

use cuzk_filecoin::{parse_c1, ParamsDir, PorepSource, PorepSynthesis, SynthesisMode};
use cuzk_groth16::prover::{prove_with, Backend, CpuBackend, Proved};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_pipeline::PartitionSource;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn a_partition_proved_on_the_gpu_is_byte_identical_to_the_cpu_proof() {
    let Some(c1_path) = std::env::var_os("CUZK_GPU_C1") else {
        eprintln!("skipped: CUZK_GPU_C1 is not set (a C1 file and its key are needed)");
        return;
    };
    let Some(gpu) = gpu() else { return };
    let k: usize = std::env::var("CUZK_GPU_PARTITION").map_or(0, |v| v.parse().unwrap());
    let recording = std::env::var_os("CUZK_GPU_R1CS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let c1 = parse_c1(&std::fs::read(&c1_path).unwrap()).unwrap();
    cuzk_filecoin::check_c1(&c1, None).unwrap();
    let params = ParamsDir::filecoin();
    let t = Instant::now();
    let key = params.load_proving_key(c1.proof_type).unwrap();
    eprintln!("key loaded in {:.1?}", t.elapsed());
    let synthesis = match &recording {
        Some(path) => {
            let (synthesis, fallback) = PorepSynthesis::for_mode(
                SynthesisMode::Precompiled,
                c1.proof_type,
                &params,
                Some(path),
                Some(&key),
            );
            if let Some(e) = fallback {
                panic!("the recording {} cannot be used: {e}", path.display());
            }
            synthesis
        }
        None => PorepSynthesis::default(),
    };
    let source = PorepSource::with_synthesis(&c1, &key, &synthesis).unwrap();
    let inputs = source
        .public_inputs(k)
        .unwrap()
        .expect("PoRep knows its inputs");
    let t = Instant::now();
    let witness = source.synthesize(k).unwrap();
    let shape = witness.shape();
    eprintln!(
        "partition {k}: {} constraints (domain 2^{}), {} aux, synthesized ({}) in {:.1?}; \
         a, b, c {}",
        shape.num_constraints,
        shape.domain_log2,
        shape.num_aux,
        synthesis.mode(),
        t.elapsed(),
        if witness.deferred.is_some() {
            "left to the prover"
        } else {
            "computed on the host"
        }
    );
    let seed = 20261201;
    eprintln!("r, s from seed {seed}");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (r, s) = (
        blstrs::Scalar::random(&mut rng),
        blstrs::Scalar::random(&mut rng),
    );
    let report = |what: &str, out: &Proved| {
        eprintln!(
            "{what}: {} {:.2?} ({:?})",
            out.backend, out.wall, out.timings.stages
        );
    };
    let mut on_gpu = Vec::new();
    // H over plain bases, then (pre-compiled only: the path a daemon takes
    // with shifted H) over shifted copies, when the plan finds room for them.
    let variants: &[bool] = if recording.is_some() {
        &[false, true]
    } else {
        &[false]
    };
    for &shifted in variants {
        gpu.set_shifted_h(shifted);
        let out = prove_with(&gpu, &key, &witness, r, s).unwrap();
        let plan = gpu.last_plan().expect("the GPU made a plan");
        let what = format!(
            "GPU, H {}",
            if plan.h_shift.is_some() {
                "over shifted bases"
            } else {
                "over plain bases"
            }
        );
        report(&what, &out);
        eprintln!(
            "  plan: {:?}, a, b, c on the device: {}",
            plan.mode,
            plan.abc_on_device()
        );
        assert!(
            out.backend.starts_with("cuda"),
            "the GPU path must have run on the GPU, not {}",
            out.backend
        );
        if recording.is_some() {
            assert!(
                plan.abc_on_device(),
                "a pre-compiled partition on the H200 computes a, b, c on the device"
            );
        }
        assert_eq!(
            plan.h_shift.is_some(),
            shifted,
            "shifted H was {} but the plan says {:?}",
            if shifted { "asked for" } else { "off" },
            plan.h_shift
        );
        on_gpu.push((what, out));
    }
    let on_cpu = prove_with(&CpuBackend, &key, &witness, r, s).unwrap();
    report("CPU", &on_cpu);
    assert_eq!(on_cpu.backend, CpuBackend.name());
    for (what, out) in &on_gpu {
        assert_eq!(
            out.proof.to_bytes(),
            on_cpu.proof.to_bytes(),
            "the {what} and CPU proofs of partition {k} differ"
        );
    }
    let pvk = PreparedVerifyingKey::new(&key.vk);
    assert!(verify_proof(&pvk, &on_cpu.proof, &inputs).unwrap());
    eprintln!(
        "partition {k}: {} GPU proof(s) and the CPU proof byte-identical and valid",
        on_gpu.len()
    );
}

/// Partitions 0..B (B = `CUZK_GPU_BATCH`, default 4) of the C1, pre-compiled
/// (`CUZK_GPU_R1CS` is needed: the batch shares the device's a, b, c),
/// proved with the key streamed in 2^23-point chunks (a, b, c on the device,
/// matrices resident, the key pinned in host memory): one at a time, then
/// as batches of 2 and of B over one pass of the key each
/// (`CudaBackend::msm_sums_batch`). Every batched proof must equal the same
/// partition's proof alone (same r, s) and verify; the wall time and key
/// bytes per partition of each are printed. Run alone with the filter
/// `batch` (the other test spends minutes on the CPU prover).
fn a_batch_of_partitions_crosses_the_key_once_and_proves_each_as_alone() {
    use cuzk_gpu::{HPoly, MatrixLayout, SrsMode};
    use cuzk_groth16::prover::{finish, StageTimings};
    let (Some(c1_path), Some(r1cs)) = (
        std::env::var_os("CUZK_GPU_C1"),
        std::env::var_os("CUZK_GPU_R1CS").filter(|v| !v.is_empty()),
    ) else {
        eprintln!("skipped: a batch needs CUZK_GPU_C1 and CUZK_GPU_R1CS (a pre-compiled circuit)");
        return;
    };
    let Some(gpu) = gpu() else { return };
    let b: usize = std::env::var("CUZK_GPU_BATCH").map_or(4, |v| v.parse().unwrap());
    let c1 = parse_c1(&std::fs::read(&c1_path).unwrap()).unwrap();
    cuzk_filecoin::check_c1(&c1, None).unwrap();
    let params = ParamsDir::filecoin();
    let key = std::sync::Arc::new(params.load_proving_key(c1.proof_type).unwrap());
    let (synthesis, fallback) = PorepSynthesis::for_mode(
        SynthesisMode::Precompiled,
        c1.proof_type,
        &params,
        Some(&PathBuf::from(r1cs)),
        Some(&key),
    );
    if let Some(e) = fallback {
        panic!("the recording cannot be used: {e}");
    }
    let source = PorepSource::with_synthesis(&c1, &key, &synthesis).unwrap();
    let parts = source.num_partitions();
    assert!(
        b >= 2 && b <= parts,
        "CUZK_GPU_BATCH={b}: 2..={parts} partitions"
    );
    let t = Instant::now();
    let witnesses: Vec<_> = (0..b).map(|k| source.synthesize(k).unwrap()).collect();
    let inputs: Vec<_> = (0..b)
        .map(|k| {
            source
                .public_inputs(k)
                .unwrap()
                .expect("PoRep knows its inputs")
        })
        .collect();
    eprintln!("{b} partitions synthesized in {:.1?}", t.elapsed());
    gpu.force_layout_with(Some((
        SrsMode::Streamed { chunk: 1 << 23 },
        HPoly::Full,
        MatrixLayout::Resident,
    )));
    gpu.prepare_key(&key).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(20261205);
    let rs: Vec<_> = (0..b)
        .map(|_| {
            (
                blstrs::Scalar::random(&mut rng),
                blstrs::Scalar::random(&mut rng),
            )
        })
        .collect();
    // One at a time (the first one warms the worker: matrices up, scratch made).
    let warm = prove_with(&gpu, &key, &witnesses[0], rs[0].0, rs[0].1).unwrap();
    let t = Instant::now();
    let mut alone = Vec::new();
    let mut alone_bytes = 0;
    for (w, &(r, s)) in witnesses.iter().zip(&rs) {
        alone.push(prove_with(&gpu, &key, w, r, s).unwrap().proof.to_bytes());
        alone_bytes += gpu.last_key_bytes();
    }
    let alone_wall = t.elapsed().as_secs_f64();
    assert_eq!(alone[0], warm.proof.to_bytes());
    eprintln!(
        "alone: {:.3} s per partition, {:.2} GB of key crossed per partition ({})",
        alone_wall / b as f64,
        alone_bytes as f64 / 1e9 / b as f64,
        gpu.last_run().unwrap_or_default()
    );
    let pvk = PreparedVerifyingKey::new(&key.vk);
    for members in [2, b] {
        let refs: Vec<_> = witnesses[..members].iter().collect();
        let mut timings = vec![StageTimings::default(); members];
        let t = Instant::now();
        let sums = gpu.msm_sums_batch(&key, &refs, &mut timings).unwrap();
        let proofs: Vec<_> = sums
            .iter()
            .zip(&rs)
            .map(|(sums, &(r, s))| finish(&key, sums, r, s).unwrap())
            .collect();
        let wall = t.elapsed().as_secs_f64();
        for (k, proof) in proofs.iter().enumerate() {
            assert_eq!(
                proof.to_bytes(),
                alone[k],
                "partition {k}: batched proof differs from alone"
            );
            assert!(
                verify_proof(&pvk, proof, &inputs[k]).unwrap(),
                "partition {k}"
            );
        }
        eprintln!(
            "batch of {members}: {:.3} s per partition ({:.2}x alone), {:.2} GB of key crossed per partition; member 0's stages {:?}",
            wall / members as f64,
            (wall / members as f64) / (alone_wall / b as f64),
            gpu.last_key_bytes() as f64 / 1e9,
            timings[0].stages
        );
    }
    gpu.force_layout(None);
}

/// The first CUDA device's backend; `None` (and a line saying so) without
/// one; a device that is present but unusable fails the test.
fn gpu() -> Option<cuzk_gpu::CudaBackend> {
    match cuzk_gpu::CudaBackend::first() {
        Ok(Some(gpu)) => Some(gpu),
        Ok(None) => {
            eprintln!("skipped: no CUDA device");
            None
        }
        Err(e) => panic!("a CUDA device is present but unusable: {e}"),
    }
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "gpu_full_scale",
        &cuzk_testkit::gpu_tests![
            a_partition_proved_on_the_gpu_is_byte_identical_to_the_cpu_proof,
            a_batch_of_partitions_crosses_the_key_once_and_proves_each_as_alone
        ],
        missing().as_deref(),
    )
}

/// Why this suite cannot run here, or `None` where it has its C1 and the
/// driver reports a CUDA device, usable or not (an unusable one fails it).
fn missing() -> Option<String> {
    if std::env::var_os("CUZK_GPU_C1").is_none() {
        return Some("CUZK_GPU_C1 is not set (a C1 file and its key are needed)".into());
    }
    cuzk_cuda::no_device()
}
