//! `cuzk porep-c2` end to end on a 2 KiB sector sealed here: one proof
//! through Curio's wrapper, verified with filecoin-proofs' `verify_seal`, and
//! every refusal the issue lists, each naming what is wrong and writing
//! nothing.
//!
//! The test keys live in the cargo target's tmp directory, shared with
//! cuzk-filecoin's tests (deterministic from seed 0, generated when absent).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use base64::Engine as _;
use cuzk_filecoin::{parse_c1, verify, ParamsDir, ProofType, SectorIdentity, Verified};
use rand_chacha::rand_core::SeedableRng;

const ACTOR: u64 = 1000;
const SECTOR: u64 = 3;

struct Fixture {
    params: PathBuf,
    work: PathBuf,
    /// The plain C1 JSON.
    c1: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let params = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters");
        let work = tempfile::tempdir().unwrap().keep();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.join("parents"));
        let pt = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
        let dir = ParamsDir::new(&params);
        if dir.check(pt).is_err() {
            dir.generate_test_keys(pt, 0).unwrap();
        }
        let seed = 0xc11_u64;
        eprintln!("sealing a 2 KiB sector, seed {seed:#x}");
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR);
        let sealed = cuzk_filecoin::sample::seal_random_sector(
            pt,
            &work.join("sector"),
            &identity,
            &mut rng,
        )
        .unwrap();
        Fixture {
            params,
            work,
            c1: serde_json::to_vec(&sealed).unwrap(),
        }
    })
}

fn curio(c1: &[u8], sector: u64, size: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "SectorNum": sector,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1),
        "SectorSize": size,
    }))
    .unwrap()
}

/// Runs `cuzk porep-c2` on `c1` (written to a file) with `extra` arguments;
/// returns the output and where the proof was to be written.
fn porep_c2(name: &str, c1: &[u8], params: &Path, extra: &[&str]) -> (Output, PathBuf) {
    let f = fixture();
    let dir = f.work.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let c1_path = dir.join("c1.json");
    std::fs::write(&c1_path, c1).unwrap();
    let out = dir.join("proof");
    let output = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .arg("porep-c2")
        .arg("--c1")
        .arg(&c1_path)
        .arg("--out")
        .arg(&out)
        .arg("--params-dir")
        .arg(params)
        .args(["--backend", "cpu"])
        .args(extra)
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .output()
        .unwrap();
    (output, out)
}

/// The command fails, names `wants` on stderr, and writes nothing.
fn check_refused(name: &str, c1: &[u8], params: &Path, extra: &[&str], wants: &[&str]) {
    let (output, out) = porep_c2(name, c1, params, extra);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "{name}: succeeded; stderr:\n{stderr}"
    );
    for want in wants {
        assert!(
            stderr.contains(want),
            "{name}: stderr lacks {want:?}:\n{stderr}"
        );
    }
    assert!(!out.exists(), "{name}: wrote {}", out.display());
}

#[test]
fn proves_a_curio_c1_and_filecoin_accepts_it() {
    let f = fixture();
    let wrapped = curio(&f.c1, SECTOR, 2048);
    let (output, out) = porep_c2(
        "good",
        &wrapped,
        &f.params,
        &["--prover-id", "f01000", "--rng-seed", "7"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for stage in ["parse", "check", "synthesis", "proving", "verification"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(stage)),
            "no {stage} timing line:\n{stdout}"
        );
    }
    assert!(stdout.contains("verify_seal: 1 of 1 valid"), "{stdout}");
    assert!(stderr.contains("partition 1/1"), "{stderr}");
    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192);
    // Checked again here, independently of the CLI's own verification.
    let c1 = parse_c1(&wrapped).unwrap();
    let vk = ParamsDir::new(&f.params)
        .load_verifying_key(c1.proof_type)
        .unwrap();
    let id = SectorIdentity::from_actor(ACTOR, SECTOR);
    assert_eq!(
        verify(&c1, &proof, &vk, Some(&id)).unwrap(),
        Verified::VerifySeal
    );

    // Through the pipeline engine, same seed: the same proof.
    let (output, out) = porep_c2(
        "engine",
        &wrapped,
        &f.params,
        &[
            "--prover-id",
            "f01000",
            "--rng-seed",
            "7",
            "--synthesis-workers",
            "2",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for stage in ["synthesis", "proving", "pipeline", "verification"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(stage)),
            "no {stage} timing line:\n{stdout}"
        );
    }
    assert!(stderr.contains("partition 1/1"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), proof);
}

#[test]
fn bad_inputs_are_refused_by_name_and_nothing_is_written() {
    let f = fixture();
    let params = f.params.as_path();
    check_refused("not-json", b"\x00\x01 not json", params, &[], &["not JSON"]);
    check_refused(
        "wrong-size",
        &curio(&f.c1, SECTOR, 32 << 30),
        params,
        &[],
        &["wrong sector size", "StackedDrg2KiBV1_1"],
    );
    let mut v: serde_json::Value = serde_json::from_slice(&f.c1).unwrap();
    v["comm_r"][3] = (v["comm_r"][3].as_u64().unwrap() ^ 4).into();
    check_refused(
        "tampered-comm-r",
        &serde_json::to_vec(&v).unwrap(),
        params,
        &[],
        &["comm_r"],
    );
    let mut v: serde_json::Value = serde_json::from_slice(&f.c1).unwrap();
    v["seed"][0] = (v["seed"][0].as_u64().unwrap() ^ 1).into();
    check_refused(
        "tampered-seed",
        &serde_json::to_vec(&v).unwrap(),
        params,
        &[],
        &["changed seed"],
    );
    check_refused(
        "other-sector",
        &f.c1,
        params,
        &["--prover-id", "1000", "--sector-id", "4"],
        &["belongs to another sector"],
    );
    check_refused(
        "other-sector-curio",
        &curio(&f.c1, SECTOR + 1, 2048),
        params,
        &["--prover-id", "1000"],
        &["belongs to another sector"],
    );

    let pt = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
    let name = pt.params_file_name().unwrap();
    let empty = f.work.join("empty-params");
    std::fs::create_dir_all(&empty).unwrap();
    check_refused(
        "missing-key",
        &f.c1,
        &empty,
        &[],
        &[&name, "looked for it in", "cargo xtask fixtures keys"],
    );
    // A truncated key: the first 4 MiB of the real one, with the real .vk.
    let truncated = f.work.join("truncated-params");
    std::fs::create_dir_all(&truncated).unwrap();
    let mut prefix = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(f.params.join(&name)).unwrap(), 4 << 20),
        &mut prefix,
    )
    .unwrap();
    std::fs::write(truncated.join(&name), prefix).unwrap();
    let vk = pt.vk_file_name().unwrap();
    std::fs::copy(f.params.join(&vk), truncated.join(&vk)).unwrap();
    check_refused(
        "truncated-key",
        &f.c1,
        &truncated,
        &[],
        &[&name, "cargo xtask fixtures keys"],
    );
}
