//! The GPU kernel benchmarks (`src/bin/ntt_bench.rs`, `msm_bench.rs`, `abc_bench.rs`,
//! `copy_overlap.rs`)
//! under `cargo bench`: with `--test` (CI) each binary runs once with
//! `--smoke` (on a machine without a CUDA device it says it skipped and
//! exits 0), so the CI command stays one line; without it, it says how to run
//! them for real (on the GPU machine, through `cargo xtask bundle`).

use std::process::Command;

use cuzk_benches::BenchArgs;

fn main() {
    let args = BenchArgs::from_env();
    let benches = [
        env!("CARGO_BIN_EXE_ntt_bench"),
        env!("CARGO_BIN_EXE_msm_bench"),
        env!("CARGO_BIN_EXE_abc_bench"),
        env!("CARGO_BIN_EXE_copy_overlap"),
    ];
    if !args.smoke {
        println!(
            "kernels: run target/release/ntt_bench, msm_bench, abc_bench and copy_overlap (--help) on a GPU machine, \
             or `cargo xtask bundle --arch sm_90` and bundle/run.sh benches"
        );
        return;
    }
    for bench in benches {
        eprintln!("running {bench} --smoke");
        let status = Command::new(bench)
            .arg("--smoke")
            .status()
            .expect("starting the kernel benchmark");
        assert!(status.success(), "{bench} --smoke failed: {status}");
    }
}
