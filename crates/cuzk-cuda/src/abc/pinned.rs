//! The matrices laid out once for streaming ([`ChunkedR1cs`]) and
//! page-locked in host memory where they are ([`PinnedR1cs`]): every
//! partition's chunks then cross straight from host memory on the copy
//! engine, with no fill pass on the host, and what the staged path checks
//! chunk by chunk as it crosses is checked once per recording.
//!
//! The layout splits each matrix into the staged path's chunks (the same
//! rows, the same terms: [`next_chunk`]) and stores each chunk's row offsets
//! rebased to its first term, one copy per chunk (a chunk's last offset is
//! the next one's first, rebased differently), so the SpMV kernels read a
//! chunk as they read a whole matrix. Columns and ids are the recording's,
//! copied into memory the process owns (a mapped cache file's pages may not
//! be page-locked: they belong to the page cache).

use std::sync::Arc;

use cuzk_field::limbs::as_bytes;
use rayon::prelude::*;

use super::{check_ends, HostIds, HostMatrix, SPMV};
use crate::device::PAGE;
use crate::device::{Gpu, HostPin};
use crate::error::{ensure, Result};

/// The chunk of `m` (named `name`, `rows` rows) that starts at row `r0`:
/// every row up to the last whose end stays within `chunk_terms` terms of
/// row `r0`'s start, at most `chunk_terms` rows and at least one. Returns
/// (r1, the first term, one past the last); a row longer than a chunk is
/// refused. Offsets out of order find some row: the caller checks the
/// order of the offsets it copies.
pub(super) fn next_chunk(
    m: &HostMatrix<'_>,
    name: &str,
    r0: usize,
    rows: usize,
    chunk_terms: usize,
) -> Result<(usize, u32, u32)> {
    let base = m.row_ptr[r0];
    let limit = (r0 + chunk_terms).min(rows);
    let fit = m.row_ptr[r0 + 1..=limit]
        .partition_point(|&end| end.wrapping_sub(base) as usize <= chunk_terms);
    let r1 = r0 + fit.max(1);
    let end = m.row_ptr[r1];
    let terms = end.wrapping_sub(base) as usize;
    ensure(SPMV, end >= base && terms <= chunk_terms, || {
        format!(
            "chunks of {chunk_terms} terms for {name}'s row {r0} of {} terms",
            i64::from(end) - i64::from(base)
        )
    })?;
    Ok((r1, base, end))
}

/// One chunk of one matrix: rows `r0..r1`, terms `base..base + terms`, its
/// rebased offsets (`r1 - r0 + 1` of them) at `offsets_at` in the matrix's
/// offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub(crate) r0: usize,
    pub(crate) r1: usize,
    pub(crate) base: usize,
    pub(crate) terms: usize,
    pub(crate) offsets_at: usize,
}

/// Values in whole pages of their own: a vector a page longer at each end,
/// used from its first page boundary. Page-locking works on whole pages,
/// and a copy from ordinary memory that shares a locked page fails in the
/// driver (CUDA_ERROR_INVALID_VALUE): a heap allocation of the recording
/// itself, beside the layout, was such a neighbour. Here every page the pin
/// locks holds this vector alone.
pub(crate) struct PageOwned<T> {
    buf: Vec<T>,
    at: usize,
    len: usize,
}

impl<T: Copy + Default> PageOwned<T> {
    /// `len` default values in pages of their own.
    fn new(len: usize) -> Self {
        let size = std::mem::size_of::<T>();
        let per_page = PAGE / size;
        let buf = vec![T::default(); len + 2 * per_page];
        let addr = buf.as_ptr() as usize;
        // T's size divides the page, and the vector is aligned to it.
        let at = (addr.next_multiple_of(PAGE) - addr) / size;
        PageOwned { buf, at, len }
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        &self.buf[self.at..self.at + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.at..self.at + self.len]
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// A matrix's ids, owned.
pub(crate) enum OwnedIds {
    U16(PageOwned<u16>),
    U32(PageOwned<u32>),
}

/// One matrix laid out in chunks.
pub(crate) struct ChunkedMatrix {
    pub(crate) chunks: Vec<Chunk>,
    /// Each chunk's row offsets from 0 to its term count, one after another.
    pub(crate) offsets: PageOwned<u32>,
    pub(crate) cols: PageOwned<u32>,
    pub(crate) ids: OwnedIds,
}

impl ChunkedMatrix {
    /// The rebased row offsets of chunk `c`.
    pub(crate) fn offsets_of(&self, c: &Chunk) -> &[u32] {
        &self.offsets.as_slice()[c.offsets_at..c.offsets_at + (c.r1 - c.r0) + 1]
    }

    /// The columns of chunk `c`'s terms.
    pub(crate) fn cols_of(&self, c: &Chunk) -> &[u32] {
        &self.cols.as_slice()[c.base..c.base + c.terms]
    }
}

/// A recording's A, B and C laid out for streaming in chunks of at most
/// `chunk_terms` terms, checked whole: each chunk's offsets ordered from 0
/// to its term count, every id within the coefficient table; the widest
/// column kept, for z's length at each evaluation.
pub struct ChunkedR1cs {
    chunk_terms: usize,
    rows: usize,
    coeff_count: usize,
    width: usize,
    matrices: [ChunkedMatrix; 3],
}

impl std::fmt::Debug for ChunkedR1cs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkedR1cs")
            .field("chunk_terms", &self.chunk_terms)
            .field("rows", &self.rows)
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

/// Values copied (and folded) per task when a layout is made.
const COPY_BLOCK: usize = 1 << 20;

/// `src` copied (widened where `D` is wider) into pages of their own in
/// parallel; its largest value.
fn copied_max<S, D>(src: &[S]) -> (PageOwned<D>, Option<u32>)
where
    S: Copy + Sync + Into<D> + Into<u32>,
    D: Copy + Default + Send,
{
    let mut dst = PageOwned::new(src.len());
    let max = dst
        .as_mut_slice()
        .par_chunks_mut(COPY_BLOCK)
        .zip(src.par_chunks(COPY_BLOCK))
        .map(|(d, s)| {
            for (d, &v) in d.iter_mut().zip(s) {
                *d = v.into();
            }
            s.iter().map(|&v| Into::<u32>::into(v)).max()
        })
        .reduce(|| None, |a, b| a.max(b));
    (dst, max)
}

impl ChunkedR1cs {
    /// `matrices` (with a table of `coeff_count` coefficients) laid out in
    /// chunks of at most `chunk_terms` terms and checked, in parallel: an
    /// error names the matrix and rows whose offsets are not a CSR index,
    /// an id past the table, or a row longer than a chunk.
    pub fn new(
        matrices: [HostMatrix<'_>; 3],
        coeff_count: usize,
        chunk_terms: usize,
    ) -> Result<Self> {
        ensure(SPMV, chunk_terms > 0, || "chunks of 0 terms".to_string())?;
        ensure(SPMV, coeff_count >= 2, || {
            format!("a coefficient table of {coeff_count} values (ids 0 and 1 are ±1)")
        })?;
        let rows = matrices[0].row_ptr.len().saturating_sub(1);
        let mut width = 0;
        let mut laid = Vec::with_capacity(3);
        // One id width for all three (the chunk sets are shared by them):
        // 16-bit ids widen when another matrix's are 32-bit.
        let wide = matrices.iter().any(|m| matches!(m.ids, HostIds::U32(_)));
        for (name, m) in ["A", "B", "C"].iter().zip(&matrices) {
            check_ends(name, m, rows, true)?;
            let (matrix, w) = Self::matrix(name, m, rows, coeff_count, chunk_terms, wide)?;
            width = width.max(w);
            laid.push(matrix);
        }
        let matrices =
            <[ChunkedMatrix; 3]>::try_from(laid).unwrap_or_else(|_| unreachable!("three matrices"));
        Ok(ChunkedR1cs {
            chunk_terms,
            rows,
            coeff_count,
            width,
            matrices,
        })
    }

    /// One matrix's chunks, rebased offsets, columns and ids; its width.
    fn matrix(
        name: &str,
        m: &HostMatrix<'_>,
        rows: usize,
        coeff_count: usize,
        chunk_terms: usize,
        wide: bool,
    ) -> Result<(ChunkedMatrix, usize)> {
        let mut chunks = Vec::new();
        let (mut r0, mut offsets_at) = (0, 0);
        while r0 < rows {
            let (r1, base, end) = next_chunk(m, name, r0, rows, chunk_terms)?;
            chunks.push(Chunk {
                r0,
                r1,
                base: base as usize,
                terms: (end - base) as usize,
                offsets_at,
            });
            offsets_at += r1 - r0 + 1;
            r0 = r1;
        }
        // Each chunk's offsets rebased to its first term, checked ordered
        // and within its terms, in parallel over the chunks.
        let mut offsets = PageOwned::<u32>::new(offsets_at);
        let mut parts = Vec::with_capacity(chunks.len());
        let mut rest = offsets.as_mut_slice();
        for c in &chunks {
            let (part, tail) = rest.split_at_mut(c.r1 - c.r0 + 1);
            parts.push((c, part));
            rest = tail;
        }
        let disordered = parts.into_par_iter().find_map_any(|(c, part)| {
            let src = &m.row_ptr[c.r0..=c.r1];
            let bound = c.terms as u32;
            let mut prev = 0u32;
            let mut ordered = true;
            for (i, (d, &p)) in part.iter_mut().zip(src).enumerate() {
                let v = p.wrapping_sub(c.base as u32);
                ordered &= v <= bound && (i == 0 || prev <= v);
                prev = v;
                *d = v;
            }
            (!(ordered && prev == bound)).then_some(*c)
        });
        if let Some(c) = disordered {
            ensure(SPMV, false, || {
                format!(
                    "{name}'s row offsets {}..={} are not a CSR index over their terms",
                    c.r0, c.r1
                )
            })?;
        }
        let (cols, widest) = copied_max::<u32, u32>(m.cols);
        let (ids, top_id) = match m.ids {
            HostIds::U16(v) if wide => {
                let (ids, top) = copied_max::<u16, u32>(v);
                (OwnedIds::U32(ids), top)
            }
            HostIds::U16(v) => {
                let (ids, top) = copied_max::<u16, u16>(v);
                (OwnedIds::U16(ids), top)
            }
            HostIds::U32(v) => {
                let (ids, top) = copied_max::<u32, u32>(v);
                (OwnedIds::U32(ids), top)
            }
        };
        ensure(
            SPMV,
            top_id.is_none_or(|id| (id as usize) < coeff_count),
            || format!("{name} names coefficient {top_id:?} of a table of {coeff_count}"),
        )?;
        let width = widest.map_or(0, |c| c as usize + 1);
        Ok((
            ChunkedMatrix {
                chunks,
                offsets,
                cols,
                ids,
            },
            width,
        ))
    }

    /// At least the host bytes [`ChunkedR1cs::new`]`(matrices, _,
    /// chunk_terms)` lays out (within ~1% above, from the matrices' sizes
    /// alone, nothing copied): to count the layout's memory before making it.
    pub fn bytes_at_most(matrices: &[HostMatrix<'_>; 3], chunk_terms: usize) -> u64 {
        let chunk_terms = chunk_terms.max(1) as u64;
        let wide = matrices.iter().any(|m| matches!(m.ids, HostIds::U32(_)));
        matrices
            .iter()
            .map(|m| {
                let rows = m.row_ptr.len().saturating_sub(1) as u64;
                let terms = m.cols.len() as u64;
                // Whole rows per chunk: two neighbours hold more than a
                // chunk's terms, or the chunk has its most rows.
                let chunks = 2 * terms / chunk_terms + rows / chunk_terms + 2;
                let id = if wide || matches!(m.ids, HostIds::U32(_)) {
                    4
                } else {
                    2
                };
                (rows + 1 + chunks) * 4 + terms * 4 + terms * id
            })
            .sum()
    }

    /// Terms per chunk at most.
    pub fn chunk_terms(&self) -> usize {
        self.chunk_terms
    }

    /// Rows of each matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Entries of the coefficient table the ids index.
    pub fn coeff_count(&self) -> usize {
        self.coeff_count
    }

    /// One past the largest column any term names (z must be this long).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Host bytes of the layout.
    pub fn bytes(&self) -> u64 {
        self.ranges().iter().map(|r| r.len() as u64).sum()
    }

    /// Chunks of each matrix.
    pub fn chunks(&self) -> [usize; 3] {
        self.matrices.each_ref().map(|m| m.chunks.len())
    }

    /// Whether the ids are 32 bits wide (all three matrices' alike).
    pub(crate) fn wide_ids(&self) -> bool {
        matches!(self.matrices[0].ids, OwnedIds::U32(_))
    }

    pub(crate) fn matrix_at(&self, which: usize) -> &ChunkedMatrix {
        &self.matrices[which]
    }

    /// The layout's memory, as the slices a pin locks.
    fn ranges(&self) -> Vec<&[u8]> {
        self.matrices
            .iter()
            .flat_map(|m| {
                [
                    as_bytes(m.offsets.as_slice()),
                    as_bytes(m.cols.as_slice()),
                    match &m.ids {
                        OwnedIds::U16(v) => as_bytes(v.as_slice()),
                        OwnedIds::U32(v) => as_bytes(v.as_slice()),
                    },
                ]
            })
            .collect()
    }
}

/// A [`ChunkedR1cs`] page-locked in host memory for as long as this value
/// (or a clone of its layout's pin) lives: shared by every worker and
/// device of the process; [`StreamedR1cs::with_pinned`](super::StreamedR1cs::with_pinned)
/// streams its chunks straight from it.
#[derive(Debug)]
pub struct PinnedR1cs {
    layout: Arc<ChunkedR1cs>,
    pin: HostPin,
}

impl PinnedR1cs {
    /// Page-locks `layout` (a slow call: the driver locks every page). An
    /// error names the bytes and the process's locked-memory limit.
    pub fn new(gpu: &Gpu, layout: Arc<ChunkedR1cs>) -> Result<Self> {
        let pin = HostPin::new(gpu, Arc::clone(&layout), |l: &ChunkedR1cs| l.ranges())?;
        Ok(PinnedR1cs { layout, pin })
    }

    /// The layout pinned.
    pub fn layout(&self) -> &ChunkedR1cs {
        &self.layout
    }

    pub(crate) fn pin(&self) -> &HostPin {
        &self.pin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix<'a>(row_ptr: &'a [u32], cols: &'a [u32], ids: &'a [u32]) -> HostMatrix<'a> {
        HostMatrix {
            row_ptr,
            cols,
            ids: HostIds::U32(ids),
        }
    }

    /// Random CSR rows (some empty, some long) and the layout at several
    /// chunk sizes: its chunks are the staged walk's, cover every row and
    /// term once in order, and each chunk's offsets are the matrix's
    /// rebased to the chunk's first term.
    #[test]
    fn chunks_are_the_staged_walks_rebased() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let rows = 3_000;
        let mut row_ptr = vec![0u32];
        for r in 0..rows {
            let terms = match r % 50 {
                0 => 0,
                1 => rng.gen_range(20..60),
                _ => rng.gen_range(1..5),
            };
            row_ptr.push(row_ptr[r] + terms);
        }
        let terms = *row_ptr.last().unwrap() as usize;
        let cols: Vec<u32> = (0..terms).map(|_| rng.gen_range(0..500)).collect();
        let ids: Vec<u32> = (0..terms).map(|_| rng.gen_range(0..9)).collect();
        let m = matrix(&row_ptr, &cols, &ids);
        for chunk_terms in [60, 61, 257, 4_096, terms] {
            let r1cs = ChunkedR1cs::new([m, m, m], 9, chunk_terms).unwrap();
            assert_eq!(r1cs.width(), *cols.iter().max().unwrap() as usize + 1);
            let laid = r1cs.matrix_at(1);
            let (mut r0, mut next_term) = (0, 0);
            for c in &laid.chunks {
                let (r1, base, end) = next_chunk(&m, "B", r0, rows, chunk_terms).unwrap();
                assert_eq!((c.r0, c.r1, c.base), (r0, r1, base as usize));
                assert_eq!(c.terms, (end - base) as usize);
                assert!(c.terms <= chunk_terms);
                assert_eq!(c.base, next_term);
                let want: Vec<u32> = row_ptr[r0..=r1].iter().map(|&p| p - base).collect();
                assert_eq!(laid.offsets_of(c), &want[..]);
                assert_eq!(laid.cols_of(c), &cols[c.base..c.base + c.terms]);
                r0 = r1;
                next_term = c.base + c.terms;
            }
            assert_eq!((r0, next_term), (rows, terms));
            let OwnedIds::U32(laid_ids) = &laid.ids else {
                panic!("32-bit ids stay 32-bit")
            };
            assert_eq!(laid_ids.as_slice(), &ids[..]);
            assert_eq!(r1cs.chunks()[0], laid.chunks.len());
            // Counted before it is made: at least its bytes, within 1%
            // (plus the chunks' offsets, a few per chunk).
            let most = ChunkedR1cs::bytes_at_most(&[m, m, m], chunk_terms);
            let chunks: usize = r1cs.chunks().iter().sum();
            assert!(
                most >= r1cs.bytes(),
                "{chunk_terms}: {most} < {}",
                r1cs.bytes()
            );
            assert!(
                most <= r1cs.bytes() + r1cs.bytes() / 100 + 12 * chunks as u64 + 64,
                "{chunk_terms}: {most} against {}",
                r1cs.bytes()
            );
            // Every range the pin locks starts a page of its own.
            for r in r1cs.ranges() {
                assert_eq!(r.as_ptr() as usize % PAGE, 0);
            }
        }
    }

    /// What the staged path refuses chunk by chunk, the layout refuses
    /// whole, naming the matrix: offsets out of order, an id past the
    /// table, a row longer than a chunk, chunks of no terms.
    #[test]
    fn bad_matrices_are_refused_with_their_names() {
        let good = matrix(&[0, 1], &[0], &[0]);
        let disordered = matrix(&[0, 2, 1, 2], &[0, 1], &[0, 1]);
        let pad = matrix(&[0, 0, 0, 0], &[], &[]);
        let err = ChunkedR1cs::new([pad, disordered, pad], 2, 8).unwrap_err();
        assert!(err.to_string().contains("B's row offsets 0..=3"), "{err}");
        let bad_id = matrix(&[0, 1], &[0], &[5]);
        let err = ChunkedR1cs::new([good, good, bad_id], 2, 8).unwrap_err();
        assert!(
            err.to_string().contains("C names coefficient Some(5)"),
            "{err}"
        );
        let long = matrix(&[0, 3], &[0, 1, 2], &[0, 0, 0]);
        let err = ChunkedR1cs::new([long, good, good], 2, 2).unwrap_err();
        assert!(err.to_string().contains("A's row 0 of 3 terms"), "{err}");
        assert!(ChunkedR1cs::new([good, good, good], 2, 0).is_err());
        assert!(ChunkedR1cs::new([good, good, good], 1, 8).is_err());
        let ok = ChunkedR1cs::new([good, good, good], 2, 8).unwrap();
        assert_eq!((ok.rows(), ok.width(), ok.chunks()), (1, 1, [1, 1, 1]));
        // 16-bit ids beside 32-bit ones widen, values kept.
        let narrow = HostMatrix {
            row_ptr: &[0, 1],
            cols: &[0],
            ids: HostIds::U16(&[1]),
        };
        let mixed = ChunkedR1cs::new([narrow, good, good], 2, 8).unwrap();
        assert!(mixed.wide_ids());
        let OwnedIds::U32(a) = &mixed.matrix_at(0).ids else {
            panic!("widened")
        };
        assert_eq!(a.as_slice(), &[1]);
        let all_narrow = ChunkedR1cs::new([narrow, narrow, narrow], 2, 8).unwrap();
        assert!(!all_narrow.wide_ids());
    }
}
