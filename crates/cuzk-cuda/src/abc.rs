//! a = A·z, b = B·z, c = C·z on the device (kernels/prover/abc.cu) from a
//! pre-compiled circuit's matrices (cuzk-synth `precompiled`: CSR over
//! z = (inputs, aux), coefficient ids into a table whose ids 0 and 1 are
//! +1 and −1): with the matrices resident beside the key, only the witness
//! z crosses PCIe, not a, b and c.
//!
//! This layer knows no circuit type: [`HostMatrix`] borrows the three
//! arrays of one matrix, whatever made them.

use cuzk_field::limbs::FrLimbs;

use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::ffi::KernelArgs;

/// A matrix's coefficient ids, 16 or 32 bits wide.
#[derive(Clone, Copy, Debug)]
pub enum HostIds<'a> {
    U16(&'a [u16]),
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
    pub row_ptr: &'a [u32],
    pub cols: &'a [u32],
    pub ids: HostIds<'a>,
}

enum DeviceIds {
    U16(DeviceBuffer<u16>),
    U32(DeviceBuffer<u32>),
}

/// One CSR matrix in device memory.
pub struct DeviceMatrix {
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

impl DeviceR1cs {
    /// Checks the matrices' structure (offsets non-decreasing and within the
    /// terms, ids within the table) and uploads them with the table.
    pub fn upload(
        stream: &Stream,
        coeffs: &[FrLimbs],
        matrices: [HostMatrix<'_>; 3],
    ) -> Result<Self> {
        let kernel = "prover_spmv";
        ensure(kernel, coeffs.len() >= 2, || {
            format!(
                "a coefficient table of {} values (ids 0 and 1 are ±1)",
                coeffs.len()
            )
        })?;
        let rows = matrices[0].row_ptr.len().saturating_sub(1);
        let mut up = Vec::with_capacity(3);
        for (name, m) in ["A", "B", "C"].into_iter().zip(matrices) {
            let terms = m.cols.len();
            ensure(kernel, m.row_ptr.len() == rows + 1, || {
                format!(
                    "{name} has {} row offsets, A has {}",
                    m.row_ptr.len(),
                    rows + 1
                )
            })?;
            ensure(kernel, m.ids.len() == terms, || {
                format!("{name} has {terms} columns but {} ids", m.ids.len())
            })?;
            let ordered = m.row_ptr.first() == Some(&0)
                && m.row_ptr.windows(2).all(|w| w[0] <= w[1])
                && m.row_ptr.last().is_some_and(|&e| e as usize == terms);
            ensure(kernel, ordered, || {
                format!("{name}'s row offsets are not a CSR index over {terms} terms")
            })?;
            let max_id = match m.ids {
                HostIds::U16(v) => v.iter().copied().max().map(u32::from),
                HostIds::U32(v) => v.iter().copied().max(),
            };
            ensure(
                kernel,
                max_id.is_none_or(|id| (id as usize) < coeffs.len()),
                || {
                    format!(
                        "{name} names coefficient {max_id:?} of a table of {}",
                        coeffs.len()
                    )
                },
            )?;
            let width = m.cols.iter().copied().max().map_or(0, |c| c as usize + 1);
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
        let kernel = "prover_spmv";
        let n = z.len();
        ensure(kernel, n >= self.width(), || {
            format!(
                "z has {n} values, the matrices name {} columns",
                self.width()
            )
        })?;
        ensure(kernel, classes.len() >= n, || {
            format!("{} class bytes for {n} values", classes.len())
        })?;
        ensure(
            kernel,
            u32::try_from(n).is_ok() && u32::try_from(self.rows()).is_ok(),
            || format!("{n} values, {} rows: more than 2^32", self.rows()),
        )?;
        for o in &out {
            ensure(kernel, o.len() >= self.rows(), || {
                format!("an output of {} values for {} rows", o.len(), self.rows())
            })?;
        }
        let threads = 256u32;
        let blocks = |items: usize| (items as u32).div_ceil(threads).clamp(1, 1 << 16);
        let args = KernelArgs::new()
            .device_ptr(z.device_ptr())
            .u32(n as u32)
            .device_ptr(classes.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: prover_classify_z(z, n, cls): reads z[0..n), writes cls[0..n);
        // classes.len() >= n (checked).
        unsafe {
            stream.launch("prover_classify_z", grid(blocks(n), threads), args, || {
                format!("{n} values")
            })?;
        }
        for (m, o) in self.matrices.iter().zip(out) {
            if m.rows == 0 {
                continue;
            }
            let (name, ids) = match &m.ids {
                DeviceIds::U16(b) => ("prover_spmv_u16", b.device_ptr()),
                DeviceIds::U32(b) => ("prover_spmv_u32", b.device_ptr()),
            };
            let args = KernelArgs::new()
                .device_ptr(m.row_ptr.device_ptr())
                .device_ptr(m.cols.device_ptr())
                .device_ptr(ids)
                .device_ptr(self.coeffs.device_ptr())
                .device_ptr(z.device_ptr())
                .device_ptr(classes.device_ptr())
                .u32(m.rows as u32)
                .device_ptr(o.device_ptr());
            #[allow(unsafe_code)]
            // SAFETY: prover_spmv_*(row_ptr, cols, ids, coeffs, z, cls, rows, out):
            // row_ptr has rows + 1 non-decreasing offsets ending at the term
            // count (checked at upload), so every term index is within cols and
            // ids; every column is below width() <= z.len() <= cls.len(), every
            // id below the table's length (checked at upload); out has >= rows
            // values (checked above).
            unsafe {
                stream.launch(name, grid(blocks(m.rows), threads), args, || {
                    format!("{} rows, {} terms", m.rows, m.cols.len())
                })?;
            }
        }
        Ok(())
    }
}
