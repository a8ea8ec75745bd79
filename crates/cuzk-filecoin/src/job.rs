//! What every proof kind's engine source shares: one partition's synthesis
//! as a boxed closure, the circuit shape a proving key implies, and the
//! source of a job of several partition circuits ([`CircuitSource`]: a
//! PoRep C2's and a SnapDeals update's).

use std::marker::PhantomData;
use std::sync::Mutex;

use bellperson::SynthesisError;
use cuzk_field::Fr;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{PartitionSource, SourceError};
use cuzk_synth::{CircuitShape, Synthesized};

/// One partition's synthesis, its circuit inside; given the shape to
/// reserve room for. Failing with `E`.
pub(crate) type SynthesisOf<E> = Box<dyn FnOnce(&CircuitShape) -> Result<Synthesized, E> + Send>;

/// [`SynthesisOf`] with the circuit's own error.
pub(crate) type Synthesis = SynthesisOf<SynthesisError>;

/// The shape a key proves: the domain from H, the inputs from the
/// verifying key, the densities from A and B.
pub(crate) fn shape_from_key(key: &ProvingKey) -> CircuitShape {
    let num_inputs = key.vk.ic.len();
    let domain = (key.h.len() + 1).next_power_of_two();
    // The one B input is ONE; a key that disagrees fails the submission check.
    let b_input_density = 1;
    CircuitShape {
        num_constraints: domain,
        num_inputs,
        num_aux: key.l.len(),
        a_aux_density: key.a.len().saturating_sub(num_inputs),
        b_input_density,
        b_aux_density: key.b_g1.len().saturating_sub(b_input_density),
        domain_log2: domain.trailing_zeros(),
    }
}

/// One partition's synthesis with its error boxed (what [`CircuitSource`] keeps).
type Boxed = SynthesisOf<Box<dyn std::error::Error + Send + Sync>>;

/// The partition circuits of one job, built as Filecoin's crates build
/// them, each synthesized once on whichever thread asks; with the public
/// inputs Filecoin's verifier derives, checked right after synthesis. `K`
/// names the kind ([`crate::PorepSource`], [`crate::UpdateSource`]).
///
/// The shape comes from the proving key: every PoRep and SnapDeals
/// circuit's only B input is ONE (DESIGN §4's counts; the 2 KiB end-to-end
/// tests assert them), and the constraint count is taken as the domain
/// size, an upper bound the engine reserves memory for. Each witness is
/// checked against the key before it is proved.
pub struct CircuitSource<K> {
    label: String,
    shape: CircuitShape,
    circuits: Vec<Mutex<Option<Boxed>>>,
    inputs: Vec<Vec<Fr>>,
    /// Pre-compiled: witnesses leave a, b, c to the prover.
    defers_abc: bool,
    /// Compact witnesses: about this many aux values other than 0 and 1.
    compact_others: Option<usize>,
    kind: PhantomData<fn() -> K>,
}

impl<K> CircuitSource<K> {
    /// The source of `circuits` (with their public `inputs`) for `key`.
    pub(crate) fn from_parts<E>(
        label: String,
        key: &ProvingKey,
        circuits: Vec<SynthesisOf<E>>,
        inputs: Vec<Vec<Fr>>,
        defers_abc: bool,
    ) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let circuits = circuits
            .into_iter()
            .map(|c| {
                let boxed: Boxed =
                    Box::new(move |shape: &CircuitShape| c(shape).map_err(Into::into));
                Mutex::new(Some(boxed))
            })
            .collect();
        CircuitSource {
            label,
            shape: shape_from_key(key),
            circuits,
            inputs,
            defers_abc,
            compact_others: None,
            kind: PhantomData,
        }
    }

    /// The same source, its witnesses compact with about `others` values
    /// other than 0 and 1 each ([`PartitionSource::compact_others`]).
    pub(crate) fn with_compact_others(mut self, others: Option<usize>) -> Self {
        self.compact_others = others;
        self
    }
}

impl<K> std::fmt::Debug for CircuitSource<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitSource")
            .field("label", &self.label)
            .field("partitions", &self.circuits.len())
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl<K> PartitionSource for CircuitSource<K> {
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
                    "partition {index} was already synthesized (the source holds each circuit once)"
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

    fn compact_others(&self) -> Option<usize> {
        self.compact_others
    }
}
