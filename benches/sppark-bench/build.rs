//! Compiles cuda/sppark_bench.cu, the one CUDA source of this benchmark, with nvcc through the
//! `cc` crate, against the sppark headers of the `sppark` crate (`DEP_SPPARK_ROOT`) and blst's
//! C sources (`DEP_BLST_C_SRC`: sppark's host-side field types are blst's `blst_t.hpp`).
//!
//! * `SPPARK_BENCH_SM` (default `90`, the H200): comma-separated compute capabilities to emit
//!   SASS for. Only SASS: the GPU machine's CUDA 13.0 driver cannot JIT a newer toolkit's PTX,
//!   and one architecture keeps the build short.
//! * `__ADX__` is defined exactly when blst's build defines it (its rule: the target features
//!   when `target-cpu` is set, else the build host's CPU): with it, blst has only the `mulx_*`
//!   forms of its assembly and the header must name those.

use std::env;

fn main() {
    let sppark = env::var("DEP_SPPARK_ROOT").expect("DEP_SPPARK_ROOT: the sppark crate sets it");
    let blst_src = env::var("DEP_BLST_C_SRC").expect("DEP_BLST_C_SRC: the blst crate sets it");
    let sms = env::var("SPPARK_BENCH_SM").unwrap_or_else(|_| "90".to_string());

    let mut nvcc = cc::Build::new();
    nvcc.cuda(true);
    for sm in sms.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        nvcc.flag("-gencode")
            .flag(format!("arch=compute_{sm},code=sm_{sm}"));
    }
    nvcc.define("FEATURE_BLS12_381", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None);
    if blst_uses_adx() {
        nvcc.define("__ADX__", None);
    }
    nvcc.include(&sppark)
        .include(&blst_src)
        .file("cuda/sppark_bench.cu")
        .compile("sppark_bench_cuda");

    println!("cargo:rerun-if-changed=cuda/sppark_bench.cu");
    println!("cargo:rerun-if-env-changed=SPPARK_BENCH_SM");
}

/// blst 0.3's rule for `__ADX__` (its build.rs), for an x86-64 target without its `portable`
/// or `force-adx` features (this project turns on neither).
fn blst_uses_adx() -> bool {
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return false;
    }
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if rustflags.contains("target-cpu=") {
        let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
        let features: Vec<&str> = features.split(',').collect();
        return features.contains(&"ssse3") && features.contains(&"adx");
    }
    host_has_adx()
}

#[cfg(target_arch = "x86_64")]
fn host_has_adx() -> bool {
    std::is_x86_feature_detected!("adx")
}

#[cfg(not(target_arch = "x86_64"))]
fn host_has_adx() -> bool {
    false
}
