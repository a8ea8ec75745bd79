#!/usr/bin/env bash
# The GPU prover's device run: keys, tests, budgets, pipeline.
# Run on the GPU machine from the repository root after `cargo xtask bundle
# --arch sm_90` built bundle/ (carry it), e.g. through the device tool:
#   bash benches/device/gpu-prover.sh prover     # keys 2^16/20/24, device tests, 2^24 under 6 GiB vs full card
#   bash benches/device/gpu-prover.sh pipeline   # 10-partition 2^24 sweep on the CUDA backend (PIPE_POINTS=S:P:F,... for one sweep)
#   bash benches/device/gpu-prover.sh compare    # supraseal-c2 (.device-carry/anchor) vs cuzk at 2^22/2^24, 95% and 50% SHA
#   bash benches/device/gpu-prover.sh big        # 2^26 under a 16 GiB budget and the full card
# Outputs (logs, sweep JSON/SVG) go to $OUT; a table is printed last.
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${BIN:-$here/.device-carry/bin}"; [ -d "$bin" ] || bin="$here/bundle/bin"
out="${OUT:-/tmp/cuzk-out}"; mkdir -p "$out"
# A bundle carries its tools xz-compressed (cargo xtask bundle): unpack them once.
for f in "$bin"/*.xz; do
  [ -e "$f" ] || continue
  [ -x "${f%.xz}" ] || { xz -dc "$f" > "${f%.xz}" && chmod +x "${f%.xz}"; }
done
keys="${KEYS_DIR:-/tmp/cuzk-keys}"; mkdir -p "$keys"
phase="${1:-prover}"
rows=()
row() { rows+=("$(printf '%-10s %-52s %s' "$1" "$2" "$3")"); }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | sed 's/^/gpu: /'
echo "cores: $(nproc)  date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"

key() { # key K: the 2^K demo key (95% SHA), made on the GPU when missing
  local k=$1 f="$keys/demo-$1-95.params"
  if [ ! -f "$f" ]; then
    local t0=$(date +%s%N)
    "$bin/cuzk" setup --backend cuda --log-size "$k" --setup-seed "$k" --out "$f" > "$out/setup-$k.log" 2>&1
    local rc=$?
    row setup "2^$k key, GPU fixed-base: $(tail -1 "$out/setup-$k.log" | sed 's/.* in //')" \
      "$([ $rc = 0 ] && echo "ok" || echo FAILED)"
  fi
}

prove_cmp() { # prove_cmp K BUDGET: one partition with a fixed seed under two budgets, bytes compared
  local k=$1 small=$2
  for b in "$small" auto; do
    local t0=$(date +%s%N)
    "$bin/cuzk" prove --backend cuda --log-size "$k" --key "$keys/demo-$k-95.params" --seed 1 \
      --rng-seed 7 --vram-budget "$b" --out "$out/p$k-$b.bin" > "$out/prove-$k-$b.log" 2>&1
    local rc=$?
    grep -E "plan|partition 0|backend" "$out/prove-$k-$b.log" | head -5
    row prove "2^$k budget $b: $(grep -o 'resident SRS\|streamed SRS ([0-9]* points per chunk)' "$out/prove-$k-$b.log" | head -1)" \
      "$([ $rc = 0 ] && echo "ok $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" || echo FAILED)"
    sed -n '/partition .*backend/,$p' "$out/prove-$k-$b.log" | head -3
  done
  if cmp -s "$out/p$k-$small.bin" "$out/p$k-auto.bin"; then row prove "2^$k: $small and full-card proofs" identical
  else row prove "2^$k: $small and full-card proofs" DIFFER; fi
}

run_tests() { # run_tests NAME...: device test binaries from the bundle, one row per test
  for t in "$@"; do
    [ -x "$bin/$t" ] || { row "$t" "(not in the bundle)" MISSING; continue; }
    timeout 300 "$bin/$t" --test-threads=1 --show-output > "$out/test-$t.log" 2>&1
    local rc=$?
    grep -E "identical|streamed|seed|backend" "$out/test-$t.log" | head -20
    while read -r name result; do row "$t" "$name" "$result"; done \
      < <(sed -n 's/^test \(.*\) \.\.\. \(ok\|FAILED\|ignored\)$/\1 \2/p' "$out/test-$t.log")
    row "$t" "(exit $rc)" "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  done
}

case "$phase" in
prover)
  for k in 16 20 24; do key $k; done
  export CUZK_TEST_KEYS="$keys" CUZK_TEST_SIZES="16 20 24" CUZK_FIXTURES="$here/fixtures"
  run_tests ${TESTS:-gather keygen gpu_prover}
  prove_cmp 24 6GiB
  run_tests ${TESTS2:-gpu msm}
  ;;
pipeline)
  key 24
  if [ -n "${PIPE_POINTS:-}" ]; then
    # One sweep over explicit points S:P:F (one JSON, one chart, a TIMELINE per
    # point); the s1 p1 f1 point is the no-overlap baseline.
    timeout "${PIPE_TIMEOUT:-540}" "$bin/sweep" --backend cuda --log-size 24 --jobs 1 --partitions 10 \
      --points "$PIPE_POINTS" --key "$keys/demo-24-95.params" \
      --out "$out/sweep-k24-cuda" > "$out/sweep.log" 2>&1
    rc=$?
    grep -E '^ +[0-9]+ +[0-9]+ +[0-9]+ |bottleneck' "$out/sweep.log"
    row sweep "2^24 x 10 partitions, points $PIPE_POINTS" "exit $rc"
    while read -r line; do row sweep "$line" ""; done < <(grep bottleneck "$out/sweep.log")
  else
    # No overlap (one partition at a time, one synthesis worker) against the
    # pipeline (synthesis workers feeding two CUDA workers under VRAM admission).
    # PIPE_GRIDS: "synthesis provers in-flight label timeout" entries, ';'-separated.
    IFS=';' read -ra grids <<< "${PIPE_GRIDS:-1 1 1 serial 330;5 1 8 pipelined 200}"
    for grid in "${grids[@]}"; do
      set -- $grid
      timeout "$5" "$bin/sweep" --backend cuda --log-size 24 --jobs 1 --partitions 10 \
        --synthesis "$1" --provers "$2" --in-flight "$3" --key "$keys/demo-24-95.params" \
        --out "$out/sweep-k24-cuda-$4" > "$out/sweep-$4.log" 2>&1
      rc=$?
      tail -4 "$out/sweep-$4.log"
      row sweep "2^24 x 10 partitions, $4 (s$1 p$2 f$3)" "exit $rc: $(grep -E '^ +[0-9]+ +[0-9]+ +[0-9]+ ' "$out/sweep-$4.log" | tail -1 | awk '{print $5" s wall, "$6" proofs/h, syn "$10"% prv "$11"%"}')"
    done
  fi
  ;;
compare)
  # Same circuits, same keys, same machine: supraseal-c2 (bellperson 0.27 with
  # cuda-supraseal, .device-carry/anchor from benches/anchor) against cuzk's
  # CUDA backend and its CPU backend. Times after synthesis, per partition.
  anchor="$here/.device-carry/anchor"
  for spec in ${COMPARE:-22:95 24:95 24:50}; do
    k=${spec%:*}; share=${spec#*:}
    f="$keys/demo-$k-$share.params"
    if [ ! -f "$f" ]; then
      "$bin/cuzk" setup --backend cuda --log-size "$k" --sha-share "0.$share" --setup-seed "$k" --out "$f" > "$out/setup-$k-$share.log" 2>&1
      row setup "2^$k $share% SHA key: $(tail -1 "$out/setup-$k-$share.log" | sed 's/.* in //')" "rc $?"
    fi
    parts=3; [ "$share" = 50 ] && parts=2
    timeout 240 "$anchor" --key "$f" --log-size "$k" --sha-share "0.$share" --partitions "$parts" --runs 2 > "$out/anchor-$k-$share.log" 2>&1
    row anchor "2^$k $share%: $(grep '^anchor:' "$out/anchor-$k-$share.log" | tail -1 | sed 's/.*after synthesis //')" "rc $?"
    "$bin/cuzk" prove --backend cuda --log-size "$k" --sha-share "0.$share" --key "$f" --partitions "$parts" \
      --rng-seed 1 --out "$out/c-$k-$share.bin" > "$out/cuzk-$k-$share.log" 2>&1
    row cuzk "2^$k $share%: prove per partition (s): $(awk '$2 ~ /cuda/ {printf "%s ", $4}' "$out/cuzk-$k-$share.log")" "rc $?"
    grep -E "cuda:0" "$out/cuzk-$k-$share.log" | tail -1 | cut -c1-400
  done
  ;;
big)
  key 26
  prove_cmp 26 16GiB
  if [ -x "$here/.device-carry/anchor" ]; then
    timeout 200 "$here/.device-carry/anchor" --key "$keys/demo-26-95.params" --log-size 26 \
      --partitions 1 --runs 1 > "$out/anchor-26-95.log" 2>&1
    row anchor "2^26 95%: $(grep '^anchor:' "$out/anchor-26-95.log" | tail -1 | sed 's/.*after synthesis //')" "rc $?"
  fi
  ;;
esac
echo
echo "================ summary ($phase) ================"
printf '%s\n' "${rows[@]}"
