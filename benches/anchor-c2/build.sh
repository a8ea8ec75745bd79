#!/usr/bin/env bash
# Builds the Filecoin C2 anchor (see README.md): filecoin-proofs-api 19.1 with `cuda-supraseal`.
# Idempotent. Output: $CARRY/anchor-c2 (stripped), default /work/main/.fil-carry.
#
# The CUDA home, the pinned nvcc wheels and the static libstdc++ link are ../anchor/build.sh's
# (read its comments); this script runs that one's setup steps first, then adds what the
# Filecoin crates need on top of bellperson's `cuda-supraseal`:
#  * `cuda-supraseal` also turns on `cuda` in storage-proofs-porep and filecoin-hashers, hence
#    neptune's and bellperson's ec-gpu-gen kernels (compiled by nvcc in their build scripts) and
#    fil-rustacuda, whose cuda-driver-sys links `-lcuda`. The wheels ship no driver library, so
#    the link uses a stub libcuda.so (every cu* symbol cuda-driver-sys declares, SONAME
#    libcuda.so.1); at run time the GPU machine's driver provides the real one.
#  * ec-gpu-gen compiles for sm_75/80/86 by default; CUDA 13's nvcc still takes those, but only
#    sm_90 matters here and one architecture builds faster (EC_GPU_CUDA_NVCC_ARGS). Commit phase 2
#    runs none of these kernels (supraseal-c2 proves; neptune builds trees in phase 2 of sealing).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/target-anchor}"
CARRY="${CARRY:-/work/main/.fil-carry}"

# 1. CUDA home (../anchor/build.sh steps 1-2, which it reruns idempotently; no build there).
ANCHOR_SETUP_ONLY=1 "$REPO/benches/anchor/build.sh"
CUDA_HOME_DIR="$CARGO_TARGET_DIR/cuda-home"
export CUDA_HOME="$CUDA_HOME_DIR" CUDA_PATH="$CUDA_HOME_DIR"
export NVCC="$CUDA_HOME_DIR/bin/nvcc"
export PATH="$CUDA_HOME_DIR/bin:$PATH"

# 2. The link-time stub of the driver library.
STUB="$CARGO_TARGET_DIR/cuda-stub"
DRIVER_SYS="$(cargo metadata --manifest-path "$HERE/Cargo.toml" --format-version 1 --locked \
    | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="cuda-driver-sys"))')"
DRIVER_SYS="$(dirname "$DRIVER_SYS")"
mkdir -p "$STUB/lib64"
grep -ohE 'pub fn cu[A-Za-z0-9_]+' "$DRIVER_SYS"/src/*.rs | sort -u \
    | sed 's/pub fn \(.*\)/int \1(void) { return 999; }/' > "$STUB/stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$STUB/lib64/libcuda.so" "$STUB/stub.c"
ln -sfn libcuda.so "$STUB/lib64/libcuda.so.1"
# cuda-driver-sys searches $CUDA_LIBRARY_PATH/lib64. Build scripts that depend on it (neptune's,
# bellperson's) are linked to it too and must load it here: they call no driver function.
export CUDA_LIBRARY_PATH="$STUB"
export LD_LIBRARY_PATH="$STUB/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 3. Build (flags as ../anchor/build.sh: sm_90 SASS, static libstdc++).
export NVCC_APPEND_FLAGS="${NVCC_APPEND_FLAGS:--gencode arch=compute_90,code=sm_90}"
export EC_GPU_CUDA_NVCC_ARGS="${EC_GPU_CUDA_NVCC_ARGS:---fatbin --gpu-architecture=sm_90 --generate-code=arch=compute_90,code=sm_90}"
export CXXSTDLIB="static:-bundle=stdc++"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --locked --manifest-path "$HERE/Cargo.toml" --bin anchor-c2

mkdir -p "$CARRY"
strip -o "$CARRY/anchor-c2" "$CARGO_TARGET_DIR/release/anchor-c2"
ls -l "$CARRY/anchor-c2"
ldd "$CARRY/anchor-c2" || true
