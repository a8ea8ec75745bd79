//! A C1's partitions as a job for cuzk's engine: [`PorepSource`] is a
//! `cuzk_pipeline::PartitionSource`, so a scheduler (cuzk-sched's, or any
//! other written against the contract) synthesizes the partitions on its
//! synthesis workers, several at once within its host-memory budget, while
//! its provers prove the ones already synthesized.

use std::sync::Mutex;

use cuzk_field::Fr;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{PartitionSource, SourceError};
use cuzk_synth::{CircuitShape, Synthesized};
use storage_proofs_core::merkle::MerkleTreeTrait;

use crate::job::shape_from_key;
use crate::porep::synthesis::{partition_work, PorepSynthesis};
use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error};

/// One PoRep partition's synthesis, in whichever mode was asked for.
type PartitionSynthesis = Box<dyn FnOnce(&CircuitShape) -> Result<Synthesized, Error> + Send>;

/// The partition circuits of one C1, built as `seal_commit_phase2` builds
/// them, each synthesized once, on whichever thread asks; with the public
/// inputs Filecoin's verifier derives, for the epilogue's check.
///
/// The shape comes from the proving key: every PoRep circuit's only B input
/// is ONE (DESIGN §4's counts; the 2 KiB end-to-end test asserts them), and
/// the constraint count is taken as the domain size, an upper bound the
/// engine reserves memory for. Each witness is checked against the key
/// before it is proved, and its public inputs against the verifier's right
/// after synthesis.
pub struct PorepSource {
    label: String,
    shape: CircuitShape,
    circuits: Vec<Mutex<Option<PartitionSynthesis>>>,
    inputs: Vec<Vec<Fr>>,
    /// Pre-compiled: witnesses leave a, b, c to the prover.
    defers_abc: bool,
}

impl PorepSource {
    /// The partitions of `c1`, to be proved with `key` (the proof type's
    /// key; a key of another circuit is refused when the job is submitted),
    /// each synthesized challenge by challenge in parallel.
    pub fn new(c1: &C1Input, key: &ProvingKey) -> Result<Self, Error> {
        Self::with_synthesis(c1, key, &PorepSynthesis::default())
    }

    /// [`PorepSource::new`], synthesizing as `synthesis` says.
    pub fn with_synthesis(
        c1: &C1Input,
        key: &ProvingKey,
        synthesis: &PorepSynthesis,
    ) -> Result<Self, Error> {
        let (circuits, inputs) =
            with_sector_shape!(c1.proof_type.sector_size(), erased, c1, synthesis)?;
        Ok(PorepSource {
            label: format!("PoRep C2 {:?} ({})", c1.proof_type, synthesis.mode()),
            shape: shape_from_key(key),
            circuits: circuits.into_iter().map(|c| Mutex::new(Some(c))).collect(),
            inputs,
            defers_abc: matches!(synthesis, PorepSynthesis::Precompiled(_)),
        })
    }
}

impl std::fmt::Debug for PorepSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorepSource")
            .field("label", &self.label)
            .field("partitions", &self.circuits.len())
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

fn erased<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    synthesis: &PorepSynthesis,
) -> Result<(Vec<PartitionSynthesis>, Vec<Vec<Fr>>), Error> {
    Ok(partition_work::<Tree>(c1, synthesis, None)?
        .into_iter()
        .map(|mut work| {
            let inputs = std::mem::take(&mut work.public_inputs);
            let how = synthesis.clone();
            let synthesize: PartitionSynthesis =
                Box::new(move |shape: &CircuitShape| work.synthesize(&how, Some(shape)));
            (synthesize, inputs)
        })
        .unzip())
}

impl PartitionSource for PorepSource {
    fn describe(&self) -> String {
        self.label.clone()
    }

    fn num_partitions(&self) -> usize {
        self.circuits.len()
    }

    fn shape(&self) -> CircuitShape {
        self.shape.clone()
    }

    /// Synthesizes partition `index`; each partition once (its circuit is
    /// consumed): a second request for it is an error that says so.
    fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError> {
        let synthesis = self
            .circuits
            .get(index)
            .ok_or_else(|| SourceError::new(format!("no partition {index}")))?
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .ok_or_else(|| {
                SourceError::new(format!(
                    "partition {index} was already synthesized (a PoRep source holds each circuit once)"
                ))
            })?;
        // Room for the shape up front: the vectors never grow past what
        // the engine reserved for them.
        let witness = synthesis(&self.shape)
            .map_err(|e| SourceError::with_source(format!("partition {index}"), e))?;
        if witness.input_assignment.get(1..) != Some(&self.inputs[index][..]) {
            return Err(SourceError::new(format!(
                "partition {index}: the synthesized public inputs differ from the ones Filecoin's verifier derives"
            )));
        }
        Ok(witness)
    }

    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        Ok(self.inputs.get(index).cloned())
    }

    fn defers_abc(&self) -> bool {
        self.defers_abc
    }
}
