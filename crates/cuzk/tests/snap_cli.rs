//! `cuzk snap-prove` end to end on a 2 KiB CC sector sealed and updated
//! here (filecoin-proofs-api's `empty_sector_update_encode_into` and
//! `generate_partition_proofs`, the vanilla proofs written as the bincode
//! files Curio sends): a proof `verify_empty_sector_update_proof` accepts,
//! the timing lines, and a refusal that names the problem and writes nothing.
//!
//! The test key lives in the cargo target's tmp directory, shared with
//! cuzk-filecoin's tests (deterministic from seed 0, generated when absent).

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{has_timing_lines, hex, refused, succeeded, PROVE_STAGES};
use cuzk_filecoin::sample::{seal_cc_sector, update_sample_sector};
use cuzk_filecoin::{ProofType, SectorIdentity, UpdateType};
use rand_chacha::rand_core::SeedableRng;

#[test]
fn snap_prove_proves_an_update_and_refuses_a_bad_one() {
    let seal = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
    let ut = UpdateType::for_seal(seal);
    let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
    cache.keys([ut]);
    let (params, work) = (&cache.dir, &cache.work);
    let seed = 0x05a4_dc11_u64;
    eprintln!("sealing and updating a 2 KiB CC sector, seed {seed:#x}");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let identity = SectorIdentity::from_actor(1000, 8);
    let sector = seal_cc_sector(seal, &work.join("sector"), &identity, &mut rng).unwrap();
    let update = update_sample_sector(&sector, &work.join("sector"), &mut rng).unwrap();
    let vanilla = work.join("partition-0.vanilla");
    std::fs::write(&vanilla, &update.vanilla_proofs[0]).unwrap();

    let run = |name: &str, comm_r_new: &[u8]| -> (Output, PathBuf) {
        let out = work.join(name).join("proof");
        let output = common::command(&["snap-prove"])
            .args([
                "--sector-size",
                "2KiB",
                "--backend",
                "cpu",
                "--rng-seed",
                "3",
            ])
            .arg("--vanilla")
            .arg(&vanilla)
            .args(["--comm-r-old", &hex(&update.comm_r_old)])
            .args(["--comm-r-new", &hex(comm_r_new)])
            .args(["--comm-d-new", &hex(&update.comm_d_new)])
            .arg("--out")
            .arg(&out)
            .arg("--params-dir")
            .arg(params)
            .output()
            .unwrap();
        (output, out)
    };

    let (output, out) = run("good", &update.comm_r_new);
    let stdout = succeeded("snap-prove", &output);
    has_timing_lines(&stdout, &PROVE_STAGES);
    assert!(
        stdout.contains("verify_empty_sector_update_proof"),
        "{stdout}"
    );
    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            ut.registered(),
            &proof,
            update.comm_r_old,
            update.comm_r_new,
            update.comm_d_new,
        )
        .unwrap()
    );

    // The old comm_r as the new one: the vanilla proof does not prove that update.
    let (output, out) = run("bad", &update.comm_r_old);
    refused(
        "bad",
        &output,
        &out,
        &["the vanilla proofs do not prove an update of comm_r_old to comm_r_new"],
    );
}
