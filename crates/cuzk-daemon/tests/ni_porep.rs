//! Non-interactive PoRep and aggregation jobs through the daemon (issue
//! 35), on 2 KiB sectors sealed here, on the CPU backend, driven by this
//! crate's own gRPC client (`cuzk_daemon::client`): cuzk's own RPCs
//! (`SubmitProofFile`, `SubmitAggregate`, proto/cuzk/v1/cuzk_local.proto)
//! have no Curio client to stand in for.
//!
//! * every refusal of the bad-input list, before any synthesis and
//!   with nothing journaled;
//! * one NI job (13 partitions) sent as a file, the daemon killed while it
//!   runs (after `GET /status` showed its 13 partitions), restarted, and the
//!   job resumed from the journal with its 13 partitions;
//! * one aggregation job over an interactive sector's proof (one CPU
//!   partition), twice: `cuzk aggregate`'s bytes, verified;
//! * ignored in CI: one whole NI job (13 CPU partitions of 2 KiB, ~2 min
//!   each on the 2-core dev box under load), its aggregate verified by
//!   `verify_seal`.
//!
//! Cost on a 2-core machine, beside the 2 KiB test keys (made once per
//! target directory, shared with the other tests): one interactive CPU
//! partition, two 2 KiB seals, key loads, a few seconds of refusals.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{serial, Daemon};
use cuzk_daemon::client::{Client, ClientError};
use cuzk_daemon::proto::{
    await_proof_response::Status, AggregateSector, ProofKind, SubmitAggregateRequest,
    SubmitProofRequest,
};
use cuzk_filecoin::{parse_c1, verify, CommitProofs, ProofType, SectorIdentity, Verified};
use rand_chacha::rand_core::SeedableRng;
use serde_json::Value;

const MINER: u64 = 1000;
const NI_SECTOR: u64 = 31;
const SECTOR: u64 = 32;
/// `RegisteredSealProof` numbers (filecoin-ffi's order).
const V1_1_2KIB: u64 = 5;
const NI_2KIB: u64 = 15;

struct Fixture {
    /// The shared parameter cache (2 KiB keys, the test SRS).
    cache: cuzk_testkit::FilecoinCache,
    /// Curio's wrapper of the NI sector's C1, and of the interactive one's.
    ni: Vec<u8>,
    interactive: Vec<u8>,
}

fn wrapper(c1: &impl serde::Serialize, sector: u64) -> Vec<u8> {
    cuzk_testkit::curio_wrapper(&serde_json::to_vec(c1).unwrap(), sector, 2048)
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let cache = cuzk_testkit::filecoin_cache(env!("CARGO_TARGET_TMPDIR"));
        // The test SRS as cuzk-filecoin's tests make it in the same shared cache.
        cache.keys([ProofType::from_name("StackedDrg2KiBV1_1").unwrap()]);
        cache.srs();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x35);
        let mut seal = |proof: u64, sector: u64| {
            let pt = ProofType::new(ProofType::ALL[proof as usize]).unwrap();
            let c1 = cuzk_filecoin::sample::seal_random_sector(
                pt,
                &cache.work.join(format!("sector-{sector}")),
                &SectorIdentity::from_actor(MINER, sector),
                &mut rng,
            )
            .unwrap();
            wrapper(&c1, sector)
        };
        let ni = seal(NI_2KIB, NI_SECTOR);
        let interactive = seal(V1_1_2KIB, SECTOR);
        Fixture {
            cache,
            ni,
            interactive,
        }
    })
}

/// One daemon at a time: each holds the 2 KiB key, and the machine has 2 cores.
/// A parameter cache of its own: links to the shared 2 KiB key files, and
/// the SRS as each test needs it (absent, truncated, a copy).
fn private_params(name: &str) -> PathBuf {
    let f = fixture();
    let dir = f.cache.work.join(name).join("params");
    let pt = ProofType::from_name("StackedDrg2KiBV1_1").unwrap();
    f.cache.link_keys(pt, &dir);
    dir
}

/// This crate's own gRPC client on a test daemon.
trait OwnClient {
    fn client(&self) -> (tokio::runtime::Runtime, Client);
}

impl OwnClient for Daemon {
    fn client(&self) -> (tokio::runtime::Runtime, Client) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let c = rt.block_on(Client::connect(&self.address())).unwrap();
        (rt, c)
    }
}

fn porep(request_id: &str, registered_proof: u64, sector: u64, c1: &[u8]) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof,
        vanilla_proof: c1.to_vec(),
        sector_number: sector,
        miner_id: MINER,
        ..Default::default()
    }
}

/// The C1 inside Curio's wrapper, edited by `f`, wrapped again.
fn edited(wrapped: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let w: Value = serde_json::from_slice(wrapped).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut c1: Value =
        serde_json::from_slice(&b64.decode(w["Phase1Out"].as_str().unwrap()).unwrap()).unwrap();
    f(&mut c1);
    wrapper(&c1, w["SectorNum"].as_u64().unwrap())
}

/// The call was refused with `code` and a message holding every one of `words`.
fn refused<T: std::fmt::Debug>(r: Result<T, ClientError>, code: tonic::Code, words: &[&str]) {
    match r {
        Err(ClientError::Call { status, .. }) => {
            assert_eq!(status.code(), code, "{}", status.message());
            for w in words {
                assert!(
                    status.message().contains(w),
                    "{:?} lacks {w:?}",
                    status.message()
                );
            }
        }
        other => panic!("expected {code:?} with {words:?}, got {other:?}"),
    }
}

fn sector(c1: &[u8], proofs: Vec<u8>) -> AggregateSector {
    AggregateSector {
        c1: c1.to_vec(),
        c1_path: String::new(),
        partition_proofs: proofs,
    }
}

#[test]
fn bad_ni_and_aggregate_inputs_are_refused_before_any_work_and_nothing_is_journaled() {
    let _one = serial();
    let f = fixture();
    let params = private_params("refusals");
    let files = f.cache.work.join("refusals/files");
    std::fs::create_dir_all(&files).unwrap();
    let d = Daemon::start(
        f.cache.work.join("refusals"),
        &params,
        &format!("[limits]\nvanilla_file_dirs = [\"{}\"]\n", files.display()),
    );
    let (rt, mut c) = d.client();
    let ni = |rid: &str, c1: &[u8]| porep(rid, NI_2KIB, NI_SECTOR, c1);
    let srs = params.join("v28-fil-inner-product-v1.srs");

    // No SRS, then a truncated one: named, with the command that fetches it.
    let fetch = "cuzk fixtures fetch --srs";
    refused(
        rt.block_on(c.submit(ni("porep-1000-31", &f.ni))),
        tonic::Code::FailedPrecondition,
        &["v28-fil-inner-product-v1.srs", "not found", fetch],
    );
    let whole = std::fs::read(f.cache.dir.join("v28-fil-inner-product-v1.srs")).unwrap();
    std::fs::write(&srs, &whole[..whole.len() - 100]).unwrap();
    refused(
        rt.block_on(c.submit(ni("porep-1000-31", &f.ni))),
        tonic::Code::FailedPrecondition,
        &["v28-fil-inner-product-v1.srs", "truncated", fetch],
    );
    let agg = |rid: &str, proof: u64, sectors: Vec<AggregateSector>| SubmitAggregateRequest {
        request_id: rid.into(),
        registered_proof: proof,
        priority: 0,
        sectors,
    };
    let ni_proofs = vec![0u8; 13 * 192];
    refused(
        rt.block_on(c.submit_aggregate(agg(
            "agg-1",
            NI_2KIB,
            vec![sector(&f.ni, ni_proofs.clone())],
        ))),
        tonic::Code::FailedPrecondition,
        &["v28-fil-inner-product-v1.srs", "truncated", fetch],
    );
    std::fs::write(&srs, &whole).unwrap();

    // The C1 itself: a partition or a challenge short.
    let short = edited(&f.ni, |v| {
        v["vanilla_proofs"]["StackedDrg2KiBV1"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    refused(
        rt.block_on(c.submit(ni("porep-1000-31", &short))),
        tonic::Code::InvalidArgument,
        &["12 partitions of vanilla proofs", "has 13"],
    );
    let challenge = edited(&f.ni, |v| {
        v["vanilla_proofs"]["StackedDrg2KiBV1"][0]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    refused(
        rt.block_on(c.submit(ni("porep-1000-31", &challenge))),
        tonic::Code::InvalidArgument,
        &[
            "partition 0 has 1 vanilla proofs (challenges)",
            "has 2 per partition",
        ],
    );
    // Declared the other interaction, on the wire or inside the C1.
    refused(
        rt.block_on(c.submit(porep("porep-1000-32", NI_2KIB, SECTOR, &f.interactive))),
        tonic::Code::InvalidArgument,
        &["an interactive C1 declared non-interactive"],
    );
    refused(
        rt.block_on(c.submit(porep("porep-1000-31", V1_1_2KIB, NI_SECTOR, &f.ni))),
        tonic::Code::InvalidArgument,
        &["a non-interactive C1 declared interactive"],
    );
    let relabelled = edited(&f.ni, |v| {
        v["registered_proof"] = "StackedDrg2KiBV1_1".into()
    });
    refused(
        rt.block_on(c.submit(porep("porep-1000-31", V1_1_2KIB, NI_SECTOR, &relabelled))),
        tonic::Code::InvalidArgument,
        &["a non-interactive C1 declared interactive"],
    );

    // Aggregates: counts, mixed types, proofs of the wrong length.
    refused(
        rt.block_on(c.submit_aggregate(agg("agg-0", NI_2KIB, Vec::new()))),
        tonic::Code::InvalidArgument,
        &["no sectors"],
    );
    refused(
        rt.block_on(c.submit_aggregate(agg(
            "agg-66",
            NI_2KIB,
            vec![sector(&f.ni, ni_proofs.clone()); 66],
        ))),
        tonic::Code::InvalidArgument,
        &["66 sectors", "1 to 65"],
    );
    refused(
        rt.block_on(c.submit_aggregate(agg(
            "agg-mixed",
            V1_1_2KIB,
            vec![
                sector(&f.interactive, vec![0u8; 192]),
                sector(&f.ni, ni_proofs.clone()),
            ],
        ))),
        tonic::Code::InvalidArgument,
        &[
            "sector 1",
            "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
            "one proof type",
        ],
    );
    refused(
        rt.block_on(c.submit_aggregate(agg(
            "agg-short",
            NI_2KIB,
            vec![sector(&f.ni, vec![0u8; 12 * 192])],
        ))),
        tonic::Code::InvalidArgument,
        &[
            "sector 0",
            "2304 bytes of partition proofs",
            "13 partitions",
        ],
    );
    // An NI C2 output (an aggregate) is not partition proofs.
    refused(
        rt.block_on(c.submit_aggregate(agg(
            "agg-c2",
            NI_2KIB,
            vec![sector(&f.ni, vec![0u8; 8000])],
        ))),
        tonic::Code::InvalidArgument,
        &["already an aggregate"],
    );

    // Files: only under limits.vanilla_file_dirs, absolute, present.
    let outside = f.cache.work.join("refusals/c1-outside.json");
    std::fs::write(&outside, &f.ni).unwrap();
    refused(
        rt.block_on(c.submit_file(ni("porep-1000-31", &[]), outside.to_str().unwrap())),
        tonic::Code::InvalidArgument,
        &["not under limits.vanilla_file_dirs"],
    );
    let inside = files.join("c1.json");
    std::fs::write(&inside, &f.ni).unwrap();
    refused(
        rt.block_on(c.submit_file(ni("porep-1000-31", &[]), "refusals/files/c1.json")),
        tonic::Code::InvalidArgument,
        &["not an absolute path"],
    );
    refused(
        rt.block_on(c.submit_file(ni("porep-1000-31", &f.ni), inside.to_str().unwrap())),
        tonic::Code::InvalidArgument,
        &["vanilla_proof is set"],
    );
    // Through a link out of the folder.
    let link = files.join("link.json");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    refused(
        rt.block_on(c.submit_file(ni("porep-1000-31", &[]), link.to_str().unwrap())),
        tonic::Code::InvalidArgument,
        &["not under limits.vanilla_file_dirs"],
    );
    // A bad C1 from a file is refused as the same bytes inline are.
    let short_file = files.join("short.json");
    std::fs::write(&short_file, &short).unwrap();
    refused(
        rt.block_on(c.submit_file(ni("porep-1000-31", &[]), short_file.to_str().unwrap())),
        tonic::Code::InvalidArgument,
        &["12 partitions of vanilla proofs"],
    );

    // Nothing was accepted, journaled, or synthesized.
    assert_eq!(d.journaled(), (0, 0));
    let metrics = d.http("/metrics");
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("cuzk_jobs_accepted_total{"))
    {
        assert!(line.ends_with(" 0"), "{line}");
    }
    assert!(
        !d.log_text().contains("job in the engine"),
        "{}",
        d.log_text()
    );
}

/// A daemon without `limits.vanilla_file_dirs` reads no file.
#[test]
fn without_vanilla_file_dirs_no_file_is_read() {
    let _one = serial();
    let f = fixture();
    let params = private_params("no-files");
    let d = Daemon::start(fixture().cache.work.join("no-files"), &params, "");
    let (rt, mut c) = d.client();
    let path = f.cache.work.join("no-files/c1.json");
    std::fs::write(&path, &f.ni).unwrap();
    refused(
        rt.block_on(c.submit_file(
            porep("porep-1000-31", NI_2KIB, NI_SECTOR, &[]),
            path.to_str().unwrap(),
        )),
        tonic::Code::FailedPrecondition,
        &["limits.vanilla_file_dirs is empty"],
    );
    assert_eq!(d.journaled(), (0, 0));
}

/// Waits until `GET /status` lists `job` in the engine with 13 partitions.
fn running_with_13_partitions(d: &Daemon, job: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let status: Value = serde_json::from_str(&d.http("/status")).unwrap();
        let jobs = status["jobs"].as_array().unwrap().clone();
        if let Some(j) = jobs.iter().find(|j| j["job_id"] == job) {
            if j["partitions"] == 13 {
                assert_eq!(
                    j["circuit"], "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
                    "{j}"
                );
                assert_eq!(j["proof_kind"], "POREP_SEAL_COMMIT", "{j}");
                return j.clone();
            }
        }
        assert!(Instant::now() < deadline, "{status}\n{}", d.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ni_job_daemon(name: &str) -> (Daemon, PathBuf) {
    let f = fixture();
    let params = private_params(name);
    std::fs::copy(
        f.cache.dir.join("v28-fil-inner-product-v1.srs"),
        params.join("v28-fil-inner-product-v1.srs"),
    )
    .unwrap();
    let files = f.cache.work.join(name).join("files");
    std::fs::create_dir_all(&files).unwrap();
    let extra = format!(
        "[proving]\nsynthesis_workers = 1\npartitions_in_flight = 2\n[limits]\nvanilla_file_dirs = [\"{}\"]\n",
        files.display()
    );
    (
        Daemon::start(fixture().cache.work.join(name), &params, &extra),
        files,
    )
}

/// The NI job sent as a file: `GET /status` lists its 13 partitions;
/// killed while it runs and restarted, the daemon resumes it from the
/// journal (the file is gone by then: its content was journaled) and runs
/// its 13 partitions again. Not proved to the end here: 13 CPU partitions
/// cost minutes (the ignored test below does, and the interactive
/// aggregation test proves through the same path).
#[test]
fn an_ni_job_from_a_file_is_journaled_and_resumed_with_its_13_partitions() {
    let _one = serial();
    let f = fixture();
    let (mut d, files) = ni_job_daemon("ni-resume");
    let c1_file = files.join("c1-31.json");
    std::fs::write(&c1_file, &f.ni).unwrap();
    let (rt, mut c) = d.client();
    let job = rt
        .block_on(c.submit_file(
            porep("porep-1000-31", NI_2KIB, NI_SECTOR, &[]),
            c1_file.to_str().unwrap(),
        ))
        .unwrap()
        .job_id;
    // The file may go once the job is accepted: its content is journaled.
    std::fs::remove_file(&c1_file).unwrap();
    running_with_13_partitions(&d, &job);
    drop(c);
    drop(rt);
    d.kill();
    assert_eq!(d.journaled(), (1, 1));
    d.spawn();
    assert!(d.log_text().contains("restored from the journal"));
    running_with_13_partitions(&d, &job);
    let metrics = d.http("/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l == "cuzk_jobs_running{kind=\"porep_seal_commit\"} 1.0"),
        "{metrics}"
    );
    // The same C1 inline is the same request: the same job.
    let (rt, mut c) = d.client();
    let again = rt
        .block_on(c.submit(porep("porep-1000-31", NI_2KIB, NI_SECTOR, &f.ni)))
        .unwrap();
    assert_eq!(again.job_id, job);
}

/// A whole NI job through Curio's `SubmitProof`: 13 partitions proved, the
/// aggregate made and checked by the daemon, returned, and accepted by
/// `verify_seal` here; the metrics count its 13 partitions. Ignored in CI
/// (13 CPU partitions of 2 KiB: ~26 min on the 2-core dev box under load);
/// run it with `--ignored`.
#[test]
#[ignore]
fn an_ni_job_is_proved_aggregated_and_verified() {
    let _one = serial();
    let f = fixture();
    let (d, _) = ni_job_daemon("ni-whole");
    let (rt, mut c) = d.client();
    let t = Instant::now();
    let r = rt
        .block_on(c.prove(porep("porep-1000-31", NI_2KIB, NI_SECTOR, &f.ni), None))
        .unwrap();
    eprintln!("NI job: {:.1?}", t.elapsed());
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(d.log_text().contains("partition proofs aggregated"));
    let c1 = parse_c1(&f.ni).unwrap();
    let vk = f.cache.params.load_verifying_key(c1.proof_type).unwrap();
    assert_eq!(
        verify(
            &c1,
            &r.proof,
            &vk,
            Some(&SectorIdentity::from_actor(MINER, NI_SECTOR))
        )
        .unwrap(),
        Verified::VerifySeal
    );
    let metrics = d.http("/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l == "cuzk_partitions_proved_total{kind=\"porep_seal_commit\"} 13"),
        "{metrics}"
    );
}

/// An aggregation job over an interactive sector's proof (proved here: one
/// CPU partition), the sector twice: the aggregate is what `cuzk aggregate`
/// makes of the same inputs, byte for byte, and verifies; a flipped byte
/// does not.
#[test]
fn an_aggregation_job_is_cuzk_aggregates_bytes_and_verifies() {
    let _one = serial();
    let f = fixture();
    let (d, _) = ni_job_daemon("aggregate");
    let (rt, mut c) = d.client();
    let t = Instant::now();
    let proved = rt
        .block_on(c.prove(
            porep("porep-1000-32", V1_1_2KIB, SECTOR, &f.interactive),
            None,
        ))
        .unwrap();
    assert_eq!(
        proved.status,
        Status::Completed as i32,
        "{}",
        proved.error_message
    );
    let accepted = rt
        .block_on(c.submit_aggregate(SubmitAggregateRequest {
            request_id: "aggregate-1000-32-32".into(),
            registered_proof: V1_1_2KIB,
            priority: 0,
            sectors: vec![
                sector(&f.interactive, proved.proof.clone()),
                sector(&f.interactive, proved.proof.clone()),
            ],
        }))
        .unwrap();
    let aggregate = rt.block_on(c.await_proof(&accepted.job_id, 0)).unwrap();
    eprintln!("interactive proof and aggregate: {:.1?}", t.elapsed());
    assert_eq!(
        aggregate.status,
        Status::Completed as i32,
        "{}",
        aggregate.error_message
    );
    assert!(d.log_text().contains("aggregate made and verified"));
    let c1 = parse_c1(&f.interactive).unwrap();
    let one = CommitProofs::new(&c1, proved.proof.clone()).unwrap();
    let sectors = [one.clone(), one];
    assert_eq!(aggregate.proof, cuzk_filecoin::aggregate(&sectors).unwrap());
    cuzk_filecoin::verify_aggregate(&sectors, &aggregate.proof).unwrap();
    let mut bad = aggregate.proof.clone();
    let at = bad.len() / 2;
    bad[at] ^= 1;
    assert!(cuzk_filecoin::verify_aggregate(&sectors, &bad).is_err());
}
