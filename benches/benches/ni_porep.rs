//! The CPU side of a non-interactive 32 GiB PoRep C2, apart from proving:
//!
//! * **witnesses**: one partition's witness, cuzk's native replay held
//!   compact (what the pre-compiled path generates) against the crates'
//!   gadgets run witness-only (the reference), times the sector's 126
//!   partitions. An NI partition is the interactive partition circuit
//!   (docs/ni-porep.md), so the partition is one of a synthetic interactive
//!   32 GiB C1 (a synthetic NI sector would be a sealing at this size). Both
//!   witnesses are checked equal before timing.
//! * **aggregation**: the SnarkPack v2 aggregate of 126 partition proofs
//!   (padded to 128), `cuzk_filecoin::aggregate` (its checks, then
//!   filecoin-proofs' call) against filecoin-proofs-api's
//!   `aggregate_seal_commit_proofs` on the same inputs, in the same process;
//!   the bytes are checked equal. The proofs are random points (aggregation
//!   decodes and aggregates them, it does not verify them), the SRS is a
//!   test SRS from a seed, and the verifying key, which filecoin-proofs
//!   loads but aggregation does not use, is random points under the
//!   official file name, all in a temporary parameter cache. Each side's
//!   first call specializes the SRS (filecoin-proofs caches it per size):
//!   the warm-up takes it, and its time is printed on its own.
//!
//! `--test` (CI's smoke): the 2 KiB NI sector instead (13 partitions,
//! padded to 16), one run each.
//!
//! `cargo bench -p cuzk-benches --bench ni_porep [-- witness|aggregate --repeats 3]`

use std::time::Instant;

use bellperson::groth16::{Proof, VerifyingKey};
use blstrs::Bls12;
use cuzk_benches::{median_time, ms, random_g1, random_g2, report, BenchArgs, Row};
use cuzk_filecoin::synthetic::SyntheticSector;
use cuzk_filecoin::{
    aggregate, partition_compact_witness, partition_witness, C1Input, CommitProofs, ParamsDir,
    ProofType, SectorIdentity, WitnessSource,
};
use cuzk_synth::precompiled::CompactWitness;
use filecoin_proofs_api::seal::{aggregate_seal_commit_proofs, SealCommitPhase2Output};
use filecoin_proofs_api::RegisteredAggregationProof;

fn main() {
    let args = BenchArgs::from_env();
    // filecoin-proofs reads its parameter cache's place once, on first use:
    // the temporary one is set before anything touches the crates.
    let cache = tempfile::tempdir().expect("a temporary directory");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", cache.path());
    let (size, ni) = if args.smoke {
        ("2KiB", "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")
    } else {
        ("32GiB", "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep")
    };
    let ni = ProofType::from_name(ni).expect("a non-interactive proof type");
    let partitions = ni.partitions();
    let mut rows = Vec::new();
    if args.wants("witness") {
        rows.push(witnesses(&args, size, ni));
    }
    if args.wants("aggregate") {
        rows.push(aggregation(&args, &ParamsDir::new(cache.path()), ni));
    }
    println!(
        "{} ({partitions} partitions); witness rows are one partition's time × {partitions}",
        ni.name()
    );
    report("ni_porep", &rows);
}

/// One partition's witness, compact native against gadgets, × the NI
/// sector's partitions.
fn witnesses(args: &BenchArgs, size: &str, ni: ProofType) -> Row {
    // Partition 0 of a synthetic sector whose partition circuit is the NI one:
    // at 2 KiB the NI sector itself; at 32 GiB the interactive sector (same
    // circuit, 18 challenges a partition; an NI sector is not made at this size).
    let proof_type = if args.smoke {
        ni
    } else {
        ProofType::from_name(&format!("StackedDrg{size}V1_1")).expect("an interactive type")
    };
    let started = Instant::now();
    let c1 = SyntheticSector {
        proof_type,
        identity: SectorIdentity::from_actor(1000, 1),
        seed: 1,
    }
    .generate()
    .expect("a synthetic C1");
    println!(
        "synthetic {} C1: {:.2} s",
        proof_type.name(),
        started.elapsed().as_secs_f64()
    );
    let c1 = C1Input {
        output: c1.output,
        proof_type,
        curio: None,
    };
    let compact = partition_compact_witness(&c1, 0).expect("the native witness");
    let gadgets = partition_witness(&c1, 0, WitnessSource::Gadgets).expect("the gadgets' witness");
    let aux = gadgets.aux_assignment.len();
    assert!(
        CompactWitness::from_witness(&gadgets) == compact,
        "the native witness differs from the gadgets'"
    );
    drop((compact, gadgets));
    let ours = median_time(args.repeats, !args.smoke, || {
        drop(partition_compact_witness(&c1, 0).expect("the native witness"))
    });
    let base = median_time(args.repeats, !args.smoke, || {
        drop(partition_witness(&c1, 0, WitnessSource::Gadgets).expect("the gadgets' witness"))
    });
    let n = ni.partitions() as u32;
    Row {
        case: format!("NI {size} witnesses ×{n}"),
        size_log2: aux.next_power_of_two().trailing_zeros(),
        ours_ms: ms(ours * n),
        baseline: "gadgets, witness only".into(),
        baseline_ms: ms(base * n),
    }
}

/// The aggregate of one NI sector's partition proofs, cuzk's call against
/// filecoin-proofs-api's.
fn aggregation(args: &BenchArgs, dir: &ParamsDir, ni: ProofType) -> Row {
    let n = ni.partitions();
    let padded = cuzk_filecoin::aggregate::padded_len(n);
    dir.generate_test_srs(0x5eed, padded)
        .expect("writes the test SRS");
    write_random_vk(dir, ni);
    let (a, b, c) = (random_g1(n, 1), random_g2(n, 2), random_g1(n, 3));
    let mut proofs = Vec::with_capacity(n * 192);
    for i in 0..n {
        Proof::<Bls12> {
            a: a[i],
            b: b[i],
            c: c[i],
        }
        .write(&mut proofs)
        .expect("writes to memory");
    }
    let comm_r = [7u8; 32];
    let seed = [9u8; 32];
    let sector = CommitProofs {
        proof_type: ni,
        comm_r,
        seed,
        // Only verification reads them.
        inputs: Vec::new(),
        proofs: proofs.clone(),
    };
    let ours_once = || aggregate(std::slice::from_ref(&sector)).expect("cuzk aggregates");
    let theirs_once = || {
        aggregate_seal_commit_proofs(
            ni.registered(),
            RegisteredAggregationProof::SnarkPackV2,
            &[comm_r],
            &[seed],
            &[SealCommitPhase2Output {
                proof: proofs.clone(),
            }],
        )
        .expect("filecoin-proofs aggregates")
    };
    let started = Instant::now();
    let first = ours_once();
    println!(
        "first aggregation (reads the SRS and specializes it for {padded} proofs): {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(first == theirs_once(), "the aggregates differ");
    println!("aggregate of {n} proofs: {} bytes", first.len());
    let ours = median_time(args.repeats, !args.smoke, || drop(ours_once()));
    let base = median_time(args.repeats, !args.smoke, || drop(theirs_once()));
    Row {
        case: format!("NI aggregate {n} → {padded}"),
        size_log2: padded.trailing_zeros(),
        ours_ms: ms(ours),
        baseline: "filecoin-proofs".into(),
        baseline_ms: ms(base),
    }
}

/// A verifying key of random points under `pt`'s official `.vk` name:
/// filecoin-proofs loads it before aggregating but does not use it there.
fn write_random_vk(dir: &ParamsDir, pt: ProofType) {
    let g1 = random_g1(8, 11);
    let g2 = random_g2(3, 12);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1[0],
        beta_g1: g1[1],
        beta_g2: g2[0],
        gamma_g2: g2[1],
        delta_g1: g1[2],
        delta_g2: g2[2],
        ic: g1[3..].to_vec(),
    };
    let mut bytes = Vec::new();
    vk.write(&mut bytes).expect("writes to memory");
    let path = dir.vk_path(pt).expect("a PoRep proof type has a key");
    std::fs::write(&path, bytes).expect("writes the verifying key");
}
