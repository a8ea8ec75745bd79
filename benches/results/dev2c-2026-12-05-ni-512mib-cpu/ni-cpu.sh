#!/bin/bash
# Session 21 (#35): NI-PoRep sectors proved on the CPU here (release cuzk), 8 MiB then 512 MiB.
set -x
C=/work/ni-bin/cuzk
for SIZE in ${SIZES:-8MiB 512MiB}; do
  D=/work/ni-$SIZE; mkdir -p $D/params
  /usr/bin/time -v nice -n 5 $C fixtures keys --sector-size $SIZE --dir $D/params --backend cpu > $D/keys.log 2>&1
  [ -e $D/params/v28-fil-inner-product-v1.srs ] || $C fixtures keys --srs --srs-proofs 16 --dir $D/params > $D/srs.log 2>&1
  $C fixtures synth-sector --proof-type StackedDrg${SIZE}V1_2_Feat_NonInteractivePoRep --sector-id 12 --prover-id f01000 --out $D/syn.json > $D/synth.log 2>&1
  /usr/bin/time -v nice -n 5 $C porep-c2 --c1 $D/syn.json --out $D/syn.proof --partition-proofs $D/syn.parts \
    --backend cpu --prover-id f01000 --rng-seed 5 --synthesis-workers 2 --params-dir $D/params > $D/c2.log 2>&1
  echo "porep-c2 $SIZE rc=$?" >> $D/c2.log
done
touch /work/logs/ni-cpu.done
