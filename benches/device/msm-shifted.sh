#!/usr/bin/env bash
# MSMs over shifted bases (issue 17) on the GPU machine, over `cargo xtask bundle --arch sm_90`'s
# output (carry `bundle`): first the device tests that check them (cuzk-cuda's msm suite with
# the shifted-bases and per-call-window cases, its gpu suite (buffer suffixes), cuzk-gpu's gpu_prover for the
# proofs), then msm_bench:
#
#   a. G1 2^24 and 2^26, G2 2^24: the plain MSM and the automatic shifted shape
#      (`choose_shifted_shape` for the free arena: at these sizes, one bucket set);
#   b. G1 2^27 (the H query of a 32 GiB PoRep partition): the plain MSM, a window sweep of the
#      plain MSM (c = 19..23, radix sort), and the shifted shapes SHAPES27 that fit beside a
#      resident key (2 or 3 copies).
#
# Every shifted MSM is checked equal to the plain MSM on the same scalars before it is timed.
# Device time: ~6 minutes after the machine's start. Logs and JSON in $OUT; a table last.
#   bash benches/device/msm-shifted.sh
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
b="$here/bundle"
out="${OUT:-/tmp/msm-shifted}"
mkdir -p "$out"
SHAPES27="${SHAPES27:-20:7,22:6,24:6,22:4,24:4}"
OUT="$out" TESTS="${TESTS:-msm gpu gpu_prover}" TEST_TIMEOUT=400 bash "$b/run.sh" tests > "$out/tests.log" 2>&1
tests_rc=$?
sed -n '/==== summary ====/,$p' "$out/tests.log" | grep -v " ok$" > "$out/tests-summary.txt"
timeout 300 "$b/bin/msm_bench" --msm-only --g1-logs 24,26 --g2-logs 24 --shifted --repeats 7 \
  --json "$out/msm-a.json" > "$out/msm-a.log" 2>&1
a_rc=$?
timeout 400 "$b/bin/msm_bench" --msm-only --g1-logs 27 --max-log-g2 0 --g1-sweep 27:19-23 \
  --shifted --shifted-shapes "$SHAPES27" --repeats 5 --json "$out/msm-b.json" > "$out/msm-b.log" 2>&1
b_rc=$?
echo "== tests (rc $tests_rc; failures and per-binary lines):"
cat "$out/tests-summary.txt"
echo "== msm_bench a (rc $a_rc), b (rc $b_rc):"
grep -hE "MSM|sweep|steps|skipped|differs|rror" "$out/msm-a.log" "$out/msm-b.log" | cut -c1-220
