//! a = A·z, b = B·z, c = C·z on the CPU (rayon over rows), giving the
//! [`Synthesized`] full synthesis gives.
//!
//! PoRep witnesses are mostly bits and its coefficients mostly ±1, so every
//! column is first classified as zero, one or other (one byte each, a
//! fraction of the 32-byte values the rows would otherwise touch): a term on
//! a zero is skipped, a term on a one adds its coefficient (±1 ones are
//! counted, and the count added once per row), and only the rest read the
//! value, with ±1 coefficients as an addition or subtraction.
//! Field arithmetic is exact, so each path gives the bits of the plain
//! multiply-and-add, in any order.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::matrix::{CoeffIdsRef, MatrixRef, ID_MINUS_ONE, ID_ONE};
use super::{R1csRef, Witness};
use crate::Synthesized;

/// A witness that does not fit the recorded circuit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessError {
    /// Wrong number of inputs.
    #[error(
        "the witness has {found} inputs but the recorded circuit has {expected} (ONE included)"
    )]
    Inputs {
        /// The recording's count.
        expected: usize,
        /// The witness's count.
        found: usize,
    },
    /// Wrong number of aux variables.
    #[error("the witness has {found} aux variables but the recorded circuit has {expected}")]
    Aux {
        /// The recording's count.
        expected: usize,
        /// The witness's count.
        found: usize,
    },
}

/// Column classes, one byte per column of `z`.
const ZERO: u8 = 0;
const ONE: u8 = 1;
const OTHER: u8 = 2;

/// Rows per rayon task: enough work to amortise the split (a row of a
/// SHA-256 circuit has ~2 terms), few enough to balance 16 cores.
const MIN_ROWS_PER_TASK: usize = 1 << 12;

impl R1csRef<'_> {
    /// a, b, c of `witness` (whose lengths must match the recording), and
    /// the recorded densities: what [`crate::synthesize`] returns for the
    /// circuit that produced the witness.
    pub fn synthesize(&self, witness: Witness) -> Result<Synthesized, WitnessError> {
        self.check(&witness)?;
        let [a, b, c] = self.products(
            &witness.input_assignment,
            &witness.aux_assignment,
            self.a.rows(),
        );
        Ok(self.assemble(witness, [a, b, c], None))
    }

    /// Checks that `witness` has the recording's numbers of inputs and aux.
    pub fn check(&self, witness: &Witness) -> Result<(), WitnessError> {
        if witness.input_assignment.len() != self.shape.num_inputs {
            return Err(WitnessError::Inputs {
                expected: self.shape.num_inputs,
                found: witness.input_assignment.len(),
            });
        }
        if witness.aux_assignment.len() != self.shape.num_aux {
            return Err(WitnessError::Aux {
                expected: self.shape.num_aux,
                found: witness.aux_assignment.len(),
            });
        }
        Ok(())
    }

    /// `[A·z, B·z, C·z]` for `z = (inputs, aux)`, each `len` long: the
    /// rows' values, then zeros (`len` at least the number of rows; a
    /// prover passes its domain size n and gets the padded vectors its
    /// quotient transforms in place).
    ///
    /// # Panics
    ///
    /// If `len` is below the number of rows, or `inputs` and `aux` do not
    /// have the recording's lengths ([`R1csRef::check`] first).
    pub fn products(&self, inputs: &[Fr], aux: &[Fr], len: usize) -> [Vec<Fr>; 3] {
        assert!(
            len >= self.a.rows(),
            "{len} values for {} rows",
            self.a.rows()
        );
        assert_eq!(
            (inputs.len(), aux.len()),
            (self.shape.num_inputs, self.shape.num_aux),
            "a witness of another shape"
        );
        let z = Columns {
            inputs,
            aux,
            classes: classify(inputs, aux),
        };
        let (a, (b, c)) = rayon::join(
            || z.product(&self.a, self.coeffs, len),
            || {
                rayon::join(
                    || z.product(&self.b, self.coeffs, len),
                    || z.product(&self.c, self.coeffs, len),
                )
            },
        );
        [a, b, c]
    }

    /// The `Synthesized` of `witness` with these a, b, c (empty when
    /// `deferred` says where they come from).
    pub(super) fn assemble(
        &self,
        witness: Witness,
        [a, b, c]: [Vec<Fr>; 3],
        deferred: Option<super::DeferredAbc>,
    ) -> Synthesized {
        Synthesized {
            a,
            b,
            c,
            input_assignment: witness.input_assignment,
            aux_assignment: witness.aux_assignment,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            deferred,
            compact_aux: None,
        }
    }
}

fn classify(inputs: &[Fr], aux: &[Fr]) -> Vec<u8> {
    let class = |v: &Fr| match *v {
        v if v == Fr::ZERO => ZERO,
        v if v == Fr::ONE => ONE,
        _ => OTHER,
    };
    inputs
        .par_iter()
        .chain(aux.par_iter())
        .with_min_len(1 << 14)
        .map(class)
        .collect()
}

/// The vector `z = (inputs, aux)` a matrix multiplies.
struct Columns<'a> {
    inputs: &'a [Fr],
    aux: &'a [Fr],
    classes: Vec<u8>,
}

impl Columns<'_> {
    fn product(&self, m: &MatrixRef<'_>, coeffs: &[Fr], len: usize) -> Vec<Fr> {
        let mut out = match m.ids {
            CoeffIdsRef::U16(ids) => self.product_with(m.row_ptr, m.cols, ids, coeffs, len),
            CoeffIdsRef::U32(ids) => self.product_with(m.row_ptr, m.cols, ids, coeffs, len),
        };
        out.resize(len, Fr::ZERO);
        out
    }

    fn product_with<I: Copy + Into<u32> + Sync>(
        &self,
        row_ptr: &[u32],
        cols: &[u32],
        ids: &[I],
        coeffs: &[Fr],
        len: usize,
    ) -> Vec<Fr> {
        let rows = row_ptr.len() - 1;
        let small = SmallInts::new();
        let mut out = Vec::with_capacity(len);
        (0..rows)
            .into_par_iter()
            .with_min_len(MIN_ROWS_PER_TASK)
            .map(|r| {
                let (start, end) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
                let mut acc = Fr::ZERO;
                // ±1 terms on ones, counted: one field addition per row
                // instead of one per term.
                let mut ones = 0i64;
                for (&col, &id) in cols[start..end].iter().zip(&ids[start..end]) {
                    self.add_term(&mut acc, &mut ones, col as usize, id.into(), coeffs);
                }
                if ones != 0 {
                    acc += small.get(ones);
                }
                acc
            })
            .collect_into_vec(&mut out);
        out
    }

    #[inline(always)]
    fn add_term(&self, acc: &mut Fr, ones: &mut i64, col: usize, id: u32, coeffs: &[Fr]) {
        match self.classes[col] {
            ZERO => {}
            ONE => match id {
                ID_ONE => *ones += 1,
                ID_MINUS_ONE => *ones -= 1,
                _ => *acc += coeffs[id as usize],
            },
            _ => {
                let value = match self.inputs.get(col) {
                    Some(v) => v,
                    None => &self.aux[col - self.inputs.len()],
                };
                match id {
                    ID_ONE => *acc += value,
                    ID_MINUS_ONE => *acc -= value,
                    _ => *acc += coeffs[id as usize] * value,
                }
            }
        }
    }
}

/// `n` as a field element for small `|n|` by table (the count of ±1 terms
/// on ones in a row: a few hundred at most in SHA-256 circuits), else by
/// conversion.
struct SmallInts {
    positive: Vec<Fr>,
    negative: Vec<Fr>,
}

impl SmallInts {
    const LEN: usize = 1 << 10;

    fn new() -> Self {
        let positive: Vec<Fr> = (0..Self::LEN as u64).map(Fr::from).collect();
        let negative = positive.iter().map(|v| -*v).collect();
        Self { positive, negative }
    }

    fn get(&self, n: i64) -> Fr {
        let magnitude = n.unsigned_abs();
        match (self.positive.get(magnitude as usize), n < 0) {
            (Some(_), true) => self.negative[magnitude as usize],
            (Some(v), false) => *v,
            (None, true) => -Fr::from(magnitude),
            (None, false) => Fr::from(magnitude),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ints_are_the_field_elements_of_the_integers() {
        let small = SmallInts::new();
        for n in [
            -5000i64, -1025, -1024, -1023, -2, -1, 0, 1, 2, 1023, 1024, 1025, 5000,
        ] {
            let expected = match n < 0 {
                true => -Fr::from(n.unsigned_abs()),
                false => Fr::from(n as u64),
            };
            assert_eq!(small.get(n), expected, "{n}");
        }
        assert_eq!(small.get(i64::MIN), -Fr::from(1u64 << 63));
    }
}
