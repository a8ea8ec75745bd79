//! `POREP_SEAL_COMMIT` requests: checking one as Curio fills it (the
//! `{SectorNum, Phase1Out, SectorSize}` wrapper as `vanilla_proof`, the
//! registered proof, sector size, sector number and miner id beside it)
//! before it is accepted (`kinds` holds the other kinds and what they share).

use cuzk_filecoin::{check_c1, parse_c1, C1Input, ProofType, SectorIdentity};

use crate::error::RequestError;
use crate::proto::SubmitProofRequest;

/// A checked PoRep request: its C1, the sector it is for, and the proof type.
#[derive(Debug)]
pub(crate) struct PorepRequest {
    /// The C1 output.
    pub c1: C1Input,
    /// The sector (miner and number) it is for.
    pub identity: SectorIdentity,
    /// The proof type, from the request's registered proof.
    pub proof_type: ProofType,
}

/// Checks a request as the issue lists the ways it can be wrong: no vanilla
/// proof, a registered proof that is not a PoRep type, a sector
/// size that contradicts it, a vanilla proof that is not the JSON it should
/// be (for a non-interactive type: 13 or 126 partitions of 2 or 18
/// challenges, `parse_c1`'s check), a C1 of another proof type (an
/// interactive C1 declared non-interactive, or the reverse, named as such)
/// or for another sector (sector number or miner id); the caller checks the
/// key files and, for a non-interactive type, the SnarkPack SRS. Every
/// refusal names the problem.
pub(crate) fn check_request(req: &SubmitProofRequest) -> Result<PorepRequest, RequestError> {
    if req.vanilla_proof.is_empty() {
        return Err(RequestError::InvalidArgument(
            "vanilla_proof is empty: POREP_SEAL_COMMIT needs Curio's {\"SectorNum\", \"Phase1Out\", \"SectorSize\"} JSON of the commit phase 1 output".into(),
        ));
    }
    let proof_type = registered_seal_proof(req.registered_proof)?;
    if req.sector_size != proof_type.sector_size() {
        return Err(RequestError::InvalidArgument(format!(
            "sector_size {} contradicts registered_proof {} ({}, which proves {}-byte sectors)",
            req.sector_size,
            req.registered_proof,
            proof_type.name(),
            proof_type.sector_size()
        )));
    }
    let c1 = parse_c1(&req.vanilla_proof)
        .map_err(|e| RequestError::InvalidArgument(format!("vanilla_proof: {e}")))?;
    if c1.proof_type != proof_type {
        // The same sector size with the other interaction: name it, since
        // the two differ in partitions (1 or 10 against 13 or 126) and in
        // what comes back (the partition proofs against their aggregate).
        let declared = if c1.proof_type.sector_size() != proof_type.sector_size() {
            String::new()
        } else if proof_type.is_non_interactive() && !c1.proof_type.is_non_interactive() {
            ": an interactive C1 declared non-interactive".into()
        } else if !proof_type.is_non_interactive() && c1.proof_type.is_non_interactive() {
            ": a non-interactive C1 declared interactive".into()
        } else {
            String::new()
        };
        return Err(RequestError::InvalidArgument(format!(
            "vanilla_proof is a C1 output of {}, but registered_proof {} is {}{declared}",
            c1.proof_type.name(),
            req.registered_proof,
            proof_type.name()
        )));
    }
    let identity = SectorIdentity::from_actor(req.miner_id, req.sector_number);
    check_c1(&c1, Some(&identity)).map_err(|e| {
        RequestError::InvalidArgument(format!(
            "vanilla_proof does not fit sector {} of miner f0{}: {e}",
            req.sector_number, req.miner_id
        ))
    })?;
    Ok(PorepRequest {
        c1,
        identity,
        proof_type,
    })
}

/// The PoRep proof type of a numeric `RegisteredSealProof` (the registry's
/// order, as filecoin-ffi and Curio number them).
pub(crate) fn registered_seal_proof(number: u64) -> Result<ProofType, RequestError> {
    let proof = usize::try_from(number)
        .ok()
        .and_then(|n| ProofType::ALL.get(n).copied())
        .ok_or_else(|| {
            RequestError::InvalidArgument(format!(
                "registered_proof {number} is not a RegisteredSealProof (0..={})",
                ProofType::ALL.len() - 1
            ))
        })?;
    ProofType::new(proof)
        .map_err(|e| RequestError::InvalidArgument(format!("registered_proof {number}: {e}")))
}
