//! `cuzk winning-post` and `cuzk window-post` end to end on a 2 KiB sector
//! sealed here, with vanilla proofs made by filecoin-proofs-api and written
//! as the bincode files Curio sends: proofs the crates' verifiers accept,
//! the timing lines, and refusals that name the problem and write nothing.
//!
//! The test keys live in the cargo target's tmp directory, shared with
//! cuzk-filecoin's tests (deterministic from seed 0, generated when absent).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use common::{has_timing_lines, hex, path, refused};
use cuzk_filecoin::sample::{post_vanilla_proofs, seal_sample_sector};
use cuzk_filecoin::{PostType, ProofType, SectorIdentity};
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
        let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        let (winning, window) = cache.post_keys(seal);
        let (params, work) = (cache.dir, cache.work);
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

/// Runs `cuzk <command>` with the fixture's randomness, prover and keys
/// (unless `args` gives them) and `args`; returns the output and where the
/// proof was to be written.
fn cuzk(name: &str, command: &str, args: &[&str]) -> (Output, PathBuf) {
    let f = fixture();
    let out = f.work.join(name).join("proof");
    let mut cmd = common::command(&[command]);
    cmd.arg("--out")
        .arg(&out)
        .arg("--params-dir")
        .arg(&f.params)
        .args(["--backend", "cpu", "--prover-id", "f01000"]);
    if !args.contains(&"--randomness") {
        cmd.args(["--randomness", &hex(&f.randomness)]);
    }
    let output = cmd.args(args).output().unwrap();
    (output, out)
}

/// `sectors` as the verifiers take them (the one sealed replica stands for
/// each), for `pt`.
fn replicas(pt: PostType, sectors: &[u64]) -> BTreeMap<SectorId, PublicReplicaInfo> {
    let comm_r = fixture().comm_r;
    sectors
        .iter()
        .map(|&id| {
            (
                SectorId::from(id),
                PublicReplicaInfo::new(pt.registered(), comm_r),
            )
        })
        .collect()
}

/// The prover id of the miner the proofs are made for.
fn prover() -> [u8; 32] {
    SectorIdentity::from_actor(ACTOR, 0).prover_id
}

/// The stdout of a PoSt command that succeeded, with every timing line.
fn succeeded(output: &Output) -> String {
    let stdout = common::succeeded("the PoSt command", output);
    has_timing_lines(&stdout, &common::PROVE_STAGES);
    stdout
}

/// The command fails, names `wants` on stderr, and writes nothing.
fn check_refused(name: &str, command: &str, args: &[&str], wants: &str) {
    let (output, out) = cuzk(name, command, args);
    refused(name, &output, &out, &[wants]);
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
    assert!(filecoin_proofs_api::post::verify_winning_post(
        &f.randomness,
        &proof,
        &replicas(f.winning, &[SECTOR]),
        prover()
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
    assert!(filecoin_proofs_api::post::verify_window_post(
        &f.randomness,
        &[(f.window.registered(), &proof)],
        &replicas(f.window, &PARTITION),
        prover()
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
