#!/usr/bin/env bash
# The 32 GiB PoRep run on the GPU machine (issue 13), over binaries built here:
#
#   .device-carry/fs/cuzk.xz            release `cuzk`, stripped (xz)
#   .device-carry/fs/gpu_full_scale.xz  cuzk-filecoin's tests/gpu_full_scale.rs, likewise
#   .device-carry/fs/sweep.xz           cuzk-benches' sweep binary, likewise
#   .device-carry/fs/anchor-c2.xz       benches/anchor-c2 (optional: its step is skipped without)
#   .device-carry/fs/{synth_bench,post_bench,msm_bench,ntt_bench}.xz  cuzk-benches (optional)
#   .device-carry/fs/msm_tests.xz       cuzk-cuda's tests/msm.rs (optional, step msm)
#   .device-carry/fs/sppark-bench.xz    benches/sppark-bench/build.sh (optional, step sppark)
#   .device-carry/fs/kernels/           target/kernels/*.fatbin and *.fatbin.sha256 (sm_90):
#                                       read at run time from $FS/kernels, beside $FS/bin; the
#                                       production units, plus tests_field_ec_tests for step
#                                       sppark (ntt_bench measures its product-rate ceilings with it)
#
# Make them with:
#   cargo xtask kernels --arch sm_90 && cargo build --release -p cuzk -p cuzk-benches --bin cuzk --bin sweep &&
#   cargo test --release -p cuzk-filecoin --test gpu_full_scale --no-run && benches/anchor-c2/build.sh
#   then strip + `xz -6` each binary into .device-carry/fs/ and copy the kernels folder.
#
# Device time: ~26 minutes in all (estimates, 2026-12-01): key ~3.5 min, the two-proof
# sweep ~8 min at 4 partitions in flight, porep-c2 ~5, the anchor <= 5 (timeout), the 2^27
# identity ~4.5, the daemon ~5.5. It was lost once (session 6) because the second call
# started after the 30 s warm window: issue each `wait` call the moment the previous one
# returns, and do nothing in between.
#
# The run outlasts one device call (10 minutes), so `start` launches it in its own
# process session (which a call's end does not kill) and each `wait N` call follows it
# for up to N seconds, copying what is logged so far into $OUT every 20 s (so a call cut
# off by the device budget still brings the logs back); calls must follow each other
# within the machine's 30 s warm window. Steps, each logged under $FS, in the order of
# what matters most (a run cut short loses the last ones):
#
#   keys      the 32 GiB test key (seed 0, official name), fixed-base step on the GPU, timed,
#             peak memory; the 512 MiB key for the daemon's small check;
#   c1s       two synthetic 32 GiB C1s (CC sectors 1 and 2 of f01000, seeds 1 and 2), one of
#             512 MiB;
#   sweep     both 32 GiB C1s back to back through the engine as a one-point sweep
#             (`sweep --circuit porep --c1 a --c1 b --points W:1:W+1 --budget 64GiB`):
#             steady state, verify_seal on each, table, JSON, chart, TIMELINE;
#   porep     `cuzk porep-c2` on C1 1 alone: the CLI's stage table (and the daemon's reference);
#   anchor    supraseal-c2 (filecoin-proofs' seal_commit_phase2, cuda-supraseal) on C1 1 with the
#             same key: wall time and peak RSS, or how far it got before running out of memory;
#   identity  one 32 GiB partition (domain 2^27) proved on the GPU and on the CPU with the
#             same r, s: byte-identical (tests/gpu_full_scale.rs);
#   batch     (needs precompile) partitions 0..BATCH-1 with the key streamed, alone and as batches
#             over one pass of the key (CudaBackend::msm_sums_batch): proofs equal, time per partition;
#   daemon    `cuzk daemon` over a unix socket, driven by `cuzk client`: 512 MiB (and
#             porep-c2 on it for reference), then the 32 GiB C1 1; GetStatus before and after;
#   post32    (not in the default list: it removes the PoRep key) 32 GiB WindowPoSt and
#             SnapDeals, each key made on the GPU, proved from synthetic vanilla proofs and
#             removed again (see step_post32);
#   then a table of what was measured (summary.txt). `STEPS="keys c1s porep daemon"` runs only
#   those, in that order (keys and c1s are what the others need); a step name not listed
#   above runs the function `step_NAME` and its summary shows the tail of $FS/NAME.log. Host memory, VRAM and GPU utilization
#   are sampled every 2 s (samples.txt).
#
# `wait` leaves the logs, the TIMELINEs, the sweep's results and the samples in $OUT as
# fs.tgz (and summary.txt once the run has finished).
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
# Four 32 GiB partitions in flight (15.6 GiB of witness each) beside the 44 GiB key:
# ~110 GiB of the box's 126 at the peak (the default, 3/4 of RAM less the key, admits 3).
HOST_BUDGET=${HOST_BUDGET:-64GiB}
HOST_BUDGET_BYTES=$(( ${HOST_BUDGET%GiB} << 30 ))

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

# Each step is a function; STEPS (default: every step, in this order) picks and orders them,
# e.g. STEPS="keys c1s porep daemon". `keys` and `c1s` are what the others need.
ALL_STEPS="keys c1s sweep porep anchor identity daemon"
STEPS=${STEPS:-$ALL_STEPS}

mark() { echo "$1 $(date +%s)" >> "$FS/marks.txt"; echo "== step $1"; }

step_keys() {
  RUST_LOG=cuzk_groth16=info,cuzk_gpu=info "$bin/cuzk" fixtures keys --sector-size 32GiB \
    --backend cuda --dir "$P" > "$FS/keys.log" 2>&1
  echo "keys rc=$?" >> "$FS/keys.log"
  "$bin/cuzk" fixtures keys --sector-size 512MiB --backend cuda --dir "$P" > "$FS/keys-512MiB.log" 2>&1
  ls -la "$P"; df -h "$FS"
}

step_c1s() {
  for s in 1 2; do
    "$bin/cuzk" fixtures synth-sector --sector-size 32GiB --seed $s --sector-id $s \
      --prover-id f01000 --out "$FS/c1-$s.json" >> "$FS/c1.log" 2>&1
  done
  "$bin/cuzk" fixtures synth-sector --sector-size 512MiB --seed 5 --sector-id 5 \
    --prover-id f01000 --out "$FS/c1-512MiB.json" >> "$FS/c1.log" 2>&1
}

# Two proofs back to back through the engine, as a one-point sweep: the
# steady state, every proof checked by verify_seal, table + JSON + chart +
# TIMELINE in $FS/sweep.
step_sweep() {
  "$bin/sweep" --circuit porep --c1 "$FS/c1-1.json" --c1 "$FS/c1-2.json" --prover-id f01000 \
    --backend cuda --points "$WORKERS:1:$(( WORKERS + 1 ))" --budget "$HOST_BUDGET" \
    --out "$FS/sweep" > "$FS/sweep.log" 2>&1
  echo "sweep rc=$?" >> "$FS/sweep.log"
}

# One proof through the CLI: its stage table and the reference for the daemon.
step_porep() {
  "$bin/cuzk" porep-c2 --c1 "$FS/c1-1.json" --out "$FS/proof-1.bin" --prover-id f01000 \
    --synthesis-workers "$WORKERS" --host-budget "$HOST_BUDGET" --backend cuda --rng-seed 7 \
    --synthesis "${SYNTHESIS:-parallel}" \
    --timeline "$FS/timeline-porep-c2.jsonl" > "$FS/porep.log" 2>&1
  echo "porep rc=$?" >> "$FS/porep.log"
}

# One 32 GiB partition's CPU side, sequential / parallel / pre-compiled (issue 14):
# benches/device/synth-bench.sh (records the circuit into $FS/porep-32g.r1cs).
step_synth() {
  FS=$FS bash "$here/benches/device/synth-bench.sh" > "$FS/synth.log" 2>&1
  echo "synth rc=$?" >> "$FS/synth.log"
}

# porep-c2 on C1 1 again with the pre-compiled circuit step_synth recorded.
step_porep_pre() {
  "$bin/cuzk" porep-c2 --c1 "$FS/c1-1.json" --out "$FS/proof-1p.bin" --prover-id f01000 \
    --synthesis-workers "$WORKERS" --host-budget "$HOST_BUDGET" --backend cuda --rng-seed 7 \
    --synthesis precompiled --r1cs-cache "$FS/porep-32g.r1cs" \
    --timeline "$FS/timeline-porep-pre.jsonl" > "$FS/porep_pre.log" 2>&1
  echo "porep_pre rc=$?" >> "$FS/porep_pre.log"
  cmp "$FS/proof-1.bin" "$FS/proof-1p.bin" >> "$FS/porep_pre.log" 2>&1 \
    && echo "proof bytes identical to the parallel run's (same --rng-seed)" >> "$FS/porep_pre.log"
}

# Both 32 GiB C1s through `cuzk porep-c2` with the pre-compiled circuit (--rng-seed 7, so
# runs compare byte for byte): porep_pre2 OUT1 OUT2 TIMELINE LOG [more porep-c2 arguments];
# the environment (RUST_LOG, CUZK_*) passes through; returns porep-c2's status.
porep_pre2() {
  local out1=$1 out2=$2 timeline=$3 log=$4
  shift 4
  "$bin/cuzk" porep-c2 --c1 "$FS/c1-1.json" --c1 "$FS/c1-2.json" --out "$out1" --out "$out2" \
    --prover-id f01000 --synthesis-workers "$WORKERS" --host-budget "$HOST_BUDGET" \
    --backend cuda --rng-seed 7 --synthesis precompiled --r1cs-cache "$FS/porep-32g.r1cs" \
    --timeline "$timeline" "$@" > "$log" 2>&1
}

# Both 32 GiB C1s back to back through porep-c2 with the pre-compiled circuit (the
# steady state of #14: two proofs in one engine, TIMELINE in $FS/timeline-porep-two.jsonl).
step_porep_two() {
  porep_pre2 "$FS/proof-1t.bin" "$FS/proof-2t.bin" "$FS/timeline-porep-two.jsonl" \
    "$FS/porep_two.log"
  echo "porep_two rc=$?" >> "$FS/porep_two.log"
  cmp "$FS/proof-1p.bin" "$FS/proof-1t.bin" >> "$FS/porep_two.log" 2>&1 \
    && echo "sector 1's proof identical to porep_pre's (same --rng-seed)" >> "$FS/porep_two.log"
}

# The 32 GiB PoRep circuit recorded for --synthesis precompiled (what step_synth also
# records, without its benchmark).
step_precompile() {
  [ -s "$FS/porep-32g.r1cs" ] && { echo "kept $FS/porep-32g.r1cs" > "$FS/precompile.log"; return; }
  /usr/bin/time -v "$bin/cuzk" precompile --proof-type StackedDrg32GiBV1_1 \
    --out "$FS/porep-32g.r1cs" > "$FS/precompile.log" 2>&1
  echo "precompile rc=$?" >> "$FS/precompile.log"
}

# Both 32 GiB C1s back to back with the pre-compiled circuit, once per GPU worker count
# (GPU_WORKERS, default "1 2"): the steady state with one partition on the GPU at a time
# against partitions overlapping there. Logs porep_gw<N>.log, TIMELINE timeline-gw<N>.jsonl;
# every proof checked by verify_seal; sector 1's proof compared across the counts. Each
# partition's z upload says where its host time went (fill, waiting for copies:
# cuzk_gpu::matrices=debug) and any wait for device memory (cuzk_gpu::worker=info);
# porep_gw.log ends with each stage's mean per count.
step_porep_gw() {
  local n
  for n in ${GPU_WORKERS:-1 2}; do
    RUST_LOG="${RUST_LOG:-warn},cuzk_gpu::worker=info,cuzk_gpu::matrices=debug" \
      porep_pre2 "$FS/proof-1-gw$n.bin" "$FS/proof-2-gw$n.bin" "$FS/timeline-gw$n.jsonl" \
      "$FS/porep_gw$n.log" --gpu-workers "$n"
    echo "porep_gw$n rc=$?" >> "$FS/porep_gw$n.log"
    cmp "$FS/proof-1-gw1.bin" "$FS/proof-1-gw$n.bin" >> "$FS/porep_gw$n.log" 2>&1 \
      && echo "sector 1's proof identical to the one-worker run's (same --rng-seed)" \
        >> "$FS/porep_gw$n.log"
  done
  { cat "$FS"/porep_gw*.log | grep -vE "^sector [0-9]+ partition|upload_z plain"
    for n in ${GPU_WORKERS:-1 2}; do
      echo "-- $n GPU worker(s), stage means over all partitions:"
      grep -oE "(upload_z|abc|h_poly|msm_h|msm_l|msm_a|msm_b_g1|msm_b_g2) [0-9.]+s" "$FS/porep_gw$n.log" \
        | awk '{sub(/s$/, "", $2); s[$1] += $2; n[$1]++} END {for (k in s) printf " %s %.3f", k, s[k] / n[k]; print ""}'
      grep -oE "host fill [0-9.]+ s, waiting for copies [0-9.]+ s" "$FS/porep_gw$n.log" \
        | awk '{f += $3; w += $8; n++} END {if (n) printf " z upload host time: fill %.3f s, waiting for copies %.3f s (means of %d)\n", f / n, w / n, n}'
    done
  } > "$FS/porep_gw.log"
}

# Shifted H bases in the prover (issue 17): both 32 GiB C1s with the pre-compiled circuit,
# SH_WORKERS (default 2) GPU workers, each variant of SH_VARIANTS in turn: `plain` (the
# defaults), `shifted` (CUZK_SHIFTED_H=1: H's MSM over the resident shifted copies); a name
# ending in 1 (`plain1`, `shifted1`) runs one GPU worker (stage times without the other
# worker's kernels in them). Logs porep_sh-VARIANT.log, each proof compared with the plain
# run's (same --rng-seed), then the stage means in porep_sh.log; the per-partition steady
# state is the CLI's `per partition` line. (Session 16 also ran `queued`, downloads queued
# behind the kernels, and `prio`, a top-priority upload stream: toggles of commit fd05441,
# removed since.)
step_porep_sh() {
  local v w e
  for v in ${SH_VARIANTS:-plain shifted shifted1 plain1}; do
    w=${SH_WORKERS:-2}; case $v in *1) w=1 ;; esac
    case $v in
      plain*) e="" ;;
      shifted*) e="CUZK_SHIFTED_H=1" ;;
      *) echo "porep_sh: unknown variant $v" > "$FS/porep_sh-$v.log"; continue ;;
    esac
    ( ${e:+export $e}
      RUST_LOG="${RUST_LOG:-warn},cuzk_gpu::worker=info,cuzk_gpu::srs=info,cuzk_gpu::matrices=debug" \
        porep_pre2 "$FS/proof-1-$v.bin" "$FS/proof-2-$v.bin" "$FS/timeline-sh-$v.jsonl" \
        "$FS/porep_sh-$v.log" --gpu-workers "$w" )
    echo "porep_sh $v ($e, $w GPU workers) rc=$?" >> "$FS/porep_sh-$v.log"
    [ $v = plain ] || for k in 1 2; do
      cmp "$FS/proof-$k-plain.bin" "$FS/proof-$k-$v.bin" >> "$FS/porep_sh-$v.log" 2>&1 \
        && echo "sector $k's proof identical to the plain run's" >> "$FS/porep_sh-$v.log"
    done
  done
  for v in ${SH_VARIANTS:-plain shifted shifted1 plain1}; do
    echo "-- $v:"
    grep -E "rc=|identical|per partition|prover busy|verification|waited|shifted|resident|rror" "$FS/porep_sh-$v.log" \
      | grep -vE "^sector [0-9]+ partition"
    grep -oE "(upload_z|abc|h_poly|msm_h|msm_l|msm_a|msm_b_g1|msm_b_g2) [0-9.]+s" "$FS/porep_sh-$v.log" \
      | awk '{sub(/s$/, "", $2); s[$1] += $2; n[$1]++} END {for (k in s) printf " %s %.3f", k, s[k] / n[k]; print ""}'
  done > "$FS/porep_sh.log"
}

# One 32 GiB proof (C1 1, pre-compiled circuit) under each VRAM budget of BUDGETS (default
# "auto 32GiB 24GiB 16GiB"): the plan each partition ran under (resident or streamed key,
# peak), per partition at steady state from the TIMELINE, host peak RSS (time -v), the
# nvidia-smi peak over the run (samples.txt between the run's own marks), each proof
# compared with auto's (same --rng-seed). Logs budget-B.log, TIMELINE timeline-budget-B.jsonl;
# the table in budgets.log. With .device-carry/fs/cuzk-base.xz carried (an earlier build,
# the baseline), each budget of BASE_BUDGETS is run with it too, in the same session:
# budget-base-B.log, its proof compared with the new build's auto proof. A build reads only
# the kernels it was built from: carry the baseline's in .device-carry/fs/kernels-base/
# (its bundle's kernels folder) when the kernel sources changed since. A budget written
# B-nokept (e.g. 16GiB-nokept) runs B with CUZK_KEPT_H=0: a streamed H's chunks each summed
# by an MSM of its own, the same build's default measured against (budget-B-nokept.log);
# B-noahead runs it with CUZK_RING_AHEAD=0: the streamed key's first chunks cross only after
# the H polynomial (budget-B-noahead.log); B-noparked with CUZK_PARKED_BATCHES=0: partitions
# one at a time where the default parks a batch (budget-B-noparked.log). A budget ending in
# -two proves two proofs (C1s 1 and 2, twenty partitions) in one engine: the steady state of
# batches that fill (e.g. 16GiB-two, 16GiB-noparked-two).
budget_run() {
  local exe=$1 label=$2 b=$3 t0 t1 kernels=$FS/kernels kept=1 ahead=1 parked=1 second=()
  case $b in *-two) b=${b%-two}; second=(--c1 "$FS/c1-2.json" --out "$FS/proof-2-$label.bin") ;; esac
  case $b in *-nokept) b=${b%-nokept}; kept=0 ;; esac
  case $b in *-noahead) b=${b%-noahead}; ahead=0 ;; esac
  case $b in *-noparked) b=${b%-noparked}; parked=0 ;; esac
  [ "$exe" = cuzk-base ] && [ -d "$FS/kernels-base" ] && kernels=$FS/kernels-base
  # The nvidia-smi window opens once the previous run's device memory is given back (up to
  # 15 s): on 2026-12-06 a 16 GiB run's window caught the 32 GiB run before it at 32.7 GiB.
  local i used
  for i in $(seq 15); do
    used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
    [ "${used:-0}" -lt 2048 ] && break
    sleep 1
  done
  t0=$(date +%s)
  CUZK_KEPT_H=$kept CUZK_RING_AHEAD=$ahead CUZK_PARKED_BATCHES=$parked CUZK_FATBIN_DIR="$kernels" RUST_LOG="${RUST_LOG:-warn},cuzk_gpu::worker=info,cuzk_gpu::streamed=info,cuzk_gpu::matrices=info" \
    /usr/bin/time -v "$bin/$exe" porep-c2 --c1 "$FS/c1-1.json" --out "$FS/proof-1-$label.bin" "${second[@]}" \
    --prover-id f01000 --synthesis-workers "$WORKERS" --host-budget "$HOST_BUDGET" \
    --backend cuda --rng-seed 7 --synthesis precompiled --r1cs-cache "$FS/porep-32g.r1cs" \
    --vram-budget "$b" --timeline "$FS/timeline-$label.jsonl" > "$FS/$label.log" 2>&1
  echo "budget $b ($exe, CUZK_KEPT_H=$kept CUZK_RING_AHEAD=$ahead CUZK_PARKED_BATCHES=$parked) rc=$?" >> "$FS/$label.log"
  t1=$(date +%s)
  # No sample inside the window (a short run between two samples, a sampler that stalled)
  # says so instead of reading 0.0.
  awk -v a="$t0" -v e="$t1" '$1 >= a && $1 <= e {n++; if ($3 + 0 > v) v = $3 + 0}
      END {if (n) printf "nvidia-smi peak %.1f GiB (%d samples, %s..%s)\n", v / 1024, n, a, e;
           else printf "nvidia-smi peak: no sample between %s and %s\n", a, e}' \
    "$FS/samples.txt" >> "$FS/$label.log"
  # Compared with auto's proof when auto ran before (put it first in BUDGETS); auto's own
  # log says nothing of it.
  if [ "$label" != budget-auto ] && [ -e "$FS/proof-1-budget-auto.bin" ]; then
    cmp "$FS/proof-1-budget-auto.bin" "$FS/proof-1-$label.bin" >> "$FS/$label.log" 2>&1 \
      && echo "proof identical to auto's (same --rng-seed)" >> "$FS/$label.log"
  fi
}

step_budgets() {
  local b labels=""
  for b in ${BUDGETS:-auto 32GiB 24GiB 16GiB}; do
    budget_run cuzk "budget-$b" "$b"
    labels="$labels budget-$b"
  done
  if [ -x "$bin/cuzk-base" ]; then
    for b in ${BASE_BUDGETS:-32GiB}; do
      budget_run cuzk-base "budget-base-$b" "$b"
      labels="$labels budget-base-$b"
    done
  fi
  for l in $labels; do
    echo "-- $l:"
    grep -E "rc=|identical|per partition|^proof|steady|streamed|resident|refused|rror|nvidia-smi peak|Maximum resident|crossed|parked|pinned" "$FS/$l.log" \
      | grep -vE "^sector [0-9]+ partition|on the device: kernels" | sort | uniq -c | sort -rn | head -12
    # One steady-state partition's streamed breakdown (the 5th logged), and the host's share
    # of a stage that streams the matrices.
    grep -o "msm_[a-z_]* on the device: .*" "$FS/$l.log" | sed -n 5p
    grep -o "[a-z_]* with the matrices streamed .*" "$FS/$l.log" | sed -n 5p
    grep -oE "(upload_z|abc|h_poly|msm_h[a-z_]*|msm_l|msm_a|msm_b[a-z0-9_]*|gather) [0-9.]+s" "$FS/$l.log" \
      | awk '{sub(/s$/, "", $2); s[$1] += $2; n[$1]++} END {for (k in s) printf " %s %.3f", k, s[k] / n[k]; print ""}'
  done > "$FS/budgets.log"
}

# MSMs over shifted bases and per-call windows (issue 17), before the key takes the GPU:
# cuzk-cuda's msm tests (carried as msm_tests: shifted bases and per-call windows against
# the CPU), then msm_bench: G1 2^24, 2^26 and G2 2^24 plain and with the automatic shifted
# shape; G1 2^27 plain, a window sweep of the plain MSM, and the shapes SHAPES27 (2-3
# copies, what fits beside a resident 32 GiB key). Logs msm-tests.log, msm-a.log, msm-b.log.
step_msm() {
  "$bin/msm_tests" --test-threads=1 > "$FS/msm-tests.log" 2>&1
  echo "msm tests rc=$?" >> "$FS/msm-tests.log"
  "$bin/msm_bench" --msm-only --g1-logs 24,26 --g2-logs 24 --shifted --repeats 7 \
    --json "$FS/msm-a.json" > "$FS/msm-a.log" 2>&1
  echo "msm_bench a rc=$?" >> "$FS/msm-a.log"
  "$bin/msm_bench" --msm-only --g1-logs 27 --max-log-g2 0 --g1-sweep 27:21-22 --shifted \
    --shifted-shapes "${SHAPES27:-22:6,24:6,22:4}" --repeats 5 \
    --json "$FS/msm-b.json" > "$FS/msm-b.log" 2>&1
  echo "msm_bench b rc=$?" >> "$FS/msm-b.log"
  { grep -E "^test result|FAILED|panicked|rc=" "$FS/msm-tests.log"
    grep -hE "MSM|sweep 2|differs|rror|rc=" "$FS/msm-a.log" "$FS/msm-b.log"
  } > "$FS/msm.log"
}

# The witness upload as bits (issue 17): both 32 GiB C1s with the pre-compiled circuit and
# ZGPU_WORKERS (default 2) GPU workers, z uploaded packed
# (CUZK_PACKED_Z=1) and plain (the default); logs porep_z-{packed,plain}.log; the proofs compared across the two.
step_porep_z() {
  local z
  for z in packed plain; do
    ( [ $z = packed ] && export CUZK_PACKED_Z=1
      RUST_LOG="${RUST_LOG:-warn},cuzk_gpu::matrices=debug" \
        porep_pre2 "$FS/proof-1-$z.bin" "$FS/proof-2-$z.bin" "$FS/timeline-z-$z.jsonl" \
        "$FS/porep_z-$z.log" --gpu-workers "${ZGPU_WORKERS:-2}" )
    echo "porep_z $z rc=$?" >> "$FS/porep_z-$z.log"
  done
  { grep -hE "upload_z packed" "$FS/porep_z-packed.log" | head -2
    for z in packed plain; do
      echo "-- $z: $(grep -E '^proof [0-9]|steady|rc=' "$FS/porep_z-$z.log" | tr '\n' ' ')"
      grep -oE "upload_z [0-9.]+s" "$FS/porep_z-$z.log" | awk -v z=$z '{sub(/s$/, "", $2); s += $2; n++} END {if (n) printf "   %s: upload_z mean %.3f s over %d partitions\n", z, s / n, n}'
    done
    cmp "$FS/proof-1-packed.bin" "$FS/proof-1-plain.bin" && cmp "$FS/proof-2-packed.bin" "$FS/proof-2-plain.bin" \
      && echo "proofs identical packed and plain (same --rng-seed)"
  } > "$FS/porep_z.log" 2>&1
}

# The packed upload's GPU tests and timing (the binaries of .device-carry/bits: cuzk-cuda's
# tests/packed.rs and tests/abc.rs, cuzk-gpu's tests/gpu_prover.rs, the z_upload example).
step_zbits() {
  local C=$here/.device-carry/bits t
  {
    export CUZK_FATBIN_DIR=$C/kernels CUZK_FIXTURES=$here/fixtures
    for t in packed abc; do timeout 120 "$C/bin/$t"; echo "test $t rc=$?"; done
    timeout 240 "$C/bin/gpu_prover" --nocapture --test-threads 1; echo "test gpu_prover rc=$?"
    timeout 60 "$C/bin/z_upload"; echo "z_upload default rc=$?"
    timeout 60 "$C/bin/z_upload" 130200000 0.013 8; echo "z_upload 8 threads rc=$?"
    timeout 60 "$C/bin/z_upload" 130200000 0.3 4; echo "z_upload 30% other rc=$?"
  } > "$FS/zbits.log" 2>&1
}

# A 32 GiB WindowPoSt partition's CPU side without its key (post_bench): synthetic
# vanilla proofs of 2349 sectors, then decode, vanilla check, circuit, synthesis, each
# timed with its CPU seconds and peak RSS.
step_window_synth() {
  local W=$FS/window-synth randomness; randomness=$(printf '5a%.0s' $(seq 31))1f
  mkdir -p "$W"
  [ -e "$W/vanilla/vanilla-2348.bin" ] || "$bin/cuzk" fixtures synth-post \
    --proof-type StackedDrgWindow32GiBV1_2 --randomness "$randomness" --prover-id f01000 \
    --sectors 1-2349 --seed 1 --out "$W/vanilla" > "$FS/window_synth.log" 2>&1
  local t
  for t in ${POST_THREADS:-16}; do
    /usr/bin/time -v "$bin/post_bench" --proof-type StackedDrgWindow32GiBV1_2 \
      --vanilla "$W/vanilla" --randomness "$randomness" --prover-id f01000 --threads "$t" \
      >> "$FS/window_synth.log" 2>&1
    echo "post_bench threads=$t rc=$?" >> "$FS/window_synth.log"
  done
}

# cuzk's MSM and NTT beside sppark 0.1.16's (benches/device/msm-vs-sppark.sh over the
# carried msm_bench, ntt_bench and sppark-bench; the table last in $FS/sppark.log).
step_sppark() {
  CUZK_BIN_DIR=$bin SPPARK_BENCH=$bin/sppark-bench OUT=$FS/sppark STEP_TIMEOUT=${SPPARK_TIMEOUT:-150} \
    bash "$here/benches/device/msm-vs-sppark.sh" > "$FS/sppark.log" 2>&1
  echo "sppark rc=$?" >> "$FS/sppark.log"
}

# supraseal-c2 through filecoin-proofs on the same C1 and key (it synthesizes
# all 10 partitions at once: expected to run out of host memory; recorded).
step_anchor() {
  [ -x "$bin/anchor-c2" ] || { echo "no anchor-c2 carried" > "$FS/anchor.log"; return; }
  timev=(); [ -x /usr/bin/time ] && timev=(/usr/bin/time -v)
  "${timev[@]}" timeout "${ANCHOR_TIMEOUT:-300}" "$bin/anchor-c2" --c1 "$FS/c1-1.json" \
    --out "$FS/proof-anchor.bin" --prover-id f01000 --verbose > "$FS/anchor.log" 2>&1
  echo "anchor rc=$?" >> "$FS/anchor.log"
  dmesg 2>/dev/null | grep -iE "out of memory|oom-kill|killed process" | tail -5 >> "$FS/anchor.log"
}

# With the recording of step precompile, the pre-compiled path (a, b, c on the device; H over
# plain and shifted bases); without it, full synthesis.
step_identity() {
  local r1cs=""; [ -s "$FS/porep-32g.r1cs" ] && r1cs="$FS/porep-32g.r1cs"
  CUZK_GPU_C1="$FS/c1-1.json" CUZK_GPU_R1CS="$r1cs" "$bin/gpu_full_scale" --nocapture > "$FS/identity.log" 2>&1
  echo "identity rc=$?" >> "$FS/identity.log"
}

# Partitions 0..BATCH-1 (default 4) of C1 1, pre-compiled, the key streamed in 2^23-point chunks
# and pinned: proved one at a time, then as batches of 2 and BATCH over one pass of the key each
# (gpu_full_scale's batch test, filtered: the CPU identity test is not run). Every batched proof
# equals its partition's alone and verifies; batch.log has time and key bytes per partition.
step_batch() {
  CUZK_FATBIN_DIR="$FS/kernels" CUZK_GPU_C1="$FS/c1-1.json" CUZK_GPU_R1CS="$FS/porep-32g.r1cs" \
    CUZK_GPU_BATCH="${BATCH:-4}" RUST_LOG="${RUST_LOG:-warn},cuzk_gpu::streamed=info" \
    "$bin/gpu_full_scale" --nocapture batch > "$FS/batch.log" 2>&1
  echo "batch rc=$?" >> "$FS/batch.log"
}

# The daemon, over a unix socket, with the client in `cuzk client`: 512 MiB
# against porep-c2 on the same C1 (when c1-512MiB.json is there), then the C1
# of the porep step with its key preloaded HOT, against that step's porep-c2
# run (check + pipeline + verification: the same work, the key in memory);
# GetStatus and /status (resident keys per GPU) after the proof and after
# EvictSRS. Partitions get the porep step's HOST_BUDGET: the daemon's engine
# budget is that plus the key, which a HOT key borrows from it. Its table is
# $FS/daemon-table.txt. DAEMON_SIZE=2KiB BACKEND=cpu runs it at 2 KiB (with
# $FS/c1-1.json, $FS/porep.log and the 2 KiB key in $P made beforehand).
step_daemon() {
  local size=${DAEMON_SIZE:-32GiB} backend=${BACKEND:-cuda}
  local circuit
  case "$size" in
    2KiB) circuit=porep-2k ;; 8MiB) circuit=porep-8m ;; 512MiB) circuit=porep-512m ;;
    32GiB) circuit=porep-32g ;; *) echo "DAEMON_SIZE must be 2KiB, 8MiB, 512MiB or 32GiB" > "$FS/daemon.log"; return ;;
  esac
  local key; key=$(ls -SL "$P"/v28-stacked-proof-of-replication-*.params 2>/dev/null | head -1)
  local key_bytes; key_bytes=$(stat -L -c %s "$key" 2>/dev/null || echo 0)
  cat > "$FS/daemon.toml" <<TOML
[listen]
addresses = ["unix:$FS/cuzk.sock"]
status_address = "127.0.0.1:9821"
[proving]
params_dir = "$P"
backend = "$backend"
synthesis_workers = $WORKERS
gpu_workers = 1
partitions_in_flight = $(( WORKERS + 1 ))
engine_memory_budget = $(( HOST_BUDGET_BYTES + key_bytes ))
[srs]
host_budget = $(( key_bytes + (2 << 30) ))
[state]
dir = "$FS/daemon-state"
TOML
  : > "$FS/client.log"
  if [ -e "$FS/c1-512MiB.json" ]; then
    "$bin/cuzk" porep-c2 --c1 "$FS/c1-512MiB.json" --out "$FS/proof-512MiB.bin" --prover-id f01000 \
      --backend "$backend" > "$FS/porep-512MiB.log" 2>&1
    echo "porep-512MiB rc=$?" >> "$FS/porep-512MiB.log"
  fi
  rm -rf "$FS/daemon-state"
  RUST_LOG=info "$bin/cuzk" daemon --config "$FS/daemon.toml" > "$FS/daemon.log" 2>&1 &
  local daemon=$!
  for _ in $(seq 120); do grep -q "cuzk daemon ready" "$FS/daemon.log" && break; sleep 1; done
  local c="$bin/cuzk client" at="unix:$FS/cuzk.sock"
  # GetStatus, then what the wire has no field for: each GPU's resident keys
  # (/status) and the device-key metrics.
  show() {
    echo "---- $1"
    $c status --daemon "$at"
    echo "resident keys (/status): $(http_get /status | grep -o '"resident_keys":\[[^]]*\]')"
    http_get /metrics | grep -E '^cuzk_(gpu_|srs_tier.*hot|srs_hot_bytes|engine_memory_lent)' | grep -v ' 0$'
  } >> "$FS/client.log" 2>&1
  show "at start"
  if [ -e "$FS/c1-512MiB.json" ]; then
    $c prove --daemon "$at" --c1 "$FS/c1-512MiB.json" --prover-id f01000 \
      --out "$FS/proof-d512.bin" >> "$FS/client.log" 2>&1
    echo "client 512MiB rc=$?" >> "$FS/client.log"
    # Its key would take host budget from the big proof's partitions.
    $c evict --daemon "$at" --circuit-id porep-512m >> "$FS/client.log" 2>&1
  fi
  $c preload --daemon "$at" --circuit-id "$circuit" >> "$FS/client.log" 2>&1
  echo "preload rc=$?" >> "$FS/client.log"
  $c prove --daemon "$at" --c1 "$FS/c1-1.json" --prover-id f01000 \
    --out "$FS/proof-d1.bin" > "$FS/client-$size.log" 2>&1
  echo "client $size rc=$?" >> "$FS/client-$size.log"
  cat "$FS/client-$size.log" >> "$FS/client.log"
  show "after the $size proof"
  $c evict --daemon "$at" --circuit-id "$circuit" >> "$FS/client.log" 2>&1
  show "after EvictSRS $circuit"
  kill -TERM $daemon; wait $daemon; echo "daemon rc=$?" >> "$FS/daemon.log"
  daemon_table "$size" "$circuit" > "$FS/daemon-table.txt"
}

# GET a path of the daemon's status server (curl when there is one, else bash's /dev/tcp).
http_get() {
  if command -v curl > /dev/null; then curl -s "http://127.0.0.1:9821$1"; return; fi
  exec 3<>/dev/tcp/127.0.0.1/9821 || return
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3>&-
}

# The daemon step's table: its Prove call against porep-c2 on the same C1.
daemon_table() {
  local size=$1 circuit=$2
  local stage; stage() { awk -v s="$1" '$1 == s {sub(/s$/, "", $2); print $2; exit}' "$FS/porep.log" 2>/dev/null; }
  local check pipeline verify call
  check=$(stage check); pipeline=$(stage pipeline); verify=$(stage verification)
  call=$(sed -nE 's/^client: Prove call ([0-9.]+) s.*/\1/p' "$FS/client-$size.log" | head -1)
  echo "== daemon, $size ($circuit, key preloaded HOT), against porep-c2 on the same C1"
  grep -E "^daemon: total|^client: Prove call|rc=" "$FS/client-$size.log"
  if [ -n "$call" ] && [ -n "$pipeline" ]; then
    awk -v call="$call" -v c="${check:-0}" -v p="$pipeline" -v v="${verify:-0}" 'BEGIN {
      ref = c + p + v
      printf "%-44s %10.3f s\n", "daemon: Prove call (client wall time)", call
      printf "%-44s %10.3f s  (check %.3f + pipeline %.3f + verification %.3f)\n", "porep-c2: the same work, key in memory", ref, c, p, v
      printf "%-44s %+10.3f s  %+.2f%% (target <= 2%%)\n", "overhead of the daemon", call - ref, 100 * (call - ref) / ref
    }'
  else
    echo "no comparison: Prove call '${call:-?}' s, porep-c2 pipeline '${pipeline:-?}' s (is porep.log from the porep step there?)"
  fi
  echo "-- GetStatus and resident keys after the proof, and after EvictSRS:"
  grep -v '^+' "$FS/client.log" | sed -n '/^---- after the/,$p'
  grep -E "will be refused|waiting for host budget|evicted from VRAM|ERROR|panicked" "$FS/daemon.log" | tail -8
  grep "daemon rc=" "$FS/daemon.log"
}

# WinningPoSt latency through the daemon (benches/device/post-latency.sh, issue 16): its
# key made here on the GPU, a synthetic vanilla proof, then alone (key HOT) and 30 s into a
# 32 GiB PoRep of C1 1, with this chain's binary, PoRep key and C1 (run `keys c1s` first).
# Its logs in $FS/post-latency/ (in fs.tgz), its table last in $FS/post.log. (POST_SIZE=2KiB
# POST_BACKEND=cpu: the same step here, with that size's key and C1 made by the script.)
step_post() {
  OUT='' FS=$FS CUZK=$bin/cuzk P=$P SIZE=${POST_SIZE:-32GiB} BACKEND=${POST_BACKEND:-cuda} \
    HOST_BUDGET=$HOST_BUDGET WORKERS=$WORKERS bash "$here/benches/device/post-latency.sh" run > "$FS/post.log" 2>&1
  echo "post rc=$?" >> "$FS/post.log"
}

# 32 GiB WindowPoSt and SnapDeals on the GPU (issue 16), one key on disk at a time (the box's
# 64 GiB disk holds one of the 45 / 30 GB keys, not one beside the PoRep key's 47 GB): the
# PoRep keys and $FS/*.r1cs are removed first; then the WindowPoSt key is made on the GPU, a
# full partition's synthetic vanilla proofs (sectors 1-N, N = 2349 at 32 GiB) made by `cuzk
# fixtures synth-post`, proved by `cuzk window-post` (verified by verify_window_post) and its
# key removed; then the same for the SnapDeals update key, `cuzk fixtures synth-snap` (16
# partitions) and `cuzk snap-prove --synthesis-workers $WORKERS` (the engine: partitions
# synthesized $WORKERS at once; verified by verify_empty_sector_update_proof). Logs in
# $FS/post32/ (in fs.tgz), the table last in $FS/post32.log. POST32_SIZE=2KiB
# POST32_BACKEND=cpu runs it here (a debug or release `cuzk` as $FS/bin/cuzk). Disk at 32 GiB:
# the WindowPoSt key is 60.8 GB (56.6 GiB, from its counts: H 2^27, L 126.9 M, A 96.2 M, B 91.9 M
# points), the update key 34.5 GB; a key without room is skipped, saying so (the box had 64 GiB
# free before the PoRep key). POST32_KINDS (default "window snap"; also winning) picks and
# orders the kinds. POST32_SYNTHESIS=precompiled (the default) records each circuit first
# (`cuzk precompile`), makes its key from the recording and proves with --synthesis
# precompiled; `full` synthesizes in full from a key of the blank circuit. Each kind is also
# proved by supraseal-c2 through filecoin-proofs (anchor-c2, when carried) with the same key
# and vanilla proofs. Measured in session 10/11 (full synthesis): WindowPoSt key 549 s,
# window-post 88.7 s; update key 108-134 s, snap-prove 184 s.
step_post32() {
  { set +x; } 2> /dev/null # the table is the log's tail, which the summary shows
  post32 > "$FS/post32.log" 2>&1
  set -x
}

post32() {
  local size=${POST32_SIZE:-32GiB} backend=${POST32_BACKEND:-cuda}
  local fixed=$backend W=$FS/post32
  [ "$backend" = cpu ] || fixed=cuda
  local sectors
  case "$size" in
    32GiB) sectors=2349 ;; 64GiB) sectors=2300 ;; 2KiB|8MiB|512MiB) sectors=2 ;;
    *) echo "POST32_SIZE must be 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"; return ;;
  esac
  mkdir -p "$W"
  echo "== room: the PoRep keys and recorded circuits leave the disk"
  ls -la "$P"/v28-stacked-proof-of-replication-* "$FS"/*.r1cs 2>/dev/null
  rm -f "$P"/v28-stacked-proof-of-replication-* "$FS"/*.r1cs
  df -h "$FS"
  local randomness; randomness=$(printf '5a%.0s' $(seq 31))1f
  # now_ms; then seconds since $1 (ms), 3 decimals.
  now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
  since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN {printf "%.3f", (b - a) / 1000}'; }
  # The key of `--kind $1`: made (timed), its files noted in $W/$1.files for removal;
  # from the recording $2 when given (the QAP from the recorded matrices: no
  # synthesis of the blank circuit into the key assembly).
  make_key() {
    local t; t=$(now_ms)
    RUST_LOG=cuzk_groth16=info,cuzk_gpu=info "$bin/cuzk" fixtures keys --sector-size "$size" \
      --kind "$1" --backend "$fixed" --dir "$P" ${2:+--from-recording "$2"} > "$W/keys-$1.log" 2>&1
    echo "keys $1 rc=$?" >> "$W/keys-$1.log"
    echo "$(since "$t")" > "$W/keys-$1.s"
    sed -nE 's/^wrote (.*) \([0-9]+ bytes\) and (.*) in [0-9.]+s.*/\1\n\2/p' "$W/keys-$1.log" > "$W/$1.files"
    ls -la $(cat "$W/$1.files"); df -h "$FS"
  }
  # With POST32_SYNTHESIS=precompiled (the default): the circuit of `--kind $1` recorded
  # into $2 (timed, $W/precompile-$1.log); prints nothing. Otherwise leaves $2 unset.
  # A recording that failed (no room in its folder, say) is removed and the kind falls back
  # to full synthesis from a key of the blank circuit: rec is cleared, the log says why.
  record() {
    local t rc; t=$(now_ms)
    df -h "$(dirname "$2")"
    /usr/bin/time -v "$bin/cuzk" precompile --sector-size "$size" --kind "$1" --out "$2" \
      > "$W/precompile-$1.log" 2>&1
    rc=$?
    echo "precompile $1 rc=$rc" >> "$W/precompile-$1.log"
    echo "$(since "$t")" > "$W/precompile-$1.s"
    ls -la "$2"; df -h "$(dirname "$2")"
    if [ "$rc" != 0 ]; then
      echo "recording $1 failed (rc=$rc): full synthesis from the blank circuit's key instead" \
        | tee -a "$W/precompile-$1.log"
      rm -f "$2"; rec=""; how=full
    fi
  }
  # supraseal-c2 through filecoin-proofs (anchor-c2 $1 ...), timed, when carried; the log
  # is $W/$2-anchor.log. Out of host memory is recorded, not fatal.
  anchor() {
    local log=$W/$2-anchor.log
    [ -x "$bin/anchor-c2" ] || { echo "no anchor-c2 carried" > "$log"; return; }
    local t; t=$(now_ms)
    local kind=$1 name=$2; shift 2
    /usr/bin/time -v timeout "${ANCHOR_TIMEOUT:-300}" "$bin/anchor-c2" "$kind" "$@" --verbose \
      --out "$W/$name-anchor.proof" > "$log" 2>&1
    echo "anchor-c2 $kind rc=$?" >> "$log"
    echo "$(since "$t")" > "$W/$name-anchor.s"
    dmesg 2>/dev/null | grep -iE "out of memory|oom-kill|killed process" | tail -3 >> "$log"
  }
  drop_key() { rm -f $(cat "$W/$1.files" 2>/dev/null); df -h "$FS"; }
  local how=${POST32_SYNTHESIS:-precompiled}
  # Whether $2 GiB are free for the key of `--kind $1` (the 32 GiB key sizes from the
  # circuit counts: WindowPoSt 60.8 GB = 56.6 GiB, update 34.5 GB = 32.1 GiB); else says so.
  room_for() {
    local free; free=$(( $(df -B1 --output=avail "$P" | tail -1) >> 30 ))
    [ "$free" -ge "$2" ] && return 0
    echo "skipped $1: $free GiB free on $(df --output=target "$P" | tail -1), its key needs ~$2 GiB" \
      | tee "$W/keys-$1.log"
    return 1
  }
  local need_window=0 need_update=0
  [ "$size" = 32GiB ] && need_window=57 need_update=33

  local kind
  for kind in ${POST32_KINDS:-window snap}; do
    case "$kind" in
      window) post32_window ;;
      snap) post32_snap ;;
      winning) post32_winning ;;
      *) echo "POST32_KINDS: unknown kind $kind (window, snap, winning)" ;;
    esac
  done

  for f in "$W"/keys-*.log "$W"/precompile-*.log "$W"/synth-*.log "$W"/window.log "$W"/snap.log \
      "$W"/winning.log "$W"/*-anchor.log; do
    [ -e "$f" ] || continue
    echo "---- $f"; grep -vE "^partition [0-9]+/|^sector [0-9]+: comm_r" "$f" | tail -25
  done
  post32_table "$size" "$sectors" | tee "$FS/post32-table.txt"
}

# post32's WindowPoSt part (its variables are post32's locals). Pre-compiled, the
# recording goes to R1CS_DIR (default /dev/shm: beside the 56.6 GiB key it does not fit
# the box's 64 GiB disk), the key is made from it, and both are removed after.
post32_window() {
  local how=$how # record() may turn this kind (only) to full synthesis
  echo "== WindowPoSt, $size, one partition of $sectors sectors ($how)"
  local wt=StackedDrgWindow${size}V1_2 t rec=""
  if [ "$how" = precompiled ]; then
    rec=${R1CS_DIR:-/dev/shm}/window-$size.r1cs
    record window-post "$rec"
  fi
  room_for window-post $need_window && make_key window-post "$rec"
  t=$(now_ms)
  "$bin/cuzk" fixtures synth-post --proof-type "$wt" --randomness "$randomness" \
    --prover-id f01000 --sectors "1-$sectors" --seed 1 --out "$W/window-vanilla" \
    > "$W/synth-window.log" 2>&1
  echo "synth-post rc=$?" >> "$W/synth-window.log"
  echo "$(since "$t")" > "$W/synth-window.s"
  t=$(now_ms)
  /usr/bin/time -v "$bin/cuzk" window-post --proof-type "$wt" --vanilla "$W/window-vanilla" \
    --randomness "$randomness" --prover-id f01000 --backend "$backend" --rng-seed 1 \
    --synthesis "$how" ${rec:+--r1cs-cache "$rec"} \
    --out "$W/window.proof" > "$W/window.log" 2>&1
  echo "window-post rc=$?" >> "$W/window.log"
  echo "$(since "$t")" > "$W/window.s"
  anchor window-post window --proof-type "$wt" --vanilla "$W/window-vanilla" \
    --randomness "$randomness" --prover-id f01000
  drop_key window-post
  [ -n "$rec" ] && rm -f "$rec"
}

# post32's SnapDeals part (its variables are post32's locals).
post32_snap() {
  local how=$how # record() may turn this kind (only) to full synthesis
  echo "== SnapDeals, $size ($how)"
  local t rec=""
  if [ "$how" = precompiled ]; then
    rec=$W/update-$size.r1cs
    record update "$rec"
  fi
  room_for update $need_update && make_key update "$rec"
  t=$(now_ms)
  "$bin/cuzk" fixtures synth-snap --sector-size "$size" --seed 1 --out "$W/snap-vanilla" \
    > "$W/synth-snap.log" 2>&1
  echo "synth-snap rc=$?" >> "$W/synth-snap.log"
  echo "$(since "$t")" > "$W/synth-snap.s"
  local comm; comm() { awk -v n="$1" '$1 == n {print $2}' "$W/snap-vanilla/commitments.txt" 2>/dev/null; }
  t=$(now_ms)
  /usr/bin/time -v "$bin/cuzk" snap-prove --sector-size "$size" --vanilla "$W/snap-vanilla" \
    --comm-r-old "$(comm comm_r_old)" --comm-r-new "$(comm comm_r_new)" \
    --comm-d-new "$(comm comm_d_new)" --backend "$backend" --rng-seed 1 \
    --synthesis-workers "${SNAP_WORKERS:-$WORKERS}" --synthesis "$how" ${rec:+--r1cs-cache "$rec"} \
    --out "$W/snap.proof" > "$W/snap.log" 2>&1
  echo "snap-prove rc=$?" >> "$W/snap.log"
  echo "$(since "$t")" > "$W/snap.s"
  anchor snap-prove snap --sector-size "$size" --vanilla "$W/snap-vanilla" \
    --comm-r-old "$(comm comm_r_old)" --comm-r-new "$(comm comm_r_new)" \
    --comm-d-new "$(comm comm_d_new)"
  drop_key update
  [ -n "$rec" ] && rm -f "$rec"
}

# post32's WinningPoSt part (its variables are post32's locals): one sector's proof
# through the CLI (key read and verification included) and through supraseal.
post32_winning() {
  local how=$how # record() may turn this kind (only) to full synthesis
  echo "== WinningPoSt, $size ($how)"
  local wt=StackedDrgWinning${size}V1 t rec=""
  if [ "$how" = precompiled ]; then
    rec=$W/winning-$size.r1cs
    record winning-post "$rec"
  fi
  make_key winning-post "$rec"
  "$bin/cuzk" fixtures synth-post --proof-type "$wt" --randomness "$randomness" \
    --prover-id f01000 --sectors 1 --seed 1 --out "$W/winning-vanilla" > "$W/synth-winning.log" 2>&1
  t=$(now_ms)
  "$bin/cuzk" winning-post --proof-type "$wt" --vanilla "$W/winning-vanilla" \
    --randomness "$randomness" --prover-id f01000 --backend "$backend" --rng-seed 1 \
    --synthesis "$how" ${rec:+--r1cs-cache "$rec"} \
    --out "$W/winning.proof" > "$W/winning.log" 2>&1
  echo "winning-post rc=$?" >> "$W/winning.log"
  echo "$(since "$t")" > "$W/winning.s"
  anchor winning-post winning --proof-type "$wt" --vanilla "$W/winning-vanilla" \
    --randomness "$randomness" --prover-id f01000 --runs 3
  drop_key winning-post
}

# The post32 step's table, from its logs in $FS/post32.
post32_table() {
  local size=$1 sectors=$2 W=$FS/post32
  local stage; stage() { awk -v s="$1" '$1 == s {sub(/s$/, "", $2); print $2; exit}' "$2" 2>/dev/null; }
  local backend; backend() { sed -nE 's/^backend: ([a-z]+).*/\1/p' "$1" 2>/dev/null | head -1; }
  local valid; valid() { grep -qE "^verification .* valid" "$1" 2>/dev/null && grep -qE " rc=0$" "$1" && echo yes || echo NO; }
  local parts; parts=$(grep -c "^partition [0-9]*/" "$W/snap.log" 2>/dev/null)
  echo "-- WindowPoSt partition's stages and synthesis; SnapDeals per partition:"
  grep -E "^synthesis|^proving" "$W/window.log" 2>/dev/null | sed 's/^/   window: /'
  grep -E "^partition [0-9]+/" "$W/snap.log" 2>/dev/null | sed 's/^/   snap: /'
  grep -E "^synthesis|^proving|^pipeline" "$W/snap.log" 2>/dev/null | sed 's/^/   snap: /'
  echo "== post32: $size WindowPoSt (one partition, $sectors sectors) and SnapDeals (${parts:-?} partitions)"
  printf "%-10s %8s %8s %9s %9s %14s %8s %6s\n" kind "key s" "vanilla s" "prove s" "CLI s" "per partition" backend valid
  local wp sp
  wp=$(stage proving "$W/window.log"); sp=$(stage proving "$W/snap.log")
  printf "%-10s %8s %8s %9s %9s %14s %8s %6s\n" window-post "$(cat "$W/keys-window-post.s" 2>/dev/null)" \
    "$(cat "$W/synth-window.s" 2>/dev/null)" "${wp:-?}" "$(cat "$W/window.s" 2>/dev/null)" "${wp:-?}" \
    "$(backend "$W/window.log")" "$(valid "$W/window.log")"
  printf "%-10s %8s %8s %9s %9s %14s %8s %6s\n" snap "$(cat "$W/keys-update.s" 2>/dev/null)" \
    "$(cat "$W/synth-snap.s" 2>/dev/null)" "${sp:-?}" "$(cat "$W/snap.s" 2>/dev/null)" \
    "$(awk -v p="${sp:-0}" -v n="${parts:-0}" 'BEGIN {if (n) printf "%.3f", p / n; else print "?"}')" \
    "$(backend "$W/snap.log")" "$(valid "$W/snap.log")"
  local k
  for k in window-post update winning-post; do
    [ -e "$W/precompile-$k.s" ] && echo "recorded $k in $(cat "$W/precompile-$k.s") s: $(grep -E '^recorded|^written' "$W/precompile-$k.log" | tr '\n' ' ')"
  done
  grep -hE "^synthesis mode|^synthesis " "$W/window.log" "$W/snap.log" "$W/winning.log" 2>/dev/null | sed 's/^/   cuzk: /'
  for k in window snap winning; do
    [ -e "$W/$k-anchor.log" ] && echo "supraseal $k ($(cat "$W/$k-anchor.s" 2>/dev/null || echo '-') s): $(grep -E '^anchor-c2 |carried' "$W/$k-anchor.log" | tail -1)"
    [ -e "$W/$k.s" ] && echo "cuzk $k CLI: $(cat "$W/$k.s") s, peak RSS $(grep -E '^peak host RSS' "$W/$k.log" | tail -1)"
  done
  echo "(vanilla s: the synthetic vanilla proofs; prove s: the CLI's proving stages, synthesis apart;"
  echo " CLI s: the whole command, key load and"
  echo " verification included. A 32 GiB PoRep partition: 1.67-1.90 s of GPU stages pre-compiled,"
  echo " ~2.4-2.7 s with parallel synthesis, BENCHMARKS.md session 9.)"
}

steps() {
  set -x
  export FIL_PROOFS_PARAMETER_CACHE=$P RUST_LOG=${RUST_LOG:-warn}
  mkdir -p "$P"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  free -g; df -h "$FS"; nproc
  ( while :; do
      echo "$(date +%s) $(free -b | awk '/Mem:/{print $3}') $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits | tr -d ' ')"
      sleep 2
    done ) > "$FS/samples.txt" 2>/dev/null &
  sampler=$!
  for step in $STEPS; do
    mark "$step"
    "step_$step"
  done
  mark end
  kill $sampler
  summary > "$FS/summary.txt"
  touch "$FS/done"
}

# Seconds from a step's mark to the next mark of $FS/marks.txt.
span() {
  awk -v a="$1" 'f && !e {e = $2} $1 == a {s = $2; f = 1} END {if (s && e) print e - s; else print "?"}' "$FS/marks.txt"
}

ran() { grep -q "^$1 " "$FS/marks.txt" 2>/dev/null; }

summary() {
  echo "== 32 GiB PoRep on $(nvidia-smi --query-gpu=name --format=csv,noheader), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; steps: $STEPS"
  if ran keys; then echo "-- key: $(span keys) s (with the 512 MiB key)"; grep -E "wrote|peak|rc=|error" "$FS/keys.log"; fi
  if ran c1s; then echo "-- C1s, $(span c1s) s:"; grep -E "challenges|rc=|error" "$FS/c1.log"; fi
  if ran sweep; then echo "-- sweep (two proofs back to back), $(span sweep) s:"; grep -vE "^backend:" "$FS/sweep.log" | tail -14; fi
  if ran porep; then echo "-- porep-c2 (one proof), $(span porep) s:"; grep -vE "^partition|^sector [0-9]+ partition" "$FS/porep.log" | tail -16; fi
  if ran anchor; then
    echo "-- anchor (supraseal-c2), $(span anchor) s:"
    grep -E "wall|key|synthesis|proving|verify|rc=|Maximum resident|Killed|memory|error|panicked|carried" "$FS/anchor.log" 2>/dev/null | tail -14
  fi
  if ran identity; then echo "-- identity, $(span identity) s:"; grep -E "partition|cuda|cpu|rc=|panicked|test result" "$FS/identity.log" | tail -8; fi
  if ran batch; then echo "-- batch, $(span batch) s:"; grep -E "^alone|^batch of|rc=|panicked|test result" "$FS/batch.log" | cut -c1-220; fi
  if ran daemon; then
    echo "-- daemon, $(span daemon) s:"; grep -E "rc=|verification|total" "$FS/porep-512MiB.log" 2>/dev/null | tail -3
    cat "$FS/daemon-table.txt" 2>/dev/null
  fi
  for extra in $STEPS; do
    case " $ALL_STEPS " in *" $extra "*) ;; *) echo "-- $extra, $(span "$extra") s:"; tail -20 "$FS/$extra.log" 2>/dev/null ;; esac
  done
  echo "-- peak host memory used (free), peak VRAM used, mean GPU utilization per step:"
  for step in $STEPS; do
    next=$(awk -v a=$step '$1 == a {f = 1; next} f {print $1; exit}' "$FS/marks.txt")
    a=$(awk -v s=$step '$1 == s {print $2}' "$FS/marks.txt"); b=$(awk -v s="$next" '$1 == s {print $2}' "$FS/marks.txt")
    [ -n "$a" ] && [ -n "$b" ] || continue
    awk -v a="$a" -v b="$b" -v s=$step \
      '{split($3, g, ","); if ($1 >= a && $1 <= b) {n++; u += g[2]; if ($2 > m) m = $2; if (g[1] > v) v = g[1]}}
       END {printf "   %-9s %6.1f GiB host, %6.1f GiB VRAM, %5.1f%% GPU\n", s, m / 2^30, v / 1024, n ? u / n : 0}' "$FS/samples.txt"
  done
}

collect() {
  [ -n "${OUT:-}" ] || return 0
  tar -C "$FS" -czf "$OUT/fs.tgz" --exclude bin --exclude params --exclude 'c1-*.json' \
    --exclude '*.bin' --exclude '*.r1cs' --exclude daemon-state --exclude cuzk.sock . 2>/dev/null
  cp "$FS/summary.txt" "$OUT/" 2>/dev/null
  ls -la "$OUT"
}

install_bins() {
  xz -dc "$here/.device-carry/fs/cuzk.xz" > "$bin/cuzk" && chmod +x "$bin/cuzk" || exit 1
  # The others only when carried (a step that needs a missing one fails and says so).
  for f in cuzk-base gpu_full_scale sweep synth_bench post_bench msm_bench msm_tests ntt_bench sppark-bench; do
    if [ -e "$here/.device-carry/fs/$f.xz" ]; then
      xz -dc "$here/.device-carry/fs/$f.xz" > "$bin/$f" && chmod +x "$bin/$f"
    fi
  done
  # The supraseal-c2 anchor (benches/anchor-c2/build.sh), when carried.
  if [ -e "$here/.device-carry/fs/anchor-c2.xz" ]; then
    xz -dc "$here/.device-carry/fs/anchor-c2.xz" > "$bin/anchor-c2" && chmod +x "$bin/anchor-c2"
  fi
  if [ -d "$here/.device-carry/fs/kernels" ]; then
    cp -r "$here/.device-carry/fs/kernels" "$FS/kernels"
  fi
  if [ -d "$here/.device-carry/fs/kernels-base" ]; then
    cp -r "$here/.device-carry/fs/kernels-base" "$FS/kernels-base"
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
      echo "[$(date +%T)] $(tail -1 "$FS/marks.txt" 2>/dev/null) | $(tail -1 "$FS/samples.txt" 2>/dev/null)"
      # What the run has logged so far comes back even if the call is cut off.
      collect > /dev/null
    done
    if [ -e "$FS/done" ]; then cat "$FS/summary.txt"; collect; else echo "still running"; fi
    ;;
  collect) summary; collect ;;
  *) echo "usage: $0 start [SECONDS] | wait SECONDS | collect" >&2; exit 2 ;;
esac
