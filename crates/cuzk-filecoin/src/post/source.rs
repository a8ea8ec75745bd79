//! The one circuit of a PoSt as a partition source of cuzk's engine.

use super::*;

/// The one circuit of a PoSt as a job for cuzk's engine (see
/// [`crate::PorepSource`] for the shape taken from the key).
pub struct PostSource {
    label: String,
    shape: CircuitShape,
    circuit: Mutex<Option<Synthesis>>,
    inputs: Vec<Fr>,
    prep: PostPrep,
    defers_abc: bool,
    /// Where its witness's aux vector comes from and goes back to (only
    /// when its native witness is computed, pre-compiled).
    pool: Option<Arc<AuxPool>>,
}

impl PostSource {
    /// The circuit of `request`, to be proved with `key` (the proof type's
    /// key), synthesized in full.
    pub fn new(request: &PostRequest, key: &ProvingKey) -> Result<Self, Error> {
        Self::with_synthesis(request, key, &CircuitSynthesis::Full)
    }

    /// [`PostSource::new`], synthesized as `synthesis` says.
    pub fn with_synthesis(
        request: &PostRequest,
        key: &ProvingKey,
        synthesis: &CircuitSynthesis,
    ) -> Result<Self, Error> {
        Self::with_shape(request, shape_from_key(key), synthesis)
    }

    /// The circuit of `request`, its synthesis sized for `shape` (the key's,
    /// or the counted one: [`crate::counts::count_circuit_by_sectors`]).
    pub fn with_shape(
        request: &PostRequest,
        shape: CircuitShape,
        synthesis: &CircuitSynthesis,
    ) -> Result<Self, Error> {
        Self::build(request, shape, synthesis, None)
    }

    /// [`PostSource::with_synthesis`] whose native witness (pre-compiled
    /// synthesis) writes over an aux vector held by `pool` when it holds
    /// one large enough, and whose witness's aux vector goes back to
    /// `pool` once the engine is done with it
    /// ([`PartitionSource::recycle`]): a steady stream of WindowPoSt
    /// partitions then neither faults in nor zeroes 4 GB each (at 32 GiB).
    /// Synthesized in full, the pool is not used.
    pub fn pooled(
        request: &PostRequest,
        key: &ProvingKey,
        synthesis: &CircuitSynthesis,
        pool: Arc<AuxPool>,
    ) -> Result<Self, Error> {
        Self::build(request, shape_from_key(key), synthesis, Some(pool))
    }

    fn build(
        request: &PostRequest,
        shape: CircuitShape,
        synthesis: &CircuitSynthesis,
        pool: Option<Arc<AuxPool>>,
    ) -> Result<Self, Error> {
        let pool = pool.filter(|_| synthesis.defers_abc());
        let (circuit, inputs, prep) = with_sector_shape!(
            request.post_type.sector_size(),
            erased_circuit,
            request,
            synthesis,
            pool.clone()
        )?;
        let pt = request.post_type;
        Ok(PostSource {
            label: match pt.kind() {
                PostKind::Winning => format!("WinningPoSt {}", pt.name()),
                PostKind::Window => format!(
                    "WindowPoSt {} partition {}",
                    pt.name(),
                    request.partition_index
                ),
            },
            shape,
            circuit: Mutex::new(Some(circuit)),
            inputs,
            prep,
            defers_abc: synthesis.defers_abc(),
            pool,
        })
    }

    /// What building the circuit cost (done in [`PostSource::new`]).
    pub fn prep(&self) -> PostPrep {
        self.prep
    }
}

impl std::fmt::Debug for PostSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostSource")
            .field("label", &self.label)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl PartitionSource for PostSource {
    fn describe(&self) -> String {
        self.label.clone()
    }

    fn num_partitions(&self) -> usize {
        1
    }

    fn shape(&self) -> CircuitShape {
        self.shape.clone()
    }

    /// Synthesizes the circuit, once (it is consumed).
    fn synthesize(&self, index: usize) -> Result<cuzk_synth::Synthesized, SourceError> {
        if index != 0 {
            return Err(SourceError::new(format!(
                "no partition {index}: a PoSt has one circuit"
            )));
        }
        let synthesis = self
            .circuit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .ok_or_else(|| SourceError::new("the PoSt circuit was already synthesized"))?;
        let witness = synthesis(&self.shape)?;
        if witness.input_assignment.get(1..) != Some(&self.inputs[..]) {
            return Err(SourceError::new(
                "the synthesized public inputs differ from the ones Filecoin's verifier derives",
            ));
        }
        Ok(witness)
    }

    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        Ok((index == 0).then(|| self.inputs.clone()))
    }

    fn defers_abc(&self) -> bool {
        self.defers_abc
    }

    /// Gives the witness's aux vector back to the pool, if it has one.
    fn recycle(&self, _index: usize, mut witness: cuzk_synth::Synthesized) {
        if let Some(pool) = &self.pool {
            pool.give_back(std::mem::take(&mut witness.aux_assignment));
        }
    }
}
