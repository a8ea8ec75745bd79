//! Pre-compiled PoRep: a proof type's partition circuit recorded once
//! (cuzk-synth's `R1csRecorder`, from the crates' blank circuit: the same
//! constraints key generation sees) into cuzk-synth's versioned, checksummed
//! cache file, keyed by the proof type's parameter id (the `v28-…` name of
//! its key). By default the file lies beside the key in the parameter cache
//! as `v28-<circuit id>.r1cs`.
//!
//! A file that is missing, truncated, corrupt, of another format version,
//! for another circuit, or whose shape does not fit the proving key is
//! refused with a [`PrecompiledError`] naming it; callers then synthesize
//! in full (challenges in parallel) and say so in the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::ProvingKey;
use cuzk_synth::precompiled::{
    cache, record, CacheError, CircuitId, DeferredAbc, MappedR1cs, R1csRef, R1csStats, RecordError,
    Witness, WitnessError,
};
use cuzk_synth::{CircuitShape, Synthesized};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::circuit::Circuit;
use crate::engine::shape_from_key;
use crate::proof_type::with_sector_shape;
use crate::{Error, ParamsDir, ProofType};

/// Why a pre-compiled circuit cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrecompiledError {
    /// The cache file cannot be used (missing, truncated, corrupt, another
    /// version); the message names the file.
    #[error("pre-compiled circuit for {proof_type}: {source}")]
    Cache {
        /// The proof type's name.
        proof_type: String,
        /// What is wrong with the file.
        #[source]
        source: CacheError,
    },
    /// The cache file holds another circuit than the proof type's.
    #[error(
        "pre-compiled circuit {path} holds {holds}, not the circuit of {proof_type}",
        path = path.display()
    )]
    OtherCircuit {
        /// The file.
        path: PathBuf,
        /// The proof type asked for.
        proof_type: String,
        /// "the circuit of A, B" naming the proof types whose circuit the
        /// file holds, or "circuit <id>" when it is none of theirs.
        holds: String,
    },
    /// The recording does not fit the proving key (another circuit under
    /// the same name, or a stale file).
    #[error(
        "pre-compiled circuit {path}: its shape {recorded:?} does not fit the proving key's {key:?}",
        path = path.display()
    )]
    Shape {
        /// The file.
        path: PathBuf,
        /// The recording's shape.
        recorded: Box<CircuitShape>,
        /// What the key proves.
        key: Box<CircuitShape>,
    },
    /// Recording the circuit failed.
    #[error("recording the {proof_type} partition circuit: {source}")]
    Record {
        /// The proof type's name.
        proof_type: String,
        /// Why.
        #[source]
        source: RecordError,
    },
}

/// A proof type's recorded partition circuit, checked and mapped.
#[derive(Debug)]
pub struct PrecompiledPorep {
    proof_type: ProofType,
    path: PathBuf,
    mapped: Arc<MappedR1cs>,
    /// The mapping as the prover's source of a, b, c.
    deferred: DeferredAbc,
}

/// The id a proof type's recording is filed under: its key's parameter id.
pub fn circuit_id(proof_type: ProofType) -> Result<CircuitId, Error> {
    let name = Circuit::Porep(proof_type).params_file_name()?;
    Ok(CircuitId::from_name(
        name.strip_suffix(".params").unwrap_or(&name),
    ))
}

/// "the circuit of A, B": the supported proof types whose recordings are
/// filed under `id`; "circuit <id>" when none is.
fn circuit_named(id: &CircuitId) -> String {
    let names: Vec<String> = ProofType::ALL
        .into_iter()
        .filter_map(|p| ProofType::new(p).ok())
        .filter(|&p| circuit_id(p).is_ok_and(|other| other == *id))
        .map(ProofType::name)
        .collect();
    if names.is_empty() {
        format!("circuit {id}")
    } else {
        format!("the circuit of {}", names.join(", "))
    }
}

/// Where the recording of `proof_type` lies by default: beside its key in
/// `params`, as `v28-<circuit id>.r1cs`.
pub fn default_cache_path(params: &ParamsDir, proof_type: ProofType) -> Result<PathBuf, Error> {
    let key = params.params_path(proof_type)?;
    Ok(key.with_extension("r1cs"))
}

/// What [`precompile`] made.
#[derive(Clone, Debug)]
pub struct Precompiled {
    /// The file written.
    pub path: PathBuf,
    /// The recorded shape.
    pub shape: CircuitShape,
    /// Sizes of the recording.
    pub stats: R1csStats,
    /// The file's size.
    pub file_bytes: u64,
    /// Seconds spent recording (one synthesis of the blank circuit).
    pub record_secs: f64,
    /// Seconds spent writing.
    pub write_secs: f64,
}

/// Records the partition circuit of `proof_type` (from the crates' blank
/// circuit) and writes it to `path`, atomically.
pub fn precompile(proof_type: ProofType, path: &Path) -> Result<Precompiled, Error> {
    let start = Instant::now();
    let r1cs = with_sector_shape!(proof_type.sector_size(), record_blank, proof_type)?;
    let record_secs = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let cache_error = |source| PrecompiledError::Cache {
        proof_type: proof_type.name(),
        source,
    };
    cache::write(path, &circuit_id(proof_type)?, &r1cs).map_err(cache_error)?;
    let file_bytes = std::fs::metadata(path)
        .map_err(|source| Error::Io {
            context: "reading the size of",
            path: path.to_owned(),
            source,
        })?
        .len();
    Ok(Precompiled {
        path: path.to_owned(),
        shape: r1cs.shape().clone(),
        stats: r1cs.as_ref().stats(),
        file_bytes,
        record_secs,
        write_secs: start.elapsed().as_secs_f64(),
    })
}

fn record_blank<Tree: 'static + MerkleTreeTrait>(
    proof_type: ProofType,
) -> Result<cuzk_synth::precompiled::R1cs, Error> {
    let vanilla = public_params::<Tree>(&proof_type.config())
        .map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&vanilla);
    record(circuit).map_err(|source| {
        PrecompiledError::Record {
            proof_type: proof_type.name(),
            source,
        }
        .into()
    })
}

impl PrecompiledPorep {
    /// Opens and checks the recording of `proof_type` at `path` (one read
    /// of the file, checksums on every core), and checks that its shape
    /// fits `key` when given.
    pub fn open(
        path: &Path,
        proof_type: ProofType,
        key: Option<&ProvingKey>,
    ) -> Result<Self, Error> {
        let mapped =
            MappedR1cs::open(path, &circuit_id(proof_type)?).map_err(|source| match source {
                CacheError::OtherCircuit { found, .. } => PrecompiledError::OtherCircuit {
                    path: path.to_owned(),
                    proof_type: proof_type.name(),
                    holds: circuit_named(&found),
                },
                source => PrecompiledError::Cache {
                    proof_type: proof_type.name(),
                    source,
                },
            })?;
        if let Some(key) = key {
            let want = shape_from_key(key);
            let got = mapped.shape();
            let fits = got.num_inputs == want.num_inputs
                && got.num_aux == want.num_aux
                && got.a_aux_density == want.a_aux_density
                && got.b_input_density == want.b_input_density
                && got.b_aux_density == want.b_aux_density
                && got.domain_log2 == want.domain_log2;
            if !fits {
                return Err(PrecompiledError::Shape {
                    path: path.to_owned(),
                    recorded: Box::new(got.clone()),
                    key: Box::new(want),
                }
                .into());
            }
        }
        let mapped = Arc::new(mapped);
        Ok(Self {
            proof_type,
            path: path.to_owned(),
            deferred: DeferredAbc::new(mapped.id(), mapped.clone()),
            mapped,
        })
    }

    /// The proof type recorded.
    pub fn proof_type(&self) -> ProofType {
        self.proof_type
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded shape.
    pub fn shape(&self) -> &CircuitShape {
        self.mapped.shape()
    }

    /// The recording itself (the mapped matrices), for key generation
    /// (`cuzk_groth16::setup::generate_from_recording`).
    pub fn r1cs(&self) -> R1csRef<'_> {
        MappedR1cs::as_ref(&self.mapped)
    }

    /// The file's size in bytes.
    pub fn file_bytes(&self) -> usize {
        self.mapped.file_bytes()
    }

    /// The partition's `Synthesized` for `witness`, a, b, c left to the
    /// prover (the GPU evaluates them from the matrices resident in VRAM,
    /// the CPU prover from the mapping): the host never holds them.
    pub fn synthesize(&self, witness: Witness) -> Result<Synthesized, WitnessError> {
        self.deferred.synthesized(witness)
    }
}
