//! SnarkPack aggregation of PoRep partition proofs, as filecoin-proofs
//! makes it (docs/ni-porep.md has the facts and their sources):
//!
//! * a non-interactive sector's C2 output is the aggregate of its own
//!   partition proofs ([`seal_proof`], what `seal_commit_phase2` returns for
//!   a `…_Feat_NonInteractivePoRep` type);
//! * [`aggregate`] aggregates 1–65 sectors' partition proofs of one proof
//!   type, interactive or not (`aggregate_seal_commit_proofs`), and
//!   [`verify_aggregate`] checks such an aggregate
//!   (`verify_aggregate_seal_commit_proofs`).
//!
//! The aggregation itself is filecoin-proofs' own public call (bellperson's
//! SnarkPack, version 2), so the bytes are its bytes. What is here is what
//! comes before it: the proof types, counts and lengths, and the SRS file,
//! each refused with its reason instead of a panic inside the crates
//! (bellperson indexes past the end of a truncated SRS file, and asserts on
//! one too small for the aggregation). The SRS is read by filecoin-proofs
//! from its own parameter cache ([`ParamsDir::filecoin`]) under its
//! official name, [`srs_file_name`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use bellperson::groth16::aggregate::{setup_fake_srs, AggregateProof, GenericSRS};
use blstrs::{Bls12, Scalar as Fr};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, FIP92_MAX_NI_POREP_AGGREGATION_PROOFS};
use filecoin_proofs_api::seal::SealCommitPhase2Output;
use filecoin_proofs_api::RegisteredAggregationProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{SRS_KEY_EXT, SRS_SHARED_KEY_NAME, VERSION};
use storage_proofs_porep::stacked::StackedCompound;

use crate::params::write_atomically;
use crate::porep::prove::sector;
use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error, ParamsDir, ProofType};

/// Bytes of one partition's Groth16 proof.
const PROOF_LEN: usize = cuzk_groth16::proof::PROOF_LEN;

/// The most sectors one aggregate takes (FIP-0092's bound for
/// non-interactive PoRep, applied to every proof type here).
pub const MAX_SECTORS: usize = FIP92_MAX_NI_POREP_AGGREGATION_PROOFS;

/// The SnarkPack version filecoin-proofs uses for non-interactive C2
/// outputs, and the one the chain takes for aggregates.
pub const VERSION_USED: RegisteredAggregationProof = RegisteredAggregationProof::SnarkPackV2;

/// How many points of each SRS vector filecoin-proofs reads
/// (storage-proofs-core's `read_cached_srs_key`: `(2 << 14) + 1`), so the
/// largest aggregate it can make is of 2^14 proofs.
const SRS_READ_LIMIT: usize = (2 << 14) + 1;

/// The largest vector bellperson accepts in an SRS file (`MAX_SRS_SIZE`).
const SRS_MAX_VECTOR: usize = (2 << 19) + 1;

/// Bytes of a compressed G1 and G2 point, as the SRS file stores them.
const G1_BYTES: u64 = 48;
const G2_BYTES: u64 = 96;

/// Proofs a test SRS made by `cuzk fixtures keys --srs` aggregates by
/// default: 65 sectors of 126 partitions (8,190) padded to a power of two.
pub const TEST_SRS_PROOFS: usize = 8192;

/// The official file name of the SnarkPack SRS in the parameter cache
/// (`v28-fil-inner-product-v1.srs`): one file for every sector size and
/// aggregate size.
pub fn srs_file_name() -> String {
    format!("v{VERSION}-{SRS_SHARED_KEY_NAME}.{SRS_KEY_EXT}")
}

/// The number of proofs an aggregate of `proofs` proofs holds: the next
/// power of two, at least 2 (filecoin-proofs' `get_aggregate_target_len`;
/// the last proof is repeated to fill it).
pub fn padded_len(proofs: usize) -> usize {
    proofs.max(2).next_power_of_two()
}

/// What [`ParamsDir::check_srs`] found: the file and what it can aggregate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsSummary {
    /// The file.
    pub path: PathBuf,
    /// Its four vectors' lengths (g^α^i, g^β^i, h^α^i, h^β^i).
    pub lengths: [usize; 4],
    /// The largest number of proofs filecoin-proofs can aggregate with it.
    pub max_proofs: usize,
    /// The file's length in bytes.
    pub file_len: u64,
}

impl ParamsDir {
    /// Where the SnarkPack SRS is (or would be).
    pub fn srs_path(&self) -> PathBuf {
        self.path().join(srs_file_name())
    }

    /// Checks, cheaply and before any proving, that the SRS file is there,
    /// whole (its four vectors' lengths account for its exact length) and
    /// large enough for an aggregate of `proofs` proofs (padded as
    /// [`padded_len`] says). Points are decoded by filecoin-proofs when it
    /// reads the file.
    pub fn check_srs(&self, proofs: usize) -> Result<SrsSummary, Error> {
        let path = self.srs_path();
        let fail = |problem: String| self.srs_error(problem);
        let mut file = File::open(&path).map_err(|e| {
            fail(if e.kind() == std::io::ErrorKind::NotFound {
                "not found".into()
            } else {
                e.to_string()
            })
        })?;
        let file_len = file
            .metadata()
            .map_err(|e| fail(format!("reading its length: {e}")))?
            .len();
        let mut lengths = [0usize; 4];
        let mut offset = 0u64;
        for (i, point) in [G1_BYTES, G1_BYTES, G2_BYTES, G2_BYTES]
            .into_iter()
            .enumerate()
        {
            let mut word = [0u8; 4];
            file.seek(SeekFrom::Start(offset))
                .and_then(|_| file.read_exact(&mut word))
                .map_err(|_| {
                    fail(format!(
                        "truncated: {file_len} bytes end before the length of vector {i} at \
                         byte {offset}"
                    ))
                })?;
            let n = u32::from_be_bytes(word) as usize;
            if n > SRS_MAX_VECTOR {
                return Err(fail(format!(
                    "vector {i} claims {n} points, more than an SRS holds ({SRS_MAX_VECTOR})"
                )));
            }
            lengths[i] = n;
            offset += 4 + n as u64 * point;
        }
        if file_len != offset {
            return Err(fail(format!(
                "{}: {file_len} bytes, its vectors' lengths ({lengths:?}) make {offset}",
                if file_len < offset {
                    "truncated"
                } else {
                    "trailing bytes"
                }
            )));
        }
        let usable = lengths
            .iter()
            .copied()
            .min()
            .unwrap_or(0)
            .min(SRS_READ_LIMIT);
        let max_proofs = if usable >= 4 {
            1usize << (usable / 2).ilog2()
        } else {
            0
        };
        let needed = padded_len(proofs);
        if needed > max_proofs {
            return Err(fail(format!(
                "aggregates at most {max_proofs} proofs (vectors of {lengths:?} points), \
                 {needed} are needed"
            )));
        }
        Ok(SrsSummary {
            path,
            lengths,
            max_proofs,
            file_len,
        })
    }

    /// Makes a **test** SRS from `seed` (bellperson's `setup_fake_srs`:
    /// whoever knows the seed can forge aggregates) for up to `max_proofs`
    /// proofs, and writes it atomically under the official name, in the
    /// official file format.
    pub fn generate_test_srs(&self, seed: u64, max_proofs: usize) -> Result<SrsSummary, Error> {
        let max_proofs = padded_len(max_proofs);
        if 2 * max_proofs > SRS_READ_LIMIT {
            return Err(self.srs_error(format!(
                "a test SRS for {max_proofs} proofs would not be read whole: filecoin-proofs \
                 reads {SRS_READ_LIMIT} points of each vector"
            )));
        }
        std::fs::create_dir_all(self.path()).map_err(|source| Error::Io {
            context: "creating the parameter directory",
            path: self.path().to_path_buf(),
            source,
        })?;
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let srs: GenericSRS<Bls12> = setup_fake_srs(&mut rng, max_proofs);
        let mut bytes = Vec::new();
        srs.write(&mut bytes).map_err(|source| Error::Io {
            context: "serializing the test SRS for",
            path: self.srs_path(),
            source,
        })?;
        write_atomically(&self.srs_path(), &bytes)?;
        self.check_srs(max_proofs)
    }

    fn srs_error(&self, problem: String) -> Error {
        let dir = self.path().display();
        Error::Srs {
            path: self.srs_path(),
            dir: self.path().to_path_buf(),
            problem,
            hint: format!(
                "`cuzk fixtures fetch --srs --dir {dir}` (the official file, checked against its \
                 published digest), or `cuzk fixtures keys --srs --dir {dir}` (a test SRS from a \
                 seed)"
            ),
        }
    }
}

/// One sector's part of an aggregate: its partition proofs (192 bytes
/// each, in partition order, as `seal_commit_phase2_circuit_proofs` or an
/// interactive `seal_commit_phase2` writes them) and what the aggregate and
/// its verifier take from its C1: comm_r, the seed, and each partition's
/// public inputs (derived from the C1's replica id, as `get_seal_inputs`
/// derives them from the prover and sector ids).
#[derive(Clone, Debug)]
pub struct CommitProofs {
    /// The proof type.
    pub proof_type: ProofType,
    /// comm_r.
    pub comm_r: [u8; 32],
    /// The interactive seed (a non-interactive aggregate's transcript does
    /// not include it).
    pub seed: [u8; 32],
    /// The verifier's public inputs of each partition.
    pub inputs: Vec<Vec<Fr>>,
    /// The partition proofs.
    pub proofs: Vec<u8>,
}

impl CommitProofs {
    /// The part of `c1`'s sector, with its partition proofs; the proofs'
    /// length must be the proof type's partitions × 192 bytes.
    pub fn new(c1: &C1Input, proofs: Vec<u8>) -> Result<Self, Error> {
        let pt = c1.proof_type;
        let expected = pt.partitions() * PROOF_LEN;
        if proofs.len() != expected {
            return Err(Error::Aggregate(format!(
                "{} bytes of partition proofs; {} has {} partitions of {PROOF_LEN} bytes \
                 ({expected} bytes){}",
                proofs.len(),
                pt.name(),
                pt.partitions(),
                if pt.is_non_interactive() {
                    " (a non-interactive C2 output is already an aggregate: aggregate the \
                     partition proofs, `cuzk porep-c2 --partition-proofs`)"
                } else {
                    ""
                }
            )));
        }
        Ok(CommitProofs {
            proof_type: pt,
            comm_r: c1.output.comm_r,
            seed: c1.output.seed,
            inputs: public_inputs(c1)?,
            proofs,
        })
    }
}

/// The verifier's public inputs of every partition of `c1`, in order.
pub(crate) fn public_inputs(c1: &C1Input) -> Result<Vec<Vec<Fr>>, Error> {
    with_sector_shape!(c1.proof_type.sector_size(), public_inputs_typed, c1)
}

fn public_inputs_typed<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
) -> Result<Vec<Vec<Fr>>, Error> {
    let s = sector::<Tree>(c1)?;
    (0..c1.proof_type.partitions())
        .map(|k| {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::generate_public_inputs(
                &s.inputs,
                &s.params.vanilla_params,
                Some(k),
            )
            .map_err(|e| Error::filecoin("deriving the public inputs", e))
        })
        .collect()
}

/// Checks what can be checked before aggregating: 1 to [`MAX_SECTORS`]
/// sectors, all of one proof type, and an SRS in filecoin-proofs'
/// parameter cache large enough. Returns the proof type and the number of
/// proofs the aggregate holds (padded).
fn check_sectors(sectors: &[CommitProofs]) -> Result<(ProofType, usize), Error> {
    let Some(first) = sectors.first() else {
        return Err(Error::Aggregate("no sectors to aggregate".into()));
    };
    if sectors.len() > MAX_SECTORS {
        return Err(Error::Aggregate(format!(
            "{} sectors; an aggregate takes 1 to {MAX_SECTORS} (FIP-0092)",
            sectors.len()
        )));
    }
    let pt = first.proof_type;
    if let Some((i, other)) = sectors.iter().enumerate().find(|(_, s)| s.proof_type != pt) {
        return Err(Error::Aggregate(format!(
            "sector {i} is {} but sector 0 is {}: one aggregate holds proofs of one proof type \
             (one sector size, one verifying key)",
            other.proof_type.name(),
            pt.name()
        )));
    }
    let proofs = sectors.len() * pt.partitions();
    ParamsDir::filecoin().check_srs(proofs)?;
    Ok((pt, padded_len(proofs)))
}

/// Aggregates the sectors' partition proofs with filecoin-proofs'
/// `aggregate_seal_commit_proofs` (SnarkPack v2): the same bytes, since it
/// is the same call. Checks first (see `check_sectors`); filecoin-proofs
/// reads the verifying key and the SRS from its parameter cache.
pub fn aggregate(sectors: &[CommitProofs]) -> Result<Vec<u8>, Error> {
    let (pt, _) = check_sectors(sectors)?;
    let comm_rs: Vec<[u8; 32]> = sectors.iter().map(|s| s.comm_r).collect();
    let seeds: Vec<[u8; 32]> = sectors.iter().map(|s| s.seed).collect();
    let outputs: Vec<SealCommitPhase2Output> = sectors
        .iter()
        .map(|s| SealCommitPhase2Output {
            proof: s.proofs.clone(),
        })
        .collect();
    filecoin_proofs_api::seal::aggregate_seal_commit_proofs(
        pt.registered(),
        VERSION_USED,
        &comm_rs,
        &seeds,
        &outputs,
    )
    .map_err(|e| Error::filecoin("aggregate_seal_commit_proofs", e))
}

/// A non-interactive sector's C2 output: the aggregate of its own
/// partition proofs, as `seal_commit_phase2` makes it.
pub fn seal_proof(c1: &C1Input, partition_proofs: Vec<u8>) -> Result<Vec<u8>, Error> {
    if !c1.proof_type.is_non_interactive() {
        return Err(Error::Aggregate(format!(
            "{} is interactive: its C2 output is its partition proofs, not an aggregate",
            c1.proof_type.name()
        )));
    }
    aggregate(&[CommitProofs::new(c1, partition_proofs)?])
}

/// Checks that `aggregate` aggregates exactly the sectors' proof count
/// (padded) and that the SRS holds that many, so that the verifier neither
/// panics nor reads past the SRS; returns the proof type.
pub(crate) fn check_aggregate(
    sectors: &[CommitProofs],
    aggregate: &[u8],
) -> Result<ProofType, Error> {
    let (pt, padded) = check_sectors(sectors)?;
    let proof = AggregateProof::<Bls12>::read(aggregate)
        .map_err(|e| Error::InvalidAggregate(format!("the aggregate does not decode: {e}")))?;
    let n = proof.tmipp.gipa.nproofs as usize;
    if n != padded {
        return Err(Error::InvalidAggregate(format!(
            "the aggregate holds {n} proofs, {} sector(s) of {} have {} partition proofs \
             ({padded} padded)",
            sectors.len(),
            pt.name(),
            sectors.len() * pt.partitions()
        )));
    }
    Ok(pt)
}

/// Verifies an aggregate of the sectors' proofs (their `proofs` are not
/// read) with filecoin-proofs' `verify_aggregate_seal_commit_proofs`
/// (SnarkPack v2), on the public inputs derived from their C1s. An invalid
/// aggregate is an error.
pub fn verify_aggregate(sectors: &[CommitProofs], aggregate: &[u8]) -> Result<(), Error> {
    let pt = check_aggregate(sectors, aggregate)?;
    let comm_rs: Vec<[u8; 32]> = sectors.iter().map(|s| s.comm_r).collect();
    let seeds: Vec<[u8; 32]> = sectors.iter().map(|s| s.seed).collect();
    let inputs: Vec<Vec<Fr>> = sectors.iter().flat_map(|s| s.inputs.clone()).collect();
    let valid = filecoin_proofs_api::seal::verify_aggregate_seal_commit_proofs(
        pt.registered(),
        VERSION_USED,
        aggregate.to_vec(),
        &comm_rs,
        &seeds,
        inputs,
    )
    .map_err(|e| Error::filecoin("verify_aggregate_seal_commit_proofs", e))?;
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidProof(
            "rejected by filecoin-proofs' verify_aggregate_seal_commit_proofs",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_srs_name_is_the_manifests() {
        let name = srs_file_name();
        assert_eq!(name, "v28-fil-inner-product-v1.srs");
        assert!(storage_proofs_core::parameter_cache::SRS_PARAMETERS.contains_key(&name));
    }

    #[test]
    fn padding_is_filecoin_proofs() {
        for (n, padded) in [
            (1, 2),
            (2, 2),
            (3, 4),
            (13, 16),
            (26, 32),
            (845, 1024),
            (8190, 8192),
        ] {
            assert_eq!(padded_len(n), padded, "{n}");
        }
    }

    #[test]
    fn a_test_srs_is_checked_and_its_damage_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ParamsDir::new(tmp.path());
        let missing = dir.check_srs(2).unwrap_err().to_string();
        for want in [
            "v28-fil-inner-product-v1.srs",
            "not found",
            "cuzk fixtures fetch --srs",
        ] {
            assert!(missing.contains(want), "{missing}");
        }
        let made = dir.generate_test_srs(7, 16).unwrap();
        assert_eq!(made.lengths, [32; 4]);
        assert_eq!(made.max_proofs, 16);
        assert_eq!(made.file_len, 16 + 32 * (48 + 48 + 96 + 96));
        // bellperson reads it back as written, and the same seed makes the same file.
        let bytes = std::fs::read(&made.path).unwrap();
        let read = GenericSRS::<Bls12>::read(&mut &bytes[..]).unwrap();
        assert_eq!(read, setup_fake_srs(&mut ChaCha20Rng::seed_from_u64(7), 16));
        let too_many = dir.check_srs(17).unwrap_err().to_string();
        assert!(too_many.contains("at most 16 proofs"), "{too_many}");
        std::fs::write(&made.path, &bytes[..bytes.len() - 1]).unwrap();
        let truncated = dir.check_srs(2).unwrap_err().to_string();
        assert!(truncated.contains("truncated"), "{truncated}");
        std::fs::write(&made.path, &bytes[..3]).unwrap();
        let stub = dir.check_srs(2).unwrap_err().to_string();
        assert!(stub.contains("truncated"), "{stub}");
    }
}
