//! A PoRep partition circuit through cuzk-synth's pre-compiled path: the
//! circuit recorded once (distinct coefficients, nonzeros, bytes per
//! nonzero, cache file size and checked open time), then full synthesis
//! against witness-only synthesis plus a, b, c from the matrices, which
//! must give the same `Synthesized`.
//!
//! ```sh
//! # A real partition (from a C1 output, e.g. `cargo xtask fixtures seal --out c1.json`):
//! cargo run --release -p cuzk-filecoin --example precompiled_porep -- --c1 c1.json
//! # The blank circuit of a sector size: the recording's numbers only (no witness):
//! cargo run --release -p cuzk-filecoin --example precompiled_porep -- --sector-size 512MiB
//! ```
//!
//! Times are medians of `--repeats N` (default 3) wall times on every rayon
//! thread; `--threads 1` runs on a one-thread pool (core-seconds).

use std::time::{Duration, Instant};

mod common;

use bellperson::Circuit;
use blstrs::Scalar as Fr;
use common::{measure_partition, print_machine, Args, ExampleResult, Measure};
use cuzk_synth::precompiled::{cache, record, witness, CircuitId, MappedR1cs};
use cuzk_synth::synthesize;

fn median(repeats: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..repeats.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Records the circuit `make` builds and prints what the recording holds;
/// with `witnessed`, also times full against pre-compiled synthesis.
fn run<C: Circuit<Fr> + Send>(label: &str, make: &dyn Fn() -> C, witnessed: bool, repeats: usize) {
    println!("circuit: {label}");
    let t = Instant::now();
    let r1cs = record(make()).expect("records");
    let record_time = t.elapsed();
    let shape = r1cs.shape().clone();
    let stats = r1cs.as_ref().stats();
    println!(
        "  constraints {}, inputs {}, aux {}, density a_aux {} b_input {} b_aux {}",
        shape.num_constraints,
        shape.num_inputs,
        shape.num_aux,
        shape.a_aux_density,
        shape.b_input_density,
        shape.b_aux_density
    );
    let nonzeros: usize = stats.nonzeros.iter().sum();
    println!(
        "  nonzeros A {} B {} C {} ({nonzeros}), {} distinct coefficients ({}-byte ids)",
        stats.nonzeros[0],
        stats.nonzeros[1],
        stats.nonzeros[2],
        stats.distinct_coeffs,
        stats.coeff_id_bytes
    );
    println!(
        "  matrices {} bytes, {:.2} bytes per nonzero (row offsets included); recorded in {:.3} s",
        stats.matrix_bytes,
        stats.bytes_per_nonzero,
        record_time.as_secs_f64()
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("porep.r1cs");
    let id = CircuitId::from_name(label);
    cache::write(&path, &id, &r1cs).expect("writes the cache file");
    drop(r1cs);
    let open = median(repeats, || {
        drop(MappedR1cs::open(&path, &id).expect("opens"))
    });
    let mapped = MappedR1cs::open(&path, &id).expect("opens");
    println!(
        "  cache file {} bytes, opened and checked in {:.3} s",
        mapped.file_bytes(),
        open.as_secs_f64()
    );
    if !witnessed {
        return;
    }
    let full = synthesize(make()).expect("full synthesis");
    let fast = mapped
        .as_ref()
        .synthesize(witness(make()).expect("witness"))
        .expect("the witness fits");
    assert!(
        fast == full,
        "pre-compiled synthesis differs from full synthesis"
    );
    drop((full, fast));
    let old = median(repeats, || {
        drop(synthesize(make()).expect("full synthesis"))
    });
    let only_witness = median(repeats, || drop(witness(make()).expect("witness")));
    let new = median(repeats, || {
        let w = witness(make()).expect("witness");
        drop(mapped.as_ref().synthesize(w).expect("fits"))
    });
    println!("  full synthesis             {:>9.3} s", old.as_secs_f64());
    println!(
        "  witness-only synthesis     {:>9.3} s",
        only_witness.as_secs_f64()
    );
    println!(
        "  witness-only + a, b, c     {:>9.3} s  (new / old {:.3})",
        new.as_secs_f64(),
        new.as_secs_f64() / old.as_secs_f64()
    );
}

/// The recording's numbers of each circuit, and with a witness the two
/// syntheses timed (`repeats` runs).
struct Recording {
    repeats: usize,
}

impl Measure for Recording {
    fn measure<C: Circuit<Fr> + Send>(&self, label: &str, make: &dyn Fn() -> C, witnessed: bool) {
        run(label, make, witnessed, self.repeats)
    }
}

fn main() -> ExampleResult {
    let args = Args::from_env();
    let repeats: usize = args.value("--repeats").map_or(Ok(3), |v| v.parse())?;
    let threads: usize = args.value("--threads").map_or(Ok(0), |v| v.parse())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    print_machine(pool.current_num_threads());
    pool.install(|| measure_partition(&args, &Recording { repeats }))
}
