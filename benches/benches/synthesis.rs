//! Synthesis of one demo partition on every rayon thread (lanes in parallel,
//! joined with `extend`) against the same synthesis on a one-thread pool,
//! 2^20..2^24 at the default SHA share. Both must give the same witness.
//!
//! `cargo bench -p cuzk-benches --bench synthesis [-- 2^24 --repeats 3]`

mod common;

use cuzk_benches::{median_time, ms, report, BenchArgs, Row};
use cuzk_synth::{synthesize, DemoCircuit};

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[12], &[20, 22, 24]);
    let threads = rayon::current_num_threads();
    let one = common::one_thread_pool();
    let mut rows = Vec::new();
    for &k in &sizes {
        let case = format!("demo 2^{k} sha 95%");
        if !args.wants(&case) {
            continue;
        }
        let circuit = DemoCircuit::new(k, DemoCircuit::DEFAULT_SHA_SHARE, 1);
        let plan = circuit.plan();
        // Same witness first.
        let all = synthesize(circuit.clone()).expect("synthesizes");
        let single = one
            .install(|| synthesize(circuit.clone()))
            .expect("synthesizes");
        assert!(all == single, "2^{k}: thread count changed the witness");
        drop((all, single));

        let ours = median_time(args.repeats, !args.smoke, || {
            drop(synthesize(circuit.clone()).expect("synthesizes"))
        });
        let base = median_time(args.repeats, !args.smoke, || {
            drop(
                one.install(|| synthesize(circuit.clone()))
                    .expect("synthesizes"),
            )
        });
        rows.push(Row {
            case: format!(
                "{case}, {} lanes, {threads} thr",
                plan.sha_lanes() + plan.chain_lanes()
            ),
            size_log2: k,
            ours_ms: ms(ours),
            baseline: "same on 1 thread".into(),
            baseline_ms: ms(base),
        });
    }
    report("synthesis", &rows);
}
