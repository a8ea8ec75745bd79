#!/usr/bin/env bash
# One 32 GiB PoRep partition's CPU side, mode against mode (issue 14), on the GPU machine
# (no GPU call: this is all host work). Over binaries built here:
#
#   .device-carry/fs/cuzk.xz         release `cuzk`, stripped (xz), as full-scale.sh has it
#   .device-carry/fs/synth_bench.xz  release `synth_bench` (cuzk-benches), stripped (xz)
#
# Make them with:
#   cargo build --release -p cuzk -p cuzk-benches --bin cuzk --bin synth_bench
#   then strip + `xz -6` each into .device-carry/fs/.
#
# Run (one device call, carry .device-carry):
#   bash benches/device/synth-bench.sh
# Steps, each logged under $FS (the same folder full-scale.sh uses, so its C1 is reused):
#   c1        the synthetic 32 GiB C1 of CC sector 1 of f01000 (seed 1), unless full-scale.sh
#             left it there (~2 s);
#   record    `cuzk precompile --proof-type StackedDrg32GiBV1_1 --out $FS/porep-32g.r1cs`:
#             the recording's time, file size, nonzeros, distinct coefficients (one synthesis
#             of the blank circuit without values, est. 1-2 min, a few GB written);
#   bench     `synth_bench --c1 $FS/c1-1.json --partition 0 --mode parallel --mode precompiled
#             --mode sequential --cache $FS/porep-32g.r1cs`: the cache's load time, then one
#             line per mode (wall s, CPU core-seconds, peak RSS, constraints, checksum; the run
#             fails if the modes' checksums differ). Sequential last: it is the long one
#             (~90 s); parallel ~10 s expected on 16 cores.
# SYNTH_MODES picks the modes (default "parallel precompiled sequential"; the chain's
# `synth` step of full-scale.sh passes what it sets). Expected ~4-5 minutes in all. Prints every log at the end and leaves them in $OUT.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
FS=${FS:-$(cat /tmp/cuzk-fs-path 2>/dev/null || echo /tmp/cuzk-fs)}
SYNTH_MODES=${SYNTH_MODES:-parallel precompiled sequential}
bin=$FS/bin
mkdir -p "$bin" "$FS/params"
for b in cuzk synth_bench; do
  [ -x "$bin/$b" ] || xz -dc "$here/.device-carry/fs/$b.xz" > "$bin/$b" && chmod +x "$bin/$b"
done
export FIL_PROOFS_PARAMETER_CACHE=$FS/params RUST_LOG=${RUST_LOG:-warn}
log=$FS/synth-bench.log
nproc > "$log"; free -g >> "$log"
if [ ! -s "$FS/c1-1.json" ]; then
  "$bin/cuzk" fixtures synth-sector --sector-size 32GiB --seed 1 --sector-id 1 \
    --prover-id f01000 --out "$FS/c1-1.json" >> "$log" 2>&1
fi
echo "== record" >> "$log"
/usr/bin/time -v "$bin/cuzk" precompile --proof-type StackedDrg32GiBV1_1 \
  --out "$FS/porep-32g.r1cs" >> "$log" 2>&1
echo "record rc=$?" >> "$log"
ls -la "$FS/porep-32g.r1cs" >> "$log" 2>&1
echo "== bench" >> "$log"
mode_args=(); for m in $SYNTH_MODES; do mode_args+=(--mode "$m"); done
"$bin/synth_bench" --c1 "$FS/c1-1.json" --partition 0 "${mode_args[@]}" \
  --cache "$FS/porep-32g.r1cs" >> "$log" 2>&1
echo "bench rc=$?" >> "$log"
cat "$log"
[ -n "${OUT:-}" ] && cp "$log" "$OUT/"
