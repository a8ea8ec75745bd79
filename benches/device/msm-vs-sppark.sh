#!/usr/bin/env bash
# cuzk's GPU MSM and NTT beside sppark's (issue 17), in one run on the GPU machine (no cargo, no
# network). Over binaries built on the development machine:
#
#   bundle/bin/msm_bench, ntt_bench   cuzk's kernel benchmarks (`cargo xtask bundle --arch sm_90`;
#                                     they read their kernels from bundle/kernels)
#   .device-carry/sppark-bench        sppark 0.1.16's G1/G2 MSM and Fr NTT (benches/sppark-bench/build.sh)
#
# Run from the repository root, carrying bundle/ and .device-carry/:
#   bash benches/device/msm-vs-sppark.sh
# Steps, each with its log (and JSON) under $OUT (seven files in all: msm.log, cuzk-msm.json,
# ntt.log, ntt/ntt_bench.json, ntt/summary.txt, sppark.log, sppark.json) and its exit status printed:
#   msm     msm_bench --msm-only --g1-logs $G1_LOGS --g2-logs $G2_LOGS --repeats $REPEATS --seed $SEED
#   ntt     ntt_bench --min-log / --max-log spanning $NTT_LOGS (it also measures its ceilings, a
#           launch-shape sweep and the H polynomial; only the forward transforms are compared)
#   sppark  sppark-bench with the same sizes, repeats and seed (checks its results on the host
#           before it prints any timing)
# then, last, a table: what, n, cuzk ms, sppark ms, sppark/cuzk (above 1: cuzk is faster). A step
# that fails leaves "—" in its column; the table prints whatever the others measured.
#
# Both sides time data already in device memory, median of the repeats after a warm-up; what is
# inside each timed region differs slightly (benches/sppark-bench/README.md): cuzk's MSM is CUDA
# events around Msm::enqueue (result left on the device), sppark's is the host clock around
# msm_t::invoke (which ends with a copy of the window sums to the host and their sum there); both
# NTTs are CUDA events around one forward transform, natural order in and out.
#
# Env: CUZK_BIN_DIR (default bundle/bin), SPPARK_BENCH (default .device-carry/sppark-bench),
# G1_LOGS (24,26), G2_LOGS (24), NTT_LOGS (27), REPEATS (7), SEED (1), STEP_TIMEOUT (180 s a step),
# OUT (/tmp/msm-vs-sppark). Estimated (not yet run) at 2-3 minutes in all on the H200.
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${CUZK_BIN_DIR:-$here/bundle/bin}"
sppark="${SPPARK_BENCH:-$here/.device-carry/sppark-bench}"
out="${OUT:-/tmp/msm-vs-sppark}"; mkdir -p "$out"
G1_LOGS="${G1_LOGS:-24,26}" G2_LOGS="${G2_LOGS:-24}" NTT_LOGS="${NTT_LOGS:-27}"
REPEATS="${REPEATS:-7}" SEED="${SEED:-1}"
# Each step's limit (s): three of them stay inside the device tool's 10 minutes a command.
STEP_TIMEOUT="${STEP_TIMEOUT:-180}"

# A bundle may carry a tool xz-compressed: unpack it once.
for b in msm_bench ntt_bench; do
  if [ ! -x "$bin/$b" ] && [ -f "$bin/$b.xz" ]; then
    xz -dc "$bin/$b.xz" > "$bin/$b" && chmod +x "$bin/$b"
  fi
done

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
echo "cores: $(nproc)  date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "sizes: G1 2^{$G1_LOGS}, G2 2^{$G2_LOGS}, NTT 2^{$NTT_LOGS}; repeats $REPEATS; seed $SEED"

# No stale numbers: every JSON the table reads is made by this run.
rm -f "$out/cuzk-msm.json" "$out/sppark.json" "$out/ntt/ntt_bench.json" "$out/ntt/summary.txt"

rcs=()
step() { # step NAME COMMAND...: runs it with a time limit, log in $OUT/NAME.log, prints its tail and rc
  local name=$1; shift
  echo "== $name: $*"
  local t0=$(date +%s)
  timeout "$STEP_TIMEOUT" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  echo "== $name rc=$rc ($(( $(date +%s) - t0 )) s)"
  rcs+=("$name rc=$rc")
}

if [ -x "$bin/msm_bench" ]; then
  step msm "$bin/msm_bench" --msm-only --g1-logs "$G1_LOGS" --g2-logs "$G2_LOGS" \
    --repeats "$REPEATS" --seed "$SEED" --json "$out/cuzk-msm.json"
else
  echo "== msm: $bin/msm_bench missing"; rcs+=("msm missing")
fi

ntt_min=$(tr ',' '\n' <<< "$NTT_LOGS" | sort -n | head -1)
ntt_max=$(tr ',' '\n' <<< "$NTT_LOGS" | sort -n | tail -1)
if [ -x "$bin/ntt_bench" ]; then
  step ntt env CUZK_BENCH_OUT="$out/ntt" "$bin/ntt_bench" --min-log "$ntt_min" --max-log "$ntt_max"
else
  echo "== ntt: $bin/ntt_bench missing"; rcs+=("ntt missing")
fi

if [ -x "$sppark" ]; then
  step sppark "$sppark" --g1-logs "$G1_LOGS" --g2-logs "$G2_LOGS" --ntt-logs "$NTT_LOGS" \
    --repeats "$REPEATS" --seed "$SEED" --json "$out/sppark.json"
else
  echo "== sppark: $sppark missing"; rcs+=("sppark missing")
fi

echo
echo "steps: ${rcs[*]}"
# The table: from each side's JSON, else from the lines its log printed as it went.
python3 - "$out" "$G1_LOGS" "$G2_LOGS" "$NTT_LOGS" <<'EOF' || echo "(no table: python3 failed; the logs are in $out)"
import json, os, re, sys

out, g1, g2, ntt = sys.argv[1:5]
logs = lambda s: [int(x) for x in s.split(",") if x.strip()]

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def log_lines(name):
    try:
        with open(os.path.join(out, name)) as f:
            return f.read().splitlines()
    except OSError:
        return []

cuzk, spp = {}, {}
rows = load("cuzk-msm.json")
if rows is not None:
    for r in rows:
        if r["what"] in ("G1 MSM", "G2 MSM"):
            cuzk[(r["what"], r["n"].bit_length() - 1)] = r["median_ms"]
else:
    for line in log_lines("msm.log"):
        m = re.match(r"\s*(G[12]) MSM 2\^(\d+): c = \d+, ([\d.]+) ms", line)
        if m:
            cuzk[(m[1] + " MSM", int(m[2]))] = float(m[3])
doc = load("ntt/ntt_bench.json")
if doc is not None:
    for r in doc.get("rows", []):
        cuzk[("NTT forward", r["log_n"])] = r["forward_ms"]
else:
    for line in log_lines("ntt.log"):
        m = re.match(r"2\^(\d+)\s.*: forward ([\d.]+) ms", line)
        if m:
            cuzk[("NTT forward", int(m[1]))] = float(m[2])
doc = load("sppark.json")
if doc is not None:
    for r in doc.get("rows", []):
        spp[(r["what"], r["log_n"])] = r["median_ms"]
else:
    for line in log_lines("sppark.log"):
        m = re.search(r"sppark (G[12] MSM|NTT forward) 2\^(\d+): median ([\d.]+) ms", line)
        if m:
            spp[(m[1], int(m[2]))] = float(m[3])

wanted = [("G1 MSM", k) for k in logs(g1)] + [("G2 MSM", k) for k in logs(g2)] \
       + [("NTT forward", k) for k in logs(ntt)]
fmt = lambda v: "—" if v is None else f"{v:.2f}"
print("\n| what | n | cuzk ms | sppark ms | sppark/cuzk |")
print("| --- | --- | --- | --- | --- |")
for what, k in wanted:
    c, s = cuzk.get((what, k)), spp.get((what, k))
    ratio = f"{s / c:.2f}" if c and s else "—"
    print(f"| {what} | 2^{k} | {fmt(c)} | {fmt(s)} | {ratio} |")
print("\nmedians of the timed runs, data in device memory; cuzk: CUDA events (MSM: Msm::enqueue, result on the device);"
      "\nsppark 0.1.16: MSM host clock around msm_t::invoke (window sums finished on the host), NTT CUDA events;"
      "\nsppark's bases are 4096 random points repeated to n, cuzk's are p0 + i*step (all distinct).")
EOF
[ -n "${OUT:-}" ] || echo "logs and JSON in $out"
