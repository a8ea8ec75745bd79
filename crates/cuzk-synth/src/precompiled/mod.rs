//! Pre-compiled circuits: a circuit's R1CS recorded once ([`record`]), kept
//! in memory or in a memory-mapped cache file ([`cache`]), then per proof
//! only the witness ([`WitnessAssignment`], or native code such as
//! [`crate::native`]) and a, b, c by sparse matrix-vector products
//! ([`R1csRef::synthesize`]). The result is the [`Synthesized`] full
//! synthesis gives, bit for bit; or a, b, c are left to the prover's
//! backend ([`DeferredAbc::synthesized`]), which evaluates them where it
//! computes.

pub mod cache;
pub use cache::{CacheError, CircuitId, MappedR1cs};
pub mod compact;
mod deferred;
mod evaluate;
mod matrix;
mod record;
mod witness;

use blstrs::Scalar as Fr;

pub use compact::{
    AuxSink, ClassCounts, CompactAssignment, CompactAux, CompactError, CompactWitness,
    CompactWitnessError,
};
pub use deferred::{DeferredAbc, Recording};
pub use evaluate::WitnessError;
pub use matrix::{
    CoeffIds, CoeffIdsRef, CoeffTable, MatrixRef, SparseMatrix, ID_MINUS_ONE, ID_ONE,
};
pub use record::{record, R1csRecorder, RecordError};
pub use witness::{witness, witness_with_capacity, Witness, WitnessAssignment};

use crate::{CircuitShape, Density, Synthesized};

/// A recorded circuit: A, B, C over `z = (inputs, aux)` (see
/// [`matrix`](MatrixRef) for the layout), the coefficient table, the
/// densities and the shape. Made by [`record`]; read back from a cache file
/// as a [`cache::MappedR1cs`]. Both lend an [`R1csRef`].
#[derive(Clone, Debug, PartialEq)]
pub struct R1cs {
    pub(crate) shape: CircuitShape,
    pub(crate) coeffs: CoeffTable,
    pub(crate) a: SparseMatrix,
    pub(crate) b: SparseMatrix,
    pub(crate) c: SparseMatrix,
    pub(crate) a_aux_density: Density,
    pub(crate) b_input_density: Density,
    pub(crate) b_aux_density: Density,
}

impl R1cs {
    /// Borrows the recording.
    pub fn as_ref(&self) -> R1csRef<'_> {
        R1csRef {
            shape: &self.shape,
            coeffs: self.coeffs.values(),
            a: self.a.as_ref(),
            b: self.b.as_ref(),
            c: self.c.as_ref(),
            a_aux_density: &self.a_aux_density,
            b_input_density: &self.b_input_density,
            b_aux_density: &self.b_aux_density,
        }
    }

    /// The shape every witness of this circuit synthesizes to.
    pub fn shape(&self) -> &CircuitShape {
        &self.shape
    }

    /// [`R1csRef::synthesize`] on this recording.
    pub fn synthesize(&self, witness: Witness) -> Result<Synthesized, WitnessError> {
        self.as_ref().synthesize(witness)
    }
}

/// A borrowed recording, owned by an [`R1cs`] or a [`cache::MappedR1cs`].
#[derive(Clone, Copy, Debug)]
pub struct R1csRef<'a> {
    /// Sizes and density counts.
    pub shape: &'a CircuitShape,
    /// Coefficients by id; id 0 is `1`, id 1 is `-1`.
    pub coeffs: &'a [Fr],
    /// A, one row per constraint (the appended input constraints included).
    pub a: MatrixRef<'a>,
    /// B.
    pub b: MatrixRef<'a>,
    /// C.
    pub c: MatrixRef<'a>,
    /// Aux variables in some A row.
    pub a_aux_density: &'a Density,
    /// Inputs in some B row.
    pub b_input_density: &'a Density,
    /// Aux variables in some B row.
    pub b_aux_density: &'a Density,
}

impl R1csRef<'_> {
    /// Sizes of the recording, for reports and for sizing a cache.
    pub fn stats(&self) -> R1csStats {
        let nonzeros = [self.a.nonzeros(), self.b.nonzeros(), self.c.nonzeros()];
        let matrix_bytes = self.a.bytes() + self.b.bytes() + self.c.bytes();
        R1csStats {
            nonzeros,
            distinct_coeffs: self.coeffs.len(),
            coeff_id_bytes: self.a.ids.width(),
            matrix_bytes,
            bytes_per_nonzero: matrix_bytes as f64 / nonzeros.iter().sum::<usize>().max(1) as f64,
        }
    }
}

/// What a recording holds, in numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct R1csStats {
    /// Nonzero terms of A, B and C.
    pub nonzeros: [usize; 3],
    /// Distinct coefficient values, `1` and `-1` included.
    pub distinct_coeffs: usize,
    /// Bytes per coefficient id (2 or 4).
    pub coeff_id_bytes: usize,
    /// Bytes of the three matrices (row offsets, columns, ids).
    pub matrix_bytes: usize,
    /// `matrix_bytes` over all nonzeros: row offsets included.
    pub bytes_per_nonzero: f64,
}
