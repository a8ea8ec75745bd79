//! Commit phase 2 on cuzk: the partition circuits built as filecoin-proofs'
//! `seal_commit_phase2` builds them (proved through an engine as a
//! [`crate::PorepSource`]), and the proofs checked by the Filecoin crates'
//! own verifier.
//!
//! The facts followed (filecoin-proofs 19.1, storage-proofs 19.1): the public
//! inputs are `{replica_id, tau: {comm_d, comm_r}, seed, k: None}`; partition
//! `k` is `StackedCompound::circuit(inputs, default, vanilla_proofs[k],
//! vanilla_params, Some(k))`; partitions are proved in order, one Groth16
//! proof each, r for every partition drawn before any s (bellperson's batch
//! order); the output is the proofs' 192-byte encodings concatenated.

use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::proof::PROOF_LEN;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher,
    MerkleTreeTrait, PoRepConfig, VanillaSealProof,
};
use filecoin_proofs_api::SectorId;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_porep::stacked::{
    ChallengeRequirements, PublicInputs, StackedCircuit, StackedCompound, StackedDrg, Tau,
};

use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error};

/// The sector a C1 output is proved for, when the caller knows it: with it,
/// the replica id is checked before proving and the proof is verified with
/// filecoin-proofs' `verify_seal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorIdentity {
    /// The prover id (the miner actor's id address payload, zero-padded).
    pub prover_id: [u8; 32],
    /// The sector number.
    pub sector_id: u64,
}

impl SectorIdentity {
    /// The identity of sector `sector_id` of miner actor `f0<actor_id>`:
    /// the prover id is the id address payload (the actor id as an unsigned
    /// LEB128 varint), zero-padded to 32 bytes, as Lotus and Curio derive it.
    pub fn from_actor(actor_id: u64, sector_id: u64) -> Self {
        let mut prover_id = [0u8; 32];
        let mut v = actor_id;
        let mut i = 0;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                prover_id[i] = byte;
                break;
            }
            prover_id[i] = byte | 0x80;
            i += 1;
        }
        SectorIdentity {
            prover_id,
            sector_id,
        }
    }
}

/// How a proof was verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// filecoin-proofs' `verify_seal`, with the prover and sector id.
    VerifySeal,
    /// storage-proofs' `StackedCompound::verify` on the C1's own replica id
    /// (what `verify_seal` does after deriving the replica id), used when
    /// the prover id is not known; for a non-interactive type,
    /// `verify_aggregate_seal_commit_proofs` on the inputs of that replica id.
    ReplicaId,
}

/// Verifies proof bytes for `c1` with the Filecoin crates' verifier. With a
/// sector identity this is `verify_seal` (which reads the `.vk` from
/// filecoin-proofs' parameter cache, `FIL_PROOFS_PARAMETER_CACHE`); without,
/// `StackedCompound::verify` on the C1's replica id with `vk`. An invalid
/// proof is an error.
///
/// For a non-interactive proof type, `proof` is the C2 output, the
/// SnarkPack aggregate of the partition proofs ([`crate::seal_proof`]); it
/// is checked to aggregate the proof type's partition count and the SRS to
/// be whole first, then verified by `verify_seal` (which verifies the
/// aggregate) or, without a sector identity,
/// `verify_aggregate_seal_commit_proofs` on the C1's replica id.
/// filecoin-proofs reads the verifying key and the SRS from its parameter
/// cache; `vk` is not used.
pub fn verify(
    c1: &C1Input,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
    sector: Option<&SectorIdentity>,
) -> Result<Verified, Error> {
    if c1.proof_type.is_non_interactive() {
        return verify_non_interactive(c1, proof, sector);
    }
    let expected = c1.proof_type.partitions() * PROOF_LEN;
    if proof.len() != expected {
        return Err(Error::InvalidProof(if proof.len() < expected {
            "too short for the proof type's partitions"
        } else {
            "too long for the proof type's partitions"
        }));
    }
    match sector {
        Some(s) => verify_seal(c1, s, proof),
        None => {
            let valid = with_sector_shape!(
                c1.proof_type.sector_size(),
                verify_replica_typed,
                c1,
                proof,
                vk
            )?;
            if valid {
                Ok(Verified::ReplicaId)
            } else {
                Err(Error::InvalidProof(
                    "rejected by StackedCompound::verify on the C1's replica id",
                ))
            }
        }
    }
}

/// filecoin-proofs' `verify_seal` of `proof` for `c1`'s sector `s` (an
/// interactive proof or a non-interactive aggregate: it tells them apart).
fn verify_seal(c1: &C1Input, s: &SectorIdentity, proof: &[u8]) -> Result<Verified, Error> {
    let o = &c1.output;
    let valid = filecoin_proofs_api::seal::verify_seal(
        c1.proof_type.registered(),
        o.comm_r,
        o.comm_d,
        s.prover_id,
        SectorId::from(s.sector_id),
        o.ticket,
        o.seed,
        proof,
    )
    .map_err(|e| Error::filecoin("verify_seal", e))?;
    if valid {
        Ok(Verified::VerifySeal)
    } else {
        Err(Error::InvalidProof(
            "rejected by filecoin-proofs' verify_seal",
        ))
    }
}

fn verify_non_interactive(
    c1: &C1Input,
    proof: &[u8],
    sector: Option<&SectorIdentity>,
) -> Result<Verified, Error> {
    // The verifier derives the inputs itself; the proofs are not read.
    let this = crate::aggregate::CommitProofs {
        proof_type: c1.proof_type,
        comm_r: c1.output.comm_r,
        seed: c1.output.seed,
        inputs: crate::aggregate::public_inputs(c1)?,
        proofs: Vec::new(),
    };
    match sector {
        Some(s) => {
            crate::aggregate::check_aggregate(std::slice::from_ref(&this), proof)?;
            verify_seal(c1, s, proof)
        }
        None => {
            crate::aggregate::verify_aggregate(std::slice::from_ref(&this), proof)?;
            Ok(Verified::ReplicaId)
        }
    }
}

/// Everything the generic steps share: the configuration, the public
/// inputs, and the compound public parameters.
pub(crate) struct Sector<Tree: 'static + MerkleTreeTrait> {
    pub(crate) config: PoRepConfig,
    pub(crate) inputs: PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    pub(crate) params:
        compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>,
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

pub(crate) fn sector<Tree: 'static + MerkleTreeTrait>(c1: &C1Input) -> Result<Sector<Tree>, Error> {
    let config = c1.proof_type.config();
    let o = &c1.output;
    let comm_r: <Tree::Hasher as Hasher>::Domain = as_safe_commitment(&o.comm_r, "comm_r")
        .map_err(|e| Error::Tampered(format!("comm_r: {e:#}")))?;
    let comm_d = DefaultPieceDomain::try_from_bytes(&o.comm_d)
        .map_err(|e| Error::Tampered(format!("comm_d: {e:#}")))?;
    let replica_fr: Fr = o.replica_id.into();
    let inputs = PublicInputs {
        replica_id: replica_fr.into(),
        tau: Some(Tau { comm_d, comm_r }),
        k: None,
        seed: Some(o.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config)
            .map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?,
        partitions: Some(c1.proof_type.partitions()),
        priority: false,
    };
    let params = <Compound<Tree> as CompoundProof<_, _>>::setup(&setup)
        .map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?;
    Ok(Sector {
        config,
        inputs,
        params,
    })
}

pub(crate) fn vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
) -> Result<Vec<Vec<VanillaSealProof<Tree>>>, Error> {
    c1.output
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e| Error::filecoin("reading the vanilla proofs", e))
}

/// One partition: its circuit and the public inputs the verifier derives for it.
pub struct Partition<Tree: 'static + MerkleTreeTrait> {
    /// The circuit, as `seal_commit_phase2` builds it.
    pub circuit: StackedCircuit<Tree, DefaultPieceHasher>,
    /// Its public inputs (without the leading ONE).
    pub public_inputs: Vec<Fr>,
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for Partition<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("public_inputs", &self.public_inputs.len())
            .finish_non_exhaustive()
    }
}

/// The partition circuits of `c1`, in partition order, exactly as
/// `seal_commit_phase2` builds them, with the public inputs Filecoin's
/// verifier derives for each. `Tree` must be the sector shape of
/// `c1.proof_type` (filecoin-proofs' `SectorShape2KiB` and so on).
pub fn partition_circuits<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
) -> Result<Vec<Partition<Tree>>, Error> {
    let s = sector::<Tree>(c1)?;
    let vanilla = vanilla_proofs::<Tree>(c1)?;
    vanilla
        .iter()
        .enumerate()
        .map(|(k, partition)| {
            let circuit = <Compound<Tree> as CompoundProof<_, _>>::circuit(
                &s.inputs,
                (),
                partition,
                &s.params.vanilla_params,
                Some(k),
            )
            .map_err(|e| Error::filecoin("building the partition circuit", e))?;
            let inputs = <Compound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
                &s.inputs,
                &s.params.vanilla_params,
                Some(k),
            )
            .map_err(|e| Error::filecoin("deriving the public inputs", e))?;
            Ok(Partition {
                circuit,
                public_inputs: inputs,
            })
        })
        .collect()
}

fn verify_replica_typed<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
) -> Result<bool, Error> {
    let s = sector::<Tree>(c1)?;
    let pvk = groth16::prepare_verifying_key(vk);
    let multi = MultiProof::new_from_bytes(Some(c1.proof_type.partitions()), proof, &pvk)
        .map_err(|e| Error::filecoin("reading the proof", e))?;
    <Compound<Tree> as CompoundProof<_, _>>::verify(
        &s.params,
        &s.inputs,
        &multi,
        &ChallengeRequirements {
            minimum_challenges: s.config.minimum_challenges(),
        },
    )
    .map_err(|e| Error::filecoin("verifying the proof", e))
}

pub(crate) fn hex_prefix(bytes: &[u8]) -> String {
    let used = bytes.iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
    bytes[..used].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_the_id_address_payload() {
        // f01000: 1000 = 0b111_1101000 -> LEB128 e8 07.
        let check = |actor, bytes: &[u8]| {
            let id = SectorIdentity::from_actor(actor, 5).prover_id;
            assert_eq!(&id[..bytes.len()], bytes, "f0{actor}");
            assert!(id[bytes.len()..].iter().all(|&b| b == 0), "f0{actor}");
        };
        check(0, &[0]);
        check(127, &[0x7f]);
        check(128, &[0x80, 0x01]);
        check(1000, &[0xe8, 0x07]);
        check(
            u64::MAX,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        );
    }
}
