//! Key generation from a pre-compiled circuit's recording against key
//! generation from the circuit (its synthesis into the key assembly), on
//! the demo circuit (default SHA share), the fixed-base step on the CPU.
//! The recording is made once, as `cuzk precompile` does for PoRep, and its
//! time is shown beside; both keys are checked byte-identical before the
//! times are reported.
//!
//! `cargo bench -p cuzk-benches --bench keygen [-- 2^20 --repeats 1]`

mod common;

use std::time::{Duration, Instant};

use cuzk_benches::{ms, report, rng, BenchArgs, Row};
use cuzk_groth16::setup::{generate_from_recording, generate_key_with, CpuFixedBase};

/// The median over `repeats` runs of `f`, and the last run's result.
fn timed<T>(repeats: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let started = Instant::now();
        last = Some(f());
        times.push(started.elapsed());
    }
    times.sort();
    (times[times.len() / 2], last.expect("at least one run"))
}

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[12], &[16, 18, 20]);
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    for &k in &sizes {
        let name = format!("2^{k}");
        if !args.wants(&name) {
            continue;
        }
        let (circuit, r1cs, record_time) = common::recorded_demo(k);
        let (from_circuit, circuit_key) = timed(args.repeats, || {
            generate_key_with(circuit.clone(), &mut rng(k.into()), &CpuFixedBase)
                .expect("a key from the circuit")
                .to_bytes()
        });
        let (from_recording, recording_key) = timed(args.repeats, || {
            generate_from_recording(r1cs.as_ref(), &mut rng(k.into()), &CpuFixedBase)
                .expect("a key from the recording")
                .to_bytes()
        });
        assert!(
            recording_key == circuit_key,
            "{name}: the key from the recording differs"
        );
        println!(
            "{name}: {} key bytes; record {:.0} ms (once), key from circuit {:.0} ms, \
             from recording {:.0} ms",
            circuit_key.len(),
            ms(record_time),
            ms(from_circuit),
            ms(from_recording)
        );
        let row = |case: &str, ours| Row {
            case: format!("{case}, cpu fixed base, {threads} thr"),
            size_log2: k,
            ours_ms: ms(ours),
            baseline: "key from circuit".into(),
            baseline_ms: ms(from_circuit),
        };
        rows.push(row("key from recording", from_recording));
        rows.push(row("record (once)", record_time));
    }
    report("keygen", &rows);
}
