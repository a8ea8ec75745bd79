//! Recording a circuit's R1CS once: [`R1csRecorder`] is a constraint system
//! that keeps every constraint's A, B and C as sparse rows with interned
//! coefficients, and never looks at a value.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::matrix::{CoeffIds, CoeffTable, SparseMatrix, ID_MINUS_ONE, ID_ONE};
use super::R1cs;
use crate::assignment::domain_log2;
use crate::{CircuitShape, Density};

/// While recording, the input count is not final (`alloc_input` interleaves
/// with `enforce`), so a column is tagged: aux `j` is `j`, input `i` is
/// `INPUT_TAG | i`. [`R1csRecorder::finish`] maps them to `(inputs, aux)`.
const INPUT_TAG: u32 = 1 << 31;

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The circuit's synthesis failed.
    #[error("synthesis failed while recording the circuit")]
    Synthesis(#[source] SynthesisError),
    /// The circuit has more variables than a `u32` column can address.
    #[error(
        "{inputs} inputs and {aux} aux variables do not fit the recording's u32 columns \
         (at most 2^31 of each and 2^32 in all)"
    )]
    TooManyVariables {
        /// Inputs allocated, ONE included.
        inputs: u64,
        /// Aux variables allocated.
        aux: u64,
    },
    /// One matrix has more terms than a `u32` row offset can address.
    #[error("matrix {matrix} has more than 2^32 - 1 nonzero terms")]
    TooManyTerms {
        /// `'A'`, `'B'` or `'C'`.
        matrix: char,
    },
}

/// Records a circuit the way bellperson's prover sees it: allocates ONE,
/// runs the circuit, appends `input_i * 0 = 0` for every input.
///
/// Values are never computed (as in key generation), so a circuit without a
/// witness records as well as one with.
pub fn record<C: Circuit<Fr>>(circuit: C) -> Result<R1cs, RecordError> {
    let mut cs = R1csRecorder::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))
        .map_err(RecordError::Synthesis)?;
    circuit
        .synthesize(&mut cs)
        .map_err(RecordError::Synthesis)?;
    cs.finish()
}

/// A constraint system that records A, B and C; see [`record`].
///
/// Per `enforce`, each linear combination's terms with a nonzero coefficient
/// (after bellperson merged repeated variables) become one row: inputs first,
/// then aux, each ascending, as bellperson iterates them. Zero-coefficient
/// terms are dropped: they add nothing to an evaluation and set no density
/// bit. `alloc`'s and `alloc_input`'s value closures are never called.
///
/// Extensible: pieces recorded on their own systems (ONE allocated first in
/// each) and joined in order with [`ConstraintSystem::extend`] give the
/// same recording, coefficient ids included, as one sequential recording.
#[derive(Debug, Default)]
pub struct R1csRecorder {
    num_inputs: u64,
    num_aux: u64,
    coeffs: Interner,
    a: RawMatrix,
    b: RawMatrix,
    c: RawMatrix,
    /// The first limit exceeded; recording stops growing from then on.
    overflow: Option<Overflow>,
}

#[derive(Debug, Clone, Copy)]
enum Overflow {
    Variables,
    Terms(char),
}

/// One matrix while recording: tagged columns and `u32` ids.
#[derive(Debug)]
struct RawMatrix {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    ids: Vec<u32>,
}

impl Default for RawMatrix {
    fn default() -> Self {
        Self {
            row_ptr: vec![0],
            cols: Vec::new(),
            ids: Vec::new(),
        }
    }
}

impl RawMatrix {
    /// Appends one row; false when the term count would overflow `u32`.
    fn push_row(&mut self, lc: &LinearCombination<Fr>, coeffs: &mut Interner) -> bool {
        let start = self.cols.len();
        for (&i, coeff) in lc.iter_inputs() {
            if *coeff != Fr::ZERO {
                self.cols.push(INPUT_TAG | i as u32);
                self.ids.push(coeffs.intern(coeff));
            }
        }
        for (&j, coeff) in lc.iter_aux() {
            if *coeff != Fr::ZERO {
                self.cols.push(j as u32);
                self.ids.push(coeffs.intern(coeff));
            }
        }
        match u32::try_from(self.cols.len()) {
            Ok(end) => {
                self.row_ptr.push(end);
                true
            }
            Err(_) => {
                self.cols.truncate(start);
                self.ids.truncate(start);
                false
            }
        }
    }

    fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }
}

/// The coefficient table while recording, with its reverse map.
#[derive(Debug)]
struct Interner {
    table: CoeffTable,
    ids: HashMap<[u64; 4], u32, BuildHasherDefault<LimbHasher>>,
    minus_one: Fr,
}

impl Default for Interner {
    fn default() -> Self {
        Self {
            table: CoeffTable::new(),
            ids: HashMap::default(),
            minus_one: -Fr::ONE,
        }
    }
}

impl Interner {
    #[inline]
    fn intern(&mut self, coeff: &Fr) -> u32 {
        if *coeff == Fr::ONE {
            return ID_ONE;
        }
        if *coeff == self.minus_one {
            return ID_MINUS_ONE;
        }
        // Montgomery limbs are a canonical key: no conversion needed.
        let key = blst::blst_fr::from(*coeff).l;
        let table = &mut self.table;
        *self.ids.entry(key).or_insert_with(|| table.push(*coeff))
    }
}

/// Multiplicative hashing of the first limb: limbs of distinct field
/// elements differ almost surely there, and HashMap checks equality anyway.
#[derive(Default)]
struct LimbHasher(u64);

impl Hasher for LimbHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, limb: u64) {
        self.0 = (self.0.rotate_left(29) ^ limb).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

impl R1csRecorder {
    /// An empty recorder; not even the ONE input is allocated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Constraints recorded so far.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Distinct coefficients so far (`1` and `-1` included).
    pub fn num_coeffs(&self) -> usize {
        self.coeffs.table.len()
    }

    /// Appends `input_i * 0 = 0` for every input, maps the columns to
    /// `(inputs, aux)` and derives the densities.
    pub fn finish(mut self) -> Result<R1cs, RecordError> {
        let (inputs, aux) = (self.num_inputs, self.num_aux);
        match self.overflow {
            Some(Overflow::Variables) => return Err(RecordError::TooManyVariables { inputs, aux }),
            Some(Overflow::Terms(matrix)) => return Err(RecordError::TooManyTerms { matrix }),
            None => {}
        }
        if inputs + aux > 1 << 32 {
            return Err(RecordError::TooManyVariables { inputs, aux });
        }
        for i in 0..inputs as u32 {
            let one = LinearCombination::zero() + Variable::new_unchecked(Index::Input(i as usize));
            let zero = LinearCombination::zero();
            let ok = self.a.push_row(&one, &mut self.coeffs)
                && self.b.push_row(&zero, &mut self.coeffs)
                && self.c.push_row(&zero, &mut self.coeffs);
            if !ok {
                return Err(RecordError::TooManyTerms { matrix: 'A' });
            }
        }
        let table_len = self.coeffs.table.len();
        let num_inputs = inputs as u32;
        let finish_matrix = |raw: RawMatrix| {
            let mut cols = raw.cols;
            cols.par_iter_mut().for_each(|col| {
                *col = if *col & INPUT_TAG != 0 {
                    *col & !INPUT_TAG
                } else {
                    num_inputs + *col
                };
            });
            SparseMatrix {
                row_ptr: raw.row_ptr,
                cols,
                ids: CoeffIds::narrowest(raw.ids, table_len),
            }
        };
        let (a, b, c) = (
            finish_matrix(self.a),
            finish_matrix(self.b),
            finish_matrix(self.c),
        );
        let (inputs, aux) = (inputs as usize, aux as usize);
        let a_aux_density = column_density(&a.cols, inputs, aux);
        let b_input_density = column_density(&b.cols, 0, inputs);
        let b_aux_density = column_density(&b.cols, inputs, aux);
        let num_constraints = a.row_ptr.len() - 1;
        let shape = CircuitShape {
            num_constraints,
            num_inputs: inputs,
            num_aux: aux,
            a_aux_density: a_aux_density.count_ones(),
            b_input_density: b_input_density.count_ones(),
            b_aux_density: b_aux_density.count_ones(),
            domain_log2: domain_log2(num_constraints),
        };
        Ok(R1cs {
            shape,
            coeffs: self.coeffs.table,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        })
    }

    fn record_overflow(&mut self, overflow: Overflow) {
        self.overflow.get_or_insert(overflow);
    }
}

/// The bitmap of columns `first..first + len` appearing in `cols`, bit `i`
/// for column `first + i`.
fn column_density(cols: &[u32], first: usize, len: usize) -> Density {
    let words = len.div_ceil(64);
    let (lo, hi) = (first as u64, (first + len) as u64);
    let set = |mut bits: Vec<u64>, chunk: &[u32]| {
        for &col in chunk {
            let col = u64::from(col);
            if (lo..hi).contains(&col) {
                let i = (col - lo) as usize;
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        bits
    };
    let bits = cols
        .par_chunks(1 << 22)
        .fold(|| vec![0u64; words], set)
        .reduce(
            || vec![0u64; words],
            |mut x, y| {
                x.iter_mut().zip(&y).for_each(|(x, y)| *x |= y);
                x
            },
        );
    Density::from_words(bits, len)
}

impl ConstraintSystem<Fr> for R1csRecorder {
    crate::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _annotation: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.num_aux;
        if index >= u64::from(INPUT_TAG) {
            self.record_overflow(Overflow::Variables);
        }
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(index as usize)))
    }

    fn alloc_input<F, A, AR>(&mut self, _annotation: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.num_inputs;
        if index >= u64::from(INPUT_TAG) {
            self.record_overflow(Overflow::Variables);
        }
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(index as usize)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        if self.overflow.is_some() {
            return;
        }
        let (inputs, aux) = (self.num_inputs, self.num_aux);
        let check = |lc: &LinearCombination<Fr>| {
            // As bellperson's prover, which indexes its assignments with them.
            for (&i, _) in lc.iter_inputs() {
                assert!((i as u64) < inputs, "input {i} of {inputs} in a constraint");
            }
            for (&j, _) in lc.iter_aux() {
                assert!((j as u64) < aux, "aux {j} of {aux} in a constraint");
            }
        };
        for (matrix, name, lc) in [
            (&mut self.a, 'A', a(LinearCombination::zero())),
            (&mut self.b, 'B', b(LinearCombination::zero())),
            (&mut self.c, 'C', c(LinearCombination::zero())),
        ] {
            check(&lc);
            if !matrix.push_row(&lc, &mut self.coeffs) {
                self.overflow.get_or_insert(Overflow::Terms(name));
                return;
            }
        }
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`, recorded on its own system whose input 0 was ONE:
    /// its ONE becomes ours, its other inputs and its aux variables follow
    /// ours, and its coefficients are re-interned in its table's order
    /// (first appearance), which is the order a sequential recording would
    /// have met them in.
    fn extend(&mut self, other: &Self) {
        if let Some(overflow) = other.overflow {
            self.record_overflow(overflow);
        }
        if self.overflow.is_some() {
            return;
        }
        assert!(other.num_inputs >= 1, "an extended recorder has ONE");
        let ids: Vec<u32> = other
            .coeffs
            .table
            .values()
            .iter()
            .map(|v| self.coeffs.intern(v))
            .collect();
        let (input_base, aux_base) = (self.num_inputs - 1, self.num_aux);
        self.num_inputs += other.num_inputs - 1;
        self.num_aux += other.num_aux;
        if self.num_inputs > u64::from(INPUT_TAG) || self.num_aux > u64::from(INPUT_TAG) {
            self.record_overflow(Overflow::Variables);
            return;
        }
        let remap_col = |col: u32| -> u32 {
            if col & INPUT_TAG == 0 {
                col + aux_base as u32
            } else if col == INPUT_TAG {
                col
            } else {
                col + input_base as u32
            }
        };
        for (mine, theirs, name) in [
            (&mut self.a, &other.a, 'A'),
            (&mut self.b, &other.b, 'B'),
            (&mut self.c, &other.c, 'C'),
        ] {
            let base = mine.cols.len() as u64;
            if base + theirs.cols.len() as u64 > u64::from(u32::MAX) {
                self.overflow.get_or_insert(Overflow::Terms(name));
                return;
            }
            let base = base as u32;
            let (row_ptr, (cols, id_vec)) = (&mut mine.row_ptr, (&mut mine.cols, &mut mine.ids));
            rayon::join(
                || row_ptr.par_extend(theirs.row_ptr[1..].par_iter().map(|&p| p + base)),
                || {
                    rayon::join(
                        || cols.par_extend(theirs.cols.par_iter().map(|&c| remap_col(c))),
                        || id_vec.par_extend(theirs.ids.par_iter().map(|&id| ids[id as usize])),
                    )
                },
            );
        }
    }
}
