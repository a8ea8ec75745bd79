#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub mod aggregate;
mod c1;
mod check;
mod circuit;
pub mod counts;
mod engine;
mod error;
pub mod fetch;
mod native;
pub mod params;
pub mod poseidon;
mod post;
pub mod precompile;
mod proof_type;
mod prove;
pub mod sample;
mod sdr;
mod snap;
mod synthesis;
pub mod synthetic;
pub mod synthetic_post;
pub mod synthetic_snap;

pub use aggregate::{aggregate, seal_proof, verify_aggregate, CommitProofs, SrsSummary};
pub use c1::{parse_c1, C1Input, CurioSector};
pub use check::check_c1;
pub use circuit::Circuit;
pub use engine::PorepSource;
pub use error::Error;
pub use params::{ParamsDir, TestKeys};
pub use post::{
    post_witness, prove_post, verify_post, PostKind, PostPrep, PostRequest, PostSource, PostType,
    PostVerified,
};
pub use precompile::{CircuitSynthesis, PrecompiledCircuit};
pub use proof_type::{parse_actor_id, parse_sector_size, sector_size_label, ProofType};
pub use prove::{
    partition_circuits, prove_partitions, prove_partitions_with, verify, Partition,
    PartitionReport, SectorIdentity, Verified,
};
pub use snap::{prove_update, verify_update, UpdateRequest, UpdateSource, UpdateType};
pub use synthesis::{
    challenge_circuits, partition_compact_witness, partition_witness, synthesize_challenges,
    synthesize_partition, witness_challenges, PorepSynthesis, SynthesisMode, WitnessSource,
};

use cuzk_groth16::prover::Backend;
use rand_core::RngCore;

/// Commit phase 2 in one call: checks `c1` (and the sector identity when
/// given), reads the keys from `params`, proves every partition on
/// `backend`, and verifies the result with the Filecoin crates (unless
/// `verify_proof` is false). Returns what `seal_commit_phase2` returns: 192
/// bytes per partition, in order, for an interactive type; for a
/// non-interactive one, the SnarkPack aggregate of those (whose SRS
/// filecoin-proofs reads from its own parameter cache, checked first).
pub fn prove_c1(
    c1: &C1Input,
    params: &ParamsDir,
    backend: &dyn Backend,
    sector: Option<&SectorIdentity>,
    rng: &mut dyn RngCore,
    verify_proof: bool,
) -> Result<Vec<u8>, Error> {
    params.check(c1.proof_type)?;
    if c1.proof_type.is_non_interactive() {
        ParamsDir::filecoin().check_srs(c1.proof_type.partitions())?;
    }
    check_c1(c1, sector)?;
    let key = params.load_proving_key(c1.proof_type)?;
    let mut proof = prove_partitions(c1, &key, backend, rng, &mut |_| {})?;
    drop(key);
    if c1.proof_type.is_non_interactive() {
        proof = seal_proof(c1, proof)?;
    }
    if verify_proof {
        let vk = params.load_verifying_key(c1.proof_type)?;
        verify(c1, &proof, &vk, sector)?;
    }
    Ok(proof)
}
