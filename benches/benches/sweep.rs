//! The pipeline sweep (`src/bin/sweep`) under `cargo bench`: with `--test`
//! (CI) it runs the sweep's two smoke points, the demo circuit at 2^10 and a
//! synthetic 2 KiB PoRep sector checked by `verify_seal`, so both circuits'
//! paths stay working; without it, it says how to run a real sweep (a grid is
//! minutes to hours: `cargo xtask bench --help`).
//!
//! The 2 KiB test keys are the ones the workspace's tests make
//! (`<target>/tmp/filecoin-proof-parameters`); made here when absent (~2.5
//! min on 2 cores, once per target directory).

use std::path::PathBuf;
use std::process::Command;

use cuzk_benches::BenchArgs;
use cuzk_filecoin::{ParamsDir, ProofType};

fn main() {
    let args = BenchArgs::from_env();
    if !args.smoke {
        println!(
            "sweep: run `cargo xtask bench --help` (or target/release/sweep --help) for a real sweep"
        );
        return;
    }
    let sweep = env!("CARGO_BIN_EXE_sweep");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-smoke");
    run(Command::new(sweep)
        .args(["--smoke", "--out"])
        .arg(out.join("demo")));

    let params = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters");
    let dir = ParamsDir::new(&params);
    let pt = ProofType::from_name("StackedDrg2KiBV1_1").expect("a known proof type");
    if dir.check(pt).is_err() {
        eprintln!("making the 2 KiB test keys in {}", params.display());
        dir.generate_test_keys(pt, 0)
            .expect("generating the 2 KiB test keys");
    }
    run(Command::new(sweep)
        .args(["--smoke", "--circuit", "porep", "--params-dir"])
        .arg(&params)
        .arg("--out")
        .arg(out.join("porep")));
}

fn run(cmd: &mut Command) {
    eprintln!("running {cmd:?}");
    let status = cmd.status().expect("starting the sweep");
    assert!(status.success(), "{cmd:?} failed: {status}");
}
