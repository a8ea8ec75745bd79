//! a = A·z, b = B·z, c = C·z on the device (kernels/prover/abc.cu) from a
//! pre-compiled circuit's matrices (cuzk-synth `precompiled`: CSR over
//! z = (inputs, aux), coefficient ids into a table whose ids 0 and 1 are
//! +1 and −1): with the matrices resident beside the key, only the witness
//! z crosses PCIe, not a, b and c.
//!
//! This layer knows no circuit type: [`HostMatrix`] borrows the three
//! arrays of one matrix, whatever made them.

use cuzk_field::limbs::FrLimbs;

use crate::decl::{self, ProverSpmv};
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::{DevPtr, DevPtrMut, Kernel};

mod pinned;
mod prefetch;
mod streamed;

pub use pinned::{ChunkedR1cs, PinnedR1cs};
pub use streamed::{streamed_bytes, StreamedR1cs, Streaming, PINNED_SETS};

/// The SpMV kernels' name in messages (`prover_spmv_u16` / `_u32`).
const SPMV: &str = "prover_spmv";

/// A matrix's coefficient ids, 16 or 32 bits wide.
#[derive(Clone, Copy, Debug)]
pub enum HostIds<'a> {
    /// 16-bit ids (at most 65,536 distinct coefficients).
    U16(&'a [u16]),
    /// 32-bit ids.
    U32(&'a [u32]),
}

impl HostIds<'_> {
    fn len(&self) -> usize {
        match self {
            HostIds::U16(v) => v.len(),
            HostIds::U32(v) => v.len(),
        }
    }
}

/// One CSR matrix on the host: `row_ptr` (rows + 1 offsets), `cols` and
/// `ids` (one per term).
#[derive(Clone, Copy, Debug)]
pub struct HostMatrix<'a> {
    /// Row `r`'s terms are `row_ptr[r]..row_ptr[r + 1]` of `cols` and `ids`.
    pub row_ptr: &'a [u32],
    /// Each term's column: the witness variable it multiplies.
    pub cols: &'a [u32],
    /// Each term's coefficient, as an index into the coefficient table.
    pub ids: HostIds<'a>,
}

enum DeviceIds {
    U16(DeviceBuffer<u16>),
    U32(DeviceBuffer<u32>),
}

/// One CSR matrix in device memory.
pub(crate) struct DeviceMatrix {
    rows: usize,
    /// One past the largest column any term names (z must be at least this long).
    width: usize,
    row_ptr: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    ids: DeviceIds,
}

impl std::fmt::Debug for DeviceMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMatrix")
            .field("rows", &self.rows)
            .field("terms", &self.cols.len())
            .finish_non_exhaustive()
    }
}

/// A circuit's A, B and C and its coefficient table, in device memory.
#[derive(Debug)]
pub struct DeviceR1cs {
    coeffs: DeviceBuffer<FrLimbs>,
    coeff_count: usize,
    matrices: [DeviceMatrix; 3],
}

/// Bytes [`DeviceR1cs::upload`] takes from the arena for these matrices.
pub fn device_bytes(coeffs: usize, matrices: &[HostMatrix<'_>; 3]) -> u64 {
    let align = crate::arena::ALIGN;
    let round = |b: u64| b.div_ceil(align) * align;
    let mut total = round(coeffs as u64 * 32);
    for m in matrices {
        let id_width = match m.ids {
            HostIds::U16(_) => 2,
            HostIds::U32(_) => 4,
        };
        total += round(m.row_ptr.len() as u64 * 4)
            + round(m.cols.len() as u64 * 4)
            + round(m.ids.len() as u64 * id_width);
    }
    total
}

/// The coefficient table's one rule: ids 0 and 1 are +1 and −1.
fn check_table(coeffs: &[FrLimbs]) -> Result<()> {
    ensure(SPMV, coeffs.len() >= 2, || {
        format!(
            "a coefficient table of {} values (ids 0 and 1 are ±1)",
            coeffs.len()
        )
    })
}

/// The checks that cost nothing: `rows` + 1 offsets starting at 0 and
/// ending at the term count, one id per term (and `ordered`, the caller's
/// finding on the offsets between).
fn check_ends(name: &str, m: &HostMatrix<'_>, rows: usize, ordered: bool) -> Result<()> {
    let terms = m.cols.len();
    ensure(SPMV, m.row_ptr.len() == rows + 1, || {
        format!(
            "{name} has {} row offsets, A has {}",
            m.row_ptr.len(),
            rows + 1
        )
    })?;
    ensure(SPMV, m.ids.len() == terms, || {
        format!("{name} has {terms} columns but {} ids", m.ids.len())
    })?;
    let csr = ordered
        && m.row_ptr.first() == Some(&0)
        && m.row_ptr.last().is_some_and(|&e| e as usize == terms);
    ensure(SPMV, csr, || {
        format!("{name}'s row offsets are not a CSR index over {terms} terms")
    })
}

/// Checks one matrix's structure (`rows` + 1 non-decreasing offsets ending
/// at its term count, one id per term, every id within a table of
/// `table` entries); returns its width (one past its largest column).
fn check_matrix(name: &str, m: &HostMatrix<'_>, rows: usize, table: usize) -> Result<usize> {
    let kernel = SPMV;
    check_ends(name, m, rows, m.row_ptr.windows(2).all(|w| w[0] <= w[1]))?;
    let max_id = match m.ids {
        HostIds::U16(v) => v.iter().copied().max().map(u32::from),
        HostIds::U32(v) => v.iter().copied().max(),
    };
    ensure(
        kernel,
        max_id.is_none_or(|id| (id as usize) < table),
        || format!("{name} names coefficient {max_id:?} of a table of {table}"),
    )?;
    Ok(m.cols.iter().copied().max().map_or(0, |c| c as usize + 1))
}

/// The checks `evaluate` makes of z, its class scratch and the outputs,
/// then the classification of z (0, 1, other) the SpMV reads.
fn classify(
    stream: &Stream,
    z: &DeviceBuffer<FrLimbs>,
    classes: &mut DeviceBuffer<u8>,
    width: usize,
    rows: usize,
    out_lens: &[usize],
) -> Result<()> {
    let kernel = SPMV;
    let n = z.len();
    ensure(kernel, n >= width, || {
        format!("z has {n} values, the matrices name {width} columns")
    })?;
    ensure(kernel, classes.len() >= n, || {
        format!("{} class bytes for {n} values", classes.len())
    })?;
    ensure(
        kernel,
        u32::try_from(n).is_ok() && u32::try_from(rows).is_ok(),
        || format!("{n} values, {rows} rows: more than 2^32"),
    )?;
    for &len in out_lens {
        ensure(kernel, len >= rows, || {
            format!("an output of {len} values for {rows} rows")
        })?;
    }
    let args = (z.arg(), n as u32, classes.arg_mut());
    #[allow(unsafe_code)]
    // SAFETY: reads z[0..n), writes cls[0..n); classes.len() >= n (checked).
    unsafe {
        stream.launch(
            decl::prover_classify_z,
            grid(blocks(n), THREADS),
            args,
            || format!("{n} values"),
        )
    }
}

const THREADS: u32 = 256;

fn blocks(items: usize) -> u32 {
    (items as u32).div_ceil(THREADS).clamp(1, 1 << 16)
}

/// Device pointers of one CSR matrix (or one chunk of rows of one) as the
/// SpMV kernels take them, but for the ids (whose width picks the kernel).
struct SpmvArgs {
    row_ptr: DevPtr<u32>,
    cols: DevPtr<u32>,
    rows: usize,
    terms: usize,
    coeffs: DevPtr<FrLimbs>,
    z: DevPtr<FrLimbs>,
    classes: DevPtr<u8>,
    /// The first row's output.
    out: DevPtrMut<FrLimbs>,
}

/// [`spmv`] with the kernel of the ids' width.
///
/// # Safety
/// As [`spmv`]'s.
#[allow(unsafe_code)]
unsafe fn spmv_ids(stream: &Stream, ids: &DeviceIds, m: &SpmvArgs) -> Result<()> {
    // SAFETY: forwarded to the caller.
    unsafe {
        match ids {
            DeviceIds::U16(d) => spmv(stream, decl::prover_spmv_u16, d.arg(), m),
            DeviceIds::U32(d) => spmv(stream, decl::prover_spmv_u32, d.arg(), m),
        }
    }
}

/// Queues `out[r] = (M · z)[r]` for the rows of `m` (`out`: the first row's
/// output) with the SpMV kernel for ids of type `I`.
///
/// # Safety
///
/// `m.row_ptr` must point to `m.rows` + 1 non-decreasing offsets from 0 to
/// `m.terms`, `m.cols` and `ids` to `m.terms` entries each, every column
/// below `z`'s and `classes`' lengths, every id below the table's length,
/// and `out` to at least `m.rows` values.
#[allow(unsafe_code, clippy::too_many_arguments)]
unsafe fn spmv<I>(
    stream: &Stream,
    kernel: Kernel<ProverSpmv<I>>,
    ids: DevPtr<I>,
    m: &SpmvArgs,
) -> Result<()> {
    let args = (
        m.row_ptr,
        m.cols,
        ids,
        m.coeffs,
        m.z,
        m.classes,
        m.rows as u32,
        m.out,
    );
    // SAFETY: the caller's contract is the kernel's (see above).
    unsafe {
        stream.launch(kernel, grid(blocks(m.rows), THREADS), args, || {
            format!("{} rows, {} terms", m.rows, m.terms)
        })
    }
}

impl DeviceR1cs {
    /// Checks the matrices' structure (offsets non-decreasing and within the
    /// terms, ids within the table) and uploads them with the table.
    pub fn upload(
        stream: &Stream,
        coeffs: &[FrLimbs],
        matrices: [HostMatrix<'_>; 3],
    ) -> Result<Self> {
        check_table(coeffs)?;
        let rows = matrices[0].row_ptr.len().saturating_sub(1);
        let mut up = Vec::with_capacity(3);
        for (name, m) in ["A", "B", "C"].into_iter().zip(matrices) {
            let width = check_matrix(name, &m, rows, coeffs.len())?;
            let ids = match m.ids {
                HostIds::U16(v) => DeviceIds::U16(stream.upload_new(v)?),
                HostIds::U32(v) => DeviceIds::U32(stream.upload_new(v)?),
            };
            up.push(DeviceMatrix {
                rows,
                width,
                row_ptr: stream.upload_new(m.row_ptr)?,
                cols: stream.upload_new(m.cols)?,
                ids,
            });
        }
        let mut it = up.into_iter();
        let mut next = || it.next().expect("three matrices");
        Ok(DeviceR1cs {
            coeffs: stream.upload_new(coeffs)?,
            coeff_count: coeffs.len(),
            matrices: [next(), next(), next()],
        })
    }

    /// Rows of each matrix (the constraints, input constraints included).
    pub fn rows(&self) -> usize {
        self.matrices[0].rows
    }

    /// Entries of the coefficient table.
    pub fn coefficients(&self) -> usize {
        self.coeff_count
    }

    /// Columns z must have (inputs then aux).
    pub fn width(&self) -> usize {
        self.matrices.iter().map(|m| m.width).max().unwrap_or(0)
    }

    /// Queues `out[i][r] = (M_i · z)[r]` for M = A, B, C on `stream`; rows
    /// past `rows()` of each output are left as they are (a domain's zero
    /// padding). `classes` is scratch of at least `z.len()` bytes.
    pub fn evaluate(
        &self,
        stream: &Stream,
        z: &DeviceBuffer<FrLimbs>,
        classes: &mut DeviceBuffer<u8>,
        out: [&mut DeviceBuffer<FrLimbs>; 3],
    ) -> Result<()> {
        let (width, rows) = (self.width(), self.rows());
        each_classified(stream, z, classes, width, rows, out, |classes, which, o| {
            self.evaluate_classified(stream, z, classes, which, o)
        })
    }

    /// One matrix at a time (the lean H polynomial makes b only after it has
    /// folded a's NTTs, so a, b and c are never all on the device):
    /// [`DeviceR1cs::classify`] z once, then `out[r] = (M · z)[r]` for
    /// matrix `which` (0, 1, 2: A, B, C) per call.
    pub fn classify(
        &self,
        stream: &Stream,
        z: &DeviceBuffer<FrLimbs>,
        classes: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        classify(stream, z, classes, self.width(), self.rows(), &[])
    }

    /// `out[r] = (M · z)[r]` for matrix `which` (0: A, 1: B, 2: C) with z's
    /// classes from [`DeviceR1cs::classify`] of this z.
    pub fn evaluate_classified(
        &self,
        stream: &Stream,
        z: &DeviceBuffer<FrLimbs>,
        classes: &DeviceBuffer<u8>,
        which: usize,
        out: &mut DeviceBuffer<FrLimbs>,
    ) -> Result<()> {
        let m = &self.matrices[which];
        check_evaluation(z, classes, self.width(), self.rows(), which, out)?;
        if m.rows == 0 {
            return Ok(());
        }
        let args = SpmvArgs {
            row_ptr: m.row_ptr.arg(),
            cols: m.cols.arg(),
            rows: m.rows,
            terms: m.cols.len(),
            coeffs: self.coeffs.arg(),
            z: z.arg(),
            classes: classes.arg(),
            out: out.arg_mut(),
        };
        #[allow(unsafe_code)]
        // SAFETY: row_ptr has rows + 1 non-decreasing offsets ending at the
        // term count (checked at upload), so every term index is within
        // cols and ids; every column is below width() <= z.len() <=
        // classes.len(), every id below the table's length (checked at
        // upload and by check_evaluation); out has >= rows values (checked).
        unsafe {
            spmv_ids(stream, &m.ids, &args)
        }
    }
}

/// [`classify`] z once (the outputs' lengths checked), then `each(classes,
/// which, out[which])` for A, B and C: what evaluating all three is, from
/// resident or streamed matrices.
fn each_classified(
    stream: &Stream,
    z: &DeviceBuffer<FrLimbs>,
    classes: &mut DeviceBuffer<u8>,
    width: usize,
    rows: usize,
    out: [&mut DeviceBuffer<FrLimbs>; 3],
    mut each: impl FnMut(&DeviceBuffer<u8>, usize, &mut DeviceBuffer<FrLimbs>) -> Result<()>,
) -> Result<()> {
    let lens = out.each_ref().map(|o| o.len());
    classify(stream, z, classes, width, rows, &lens)?;
    for (which, o) in out.into_iter().enumerate() {
        each(classes, which, o)?;
    }
    Ok(())
}

/// The checks one matrix's evaluation makes (those `classify` made of z and
/// its classes, again, and the output's length): no launch reads or writes
/// past a buffer whatever the caller passes.
fn check_evaluation(
    z: &DeviceBuffer<FrLimbs>,
    classes: &DeviceBuffer<u8>,
    width: usize,
    rows: usize,
    which: usize,
    out: &DeviceBuffer<FrLimbs>,
) -> Result<()> {
    let kernel = SPMV;
    ensure(kernel, which < 3, || format!("matrix {which} of A, B, C"))?;
    ensure(kernel, z.len() >= width && classes.len() >= z.len(), || {
        format!(
            "z has {} values and {} class bytes, the matrices name {width} columns",
            z.len(),
            classes.len()
        )
    })?;
    ensure(kernel, out.len() >= rows, || {
        format!("an output of {} values for {rows} rows", out.len())
    })
}
