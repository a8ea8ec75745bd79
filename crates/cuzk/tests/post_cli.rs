//! `cuzk winning-post` and `cuzk window-post` end to end on a 2 KiB sector
//! sealed here, with vanilla proofs made by filecoin-proofs-api and written
//! as the bincode files Curio sends: proofs the crates' verifiers accept,
//! the timing lines, and refusals that name the problem and write nothing.
//!
//! The test keys live in the cargo target's tmp directory, shared with
//! cuzk-filecoin's tests (deterministic from seed 0, generated when absent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use cuzk_filecoin::sample::{post_vanilla_proofs, seal_sample_sector};
use cuzk_filecoin::{ParamsDir, PostType, ProofType, SectorIdentity};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use rand_chacha::rand_core::{RngCore, SeedableRng};

const ACTOR: u64 = 1000;
const SECTOR: u64 = 4;
/// The WindowPoSt partition's sectors (the one replica stands for both).
const PARTITION: [u64; 2] = [4, 9];

struct Fixture {
    params: PathBuf,
    work: PathBuf,
    comm_r: [u8; 32],
    randomness: [u8; 32],
    winning: PostType,
    window: PostType,
    /// The winning sector's vanilla proof file.
    winning_vanilla: PathBuf,
    /// The partition's vanilla proof files, in sector order.
    window_vanilla: Vec<PathBuf>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let params = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filecoin-proof-parameters");
        let work = tempfile::tempdir().unwrap().keep();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.join("parents"));
        let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
        let winning = PostType::winning_for(seal);
        let window = PostType::window_for(seal);
        let dir = ParamsDir::new(&params);
        for pt in [winning, window] {
            if dir.check(pt).is_err() {
                dir.generate_test_keys(pt, 0).unwrap();
            }
        }
        let seed = 0xc11_9057_u64;
        eprintln!("sealing a 2 KiB sector, seed {seed:#x}");
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let identity = SectorIdentity::from_actor(ACTOR, SECTOR);
        let sector = seal_sample_sector(seal, &work.join("sector"), &identity, &mut rng).unwrap();
        let mut randomness = [0u8; 32];
        rng.fill_bytes(&mut randomness);
        randomness[31] &= 0x3f;
        let write = |name: &str, bytes: &[u8]| {
            let path = work.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let w = post_vanilla_proofs(
            winning,
            &randomness,
            identity.prover_id,
            &[(SECTOR, &sector)],
        )
        .unwrap();
        let winning_vanilla = write("winning.vanilla", &w[0]);
        let sectors: Vec<_> = PARTITION.iter().map(|&id| (id, &sector)).collect();
        let window_vanilla = post_vanilla_proofs(window, &randomness, identity.prover_id, &sectors)
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, bytes)| write(&format!("window-{i}.vanilla"), bytes))
            .collect();
        Fixture {
            params,
            work,
            comm_r: sector.c1.comm_r,
            randomness,
            winning,
            window,
            winning_vanilla,
            window_vanilla,
        }
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs `cuzk <command>` with the fixture's randomness, prover and keys
/// (unless `args` gives them) and `args`; returns the output and where the
/// proof was to be written.
fn cuzk(name: &str, command: &str, args: &[&str]) -> (Output, PathBuf) {
    let f = fixture();
    let out = f.work.join(name).join("proof");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    cmd.arg(command)
        .arg("--out")
        .arg(&out)
        .arg("--params-dir")
        .arg(&f.params)
        .args(["--backend", "cpu", "--prover-id", "f01000"]);
    if !args.contains(&"--randomness") {
        cmd.args(["--randomness", &hex(&f.randomness)]);
    }
    let output = cmd
        .args(args)
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .output()
        .unwrap();
    (output, out)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn succeeded(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for stage in [
        "parse",
        "check",
        "key",
        "synthesis",
        "proving",
        "verification",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(stage)),
            "no {stage} timing line:\n{stdout}"
        );
    }
    stdout
}

/// The command fails, names `wants` on stderr, and writes nothing.
fn check_refused(name: &str, command: &str, args: &[&str], wants: &str) {
    let (output, out) = cuzk(name, command, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{name}: succeeded");
    assert!(
        stderr.contains(wants),
        "{name}: stderr lacks {wants:?}:\n{stderr}"
    );
    assert!(!out.exists(), "{name}: wrote {}", out.display());
}

#[test]
fn winning_post_proves_and_filecoin_accepts_it() {
    let f = fixture();
    let (output, out) = cuzk(
        "winning",
        "winning-post",
        &[
            "--proof-type",
            &f.winning.name(),
            "--vanilla",
            path(&f.winning_vanilla),
            "--rng-seed",
            "5",
        ],
    );
    let stdout = succeeded(&output);
    assert!(stdout.contains("verify_winning_post"), "{stdout}");
    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192);
    let replicas: BTreeMap<_, _> = [(
        SectorId::from(SECTOR),
        PublicReplicaInfo::new(f.winning.registered(), f.comm_r),
    )]
    .into();
    let prover = SectorIdentity::from_actor(ACTOR, 0).prover_id;
    assert!(filecoin_proofs_api::post::verify_winning_post(
        &f.randomness,
        &proof,
        &replicas,
        prover
    )
    .unwrap());
}

#[test]
fn window_post_proves_a_partition_and_filecoin_accepts_it() {
    let f = fixture();
    let mut args = vec!["--proof-type".to_string(), f.window.name()];
    for v in &f.window_vanilla {
        args.extend(["--vanilla".to_string(), path(v).to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (output, out) = cuzk("window", "window-post", &args);
    let stdout = succeeded(&output);
    assert!(stdout.contains("verify_window_post"), "{stdout}");
    let proof = std::fs::read(&out).unwrap();
    let replicas: BTreeMap<_, _> = PARTITION
        .iter()
        .map(|&id| {
            (
                SectorId::from(id),
                PublicReplicaInfo::new(f.window.registered(), f.comm_r),
            )
        })
        .collect();
    let prover = SectorIdentity::from_actor(ACTOR, 0).prover_id;
    assert!(filecoin_proofs_api::post::verify_window_post(
        &f.randomness,
        &[(f.window.registered(), &proof)],
        &replicas,
        prover
    )
    .unwrap());
}

#[test]
fn bad_post_requests_are_refused_and_nothing_is_written() {
    let f = fixture();
    let winning = f.winning.name();
    let window = f.window.name();
    let w = path(&f.winning_vanilla);
    check_refused(
        "short-randomness",
        "winning-post",
        &[
            "--proof-type",
            &winning,
            "--vanilla",
            w,
            "--randomness",
            &hex(&f.randomness[..31]),
        ],
        "the randomness is 31 bytes; it must be 32",
    );
    check_refused(
        "not-hex",
        "winning-post",
        &[
            "--proof-type",
            &winning,
            "--vanilla",
            w,
            "--randomness",
            "xyz",
        ],
        "is not hex",
    );
    check_refused(
        "wrong-kind",
        "window-post",
        &["--proof-type", &winning, "--vanilla", w],
        "StackedDrgWinning2KiBV1 is a WinningPoSt proof type",
    );
    check_refused(
        "two-winning-sectors",
        "winning-post",
        &["--proof-type", &winning, "--vanilla", w, "--vanilla", w],
        "2 vanilla proofs for StackedDrgWinning2KiBV1: it proves exactly 1 sector",
    );
    check_refused(
        "winning-proof-in-window",
        "window-post",
        &["--proof-type", &window, "--vanilla", w],
        "with 66 inclusion proof(s)",
    );
    check_refused(
        "missing-file",
        "winning-post",
        &["--proof-type", &winning, "--vanilla", "/nonexistent/v"],
        "reading the vanilla proof /nonexistent/v",
    );
}
