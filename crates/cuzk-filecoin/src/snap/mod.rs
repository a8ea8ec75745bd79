//! SnapDeals (the empty-sector update) on cuzk: from the per-partition
//! vanilla proofs Curio sends (bincode `PartitionProof`s) and the three
//! commitments, the partition circuits built exactly as filecoin-proofs'
//! `generate_empty_sector_update_proof_with_vanilla` builds them, as a
//! `cuzk_pipeline::PartitionSource`, proved by a cuzk `Backend`, and checked
//! by the crates' `verify_empty_sector_update_proof`.
//!
//! The facts followed (filecoin-proofs 19.1, storage-proofs-update 19.1):
//! the public inputs are `{k: partitions, comm_r_old, comm_d_new,
//! comm_r_new, h}` with `h` from `SectorUpdateConfig::from_porep_config`;
//! partition `k` is `EmptySectorUpdateCompound::circuit(inputs, default,
//! vanilla_proofs[k], params, Some(k))`; the proofs are made in batches of
//! at most 10 (storage-proofs-core's `MAX_GROTH16_BATCH_SIZE`), each batch
//! drawing its r values before its s values; the output is the 192-byte
//! proofs concatenated in partition order. The crates' prover does not
//! check the vanilla proofs; here they are checked first
//! (`EmptySectorUpdate::verify_all_partitions`, what the crates'
//! `verify_partition_proofs` does), so a wrong one is refused by name
//! rather than proved into an invalid proof.

#[cfg(feature = "fixtures")]
pub mod synthetic;

use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::proof::PROOF_LEN;
use cuzk_groth16::ProvingKey;
use ff::PrimeField;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    DefaultPieceDomain, MerkleTreeTrait, PartitionProof, SectorUpdateConfig, TreeRHasher,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs,
    PublicParams, SetupParams,
};

use crate::job::{CircuitSource, Synthesis};
use crate::precompile::CircuitSynthesis;
use crate::proof_type::{sector_size_label, with_sector_shape};
use crate::{Error, ProofType};

/// The batch size of storage-proofs-core's `CompoundProof::circuit_proofs`
/// (bellperson proves each batch's partitions together, drawing their r
/// values before their s values): a seeded update job draws its randomness
/// in these batches (`Job::seeded_in_batches`) to reproduce the crates' proof.
pub const UPDATE_PROOF_BATCH: usize = 10;

/// A registered empty-sector-update proof type (every one is supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UpdateType(RegisteredUpdateProof);

impl UpdateType {
    /// All registered update proof types, in registry order.
    pub const ALL: [RegisteredUpdateProof; 5] = {
        use RegisteredUpdateProof::*;
        [
            StackedDrg2KiBV1,
            StackedDrg8MiBV1,
            StackedDrg512MiBV1,
            StackedDrg32GiBV1,
            StackedDrg64GiBV1,
        ]
    };

    /// The proof type.
    pub fn new(proof: RegisteredUpdateProof) -> Self {
        UpdateType(proof)
    }

    /// Looks a proof type up by its registry name (`StackedDrg2KiBV1`: the
    /// update types share their names with the V1 PoRep types).
    pub fn from_name(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|p| format!("{p:?}") == name)
            .map(UpdateType)
            .ok_or_else(|| Error::Unsupported {
                proof_type: name.to_string(),
                why: "not a registered update proof type".into(),
            })
    }

    /// The update type for sectors of a PoRep proof type.
    pub fn for_seal(seal: ProofType) -> Self {
        Self::ALL
            .into_iter()
            .map(UpdateType)
            .find(|u| u.sector_size() == seal.sector_size())
            .expect("every PoRep sector size has an update proof type")
    }

    /// The registered proof.
    pub fn registered(self) -> RegisteredUpdateProof {
        self.0
    }

    /// Its registry name.
    pub fn name(self) -> String {
        format!("{:?}", self.0)
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        u64::from(self.0.sector_size())
    }

    /// Partition circuits, hence 192-byte proofs, per update (16 at 32 GiB):
    /// storage-proofs-update's count, which filecoin-proofs' update config
    /// carries. (filecoin-proofs-api's `RegisteredUpdateProof::partitions`
    /// returns the PoRep's count instead — 10 at 32 GiB, 1 at 8 MiB — so it
    /// is not used.)
    pub fn partitions(self) -> usize {
        usize::from(self.config().update_partitions)
    }

    /// filecoin-proofs' update configuration for it.
    pub fn config(self) -> SectorUpdateConfig {
        SectorUpdateConfig::from_porep_config(&self.0.as_v1_config())
    }

    /// The circuit's identifier in the parameter cache: the one
    /// filecoin-proofs' prover and verifier look the update key up by
    /// (`EmptySectorUpdateCompound`'s cache identifier,
    /// `empty-sector-update-…`). filecoin-proofs-api's
    /// `RegisteredUpdateProof::circuit_identifier` returns the PoRep
    /// circuit's identifier instead, so it is not used.
    pub fn circuit_identifier(self) -> Result<String, Error> {
        with_sector_shape!(self.sector_size(), identifier_typed, self)
    }
}

/// One update to prove: the proof type, the per-partition vanilla proofs
/// as Curio sends them, and the commitments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateRequest {
    update_type: UpdateType,
    vanilla_proofs: Vec<Vec<u8>>,
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
}

impl UpdateRequest {
    /// An update of `update_type`: one bincode `PartitionProof` per
    /// partition, in order, and the 32-byte commitments.
    pub fn new(
        update_type: UpdateType,
        vanilla_proofs: Vec<Vec<u8>>,
        comm_r_old: &[u8],
        comm_r_new: &[u8],
        comm_d_new: &[u8],
    ) -> Result<Self, Error> {
        let commitment = |bytes: &[u8], name: &str| -> Result<[u8; 32], Error> {
            bytes.try_into().map_err(|_| {
                refuse(format!(
                    "{name} is {} bytes; a commitment is 32",
                    bytes.len()
                ))
            })
        };
        let n = update_type.partitions();
        if vanilla_proofs.len() != n {
            return Err(refuse(format!(
                "{} vanilla proofs for {}: it has {n} partition(s), one vanilla proof each",
                vanilla_proofs.len(),
                update_type.name()
            )));
        }
        Ok(UpdateRequest {
            update_type,
            vanilla_proofs,
            comm_r_old: commitment(comm_r_old, "comm_r_old")?,
            comm_r_new: commitment(comm_r_new, "comm_r_new")?,
            comm_d_new: commitment(comm_d_new, "comm_d_new")?,
        })
    }

    /// The proof type.
    pub fn update_type(&self) -> UpdateType {
        self.update_type
    }

    /// The vanilla proofs, as given.
    pub fn vanilla_proofs(&self) -> &[Vec<u8>] {
        &self.vanilla_proofs
    }

    /// comm_r of the sector before the update (the sector key's).
    pub fn comm_r_old(&self) -> &[u8; 32] {
        &self.comm_r_old
    }

    /// comm_r of the updated replica.
    pub fn comm_r_new(&self) -> &[u8; 32] {
        &self.comm_r_new
    }

    /// comm_d of the new data.
    pub fn comm_d_new(&self) -> &[u8; 32] {
        &self.comm_d_new
    }

    /// Checks the encoding: the commitments are field elements, each
    /// vanilla proof is a bincode `PartitionProof` of this sector size with
    /// the partition's challenge count. What they prove is checked when the
    /// circuits are built ([`UpdateSource::new`]).
    pub fn check_encoding(&self) -> Result<(), Error> {
        with_sector_shape!(self.update_type.sector_size(), check_typed, self)
    }

    /// Checks what the vanilla proofs prove, as the crates'
    /// `verify_partition_proofs` does (`EmptySectorUpdate::verify_all_partitions`:
    /// the challenges comm_r_new derives, every opening of tree_r_old,
    /// tree_d_new and tree_r_new against its root, comm_r = H(comm_c, root)
    /// for both replicas, the encoding new = old + data·rho, the apex
    /// leaves), without a key: what [`UpdateSource::new`] checks before it
    /// builds a circuit.
    pub fn check(&self) -> Result<(), Error> {
        with_sector_shape!(self.update_type.sector_size(), check_vanilla_typed, self)
    }
}

fn refuse(problem: String) -> Error {
    Error::BadRequest {
        kind: "SnapDeals update",
        problem,
    }
}

/// The partition circuits of one update as a job for cuzk's engine (see
/// [`CircuitSource`]).
pub type UpdateSource = CircuitSource<Update>;

/// [`CircuitSource`]'s kind for a SnapDeals update.
#[derive(Debug)]
pub enum Update {}

impl CircuitSource<Update> {
    /// The partitions of `request`, to be proved with `key`, synthesized
    /// in full. The vanilla proofs are checked here, before any circuit is
    /// built.
    pub fn new(request: &UpdateRequest, key: &ProvingKey) -> Result<Self, Error> {
        Self::with_synthesis(request, key, &CircuitSynthesis::Full)
    }

    /// [`UpdateSource::new`], synthesized as `synthesis` says.
    pub fn with_synthesis(
        request: &UpdateRequest,
        key: &ProvingKey,
        synthesis: &CircuitSynthesis,
    ) -> Result<Self, Error> {
        let (circuits, inputs) = with_sector_shape!(
            request.update_type.sector_size(),
            erased_circuits,
            request,
            synthesis
        )?;
        let label = format!(
            "SnapDeals update {} ({})",
            request.update_type.name(),
            synthesis.name()
        );
        let defers_abc = synthesis.defers_abc();
        Ok(CircuitSource::from_parts(
            label, key, circuits, inputs, defers_abc,
        ))
    }
}

/// Verifies an update proof: `EmptySectorUpdateCompound::verify` with `vk`,
/// then filecoin-proofs-api's `verify_empty_sector_update_proof` (which
/// reads the `.vk` from `FIL_PROOFS_PARAMETER_CACHE`). An invalid proof is
/// an error.
pub fn verify_update(
    request: &UpdateRequest,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
) -> Result<(), Error> {
    let expected = request.update_type.partitions() * PROOF_LEN;
    if proof.len() != expected {
        return Err(Error::InvalidProof(
            "not 192 bytes per partition of the update type",
        ));
    }
    let valid = with_sector_shape!(
        request.update_type.sector_size(),
        verify_compound_typed,
        request,
        proof,
        vk
    )?;
    if !valid {
        return Err(Error::InvalidProof(
            "rejected by EmptySectorUpdateCompound::verify",
        ));
    }
    let valid = filecoin_proofs_api::update::verify_empty_sector_update_proof(
        request.update_type.registered(),
        proof,
        request.comm_r_old,
        request.comm_r_new,
        request.comm_d_new,
    )
    .map_err(|e| Error::filecoin("verify_empty_sector_update_proof", e))?;
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidProof(
            "rejected by filecoin-proofs' verify_empty_sector_update_proof",
        ))
    }
}

fn identifier_typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    update_type: UpdateType,
) -> Result<String, Error> {
    let params = PublicParams::from_sector_size(update_type.sector_size());
    Ok(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(&params))
}

/// The blank update circuit of `update_type` (one partition), handed to
/// `user` (see [`crate::Circuit::with_blank`]).
pub(crate) fn update_blank<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    update_type: UpdateType,
    user: &mut impl crate::circuit::BlankUse,
) -> Result<(), Error> {
    let params = PublicParams::from_sector_size(update_type.sector_size());
    user.take(<EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        _,
    >>::blank_circuit(&params))
}

/// The crates' public parameters and public inputs of a request.
fn public<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
) -> Result<
    (
        compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
        PublicInputs,
    ),
    Error,
> {
    let ut = request.update_type;
    let config = ut.config();
    // The domains take any 32 bytes; the circuit's inputs are field
    // elements, so a non-canonical commitment is refused here by name.
    let canonical = |bytes: &[u8; 32], name: &str| -> Result<(), Error> {
        if bool::from(Fr::from_repr(*bytes).is_some()) {
            Ok(())
        } else {
            Err(refuse(format!(
                "{name} is not a field element (32 bytes, little-endian, below the BLS12-381 scalar modulus)"
            )))
        }
    };
    canonical(&request.comm_r_old, "comm_r_old")?;
    canonical(&request.comm_r_new, "comm_r_new")?;
    canonical(&request.comm_d_new, "comm_d_new")?;
    let domain = |bytes: &[u8; 32], name: &str| {
        <TreeRHasher as Hasher>::Domain::try_from_bytes(bytes)
            .map_err(|e| refuse(format!("{name}: {e:#}")))
    };
    let comm_r_old = domain(&request.comm_r_old, "comm_r_old")?;
    let comm_r_new = domain(&request.comm_r_new, "comm_r_new")?;
    let comm_d_new = DefaultPieceDomain::try_from_bytes(&request.comm_d_new)
        .map_err(|e| refuse(format!("comm_d_new: {e:#}")))?;
    let partitions = usize::from(config.update_partitions);
    let inputs = PublicInputs {
        k: partitions,
        comm_r_old,
        comm_d_new,
        comm_r_new,
        h: config.h,
    };
    let params = EmptySectorUpdateCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    })
    .map_err(|e| Error::filecoin("setting up the update parameters", e))?;
    Ok((params, inputs))
}

/// The vanilla proofs decoded, each checked for its length and challenge
/// count (not yet for what it proves).
fn decode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
    params: &compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
) -> Result<Vec<PartitionProof<Tree>>, Error> {
    let ut = request.update_type;
    request
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let proof: PartitionProof<Tree> = bincode::deserialize(bytes).map_err(|e| {
                refuse(format!(
                    "vanilla proof {k} is not a bincode PartitionProof of a {} sector: {e}",
                    sector_size_label(ut.sector_size())
                ))
            })?;
            let used = bincode::serialized_size(&proof).unwrap_or(u64::MAX);
            if used != bytes.len() as u64 {
                return Err(refuse(format!(
                    "vanilla proof {k} has {} bytes after its PartitionProof of {used} bytes",
                    bytes.len() as u64 - used.min(bytes.len() as u64)
                )));
            }
            let challenges = params.vanilla_params.challenge_count;
            if proof.challenge_proofs.len() != challenges {
                return Err(refuse(format!(
                    "vanilla proof {k} answers {} challenges; a {} partition answers {challenges}",
                    proof.challenge_proofs.len(),
                    ut.name()
                )));
            }
            Ok(proof)
        })
        .collect()
}

fn check_typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
) -> Result<(), Error> {
    let (params, _) = public::<Tree>(request)?;
    decode::<Tree>(request, &params).map(drop)
}

/// The request's parameters, public inputs and decoded vanilla proofs,
/// once the crates' vanilla verification accepted the proofs.
#[allow(clippy::type_complexity)]
fn verified<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
) -> Result<
    (
        compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
        PublicInputs,
        Vec<PartitionProof<Tree>>,
    ),
    Error,
> {
    let (params, inputs) = public::<Tree>(request)?;
    let proofs = decode::<Tree>(request, &params)?;
    let valid =
        EmptySectorUpdate::<Tree>::verify_all_partitions(&params.vanilla_params, &inputs, &proofs)
            .map_err(|e| refuse(format!("checking the vanilla proofs: {e:#}")))?;
    if !valid {
        return Err(refuse(
            "the vanilla proofs do not prove an update of comm_r_old to comm_r_new with comm_d_new \
             (or are not in partition order)"
                .into(),
        ));
    }
    Ok((params, inputs, proofs))
}

fn check_vanilla_typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
) -> Result<(), Error> {
    verified::<Tree>(request).map(drop)
}

fn erased_circuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
    synthesis: &CircuitSynthesis,
) -> Result<(Vec<Synthesis>, Vec<Vec<Fr>>), Error> {
    let (params, inputs, proofs) = verified::<Tree>(request)?;
    let mut circuits = Vec::with_capacity(proofs.len());
    let mut all_inputs = Vec::with_capacity(proofs.len());
    for (k, proof) in proofs.iter().enumerate() {
        // The update circuit has no component private inputs (`()`).
        let circuit = <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::circuit(
            &inputs,
            (),
            proof,
            &params.vanilla_params,
            Some(k),
        )
        .map_err(|e| Error::filecoin("building an update partition circuit", e))?;
        circuits.push(synthesis.synthesis(
            circuit,
            duplicate_update_circuit,
            format!("update partition {k}"),
        ));
        all_inputs.push(
            <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
                &inputs,
                &params.vanilla_params,
                Some(k),
            )
            .map_err(|e| Error::filecoin("deriving the public inputs", e))?,
        );
    }
    Ok((circuits, all_inputs))
}

/// A copy of an update circuit (the crates' type and its private inputs
/// are `Clone` only for trees that are; every part inside is).
fn duplicate_update_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> EmptySectorUpdateCircuit<Tree> {
    let p = &circuit.priv_inputs;
    EmptySectorUpdateCircuit {
        pub_params: circuit.pub_params.clone(),
        pub_inputs: circuit.pub_inputs.clone(),
        priv_inputs: storage_proofs_update::circuit::PrivateInputs {
            comm_c: p.comm_c,
            root_r_old: p.root_r_old,
            root_r_new: p.root_r_new,
            apex_leafs: p.apex_leafs.clone(),
            challenge_proofs: p.challenge_proofs.clone(),
        },
    }
}

fn verify_compound_typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &UpdateRequest,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
) -> Result<bool, Error> {
    let (params, inputs) = public::<Tree>(request)?;
    let pvk = groth16::prepare_verifying_key(vk);
    let multi = MultiProof::new_from_bytes(Some(request.update_type.partitions()), proof, &pvk)
        .map_err(|e| Error::filecoin("reading the proof", e))?;
    <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::verify(&params, &inputs, &multi, &())
        .map_err(|e| Error::filecoin("verifying the proof", e))
}
