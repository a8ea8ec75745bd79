//! What the benchmarks over the demo circuit and random data share: the
//! sizes a run measures, a one-thread pool for core-second figures, and
//! the demo circuit recorded.

// Each benchmark uses part of this module.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use cuzk_benches::BenchArgs;
use cuzk_synth::precompiled::{record, R1cs};
use cuzk_synth::DemoCircuit;

/// The log2 sizes a run measures: `smoke` under `--test` (the CI smoke run),
/// else `full`.
pub(crate) fn sizes(args: &BenchArgs, smoke: &[u32], full: &[u32]) -> Vec<u32> {
    if args.smoke { smoke } else { full }.to_vec()
}

/// A rayon pool of one thread: what one core does alone.
pub(crate) fn one_thread_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
}

/// The 2^`k` demo circuit at the default SHA share, its recording, and the
/// time the recording took.
pub(crate) fn recorded_demo(k: u32) -> (DemoCircuit, R1cs, Duration) {
    let circuit = DemoCircuit::new(k, DemoCircuit::DEFAULT_SHA_SHARE, 1);
    let started = Instant::now();
    let r1cs = record(circuit.clone()).expect("records");
    (circuit, r1cs, started.elapsed())
}
