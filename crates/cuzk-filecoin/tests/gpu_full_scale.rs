//! The GPU path at a real PoRep partition's size, on a machine that has a
//! CUDA device, the sector's key and a C1 (made by `cuzk fixtures keys` and
//! `cuzk fixtures synth-sector`; `benches/device/full-scale.sh` runs this):
//! one partition synthesized once, proved by the CUDA backend and by the CPU
//! backend with the same r and s, must give the same 192 bytes, valid under
//! the key with the partition's public inputs. At 32 GiB that is a domain of
//! 2^27 rows and 130 M aux variables: indices, plans and scratch at full
//! size. Elsewhere it says why it skipped.
//!
//! Environment: `CUZK_GPU_C1` (the C1 file), `FIL_PROOFS_PARAMETER_CACHE`
//! (the key's folder), `CUZK_GPU_PARTITION` (default 0).

use std::time::Instant;

use cuzk_filecoin::{parse_c1, ParamsDir, PorepSource};
use cuzk_groth16::prover::{prove_with, CpuBackend};
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_pipeline::PartitionSource;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn a_partition_proved_on_the_gpu_is_byte_identical_to_the_cpu_proof() {
    let Some(c1_path) = std::env::var_os("CUZK_GPU_C1") else {
        eprintln!("skipped: CUZK_GPU_C1 is not set (a C1 file and its key are needed)");
        return;
    };
    let gpu = match cuzk_gpu::CudaBackend::first() {
        Ok(Some(gpu)) => gpu,
        Ok(None) => {
            eprintln!("skipped: no CUDA device");
            return;
        }
        Err(e) => panic!("a CUDA device is present but unusable: {e}"),
    };
    let k: usize = std::env::var("CUZK_GPU_PARTITION").map_or(0, |v| v.parse().unwrap());
    let c1 = parse_c1(&std::fs::read(&c1_path).unwrap()).unwrap();
    cuzk_filecoin::check_c1(&c1, None).unwrap();
    let params = ParamsDir::filecoin();
    let t = Instant::now();
    let key = params.load_proving_key(c1.proof_type).unwrap();
    eprintln!("key loaded in {:.1?}", t.elapsed());
    let source = PorepSource::new(&c1, &key).unwrap();
    let inputs = source
        .public_inputs(k)
        .unwrap()
        .expect("PoRep knows its inputs");
    let t = Instant::now();
    let witness = source.synthesize(k).unwrap();
    let shape = witness.shape();
    eprintln!(
        "partition {k}: {} constraints (domain 2^{}), {} aux, synthesized in {:.1?}",
        shape.num_constraints,
        shape.domain_log2,
        shape.num_aux,
        t.elapsed()
    );
    let seed = 20261201;
    eprintln!("r, s from seed {seed}");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (r, s) = (
        blstrs::Scalar::random(&mut rng),
        blstrs::Scalar::random(&mut rng),
    );
    let on_gpu = prove_with(&gpu, &key, &witness, r, s).unwrap();
    eprintln!(
        "{}: {:.2?} ({:?})",
        on_gpu.backend, on_gpu.wall, on_gpu.timings.stages
    );
    let on_cpu = prove_with(&CpuBackend, &key, &witness, r, s).unwrap();
    eprintln!("{}: {:.2?}", on_cpu.backend, on_cpu.wall);
    assert!(
        on_gpu.backend.starts_with("cuda"),
        "the GPU path must have run on the GPU, not {}",
        on_gpu.backend
    );
    assert_eq!(
        on_gpu.proof.to_bytes(),
        on_cpu.proof.to_bytes(),
        "the GPU and CPU proofs of partition {k} differ"
    );
    let pvk = PreparedVerifyingKey::new(&key.vk);
    assert!(verify_proof(&pvk, &on_gpu.proof, &inputs).unwrap());
    eprintln!("partition {k}: GPU and CPU proofs byte-identical and valid");
}
