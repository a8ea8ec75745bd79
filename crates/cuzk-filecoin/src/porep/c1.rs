//! Reading commit phase 1 output in the two forms users have: the plain JSON
//! that filecoin-proofs-api's `SealCommitPhase1Output` serializes to (what
//! filecoin-ffi hands back), and Curio's wrapper around it,
//! `{"SectorNum": n, "Phase1Out": "<base64 of the plain JSON>", "SectorSize": bytes}`.

use base64::Engine as _;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use serde_json::Value;

use crate::proof_type::ProofType;
use crate::Error;

/// What Curio's wrapper says about the sector, besides the C1 output itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurioSector {
    /// The sector number (`SectorNum`).
    pub sector_num: u64,
    /// The sector size in bytes (`SectorSize`).
    pub sector_size: u64,
}

/// A parsed and shape-checked C1 output.
#[derive(Clone, Debug)]
pub struct C1Input {
    /// The C1 output as filecoin-proofs-api defines it.
    pub output: SealCommitPhase1Output,
    /// The proof type it is for.
    pub proof_type: ProofType,
    /// Present when the input came in Curio's wrapper.
    pub curio: Option<CurioSector>,
}

impl C1Input {
    /// The sector number Curio's wrapper gives, if any.
    pub fn sector_num(&self) -> Option<u64> {
        self.curio.map(|c| c.sector_num)
    }
}

/// Parses either form and checks what can be checked without the proofs'
/// contents: the proof type is one this crate proves, the sector sizes named
/// by the proof type, by the vanilla proofs' variant and by Curio's wrapper
/// agree, there is one partition of vanilla proofs per circuit partition
/// (an interactive C1 declared non-interactive, or the reverse, is named as
/// such), each with the proof type's challenge count, and no commitment or
/// seed is all zero (as `seal_commit_phase2` requires).
pub fn parse_c1(bytes: &[u8]) -> Result<C1Input, Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(Error::NotJson)?;
    let (plain, curio) = match value.get("Phase1Out") {
        Some(phase1) => {
            let curio = curio_fields(&value)?;
            let encoded = phase1
                .as_str()
                .ok_or_else(|| Error::NotC1("Curio wrapper: Phase1Out is not a string".into()))?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(Error::Base64)?;
            let inner: Value = serde_json::from_slice(&decoded).map_err(|e| {
                Error::NotC1(format!(
                    "Curio wrapper: Phase1Out does not decode to JSON: {e}"
                ))
            })?;
            (inner, Some(curio))
        }
        None => (value, None),
    };
    let output: SealCommitPhase1Output =
        serde_json::from_value(plain).map_err(|e| Error::NotC1(e.to_string()))?;
    let proof_type = ProofType::new(output.registered_proof)?;
    check_shape(&output, proof_type, curio)?;
    Ok(C1Input {
        output,
        proof_type,
        curio,
    })
}

fn curio_fields(value: &Value) -> Result<CurioSector, Error> {
    let field = |name: &str| {
        value.get(name).and_then(Value::as_u64).ok_or_else(|| {
            Error::NotC1(format!(
                "Curio wrapper: {name} is missing or not an unsigned integer"
            ))
        })
    };
    Ok(CurioSector {
        sector_num: field("SectorNum")?,
        sector_size: field("SectorSize")?,
    })
}

fn check_shape(
    output: &SealCommitPhase1Output,
    proof_type: ProofType,
    curio: Option<CurioSector>,
) -> Result<(), Error> {
    let expected = proof_type.sector_size();
    let wrong_size = |found, place| Error::SectorSize {
        proof_type: proof_type.name(),
        expected,
        found,
        place,
    };
    if let Some(c) = curio {
        if c.sector_size != expected {
            return Err(wrong_size(c.sector_size, "Curio's SectorSize"));
        }
    }
    let (variant_size, partitions): (u64, Vec<usize>) = match &output.vanilla_proofs {
        VanillaSealProof::StackedDrg2KiBV1(p) => (2 << 10, p.iter().map(Vec::len).collect()),
        VanillaSealProof::StackedDrg8MiBV1(p) => (8 << 20, p.iter().map(Vec::len).collect()),
        VanillaSealProof::StackedDrg512MiBV1(p) => (512 << 20, p.iter().map(Vec::len).collect()),
        VanillaSealProof::StackedDrg32GiBV1(p) => (32 << 30, p.iter().map(Vec::len).collect()),
        VanillaSealProof::StackedDrg64GiBV1(p) => (64 << 30, p.iter().map(Vec::len).collect()),
    };
    if variant_size != expected {
        return Err(wrong_size(variant_size, "the vanilla proofs' variant"));
    }
    if partitions.len() != proof_type.partitions() {
        // The same circuit with the other interaction has another partition
        // count (1 or 10 interactive, 13 or 126 non-interactive): say so.
        let other = proof_type.other_interaction();
        let hint = if partitions.len() == other.partitions() {
            let (was, declared) = if other.is_non_interactive() {
                ("a non-interactive", "interactive")
            } else {
                ("an interactive", "non-interactive")
            };
            format!(
                " ({} has {}: {was} C1 declared {declared})",
                other.name(),
                other.partitions(),
            )
        } else {
            String::new()
        };
        return Err(Error::Tampered(format!(
            "{} partitions of vanilla proofs, {} has {}{hint}",
            partitions.len(),
            proof_type.name(),
            proof_type.partitions()
        )));
    }
    if let Some(k) = partitions.iter().position(|&n| n == 0) {
        return Err(Error::Tampered(format!(
            "partition {k} has no vanilla proofs"
        )));
    }
    let per_partition = proof_type.challenges_per_partition();
    if let Some((k, &n)) = partitions
        .iter()
        .enumerate()
        .find(|&(_, &n)| n != per_partition)
    {
        return Err(Error::Tampered(format!(
            "partition {k} has {n} vanilla proofs (challenges), {} has {per_partition} per \
             partition",
            proof_type.name()
        )));
    }
    for (name, bytes) in [
        ("comm_r", &output.comm_r),
        ("comm_d", &output.comm_d),
        ("seed", &output.seed),
    ] {
        if bytes.iter().all(|&b| b == 0) {
            return Err(Error::Tampered(format!("{name} is all zero")));
        }
    }
    Ok(())
}
