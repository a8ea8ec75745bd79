//! The `cuzk` binary end to end over the committed 2^10 demo key: proofs
//! verify, and every kind of bad input exits non-zero with a message that
//! names the problem.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{cuzk, path, refused};

fn fixture_key() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-k10-sha95.params")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Proves two partitions into `dir`, returning (proofs, inputs) paths.
fn prove_into(dir: &Path) -> (PathBuf, PathBuf) {
    let proofs = dir.join("p.bin");
    let key = fixture_key();
    let o = cuzk(&[
        "prove",
        "--log-size",
        "10",
        "--key",
        path(&key),
        "--partitions",
        "2",
        "--rng-seed",
        "5",
        "--backend",
        "cpu",
        "--out",
        path(&proofs),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    (proofs, dir.join("p.inputs.json"))
}

/// `cuzk prove` of the 2^`log_size` circuit with `key` and `extra`
/// arguments: it fails, names every one of `wants`, and writes nothing.
fn prove_refused(name: &str, log_size: &str, key: &Path, extra: &[&str], wants: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.bin");
    let mut args = vec![
        "prove",
        "--log-size",
        log_size,
        "--key",
        path(key),
        "--out",
        path(&out),
    ];
    args.extend(extra);
    refused(name, &cuzk(&args), &out, wants);
}

/// Runs `verify` and checks the exit status and that the output mentions `needle`.
fn check_verify(proofs: &Path, inputs: &Path, ok: bool, needle: &str) {
    let key = fixture_key();
    let o = cuzk(&[
        "verify",
        "--key",
        path(&key),
        "--proofs",
        path(proofs),
        "--inputs",
        path(inputs),
    ]);
    let out = text(&o);
    assert_eq!(o.status.success(), ok, "{out}");
    assert!(out.contains(needle), "expected {needle:?} in:\n{out}");
}

#[test]
fn proofs_verify_and_bad_inputs_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (proofs, inputs) = prove_into(dir.path());
    let good = std::fs::read(&proofs).unwrap();
    assert_eq!(good.len(), 384);
    check_verify(&proofs, &inputs, true, "proof 1: valid");

    // Wrong length.
    let bad = dir.path().join("short.bin");
    std::fs::write(&bad, &good[..383]).unwrap();
    check_verify(&bad, &inputs, false, "multiple of 192 bytes, got 383");

    // A point not on the curve: change the x coordinate of proof 0's A.
    let mut b = good.clone();
    b[20] ^= 0x01;
    std::fs::write(&bad, &b).unwrap();
    check_verify(&bad, &inputs, false, "proof 0, point A");

    // Proofs swapped: each is valid for the other's inputs only.
    let mut b = good[192..].to_vec();
    b.extend_from_slice(&good[..192]);
    std::fs::write(&bad, &b).unwrap();
    check_verify(&bad, &inputs, false, "INVALID");

    // Wrong public inputs.
    let json = std::fs::read_to_string(&inputs).unwrap();
    let wrong = dir.path().join("wrong.json");
    let mut v: Vec<Vec<String>> = serde_json::from_str(&json).unwrap();
    v[0][0] = format!("{:064x}", 12345);
    std::fs::write(&wrong, serde_json::to_string(&v).unwrap()).unwrap();
    check_verify(&proofs, &wrong, false, "proof 0: INVALID");

    // Wrong number of inputs.
    v[0].push(format!("{:064x}", 1));
    std::fs::write(&wrong, serde_json::to_string(&v).unwrap()).unwrap();
    check_verify(&proofs, &wrong, false, "input");
}

#[test]
fn a_point_outside_the_subgroup_is_rejected() {
    // Decompressing x = 4 gives a point on the curve (4^3 + 4 = 68 is a square
    // mod q) that lies outside the prime-order subgroup G1.
    let dir = tempfile::tempdir().unwrap();
    let (proofs, inputs) = prove_into(dir.path());
    let mut b = std::fs::read(&proofs).unwrap();
    let mut x = [0u8; 48];
    x[47] = 4;
    x[0] |= 0x80; // compressed flag
    b[..48].copy_from_slice(&x);
    let bad = dir.path().join("torsion.bin");
    std::fs::write(&bad, &b).unwrap();
    check_verify(&bad, &inputs, false, "subgroup");
}

#[test]
fn truncated_key_names_section_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let key = std::fs::read(fixture_key()).unwrap();
    let cut = dir.path().join("cut.params");
    std::fs::write(&cut, &key[..200_000]).unwrap();
    prove_refused("cut", "10", &cut, &[], &["section `l`", "byte 99276"]);
}

#[test]
fn key_for_another_circuit_is_refused_before_proving() {
    prove_refused(
        "2^11",
        "11",
        &fixture_key(),
        &[],
        &["key has 1023", "circuit needs 2047"],
    );
}

#[test]
fn help_and_info() {
    let o = cuzk(&["--help"]);
    assert!(o.status.success());
    insta::assert_snapshot!(String::from_utf8_lossy(&o.stdout));
    let key = fixture_key();
    let o = cuzk(&["info", "--key", path(&key)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("b_g2"));
}

#[test]
fn a_bad_vram_budget_is_refused_with_the_reason() {
    for (budget, needle) in [("16XB", "unknown unit `xb`"), ("0GiB", "more than 0 bytes")] {
        prove_refused(
            budget,
            "10",
            &fixture_key(),
            &["--vram-budget", budget],
            &[needle],
        );
    }
}
