//! The compact sparse layout of a recorded R1CS matrix, owned or borrowed
//! (from a memory-mapped cache file).
//!
//! One matrix is CSR over the column space `z = (inputs, aux)`: column `i`
//! below `num_inputs` is input `i` (ONE is column 0), column
//! `num_inputs + j` is aux variable `j`. Per nonzero term it stores a `u32`
//! column and a coefficient id (`u16` when the circuit has at most 65,536
//! distinct coefficients, else `u32`) into the circuit's [`CoeffTable`];
//! per row a `u32` offset. That is 6 bytes per nonzero plus 4 per row and
//! matrix, against 36 for a column and a full 32-byte coefficient.

use blstrs::Scalar as Fr;
use ff::Field;

/// Coefficient id of `1`, in every table.
pub const ID_ONE: u32 = 0;
/// Coefficient id of `-1`, in every table.
pub const ID_MINUS_ONE: u32 = 1;

/// The distinct coefficients of a circuit, by id: id 0 is `1`, id 1 is `-1`
/// (so the commonest terms need no table lookup), the others in order of
/// first appearance while recording.
#[derive(Clone, Debug, PartialEq)]
pub struct CoeffTable {
    values: Vec<Fr>,
}

impl CoeffTable {
    /// A table holding only `1` and `-1`.
    pub fn new() -> Self {
        Self {
            values: vec![Fr::ONE, -Fr::ONE],
        }
    }

    /// A table from its values; `None` unless they start with `1, -1`.
    pub fn from_values(values: Vec<Fr>) -> Option<Self> {
        (values.len() >= 2 && values[0] == Fr::ONE && values[1] == -Fr::ONE)
            .then_some(Self { values })
    }

    /// The values by id.
    pub fn values(&self) -> &[Fr] {
        &self.values
    }

    /// Number of distinct coefficients (`1` and `-1` included).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Never true: `1` and `-1` are always present.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub(crate) fn push(&mut self, value: Fr) -> u32 {
        self.values.push(value);
        u32::try_from(self.values.len() - 1).expect("interner caps the table below 2^32")
    }
}

impl Default for CoeffTable {
    fn default() -> Self {
        Self::new()
    }
}

/// Coefficient ids of one matrix's terms, at the narrowest width the
/// circuit's table allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoeffIds {
    /// Tables of at most 65,536 values.
    U16(Vec<u16>),
    /// Larger tables.
    U32(Vec<u32>),
}

/// Borrowed [`CoeffIds`].
#[derive(Clone, Copy, Debug)]
pub enum CoeffIdsRef<'a> {
    /// Tables of at most 65,536 values.
    U16(&'a [u16]),
    /// Larger tables.
    U32(&'a [u32]),
}

impl CoeffIds {
    /// The ids in `u16` when every one fits, else as they are.
    pub(crate) fn narrowest(ids: Vec<u32>, table_len: usize) -> Self {
        if table_len <= 1 << 16 {
            // Every id is below the table's length, so the cast is exact.
            Self::U16(ids.into_iter().map(|id| id as u16).collect())
        } else {
            Self::U32(ids)
        }
    }

    /// Borrows the ids.
    pub fn as_ref(&self) -> CoeffIdsRef<'_> {
        match self {
            Self::U16(v) => CoeffIdsRef::U16(v),
            Self::U32(v) => CoeffIdsRef::U32(v),
        }
    }
}

impl CoeffIdsRef<'_> {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match self {
            Self::U16(v) => v.len(),
            Self::U32(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per id.
    pub fn width(&self) -> usize {
        match self {
            Self::U16(_) => 2,
            Self::U32(_) => 4,
        }
    }
}

/// One owned matrix (A, B or C) in CSR; see the `matrix` module's documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseMatrix {
    /// `rows + 1` offsets into `cols`/`ids`, starting at 0: row `r` is
    /// `row_ptr[r]..row_ptr[r + 1]`.
    pub(crate) row_ptr: Vec<u32>,
    /// Column of every term, ascending within a row's inputs and within its
    /// aux (bellperson's order), inputs first.
    pub(crate) cols: Vec<u32>,
    /// Coefficient id of every term.
    pub(crate) ids: CoeffIds,
}

impl SparseMatrix {
    /// Borrows the matrix.
    pub fn as_ref(&self) -> MatrixRef<'_> {
        MatrixRef {
            row_ptr: &self.row_ptr,
            cols: &self.cols,
            ids: self.ids.as_ref(),
        }
    }
}

/// A borrowed matrix: an owned [`SparseMatrix`] or a cache file's sections.
#[derive(Clone, Copy, Debug)]
pub struct MatrixRef<'a> {
    /// `rows + 1` offsets, starting at 0.
    pub row_ptr: &'a [u32],
    /// Column per term.
    pub cols: &'a [u32],
    /// Coefficient id per term.
    pub ids: CoeffIdsRef<'a>,
}

impl MatrixRef<'_> {
    /// Number of rows (constraints).
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Number of nonzero terms.
    pub fn nonzeros(&self) -> usize {
        self.cols.len()
    }

    /// Bytes of the three arrays.
    pub fn bytes(&self) -> usize {
        4 * self.row_ptr.len() + 4 * self.cols.len() + self.ids.width() * self.ids.len()
    }

    /// Row `r` as `(column, coefficient id)` pairs.
    ///
    /// # Panics
    ///
    /// If `r >= rows()`.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (start, end) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        let ids: Box<dyn Iterator<Item = u32>> = match self.ids {
            CoeffIdsRef::U16(v) => Box::new(v[start..end].iter().map(|&id| u32::from(id))),
            CoeffIdsRef::U32(v) => Box::new(v[start..end].iter().copied()),
        };
        self.cols[start..end].iter().copied().zip(ids)
    }
}
