//! The `cuzk` binary end to end over the committed 2^10 demo key: proofs
//! verify, and every kind of bad input exits non-zero with a message that
//! names the problem.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cuzk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .output()
        .expect("run cuzk")
}

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
        key.to_str().unwrap(),
        "--partitions",
        "2",
        "--rng-seed",
        "5",
        "--backend",
        "cpu",
        "--out",
        proofs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    (proofs, dir.join("p.inputs.json"))
}

/// Runs `verify` and checks the exit status and that the output mentions `needle`.
fn check_verify(proofs: &Path, inputs: &Path, ok: bool, needle: &str) {
    let key = fixture_key();
    let o = cuzk(&[
        "verify",
        "--key",
        key.to_str().unwrap(),
        "--proofs",
        proofs.to_str().unwrap(),
        "--inputs",
        inputs.to_str().unwrap(),
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
    let o = cuzk(&[
        "prove",
        "--log-size",
        "10",
        "--key",
        cut.to_str().unwrap(),
        "--out",
        dir.path().join("x.bin").to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(!o.status.success());
    assert!(
        out.contains("section `l`") && out.contains("byte 99276"),
        "{out}"
    );
    assert!(
        !dir.path().join("x.bin").exists(),
        "nothing may be written on failure"
    );
}

#[test]
fn key_for_another_circuit_is_refused_before_proving() {
    let dir = tempfile::tempdir().unwrap();
    let key = fixture_key();
    let o = cuzk(&[
        "prove",
        "--log-size",
        "11",
        "--key",
        key.to_str().unwrap(),
        "--out",
        dir.path().join("x.bin").to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(!o.status.success());
    assert!(
        out.contains("key has 1023") && out.contains("circuit needs 2047"),
        "{out}"
    );
}

#[test]
fn help_and_info() {
    let o = cuzk(&["--help"]);
    assert!(o.status.success());
    insta::assert_snapshot!(String::from_utf8_lossy(&o.stdout));
    let key = fixture_key();
    let o = cuzk(&["info", "--key", key.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("b_g2"));
}

#[test]
fn a_bad_vram_budget_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let key = fixture_key();
    let out_file = dir.path().join("x.bin");
    for (budget, needle) in [("16XB", "unknown unit `xb`"), ("0GiB", "more than 0 bytes")] {
        let o = cuzk(&[
            "prove",
            "--log-size",
            "10",
            "--key",
            key.to_str().unwrap(),
            "--vram-budget",
            budget,
            "--out",
            out_file.to_str().unwrap(),
        ]);
        let out = text(&o);
        assert!(!o.status.success(), "{budget}: {out}");
        assert!(out.contains(needle), "{budget}: {out}");
        assert!(!out_file.exists(), "nothing written on failure");
    }
}
