//! WinningPoSt and one WindowPoSt partition on cuzk: from the per-sector
//! vanilla proofs Curio sends (bincode `FallbackPoStSectorProof`s), the
//! randomness and the prover id, the one circuit built exactly as
//! filecoin-proofs' `generate_winning_post_with_vanilla` and
//! `generate_single_window_post_with_vanilla` build it, as a
//! `cuzk_pipeline::PartitionSource` of one partition, proved by a cuzk
//! `Backend`, and checked by the crates' own verifier.
//!
//! The facts followed (filecoin-proofs 19.1, storage-proofs-post 19.1):
//!
//! * WinningPoSt: exactly `sector_count` (1) vanilla proofs; the public
//!   inputs of the prover are `{randomness, prover_id, sectors: one per
//!   vanilla proof, k: None}`; `partition_vanilla_proofs` unrolls the one
//!   sector proof's 66 inclusion proofs into 66 "sectors" of one challenge
//!   (the setup's `sector_count` is 66, `challenge_count` 1), checking them
//!   against the challenges; the circuit is `FallbackPoStCompound::circuit(…,
//!   Some(0))`. The verifier lists the sector 66 times, so its public inputs
//!   are derived from that list, not from the prover's.
//! * WindowPoSt: at most `sector_count` vanilla proofs (one partition), in
//!   the order given; `k: Some(partition_index)`;
//!   `single_partition_vanilla_proofs` checks them and pads a short
//!   partition by repeating the last sector's proof (the circuit and the
//!   public inputs repeat the last sector too); the circuit is built with
//!   `Some(0)`, as `prove_with_vanilla` numbers its one partition.
//! * The output is the one Groth16 proof's 192 bytes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{PartitionSource, SourceError};
use cuzk_synth::precompiled::Witness;
use cuzk_synth::CircuitShape;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType,
};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_post::fallback::{
    self, ChallengeRequirements, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound,
    PublicSector,
};

use crate::job::{shape_from_key, Synthesis};
use crate::precompile::CircuitSynthesis;
use crate::proof_type::{sector_size_label, with_sector_shape};
use crate::{Error, ProofType, WitnessSource};

mod native;
mod pool;
mod source;
#[cfg(feature = "fixtures")]
pub mod synthetic;
mod typed;

use native::NativePost;
pub use pool::AuxPool;
pub use source::PostSource;
pub(crate) use typed::erased_circuit;
use typed::{sectors_typed, verify_compound_typed, witness_typed};

/// Which PoSt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PostKind {
    /// WinningPoSt: one sector, 66 challenges, for a block (seconds count).
    Winning,
    /// WindowPoSt: up to `sector_count` sectors per partition, 10 challenges each.
    Window,
}

impl PostKind {
    fn name(self) -> &'static str {
        match self {
            PostKind::Winning => "WinningPoSt",
            PostKind::Window => "WindowPoSt",
        }
    }
}

/// A registered PoSt proof type that cuzk proves: every WinningPoSt type
/// and the V1_2 WindowPoSt types. The V1 WindowPoSt types (ApiVersion
/// 1.0.0, replaced by V1_2 to fix challenge grinding) are refused: the
/// crates' single-partition prover derives partition `k`'s challenges as
/// partition 0's, which is right for V1_2 only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostType(RegisteredPoStProof);

impl PostType {
    /// All registered PoSt proof types, supported or not, in registry order.
    pub const ALL: [RegisteredPoStProof; 15] = {
        use RegisteredPoStProof::*;
        [
            StackedDrgWinning2KiBV1,
            StackedDrgWinning8MiBV1,
            StackedDrgWinning512MiBV1,
            StackedDrgWinning32GiBV1,
            StackedDrgWinning64GiBV1,
            StackedDrgWindow2KiBV1,
            StackedDrgWindow8MiBV1,
            StackedDrgWindow512MiBV1,
            StackedDrgWindow32GiBV1,
            StackedDrgWindow64GiBV1,
            StackedDrgWindow2KiBV1_2,
            StackedDrgWindow8MiBV1_2,
            StackedDrgWindow512MiBV1_2,
            StackedDrgWindow32GiBV1_2,
            StackedDrgWindow64GiBV1_2,
        ]
    };

    /// The proof type, or why it is not supported.
    pub fn new(proof: RegisteredPoStProof) -> Result<Self, Error> {
        if proof.typ() == PoStType::Window && proof.version() != ApiVersion::V1_2_0 {
            return Err(Error::Unsupported {
                proof_type: format!("{proof:?}"),
                why: "WindowPoSt before V1_2 is not proved by cuzk (the network takes the V1_2 \
                      types; use the V1_2 type of the same sector size)"
                    .into(),
            });
        }
        Ok(PostType(proof))
    }

    /// Looks a proof type up by its registry name (`StackedDrgWinning2KiBV1`).
    pub fn from_name(name: &str) -> Result<Self, Error> {
        let proof = Self::ALL
            .into_iter()
            .find(|p| format!("{p:?}") == name)
            .ok_or_else(|| Error::Unsupported {
                proof_type: name.to_string(),
                why: "not a registered PoSt proof type".into(),
            })?;
        Self::new(proof)
    }

    /// The WinningPoSt type of a PoRep proof type's sectors.
    pub fn winning_for(seal: ProofType) -> Self {
        Self::of_size(PostKind::Winning, seal.sector_size())
    }

    /// The (V1_2) WindowPoSt type of a PoRep proof type's sectors.
    pub fn window_for(seal: ProofType) -> Self {
        Self::of_size(PostKind::Window, seal.sector_size())
    }

    /// The supported type of `kind` for sectors of `size` bytes (a PoRep
    /// proof type's size: every one has both kinds).
    fn of_size(kind: PostKind, size: u64) -> Self {
        Self::ALL
            .into_iter()
            .filter_map(|p| Self::new(p).ok())
            .find(|p| p.kind() == kind && p.sector_size() == size)
            .expect("every PoRep sector size has a WinningPoSt and a V1_2 WindowPoSt type")
    }

    /// The registered proof.
    pub fn registered(self) -> RegisteredPoStProof {
        self.0
    }

    /// Its registry name.
    pub fn name(self) -> String {
        format!("{:?}", self.0)
    }

    /// Winning or Window.
    pub fn kind(self) -> PostKind {
        match self.0.typ() {
            PoStType::Winning => PostKind::Winning,
            PoStType::Window => PostKind::Window,
        }
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        u64::from(self.0.sector_size())
    }

    /// filecoin-proofs' configuration for it.
    pub fn config(self) -> PoStConfig {
        self.0.as_v1_config()
    }

    /// Sectors per proof: exactly this many for WinningPoSt (1), at most
    /// this many per WindowPoSt partition (2349 at 32 GiB).
    pub fn sector_count(self) -> usize {
        self.0.sector_count()
    }

    /// The circuit's identifier in the parameter cache.
    pub fn circuit_identifier(self) -> Result<String, Error> {
        self.0
            .circuit_identifier()
            .map_err(|e| Error::filecoin("computing the circuit identifier", e))
    }
}

/// One PoSt to prove: the proof type, the chain randomness, the prover id
/// and the per-sector vanilla proofs as Curio sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostRequest {
    post_type: PostType,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: Vec<Vec<u8>>,
    partition_index: usize,
}

impl PostRequest {
    /// A WinningPoSt: `vanilla_proofs` are bincode `FallbackPoStSectorProof`s,
    /// one per challenged sector (`post_type.sector_count()` of them).
    pub fn winning(
        post_type: PostType,
        randomness: &[u8],
        prover_id: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
    ) -> Result<Self, Error> {
        Self::new(
            PostKind::Winning,
            post_type,
            randomness,
            prover_id,
            vanilla_proofs,
            0,
        )
    }

    /// One WindowPoSt partition: the vanilla proofs of its sectors, in
    /// order (at most `post_type.sector_count()`), and its index in the deadline.
    pub fn window(
        post_type: PostType,
        randomness: &[u8],
        prover_id: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
        partition_index: usize,
    ) -> Result<Self, Error> {
        Self::new(
            PostKind::Window,
            post_type,
            randomness,
            prover_id,
            vanilla_proofs,
            partition_index,
        )
    }

    fn new(
        kind: PostKind,
        post_type: PostType,
        randomness: &[u8],
        prover_id: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
        partition_index: usize,
    ) -> Result<Self, Error> {
        let refuse = |problem: String| Error::BadRequest {
            kind: kind.name(),
            problem,
        };
        if post_type.kind() != kind {
            return Err(refuse(format!(
                "{} is a {} proof type",
                post_type.name(),
                post_type.kind().name()
            )));
        }
        let randomness: [u8; 32] = randomness.try_into().map_err(|_| {
            refuse(format!(
                "the randomness is {} bytes; it must be 32 (a field element, little-endian)",
                randomness.len()
            ))
        })?;
        let n = vanilla_proofs.len();
        let count = post_type.sector_count();
        match kind {
            PostKind::Winning if n != count => {
                return Err(refuse(format!(
                    "{n} vanilla proofs for {}: it proves exactly {count} sector(s)",
                    post_type.name()
                )))
            }
            PostKind::Window if n == 0 || n > count => {
                return Err(refuse(format!(
                    "{n} vanilla proofs for one {} partition: it holds 1 to {count} sectors",
                    post_type.name()
                )))
            }
            _ => {}
        }
        Ok(PostRequest {
            post_type,
            randomness,
            prover_id,
            vanilla_proofs,
            partition_index,
        })
    }

    /// The proof type.
    pub fn post_type(&self) -> PostType {
        self.post_type
    }

    /// The randomness.
    pub fn randomness(&self) -> &[u8; 32] {
        &self.randomness
    }

    /// The prover id.
    pub fn prover_id(&self) -> &[u8; 32] {
        &self.prover_id
    }

    /// The WindowPoSt partition index (0 for WinningPoSt).
    pub fn partition_index(&self) -> usize {
        self.partition_index
    }

    /// The vanilla proofs, as given.
    pub fn vanilla_proofs(&self) -> &[Vec<u8>] {
        &self.vanilla_proofs
    }

    /// The sectors proved, with their comm_r, in the order of the vanilla
    /// proofs (decoding them; an undecodable one is an error).
    pub fn sectors(&self) -> Result<Vec<(u64, [u8; 32])>, Error> {
        with_sector_shape!(self.post_type.sector_size(), sectors_typed, self)
    }

    /// Checks the request as the crates' prover does before it builds the
    /// circuit: every vanilla proof decodes, answers the challenges this
    /// randomness, prover id and sector number derive, and opens its
    /// comm_r_last with comm_r = H(comm_c, comm_r_last). Cheap (no
    /// synthesis); [`PostSource::new`] checks the same again.
    pub fn check(&self) -> Result<(), Error> {
        with_sector_shape!(
            self.post_type.sector_size(),
            erased_circuit,
            self,
            &CircuitSynthesis::Full,
            None
        )
        .map(drop)
    }

    fn refuse(&self, problem: String) -> Error {
        Error::BadRequest {
            kind: self.post_type.kind().name(),
            problem,
        }
    }
}

/// What building a PoSt's circuit cost before its synthesis, phase by phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostPrep {
    /// Decoding the vanilla proofs and setting up the crates' parameters.
    pub decode: Duration,
    /// Arranging the vanilla proofs for the circuit (a short WindowPoSt
    /// partition padded) and checking them against the challenges (the
    /// crates' vanilla verifier, on every core).
    pub vanilla_check: Duration,
    /// Building the circuit and deriving the verifier's public inputs.
    pub circuit: Duration,
}

impl PostPrep {
    /// The three phases together.
    pub fn total(&self) -> Duration {
        self.decode + self.vanilla_check + self.circuit
    }
}

impl std::fmt::Display for PostPrep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "decode {:.3}s, vanilla check {:.3}s, circuit {:.3}s",
            self.decode.as_secs_f64(),
            self.vanilla_check.as_secs_f64(),
            self.circuit.as_secs_f64()
        )
    }
}

/// The witness of `request`'s circuit alone (inputs with ONE first, aux),
/// from `source`, and what building the circuit cost before it: for
/// benchmarks and tests. Both sources give the same values.
pub fn post_witness(
    request: &PostRequest,
    source: WitnessSource,
) -> Result<(Witness, PostPrep), Error> {
    post_witness_observed(request, source, &mut |_| {})
}

/// [`post_witness`], calling `built` once between building the circuit
/// and computing its witness (a benchmark's clocks: the witness alone).
pub fn post_witness_observed(
    request: &PostRequest,
    source: WitnessSource,
    built: &mut dyn FnMut(&PostPrep),
) -> Result<(Witness, PostPrep), Error> {
    with_sector_shape!(
        request.post_type.sector_size(),
        witness_typed,
        request,
        source,
        None,
        built
    )
}

/// The native witness of `request`'s circuit, as [`post_witness_observed`]
/// computes it, its aux vector taken from `pool` when it holds one large
/// enough (written over in full). Hand the witness's `aux_assignment` back
/// with [`AuxPool::give_back`] once done with it: the next partition's
/// witness then neither faults in nor zeroes its 4 GB (at 32 GiB).
pub fn post_witness_pooled(
    request: &PostRequest,
    pool: &AuxPool,
    built: &mut dyn FnMut(&PostPrep),
) -> Result<(Witness, PostPrep), Error> {
    with_sector_shape!(
        request.post_type.sector_size(),
        witness_typed,
        request,
        WitnessSource::Native,
        Some(pool),
        built
    )
}

/// How a PoSt proof was verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostVerified {
    /// filecoin-proofs-api's `verify_winning_post` or `verify_window_post`
    /// (which read the `.vk` from `FIL_PROOFS_PARAMETER_CACHE`), after
    /// `FallbackPoStCompound::verify` with the given key.
    FilecoinApi,
    /// `FallbackPoStCompound::verify` with the given key only, on the public
    /// inputs as the crates' prover orders them: a WindowPoSt partition
    /// whose sectors are not in ascending order (`verify_window_post` takes
    /// the sectors as a sorted map, so it proves nothing about such a proof).
    Compound,
}

/// Verifies a PoSt proof with the Filecoin crates' verifier (see
/// [`PostVerified`]). An invalid proof is an error.
pub fn verify_post(
    request: &PostRequest,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
) -> Result<PostVerified, Error> {
    if proof.len() != cuzk_groth16::proof::PROOF_LEN {
        return Err(Error::InvalidProof(
            "a PoSt proof is one 192-byte Groth16 proof",
        ));
    }
    let valid = with_sector_shape!(
        request.post_type.sector_size(),
        verify_compound_typed,
        request,
        proof,
        vk
    )?;
    if !valid {
        return Err(Error::InvalidProof(
            "rejected by FallbackPoStCompound::verify",
        ));
    }
    let sectors = request.sectors()?;
    let pt = request.post_type;
    let replica = |comm_r| PublicReplicaInfo::new(pt.registered(), comm_r);
    let valid = match pt.kind() {
        PostKind::Winning => {
            let replicas: BTreeMap<_, _> = sectors
                .iter()
                .map(|&(id, comm_r)| (SectorId::from(id), replica(comm_r)))
                .collect();
            filecoin_proofs_api::post::verify_winning_post(
                &request.randomness,
                proof,
                &replicas,
                request.prover_id,
            )
            .map_err(|e| Error::filecoin("verify_winning_post", e))?
        }
        PostKind::Window => {
            if !sectors.windows(2).all(|w| w[0].0 < w[1].0) {
                return Ok(PostVerified::Compound);
            }
            let replicas: BTreeMap<_, _> = sectors
                .iter()
                .map(|&(id, comm_r)| (SectorId::from(id), replica(comm_r)))
                .collect();
            filecoin_proofs_api::post::verify_window_post(
                &request.randomness,
                &[(pt.registered(), proof)],
                &replicas,
                request.prover_id,
            )
            .map_err(|e| Error::filecoin("verify_window_post", e))?
        }
    };
    if valid {
        Ok(PostVerified::FilecoinApi)
    } else {
        Err(Error::InvalidProof(match pt.kind() {
            PostKind::Winning => "rejected by filecoin-proofs' verify_winning_post",
            PostKind::Window => "rejected by filecoin-proofs' verify_window_post",
        }))
    }
}
