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

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{path, refused, succeeded, unhex32};
use cuzk_filecoin::{ProofType, UpdateType};

fn params() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters")
}

/// `cuzk args…` with filecoin-proofs pointed at the shared cache.
fn run(args: &[&str]) -> Output {
    common::command(args)
        .env("FIL_PROOFS_PARAMETER_CACHE", params())
        .output()
        .unwrap()
}

/// The commitment `name` of `dir`/commitments.txt, as hex and as bytes.
fn commitment(dir: &Path, name: &str) -> (String, [u8; 32]) {
    let text = std::fs::read_to_string(dir.join("commitments.txt")).unwrap();
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_string();
    let bytes = unhex32(&hex);
    (hex, bytes)
}

#[test]
fn a_synthetic_update_proves_and_one_byte_changed_is_rejected() {
    let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
    let ut = UpdateType::for_seal(seal);
    cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR")).keys([ut]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("snap");
    let stdout = succeeded(
        "fixtures",
        &run(&[
            "fixtures",
            "synth-snap",
            "--sector-size",
            "2KiB",
            "--seed",
            "7",
            "--out",
            path(&dir),
        ]),
    );
    assert!(stdout.contains("TEST DATA"), "{stdout}");
    assert!(dir.join("vanilla-0.bin").exists());
    let (old_hex, old) = commitment(&dir, "comm_r_old");
    let (new_hex, new) = commitment(&dir, "comm_r_new");
    let (d_hex, d) = commitment(&dir, "comm_d_new");
    // `snap-prove` on the CPU of synth-snap's vanilla proofs, as an update
    // of `old` to `new`, with `extra` arguments, into `out`.
    let snap_prove = |old: &str, new: &str, extra: &[&str], out: &Path| {
        let mut args = vec![
            "snap-prove",
            "--sector-size",
            "2KiB",
            "--vanilla",
            path(&dir),
            "--comm-r-old",
            old,
            "--comm-r-new",
            new,
            "--comm-d-new",
            &d_hex,
            "--backend",
            "cpu",
            "--out",
            path(out),
        ];
        args.extend(extra);
        run(&args)
    };

    let out = work.path().join("proof");
    let stdout = succeeded(
        "snap-prove",
        &snap_prove(&old_hex, &new_hex, &["--rng-seed", "2"], &out),
    );
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
    let stdout = succeeded(
        "snap-prove",
        &snap_prove(
            &old_hex,
            &new_hex,
            &["--synthesis-workers", "2"],
            &engine_out,
        ),
    );
    assert!(stdout.contains("pipeline"), "{stdout}");
    assert!(valid(&std::fs::read(&engine_out).unwrap()));

    // Pre-compiled: the update circuit recorded by `cuzk precompile --kind update`, the
    // witness alone synthesized; the same bytes for the same --rng-seed. A recording that
    // is not there: said so, synthesized in full, the same bytes again.
    let recording = work.path().join("update.r1cs");
    let stdout = succeeded(
        "precompile",
        &run(&[
            "precompile",
            "--sector-size",
            "2KiB",
            "--kind",
            "update",
            "--out",
            path(&recording),
        ]),
    );
    assert!(stdout.contains("checked"), "{stdout}");
    for (cache, mode) in [
        (recording.clone(), "precompiled: "),
        (work.path().join("absent.r1cs"), "not usable"),
    ] {
        let pre_out = work.path().join("pre-proof");
        let stdout = succeeded(
            "snap-prove",
            &snap_prove(
                &old_hex,
                &new_hex,
                &[
                    "--rng-seed",
                    "2",
                    "--synthesis",
                    "precompiled",
                    "--r1cs-cache",
                    path(&cache),
                ],
                &pre_out,
            ),
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with("synthesis mode"))
            .unwrap_or_else(|| panic!("no synthesis mode line in {stdout}"));
        assert!(line.contains(mode), "{line}");
        assert_eq!(std::fs::read(&pre_out).unwrap(), proof, "{line}");
    }

    // Other commitments than the ones synth-snap wrote: refused before proving, nothing written.
    let refused_out = work.path().join("refused");
    let output = snap_prove(&new_hex, &old_hex, &[], &refused_out);
    refused(
        "other commitments",
        &output,
        &refused_out,
        &["do not prove an update"],
    );
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
