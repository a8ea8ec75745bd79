#!/usr/bin/env bash
# Filecoin PoRep C2 on the GPU machine (issue #6): cuzk `porep-c2 --backend cuda` against
# filecoin-proofs' `seal_commit_phase2` with `cuda-supraseal` (benches/anchor-c2), on the same C1
# files and the same test keys, plus bellperson's own synthesis of one 32 GiB partition.
#
# Options (environment): SIZES (default "2KiB 8MiB 512MiB", those with a C1 file), RUNS (runs of
# each prover per size, default 1), SKIP_BP=1 (no 32 GiB synthesis), SEAL_ON_DEVICE (sizes to seal
# there when no C1 was carried; 512 MiB did not finish in 240 s on 2026-11-30: sealing is mostly
# one thread), SEAL_TIMEOUT (s, default 300), CUZK_LOG (cuzk's RUST_LOG, default warn). cuzk's
# GPU stage split and VRAM plan are on its "partition" line.
#
# Run from the repository root with a carried folder ($CARRY, default .fil-carry) holding
# xz-compressed stripped binaries (cuzk, cuzk-filecoin, anchor-c2, porep_synthesis), the C1 files
# c1-*.json (Curio's wrapper; sector number inside) and keys-2KiB.sha256 (the digest of the CPU
# generator's 2 KiB key, seed 0, made on the development machine). Steps:
#  1. bellperson's synthesis of a 32 GiB partition (`porep_synthesis --skip-cuzk`, one CPU
#     thread) starts in the background; it is waited for before anything timed on the GPU runs;
#  2. test keys (seed 0) for every C1's sector size on the GPU (`cuzk-filecoin keys --backend
#     cuda`); the 2 KiB key's digest is compared with the CPU generator's;
#  3. for each C1, smallest first: cuzk, then the anchor, one after the other, each verified with
#     verify_seal (cuzk: before writing; the anchor: inside seal_commit_phase2 and once more);
#     then the anchor's build of verify_seal also checks cuzk's proof (`anchor-c2 --verify`).
# Logs go to /tmp/o, packed into $OUT/logs.tgz; a table is printed last.
set -u
carry="${CARRY:-.fil-carry}"
out="${OUT:-/tmp/fil-out}"; mkdir -p "$out"
o=/tmp/o; rm -rf "$o"; mkdir -p "$o"
bin=/tmp/fil-bin; mkdir -p "$bin"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/fil-params}"
mkdir -p "$FIL_PROOFS_PARAMETER_CACHE"
actor=1000
rows=()
row() { rows+=("$(printf '%-44s %s' "$1" "$2")"); }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
timev=(); [ -x /usr/bin/time ] && timev=(/usr/bin/time -v)   # peak RSS where GNU time exists
sizes=(); for s in ${SIZES:-2KiB 8MiB 512MiB}; do [ -f "$carry/c1-$s.json" ] && sizes+=("$s"); done
runs="${RUNS:-1}"   # runs of each prover per size (the anchor's in one process: key cached after the first)

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
  echo "cores: $(nproc)  date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  free -g | head -2
} | tee "$o/machine.txt"

for f in cuzk cuzk-filecoin anchor-c2 porep_synthesis; do
  if command -v xz >/dev/null; then xz -dc "$carry/$f.xz" > "$bin/$f"
  else python3 -c 'import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$carry/$f.xz" > "$bin/$f"
  fi && chmod +x "$bin/$f" || { echo "missing $carry/$f.xz"; exit 1; }
done

# 1. bellperson's 32 GiB synthesis, in the background (one thread; ~17 GiB of host memory).
t_bp=$(date +%s%N)
bp_pid=
if [ -z "${SKIP_BP:-}" ]; then
  "${timev[@]}" "$bin/porep_synthesis" --sector-size 32GiB --skip-cuzk > "$o/bp-synthesis-32GiB.log" 2>&1 &
  bp_pid=$!
fi

# 1b. A C1 for each size in $SEAL_ON_DEVICE that was not carried (sealing 512 MiB on the shared
#     2-core development machine is too slow): `cuzk-filecoin seal` here, in the background too,
#     as on the development machine (actor f01000, Curio's wrapper, sector 2, data seed 2).
seal_pids=()
for size in ${SEAL_ON_DEVICE:-}; do
  [ -f "$carry/c1-$size.json" ] && continue
  mkdir -p /tmp/fil-c1
  ( t0=$(date +%s%N)
    TMPDIR=/tmp/fil-c1 timeout "${SEAL_TIMEOUT:-300}" "${timev[@]}" "$bin/cuzk-filecoin" seal \
      --proof-type "StackedDrg${size}V1_1" --curio --sector 2 --seed 2 --out "/tmp/fil-c1/c1-$size.json"
    echo "seal rc $? in $(ms_since "$t0") ms" ) > "$o/seal-$size.log" 2>&1 &
  seal_pids+=($!)
  sizes+=("$size")
done

# 2. Keys on the GPU, one per sector size of the C1 files.
for size in "${sizes[@]}"; do
  t0=$(date +%s%N)
  RUST_LOG=cuzk_gpu=info "$bin/cuzk-filecoin" keys --sector-size "$size" --backend cuda > "$o/keys-$size.log" 2>&1
  rc=$?
  row "keys $size (GPU fixed-base)" "$([ $rc = 0 ] && echo "ok $(ms_since "$t0") ms wall" || echo "FAILED rc $rc")"
  tail -2 "$o/keys-$size.log"
done
if [ -f "$carry/keys-2KiB.sha256" ]; then
  ( cd "$FIL_PROOFS_PARAMETER_CACHE" && sha256sum -c "$OLDPWD/$carry/keys-2KiB.sha256" ) > "$o/keys-2KiB-digest.txt" 2>&1
  row "keys 2KiB: GPU bytes = CPU bytes" "$(grep -q ': OK' "$o/keys-2KiB-digest.txt" && echo identical || echo DIFFER)"
fi
ls -l "$FIL_PROOFS_PARAMETER_CACHE" > "$o/params-ls.txt"

for pid in "${seal_pids[@]}"; do wait "$pid"; done
for size in ${SEAL_ON_DEVICE:-}; do
  [ -f "/tmp/fil-c1/c1-$size.json" ] && cp "/tmp/fil-c1/c1-$size.json" "$o/" \
    && cp "/tmp/fil-c1/c1-$size.json" "$carry/c1-$size.json"
  row "seal $size on the device (CPU)" "$(tail -1 "$o/seal-$size.log")"
done

# Nothing timed on the GPU while bellperson's synthesis runs.
if [ -n "$bp_pid" ]; then
  wait "$bp_pid"
  bp_rc=$?
  row "bellperson synthesis 32GiB (waited $(ms_since "$t_bp") ms)" \
    "$([ $bp_rc = 0 ] && grep 'bellperson synthesis' "$o/bp-synthesis-32GiB.log" | sed 's/^ *//' || echo "FAILED rc $bp_rc")"
fi

# 3. Each C1: cuzk, then supraseal-c2 through filecoin-proofs.
for size in "${sizes[@]}"; do
  c1="$carry/c1-$size.json"
  [ -f "$c1" ] || { row "$size" "no C1 file: skipped"; continue; }
  for r in $(seq "$runs"); do
    t0=$(date +%s%N)
    RUST_LOG="${CUZK_LOG:-warn}" "${timev[@]}" "$bin/cuzk" porep-c2 --backend cuda --c1 "$c1" \
      --out "$o/proof-cuzk-$size.bin" --prover-id "f0$actor" > "$o/cuzk-$size-run$r.log" 2>&1
    rc=$?
    row "cuzk porep-c2 $size, run $r" "$([ $rc = 0 ] && echo "ok $(ms_since "$t0") ms wall" || echo "FAILED rc $rc")"
  done
  t0=$(date +%s%N)
  "${timev[@]}" "$bin/anchor-c2" --c1 "$c1" --out "$o/proof-supraseal-$size.bin" \
    --prover-id "f0$actor" --runs "$runs" --verbose > "$o/anchor-$size.log" 2>&1
  rc=$?
  row "supraseal seal_commit_phase2 $size, $runs run(s)" "$([ $rc = 0 ] && echo "ok $(ms_since "$t0") ms wall" || echo "FAILED rc $rc")"
  "$bin/anchor-c2" --c1 "$c1" --prover-id "f0$actor" --verify "$o/proof-cuzk-$size.bin" \
    > "$o/cross-verify-$size.log" 2>&1
  row "cuzk's $size proof, anchor's verify_seal" "$(tail -1 "$o/cross-verify-$size.log")"
  for f in cuzk anchor; do
    echo "== $f $size"
    for log in "$o/$f-$size"*.log; do
      grep -E '^(backend|partition|parse|check|key|synthesis|proving|verification|wrote|anchor-c2|run [0-9]|error)|Maximum resident|Elapsed' "$log"
    done
  done
done

# bellperson's figure and the machine again, then the table.
[ -f "$o/bp-synthesis-32GiB.log" ] && grep -E 'circuit|bellperson|Maximum resident|Elapsed' "$o/bp-synthesis-32GiB.log"
tar -czf "$out/logs.tgz" -C "$o" .
echo
echo "== Filecoin C2 on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
printf '%s\n' "${rows[@]}"
