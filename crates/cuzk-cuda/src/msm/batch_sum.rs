//! [`BatchSum`]: Σ P_i over the points a bitmap or an index list selects
//! (the prover's scalars equal to one), and the tree sums of XYZZ points that
//! it shares with Pippenger's window sums.

use std::fmt;
use std::marker::PhantomData;

use cudarc::driver::LaunchConfig;

use super::curve::{MsmCurve, K_BITMAP, K_HORNER, K_INDICES, K_SUM_GROUPS};
use super::plan::{resident_threads, SUM_MAX_BLOCKS, SUM_THREADS};
use super::MAX_LEN;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::ffi::KernelArgs;

const BATCH_THREADS: u32 = 128;

/// out[y·blocks + x] = Σ of block x's share of group y's `len` points.
pub(super) fn sum_groups<C: MsmCurve>(
    s: &Stream,
    input: &DeviceBuffer<u64>,
    len: u32,
    groups: u32,
    blocks: u32,
    out: &DeviceBuffer<u64>,
) -> Result<()> {
    let kernel = C::KERNELS[K_SUM_GROUPS];
    let xw = C::XYZZ_WORDS;
    ensure(
        kernel,
        input.len() >= len as usize * groups as usize * xw,
        || format!("{} words for {groups} groups of {len} points", input.len()),
    )?;
    ensure(
        kernel,
        out.len() >= blocks as usize * groups as usize * xw,
        || format!("output {} words for {groups} × {blocks}", out.len()),
    )?;
    let args = KernelArgs::new()
        .device_ptr(input.device_ptr())
        .u32(len)
        .device_ptr(out.device_ptr());
    let cfg = LaunchConfig {
        grid_dim: (blocks, groups, 1),
        block_dim: (SUM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: argument order of msm_sum_groups_*; sizes checked above.
    unsafe {
        s.launch(kernel, cfg, args, || {
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
    out: &DeviceBuffer<u64>,
) -> Result<()> {
    let kernel = C::KERNELS[K_HORNER];
    ensure(
        kernel,
        windows >= 1 && sums.len() >= windows as usize * C::XYZZ_WORDS,
        || format!("{windows} windows in {} words", sums.len()),
    )?;
    ensure(kernel, out.len() * 4 == 3 * C::XYZZ_WORDS, || {
        format!("output of {} words", out.len())
    })?;
    let args = KernelArgs::new()
        .device_ptr(sums.device_ptr())
        .u32(windows)
        .u32(c)
        .device_ptr(out.device_ptr());
    #[allow(unsafe_code)]
    // SAFETY: argument order of msm_horner_*; sizes checked above.
    unsafe {
        s.launch(kernel, grid(1, 1), args, || {
            format!("{windows} windows of {c} bits")
        })
    }
}

/// Reusable batch summation Σ P_i over selected points, for curve `C`.
pub struct BatchSum<C: MsmCurve> {
    stream: Stream,
    blocks: u32,
    bitmap_kernel: &'static str,
    partials: DeviceBuffer<u64>,
    partials2: DeviceBuffer<u64>,
    result: DeviceBuffer<u64>,
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
    pub fn new(stream: &Stream) -> Result<Self> {
        Self::with_variant(stream, C::DEFAULT_BITMAP_VARIANT)
    }

    /// With a chosen bitmap kernel variant (for tuning; see
    /// `MsmCurve::BITMAP_VARIANTS`).
    #[doc(hidden)]
    pub fn with_variant(stream: &Stream, variant: usize) -> Result<Self> {
        let kernel = C::KERNELS[K_BITMAP];
        ensure(kernel, variant < C::BITMAP_VARIANTS.len(), || {
            format!("no bitmap variant {variant}")
        })?;
        let bitmap_kernel = C::BITMAP_VARIANTS[variant];
        let blocks = resident_threads(stream, bitmap_kernel, BATCH_THREADS)? / BATCH_THREADS;
        let xw = C::XYZZ_WORDS;
        Ok(BatchSum {
            stream: stream.clone(),
            blocks,
            bitmap_kernel,
            partials: stream.alloc(blocks as usize * xw)?,
            partials2: stream.alloc(SUM_MAX_BLOCKS as usize * xw)?,
            result: stream.alloc(3 * xw / 4)?,
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

    pub fn enqueue_bitmap(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        bitmap: &DeviceBuffer<u64>,
        n: usize,
    ) -> Result<()> {
        let kernel = self.bitmap_kernel;
        ensure(kernel, n <= bases.len() && n < MAX_LEN, || {
            format!("{n} points selected from {} bases", bases.len())
        })?;
        ensure(kernel, n.div_ceil(64) <= bitmap.len(), || {
            format!("{n} points but a bitmap of {} words", bitmap.len())
        })?;
        let args = KernelArgs::new()
            .device_ptr(bases.device_ptr())
            .device_ptr(bitmap.device_ptr())
            .u32(n as u32)
            .device_ptr(self.partials.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_batch_sum_bitmap_*; reads bases[i] and
        // bitmap words for i < n only (checked above); writes partials[0..blocks).
        unsafe {
            self.stream
                .launch(kernel, grid(self.blocks, BATCH_THREADS), args, || {
                    format!("{n} points")
                })?;
        }
        self.finish()
    }

    pub fn enqueue_indices(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<()> {
        let kernel = C::KERNELS[K_INDICES];
        ensure(kernel, count <= indices.len() && count < MAX_LEN, || {
            format!("{count} indices asked, {} present", indices.len())
        })?;
        let nbases = bases.len().min(u32::MAX as usize) as u32;
        let args = KernelArgs::new()
            .device_ptr(bases.device_ptr())
            .u32(nbases)
            .device_ptr(indices.device_ptr())
            .u32(count as u32)
            .device_ptr(self.partials.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_batch_sum_indices_*; reads indices[0..count)
        // and bases only at indices < nbases; writes partials[0..blocks).
        unsafe {
            self.stream
                .launch(kernel, grid(self.blocks, BATCH_THREADS), args, || {
                    format!("{count} indices")
                })?;
        }
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        let s = &self.stream;
        let b2 = self.blocks.div_ceil(SUM_THREADS).clamp(1, SUM_MAX_BLOCKS);
        sum_groups::<C>(s, &self.partials, self.blocks, 1, b2, &self.partials2)?;
        sum_groups::<C>(s, &self.partials2, b2, 1, 1, &self.partials)?;
        horner::<C>(s, &self.partials, 1, 0, &self.result)
    }

    /// Waits for the queued sum and returns it.
    pub fn result(&self) -> Result<C::Projective> {
        let words = self.stream.download_vec(&self.result)?;
        Ok(C::from_jacobian_words(&words))
    }
}
