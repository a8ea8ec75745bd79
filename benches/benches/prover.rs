//! The CPU prover against bellperson 0.27's CPU prover: same demo circuit,
//! same key, same seeded RNG, measured in one run. Both sides include
//! synthesis (bellperson's `create_random_proof` synthesizes internally).
//! Keys are generated once by bellperson and cached under target/bench-keys.

mod common;

use std::path::PathBuf;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use cuzk_benches::{median_time, ms, report, BenchArgs, Row};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::prover::{prove_batch, CpuBackend};
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize, DemoCircuit};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn key_for(k: u32, share: f64) -> ProvingKey {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("demo-{k}-{}.params", (share * 100.0) as u32));
    if let Ok(key) = ProvingKey::read_from_path(&path, PointCheck::OnCurve) {
        return key;
    }
    let t = std::time::Instant::now();
    let key = generate_key(
        DemoCircuit::new(k, share, 0),
        &mut ChaCha20Rng::seed_from_u64(k as u64),
    )
    .unwrap();
    eprintln!(
        "setup 2^{k} (bellperson generator): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    key.write_to_path(&path).unwrap();
    key
}

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[10], &[16, 18]);
    let share = 0.95;
    let mut rows = Vec::new();
    for &k in &sizes {
        let key = key_for(k, share);
        let mut bytes = Vec::new();
        key.write(&mut bytes).unwrap();
        let params = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
        drop(bytes);
        let circuit = DemoCircuit::new(k, share, 1);

        // Same proof bytes first: the comparison is only fair if the work is the same.
        let ours = prove_batch(
            &CpuBackend,
            &key,
            &[synthesize(circuit.clone()).unwrap()],
            &mut ChaCha20Rng::seed_from_u64(9),
        )
        .unwrap();
        let theirs =
            bp::create_random_proof(circuit.clone(), &params, &mut ChaCha20Rng::seed_from_u64(9))
                .unwrap();
        let mut tb = Vec::new();
        theirs.write(&mut tb).unwrap();
        assert_eq!(
            ours[0].proof.to_bytes().to_vec(),
            tb,
            "proofs differ at 2^{k}"
        );

        let cuzk = median_time(args.repeats, !args.smoke, || {
            let w = synthesize(circuit.clone()).unwrap();
            std::hint::black_box(
                prove_batch(&CpuBackend, &key, &[w], &mut ChaCha20Rng::seed_from_u64(9)).unwrap(),
            );
        });
        let bell = median_time(args.repeats, !args.smoke, || {
            std::hint::black_box(
                bp::create_random_proof(
                    circuit.clone(),
                    &params,
                    &mut ChaCha20Rng::seed_from_u64(9),
                )
                .unwrap(),
            );
        });
        rows.push(Row {
            case: format!("prove demo {:.0}% sha", share * 100.0),
            size_log2: k,
            ours_ms: ms(cuzk),
            baseline: "bellperson 0.27 cpu".into(),
            baseline_ms: ms(bell),
        });
    }
    report("prover", &rows);
}
