//! The four proof kinds of the wire, as one request type: each kind's
//! request checked as Curio fills it (`porep` for `POREP_SEAL_COMMIT`; here
//! `WINNING_POST`, `WINDOW_POST_PARTITION` and `SNAP_DEALS_UPDATE`), its
//! default priority, its circuit (hence its key), the engine source that
//! proves it, and the Filecoin crates' verifier that checks the proof
//! before it is returned.
//!
//! How Curio packs each kind (`shared/CURIO-WIRE.md`): PoRep, the
//! `{SectorNum, Phase1Out, SectorSize}` JSON as `vanilla_proof`; the PoSts,
//! one bincode `FallbackPoStSectorProof` per sector as `vanilla_proofs`,
//! with `randomness` (32 bytes), `miner_id` and, for WindowPoSt,
//! `partition_index`; SnapDeals, one bincode `PartitionProof` per partition
//! as `vanilla_proofs`, with `comm_r_old`, `comm_r_new`, `comm_d_new`.
//! `registered_proof` is the kind's own registry number
//! (`RegisteredSealProof`, `RegisteredPoStProof`, `RegisteredUpdateProof`).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use blstrs::Scalar as Fr;
use cuzk_filecoin::{
    verify_post, verify_update, AuxPool, Circuit, ParamsDir, PorepSource, PostKind, PostRequest,
    PostSource, PostType, SectorIdentity, UpdateRequest, UpdateSource, UpdateType,
};
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{PartitionSource, SourceError};

use crate::error::RequestError;
use crate::porep::PorepRequest;
use crate::proto::{Priority, ProofKind, SubmitProofRequest};
use crate::srs::{KeySynthesis, SrsLease};

/// The most partitions a WindowPoSt deadline may hold (the chain's policy,
/// `MAX_PARTITIONS_PER_DEADLINE` of the builtin actors): a larger
/// `partition_index` names no partition.
pub(crate) const MAX_PARTITIONS_PER_DEADLINE: u32 = 3000;

/// A checked request of any kind.
#[derive(Debug)]
pub(crate) enum Request {
    /// A PoRep C2.
    Porep(PorepRequest),
    /// WinningPoSt or one WindowPoSt partition.
    Post(PostRequest),
    /// A SnapDeals update.
    Update(UpdateRequest),
    /// A SnarkPack aggregate of PoRep partition proofs (cuzk's own
    /// `SubmitAggregate`): no proving key, no engine.
    Aggregate(crate::aggregate::AggregateRequest),
}

/// The kinds, in the wire's order, as metric labels and `GetStatus` queues use them.
pub(crate) const KINDS: [ProofKind; 4] = [
    ProofKind::PorepSealCommit,
    ProofKind::SnapDealsUpdate,
    ProofKind::WindowPostPartition,
    ProofKind::WinningPost,
];

/// The index of `kind` in [`KINDS`] (per-kind counters); unknown kinds count as PoRep.
pub(crate) fn kind_index(kind: i32) -> usize {
    KINDS.iter().position(|k| *k as i32 == kind).unwrap_or(0)
}

/// A kind's label in the metrics (`porep_seal_commit`, `winning_post`, …).
pub(crate) fn kind_label(kind: ProofKind) -> String {
    kind.as_str_name().to_ascii_lowercase()
}

/// The priority a kind gets when the request leaves it unspecified: a late
/// WinningPoSt loses a block reward (CRITICAL), a late WindowPoSt power
/// (HIGH), PoRep and SnapDeals are bulk work (NORMAL).
pub(crate) fn default_priority(kind: ProofKind) -> Priority {
    match kind {
        ProofKind::WinningPost => Priority::Critical,
        ProofKind::WindowPostPartition => Priority::High,
        _ => Priority::Normal,
    }
}

impl Request {
    /// The circuit whose key proves it.
    pub(crate) fn circuit(&self) -> Circuit {
        match self {
            Request::Porep(r) => Circuit::Porep(r.proof_type),
            Request::Post(r) => Circuit::Post(r.post_type()),
            Request::Update(r) => Circuit::Update(r.update_type()),
            Request::Aggregate(r) => Circuit::Porep(r.proof_type),
        }
    }

    /// Whether it is proved in the engine with its circuit's key (every
    /// kind but an aggregation job).
    pub(crate) fn needs_engine(&self) -> bool {
        !matches!(self, Request::Aggregate(_))
    }

    /// The engine source that proves it with `key`, synthesized as
    /// `synthesis` says (the key's), timed; a PoSt's native witness takes
    /// its aux vector from `pool` and gives it back.
    pub(crate) fn source(
        &self,
        key: &ProvingKey,
        synthesis: &KeySynthesis,
        pool: &Arc<AuxPool>,
    ) -> Result<Arc<TimedSource>, cuzk_filecoin::Error> {
        let inner: Box<dyn PartitionSource> = match self {
            Request::Porep(r) => {
                Box::new(PorepSource::with_synthesis(&r.c1, key, &synthesis.porep())?)
            }
            Request::Post(r) => Box::new(PostSource::pooled(
                r,
                key,
                &synthesis.circuit(),
                Arc::clone(pool),
            )?),
            Request::Update(r) => {
                Box::new(UpdateSource::with_synthesis(r, key, &synthesis.circuit())?)
            }
            Request::Aggregate(_) => {
                return Err(cuzk_filecoin::Error::Aggregate(
                    "an aggregation job has no partitions to prove".into(),
                ))
            }
        };
        Ok(TimedSource::new(inner))
    }

    /// A non-interactive PoRep (its answer is an aggregate).
    pub(crate) fn is_non_interactive(&self) -> bool {
        matches!(self, Request::Porep(r) if r.proof_type.is_non_interactive())
    }

    /// What the job returns, from the engine's partition proofs (192 bytes
    /// each, in order): those proofs, except for a non-interactive PoRep,
    /// whose answer is what `seal_commit_phase2` returns for it, the
    /// SnarkPack aggregate of its partition proofs (filecoin-proofs'
    /// own aggregation, through `cuzk_filecoin::seal_proof`).
    pub(crate) fn output(
        &self,
        partition_proofs: Vec<u8>,
    ) -> Result<Vec<u8>, cuzk_filecoin::Error> {
        match self {
            Request::Porep(r) if r.proof_type.is_non_interactive() => {
                cuzk_filecoin::seal_proof(&r.c1, partition_proofs)
            }
            Request::Aggregate(r) => r.aggregate(),
            _ => Ok(partition_proofs),
        }
    }

    /// Checks `proof` (what [`Request::output`] made) with the Filecoin
    /// crates' verifier of its kind (`verify_seal`, which checks a
    /// non-interactive aggregate too, `verify_winning_post` / `verify_window_post`,
    /// `verify_empty_sector_update_proof`); returns how, for the log.
    pub(crate) fn verify(
        &self,
        proof: &[u8],
        lease: &SrsLease,
    ) -> Result<String, cuzk_filecoin::Error> {
        match self {
            Request::Porep(r) => {
                cuzk_filecoin::verify(&r.c1, proof, &lease.filecoin_vk, Some(&r.identity))
                    .map(|how| format!("{how:?}"))
            }
            Request::Post(r) => {
                verify_post(r, proof, &lease.filecoin_vk).map(|how| format!("{how:?}"))
            }
            Request::Update(r) => verify_update(r, proof, &lease.filecoin_vk)
                .map(|()| "VerifyEmptySectorUpdateProof".to_string()),
            Request::Aggregate(r) => r
                .verify(proof)
                .map(|()| "VerifyAggregateSealCommitProofs".to_string()),
        }
    }

    /// The verifier's name, for a refusal's message.
    pub(crate) fn verifier(&self) -> &'static str {
        match self {
            Request::Porep(_) => "verify_seal",
            Request::Post(r) => match r.post_type().kind() {
                PostKind::Winning => "verify_winning_post",
                PostKind::Window => "verify_window_post",
            },
            Request::Update(_) => "verify_empty_sector_update_proof",
            Request::Aggregate(_) => "verify_aggregate_seal_commit_proofs",
        }
    }
}

/// Checks a request of any kind (the envelope was checked: its kind is
/// known) and the key files of its circuit. Every refusal names the problem.
pub(crate) fn check_request(
    req: &SubmitProofRequest,
    params: &ParamsDir,
) -> Result<Request, RequestError> {
    if req.proof_kind == crate::aggregate::AGGREGATE_KIND {
        return Ok(Request::Aggregate(crate::aggregate::check(req, params)?));
    }
    let kind = ProofKind::try_from(req.proof_kind).map_err(|_| {
        RequestError::InvalidArgument(format!("unknown proof_kind {}", req.proof_kind))
    })?;
    let request = match kind {
        ProofKind::PorepSealCommit => Request::Porep(crate::porep::check_request(req)?),
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            Request::Post(check_post(req, kind)?)
        }
        ProofKind::SnapDealsUpdate => Request::Update(check_update(req)?),
        ProofKind::Unspecified => {
            return Err(RequestError::InvalidArgument(
                "proof_kind is PROOF_KIND_UNSPECIFIED: say which proof to make".into(),
            ))
        }
    };
    params
        .check(request.circuit())
        .map_err(|e| RequestError::FailedPrecondition(cuzk_pipeline::ErrorChain(&e).to_string()))?;
    if let Request::Porep(r) = &request {
        if r.proof_type.is_non_interactive() {
            // The SnarkPack SRS the partition proofs will be aggregated
            // with: there, whole and large enough, before any synthesis
            // (its error names the file and the command that fetches it).
            params
                .check_srs(r.proof_type.partitions())
                .map_err(|e| RequestError::FailedPrecondition(e.to_string()))?;
        }
    }
    Ok(request)
}

fn invalid(e: cuzk_filecoin::Error) -> RequestError {
    RequestError::InvalidArgument(e.to_string())
}

/// What PoSt and SnapDeals requests share: `vanilla_proofs`, not
/// `vanilla_proof`; a sector size, when given, that of the proof type.
fn check_packing(
    req: &SubmitProofRequest,
    kind: ProofKind,
    what: &str,
    type_name: &str,
    sector_size: u64,
) -> Result<(), RequestError> {
    if req.vanilla_proofs.is_empty() {
        return Err(RequestError::InvalidArgument(format!(
            "vanilla_proofs is empty: {} takes {what} in vanilla_proofs (field 11){}",
            kind.as_str_name(),
            if req.vanilla_proof.is_empty() {
                ""
            } else {
                "; vanilla_proof (field 10) is POREP_SEAL_COMMIT's"
            }
        )));
    }
    if !req.vanilla_proof.is_empty() {
        return Err(RequestError::InvalidArgument(format!(
            "vanilla_proof (field 10) is set: {} takes {what} in vanilla_proofs (field 11) only",
            kind.as_str_name()
        )));
    }
    if req.sector_size != 0 && req.sector_size != sector_size {
        return Err(RequestError::InvalidArgument(format!(
            "sector_size {} contradicts registered_proof {} ({type_name}, which proves {sector_size}-byte sectors)",
            req.sector_size, req.registered_proof
        )));
    }
    Ok(())
}

fn check_post(req: &SubmitProofRequest, kind: ProofKind) -> Result<PostRequest, RequestError> {
    let post_type = registered_post_proof(req.registered_proof)?;
    check_packing(
        req,
        kind,
        "one bincode FallbackPoStSectorProof per sector",
        &post_type.name(),
        post_type.sector_size(),
    )?;
    let prover_id = SectorIdentity::from_actor(req.miner_id, 0).prover_id;
    let vanilla = req.vanilla_proofs.clone();
    let request = match kind {
        ProofKind::WinningPost => {
            if req.partition_index != 0 {
                return Err(RequestError::InvalidArgument(format!(
                    "partition_index {} out of range: a WinningPoSt has one partition (0)",
                    req.partition_index
                )));
            }
            PostRequest::winning(post_type, &req.randomness, prover_id, vanilla)
        }
        _ => {
            if req.partition_index >= MAX_PARTITIONS_PER_DEADLINE {
                return Err(RequestError::InvalidArgument(format!(
                    "partition_index {} out of range: a deadline holds at most {MAX_PARTITIONS_PER_DEADLINE} partitions (0..{})",
                    req.partition_index,
                    MAX_PARTITIONS_PER_DEADLINE - 1
                )));
            }
            PostRequest::window(
                post_type,
                &req.randomness,
                prover_id,
                vanilla,
                req.partition_index as usize,
            )
        }
    }
    .map_err(|e| {
        RequestError::InvalidArgument(format!("registered_proof {}: {e}", req.registered_proof))
    })?;
    // Every vanilla proof decodes (encoding, sector size, challenge count,
    // no sector twice) and answers this randomness's challenges: cheap
    // beside the proof (no synthesis), so a wrong one is refused here.
    request.check().map_err(invalid)?;
    Ok(request)
}

fn check_update(req: &SubmitProofRequest) -> Result<UpdateRequest, RequestError> {
    let update_type = registered_update_proof(req.registered_proof)?;
    check_packing(
        req,
        ProofKind::SnapDealsUpdate,
        "one bincode PartitionProof per partition",
        &update_type.name(),
        update_type.sector_size(),
    )?;
    let request = UpdateRequest::new(
        update_type,
        req.vanilla_proofs.clone(),
        &req.comm_r_old,
        &req.comm_r_new,
        &req.comm_d_new,
    )
    .map_err(invalid)?;
    request.check_encoding().map_err(invalid)?;
    Ok(request)
}

/// The PoSt proof type of a numeric `RegisteredPoStProof` (the registry's
/// order, as filecoin-ffi and Curio number them).
pub(crate) fn registered_post_proof(number: u64) -> Result<PostType, RequestError> {
    let proof = usize::try_from(number)
        .ok()
        .and_then(|n| PostType::ALL.get(n).copied())
        .ok_or_else(|| {
            RequestError::InvalidArgument(format!(
                "registered_proof {number} is not a RegisteredPoStProof (0..={})",
                PostType::ALL.len() - 1
            ))
        })?;
    PostType::new(proof)
        .map_err(|e| RequestError::InvalidArgument(format!("registered_proof {number}: {e}")))
}

/// The update proof type of a numeric `RegisteredUpdateProof`.
pub(crate) fn registered_update_proof(number: u64) -> Result<UpdateType, RequestError> {
    usize::try_from(number)
        .ok()
        .and_then(|n| UpdateType::ALL.get(n).copied())
        .map(UpdateType::new)
        .ok_or_else(|| {
            RequestError::InvalidArgument(format!(
                "registered_proof {number} is not a RegisteredUpdateProof (0..={})",
                UpdateType::ALL.len() - 1
            ))
        })
}

/// A source that notes when its first partition started synthesis: the
/// end of the job's queue wait, for `AwaitProofResponse.queue_wait_ms`.
pub(crate) struct TimedSource {
    inner: Box<dyn PartitionSource>,
    first_synthesis: OnceLock<Instant>,
}

impl TimedSource {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Box<dyn PartitionSource>) -> Arc<Self> {
        Arc::new(TimedSource {
            inner,
            first_synthesis: OnceLock::new(),
        })
    }

    /// When the first partition started synthesis, if one has.
    pub(crate) fn first_synthesis(&self) -> Option<Instant> {
        self.first_synthesis.get().copied()
    }
}

impl std::fmt::Debug for TimedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimedSource")
            .field("inner", &self.inner.describe())
            .field("first_synthesis", &self.first_synthesis)
            .finish()
    }
}

impl PartitionSource for TimedSource {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn num_partitions(&self) -> usize {
        self.inner.num_partitions()
    }

    fn shape(&self) -> cuzk_synth::CircuitShape {
        self.inner.shape()
    }

    fn synthesize(&self, index: usize) -> Result<cuzk_synth::Synthesized, SourceError> {
        self.first_synthesis.get_or_init(Instant::now);
        self.inner.synthesize(index)
    }

    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        self.inner.public_inputs(index)
    }

    fn defers_abc(&self) -> bool {
        self.inner.defers_abc()
    }

    fn recycle(&self, index: usize, witness: cuzk_synth::Synthesized) {
        self.inner.recycle(index, witness)
    }

    fn compact_others(&self) -> Option<usize> {
        self.inner.compact_others()
    }
}
