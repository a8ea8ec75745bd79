//! Density gather on the device (kernels/prover/gather.cu): the dense
//! scalars of a density-indexed query are the witness values at the set bits
//! of a bitmap, in order. With the aux values already in device memory (the
//! L MSM needs them), A's and B's scalars are gathered there instead of on
//! the host and uploaded.

use cuzk_field::limbs::{DeviceRepr, FrLimbs};

use crate::compact::CompactOnDevice;
use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::{DevPtr, DevPtrMut};
use crate::scan::{exclusive_scan, SCAN_TILE};

/// Reusable scratch for gathers by bitmaps of up to `max_len` bits.
pub struct BitmapGather {
    stream: Stream,
    max_len: usize,
    words: DeviceBuffer<u64>,
    counts: DeviceBuffer<u32>,
    offsets: DeviceBuffer<u32>,
    tile_sums: DeviceBuffer<u32>,
}

impl std::fmt::Debug for BitmapGather {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BitmapGather")
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

impl BitmapGather {
    /// Device bytes [`BitmapGather::new`]`(max_len)` takes from the arena.
    pub fn bytes_for(max_len: usize) -> u64 {
        let words = max_len.div_ceil(64).max(1) as u64;
        words * 8
            + (words + 1) * 4 * 2
            + (words.div_ceil(SCAN_TILE as u64) + 2) * 4
            + 4 * crate::arena::ALIGN
    }

    /// Allocates the buffers for bitmaps of up to `max_len` bits on `stream`'s device.
    pub fn new(stream: &Stream, max_len: usize) -> Result<Self> {
        let words = max_len.div_ceil(64).max(1);
        Ok(BitmapGather {
            stream: stream.clone(),
            max_len,
            words: stream.alloc(words)?,
            counts: stream.alloc(words)?,
            offsets: stream.alloc(words + 1)?,
            tile_sums: stream.alloc(words.div_ceil(SCAN_TILE) + 2)?,
        })
    }

    /// `out[head + k] = values[i_k]` for the k-th set bit i_k < n of `bitmap`
    /// (LSB-first u64 words, as `cuzk_synth::Density::as_words`); returns the
    /// number of set bits. Queued on the stream (the count is computed on the
    /// host, so nothing waits).
    pub fn gather(
        &mut self,
        values: &DeviceBuffer<FrLimbs>,
        n: usize,
        bitmap: &[u64],
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
    ) -> Result<usize> {
        let kernel = decl::prover_gather_set_bits.name();
        let nwords = n.div_ceil(64);
        ensure(kernel, n <= self.max_len && n <= values.len(), || {
            format!(
                "{n} values: scratch for {}, {} present",
                self.max_len,
                values.len()
            )
        })?;
        ensure(kernel, bitmap.len() >= nwords, || {
            format!("{n} values but a bitmap of {} words", bitmap.len())
        })?;
        let bitmap = &bitmap[..nwords];
        let count = set_bits_below(bitmap, n);
        ensure(kernel, head + count <= out.len(), || {
            format!(
                "{count} gathered values at offset {head} into a buffer of {}",
                out.len()
            )
        })?;
        if nwords == 0 {
            return Ok(0);
        }
        let s = &self.stream;
        s.upload_at(bitmap, &mut self.words, 0)?;
        let sizes = || format!("{n} values, {nwords} bitmap words");
        let threads = 256u32;
        let args = (
            self.words.arg(),
            nwords as u32,
            n as u32,
            self.counts.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: reads and writes [0, nwords) of buffers sized for max_len /
        // 64 ≥ nwords words.
        unsafe {
            s.launch(
                decl::prover_word_popcounts,
                grid((nwords as u32).div_ceil(threads).clamp(1, 4096), threads),
                args,
                sizes,
            )?;
        }
        exclusive_scan(
            s,
            &self.counts,
            nwords as u32,
            &mut self.tile_sums,
            &mut self.offsets,
            None,
        )?;
        let args = (
            values.arg(),
            self.words.arg(),
            nwords as u32,
            n as u32,
            self.offsets.arg(),
            out.arg_mut_at(head),
        );
        let warps_per_block = threads / 32;
        #[allow(unsafe_code)]
        // SAFETY: reads values below n ≤ values.len(), offsets[0..nwords); writes
        // out[head + rank] for the `count` set bits below n, head + count ≤
        // out.len() (checked above).
        unsafe {
            s.launch(
                decl::prover_gather_set_bits,
                grid(
                    (nwords as u32).div_ceil(warps_per_block).clamp(1, 1 << 16),
                    threads,
                ),
                args,
                sizes,
            )?;
        }
        Ok(count)
    }
}

/// A density bitmap on the device with the set bits before each of its
/// words ([`BitmapGather::rank`]): any run of its set bits, by rank, is
/// gathered with one kernel and nothing uploaded (a chunk of A's or B's
/// scalars while another stream's uploads are in flight: a copy queued now
/// would wait for them).
pub struct RankedBitmap {
    words: DeviceBuffer<u64>,
    offsets: DeviceBuffer<u32>,
    n: usize,
    ones: usize,
}

impl std::fmt::Debug for RankedBitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankedBitmap")
            .field("n", &self.n)
            .field("ones", &self.ones)
            .finish()
    }
}

impl BitmapGather {
    /// `bitmap`'s first `n` bits on the device, with the set bits before
    /// each word: uploaded and counted once, on this gather's stream.
    pub fn rank(&mut self, bitmap: &[u64], n: usize) -> Result<RankedBitmap> {
        let kernel = decl::prover_word_popcounts.name();
        let nwords = n.div_ceil(64);
        ensure(kernel, n <= self.max_len && bitmap.len() >= nwords, || {
            format!(
                "{n} bits: scratch for {}, a bitmap of {} words",
                self.max_len,
                bitmap.len()
            )
        })?;
        let bitmap = &bitmap[..nwords];
        let ones = set_bits_below(bitmap, n);
        let s = self.stream.clone();
        let mut words = s.alloc::<u64>(nwords.max(1))?;
        let mut offsets = s.alloc::<u32>(nwords + 1)?;
        if nwords > 0 {
            s.upload_at(bitmap, &mut words, 0)?;
            let args = (words.arg(), nwords as u32, n as u32, self.counts.arg_mut());
            #[allow(unsafe_code)]
            // SAFETY: reads words[0..nwords), writes counts[0..nwords) (sized
            // for max_len / 64 ≥ nwords).
            unsafe {
                s.launch(
                    decl::prover_word_popcounts,
                    grid((nwords as u32).div_ceil(256).clamp(1, 4096), 256),
                    args,
                    || format!("{n} bits, {nwords} words"),
                )?;
            }
            exclusive_scan(
                &s,
                &self.counts,
                nwords as u32,
                &mut self.tile_sums,
                &mut offsets,
                None,
            )?;
        }
        Ok(RankedBitmap {
            words,
            offsets,
            n,
            ones,
        })
    }
}

impl RankedBitmap {
    /// Device bytes [`BitmapGather::rank`] takes for a bitmap of `n` bits.
    pub fn bytes_for(n: usize) -> u64 {
        let words = n.div_ceil(64) as u64;
        words.max(1) * 8 + (words + 1) * 4 + 2 * crate::arena::ALIGN
    }

    /// Set bits among its `n`.
    pub fn ones(&self) -> usize {
        self.ones
    }

    /// `out[head + r − r0] = values[i_r]` for the set bits i_r of rank
    /// `r0 ≤ r < r1`, which must lie in words `w0..=w1` (the caller knows
    /// where its ranks fall: cuzk-gpu's `DenseIndex`); queued on `s`.
    #[allow(clippy::too_many_arguments)]
    pub fn gather(
        &self,
        s: &Stream,
        values: &DeviceBuffer<FrLimbs>,
        words: (usize, usize),
        ranks: (usize, usize),
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
    ) -> Result<()> {
        let kernel = decl::prover_gather_ranks.name();
        let ((w0, w1), (r0, r1)) = (words, ranks);
        self.check_span(kernel, words, ranks, values.len(), out.len(), head)?;
        let args = (
            values.arg(),
            self.words.arg(),
            w0 as u32,
            w1 as u32,
            self.n as u32,
            self.offsets.arg(),
            r0 as u32,
            r1 as u32,
            out.arg_mut_at(head),
        );
        let span = (w1 - w0 + 1) as u32;
        #[allow(unsafe_code)]
        // SAFETY: reads words w0..=w1 < nwords, offsets[w] for those words,
        // values below n ≤ values.len() (bits ≥ n masked); writes out[head +
        // r − r0] for r in [r0, r1) only: below head + r1 − r0 ≤ out.len().
        unsafe {
            s.launch(
                decl::prover_gather_ranks,
                grid(span.div_ceil(256 / 32).clamp(1, 1 << 16), 256),
                args,
                || format!("words {w0}..={w1}, ranks {r0}..{r1}"),
            )
        }
    }
}

impl RankedBitmap {
    /// A gather's span and buffers checked: words `w0..=w1` of the bitmap,
    /// ranks `r0..r1` of its set bits, `values` values to read (the
    /// bitmap's `n` at least), `r1 − r0` to write at `head` of `out`.
    fn check_span(
        &self,
        kernel: &'static str,
        (w0, w1): (usize, usize),
        (r0, r1): (usize, usize),
        values: usize,
        out: usize,
        head: usize,
    ) -> Result<()> {
        ensure(
            kernel,
            w0 <= w1
                && w1 < self.n.div_ceil(64)
                && r0 < r1
                && r1 <= self.ones
                && self.n <= values
                && head + (r1 - r0) <= out,
            || {
                format!(
                    "words {w0}..={w1} of {}, ranks {r0}..{r1} of {}, {values} values, {} into a \
                     buffer of {out} at {head}",
                    self.n.div_ceil(64),
                    self.ones,
                    r1.saturating_sub(r0),
                )
            },
        )
    }

    /// [`RankedBitmap::gather`] reading each value in place from a compact
    /// vector (`values`, [`CompactOnDevice`]): `out[head + r − r0]` = value
    /// i_r for the set bits i_r of rank `r0 ≤ r < r1`, in words `w0..=w1`.
    #[allow(clippy::too_many_arguments)]
    pub fn gather_compact(
        &self,
        s: &Stream,
        values: &CompactOnDevice,
        words: (usize, usize),
        ranks: (usize, usize),
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
    ) -> Result<()> {
        let kernel = decl::prover_gather_ranks_compact.name();
        let ((w0, w1), (r0, r1)) = (words, ranks);
        self.check_span(kernel, words, ranks, values.len(), out.len(), head)?;
        let (codes, before, others, nothers) = values.args();
        let args = (
            codes,
            before,
            others,
            nothers,
            self.words.arg(),
            w0 as u32,
            w1 as u32,
            self.n as u32,
            self.offsets.arg(),
            r0 as u32,
            r1 as u32,
            out.arg_mut_at(head),
        );
        let span = (w1 - w0 + 1) as u32;
        #[allow(unsafe_code)]
        // SAFETY: reads words w0..=w1 < nwords and their offsets, values
        // below n ≤ values.len() (bits ≥ n masked; the compact vector's
        // arrays hold ⌈len / 32⌉ words, its others are read below their
        // count); writes out[head + r − r0] for r in [r0, r1) only.
        unsafe {
            s.launch(
                decl::prover_gather_ranks_compact,
                grid(span.div_ceil(256 / 32).clamp(1, 1 << 16), 256),
                args,
                || format!("words {w0}..={w1}, ranks {r0}..{r1}, compact"),
            )
        }
    }
}

/// `dst[i] = src[at + i]` for `i < n`, zero for `n ≤ i < dst.len()`: a
/// chunk's scalars into its buffer, on the SMs (a copy-engine copy or
/// memset queued on a stream would wait behind another stream's uploads in
/// flight).
pub fn copy_pad(
    s: &Stream,
    src: &DeviceBuffer<FrLimbs>,
    at: usize,
    n: usize,
    dst: &mut DeviceBuffer<FrLimbs>,
) -> Result<()> {
    let kernel = decl::prover_copy_pad.name();
    ensure(
        kernel,
        at.checked_add(n).is_some_and(|e| e <= src.len()) && n <= dst.len(),
        || {
            format!(
                "{n} values from {at} of {} into a buffer of {}",
                src.len(),
                dst.len()
            )
        },
    )?;
    let total = dst.len();
    if total == 0 {
        return Ok(());
    }
    let args = (src.arg_at(at), n as u32, dst.arg_mut(), total as u32);
    #[allow(unsafe_code)]
    // SAFETY: reads src[at..at + n) (in bounds, checked), writes dst[0..total).
    unsafe {
        s.launch(
            decl::prover_copy_pad,
            grid((total as u32).div_ceil(256).clamp(1, 1 << 16), 256),
            args,
            || format!("{n} of {total} values"),
        )
    }
}

/// `dst[at + j] = src[indices[j]]` for j < `count`, on the SMs, for values
/// of any multiple of 16 bytes (points, scalars): a streamed chunk's few
/// points whose scalars are neither 0 nor 1, and those scalars, kept past
/// the chunk so that one MSM sums them later. An index beyond `src` gives a
/// row of zeros.
pub fn gather_rows<T: DeviceRepr>(
    s: &Stream,
    src: &DeviceBuffer<T>,
    indices: &DeviceBuffer<u32>,
    count: usize,
    dst: &mut DeviceBuffer<T>,
    at: usize,
) -> Result<()> {
    let kernel = decl::prover_gather_rows.name();
    let size = std::mem::size_of::<T>();
    ensure(kernel, size > 0 && size % 16 == 0, || {
        format!("values of {size} bytes (a multiple of 16 is moved)")
    })?;
    ensure(
        kernel,
        count <= indices.len()
            && at.checked_add(count).is_some_and(|e| e <= dst.len())
            && src.len() <= u32::MAX as usize
            && count <= u32::MAX as usize,
        || {
            format!(
                "{count} of {} indices into {} values from {at}, source {} values",
                indices.len(),
                dst.len(),
                src.len()
            )
        },
    )?;
    if count == 0 {
        return Ok(());
    }
    let row = (size / 16) as u32;
    let threads = count as u64 * row as u64;
    let args = (
        DevPtr::<u64>::from_raw(src.ptr),
        src.len() as u32,
        row,
        indices.arg(),
        count as u32,
        DevPtrMut::<u64>::from_raw(dst.ptr + (at * size) as u64),
    );
    #[allow(unsafe_code)]
    // SAFETY: reads indices[0..count) and src rows < src_len only; writes
    // dst rows at..at + count (in bounds, checked above).
    unsafe {
        s.launch(
            decl::prover_gather_rows,
            grid(threads.div_ceil(256).clamp(1, 1 << 16) as u32, 256),
            args,
            || format!("{count} rows of {size} bytes"),
        )
    }
}

/// Set bits of `bitmap` below bit `n`.
fn set_bits_below(bitmap: &[u64], n: usize) -> usize {
    bitmap
        .iter()
        .enumerate()
        .map(|(w, &word)| {
            let keep = n.saturating_sub(w * 64).min(64);
            let mask = if keep == 64 { !0 } else { (1u64 << keep) - 1 };
            (word & mask).count_ones() as usize
        })
        .sum()
}
