#!/usr/bin/env bash
# Builds the supraseal-c2 anchor (see README.md). Idempotent: re-running reuses the CUDA home,
# the target dir and cargo's incremental state.
#
# Output: /work/main/.device-carry/anchor (stripped; needs only the driver's libcuda.so.1 at run time).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/target-anchor}"
CARRY="${CARRY:-$REPO/.device-carry}"

# 1. The pinned CUDA 13.0 wheels (docs/cuda.md, "Two machines"). `cargo xtask kernels` installs them under
#    target/cuda-toolchain/site; install them there with pip only if they are missing.
SITE="$REPO/target/cuda-toolchain/site"
WHEELS=(nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85)
CU="$SITE/nvidia/cu13"
if [[ ! -x "$CU/bin/nvcc" || ! -d "$CU/include/nv" || ! -f "$CU/lib/libcudart_static.a" ]]; then
    python3 -m pip install --no-deps --target "$SITE" "${WHEELS[@]}"
fi

# 2. A CUDA home in the layout supraseal-c2's and sppark's build scripts (through the cc crate)
#    expect: bin/, nvvm/, targets/x86_64-linux/{include,lib,lib64}. nvcc locates its profile and
#    the target directory from its own executable's path, so nvcc and nvcc.profile are hard
#    links (or copies) inside the home; everything else is a symlink into the wheels.
CUDA_HOME_DIR="$CARGO_TARGET_DIR/cuda-home"
mkdir -p "$CUDA_HOME_DIR/bin" "$CUDA_HOME_DIR/targets/x86_64-linux"
for f in "$CU"/bin/*; do
    name="$(basename "$f")"
    dst="$CUDA_HOME_DIR/bin/$name"
    case "$name" in
        nvcc|nvcc.profile)
            if [[ ! -f "$dst" || "$f" -nt "$dst" ]]; then
                rm -f "$dst"
                ln "$f" "$dst" 2>/dev/null || cp -p "$f" "$dst"
            fi ;;
        *) ln -sfn "$f" "$dst" ;;
    esac
done
ln -sfn "$CU/nvvm" "$CUDA_HOME_DIR/nvvm"
ln -sfn "$CU/include" "$CUDA_HOME_DIR/include"
ln -sfn "$CU/lib" "$CUDA_HOME_DIR/lib64"
ln -sfn "$CU/lib" "$CUDA_HOME_DIR/lib"
ln -sfn "$CU/include" "$CUDA_HOME_DIR/targets/x86_64-linux/include"
ln -sfn "$CU/lib" "$CUDA_HOME_DIR/targets/x86_64-linux/lib64"
ln -sfn "$CU/lib" "$CUDA_HOME_DIR/targets/x86_64-linux/lib"

export CUDA_HOME="$CUDA_HOME_DIR" CUDA_PATH="$CUDA_HOME_DIR"
export NVCC="$CUDA_HOME_DIR/bin/nvcc"
export PATH="$CUDA_HOME_DIR/bin:$PATH"
"$NVCC" --version | tail -2
# ../anchor-c2/build.sh reuses steps 1-2 only.
if [[ -n "${ANCHOR_SETUP_ONLY:-}" ]]; then exit 0; fi

# 3. Build. sppark embeds sm_80 SASS + compute_80 PTX (and newer PTX); add SASS for the H200
#    (sm_90): a newer toolkit's PTX does not JIT on the GPU machine's driver, so SASS matters.
#    libstdc++ is linked statically so the binary does not depend on the build host's C++ runtime
#    ("static:-bundle": rustc does not look for libstdc++.a itself, the final link finds it in
#    gcc's own library dir; plain "static=stdc++" fails with "could not find native static library");
#    cudart is static through the cc crate's default (cudart_static).
export NVCC_APPEND_FLAGS="${NVCC_APPEND_FLAGS:--gencode arch=compute_90,code=sm_90}"
export CXXSTDLIB="static:-bundle=stdc++"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --locked --manifest-path "$HERE/Cargo.toml" --bin anchor

# 4. Strip and place it where the device run picks it up.
mkdir -p "$CARRY"
strip -o "$CARRY/anchor" "$CARGO_TARGET_DIR/release/anchor"
ls -l "$CARRY/anchor"
ldd "$CARRY/anchor" || true
