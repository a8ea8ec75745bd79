//! How a PoRep partition is synthesized: sequentially (the reference,
//! bellperson's order on one thread), challenge by challenge in parallel
//! (the default), or pre-compiled (the recorded R1CS from a cache file, the
//! witness challenge by challenge in parallel, a, b, c by mat-vec). All
//! three give the same `Synthesized`, bit for bit.
//!
//! The challenges are parallel through the crates' own gadgets:
//! `StackedCompound::circuit` on ONE challenge's vanilla proof builds a
//! circuit whose synthesis is the partition's shared preamble (replica id
//! and its bits, the commitments, comm_r = H(comm_c, comm_r_last)) followed
//! by exactly what that challenge synthesizes in the full circuit, inside
//! the root namespace `challenge_0`. cuzk-synth's prefix join strips the
//! preamble from every piece but the first and joins them in order.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use blstrs::Scalar as Fr;
use cuzk_groth16::ProvingKey;
use cuzk_synth::precompiled::{CompactWitness, Witness, WitnessAssignment};
use cuzk_synth::{
    synthesize_piece, synthesize_with_shared_prefix, CircuitShape, PieceError, PieceFault,
    ProvingAssignment, Synthesized,
};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound};

use crate::porep::native::NativePartition;
use crate::porep::prove::{sector, vanilla_proofs};
use crate::precompile::{default_cache_path, PrecompiledCircuit};
use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error, ParamsDir, ProofType};

/// The root namespace in which `StackedCircuit` synthesizes its first
/// challenge: everything before it is the preamble every challenge shares.
pub(crate) const FIRST_CHALLENGE: &str = "challenge_0";

/// The three ways, by name (`--synthesis`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SynthesisMode {
    /// The whole partition circuit on one thread, as bellperson's prover.
    Sequential,
    /// Challenge by challenge on rayon, joined in order (the default).
    #[default]
    Parallel,
    /// The recorded circuit: witness challenge by challenge, a, b, c by
    /// sparse mat-vec.
    Precompiled,
}

impl SynthesisMode {
    /// Every mode, in `--help` order.
    pub const ALL: [SynthesisMode; 3] = [
        SynthesisMode::Sequential,
        SynthesisMode::Parallel,
        SynthesisMode::Precompiled,
    ];

    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SynthesisMode::Sequential => "sequential",
            SynthesisMode::Parallel => "parallel",
            SynthesisMode::Precompiled => "precompiled",
        }
    }
}

impl fmt::Display for SynthesisMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SynthesisMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a synthesis mode (sequential, parallel, precompiled)")
            })
    }
}

/// How the partitions of a proof are synthesized, with what the mode needs.
#[derive(Clone, Debug, Default)]
pub enum PorepSynthesis {
    /// See [`SynthesisMode::Sequential`].
    Sequential,
    /// See [`SynthesisMode::Parallel`].
    #[default]
    Parallel,
    /// See [`SynthesisMode::Precompiled`]; the recording, opened and checked.
    Precompiled(Arc<PrecompiledCircuit>),
}

impl PorepSynthesis {
    /// The synthesis `mode` asks for. For pre-compiled: the recording at
    /// `cache` (by default beside the key in `params`), opened and checked
    /// against `key` when given; a recording that cannot be used is logged
    /// (the error names the file and why) and the partitions are then
    /// synthesized in full, challenges in parallel. The reason comes back
    /// beside the fallback.
    pub fn for_mode(
        mode: SynthesisMode,
        proof_type: ProofType,
        params: &ParamsDir,
        cache: Option<&Path>,
        key: Option<&ProvingKey>,
    ) -> (Self, Option<Error>) {
        match mode {
            SynthesisMode::Sequential => (PorepSynthesis::Sequential, None),
            SynthesisMode::Parallel => (PorepSynthesis::Parallel, None),
            SynthesisMode::Precompiled => {
                let opened = match cache {
                    Some(path) => Ok(path.to_owned()),
                    None => default_cache_path(params, proof_type),
                }
                .and_then(|path| PrecompiledCircuit::open(&path, proof_type, key));
                match opened {
                    Ok(pre) => (PorepSynthesis::Precompiled(Arc::new(pre)), None),
                    Err(e) => {
                        tracing::warn!(
                            "{e}; synthesizing in full, challenges in parallel (make the file with \
                             `cuzk precompile --proof-type {}`)",
                            proof_type.name()
                        );
                        (PorepSynthesis::Parallel, Some(e))
                    }
                }
            }
        }
    }

    /// The mode's name.
    pub fn mode(&self) -> SynthesisMode {
        match self {
            PorepSynthesis::Sequential => SynthesisMode::Sequential,
            PorepSynthesis::Parallel => SynthesisMode::Parallel,
            PorepSynthesis::Precompiled(_) => SynthesisMode::Precompiled,
        }
    }
}

type Circuit<Tree> = StackedCircuit<Tree, DefaultPieceHasher>;
type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

/// One partition's circuits, built as its mode needs them: the whole
/// circuit (sequential) or one circuit per challenge.
pub(crate) struct PartitionWork<Tree: 'static + MerkleTreeTrait> {
    partition: usize,
    circuits: Circuits<Tree>,
    /// The public inputs Filecoin's verifier derives (without ONE).
    pub(crate) public_inputs: Vec<Fr>,
}

enum Circuits<Tree: 'static + MerkleTreeTrait> {
    Whole(Circuit<Tree>),
    Challenges(Vec<Circuit<Tree>>),
    /// Pre-compiled: what the native witness reads, and the challenge
    /// circuits in case the witness does not fit the recording.
    Native(NativePartition<Tree>, Vec<Circuit<Tree>>),
}

/// The partitions of `c1` (all, or only partition `only`), in order, as
/// `synthesis` will synthesize them.
pub(crate) fn partition_work<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    synthesis: &PorepSynthesis,
    only: Option<usize>,
) -> Result<Vec<PartitionWork<Tree>>, Error> {
    let s = sector::<Tree>(c1)?;
    let vanilla = vanilla_proofs::<Tree>(c1)?;
    let build = |proofs: &Vec<_>, k| {
        <Compound<Tree> as CompoundProof<_, _>>::circuit(
            &s.inputs,
            (),
            proofs,
            &s.params.vanilla_params,
            Some(k),
        )
        .map_err(|e| Error::filecoin("building the partition circuit", e))
    };
    let challenges = |partition: &Vec<filecoin_proofs::VanillaSealProof<Tree>>, k| {
        partition
            .iter()
            .map(|one| build(&vec![one.clone()], k))
            .collect::<Result<Vec<_>, _>>()
    };
    vanilla
        .iter()
        .enumerate()
        .filter(|(k, _)| only.is_none_or(|o| o == *k))
        .map(|(k, partition)| {
            let circuits = match synthesis {
                PorepSynthesis::Sequential => Circuits::Whole(build(partition, k)?),
                PorepSynthesis::Parallel => Circuits::Challenges(challenges(partition, k)?),
                PorepSynthesis::Precompiled(_) => {
                    Circuits::Native(native_partition(&s, partition)?, challenges(partition, k)?)
                }
            };
            let public_inputs = <Compound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
                &s.inputs,
                &s.params.vanilla_params,
                Some(k),
            )
            .map_err(|e| Error::filecoin("deriving the public inputs", e))?;
            Ok(PartitionWork {
                partition: k,
                circuits,
                public_inputs,
            })
        })
        .collect()
}

/// The challenge circuits of every partition of `c1`: partition `k`'s
/// `i`-th is `StackedCompound::circuit` on challenge `i`'s vanilla proof
/// alone. [`synthesize_challenges`] of partition `k`'s equals
/// `cuzk_synth::synthesize` of its whole circuit (as
/// [`crate::partition_circuits`] builds it).
pub fn challenge_circuits<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
) -> Result<Vec<Vec<Circuit<Tree>>>, Error> {
    Ok(partition_work::<Tree>(c1, &PorepSynthesis::Parallel, None)?
        .into_iter()
        .map(|work| match work.circuits {
            Circuits::Challenges(circuits) | Circuits::Native(_, circuits) => circuits,
            Circuits::Whole(circuit) => vec![circuit],
        })
        .collect())
}

/// Builds and synthesizes partition `k` of `c1` as `synthesis` says (what
/// the prover does per partition, without the key): for benchmarks and
/// tools. An index past the last partition is a bad request.
pub fn synthesize_partition(
    c1: &C1Input,
    k: usize,
    synthesis: &PorepSynthesis,
) -> Result<Synthesized, Error> {
    with_sector_shape!(
        c1.proof_type.sector_size(),
        synthesize_one,
        c1,
        k,
        synthesis
    )
}

fn synthesize_one<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    k: usize,
    synthesis: &PorepSynthesis,
) -> Result<Synthesized, Error> {
    let work = partition_work::<Tree>(c1, synthesis, Some(k))?
        .pop()
        .ok_or_else(|| no_partition(c1, k))?;
    work.synthesize(synthesis, None)
}

impl<Tree: 'static + MerkleTreeTrait> PartitionWork<Tree> {
    /// Synthesizes the partition as `synthesis` says; `shape` (for example
    /// the key's) is the room reserved up front on the sequential path.
    ///
    /// A pre-compiled witness that does not fit the recording is logged and
    /// the partition synthesized in full instead: never a wrong proof.
    pub(crate) fn synthesize(
        self,
        synthesis: &PorepSynthesis,
        shape: Option<&CircuitShape>,
    ) -> Result<Synthesized, Error> {
        let k = self.partition;
        match (self.circuits, synthesis) {
            (Circuits::Whole(circuit), _) => match shape {
                Some(shape) => cuzk_synth::synthesize_with_capacity(circuit, shape),
                None => cuzk_synth::synthesize(circuit),
            }
            .map_err(|source| Error::Synthesis {
                partition: k,
                source,
            }),
            (Circuits::Native(native, backup), PorepSynthesis::Precompiled(pre)) => {
                // Born compact and kept compact: the prover reads the
                // classes (no 32-byte value for a 0 or a 1 on the host).
                let witness = native.compact_witness().map_err(|e| piece_error(k, e))?;
                match pre.synthesize_compact(witness) {
                    Ok(synthesized) => Ok(synthesized),
                    Err(e) => {
                        tracing::warn!(
                            "partition {k}: {e}; synthesizing it in full, challenges in parallel"
                        );
                        synthesize_challenges(backup).map_err(|e| piece_error(k, e))
                    }
                }
            }
            (Circuits::Challenges(circuits) | Circuits::Native(_, circuits), _) => {
                synthesize_challenges(circuits).map_err(|e| piece_error(k, e))
            }
        }
    }
}

/// What the native witness of one partition reads: the sector's replica
/// id, comm_d and comm_r, and the partition's vanilla proofs.
fn native_partition<Tree: 'static + MerkleTreeTrait>(
    s: &crate::porep::prove::Sector<Tree>,
    partition: &[filecoin_proofs::VanillaSealProof<Tree>],
) -> Result<NativePartition<Tree>, Error> {
    let tau = s
        .inputs
        .tau
        .as_ref()
        .ok_or_else(|| Error::Tampered("the sector has no comm_d and comm_r".into()))?;
    NativePartition::new(
        s.inputs.replica_id.into(),
        tau.comm_d.into(),
        tau.comm_r.into(),
        partition,
    )
}

/// How [`partition_witness`] (and [`crate::post_witness`]) computes the witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessSource {
    /// The crates' gadgets, run witness-only, challenges on rayon
    /// ([`witness_challenges`]): the reference.
    Gadgets,
    /// cuzk's native replay (SHA-256 and, for a PoSt, Poseidon in plain
    /// code), challenges (PoSt: sectors) on rayon: what the pre-compiled
    /// mode uses.
    Native,
}

/// Partition `k`'s witness alone (inputs with ONE first, aux), from
/// `source`: for benchmarks and tests. Both sources give the same values.
pub fn partition_witness(c1: &C1Input, k: usize, source: WitnessSource) -> Result<Witness, Error> {
    with_sector_shape!(c1.proof_type.sector_size(), witness_one, c1, k, source)
}

fn witness_one<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    k: usize,
    source: WitnessSource,
) -> Result<Witness, Error> {
    let mode = match source {
        WitnessSource::Gadgets => PorepSynthesis::Parallel,
        WitnessSource::Native => {
            // Only the shape of the work matters here, not a recording.
            let s = sector::<Tree>(c1)?;
            let vanilla = vanilla_proofs::<Tree>(c1)?;
            let partition = vanilla.get(k).ok_or_else(|| no_partition(c1, k))?;
            return native_partition(&s, partition)?
                .witness()
                .map_err(|e| piece_error(k, e));
        }
    };
    let work = partition_work::<Tree>(c1, &mode, Some(k))?
        .pop()
        .ok_or_else(|| no_partition(c1, k))?;
    match work.circuits {
        Circuits::Challenges(circuits) => {
            witness_challenges(circuits).map_err(|e| piece_error(k, e))
        }
        _ => unreachable!("parallel work is built challenge by challenge"),
    }
}

/// Partition `k`'s native witness with its aux values compact (a 2-bit
/// class per value, the others in full: `cuzk_synth::precompiled::compact`),
/// as the native generator writes it; `expand()` gives
/// [`partition_witness`]'s values.
pub fn partition_compact_witness(c1: &C1Input, k: usize) -> Result<CompactWitness, Error> {
    with_sector_shape!(c1.proof_type.sector_size(), compact_witness_one, c1, k)
}

fn compact_witness_one<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    k: usize,
) -> Result<CompactWitness, Error> {
    let s = sector::<Tree>(c1)?;
    let vanilla = vanilla_proofs::<Tree>(c1)?;
    let partition = vanilla.get(k).ok_or_else(|| no_partition(c1, k))?;
    native_partition(&s, partition)?
        .compact_witness()
        .map_err(|e| piece_error(k, e))
}

fn no_partition(c1: &C1Input, k: usize) -> Error {
    Error::BadRequest {
        kind: "PoRep",
        problem: format!(
            "no partition {k}: {} has {}",
            c1.proof_type.name(),
            c1.proof_type.partitions()
        ),
    }
}

/// A partition's challenge circuits (each built on one challenge's vanilla
/// proof, in challenge order), synthesized on rayon and joined past the
/// shared preamble: the `Synthesized` of the whole partition circuit.
pub fn synthesize_challenges<C: bellperson::Circuit<Fr> + Send>(
    circuits: Vec<C>,
) -> Result<Synthesized, PieceError> {
    synthesize_with_shared_prefix(circuits, |c| {
        synthesize_piece::<ProvingAssignment, _>(c, FIRST_CHALLENGE)
    })
    .map(ProvingAssignment::finish)
}

/// [`synthesize_challenges`] for the witness alone (inputs and aux, no
/// linear combination built).
pub fn witness_challenges<C: bellperson::Circuit<Fr> + Send>(
    circuits: Vec<C>,
) -> Result<Witness, PieceError> {
    synthesize_with_shared_prefix(circuits, |c| {
        synthesize_piece::<WitnessAssignment, _>(c, FIRST_CHALLENGE)
    })
    .map(WitnessAssignment::into_witness)
}

/// A piece's failure as the crate's error: an unsatisfiable challenge is
/// the synthesis error full synthesis would give.
fn piece_error(partition: usize, e: PieceError) -> Error {
    match e.fault {
        PieceFault::Synthesis(source) => Error::Synthesis { partition, source },
        _ => Error::Pieces {
            partition,
            source: e,
        },
    }
}
