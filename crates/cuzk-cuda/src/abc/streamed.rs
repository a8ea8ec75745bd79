//! The matrices left on the host ([`StreamedR1cs`]): chunks of rows cross
//! through a pinned staging on a copy stream, checked in the copy's pass,
//! and the resident path's SpMV kernels evaluate them.

use std::cell::RefCell;

use cuzk_field::limbs::FrLimbs;

use super::pinned::{next_chunk, OwnedIds, PinnedR1cs};
use super::prefetch::Prefetch;
use super::{
    check_ends, check_evaluation, check_table, classify, each_classified, spmv_ids, DeviceIds,
    HostIds, HostMatrix, SpmvArgs, SPMV,
};
use crate::device::{DeviceBuffer, Event, Stream};
use crate::error::{ensure, Result};
use crate::staging::Staging;

/// Sets of chunk buffers a pinned recording's chunks cross into: the copies
/// run up to this many chunks ahead of the SpMV, across matrices (the next
/// matrix's first chunks cross during the NTTs between). Through the
/// staging, two (one filled while the other's chunk is evaluated).
pub const PINNED_SETS: usize = 8;

/// Device bytes [`StreamedR1cs::evaluate`] takes from the arena for chunks
/// of `chunk_terms` terms (and as many rows), with a table of `coeffs`: the
/// table and [`PINNED_SETS`] sets of chunk buffers (the staged path uses
/// two of them).
pub fn streamed_bytes(coeffs: usize, chunk_terms: usize) -> u64 {
    let align = crate::arena::ALIGN;
    let round = |b: u64| b.div_ceil(align) * align;
    let c = chunk_terms as u64;
    round(coeffs as u64 * 32)
        + PINNED_SETS as u64 * (round((c + 1) * 4) + round(c * 4) + round(c * 4))
}

/// A circuit's matrices left on the host and streamed to the device in
/// chunks of rows, for a device that cannot hold them beside the key: only
/// the coefficient table is resident. Each chunk crosses through the
/// caller's pinned [`Staging`] on a copy stream while the previous chunk's
/// SpMV runs on the compute stream; the fill threads rebase its row offsets
/// to its first term and check it (offsets ordered, columns within z, ids
/// within the table) in the same pass as the copy, before its kernel is
/// queued. The SpMV kernels are the resident path's.
///
/// With [`StreamedR1cs::with_pinned`], the chunks cross instead straight
/// from a [`PinnedR1cs`] of the same recording (laid out and checked once,
/// page-locked in host memory): no fill pass, no staging.
pub struct StreamedR1cs<'a> {
    coeffs: DeviceBuffer<FrLimbs>,
    coeff_count: usize,
    matrices: [HostMatrix<'a>; 3],
    rows: usize,
    pinned: Option<&'a PinnedR1cs>,
    /// The pinned path's chunk sets and queue, kept across evaluations (so
    /// the copies run ahead into the next matrix); made on first use.
    ahead: RefCell<Option<Ahead>>,
}

/// One set of chunk buffers: a chunk's offsets, columns and ids.
struct ChunkSet {
    row_ptr: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    ids: DeviceIds,
}

/// `sets` sets of chunk buffers for chunks of up to `chunk_terms` terms
/// (and as many rows) on `stream`, ids as wide as `wide` says; the copy
/// stream waits for their allocation (stream-ordered, on the compute
/// stream).
fn chunk_sets(
    stream: &Stream,
    copy: &Stream,
    chunk_terms: usize,
    wide: bool,
    sets: usize,
) -> Result<Vec<ChunkSet>> {
    let made = (0..sets)
        .map(|_| {
            Ok(ChunkSet {
                row_ptr: stream.alloc::<u32>(chunk_terms + 1)?,
                cols: stream.alloc::<u32>(chunk_terms)?,
                ids: match wide {
                    false => DeviceIds::U16(stream.alloc(chunk_terms)?),
                    true => DeviceIds::U32(stream.alloc(chunk_terms)?),
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    copy.wait(&stream.record()?)?;
    Ok(made)
}

/// The pinned path's state across evaluations: its chunk sets, each set's
/// last reader (an SpMV) and last writer (a copy), the queue of chunks
/// copied ahead, and the streams (the sets are freed only after every copy
/// into them).
struct Ahead {
    sets: Vec<ChunkSet>,
    read: Vec<Option<Event>>,
    written: Vec<Option<Event>>,
    queue: Prefetch,
    compute: Stream,
    copy: Stream,
}

impl Drop for StreamedR1cs<'_> {
    fn drop(&mut self) {
        // Copies queued ahead may still be writing the sets: their frees
        // (on the compute stream) come after them.
        if let Some(a) = self.ahead.get_mut().take() {
            let after = a.copy.record().and_then(|e| a.compute.wait(&e));
            if let Err(e) = after {
                tracing::warn!(
                    "ordering the streamed matrices' chunk sets after their copies: {e}"
                );
                // Nothing may reuse them before the copies are done.
                if let Err(e) = a.copy.synchronize() {
                    tracing::warn!("waiting for the streamed matrices' copies: {e}");
                }
            }
        }
    }
}

impl std::fmt::Debug for StreamedR1cs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedR1cs")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

/// What the fill threads find in a chunk's row offsets, rebased: the first
/// and last, and whether they were ordered and within the chunk's terms.
#[derive(Clone, Copy)]
struct Offsets {
    first: u32,
    last: u32,
    ordered: bool,
}

impl Offsets {
    fn join(a: Offsets, b: Offsets) -> Offsets {
        Offsets {
            first: a.first,
            last: b.last,
            ordered: a.ordered && b.ordered && a.last <= b.first,
        }
    }
}

impl<'a> StreamedR1cs<'a> {
    /// Checks what costs nothing to check (each matrix's offsets count its
    /// rows, start at 0 and end at its term count; one id per term) and
    /// uploads the coefficient table alone. The rest is checked chunk by
    /// chunk as the chunks cross.
    pub fn new(stream: &Stream, coeffs: &[FrLimbs], matrices: [HostMatrix<'a>; 3]) -> Result<Self> {
        check_table(coeffs)?;
        let rows = matrices[0].row_ptr.len().saturating_sub(1);
        for (name, m) in ["A", "B", "C"].iter().zip(&matrices) {
            // The order between the ends is checked chunk by chunk.
            check_ends(name, m, rows, true)?;
        }
        Ok(Self {
            coeffs: stream.upload_new(coeffs)?,
            coeff_count: coeffs.len(),
            matrices,
            rows,
            pinned: None,
            ahead: RefCell::new(None),
        })
    }

    /// These matrices' chunks crossing straight from `pinned`, their
    /// layout in page-locked host memory (checked when it was made): it
    /// must be of the same recording (rows, terms, id widths and table
    /// size agree), and evaluations must ask for its chunk size.
    pub fn with_pinned(mut self, pinned: &'a PinnedR1cs) -> Result<Self> {
        let layout = pinned.layout();
        ensure(
            SPMV,
            layout.rows() == self.rows && layout.coeff_count() == self.coeff_count,
            || {
                format!(
                    "a pinned layout of {} rows and {} coefficients for matrices of {} rows \
                     and {}",
                    layout.rows(),
                    layout.coeff_count(),
                    self.rows,
                    self.coeff_count
                )
            },
        )?;
        for (which, (name, m)) in ["A", "B", "C"].iter().zip(&self.matrices).enumerate() {
            let laid = layout.matrix_at(which);
            ensure(SPMV, laid.cols.len() == m.cols.len(), || {
                format!(
                    "the pinned layout's {name} has {} terms and the matrix {}",
                    laid.cols.len(),
                    m.cols.len()
                )
            })?;
        }
        self.pinned = Some(pinned);
        Ok(self)
    }

    /// Rows of each matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Terms of the longest row (the smallest chunk that works): one pass
    /// over the offsets.
    pub fn longest_row(&self) -> usize {
        self.matrices
            .iter()
            .flat_map(|m| {
                m.row_ptr
                    .windows(2)
                    .map(|w| w[1].saturating_sub(w[0]) as usize)
            })
            .max()
            .unwrap_or(0)
    }

    /// [`DeviceR1cs::evaluate`](super::DeviceR1cs::evaluate), the matrices crossing PCIe in chunks of at
    /// most `chunk_terms` terms and as many rows (see
    /// [`StreamedR1cs::evaluate_classified`]).
    pub fn evaluate(
        &self,
        io: &mut Streaming<'_>,
        z: &DeviceBuffer<FrLimbs>,
        classes: &mut DeviceBuffer<u8>,
        out: [&mut DeviceBuffer<FrLimbs>; 3],
        chunk_terms: usize,
    ) -> Result<()> {
        let compute = io.compute;
        each_classified(
            compute,
            z,
            classes,
            0,
            self.rows,
            out,
            |classes, which, o| self.evaluate_classified(io, z, classes, which, o, chunk_terms),
        )
    }

    /// [`DeviceR1cs::classify`](super::DeviceR1cs::classify) for streamed matrices.
    pub fn classify(
        &self,
        stream: &Stream,
        z: &DeviceBuffer<FrLimbs>,
        classes: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        classify(stream, z, classes, 0, self.rows, &[])
    }

    /// [`DeviceR1cs::evaluate_classified`](super::DeviceR1cs::evaluate_classified) for streamed matrices: chunks of
    /// at most `chunk_terms` terms (whole rows; a row longer than that is
    /// refused), each filled into `io`'s staging and copied on its copy
    /// stream into one of two sets of chunk buffers while the compute
    /// stream evaluates the other. A chunk whose offsets are out of order,
    /// or that names a column past z or an id past the table, is refused
    /// before its kernel is queued (rows and matrix named). With a pinned
    /// layout ([`StreamedR1cs::with_pinned`]) the chunks cross straight
    /// from it into [`PINNED_SETS`] sets kept across calls, as far ahead as
    /// the sets allow; calls for A, B, C in that order keep the copies
    /// running ahead, any other order starts them again.
    pub fn evaluate_classified(
        &self,
        io: &mut Streaming<'_>,
        z: &DeviceBuffer<FrLimbs>,
        classes: &DeviceBuffer<u8>,
        which: usize,
        o: &mut DeviceBuffer<FrLimbs>,
        chunk_terms: usize,
    ) -> Result<()> {
        ensure(SPMV, chunk_terms > 0, || "chunks of 0 terms".to_string())?;
        check_evaluation(z, classes, 0, self.rows, which, o)?;
        if let Some(pinned) = self.pinned {
            return self.evaluate_pinned(pinned, io, z, classes, which, o, chunk_terms);
        }
        let stream = io.compute;
        let m = &self.matrices[which];
        let name = ["A", "B", "C"][which];
        let wide = matches!(m.ids, HostIds::U32(_));
        let mut sets = chunk_sets(stream, io.copy, chunk_terms, wide, 2)?;
        let mut used: [Option<Event>; 2] = [None, None];
        let (mut r0, mut k) = (0, 0);
        let out = (|| -> Result<()> {
            while r0 < self.rows {
                let slot = k % 2;
                let (r1, base, end) = next_chunk(m, name, r0, self.rows, chunk_terms)?;
                let terms = (end - base) as usize;
                if let Some(e) = &used[slot] {
                    io.copy.wait(e)?;
                }
                let span = base as usize..end as usize;
                let bound = terms as u32;
                let offsets = io
                    .staging
                    .upload_fold(
                        io.copy,
                        &m.row_ptr[r0..=r1],
                        &mut sets[slot].row_ptr,
                        0,
                        |s: &[u32], d: &mut [u32]| {
                            let mut ordered = true;
                            let mut prev = 0u32;
                            for (i, (d, &p)) in d.iter_mut().zip(s).enumerate() {
                                let v = p.wrapping_sub(base);
                                ordered &= v <= bound && (i == 0 || prev <= v);
                                prev = v;
                                *d = v;
                            }
                            Offsets {
                                first: d[0],
                                last: prev,
                                ordered,
                            }
                        },
                        Offsets::join,
                    )?
                    .expect("at least two offsets");
                let widest = io
                    .staging
                    .upload_fold(
                        io.copy,
                        &m.cols[span.clone()],
                        &mut sets[slot].cols,
                        0,
                        |s: &[u32], d: &mut [u32]| {
                            d.copy_from_slice(s);
                            s.iter().copied().max().unwrap_or(0)
                        },
                        u32::max,
                    )?
                    .map_or(0, |c| c as usize + 1);
                let top_id = match (m.ids, &mut sets[slot].ids) {
                    (HostIds::U16(v), DeviceIds::U16(d)) => io.staging.upload_fold(
                        io.copy,
                        &v[span],
                        d,
                        0,
                        |s: &[u16], d: &mut [u16]| {
                            d.copy_from_slice(s);
                            s.iter().copied().max().map_or(0, u32::from)
                        },
                        u32::max,
                    )?,
                    (HostIds::U32(v), DeviceIds::U32(d)) => io.staging.upload_fold(
                        io.copy,
                        &v[span],
                        d,
                        0,
                        |s: &[u32], d: &mut [u32]| {
                            d.copy_from_slice(s);
                            s.iter().copied().max().unwrap_or(0)
                        },
                        u32::max,
                    )?,
                    _ => unreachable!("the chunk ids have the matrix's width"),
                };
                ensure(SPMV, offsets.ordered && offsets.last == bound, || {
                    format!("{name}'s row offsets {r0}..={r1} are not a CSR index over their terms")
                })?;
                ensure(SPMV, widest <= z.len(), || {
                    format!(
                        "{name}'s rows {r0}..{r1} name column {} and z has {} values",
                        widest.saturating_sub(1),
                        z.len()
                    )
                })?;
                ensure(
                    SPMV,
                    top_id.is_none_or(|id| (id as usize) < self.coeff_count),
                    || {
                        format!(
                            "{name}'s rows {r0}..{r1} name coefficient {top_id:?} of a table of {}",
                            self.coeff_count
                        )
                    },
                )?;
                stream.wait(&io.copy.record()?)?;
                let args = SpmvArgs {
                    row_ptr: sets[slot].row_ptr.arg(),
                    cols: sets[slot].cols.arg(),
                    rows: r1 - r0,
                    terms,
                    coeffs: self.coeffs.arg(),
                    z: z.arg(),
                    classes: classes.arg(),
                    out: o.arg_mut_at(r0),
                };
                #[allow(unsafe_code)]
                // SAFETY: the chunk's offsets, as copied, are ordered, start
                // at 0 and end at `terms` <= chunk_terms, the lengths of its
                // cols and ids (checked above by the fill threads, on the
                // bytes that crossed); its columns are below z.len() <=
                // classes.len() and its ids below the table's length
                // (checked likewise); out has >= rows values (checked by
                // check_evaluation), and rows r0..r1 start at `args.out`.
                unsafe {
                    spmv_ids(stream, &sets[slot].ids, &args)?
                };
                used[slot] = Some(stream.record()?);
                r0 = r1;
                k += 1;
            }
            Ok(())
        })();
        // Whatever happened, the chunk buffers are freed (on the compute
        // stream) only after every copy queued into them.
        stream.wait(&io.copy.record()?)?;
        out
    }

    /// [`StreamedR1cs::evaluate_classified`] from the pinned layout: each
    /// chunk's offsets, columns and ids copied straight from page-locked
    /// host memory on the copy stream (the host only queues), into a ring of
    /// [`PINNED_SETS`] chunk sets kept across evaluations: the copies run
    /// as far ahead of the SpMV as the sets allow, into the next matrix's
    /// chunks too, which then cross during whatever the compute stream runs
    /// before that matrix is evaluated.
    #[allow(clippy::too_many_arguments)]
    fn evaluate_pinned(
        &self,
        pinned: &PinnedR1cs,
        io: &mut Streaming<'_>,
        z: &DeviceBuffer<FrLimbs>,
        classes: &DeviceBuffer<u8>,
        which: usize,
        o: &mut DeviceBuffer<FrLimbs>,
        chunk_terms: usize,
    ) -> Result<()> {
        let layout = pinned.layout();
        ensure(SPMV, layout.chunk_terms() == chunk_terms, || {
            format!(
                "chunks of {chunk_terms} terms from a layout pinned in chunks of {}",
                layout.chunk_terms()
            )
        })?;
        ensure(SPMV, layout.width() <= z.len(), || {
            format!(
                "z has {} values, the matrices name {} columns",
                z.len(),
                layout.width()
            )
        })?;
        let stream = io.compute;
        let mut ahead = self.ahead.borrow_mut();
        if ahead.is_none() {
            *ahead = Some(Ahead {
                sets: chunk_sets(stream, io.copy, chunk_terms, layout.wide_ids(), PINNED_SETS)?,
                read: (0..PINNED_SETS).map(|_| None).collect(),
                written: (0..PINNED_SETS).map(|_| None).collect(),
                queue: Prefetch::new(layout.chunks(), PINNED_SETS),
                compute: stream.clone(),
                copy: io.copy.clone(),
            });
        }
        let a = ahead.as_mut().expect("made above");
        ensure(
            SPMV,
            std::sync::Arc::ptr_eq(&a.compute.inner, &stream.inner)
                && std::sync::Arc::ptr_eq(&a.copy.inner, &io.copy.inner),
            || "one streamed evaluation's matrices on other streams than the first's".to_string(),
        )?;
        let m = layout.matrix_at(which);
        a.queue.start(which);
        for (k, c) in m.chunks.iter().enumerate() {
            copy_ahead(a, pinned)?;
            let slot = a
                .queue
                .take(which, k)
                .ok_or_else(|| crate::Error::BadArguments {
                    kernel: SPMV,
                    message: format!("chunk {k} of matrix {which} was not queued to cross"),
                })?;
            let set = &a.sets[slot.set];
            stream.wait(
                a.written[slot.set]
                    .as_ref()
                    .expect("copied before it is taken"),
            )?;
            let args = SpmvArgs {
                row_ptr: set.row_ptr.arg(),
                cols: set.cols.arg(),
                rows: c.r1 - c.r0,
                terms: c.terms,
                coeffs: self.coeffs.arg(),
                z: z.arg(),
                classes: classes.arg(),
                out: o.arg_mut_at(c.r0),
            };
            #[allow(unsafe_code)]
            // SAFETY: the set holds this chunk (the queue hands out the set
            // its copy wrote, and no later copy into the set is queued
            // before this SpMV is recorded as its reader); the layout
            // checked each chunk's offsets when it was made (ordered, from
            // 0 to `terms` <= chunk_terms, the lengths of its cols and
            // ids), every id below a table of `coeff_count` entries (this
            // table's: `with_pinned`) and every column below `width` <=
            // z.len() <= classes.len() (checked above and by
            // check_evaluation); the pin keeps that memory allocated and
            // unchanged. out has >= rows values (check_evaluation), rows
            // r0..r1 start at `args.out`.
            unsafe {
                spmv_ids(stream, &set.ids, &args)?
            };
            a.read[slot.set] = Some(stream.record()?);
        }
        // The next matrix's first chunks cross while the compute stream
        // runs what comes before it.
        copy_ahead(a, pinned)
    }
}

/// Queues the copies of the chunks `a`'s queue lets run ahead: each waits
/// on the copy stream for its set's last reader, then crosses straight
/// from the pin.
fn copy_ahead(a: &mut Ahead, pinned: &PinnedR1cs) -> Result<()> {
    let layout = pinned.layout();
    let pin = pinned.pin();
    while let Some(slot) = a.queue.next_copy() {
        if let Some(e) = &a.read[slot.set] {
            a.copy.wait(e)?;
        }
        let m = layout.matrix_at(slot.which);
        let c = &m.chunks[slot.k];
        let span = c.base..c.base + c.terms;
        let set = &mut a.sets[slot.set];
        a.copy
            .upload_from_pin(pin, m.offsets_of(c), &mut set.row_ptr, 0)?;
        a.copy
            .upload_from_pin(pin, m.cols_of(c), &mut set.cols, 0)?;
        match (&m.ids, &mut set.ids) {
            (OwnedIds::U16(v), DeviceIds::U16(d)) => {
                a.copy.upload_from_pin(pin, &v.as_slice()[span], d, 0)?
            }
            (OwnedIds::U32(v), DeviceIds::U32(d)) => {
                a.copy.upload_from_pin(pin, &v.as_slice()[span], d, 0)?
            }
            _ => unreachable!("the sets' ids have the layout's one width"),
        }
        a.written[slot.set] = Some(a.copy.record()?);
    }
    Ok(())
}

/// What a streamed evaluation crosses through: the compute stream its
/// kernels run on, a copy stream, and the pinned staging the fill threads
/// write each chunk into.
pub struct Streaming<'s> {
    /// The stream the SpMV kernels (and the chunk buffers) are on.
    pub compute: &'s Stream,
    /// The stream the chunks' copies are on.
    pub copy: &'s Stream,
    /// Pinned buffers (and fill threads) the chunks cross through.
    pub staging: &'s mut Staging,
}

impl std::fmt::Debug for Streaming<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streaming")
            .field("staging", &self.staging)
            .finish_non_exhaustive()
    }
}
