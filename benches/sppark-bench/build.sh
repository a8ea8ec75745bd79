#!/usr/bin/env bash
# Builds sppark-bench (see README.md). Idempotent: re-running reuses the CUDA home, the target
# dir and cargo's incremental state.
#
# Output: $CARRY/sppark-bench (stripped; needs only the driver's libcuda.so.1 at run time),
# default /work/main/.device-carry, which the main checkout's .gitignore ignores.
#
# The CUDA home (the pinned CUDA 13.0 wheels under the main checkout's target/cuda-toolchain/site,
# laid out as the cc crate expects) is ../anchor/build.sh's steps 1-2, run here with
# ANCHOR_SETUP_ONLY=1; read that script's comments. On top of it:
#  * SASS for sm_90 only (build.rs, SPPARK_BENCH_SM): no PTX, one architecture, a short build;
#    NVCC_APPEND_FLAGS is cleared so that nothing adds a second one.
#  * libstdc++ statically ("static:-bundle", as ../anchor/build.sh explains) and cudart
#    statically (the cc crate's default, cudart_static).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/target-sppark}"
CARRY="${CARRY:-/work/main/.device-carry}"

# 1. The CUDA home in $CARGO_TARGET_DIR/cuda-home. ../anchor/build.sh looks for the wheels in
#    its own checkout's target/; a worktree has none, so point it at the main checkout's.
SITE_REPO="${CUDA_WHEELS_REPO:-$REPO}"
if [[ ! -x "$SITE_REPO/target/cuda-toolchain/site/nvidia/cu13/bin/nvcc" && -x /work/main/target/cuda-toolchain/site/nvidia/cu13/bin/nvcc ]]; then
    SITE_REPO=/work/main
fi
ANCHOR_SETUP_ONLY=1 "$SITE_REPO/benches/anchor/build.sh"
CUDA_HOME_DIR="$CARGO_TARGET_DIR/cuda-home"
export CUDA_HOME="$CUDA_HOME_DIR" CUDA_PATH="$CUDA_HOME_DIR"
export NVCC="$CUDA_HOME_DIR/bin/nvcc"
export PATH="$CUDA_HOME_DIR/bin:$PATH"

# 2. Build.
export SPPARK_BENCH_SM="${SPPARK_BENCH_SM:-90}"
export NVCC_APPEND_FLAGS=""
export CXXSTDLIB="static:-bundle=stdc++"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --locked --manifest-path "$HERE/Cargo.toml" --bin sppark-bench

# 3. Strip and place it where the device run picks it up.
mkdir -p "$CARRY"
strip -o "$CARRY/sppark-bench" "$CARGO_TARGET_DIR/release/sppark-bench"
ls -l "$CARRY/sppark-bench"
ldd "$CARRY/sppark-bench" || true
