#!/usr/bin/env bash
# WinningPoSt latency through `cuzk daemon` (issue 16), on the GPU machine at 32 GiB
# or here at 2 KiB on the CPU (the same script: SIZE=2KiB BACKEND=cpu).
#
#   benches/device/post-latency.sh run            # 32 GiB, cuda (the H200 box)
#   SIZE=2KiB BACKEND=cpu benches/device/post-latency.sh run   # here, end to end
#   benches/device/post-latency.sh start [SECONDS] / wait SECONDS   # past one device call
#
# Inputs, as benches/device/full-scale.sh leaves them in its run folder $FS (the file
# /tmp/cuzk-fs-path names it; FS=DIR to choose): the `cuzk` binary ($FS/bin/cuzk, or
# CUZK=PATH) with kernels in $FS/kernels, the 32 GiB PoRep key in $FS/params and the
# synthetic C1 $FS/c1-1.json (sector 1 of f01000). What is missing is made: the PoRep key
# (~3.4 min at 32 GiB), the C1 (seconds), the WinningPoSt key and the synthetic WinningPoSt
# vanilla proof of sector 1 (`cuzk fixtures synth-post`).
#
# Then a daemon (backend $BACKEND, unix socket, status on 127.0.0.1:9822) and `cuzk client`:
#   (a) WinningPoSt alone with its key HOT (PreloadSRS winning-<size>), 3 times: the
#       client's Prove call, request to verified proof (the daemon verifies with
#       verify_winning_post before it answers), and the daemon's own total;
#   (b) the PoRep C1 submitted (NORMAL), then after $DELAY s (30 at 32 GiB) a WinningPoSt
#       (CRITICAL, Curio's default for the kind): its latency, and the PoRep's total.
# and prints a table last (also $FS/post-latency/summary.txt; $OUT/post-latency.tgz with
# the logs when $OUT is set). Targets: (a) <= 1.0 s, (b) <= 2.0 s.
#
# Device time at 32 GiB (estimates, session 9): the WinningPoSt key (370,723 constraints,
# ~192 MB: 0.4% of the PoRep key's 47 GB in 204 s) ~10 s with the process and CUDA start;
# the CLI reference proof ~15 s; daemon start + the PoRep key's load ~30 s; (a) seconds;
# (b) 30 s, then the rest of one 32 GiB PoRep through the daemon (its keys borrow 44 GiB of
# the 64 GiB budget: one partition in flight, ~5-8 min): ~7-10 min in all, ~2 min with
# POREP_WAIT=0.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
SIZE=${SIZE:-32GiB}
BACKEND=${BACKEND:-cuda}
case "$SIZE" in
  32GiB) tag=32g; DELAY=${DELAY:-30} ;;
  # At 2 KiB the PoRep's one partition is synthesized in ~7 s, then proved for minutes on
  # the CPU (one prover, not preempted): a WinningPoSt synthesized after that waits for it.
  2KiB) tag=2k; DELAY=${DELAY:-1} ;;
  8MiB) tag=8m; DELAY=${DELAY:-5} ;;
  512MiB) tag=512m; DELAY=${DELAY:-10} ;;
  *) echo "SIZE must be 2KiB, 8MiB, 512MiB or 32GiB" >&2; exit 2 ;;
esac
pick_fs() {
  df -B1 --output=avail,target /tmp "$here" / 2>/dev/null | tail -n +2 | sort -n | tail -1 \
    | awk '{print ($2 == "/" ? "" : $2) "/cuzk-fs"}'
}
FS=${FS:-$(cat /tmp/cuzk-fs-path 2>/dev/null || pick_fs)}
P=${P:-$FS/params}
CUZK=${CUZK:-$FS/bin/cuzk}
W=$FS/post-latency
HOST_BUDGET=${HOST_BUDGET:-64GiB}
# 0: do not wait for (b)'s PoRep once its WinningPoSt is back (the daemon is stopped), saving
# the PoRep's minutes of device time when only the WinningPoSt's latency is wanted.
POREP_WAIT=${POREP_WAIT:-1}
WORKERS=${WORKERS:-4}
MINER=f01000
SECTOR=1
# A field element (the last byte below 0x40), as chain randomness is.
RANDOMNESS=${RANDOMNESS:-$(printf '5a%.0s' $(seq 31))1f}
winning_type=StackedDrgWinning${SIZE}V1
sock=$W/cuzk.sock
status_addr=127.0.0.1:${STATUS_PORT:-9822}

# The client's two timing lines: "<Prove call s> <daemon total s>".
times() {
  awk '/^client: Prove call/ {c = $4} /^daemon: total/ {d = $3} END {print (c ? c : "?"), (d ? d : "?")}' "$1"
}

inputs() {
  export FIL_PROOFS_PARAMETER_CACHE=$P
  mkdir -p "$P" "$W"
  local fixed=$BACKEND
  [ "$BACKEND" = cpu ] || fixed=auto
  "$CUZK" fixtures keys --sector-size "$SIZE" --backend "$fixed" --dir "$P" > "$W/keys-porep.log" 2>&1 \
    || { cat "$W/keys-porep.log"; return 1; }
  local t0=$(date +%s%N)
  "$CUZK" fixtures keys --proof-type "$winning_type" --backend "$fixed" --dir "$P" \
    > "$W/keys-winning.log" 2>&1 || { cat "$W/keys-winning.log"; return 1; }
  echo "winning key: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> "$W/keys-winning.log"
  local c1=$FS/c1-$SECTOR.json
  [ "$SIZE" = 32GiB ] || c1=$W/c1-$SIZE.json
  if [ ! -s "$c1" ]; then
    "$CUZK" fixtures synth-sector --sector-size "$SIZE" --seed $SECTOR --sector-id $SECTOR \
      --prover-id $MINER --out "$c1" > "$W/c1.log" 2>&1 || { cat "$W/c1.log"; return 1; }
  fi
  C1=$c1
  "$CUZK" fixtures synth-post --proof-type "$winning_type" --randomness "$RANDOMNESS" \
    --prover-id $MINER --sectors $SECTOR --seed 1 --out "$W/winning" > "$W/synth-post.log" 2>&1 \
    || { cat "$W/synth-post.log"; return 1; }
  # The CLI's own proof of it: the reference without the daemon.
  "$CUZK" winning-post --proof-type "$winning_type" --vanilla "$W/winning/vanilla-0.bin" \
    --randomness "$RANDOMNESS" --prover-id $MINER --out "$W/proof-cli.bin" --backend "$BACKEND" \
    > "$W/cli.log" 2>&1
  echo "cli rc=$?" >> "$W/cli.log"
}

daemon_start() {
  cat > "$W/daemon.toml" <<TOML
[listen]
addresses = ["unix:$sock"]
status_address = "$status_addr"
[proving]
params_dir = "$P"
backend = "$BACKEND"
synthesis_workers = $WORKERS
partitions_in_flight = $(( WORKERS + 1 ))
engine_memory_budget = $(( ${HOST_BUDGET%GiB} << 30 ))
[srs]
host_budget = $(( 50 << 30 ))
[state]
dir = "$W/daemon-state"
TOML
  rm -rf "$W/daemon-state" "$sock"
  RUST_LOG=${RUST_LOG:-info} "$CUZK" daemon --config "$W/daemon.toml" > "$W/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 120); do [ -S "$sock" ] && return 0; sleep 0.5; done
  echo "the daemon did not start:"; tail -20 "$W/daemon.log"; return 1
}

winning() { # NAME: one WinningPoSt through the daemon, its client log in $W/NAME.log
  "$CUZK" client winning-post --daemon "unix:$sock" --proof-type "$winning_type" \
    --vanilla "$W/winning/vanilla-0.bin" --randomness "$RANDOMNESS" --prover-id $MINER \
    --request-id "winpost-$1" --out "$W/proof-$1.bin" > "$W/$1.log" 2>&1
  echo "rc=$?" >> "$W/$1.log"
}

run() {
  set -x
  inputs || return 1
  daemon_start || return 1
  c="$CUZK client"
  $c preload --daemon "unix:$sock" --circuit-id "winning-$tag" > "$W/preload.log" 2>&1
  $c preload --daemon "unix:$sock" --circuit-id "porep-$tag" >> "$W/preload.log" 2>&1
  $c status --daemon "unix:$sock" > "$W/status.log" 2>&1
  # (a) alone, key HOT.
  for i in 1 2 3; do winning "alone-$i"; done
  # (b) during a PoRep.
  $c prove --daemon "unix:$sock" --c1 "$C1" --prover-id $MINER --out "$W/proof-porep.bin" \
    > "$W/porep.log" 2>&1 &
  porep=$!
  sleep "$DELAY"
  $c status --daemon "unix:$sock" >> "$W/status.log" 2>&1
  winning during
  if [ "$POREP_WAIT" = 1 ]; then
    wait $porep; echo "rc=$?" >> "$W/porep.log"
  else
    kill $porep; wait $porep; echo "rc=$? (not waited for: POREP_WAIT=0)" >> "$W/porep.log"
  fi
  $c status --daemon "unix:$sock" >> "$W/status.log" 2>&1
  # A daemon still proving the PoRep (POREP_WAIT=0) is killed after 15 s.
  kill -TERM $DAEMON; ( sleep 15; kill -KILL $DAEMON 2>/dev/null ) & killer=$!
  wait $DAEMON; echo "daemon rc=$?" >> "$W/daemon.log"; kill $killer 2>/dev/null
  set +x
  summary | tee "$W/summary.txt"
  # The run's status: every case's rc is in the table.
  return 0
}

summary() {
  local gpu="cpu"
  [ "$BACKEND" = cpu ] || gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  echo "== WinningPoSt latency through cuzk daemon: $SIZE, backend $BACKEND ($gpu), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -hE "winning key:|wrote|present" "$W/keys-winning.log" | sed 's/^/   /'
  grep -hE "challenges|TEST DATA" "$W/synth-post.log" | sed 's/^/   /'
  grep -hE "total|verif|rc=" "$W/cli.log" | tail -4 | sed 's/^/   cli: /'
  grep -h "HOT" "$W/preload.log" | sed 's/^/   /'
  printf '%-34s %12s %15s %8s %s\n' case "request→proof" "daemon total" target rc
  for i in 1 2 3; do
    read -r call total < <(times "$W/alone-$i.log")
    printf '%-34s %10s s %13s s %8s %s\n' "(a) WinningPoSt alone, key HOT #$i" "$call" "$total" "<= 1.0" \
      "$(grep -o 'rc=[0-9]*' "$W/alone-$i.log")"
  done
  read -r call total < <(times "$W/during.log")
  printf '%-34s %10s s %13s s %8s %s\n' "(b) WinningPoSt ${DELAY}s into a PoRep" "$call" "$total" "<= 2.0" \
    "$(grep -o 'rc=[0-9]*' "$W/during.log")"
  read -r call total < <(times "$W/porep.log")
  printf '%-34s %10s s %13s s %8s %s\n' "(b) the $SIZE PoRep, total" "$call" "$total" "" \
    "$(grep -o 'rc=[0-9]*' "$W/porep.log")"
  grep -h "ended\|error" "$W"/alone-*.log "$W/during.log" "$W/porep.log" 2>/dev/null | head -5
}

collect() {
  [ -n "${OUT:-}" ] || return 0
  tar -C "$W" -czf "$OUT/post-latency.tgz" --exclude '*.bin' --exclude 'c1-*.json' \
    --exclude winning . 2>/dev/null
  cp "$W/summary.txt" "$OUT/post-latency-summary.txt" 2>/dev/null
}

case "${1:-}" in
  run) rm -rf "$W"; mkdir -p "$W"; run; rc=$?; collect; exit $rc ;;
  start)
    rm -rf "$W"; mkdir -p "$W"
    setsid nohup bash "$0" steps > "$FS/post-latency.log" 2>&1 < /dev/null &
    exec bash "$0" wait "${2:-540}" ;;
  steps) run; touch "$W/done" ;;
  wait)
    deadline=$(( $(date +%s) + ${2:-540} ))
    while [ ! -e "$W/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do
      sleep 10; echo "[$(date +%T)] $(ls "$W" | tr '\n' ' ' | cut -c1-150)"; collect
    done
    if [ -e "$W/done" ]; then cat "$W/summary.txt"; collect; else echo "still running"; fi ;;
  *) echo "usage: [SIZE=2KiB BACKEND=cpu] $0 run | start [SECONDS] | wait SECONDS" >&2; exit 2 ;;
esac
