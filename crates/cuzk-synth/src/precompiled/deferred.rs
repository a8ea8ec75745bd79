//! A witness whose a, b and c are left to the prover: [`DeferredAbc`] names
//! the recording they come from, so a backend evaluates them where it
//! computes (on the GPU, from matrices resident beside the key: only the
//! witness crosses PCIe, and the host never holds a, b, c), or on the host
//! when it proves there.
//!
//! Invariant of a [`Synthesized`] with `deferred` set: `a`, `b` and `c`
//! are empty and the recording's A·z, B·z, C·z are what they would hold;
//! [`Synthesized::evaluate_abc`] makes them so.

use std::fmt;
use std::sync::Arc;

use blstrs::Scalar as Fr;

use super::{
    CircuitId, CompactWitness, CompactWitnessError, MappedR1cs, R1cs, R1csRef, Witness,
    WitnessError,
};
use crate::Synthesized;

/// A recorded circuit that lends its matrices: an [`R1cs`] in memory or a
/// mapped cache file.
pub trait Recording: Send + Sync {
    /// The recording, borrowed.
    fn r1cs(&self) -> R1csRef<'_>;
}

impl Recording for R1cs {
    fn r1cs(&self) -> R1csRef<'_> {
        self.as_ref()
    }
}

impl Recording for MappedR1cs {
    fn r1cs(&self) -> R1csRef<'_> {
        self.as_ref()
    }
}

/// Where a witness's a, b, c come from: a shared recording and its id (the
/// key under which a device keeps the matrices resident).
#[derive(Clone)]
pub struct DeferredAbc {
    id: CircuitId,
    recording: Arc<dyn Recording>,
}

impl fmt::Debug for DeferredAbc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredAbc")
            .field("id", &self.id)
            .field("rows", &self.rows())
            .finish_non_exhaustive()
    }
}

/// Equal when the recordings' ids are: the same circuit gives the same
/// a, b, c for the same witness.
impl PartialEq for DeferredAbc {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl DeferredAbc {
    /// a, b, c of witnesses of `recording`, known as `id` (a mapped file's
    /// [`MappedR1cs::id`], or [`R1cs::content_id`]).
    pub fn new(id: CircuitId, recording: Arc<dyn Recording>) -> Self {
        DeferredAbc { id, recording }
    }

    /// The recording's id.
    pub fn id(&self) -> &CircuitId {
        &self.id
    }

    /// The recording.
    pub fn r1cs(&self) -> R1csRef<'_> {
        self.recording.r1cs()
    }

    /// Rows of each matrix: the witness's number of constraints.
    pub fn rows(&self) -> usize {
        self.r1cs().a.rows()
    }

    /// The [`Synthesized`] of `witness` (checked against the recording's
    /// shape) with a, b, c left to the prover.
    pub fn synthesized(&self, witness: Witness) -> Result<Synthesized, WitnessError> {
        let r1cs = self.r1cs();
        r1cs.check(&witness)?;
        Ok(r1cs.assemble(witness, Default::default(), Some(self.clone())))
    }

    /// The [`Synthesized`] of a compact witness (checked against the
    /// recording's shape, its parts against each other:
    /// [`R1csRef::check_compact`]) with a, b, c left to the prover and the
    /// aux values kept compact ([`Synthesized::compact_aux`]).
    pub fn synthesized_compact(
        &self,
        witness: CompactWitness,
    ) -> Result<Synthesized, CompactWitnessError> {
        let r1cs = self.r1cs();
        r1cs.check_compact(&witness)?;
        let plain = Witness {
            input_assignment: witness.input_assignment,
            aux_assignment: Vec::new(),
        };
        let mut s = r1cs.assemble(plain, Default::default(), Some(self.clone()));
        s.compact_aux = Some(witness.aux);
        Ok(s)
    }
}

impl Synthesized {
    /// Whether a, b, c are in the vectors (`false`: the prover evaluates
    /// them from [`Synthesized::deferred`]).
    pub fn abc_on_host(&self) -> bool {
        self.deferred.is_none()
    }

    /// a, b and c, each `len` long (zero-padded; `len` at least the number
    /// of constraints): copies of the vectors, or the products of the
    /// recording when deferred. What a CPU prover's quotient transforms.
    ///
    /// # Panics
    ///
    /// If `len < num_constraints()`.
    pub fn padded_abc(&self, len: usize) -> [Vec<Fr>; 3] {
        match &self.deferred {
            Some(d) => d
                .r1cs()
                .products(&self.input_assignment, &self.aux_values(), len),
            None => {
                assert!(len >= self.a.len(), "{len} values for {}", self.a.len());
                let pad = |v: &[Fr]| {
                    let mut p = Vec::with_capacity(len);
                    p.extend_from_slice(v);
                    p.resize(len, Fr::default());
                    p
                };
                [pad(&self.a), pad(&self.b), pad(&self.c)]
            }
        }
    }

    /// Evaluates deferred a, b, c into the vectors (nothing if they are
    /// there already): afterwards the witness is what full synthesis gives.
    pub fn evaluate_abc(&mut self) {
        if let Some(d) = self.deferred.take() {
            let [a, b, c] = d
                .r1cs()
                .products(&self.input_assignment, &self.aux_values(), d.rows());
            (self.a, self.b, self.c) = (a, b, c);
        }
    }
}
