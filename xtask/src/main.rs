//! cuzk's developer tasks. Deliberately small: std, anyhow, sha2, hex, and syn + quote (already
//! in the workspace's build graph) for the public API listing.
//!
//! * `cargo xtask kernels [--arch sm_90[,sm_89…]]`: compile `kernels/manifest.toml`
//!   into one fatbin per unit in `target/kernels/` (finding nvcc, or installing the pinned
//!   PyPI wheels), with the ptxas resource report and the sources' content hash
//!   beside it.
//! * `cargo xtask bundle`: release GPU test and bench executables plus the fatbin
//!   into `bundle/`, with `run.sh` to run them all on a machine without cargo.
//! * `cargo xtask install [--prefix DIR]`: kernels, `cargo install` of `cuzk`, and the
//!   fatbins beside it in `DIR/lib/cuzk/kernels` (xtask/src/install.rs).
//! * `cargo xtask bench`: the pipeline sweep (xtask/src/bench.rs).
//! * `cargo xtask demo`: the README's main command (xtask/src/demo.rs).
//! * `cargo xtask fixtures`: Filecoin test keys, official parameters, sample C1 (xtask/src/fixtures.rs).
//! * `cargo xtask api`: the library crates' public API snapshots in `xtask/api/` (xtask/src/api.rs).
//! * `cargo xtask package-kernels-check`: cuzk-cuda's package, unpacked, builds its kernels with
//!   `--features build-kernels` and its loader accepts them (xtask/src/package_check.rs; needs nvcc).

mod api;
mod bench;
mod bundle;
mod demo;
mod fixtures;
mod install;
mod kernels;
mod package_check;
mod tidy;

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  kernels [--arch LIST] [--force]
                          build one fatbin per unit of kernels/manifest.toml into target/kernels/ unless
                          it is up to date (LIST: comma-separated, e.g. sm_90; default: env
                          CUZK_ARCHS, else sm_80,sm_86,sm_89,sm_90,sm_120 + PTX for compute_80)
  bundle [--arch LIST] [--force] [--exclude DIR]
                          kernels (from a snapshot of kernels/, optionally without kernels/DIR),
                          then release GPU tests and benches into bundle/ with run.sh
  install [--prefix DIR] [--arch LIST] [--force]
                          kernels, then `cargo install --path crates/cuzk --root DIR` (default
                          /usr/local) and the fatbins with their stamps into DIR/lib/cuzk/kernels
  bench [ARGS]            pipeline sweep (cuzk-benches' sweep: --circuit demo|porep; --help)
  demo [ARGS]             the main job: kernels for the local GPU if there is one (else the CPU),
                          then `cuzk demo ARGS` (key, batch of proofs, verification, timings)
  fixtures keys|fetch|seal|synth-sector|synth-post|synth-snap [ARGS]
                          Filecoin: test keys from a seed (keys), official parameter files
                          checked against their digests (fetch), a sealed sample C1 (seal),
                          synthetic C1s, PoSt and SnapDeals vanilla proofs (synth-*)
  api [--count [ROOT]]    write each library crate's public API to xtask/api/<crate>.txt (a test
                          compares them with the sources); --count prints item counts instead
  package-kernels-check [--arch LIST]
                          pack cuzk-cuda, unpack it under target/, build it there with
                          --features build-kernels (nvcc compiles the fatbins into its OUT_DIR) and
                          check that its loader accepts them; needs nvcc, so not in CI
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprint!("{USAGE}");
        bail!("no task given");
    };
    let root = workspace_root();
    // `--help` after a task: this usage, for the tasks whose arguments are
    // parsed here (bench, demo and fixtures pass theirs on).
    let own_args = !matches!(task.as_str(), "bench" | "demo" | "fixtures");
    if own_args && args[1..].iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return Ok(());
    }
    match task.as_str() {
        "kernels" => kernels::build(&root, &kernels::Options::parse(&args[1..])?).map(|_| ()),
        "bundle" => bundle::build(&root, &kernels::Options::parse(&args[1..])?),
        "install" => install::run(&root, &args[1..]),
        "bench" => bench::run(&args[1..]),
        "demo" => demo::run(&root, &args[1..]),
        "fixtures" => fixtures::run(&root, &args[1..]),
        "api" => api::run(&root, &args[1..]),
        "package-kernels-check" => package_check::run(&root, &args[1..]),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("{USAGE}");
            bail!("unknown task `{other}`")
        }
    }
}

/// The workspace root: xtask's manifest dir is `<root>/xtask`.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// The cargo target directory (honours CARGO_TARGET_DIR).
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}
