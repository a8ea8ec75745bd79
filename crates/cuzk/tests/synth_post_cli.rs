//! `cuzk fixtures synth-post` into `cuzk window-post` / `cuzk winning-post`
//! at 2 KiB: synthetic vanilla proofs (no sealed sector) of a full
//! WindowPoSt partition given as a range of sectors, of a short last
//! partition, and of a WinningPoSt, each proved from the directory
//! synth-post wrote and accepted by the crates' verifier; then the proof
//! checked again here with `verify_window_post` on the comm_r list synth-post
//! wrote, and rejected with one byte changed.
//!
//! The test keys live in the cargo target's tmp directory, shared with the
//! other tests (deterministic from seed 0, generated when absent).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use common::{path, refused, succeeded, unhex32};
use cuzk_filecoin::{PostType, ProofType, SectorIdentity};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};

/// A field element (the last byte below 0x40).
const RANDOMNESS: &str = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b2a";

struct Fixture {
    params: PathBuf,
    work: PathBuf,
    winning: PostType,
    window: PostType,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        let (winning, window) = cache.post_keys(seal);
        Fixture {
            params: cache.dir,
            work: cache.work,
            winning,
            window,
        }
    })
}

/// `cuzk args…` with filecoin-proofs pointed at the fixture's cache.
fn run(args: &[&str]) -> Output {
    common::command(args)
        .env("FIL_PROOFS_PARAMETER_CACHE", &fixture().params)
        .output()
        .unwrap()
}

/// Synthetic vanilla proofs of `sectors` for `pt` into a fresh directory.
fn synth(name: &str, pt: PostType, sectors: &str) -> PathBuf {
    let dir = fixture().work.join(name);
    let stdout = succeeded(
        "fixtures",
        &run(&[
            "fixtures",
            "synth-post",
            "--proof-type",
            &pt.name(),
            "--randomness",
            RANDOMNESS,
            "--prover-id",
            "f01000",
            "--sectors",
            sectors,
            "--seed",
            "3",
            "--out",
            path(&dir),
        ]),
    );
    assert!(stdout.contains("TEST DATA"), "{stdout}");
    dir
}

/// Proves the vanilla proofs in `dir` with `command`; returns the proof.
fn prove(command: &str, pt: PostType, dir: &Path, extra: &[&str]) -> (String, Vec<u8>) {
    let out = dir.join("proof");
    let mut args = vec![
        command,
        "--proof-type",
        "",
        "--vanilla",
        path(dir),
        "--randomness",
        RANDOMNESS,
        "--prover-id",
        "f01000",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ];
    let name = pt.name();
    args[2] = &name;
    args.extend(extra);
    let stdout = succeeded(command, &run(&args));
    (stdout, std::fs::read(&out).unwrap())
}

/// The sectors and comm_rs synth-post listed in `dir`/comm_r.txt.
fn replicas(pt: PostType, dir: &Path) -> BTreeMap<SectorId, PublicReplicaInfo> {
    std::fs::read_to_string(dir.join("comm_r.txt"))
        .unwrap()
        .lines()
        .map(|line| {
            let (sector, hex) = line.split_once(' ').unwrap();
            (
                SectorId::from(sector.parse::<u64>().unwrap()),
                PublicReplicaInfo::new(pt.registered(), unhex32(hex)),
            )
        })
        .collect()
}

fn window_valid(pt: PostType, dir: &Path, proof: &[u8]) -> bool {
    filecoin_proofs_api::post::verify_window_post(
        &unhex32(RANDOMNESS),
        &[(pt.registered(), proof)],
        &replicas(pt, dir),
        SectorIdentity::from_actor(1000, 0).prover_id,
    )
    .unwrap_or(false)
}

#[test]
fn a_full_synthetic_window_partition_proves_and_one_byte_changed_is_rejected() {
    let f = fixture();
    assert_eq!(
        f.window.sector_count(),
        2,
        "a 2 KiB partition holds 2 sectors"
    );
    let dir = synth("window-full", f.window, "21-22");
    assert_eq!(replicas(f.window, &dir).len(), 2);
    let (stdout, proof) = prove("window-post", f.window, &dir, &["--rng-seed", "1"]);
    assert!(stdout.contains("verify_window_post"), "{stdout}");
    assert!(stdout.contains("2 sector(s) (21, 22)"), "{stdout}");
    assert!(window_valid(f.window, &dir, &proof));
    let mut bad = proof.clone();
    bad[100] ^= 1;
    assert!(!window_valid(f.window, &dir, &bad));

    // Pre-compiled (`cuzk precompile --proof-type`, then `--synthesis precompiled`): the
    // same bytes for the same --rng-seed.
    let recording = dir.join("window.r1cs");
    let name = f.window.name();
    succeeded(
        "precompile",
        &run(&[
            "precompile",
            "--proof-type",
            &name,
            "--out",
            path(&recording),
        ]),
    );
    let (stdout, pre) = prove(
        "window-post",
        f.window,
        &dir,
        &[
            "--rng-seed",
            "1",
            "--synthesis",
            "precompiled",
            "--r1cs-cache",
            path(&recording),
        ],
    );
    assert!(stdout.contains("precompiled: "), "{stdout}");
    assert_eq!(pre, proof, "the pre-compiled proof differs");
}

#[test]
fn a_short_last_synthetic_window_partition_proves() {
    let f = fixture();
    let dir = synth("window-short", f.window, "30");
    let (stdout, proof) = prove("window-post", f.window, &dir, &["--partition", "1"]);
    assert!(stdout.contains("partition 1"), "{stdout}");
    assert!(window_valid(f.window, &dir, &proof));
}

#[test]
fn a_synthetic_winning_post_proves_from_its_directory() {
    let f = fixture();
    let dir = synth("winning", f.winning, "17");
    let (stdout, proof) = prove("winning-post", f.winning, &dir, &[]);
    assert!(stdout.contains("verify_winning_post"), "{stdout}");
    assert_eq!(proof.len(), 192);
}

#[test]
fn sector_lists_it_cannot_take_are_refused() {
    let f = fixture();
    for (sectors, wants) in [
        ("9-7", "ends before it starts"),
        ("x", "not a sector number"),
        ("1-3", "3 sectors for StackedDrgWindow2KiBV1_2"),
    ] {
        let dir = f.work.join(format!("refused-{sectors}"));
        let output = run(&[
            "fixtures",
            "synth-post",
            "--proof-type",
            &f.window.name(),
            "--randomness",
            RANDOMNESS,
            "--sectors",
            sectors,
            "--out",
            path(&dir),
        ]);
        refused(sectors, &output, &dir.join("vanilla-0.bin"), &[wants]);
    }
}
