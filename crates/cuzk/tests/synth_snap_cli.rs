//! `cuzk fixtures synth-snap` into `cuzk snap-prove` at 2 KiB: synthetic
//! SnapDeals vanilla proofs (no sealed or updated sector) and the
//! commitments synth-snap wrote, proved from its directory on the CPU and
//! accepted by the crates' verifier; then the proof checked again here with
//! `verify_empty_sector_update_proof` on the commitments file, and rejected
//! with one byte changed; proved again through the engine
//! (`--synthesis-workers`); a sector size without an update type refused.
//!
//! The test key lives in the cargo target's tmp directory, shared with the
//! other tests (deterministic from seed 0, generated when absent).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuzk_filecoin::{ParamsDir, ProofType, UpdateType};

fn params() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .env("FIL_PROOFS_PARAMETER_CACHE", params())
        .output()
        .unwrap()
}

fn ok(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The commitment `name` of `dir`/commitments.txt, as hex and as bytes.
fn commitment(dir: &Path, name: &str) -> (String, [u8; 32]) {
    let text = std::fs::read_to_string(dir.join("commitments.txt")).unwrap();
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_string();
    let bytes: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    (hex, bytes.try_into().unwrap())
}

#[test]
fn a_synthetic_update_proves_and_one_byte_changed_is_rejected() {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params());
    let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
    let ut = UpdateType::for_seal(seal);
    let keys = ParamsDir::new(params());
    if keys.check(ut).is_err() {
        keys.generate_test_keys(ut, 0).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("snap");
    let stdout = ok(&run(&[
        "fixtures",
        "synth-snap",
        "--sector-size",
        "2KiB",
        "--seed",
        "7",
        "--out",
        path(&dir),
    ]));
    assert!(stdout.contains("TEST DATA"), "{stdout}");
    assert!(dir.join("vanilla-0.bin").exists());
    let (old_hex, old) = commitment(&dir, "comm_r_old");
    let (new_hex, new) = commitment(&dir, "comm_r_new");
    let (d_hex, d) = commitment(&dir, "comm_d_new");

    let out = work.path().join("proof");
    let stdout = ok(&run(&[
        "snap-prove",
        "--sector-size",
        "2KiB",
        "--vanilla",
        path(&dir),
        "--comm-r-old",
        &old_hex,
        "--comm-r-new",
        &new_hex,
        "--comm-d-new",
        &d_hex,
        "--backend",
        "cpu",
        "--rng-seed",
        "2",
        "--out",
        path(&out),
    ]));
    assert!(
        stdout.contains("verify_empty_sector_update_proof"),
        "{stdout}"
    );
    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192 * ut.partitions());
    let valid = |proof: &[u8]| {
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            ut.registered(),
            proof,
            old,
            new,
            d,
        )
        .unwrap_or(false)
    };
    assert!(valid(&proof));
    let mut bad = proof.clone();
    bad[100] ^= 1;
    assert!(!valid(&bad));

    // Through the engine (--synthesis-workers): the same verdict.
    let engine_out = work.path().join("engine-proof");
    let stdout = ok(&run(&[
        "snap-prove",
        "--sector-size",
        "2KiB",
        "--vanilla",
        path(&dir),
        "--comm-r-old",
        &old_hex,
        "--comm-r-new",
        &new_hex,
        "--comm-d-new",
        &d_hex,
        "--backend",
        "cpu",
        "--synthesis-workers",
        "2",
        "--out",
        path(&engine_out),
    ]));
    assert!(stdout.contains("pipeline"), "{stdout}");
    assert!(valid(&std::fs::read(&engine_out).unwrap()));

    // Pre-compiled: the update circuit recorded by `cuzk precompile --kind update`, the
    // witness alone synthesized; the same bytes for the same --rng-seed. A recording that
    // is not there: said so, synthesized in full, the same bytes again.
    let recording = work.path().join("update.r1cs");
    let stdout = ok(&run(&[
        "precompile",
        "--sector-size",
        "2KiB",
        "--kind",
        "update",
        "--out",
        path(&recording),
    ]));
    assert!(stdout.contains("checked"), "{stdout}");
    for (cache, mode) in [
        (recording.clone(), "precompiled: "),
        (work.path().join("absent.r1cs"), "not usable"),
    ] {
        let pre_out = work.path().join("pre-proof");
        let stdout = ok(&run(&[
            "snap-prove",
            "--sector-size",
            "2KiB",
            "--vanilla",
            path(&dir),
            "--comm-r-old",
            &old_hex,
            "--comm-r-new",
            &new_hex,
            "--comm-d-new",
            &d_hex,
            "--backend",
            "cpu",
            "--rng-seed",
            "2",
            "--synthesis",
            "precompiled",
            "--r1cs-cache",
            path(&cache),
            "--out",
            path(&pre_out),
        ]));
        let line = stdout
            .lines()
            .find(|l| l.starts_with("synthesis mode"))
            .unwrap_or_else(|| panic!("no synthesis mode line in {stdout}"));
        assert!(line.contains(mode), "{line}");
        assert_eq!(std::fs::read(&pre_out).unwrap(), proof, "{line}");
    }

    // Other commitments than the ones synth-snap wrote: refused before proving, nothing written.
    let refused_out = work.path().join("refused");
    let output = run(&[
        "snap-prove",
        "--sector-size",
        "2KiB",
        "--vanilla",
        path(&dir),
        "--comm-r-old",
        &new_hex,
        "--comm-r-new",
        &old_hex,
        "--comm-d-new",
        &d_hex,
        "--backend",
        "cpu",
        "--out",
        path(&refused_out),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("do not prove an update"), "{stderr}");
    assert!(!refused_out.exists());
}

#[test]
fn a_size_without_an_update_type_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let output = run(&[
        "fixtures",
        "synth-snap",
        "--sector-size",
        "4KiB",
        "--out",
        path(&work.path().join("x")),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("4KiB"), "{stderr}");
}
