//! Shifted bases ([`ShiftedBases`]): fixed bases kept on the device with
//! precomputed copies Q_k = 2^(c·S·k)·P, so that an MSM's W windows of c
//! bits share S < W bucket sets. Window w = s + k·S of scalar a contributes
//! its digit d_w to bucket set s with the point Q_k, since
//!
//!   Σ_w d_w·2^(c·w)·P = Σ_(s<S) 2^(c·s) · Σ_k d_(s+k·S)·Q_k.
//!
//! The bucket additions stay n·W, but the reduction (≈ 4 additions per
//! bucket) and the Horner steps are paid S times instead of W, which lets c
//! grow: fewer windows, fewer additions. The price is memory, ⌈W / S⌉
//! copies of the bases, so it is for bases that stay resident (a key's H
//! query) and MSMs that run many times; [`choose_shifted_shape`] picks (c, S)
//! for a size and a byte budget.
//!
//! The copies are made on the device, copy k from copy k − 1 by c·S
//! doublings (kernels/msm/pippenger.cuh `shift_bases`), in chunks, with one
//! inversion per run of points.
//!
//! [`choose_shifted_shape`]: super::plan::choose_shifted_shape

use std::fmt;
use std::marker::PhantomData;

use super::curve::MsmCurve;
use super::plan::{copies_for, windows_for};
use super::{MAX_LEN, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::device::{grid, DeviceBuffer, Event, Stream};
use crate::error::{ensure, Result};

/// Points per thread of the shift kernel (one inversion each) and per launch.
const SHIFT_RUN: u32 = 16;
const SHIFT_SLICE: usize = 1 << 22;
const SHIFT_THREADS: u32 = 64;

/// Bases with their shifted copies on the device: copy k (k < copies) of
/// point i at index k·len + i is 2^(k·c·sets)·P_i.
pub struct ShiftedBases<C: MsmCurve> {
    points: DeviceBuffer<C::Affine>,
    len: usize,
    window_bits: u32,
    sets: u32,
    copies: u32,
    build_ms: f32,
    _curve: PhantomData<C>,
}

impl<C: MsmCurve> fmt::Debug for ShiftedBases<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShiftedBases")
            .field("curve", &C::NAME)
            .field("len", &self.len)
            .field("window_bits", &self.window_bits)
            .field("sets", &self.sets)
            .field("copies", &self.copies)
            .finish()
    }
}

impl<C: MsmCurve> ShiftedBases<C> {
    /// Device bytes of the bases and their copies for `len` points with
    /// c-bit windows over `sets` bucket sets (one copy is the bases).
    pub fn bytes_for(len: usize, window_bits: u32, sets: u32) -> u64 {
        (copies_for(window_bits, sets) as u64) * (len as u64) * Self::point_bytes()
            + crate::arena::ALIGN
    }

    /// Device bytes the build needs beside the copies (one slice of XYZZ
    /// points).
    pub fn build_scratch_bytes(len: usize) -> u64 {
        (len.clamp(1, SHIFT_SLICE) * C::XYZZ_WORDS * 8) as u64 + crate::arena::ALIGN
    }

    fn point_bytes() -> u64 {
        std::mem::size_of::<C::Affine>() as u64
    }

    /// Copies the first `len` points of `bases` and makes their shifted
    /// copies for MSMs of c-bit windows over `sets` bucket sets, on
    /// `stream` (waits for it). `bases` can be dropped afterwards.
    pub fn build(
        stream: &Stream,
        bases: &DeviceBuffer<C::Affine>,
        len: usize,
        window_bits: u32,
        sets: u32,
    ) -> Result<Self> {
        let kernel = C::SHIFT_BASES.name();
        ensure(kernel, len <= bases.len(), || {
            format!("{len} points of {} {} bases", bases.len(), C::NAME)
        })?;
        let copies = Self::check_shape(len, window_bits, sets)?;
        let mut points = stream.alloc::<C::Affine>((copies as usize * len).max(1))?;
        let start = stream.record()?;
        stream.copy_range(bases, 0, &mut points, 0, len)?;
        Self::shift(stream, points, start, len, window_bits, sets)
    }

    /// Device points for `len` bases and their copies for (c, sets), not
    /// zeroed: write the bases into the first `len` (copy 0), e.g. by an
    /// upload, then [`ShiftedBases::from_copy0`] (no second copy of the
    /// bases on the device).
    pub fn alloc_points(
        stream: &Stream,
        len: usize,
        window_bits: u32,
        sets: u32,
    ) -> Result<DeviceBuffer<C::Affine>> {
        let copies = Self::check_shape(len, window_bits, sets)?;
        stream.alloc_uninit((copies as usize * len).max(1))
    }

    /// Makes the copies in `points` (from [`ShiftedBases::alloc_points`]),
    /// whose first `len` points are the bases, on `stream` (waits for it).
    pub fn from_copy0(
        stream: &Stream,
        points: DeviceBuffer<C::Affine>,
        len: usize,
        window_bits: u32,
        sets: u32,
    ) -> Result<Self> {
        let copies = Self::check_shape(len, window_bits, sets)?;
        ensure(
            C::SHIFT_BASES.name(),
            points.len() >= copies as usize * len,
            || format!("{} points for {copies} copies of {len}", points.len()),
        )?;
        let start = stream.record()?;
        Self::shift(stream, points, start, len, window_bits, sets)
    }

    /// The copies' count for a valid shape, or why it is not one.
    fn check_shape(len: usize, window_bits: u32, sets: u32) -> Result<u32> {
        let kernel = C::SHIFT_BASES.name();
        let w = windows_for(window_bits.clamp(MIN_WINDOW_BITS, MAX_WINDOW_BITS));
        ensure(
            kernel,
            (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&window_bits) && (1..=w).contains(&sets),
            || format!("window size {window_bits} with {sets} bucket sets"),
        )?;
        let copies = copies_for(window_bits, sets);
        ensure(
            kernel,
            (copies as usize).saturating_mul(len) < MAX_LEN,
            || format!("{copies} copies of {len} points overflow the 31-bit entry index"),
        )?;
        Ok(copies)
    }

    /// Copy k from copy k − 1, k = 1 .. copies, in slices; `start` was
    /// recorded before the first copy's points were written.
    fn shift(
        stream: &Stream,
        mut points: DeviceBuffer<C::Affine>,
        start: Event,
        len: usize,
        window_bits: u32,
        sets: u32,
    ) -> Result<Self> {
        let copies = copies_for(window_bits, sets);
        let shift = window_bits * sets;
        if copies > 1 && len > 0 {
            let mut scratch: DeviceBuffer<u64> =
                stream.alloc(len.min(SHIFT_SLICE) * C::XYZZ_WORDS)?;
            for k in 1..copies as usize {
                let mut first = 0;
                while first < len {
                    let n = (len - first).min(SHIFT_SLICE) as u32;
                    let args = (
                        points.arg_at((k - 1) * len + first),
                        n,
                        SHIFT_RUN,
                        shift,
                        scratch.arg_mut(),
                        points.arg_mut_at(k * len + first),
                    );
                    let threads = n.div_ceil(SHIFT_RUN);
                    #[allow(unsafe_code)]
                    // SAFETY: reads copy k − 1's points [first, first + n), writes scratch[0..n)
                    // (n ≤ the slice it holds) and copy k's points
                    // [first, first + n), all inside `points` (≥ copies·len).
                    unsafe {
                        stream.launch(
                            C::SHIFT_BASES,
                            grid(threads.div_ceil(SHIFT_THREADS), SHIFT_THREADS),
                            args,
                            || format!("copy {k}, points {first}..+{n}, {shift} doublings"),
                        )?;
                    }
                    first += n as usize;
                }
            }
            // `scratch` lives until the kernels have run.
            stream.synchronize()?;
        }
        let end: Event = stream.record()?;
        let build_ms = start.elapsed_ms(&end)?;
        Ok(ShiftedBases {
            points,
            len,
            window_bits,
            sets,
            copies,
            build_ms,
            _curve: PhantomData,
        })
    }

    /// Points per copy.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window size the copies were made for.
    pub fn window_bits(&self) -> u32 {
        self.window_bits
    }

    /// Bucket sets the MSMs over these bases use.
    pub fn sets(&self) -> u32 {
        self.sets
    }

    /// Copies held, the bases' own included.
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Bits between consecutive copies: c · sets.
    pub fn shift_bits(&self) -> u32 {
        self.window_bits * self.sets
    }

    /// Milliseconds the build took on the device (CUDA events).
    pub fn build_ms(&self) -> f32 {
        self.build_ms
    }

    /// Device bytes held.
    pub fn size_bytes(&self) -> usize {
        self.points.size_bytes()
    }

    /// All copies, copy k at k·len: what the accumulation reads.
    pub(crate) fn points(&self) -> &DeviceBuffer<C::Affine> {
        &self.points
    }

    /// Copy k's points (for tests).
    pub fn download_copy(&self, stream: &Stream, k: u32) -> Result<Vec<C::Affine>> {
        ensure(C::SHIFT_BASES.name(), k < self.copies, || {
            format!("copy {k} of {}", self.copies)
        })?;
        let all = stream.download_vec(&self.points)?;
        let at = k as usize * self.len;
        Ok(all[at..at + self.len].to_vec())
    }
}
