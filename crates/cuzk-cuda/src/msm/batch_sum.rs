//! [`BatchSum`]: Σ P_i over the points a bitmap or an index list selects
//! (the prover's scalars equal to one), and the tree sums of XYZZ points that
//! it shares with Pippenger's window sums.

use std::fmt;
use std::marker::PhantomData;

use cudarc::driver::LaunchConfig;

use super::curve::MsmCurve;
use super::plan::{resident_threads, SUM_MAX_BLOCKS, SUM_THREADS};
use super::MAX_LEN;
use crate::decl::MsmBitmapSum;
use crate::device::{grid, DeviceBuffer, KernelOut, MappedBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::Kernel;

const BATCH_THREADS: u32 = 128;

/// out[y·blocks + x] = Σ of block x's share of group y's `len` points.
pub(super) fn sum_groups<C: MsmCurve>(
    s: &Stream,
    input: &DeviceBuffer<u64>,
    len: u32,
    groups: u32,
    blocks: u32,
    out: &mut impl KernelOut<u64>,
) -> Result<()> {
    let kernel = C::SUM_GROUPS.name();
    let xw = C::XYZZ_WORDS;
    ensure(
        kernel,
        input.len() >= len as usize * groups as usize * xw,
        || format!("{} words for {groups} groups of {len} points", input.len()),
    )?;
    ensure(
        kernel,
        out.out_len() >= blocks as usize * groups as usize * xw,
        || format!("output {} words for {groups} × {blocks}", out.out_len()),
    )?;
    let args = (input.arg(), len, out.out_arg());
    let cfg = LaunchConfig {
        grid_dim: (blocks, groups, 1),
        block_dim: (SUM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: sizes checked above.
    unsafe {
        s.launch(C::SUM_GROUPS, cfg, args, || {
            format!("{groups} groups of {len} points, {blocks} blocks")
        })
    }
}

/// out (Jacobian) = Σ_w 2^(c·w)·sums[w].
fn horner<C: MsmCurve>(
    s: &Stream,
    sums: &DeviceBuffer<u64>,
    windows: u32,
    c: u32,
    out: &mut impl KernelOut<u64>,
) -> Result<()> {
    let kernel = C::HORNER.name();
    ensure(
        kernel,
        windows >= 1 && sums.len() >= windows as usize * C::XYZZ_WORDS,
        || format!("{windows} windows in {} words", sums.len()),
    )?;
    ensure(kernel, out.out_len() * 4 == 3 * C::XYZZ_WORDS, || {
        format!("output of {} words", out.out_len())
    })?;
    let args = (sums.arg(), windows, c, out.out_arg());
    #[allow(unsafe_code)]
    // SAFETY: sizes checked above.
    unsafe {
        s.launch(C::HORNER, grid(1, 1), args, || {
            format!("{windows} windows of {c} bits")
        })
    }
}

/// Reusable batch summation Σ P_i over selected points, for curve `C`.
pub struct BatchSum<C: MsmCurve> {
    stream: Stream,
    blocks: u32,
    bitmap_kernel: Kernel<MsmBitmapSum<C::Affine>>,
    partials: DeviceBuffer<u64>,
    partials2: DeviceBuffer<u64>,
    /// Written by the last kernel, read by the host in place (mapped).
    result: MappedBuffer<u64>,
    _curve: PhantomData<C>,
}

impl<C: MsmCurve> fmt::Debug for BatchSum<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSum")
            .field("curve", &C::NAME)
            .field("blocks", &self.blocks)
            .finish_non_exhaustive()
    }
}

impl<C: MsmCurve> BatchSum<C> {
    /// The summer on `stream`, with the default bitmap kernel.
    pub fn new(stream: &Stream) -> Result<Self> {
        Self::with_kernel(stream, C::BITMAP_SUM)
    }

    /// With a chosen bitmap kernel variant (for tuning; see
    /// `MsmCurve::BITMAP_VARIANTS`).
    #[cfg(feature = "tuning")]
    pub fn with_variant(stream: &Stream, variant: usize) -> Result<Self> {
        ensure(
            C::BITMAP_SUM.name(),
            variant < C::BITMAP_VARIANTS.len(),
            || format!("no bitmap variant {variant}"),
        )?;
        Self::with_kernel(stream, C::BITMAP_VARIANTS[variant])
    }

    fn with_kernel(
        stream: &Stream,
        bitmap_kernel: Kernel<MsmBitmapSum<C::Affine>>,
    ) -> Result<Self> {
        let blocks = resident_threads(stream, bitmap_kernel, BATCH_THREADS)? / BATCH_THREADS;
        let xw = C::XYZZ_WORDS;
        Ok(BatchSum {
            stream: stream.clone(),
            blocks,
            bitmap_kernel,
            partials: stream.alloc(blocks as usize * xw)?,
            partials2: stream.alloc(SUM_MAX_BLOCKS as usize * xw)?,
            result: MappedBuffer::new(stream, 3 * xw / 4)?,
            _curve: PhantomData,
        })
    }

    /// Σ `bases[i]` over i < n with bit i of `bitmap` set (word i/64, LSB first;
    /// bits at i ≥ n are ignored).
    pub fn sum_bitmap(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        bitmap: &DeviceBuffer<u64>,
        n: usize,
    ) -> Result<C::Projective> {
        self.enqueue_bitmap(bases, bitmap, n)?;
        self.result()
    }

    /// Σ `bases[indices[j]]` for j < count; indices ≥ bases.len() are skipped.
    pub fn sum_indices(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<C::Projective> {
        self.enqueue_indices(bases, indices, count)?;
        self.result()
    }

    /// Queues the sum of the bases whose bit is set among the first `n` of `bitmap`; [`BatchSum::result`] reads it.
    pub fn enqueue_bitmap(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        bitmap: &DeviceBuffer<u64>,
        n: usize,
    ) -> Result<()> {
        let kernel = self.bitmap_kernel.name();
        ensure(kernel, n <= bases.len() && n < MAX_LEN, || {
            format!("{n} points selected from {} bases", bases.len())
        })?;
        ensure(kernel, n.div_ceil(64) <= bitmap.len(), || {
            format!("{n} points but a bitmap of {} words", bitmap.len())
        })?;
        let args = (bases.arg(), bitmap.arg(), n as u32, self.partials.arg_mut());
        #[allow(unsafe_code)]
        // SAFETY: reads bases[i] and bitmap words for i < n only (checked
        // above); writes partials[0..blocks).
        unsafe {
            self.stream.launch(
                self.bitmap_kernel,
                grid(self.blocks, BATCH_THREADS),
                args,
                || format!("{n} points"),
            )?;
        }
        self.finish()
    }

    /// Queues the sum of the bases at the first `count` of `indices`; [`BatchSum::result`] reads it.
    pub fn enqueue_indices(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<()> {
        let kernel = C::INDICES_SUM.name();
        ensure(kernel, count <= indices.len() && count < MAX_LEN, || {
            format!("{count} indices asked, {} present", indices.len())
        })?;
        let nbases = bases.len().min(u32::MAX as usize) as u32;
        let args = (
            bases.arg(),
            nbases,
            indices.arg(),
            count as u32,
            self.partials.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: reads indices[0..count) and bases only at indices < nbases;
        // writes partials[0..blocks).
        unsafe {
            self.stream.launch(
                C::INDICES_SUM,
                grid(self.blocks, BATCH_THREADS),
                args,
                || format!("{count} indices"),
            )?;
        }
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        let s = &self.stream;
        let b2 = self.blocks.div_ceil(SUM_THREADS).clamp(1, SUM_MAX_BLOCKS);
        sum_groups::<C>(s, &self.partials, self.blocks, 1, b2, &mut self.partials2)?;
        sum_groups::<C>(s, &self.partials2, b2, 1, 1, &mut self.partials)?;
        horner::<C>(s, &self.partials, 1, 0, &mut self.result)
    }

    /// Waits for the queued sum and returns it.
    pub fn result(&self) -> Result<C::Projective> {
        let words = self.result.read()?;
        Ok(C::from_jacobian_words(&words))
    }
}
