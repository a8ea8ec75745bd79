//! Fixed-base batch scalar multiplication for proving-key generation
//! (kernels/keygen/): `[s_i]·G` for millions of scalars and one base G, in
//! G1 or G2, returned as affine points.
//!
//! The host builds a signed-digit window table of G (`cuzk_groth16::setup::
//! WindowTable` does) and uploads it once as a [`FixedBaseTable`]; every
//! product is then one mixed addition per nonzero digit on the device,
//! followed by a batch conversion to affine with one field inversion per
//! [`AFFINE_RUN`] points. Scalars go up and points come back in chunks, so
//! device memory stays bounded whatever the batch size. With a [`Staging`]
//! (pinned host buffers, two of each, allocated once) the copies run at
//! pinned rates and the host's copy of chunk k − 1 into the caller's slice
//! overlaps the device's work on chunk k.
//!
//! Table layout (what the kernels index): for a window of `w` bits and
//! `windows` windows, `half = 2^(w-1)` and `table[j·half + d − 1] = d ·
//! 2^(w·j) · G` for `j < windows`, `d` in `1..=half`, affine (infinity = all
//! zero limbs, which a prime-order base never produces). `w · windows ≥ 256`
//! so the top digit cannot carry out.

use std::marker::PhantomData;

use cuzk_field::limbs::FrLimbs;
use rayon::prelude::*;

use crate::decl::{self, KeygenMul, KeygenToAffine};
use crate::device::{grid, DeviceBuffer, Event, Gpu, PinnedBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::{DevPtrMut, Kernel};
use crate::msm::{MsmCurve, G1, G2};

/// Points one thread of the affine conversion handles with one inversion.
pub const AFFINE_RUN: u32 = 32;
/// Threads per block of the multiplication (register-heavy) and conversion.
const MUL_THREADS: u32 = 128;
const AFFINE_THREADS: u32 = 64;
/// XYZZ scratch per chunk: 1 GiB (2^22 G1 or 2^21 G2 points).
const CHUNK_XYZZ_BYTES: usize = 1 << 30;
/// Widest window the kernels take (digits are read from two 32-bit limbs).
pub const MAX_WINDOW_BITS: u32 = 24;

/// A curve the keygen kernels are built for ([`G1`], [`G2`]).
pub trait KeygenCurve: MsmCurve {
    /// `keygen_fixed_base_mul_*`.
    #[doc(hidden)]
    const KEYGEN_MUL: Kernel<KeygenMul<Self::Affine>>;
    /// `keygen_to_affine_*`.
    #[doc(hidden)]
    const KEYGEN_TO_AFFINE: Kernel<KeygenToAffine<Self::Affine>>;
}

impl KeygenCurve for G1 {
    const KEYGEN_MUL: Kernel<KeygenMul<Self::Affine>> = decl::keygen_fixed_base_mul_g1;
    const KEYGEN_TO_AFFINE: Kernel<KeygenToAffine<Self::Affine>> = decl::keygen_to_affine_g1;
}

impl KeygenCurve for G2 {
    const KEYGEN_MUL: Kernel<KeygenMul<Self::Affine>> = decl::keygen_fixed_base_mul_g2;
    const KEYGEN_TO_AFFINE: Kernel<KeygenToAffine<Self::Affine>> = decl::keygen_to_affine_g2;
}

/// A fixed-base window table resident on the device (see the module docs for
/// the layout).
pub struct FixedBaseTable<C: KeygenCurve> {
    points: DeviceBuffer<C::Affine>,
    window_bits: u32,
    windows: u32,
    _curve: PhantomData<C>,
}

impl<C: KeygenCurve> std::fmt::Debug for FixedBaseTable<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedBaseTable")
            .field("curve", &C::NAME)
            .field("window_bits", &self.window_bits)
            .field("windows", &self.windows)
            .finish()
    }
}

impl<C: KeygenCurve> FixedBaseTable<C> {
    /// Uploads `points`, a table for windows of `window_bits` bits.
    pub fn upload(
        stream: &Stream,
        points: &[C::Affine],
        window_bits: u32,
        windows: u32,
    ) -> Result<Self> {
        let what = "FixedBaseTable::upload";
        ensure(what, (1..=MAX_WINDOW_BITS).contains(&window_bits), || {
            format!("window of {window_bits} bits (1..={MAX_WINDOW_BITS})")
        })?;
        ensure(what, window_bits as u64 * windows as u64 >= 256, || {
            format!("{windows} windows of {window_bits} bits cover less than 256 bits")
        })?;
        let want = (windows as usize) << (window_bits - 1);
        ensure(what, points.len() == want, || {
            format!(
                "{} {} points for {windows} windows of {window_bits} bits (want {want})",
                points.len(),
                C::NAME
            )
        })?;
        Ok(FixedBaseTable {
            points: stream.upload_new(points)?,
            window_bits,
            windows,
            _curve: PhantomData,
        })
    }

    /// Bits per window.
    pub fn window_bits(&self) -> u32 {
        self.window_bits
    }

    /// Number of windows (digits per scalar).
    pub fn windows(&self) -> u32 {
        self.windows
    }

    /// `out[i] = [scalars[i]]·G` as affine limbs (zero gives infinity).
    /// Scalars are Montgomery limbs, as `cuzk_field::limbs::fr_as_limbs`
    /// views `Fr`. Returns when `out` is filled.
    pub fn mul(&self, stream: &Stream, scalars: &[FrLimbs], out: &mut [C::Affine]) -> Result<()> {
        self.mul_in_chunks(stream, scalars, out, Self::default_chunk())
    }

    /// Points per chunk that [`FixedBaseTable::mul`] uses: 1 GiB of XYZZ
    /// scratch.
    pub fn default_chunk() -> usize {
        CHUNK_XYZZ_BYTES / (C::XYZZ_WORDS * 8)
    }

    /// [`FixedBaseTable::mul`] with `chunk` points per upload, launch pair and
    /// download.
    pub fn mul_in_chunks(
        &self,
        stream: &Stream,
        scalars: &[FrLimbs],
        out: &mut [C::Affine],
        chunk: usize,
    ) -> Result<()> {
        let mul_kernel = C::KEYGEN_MUL.name();
        ensure(mul_kernel, scalars.len() == out.len(), || {
            format!("{} scalars, {} outputs", scalars.len(), out.len())
        })?;
        ensure(mul_kernel, chunk > 0 && chunk <= u32::MAX as usize, || {
            format!("chunk of {chunk} points")
        })?;
        if scalars.is_empty() {
            return Ok(());
        }
        let chunk = chunk.min(scalars.len());
        let mut scalar_buf: DeviceBuffer<FrLimbs> = stream.alloc(chunk)?;
        let mut xyzz: DeviceBuffer<u64> = stream.alloc(chunk * C::XYZZ_WORDS)?;
        let mut first = 0;
        while first < scalars.len() {
            let len = chunk.min(scalars.len() - first);
            stream.upload_prefix(&scalars[first..first + len], &mut scalar_buf)?;
            // A chunk's points in a buffer of exactly `len` (download takes whole buffers).
            let mut points: DeviceBuffer<C::Affine> = stream.alloc(len)?;
            self.launch(stream, &scalar_buf, &mut xyzz, points.arg_mut(), first, len)?;
            stream.download(&points, &mut out[first..first + len])?;
            first += len;
        }
        Ok(())
    }

    /// [`FixedBaseTable::mul`] through `staging`: scalars are copied into a
    /// pinned buffer and uploaded from there, points come back into a pinned
    /// buffer, and while the device works on one chunk the host copies the
    /// previous chunk's points into `out` (in parallel). Chunks are as large
    /// as the staging buffers and the 1 GiB XYZZ scratch allow. Returns the
    /// kernels' device time (CUDA events around each launch).
    pub fn mul_staged(
        &self,
        stream: &Stream,
        staging: &mut Staging,
        scalars: &[FrLimbs],
        out: &mut [C::Affine],
    ) -> Result<KernelTimes> {
        let mul_kernel = C::KEYGEN_MUL.name();
        ensure(mul_kernel, scalars.len() == out.len(), || {
            format!("{} scalars, {} outputs", scalars.len(), out.len())
        })?;
        let point_bytes = std::mem::size_of::<C::Affine>();
        let chunk = Self::default_chunk()
            .min(staging.scalar_bytes() / std::mem::size_of::<FrLimbs>())
            .min(staging.point_bytes() / point_bytes);
        ensure(mul_kernel, chunk > 0, || {
            format!("staging too small for one {} point", C::NAME)
        })?;
        if scalars.is_empty() {
            return Ok(KernelTimes::default());
        }
        let chunk = chunk.min(scalars.len());
        let mut events = Vec::new();
        let mut dev_scalars: DeviceBuffer<FrLimbs> = stream.alloc(chunk)?;
        let mut xyzz: DeviceBuffer<u64> = stream.alloc(chunk * C::XYZZ_WORDS)?;
        // Whole staging buffers travel back (download_pinned copies equal
        // lengths); only the first `len` points of each are used.
        let dev_points: DeviceBuffer<u8> = stream.alloc(staging.point_bytes())?;
        // (slot, first, len) of the chunk whose points are on their way back.
        let mut pending: Option<(usize, usize, usize)> = None;
        for (k, first) in (0..scalars.len()).step_by(chunk).enumerate() {
            let len = chunk.min(scalars.len() - first);
            let slot = k % 2;
            // Waits for this slot's previous upload (two chunks ago).
            staging.scalars[slot].values_mut::<FrLimbs>()?[..len]
                .copy_from_slice(&scalars[first..first + len]);
            stream.upload_staged(&staging.scalars[slot], len, &mut dev_scalars, 0)?;
            let before = stream.record()?;
            // The staging bytes hold `len` ≤ chunk points (chunk ≤
            // point_bytes / point size), aligned as the arena aligns.
            let points = DevPtrMut::from_raw(dev_points.device_ptr());
            let between = self.launch(stream, &dev_scalars, &mut xyzz, points, first, len)?;
            events.push((before, between, stream.record()?));
            stream.download_pinned(&dev_points, &mut staging.points[slot])?;
            if let Some((slot, first, len)) = pending.take() {
                copy_out::<C>(&mut staging.points[slot], &mut out[first..first + len])?;
            }
            pending = Some((slot, first, len));
        }
        if let Some((slot, first, len)) = pending {
            copy_out::<C>(&mut staging.points[slot], &mut out[first..first + len])?;
        }
        let mut times = KernelTimes::default();
        for (before, between, after) in &events {
            times.mul_ms += before.elapsed_ms(between)? as f64;
            times.affine_ms += between.elapsed_ms(after)? as f64;
        }
        Ok(times)
    }

    /// Launches the product and the affine conversion of `len` scalars from
    /// `dev_scalars` into the affine points at `points` (room for `len`);
    /// returns an event recorded between the two.
    fn launch(
        &self,
        stream: &Stream,
        dev_scalars: &DeviceBuffer<FrLimbs>,
        xyzz: &mut DeviceBuffer<u64>,
        points: DevPtrMut<C::Affine>,
        first: usize,
        len: usize,
    ) -> Result<Event> {
        let n = len as u32;
        debug_assert!(len <= dev_scalars.len() && len * C::XYZZ_WORDS <= xyzz.len());
        let args = (
            self.points.arg(),
            self.window_bits,
            self.windows,
            dev_scalars.arg(),
            n,
            xyzz.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: as in `mul_in_chunks`: reads dev_scalars[0..n) and table rows
        // j < windows at columns < 2^(w-1); writes n XYZZ points into xyzz
        // (callers size it for at least n).
        unsafe {
            stream.launch(
                C::KEYGEN_MUL,
                grid(n.div_ceil(MUL_THREADS), MUL_THREADS),
                args,
                || {
                    format!(
                        "{len} scalars at {first}, {} windows of {} bits",
                        self.windows, self.window_bits
                    )
                },
            )?;
        }
        let between = stream.record()?;
        let threads = n.div_ceil(AFFINE_RUN);
        let args = (xyzz.arg(), n, AFFINE_RUN, points);
        #[allow(unsafe_code)]
        // SAFETY: reads n XYZZ points from xyzz, writes n affine points at
        // `points`, which callers size for at least n.
        unsafe {
            stream.launch(
                C::KEYGEN_TO_AFFINE,
                grid(threads.div_ceil(AFFINE_THREADS), AFFINE_THREADS),
                args,
                || format!("{len} points at {first}"),
            )?;
        }
        Ok(between)
    }
}

/// Copies the first `out.len()` points of a pinned staging buffer into `out`
/// (waiting for its download first), in parallel.
fn copy_out<C: KeygenCurve>(points: &mut PinnedBuffer<u8>, out: &mut [C::Affine]) -> Result<()> {
    let staged = &points.values_mut::<C::Affine>()?[..out.len()];
    out.par_chunks_mut(1 << 14)
        .zip(staged.par_chunks(1 << 14))
        .for_each(|(o, s)| o.copy_from_slice(s));
    Ok(())
}

/// Device time of the keygen kernels in one [`FixedBaseTable::mul_staged`]
/// call, summed over its chunks (CUDA events).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelTimes {
    /// The fixed-base products (`keygen_fixed_base_mul_*`).
    pub mul_ms: f64,
    /// The conversion to affine (`keygen_to_affine_*`).
    pub affine_ms: f64,
}

/// Pinned host buffers for [`FixedBaseTable::mul_staged`]: two for scalars
/// and two for points, so one chunk's copies overlap the next chunk's work.
/// Allocate once (pinning is slow) and reuse for G1 and G2.
#[derive(Debug)]
pub struct Staging {
    scalars: [PinnedBuffer<u8>; 2],
    points: [PinnedBuffer<u8>; 2],
}

impl Staging {
    /// Room for one full chunk of either curve: 2^22 scalars (128 MiB) and
    /// 384 MiB of points per buffer, 1 GiB pinned in all.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_sizes(gpu, 128 << 20, 384 << 20)
    }

    /// Buffers of `scalar_bytes` and `point_bytes` each (chunks shrink to fit).
    pub fn with_sizes(gpu: &Gpu, scalar_bytes: usize, point_bytes: usize) -> Result<Self> {
        Ok(Staging {
            scalars: [
                PinnedBuffer::new(gpu, scalar_bytes)?,
                PinnedBuffer::new(gpu, scalar_bytes)?,
            ],
            points: [
                PinnedBuffer::new(gpu, point_bytes)?,
                PinnedBuffer::new(gpu, point_bytes)?,
            ],
        })
    }

    fn scalar_bytes(&self) -> usize {
        self.scalars[0].len()
    }

    fn point_bytes(&self) -> usize {
        self.points[0].len()
    }
}
