//! cuzk's own requests beside Curio's contract (`proto/cuzk/v1/cuzk_local.proto`):
//! a vanilla proof read from a file on the daemon's machine
//! (`SubmitProofFile`, for C1 outputs larger than one gRPC message), and
//! aggregation jobs (`SubmitAggregate`: a SnarkPack aggregate of 1–65
//! sectors' PoRep partition proofs, as `cuzk aggregate` makes it).
//!
//! An aggregation job is journaled and queued like any other job, as a
//! [`SubmitProofRequest`] of the cuzk-only kind [`AGGREGATE_KIND`] (a value
//! Curio's `ProofKind` does not have, so `SubmitProof` refuses it): its
//! `vanilla_proofs` hold one encoded [`AggregateSector`] per sector, whose
//! `c1` is the sector's C1 without its vanilla proofs (the aggregate and
//! its verifier read comm_r, comm_d, the replica id and the seed, never the
//! vanilla proofs: a 32 GiB non-interactive C1 of ~0.6 GB becomes a few
//! hundred bytes). It needs no proving key and runs outside the engine.

use std::path::{Path, PathBuf};

use cuzk_filecoin::aggregate::{padded_len, MAX_SECTORS};
use cuzk_filecoin::{
    aggregate, parse_c1, verify_aggregate, C1Input, CommitProofs, ParamsDir, ProofType,
};
use prost::Message;

use crate::error::RequestError;
use crate::porep::registered_seal_proof;
use crate::proto::{AggregateSector, SubmitAggregateRequest, SubmitProofRequest};

/// The journal's `proof_kind` of an aggregation job: not a value of
/// Curio's `ProofKind` (0–4), so never sent by Curio and refused by
/// `SubmitProof`.
pub(crate) const AGGREGATE_KIND: i32 = 100;

/// The folders under which cuzk's own RPCs may read files
/// (`limits.vanilla_file_dirs`); none: every file request is refused.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalFiles {
    dirs: Vec<PathBuf>,
}

impl LocalFiles {
    /// The folders, as configured (each resolved when a file is read).
    pub(crate) fn new(dirs: Vec<PathBuf>) -> Self {
        LocalFiles { dirs }
    }

    /// Reads `path` if it is an absolute path whose real location (links
    /// resolved) is under one of the folders, and no longer than `limit`
    /// bytes; `what` names the field in the refusals.
    pub(crate) fn read(&self, what: &str, path: &str, limit: u64) -> Result<Vec<u8>, RequestError> {
        let refuse =
            |problem: String| RequestError::InvalidArgument(format!("{what} {path:?}: {problem}"));
        if self.dirs.is_empty() {
            return Err(RequestError::FailedPrecondition(format!(
                "{what} {path:?}: this daemon reads no local files (limits.vanilla_file_dirs is \
                 empty; list the folders the files may come from)"
            )));
        }
        let p = Path::new(path);
        if !p.is_absolute() {
            return Err(refuse("not an absolute path".into()));
        }
        let real = std::fs::canonicalize(p).map_err(|e| refuse(e.to_string()))?;
        let allowed = self
            .dirs
            .iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .any(|d| real.starts_with(d));
        if !allowed {
            return Err(refuse(format!(
                "not under limits.vanilla_file_dirs ({})",
                self.dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let meta = std::fs::metadata(&real).map_err(|e| refuse(e.to_string()))?;
        if !meta.is_file() {
            return Err(refuse("not a regular file".into()));
        }
        if meta.len() > limit {
            return Err(RequestError::ResourceExhausted(format!(
                "{what} {path:?}: {} bytes, more than the {limit} the queue holds \
                 (limits.max_queued_bytes)",
                meta.len()
            )));
        }
        std::fs::read(&real).map_err(|e| refuse(format!("reading it: {e}")))
    }
}

/// A checked aggregation job: its sectors' partition proofs and public inputs.
#[derive(Debug)]
pub(crate) struct AggregateRequest {
    /// The sectors' one PoRep type.
    pub proof_type: ProofType,
    /// Each sector's partition proofs and public inputs, in the request's order.
    pub sectors: Vec<CommitProofs>,
}

impl AggregateRequest {
    /// The aggregate (filecoin-proofs' `aggregate_seal_commit_proofs`).
    pub(crate) fn aggregate(&self) -> Result<Vec<u8>, cuzk_filecoin::Error> {
        aggregate(&self.sectors)
    }

    /// Checks an aggregate of these sectors with
    /// `verify_aggregate_seal_commit_proofs`.
    pub(crate) fn verify(&self, aggregate: &[u8]) -> Result<(), cuzk_filecoin::Error> {
        verify_aggregate(&self.sectors, aggregate)
    }
}

/// The checks that need no sector: the count (1 to 65), the proof type,
/// its verifying key and an SRS large enough for the count.
fn check_counts(
    sectors: usize,
    registered_proof: u64,
    params: &ParamsDir,
) -> Result<ProofType, RequestError> {
    if sectors == 0 {
        return Err(RequestError::InvalidArgument(
            "no sectors: an aggregate takes 1 to 65 sectors' partition proofs".into(),
        ));
    }
    if sectors > MAX_SECTORS {
        return Err(RequestError::InvalidArgument(format!(
            "{sectors} sectors: an aggregate takes 1 to {MAX_SECTORS} (FIP-0092)"
        )));
    }
    let pt = registered_seal_proof(registered_proof)?;
    params
        .load_verifying_key(pt)
        .map_err(|e| RequestError::FailedPrecondition(cuzk_pipeline::ErrorChain(&e).to_string()))?;
    params
        .check_srs(sectors * pt.partitions())
        .map_err(|e| RequestError::FailedPrecondition(e.to_string()))?;
    Ok(pt)
}

/// The sector's C1 without its vanilla proofs (the aggregate reads
/// comm_r, comm_d, the replica id and the seed), as JSON.
fn strip(c1: &C1Input) -> Result<Vec<u8>, RequestError> {
    let internal = |e: serde_json::Error| {
        RequestError::Internal(format!("re-encoding a C1 without its vanilla proofs: {e}"))
    };
    let mut v = serde_json::to_value(&c1.output).map_err(internal)?;
    if let Some(serde_json::Value::Object(variant)) = v.get_mut("vanilla_proofs") {
        for proofs in variant.values_mut() {
            *proofs = serde_json::Value::Array(Vec::new());
        }
    }
    serde_json::to_vec(&v).map_err(internal)
}

/// A stripped C1 ([`strip`]) read back.
fn unstrip(bytes: &[u8]) -> Result<C1Input, String> {
    // The output's type is the Filecoin crates' (only cuzk-filecoin names
    // them): read it into the field, then take the type from it.
    let mut c1 = C1Input {
        output: serde_json::from_slice(bytes).map_err(|e| e.to_string())?,
        proof_type: ProofType::new(ProofType::ALL[0]).map_err(|e| e.to_string())?,
        curio: None,
    };
    c1.proof_type = ProofType::new(c1.output.registered_proof).map_err(|e| e.to_string())?;
    Ok(c1)
}

/// Refuses a sector whose C1 is of another type than the request's.
fn same_type(c1: &C1Input, pt: ProofType, registered_proof: u64) -> Result<(), String> {
    if c1.proof_type == pt {
        return Ok(());
    }
    Err(format!(
        "its C1 is {} but registered_proof {registered_proof} is {}: one aggregate holds proofs \
         of one proof type (one sector size, one verifying key)",
        c1.proof_type.name(),
        pt.name()
    ))
}

/// `SubmitAggregate`'s request as the job journaled and queued: each
/// sector's C1 read (inline or from its file), parsed and checked against
/// the proof type, its partition proofs' length checked, and its vanilla
/// proofs dropped. Refused before reading any C1: no sectors or more than
/// 65, a registered proof that is not a PoRep type, a missing verifying
/// key, a missing, truncated or too small SRS.
pub(crate) fn to_submit(
    req: SubmitAggregateRequest,
    params: &ParamsDir,
    files: &LocalFiles,
    file_limit: u64,
) -> Result<SubmitProofRequest, RequestError> {
    let pt = check_counts(req.sectors.len(), req.registered_proof, params)?;
    let mut vanilla = Vec::with_capacity(req.sectors.len());
    for (i, s) in req.sectors.into_iter().enumerate() {
        let refuse =
            |problem: String| RequestError::InvalidArgument(format!("sector {i}: {problem}"));
        let bytes = match (s.c1.is_empty(), s.c1_path.is_empty()) {
            (false, true) => s.c1,
            (true, false) => files.read(&format!("sector {i}: c1_path"), &s.c1_path, file_limit)?,
            (true, true) => return Err(refuse("neither c1 nor c1_path is set".into())),
            (false, false) => return Err(refuse("both c1 and c1_path are set: give one".into())),
        };
        let c1 = parse_c1(&bytes).map_err(|e| refuse(format!("c1: {e}")))?;
        drop(bytes);
        same_type(&c1, pt, req.registered_proof).map_err(refuse)?;
        CommitProofs::new(&c1, s.partition_proofs.clone()).map_err(|e| refuse(e.to_string()))?;
        vanilla.push(
            AggregateSector {
                c1: strip(&c1)?,
                c1_path: String::new(),
                partition_proofs: s.partition_proofs,
            }
            .encode_to_vec(),
        );
    }
    Ok(SubmitProofRequest {
        request_id: req.request_id,
        proof_kind: AGGREGATE_KIND,
        registered_proof: req.registered_proof,
        priority: req.priority,
        vanilla_proofs: vanilla,
        ..Default::default()
    })
}

/// Checks an aggregation job's journaled request ([`to_submit`]'s form).
pub(crate) fn check(
    req: &SubmitProofRequest,
    params: &ParamsDir,
) -> Result<AggregateRequest, RequestError> {
    let pt = check_counts(req.vanilla_proofs.len(), req.registered_proof, params)?;
    let sectors = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let refuse =
                |problem: String| RequestError::InvalidArgument(format!("sector {i}: {problem}"));
            let s = AggregateSector::decode(&bytes[..])
                .map_err(|e| refuse(format!("does not decode: {e}")))?;
            let c1 = unstrip(&s.c1).map_err(|e| refuse(format!("c1: {e}")))?;
            same_type(&c1, pt, req.registered_proof).map_err(refuse)?;
            CommitProofs::new(&c1, s.partition_proofs).map_err(|e| refuse(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AggregateRequest {
        proof_type: pt,
        sectors,
    })
}

/// What an aggregate of `sectors` sectors of `pt` holds, for the log.
pub(crate) fn describe(sectors: usize, pt: ProofType) -> String {
    let proofs = sectors * pt.partitions();
    format!(
        "{sectors} sector(s) of {}, {proofs} partition proofs padded to {}",
        pt.name(),
        padded_len(proofs)
    )
}
