//! The circuits a storage provider proves, as one name space for the
//! parameter cache: each kind's registered proof type knows its circuit
//! identifier (what the official `v28-…` file names are made of), and
//! here is how to build its blank circuit to generate a test key from.

use blstrs::Scalar as Fr;
use cuzk_groth16::setup::FixedBase;
use cuzk_groth16::ProvingKey;
use cuzk_synth::precompiled::R1csRef;
use filecoin_proofs::parameters::winning_post_public_params;
use filecoin_proofs::parameters::{public_params, window_post_public_params};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, PoStType};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use crate::proof_type::with_sector_shape;
use crate::snap::update_blank;
use crate::{Error, PostType, ProofType, UpdateType};

/// One circuit with its own key pair: a PoRep proof type's partition
/// circuit, a PoSt type's circuit, or an update type's partition
/// circuit. (The update types' names are those of the V1 PoRep types:
/// [`Circuit::from_name`] reads such a name as the PoRep type.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Circuit {
    /// PoRep commit phase 2 (one circuit per partition, one key).
    Porep(ProofType),
    /// WinningPoSt or WindowPoSt.
    Post(PostType),
    /// The empty-sector update (SnapDeals), one circuit per partition.
    Update(UpdateType),
}

impl From<ProofType> for Circuit {
    fn from(p: ProofType) -> Self {
        Circuit::Porep(p)
    }
}

impl From<PostType> for Circuit {
    fn from(p: PostType) -> Self {
        Circuit::Post(p)
    }
}

impl From<UpdateType> for Circuit {
    fn from(p: UpdateType) -> Self {
        Circuit::Update(p)
    }
}

impl Circuit {
    /// Looks a registered proof type of any kind up by its registry name
    /// (`StackedDrg2KiBV1_1`, `StackedDrgWinning2KiBV1`, …).
    pub fn from_name(name: &str) -> Result<Self, Error> {
        if let Ok(p) = ProofType::from_name(name) {
            return Ok(Circuit::Porep(p));
        }
        if PostType::ALL.iter().any(|p| format!("{p:?}") == name) {
            return Ok(Circuit::Post(PostType::from_name(name)?));
        }
        if ProofType::ALL.iter().any(|p| format!("{p:?}") == name) {
            // A PoRep type that exists but is not supported: say why.
            return Ok(Circuit::Porep(ProofType::from_name(name)?));
        }
        Err(Error::Unsupported {
            proof_type: name.to_string(),
            why: "not a registered PoRep or PoSt proof type".into(),
        })
    }

    /// The registered proof type's name (`StackedDrg2KiBV1_1`, `StackedDrgWinning2KiBV1`).
    pub fn name(self) -> String {
        match self {
            Circuit::Porep(p) => p.name(),
            Circuit::Post(p) => p.name(),
            Circuit::Update(p) => p.name(),
        }
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        match self {
            Circuit::Porep(p) => p.sector_size(),
            Circuit::Post(p) => p.sector_size(),
            Circuit::Update(p) => p.sector_size(),
        }
    }

    /// The circuit's identifier in the parameter cache.
    pub fn circuit_identifier(self) -> Result<String, Error> {
        match self {
            Circuit::Porep(p) => p.circuit_identifier(),
            Circuit::Post(p) => p.circuit_identifier(),
            Circuit::Update(p) => p.circuit_identifier(),
        }
    }

    /// The official file name of the proving key (`v28-…​.params`).
    pub fn params_file_name(self) -> Result<String, Error> {
        Ok(parameter_id(&self.circuit_identifier()?))
    }

    /// The official file name of the verifying key (`v28-…​.vk`).
    pub fn vk_file_name(self) -> Result<String, Error> {
        Ok(verifying_key_id(&self.circuit_identifier()?))
    }

    /// A test key for the circuit, from the crates' blank circuit and a
    /// ChaCha20 RNG seeded with `seed` (bellperson's generator's draw order).
    pub(crate) fn generate_key(
        self,
        seed: u64,
        fixed_base: &dyn FixedBase,
    ) -> Result<ProvingKey, Error> {
        struct KeyGen<'a> {
            seed: u64,
            fixed_base: &'a dyn FixedBase,
            key: Option<ProvingKey>,
        }
        impl BlankUse for KeyGen<'_> {
            fn take<C: bellperson::Circuit<Fr>>(&mut self, circuit: C) -> Result<(), Error> {
                self.key = Some(key_from_blank(circuit, self.seed, self.fixed_base)?);
                Ok(())
            }
        }
        let mut keygen = KeyGen {
            seed,
            fixed_base,
            key: None,
        };
        self.with_blank(None, &mut keygen)?;
        Ok(keygen.key.expect("with_blank hands the circuit over"))
    }

    /// Builds the circuit's blank circuit (the one its key is generated
    /// from: every value missing) and hands it to `user`: the one place
    /// each kind's is built, for key generation, counting and recording.
    /// `sectors` builds a PoSt of that many sectors instead of its own
    /// count (the counts extend 1 and 2 sectors to a WindowPoSt
    /// partition); the other kinds ignore it.
    pub(crate) fn with_blank(
        self,
        sectors: Option<usize>,
        user: &mut impl BlankUse,
    ) -> Result<(), Error> {
        match self {
            Circuit::Porep(p) => with_sector_shape!(p.sector_size(), porep_blank, p, user),
            Circuit::Post(p) => {
                with_sector_shape!(p.sector_size(), post_blank, p, sectors, user)
            }
            Circuit::Update(u) => with_sector_shape!(u.sector_size(), update_blank, u, user),
        }
    }
}

/// What is done with a blank circuit, whatever its type (see
/// [`Circuit::with_blank`]); the user keeps what it makes.
pub(crate) trait BlankUse {
    /// Uses `circuit`.
    fn take<C: bellperson::Circuit<Fr>>(&mut self, circuit: C) -> Result<(), Error>;
}

/// The RNG of every test key: ChaCha20 seeded with `seed`.
fn key_rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

pub(crate) fn key_from_blank<C: bellperson::Circuit<blstrs::Scalar>>(
    circuit: C,
    seed: u64,
    fixed_base: &dyn FixedBase,
) -> Result<ProvingKey, Error> {
    cuzk_groth16::setup::generate_key_with(circuit, &mut key_rng(seed), fixed_base)
        .map_err(|e| Error::filecoin("generating the test key", e))
}

/// [`key_from_blank`] from the blank circuit's recording instead of the
/// circuit itself: the same key, without synthesizing it again.
pub(crate) fn key_from_recording(
    recording: R1csRef<'_>,
    seed: u64,
    fixed_base: &dyn FixedBase,
) -> Result<ProvingKey, Error> {
    cuzk_groth16::setup::generate_from_recording(recording, &mut key_rng(seed), fixed_base)
        .map_err(|e| Error::filecoin("generating the test key from the recording", e))
}

fn porep_blank<Tree: 'static + MerkleTreeTrait>(
    proof_type: ProofType,
    user: &mut impl BlankUse,
) -> Result<(), Error> {
    let vanilla = public_params::<Tree>(&proof_type.config())
        .map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?;
    user.take(
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&vanilla),
    )
}

fn post_blank<Tree: 'static + MerkleTreeTrait>(
    post_type: PostType,
    sectors: Option<usize>,
    user: &mut impl BlankUse,
) -> Result<(), Error> {
    let mut config = post_type.config();
    if let Some(n) = sectors {
        config.sector_count = n;
    }
    let vanilla = match config.typ {
        PoStType::Winning => winning_post_public_params::<Tree>(&config),
        PoStType::Window => window_post_public_params::<Tree>(&config),
    }
    .map_err(|e| Error::filecoin("setting up the PoSt parameters", e))?;
    user.take(<FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&vanilla))
}
