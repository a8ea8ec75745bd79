//! Pre-compiled circuits: a circuit (a PoRep or update partition, a PoSt)
//! recorded once (cuzk-synth's `R1csRecorder`, from the crates' blank
//! circuit: the same constraints key generation sees) into cuzk-synth's
//! versioned, checksummed cache file, keyed by the circuit's parameter id
//! (the `v28-…` name of its key). By default the file lies beside the key
//! in the parameter cache as `v28-<circuit id>.r1cs`. A proof then needs
//! only the circuit's witness (the crates' gadgets run witness-only, or
//! cuzk's native PoRep witness); a, b, c come from the recorded matrices.
//!
//! A file that is missing, truncated, corrupt, of another format version,
//! for another circuit, or whose shape does not fit the proving key is
//! refused with a [`PrecompiledError`] naming it; callers then synthesize
//! in full and say so in the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar as Fr;
use cuzk_groth16::ProvingKey;
use cuzk_synth::precompiled::{
    cache, record, CacheError, CircuitId, CompactWitness, CompactWitnessError, DeferredAbc,
    MappedR1cs, R1csRef, R1csStats, RecordError, Witness, WitnessError,
};
use cuzk_synth::{CircuitShape, Synthesized};

use crate::circuit::{BlankUse, Circuit};
use crate::job::{shape_from_key, Synthesis};
use crate::{Error, ParamsDir, PostType, ProofType, UpdateType};

/// Why a pre-compiled circuit cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrecompiledError {
    /// The cache file cannot be used (missing, truncated, corrupt, another
    /// version); the message names the file.
    #[error("pre-compiled circuit for {proof_type}: {source}")]
    Cache {
        /// The registered proof type's name.
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
        /// file holds (PoRep, PoSt, update), or `"circuit <id>"` when it is
        /// none of theirs.
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
    #[error("recording the {proof_type} circuit: {source}")]
    Record {
        /// The proof type's name.
        proof_type: String,
        /// Why.
        #[source]
        source: RecordError,
    },
}

/// A circuit's recording, checked and mapped.
#[derive(Debug)]
pub struct PrecompiledCircuit {
    circuit: Circuit,
    path: PathBuf,
    mapped: Arc<MappedR1cs>,
    /// The mapping as the prover's source of a, b, c.
    deferred: DeferredAbc,
}

/// The id a circuit's recording is filed under: its key's parameter id.
pub fn circuit_id(circuit: impl Into<Circuit>) -> Result<CircuitId, Error> {
    let name = circuit.into().params_file_name()?;
    Ok(CircuitId::from_name(
        name.strip_suffix(".params").unwrap_or(&name),
    ))
}

/// Every circuit cuzk proves: each supported PoRep, PoSt and update type's.
fn every_circuit() -> impl Iterator<Item = Circuit> {
    let porep = ProofType::ALL
        .into_iter()
        .filter_map(|p| ProofType::new(p).ok())
        .map(Circuit::Porep);
    let post = PostType::ALL
        .into_iter()
        .filter_map(|p| PostType::new(p).ok())
        .map(Circuit::Post);
    let update = UpdateType::ALL
        .into_iter()
        .map(|u| Circuit::Update(UpdateType::new(u)));
    porep.chain(post).chain(update)
}

/// "the circuit of A, B": the supported proof types whose recordings are
/// filed under `id`; "circuit <id>" when none is.
fn circuit_named(id: &CircuitId) -> String {
    let names: Vec<String> = every_circuit()
        .filter(|&c| circuit_id(c).is_ok_and(|other| other == *id))
        .map(label)
        .collect();
    if names.is_empty() {
        format!("circuit {id}")
    } else {
        format!("the circuit of {}", names.join(", "))
    }
}

/// The circuit's registered proof type name, an update's marked as one
/// (its names are the V1 PoRep types').
fn label(circuit: Circuit) -> String {
    match circuit {
        Circuit::Update(_) => format!("{} (SnapDeals update)", circuit.name()),
        _ => circuit.name(),
    }
}

/// Where the recording of `circuit` lies by default: beside its key in
/// `params`, as `v28-<circuit id>.r1cs`.
pub fn default_cache_path(
    params: &ParamsDir,
    circuit: impl Into<Circuit>,
) -> Result<PathBuf, Error> {
    let key = params.params_path(circuit)?;
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

/// Records `circuit` (from the crates' blank circuit; one partition of a
/// PoRep or an update) and writes it to `path`, atomically.
pub fn precompile(circuit: impl Into<Circuit>, path: &Path) -> Result<Precompiled, Error> {
    struct Record(Option<Result<cuzk_synth::precompiled::R1cs, RecordError>>);
    impl BlankUse for Record {
        fn take<C: bellperson::Circuit<Fr>>(&mut self, circuit: C) -> Result<(), Error> {
            self.0 = Some(record(circuit));
            Ok(())
        }
    }
    let circuit = circuit.into();
    let start = Instant::now();
    let mut recorder = Record(None);
    circuit.with_blank(None, &mut recorder)?;
    let r1cs = recorder
        .0
        .expect("with_blank hands the circuit over")
        .map_err(|source| PrecompiledError::Record {
            proof_type: label(circuit),
            source,
        })?;
    let record_secs = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let cache_error = |source| PrecompiledError::Cache {
        proof_type: label(circuit),
        source,
    };
    cache::write(path, &circuit_id(circuit)?, &r1cs).map_err(cache_error)?;
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

impl PrecompiledCircuit {
    /// Opens and checks the recording of `circuit` at `path` (one read of
    /// the file, checksums on every core), and checks that its shape fits
    /// `key` when given.
    pub fn open(
        path: &Path,
        circuit: impl Into<Circuit>,
        key: Option<&ProvingKey>,
    ) -> Result<Self, Error> {
        let circuit = circuit.into();
        let mapped =
            MappedR1cs::open(path, &circuit_id(circuit)?).map_err(|source| match source {
                CacheError::OtherCircuit { found, .. } => PrecompiledError::OtherCircuit {
                    path: path.to_owned(),
                    proof_type: label(circuit),
                    holds: circuit_named(&found),
                },
                source => PrecompiledError::Cache {
                    proof_type: label(circuit),
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
            circuit,
            path: path.to_owned(),
            deferred: DeferredAbc::new(mapped.id(), mapped.clone()),
            mapped,
        })
    }

    /// The circuit recorded.
    pub fn circuit(&self) -> Circuit {
        self.circuit
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

    /// [`PrecompiledCircuit::synthesize`] for a compact witness: checked
    /// against the recording (its lengths and class counts; an error names
    /// both numbers), its aux values kept compact
    /// ([`Synthesized::compact_aux`]).
    pub fn synthesize_compact(
        &self,
        witness: CompactWitness,
    ) -> Result<Synthesized, CompactWitnessError> {
        self.deferred.synthesized_compact(witness)
    }
}

/// How a PoSt or update circuit is synthesized (a PoRep partition's:
/// [`crate::PorepSynthesis`]).
#[derive(Clone, Debug, Default)]
pub enum CircuitSynthesis {
    /// In full: the crates' gadgets build every linear combination (a
    /// WindowPoSt's sectors spread over the cores, as the crates split
    /// them for an extensible constraint system; an update partition on
    /// one thread).
    #[default]
    Full,
    /// The witness alone (the same gadgets, witness-only: no linear
    /// combination is built), a, b, c left to the prover, which evaluates
    /// them from the recording (on the GPU from matrices resident in VRAM).
    Precompiled(Arc<PrecompiledCircuit>),
}

impl CircuitSynthesis {
    /// Pre-compiled: the recording of `circuit` at `cache` (by default
    /// beside its key in `params`), opened and checked against `key` when
    /// given. A recording that cannot be used is logged (the error names
    /// the file and why) and the circuit is synthesized in full instead;
    /// the reason comes back beside the fallback.
    pub fn precompiled(
        circuit: impl Into<Circuit>,
        params: &ParamsDir,
        cache: Option<&Path>,
        key: Option<&ProvingKey>,
    ) -> (Self, Option<Error>) {
        let circuit = circuit.into();
        let opened = match cache {
            Some(path) => Ok(path.to_owned()),
            None => default_cache_path(params, circuit),
        }
        .and_then(|path| PrecompiledCircuit::open(&path, circuit, key));
        match opened {
            Ok(pre) => (CircuitSynthesis::Precompiled(Arc::new(pre)), None),
            Err(e) => {
                tracing::warn!(
                    "{e}; synthesizing in full (make the file with `cuzk precompile {}`)",
                    precompile_args(circuit)
                );
                (CircuitSynthesis::Full, Some(e))
            }
        }
    }

    /// "full" or "precompiled".
    pub fn name(&self) -> &'static str {
        match self {
            CircuitSynthesis::Full => "full",
            CircuitSynthesis::Precompiled(_) => "precompiled",
        }
    }

    /// Whether witnesses leave a, b, c to the prover.
    pub fn defers_abc(&self) -> bool {
        matches!(self, CircuitSynthesis::Precompiled(_))
    }

    /// The synthesis of `circuit` as this says, for a partition source.
    /// Pre-compiled, `duplicate` keeps a copy first: a witness that does
    /// not fit the recording is logged and the copy synthesized in full
    /// instead (never a wrong proof). `what` names the circuit in the log.
    pub(crate) fn synthesis<C>(&self, circuit: C, duplicate: fn(&C) -> C, what: String) -> Synthesis
    where
        C: bellperson::Circuit<Fr> + Send + 'static,
    {
        match self {
            CircuitSynthesis::Full => Box::new(move |shape: &CircuitShape| {
                cuzk_synth::synthesize_with_capacity(circuit, shape)
            }),
            CircuitSynthesis::Precompiled(pre) => {
                let pre = Arc::clone(pre);
                Box::new(move |shape: &CircuitShape| {
                    let backup = duplicate(&circuit);
                    let witness = cuzk_synth::precompiled::witness_with_capacity(
                        circuit,
                        shape.num_inputs,
                        shape.num_aux,
                    )?;
                    match pre.synthesize(witness) {
                        Ok(synthesized) => Ok(synthesized),
                        Err(e) => {
                            tracing::warn!("{what}: {e}; synthesizing it in full");
                            cuzk_synth::synthesize_with_capacity(backup, shape)
                        }
                    }
                })
            }
        }
    }
}

impl CircuitSynthesis {
    /// [`CircuitSynthesis::synthesis`] for a circuit with a native witness:
    /// pre-compiled, `native` gives the witness (its vectors reserved for
    /// the shape's counts) instead of the gadgets; a witness that does not
    /// fit the recording is logged and `circuit` synthesized in full
    /// instead (never a wrong proof).
    pub(crate) fn synthesis_with_native<C, N>(
        &self,
        circuit: C,
        native: N,
        what: String,
    ) -> Synthesis
    where
        C: bellperson::Circuit<Fr> + Send + 'static,
        N: FnOnce(&CircuitShape) -> Result<Witness, bellperson::SynthesisError> + Send + 'static,
    {
        match self {
            CircuitSynthesis::Full => Box::new(move |shape: &CircuitShape| {
                cuzk_synth::synthesize_with_capacity(circuit, shape)
            }),
            CircuitSynthesis::Precompiled(pre) => {
                let pre = Arc::clone(pre);
                Box::new(
                    move |shape: &CircuitShape| match pre.synthesize(native(shape)?) {
                        Ok(synthesized) => Ok(synthesized),
                        Err(e) => {
                            tracing::warn!("{what}: native witness: {e}; synthesizing it in full");
                            cuzk_synth::synthesize_with_capacity(circuit, shape)
                        }
                    },
                )
            }
        }
    }
}

/// The arguments of `cuzk precompile` that record `circuit` (for hints).
pub fn precompile_args(circuit: Circuit) -> String {
    match circuit {
        Circuit::Update(u) => format!(
            "--kind update --sector-size {}",
            crate::proof_type::sector_size_label(u.sector_size())
        ),
        _ => format!("--proof-type {}", circuit.name()),
    }
}
