#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

mod circuit;
pub mod counts;
mod error;
#[cfg(feature = "fetch")]
pub mod fetch;
mod job;
pub mod params;
mod porep;
pub mod poseidon;
mod post;
pub mod precompile;
mod proof_type;
#[cfg(feature = "fixtures")]
pub mod sample;
mod snap;

pub use porep::aggregate;
/// Synthetic sectors (PoRep C1s), made from a seed (`fixtures` feature).
#[cfg(feature = "fixtures")]
pub use porep::synthetic;
/// Synthetic PoSt vanilla proofs (`fixtures` feature).
#[cfg(feature = "fixtures")]
pub use post::synthetic as synthetic_post;
/// Synthetic SnapDeals vanilla proofs (`fixtures` feature).
#[cfg(feature = "fixtures")]
pub use snap::synthetic as synthetic_snap;

pub use aggregate::{aggregate, seal_proof, verify_aggregate, CommitProofs, SrsSummary};
pub use circuit::Circuit;
pub use error::Error;
pub use job::CircuitSource;
pub use params::{ParamsDir, TestKeys};
pub use porep::c1::{parse_c1, C1Input, CurioSector};
pub use porep::check::check_c1;
pub use porep::prove::{partition_circuits, verify, Partition, SectorIdentity, Verified};
pub use porep::source::{Porep, PorepSource};
pub use porep::synthesis::{
    challenge_circuits, partition_compact_witness, partition_witness, synthesize_challenges,
    synthesize_partition, witness_challenges, PorepSynthesis, SynthesisMode, WitnessSource,
};
pub use post::{
    post_witness, post_witness_observed, post_witness_pooled, verify_post, AuxPool, PostKind,
    PostPrep, PostRequest, PostSource, PostType, PostVerified,
};
pub use precompile::{CircuitSynthesis, PrecompiledCircuit};
pub use proof_type::{parse_actor_id, parse_sector_size, sector_size_label, ProofType};
pub use snap::{
    verify_update, Update, UpdateRequest, UpdateSource, UpdateType, UPDATE_PROOF_BATCH,
};

use std::sync::Arc;

use cuzk_pipeline::{Device, EngineConfig, Job, Randomness};

/// Commit phase 2 in one call: checks `c1` (and the sector identity when
/// given), reads the keys from `params`, proves every partition through a
/// serial scheduler on `device` (each proof checked against the verifier's
/// inputs by the engine's epilogue when `verify_proof`), and verifies the
/// result with the Filecoin crates (unless `verify_proof` is false). Returns
/// what `seal_commit_phase2` returns: 192 bytes per partition, in order, for
/// an interactive type; for a non-interactive one, the SnarkPack aggregate
/// of those (whose SRS filecoin-proofs reads from its own parameter cache,
/// checked first). A `Seeded` randomness gives bellperson's proof for the
/// same seed.
pub fn prove_c1(
    c1: &C1Input,
    params: &ParamsDir,
    device: Device,
    sector: Option<&SectorIdentity>,
    randomness: Randomness,
    verify_proof: bool,
) -> Result<Vec<u8>, Error> {
    params.check(c1.proof_type)?;
    if c1.proof_type.is_non_interactive() {
        ParamsDir::filecoin().check_srs(c1.proof_type.partitions())?;
    }
    check_c1(c1, sector)?;
    let key = Arc::new(params.load_proving_key(c1.proof_type)?);
    let source = PorepSource::new(c1, &key)?;
    let mut job = Job::new(Arc::new(source), key);
    job.randomness = randomness;
    let mut config = EngineConfig::default();
    config.devices = vec![device];
    config.verify = verify_proof;
    let out = cuzk_sched_serial::prove_one(config, job)?;
    let mut proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
    if c1.proof_type.is_non_interactive() {
        proof = seal_proof(c1, proof)?;
    }
    if verify_proof {
        let vk = params.load_verifying_key(c1.proof_type)?;
        verify(c1, &proof, &vk, sector)?;
    }
    Ok(proof)
}
