#!/usr/bin/env bash
# The 32 GiB PoRep run on the GPU machine (issue 13), over binaries built here:
#
#   .device-carry/fs/cuzk.xz            release `cuzk`, stripped (xz)
#   .device-carry/fs/gpu_full_scale.xz  cuzk-filecoin's tests/gpu_full_scale.rs, likewise
#   .device-carry/fs/kernels/           target/kernels/*.fatbin and *.fatbin.sha256 (sm_90):
#                                       read at run time from $FS/kernels, beside $FS/bin
#
# Make them with:
#   cargo xtask kernels --arch sm_90 && cargo build --release -p cuzk &&
#   cargo test --release -p cuzk-filecoin --test gpu_full_scale --no-run
#   then strip + `xz -6` each binary into .device-carry/fs/ and copy the kernels folder.
#
# Device time: the whole run needs ~20 minutes (key ~3.3 min, two proofs ~10-12 min at 3
# partitions in flight, the 2^27 identity ~5 min); it was lost once (session 6) because the
# second call started after the 30 s warm window: issue each `wait` call the moment the
# previous one returns, and do nothing in between.
#
# The run outlasts one device call (10 minutes), so `start` launches it in its own
# process session (which a call's end does not kill) and each `wait N` call follows it
# for up to N seconds; calls must follow each other within the machine's 30 s warm
# window. Steps, each logged under $FS (default /tmp/fs):
#
#   0. 8 MiB and 512 MiB synthetic sectors: keys on the GPU, proofs, verify_seal;
#   1. the 32 GiB test key (seed 0, official name) with the fixed-base step on the GPU,
#      timed, peak RSS;
#   2. two synthetic 32 GiB C1s (CC sectors 1 and 2 of f01000, seeds 1 and 2);
#   3. both proved back to back through the engine (`porep-c2 --c1 a --c1 b`), verified
#      with verify_seal, with the TIMELINE, host memory and VRAM sampled every 2 s;
#   4. one partition proved on the GPU and on the CPU with the same r, s: byte-identical
#      (tests/gpu_full_scale.rs);
#   5. a table of what was measured.
#
# `wait` copies the logs, the TIMELINE and the samples into $OUT as fs.tgz when the run
# has finished (or when asked to with `collect`).
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
# The run needs ~50 GB of disk for the key: take the mount with the most room among /tmp,
# the checkout and / (written to $FS/.. once chosen, so later calls agree).
pick_fs() {
  df -B1 --output=avail,target /tmp "$here" / 2>/dev/null | tail -n +2 | sort -n | tail -1 \
    | awk '{print ($2 == "/" ? "" : $2) "/cuzk-fs"}'
}
FS=${FS:-$(cat /tmp/cuzk-fs-path 2>/dev/null || pick_fs)}
bin=$FS/bin
P=$FS/params
WORKERS=${WORKERS:-4}

# The 8 MiB and 512 MiB part alone (step 0), plus the GPU/CPU identity on the 512 MiB
# partition: a few minutes, for a short device budget.
small() {
  set -x
  export FIL_PROOFS_PARAMETER_CACHE=$P RUST_LOG=${RUST_LOG:-warn}
  mkdir -p "$P"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  for size in 8MiB 512MiB; do
    "$bin/cuzk" fixtures keys --sector-size $size --backend cuda --dir "$P" > "$FS/small-$size.log" 2>&1
    "$bin/cuzk" fixtures synth-sector --sector-size $size --seed 5 --sector-id 5 \
      --prover-id f01000 --out "$FS/c1-$size.json" >> "$FS/small-$size.log" 2>&1
    "$bin/cuzk" porep-c2 --c1 "$FS/c1-$size.json" --out "$FS/proof-$size.bin" --prover-id f01000 \
      --backend cuda >> "$FS/small-$size.log" 2>&1
    echo "$size rc=$?" >> "$FS/small-$size.log"
  done
  CUZK_GPU_C1="$FS/c1-512MiB.json" "$bin/gpu_full_scale" --nocapture > "$FS/identity.log" 2>&1
  echo "identity rc=$?" >> "$FS/identity.log"
  set +x
  for f in "$FS"/small-*.log "$FS/identity.log"; do echo "---- $f"; cat "$f"; done
}

steps() {
  set -x
  export FIL_PROOFS_PARAMETER_CACHE=$P RUST_LOG=${RUST_LOG:-warn}
  mkdir -p "$P"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  free -g; df -h /tmp; nproc
  ( while :; do
      echo "$(date +%s) $(free -b | awk '/Mem:/{print $3}') $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits | tr -d ' ')"
      sleep 2
    done ) > "$FS/samples.txt" 2>/dev/null &
  sampler=$!

  echo "== step 0: 8 MiB and 512 MiB synthetic sectors, keys on the GPU, proofs, verify_seal"
  for size in 8MiB 512MiB; do
    "$bin/cuzk" fixtures keys --sector-size $size --backend cuda --dir "$P" > "$FS/small-$size.log" 2>&1
    "$bin/cuzk" fixtures synth-sector --sector-size $size --seed 5 --sector-id 5 \
      --prover-id f01000 --out "$FS/c1-$size.json" >> "$FS/small-$size.log" 2>&1
    "$bin/cuzk" porep-c2 --c1 "$FS/c1-$size.json" --out "$FS/proof-$size.bin" --prover-id f01000 \
      --backend cuda >> "$FS/small-$size.log" 2>&1
    echo "$size rc=$?" >> "$FS/small-$size.log"
  done

  echo "== step 1: key"; date +%s > "$FS/t-keys-start"
  RUST_LOG=cuzk_groth16=info,cuzk_gpu=info "$bin/cuzk" fixtures keys --sector-size 32GiB \
    --backend cuda --dir "$P" > "$FS/keys.log" 2>&1
  echo "keys rc=$?" >> "$FS/keys.log"; date +%s > "$FS/t-keys-end"
  ls -la "$P"; df -h /tmp

  echo "== step 2: C1s"
  for s in 1 2; do
    "$bin/cuzk" fixtures synth-sector --sector-size 32GiB --seed $s --sector-id $s \
      --prover-id f01000 --out "$FS/c1-$s.json" >> "$FS/c1.log" 2>&1
  done

  echo "== step 3: two proofs back to back"; date +%s > "$FS/t-porep-start"
  "$bin/cuzk" porep-c2 --c1 "$FS/c1-1.json" --c1 "$FS/c1-2.json" \
    --out "$FS/proof-1.bin" --out "$FS/proof-2.bin" --prover-id f01000 \
    --synthesis-workers "$WORKERS" --backend cuda --rng-seed 7 \
    --timeline "$FS/timeline.jsonl" > "$FS/porep.log" 2>&1
  echo "porep rc=$?" >> "$FS/porep.log"; date +%s > "$FS/t-porep-end"

  echo "== step 4: GPU and CPU proofs of one partition"
  CUZK_GPU_C1="$FS/c1-1.json" "$bin/gpu_full_scale" --nocapture > "$FS/identity.log" 2>&1
  echo "identity rc=$?" >> "$FS/identity.log"
  kill $sampler
  summary > "$FS/summary.txt"
  touch "$FS/done"
}

summary() {
  echo "== 32 GiB PoRep on $(nvidia-smi --query-gpu=name --format=csv,noheader), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "-- 8 MiB and 512 MiB synthetic sectors:"
  grep -hE "wrote.*params|verification|rc=|error" "$FS"/small-*.log
  echo "-- key:"; grep -E "wrote|peak|rc=|error" "$FS/keys.log"
  echo "   wall $(( $(cat "$FS/t-keys-end") - $(cat "$FS/t-keys-start") )) s"
  echo "-- C1s:"; grep -E "challenges|wrote" "$FS/c1.log"
  echo "-- proofs:"; grep -vE "^partition|^sector [0-9]+ partition" "$FS/porep.log" | tail -25
  echo "   wall $(( $(cat "$FS/t-porep-end") - $(cat "$FS/t-porep-start") )) s"
  echo "-- peak host memory used (free), peak VRAM used, mean GPU utilization over the proofs:"
  awk -v a="$(cat "$FS/t-porep-start")" -v b="$(cat "$FS/t-porep-end")" \
    '{split($3, g, ","); if ($1 >= a && $1 <= b) {n++; u += g[2]}; if ($2 > m) m = $2; if (g[1] > v) v = g[1]}
     END {printf "   %.1f GiB host, %.1f GiB VRAM, %.1f%% GPU\n", m / 2^30, v / 1024, n ? u / n : 0}' "$FS/samples.txt"
  echo "-- identity:"; grep -E "partition|cuda|cpu|rc=|panicked|test result" "$FS/identity.log" | tail -8
}

collect() {
  [ -n "${OUT:-}" ] || return 0
  tar -C "$FS" -czf "$OUT/fs.tgz" --exclude bin --exclude params --exclude 'c1-*.json' \
    --exclude '*.bin' . 2>/dev/null
  cp "$FS/summary.txt" "$OUT/" 2>/dev/null
  ls -la "$OUT"
}

install_bins() {
  for f in cuzk gpu_full_scale; do
    xz -dc "$here/.device-carry/fs/$f.xz" > "$bin/$f" && chmod +x "$bin/$f" || exit 1
  done
  if [ -d "$here/.device-carry/fs/kernels" ]; then
    cp -r "$here/.device-carry/fs/kernels" "$FS/kernels"
  fi
}

case "${1:-}" in
  start)
    echo "$FS" > /tmp/cuzk-fs-path
    df -h /tmp "$here" /; echo "run folder: $FS"
    rm -rf "$FS"; mkdir -p "$bin"
    install_bins
    setsid nohup bash "$0" steps > "$FS/run.log" 2>&1 < /dev/null &
    echo "started; following it"
    exec bash "$0" wait "${2:-560}"
    ;;
  steps) steps ;;
  small)
    rm -rf "$FS"; mkdir -p "$bin"
    install_bins
    small 2>&1 | tee "$FS/small.txt"
    [ -n "${OUT:-}" ] && cp "$FS"/small*.log "$FS/identity.log" "$OUT/" ;;
  wait)
    deadline=$(( $(date +%s) + ${2:-560} ))
    while [ ! -e "$FS/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do
      sleep 20
      echo "[$(date +%T)] $(grep -h '^== step' "$FS/run.log" | tail -1) | $(tail -1 "$FS/samples.txt" 2>/dev/null)"
      tail -2 "$FS/porep.log" 2>/dev/null | cut -c1-160
    done
    if [ -e "$FS/done" ]; then cat "$FS/summary.txt"; collect; else echo "still running"; fi
    ;;
  collect) summary; collect ;;
  *) echo "usage: $0 start [SECONDS] | wait SECONDS | collect" >&2; exit 2 ;;
esac
