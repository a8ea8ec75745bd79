//! Density gather on the device (kernels/prover/gather.cu): the dense
//! scalars of a density-indexed query are the witness values at the set bits
//! of a bitmap, in order. With the aux values already in device memory (the
//! L MSM needs them), A's and B's scalars are gathered there instead of on
//! the host and uploaded.

use cuzk_field::limbs::FrLimbs;

use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
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
        self.gather_at(values, 0, n, bitmap, out, head)
    }

    /// As [`BitmapGather::gather`] over `values[at..at + n]`: bit i of
    /// `bitmap` stands for `values[at + i]`. A chunk of a long gather: the
    /// bitmap's words from word `at / 64` on, the bits outside the chunk
    /// cleared. `at` is a multiple of 64.
    pub fn gather_at(
        &mut self,
        values: &DeviceBuffer<FrLimbs>,
        at: usize,
        n: usize,
        bitmap: &[u64],
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
    ) -> Result<usize> {
        let kernel = decl::prover_gather_set_bits.name();
        let nwords = n.div_ceil(64);
        ensure(
            kernel,
            at % 64 == 0 && n <= self.max_len && at + n <= values.len(),
            || {
                format!(
                    "{n} values from {at}: scratch for {}, {} present (the start a multiple of 64)",
                    self.max_len,
                    values.len()
                )
            },
        )?;
        ensure(kernel, bitmap.len() >= nwords, || {
            format!("{n} values but a bitmap of {} words", bitmap.len())
        })?;
        let bitmap = &bitmap[..nwords];
        let count: usize = bitmap
            .iter()
            .enumerate()
            .map(|(w, &word)| {
                let keep = n.saturating_sub(w * 64).min(64);
                let mask = if keep == 64 { !0 } else { (1u64 << keep) - 1 };
                (word & mask).count_ones() as usize
            })
            .sum();
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
            values.arg_at(at),
            self.words.arg(),
            nwords as u32,
            n as u32,
            self.offsets.arg(),
            out.arg_mut_at(head),
        );
        let warps_per_block = threads / 32;
        #[allow(unsafe_code)]
        // SAFETY: reads values[at..at + n), at + n ≤ values.len(), offsets[0..nwords); writes
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
