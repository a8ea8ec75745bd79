//! The fence around cuda/sppark_bench.cu: the only module with `unsafe`, and the only one that
//! knows the C functions' argument lists. Device memory is held by [`DeviceBuffer`] handles,
//! never by Rust references; a failed call keeps sppark's message ("cudaMalloc(...)@file:line
//! failed: ...") and says which call it was and at what size.

use std::ffi::{c_char, c_void, CStr};
use std::marker::PhantomData;
use std::mem::size_of;

use anyhow::{bail, ensure, Result};
use blst::{blst_fr, blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};

/// Types that may be copied byte for byte between host and device memory.
///
/// # Safety
/// An implementor is `repr(C)` plain data (no pointers, no padding the device reads) whose bytes
/// cuda/sppark_bench.cu reads as the same value: blst's Montgomery-form limbs, which are
/// sppark's (see the layout table at the top of that file).
pub unsafe trait DeviceRepr: Copy {}
// SAFETY: blst_fr is `repr(C) { l: [u64; 4] }`, Montgomery form, R = 2^256: sppark's fr_t.
unsafe impl DeviceRepr for blst_fr {}
// SAFETY: `repr(C) { x, y: blst_fp }`, each `[u64; 6]` in Montgomery form: sppark's Affine_t<fp_t>.
unsafe impl DeviceRepr for blst_p1_affine {}
// SAFETY: `repr(C) { x, y: blst_fp2 }`, blst_fp2 = `[blst_fp; 2]`: sppark's Affine_t<fp2_t>.
unsafe impl DeviceRepr for blst_p2_affine {}

extern "C" {
    fn sppark_bench_layout(sizes: *mut usize);
    fn sppark_bench_open(name: *mut c_char, name_len: usize, sm_count: *mut i32) -> sppark::Error;
    fn sppark_bench_alloc(ptr: *mut *mut c_void, bytes: usize) -> sppark::Error;
    fn sppark_bench_free(ptr: *mut c_void);
    fn sppark_bench_upload(dst: *mut c_void, src: *const c_void, bytes: usize) -> sppark::Error;
    fn sppark_bench_download(dst: *mut c_void, src: *const c_void, bytes: usize) -> sppark::Error;
    fn sppark_bench_msm_new(curve: i32, n: usize, ctx: *mut *mut c_void) -> sppark::Error;
    fn sppark_bench_msm_run(
        ctx: *mut c_void,
        out: *mut c_void,
        d_points: *const c_void,
        d_scalars: *const c_void,
        n: usize,
        host_ms: *mut f64,
    ) -> sppark::Error;
    fn sppark_bench_msm_free(ctx: *mut c_void);
    fn sppark_bench_ntt_forward(
        d_inout: *mut c_void,
        lg_n: u32,
        device_ms: *mut f32,
    ) -> sppark::Error;
}

/// `Ok` for sppark's success code, else an error naming the call (`what`) with sppark's text.
fn check(status: sppark::Error, what: impl FnOnce() -> String) -> Result<()> {
    if status.code == 0 {
        Ok(())
    } else {
        bail!("{}: {status}", what())
    }
}

/// The GPU sppark runs on (its first device of compute capability 7 or more).
pub struct Device {
    pub name: String,
    pub sm_count: i32,
}

/// Checks that the C side's types have blst's sizes, selects the device and makes the default
/// memory pool keep its allocations (cuda/sppark_bench.cu, `sppark_bench_open`, says why).
pub fn open() -> Result<Device> {
    let mut sizes = [0usize; 5];
    // SAFETY: writes exactly five size_t into the array.
    unsafe { sppark_bench_layout(sizes.as_mut_ptr()) };
    let expected = [
        size_of::<blst_fr>(),
        size_of::<blst_p1_affine>(),
        size_of::<blst_p2_affine>(),
        size_of::<blst_p1>(),
        size_of::<blst_p2>(),
    ];
    ensure!(
        sizes == expected,
        "sppark's Fr, G1/G2 affine and G1/G2 Jacobian sizes {sizes:?} are not blst's {expected:?}"
    );
    let mut name = [0 as c_char; 256];
    let mut sm_count = 0i32;
    // SAFETY: the name buffer's length is passed and the C side NUL-terminates within it.
    let status = unsafe { sppark_bench_open(name.as_mut_ptr(), name.len(), &mut sm_count) };
    check(status, || {
        "opening the GPU (sppark select_gpu(0))".to_string()
    })?;
    // SAFETY: snprintf wrote a NUL-terminated string into `name`.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(Device { name, sm_count })
}

/// `len` values of `T` in device memory (cudaMalloc), freed on drop.
pub struct DeviceBuffer<T: DeviceRepr> {
    ptr: *mut c_void,
    len: usize,
    _values: PhantomData<T>,
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// A device copy of `host`.
    pub fn upload(host: &[T]) -> Result<Self> {
        let bytes = std::mem::size_of_val(host);
        let mut ptr = std::ptr::null_mut();
        // SAFETY: cudaMalloc writes the pointer of a fresh allocation of `bytes` bytes.
        let status = unsafe { sppark_bench_alloc(&mut ptr, bytes) };
        check(status, || format!("cudaMalloc of {bytes} bytes"))?;
        let buffer = DeviceBuffer {
            ptr,
            len: host.len(),
            _values: PhantomData,
        };
        // SAFETY: `ptr` holds `bytes` bytes; `host` is `bytes` bytes of plain data (DeviceRepr).
        let status = unsafe { sppark_bench_upload(ptr, host.as_ptr().cast(), bytes) };
        check(status, || format!("copying {bytes} bytes to the device"))?;
        Ok(buffer)
    }

    /// The device values, copied back.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut host: Vec<T> = Vec::with_capacity(self.len);
        let bytes = self.len * size_of::<T>();
        // SAFETY: `host` has room for `len` values, which the copy fills completely before
        // set_len; every bit pattern the device holds is a valid T (plain data).
        unsafe {
            let status = sppark_bench_download(host.as_mut_ptr().cast(), self.ptr, bytes);
            check(status, || format!("copying {bytes} bytes from the device"))?;
            host.set_len(self.len);
        }
        Ok(host)
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from cudaMalloc and is freed once, here.
        unsafe { sppark_bench_free(self.ptr) };
    }
}

/// A curve sppark-bench instantiates sppark's MSM for, with blst's types for its points.
pub trait Curve {
    /// The C side's curve number (cuda/sppark_bench.cu, `sppark_bench_msm_new`).
    const ID: i32;
    const NAME: &'static str;
    type Affine: DeviceRepr;
    /// blst's Jacobian point (x = X/Z², y = Y/Z³), which is how sppark's jacobian_t returns it.
    type Jacobian: Copy + Default;
}

pub struct G1;
pub struct G2;

impl Curve for G1 {
    const ID: i32 = 1;
    const NAME: &'static str = "G1";
    type Affine = blst_p1_affine;
    type Jacobian = blst_p1;
}

impl Curve for G2 {
    const ID: i32 = 2;
    const NAME: &'static str = "G2";
    type Affine = blst_p2_affine;
    type Jacobian = blst_p2;
}

/// sppark's `msm_t` for up to `capacity` points of curve `C`, made once (bucket and histogram
/// memory allocated here, window width chosen by sppark for `capacity`), holding no points of
/// its own: each run takes bases and scalars already in device memory.
pub struct Msm<C: Curve> {
    ctx: *mut c_void,
    capacity: usize,
    _curve: PhantomData<C>,
}

impl<C: Curve> Msm<C> {
    pub fn new(capacity: usize) -> Result<Self> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: writes a new context pointer (owned by the returned value) on success.
        let status = unsafe { sppark_bench_msm_new(C::ID, capacity, &mut ctx) };
        check(status, || {
            format!("sppark msm_t for 2^{} {} points", capacity.ilog2(), C::NAME)
        })?;
        Ok(Msm {
            ctx,
            capacity,
            _curve: PhantomData,
        })
    }

    /// Σ scalars[i]·bases[i] over the first `n` of each, with the wall time in ms of the call
    /// (host clock: a device synchronize, then `msm_t::invoke`, which synchronizes itself and
    /// finishes the sum of the windows on the host).
    pub fn run(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<blst_fr>,
        n: usize,
    ) -> Result<(C::Jacobian, f64)> {
        ensure!(
            n <= self.capacity && n <= bases.len() && n <= scalars.len(),
            "{} MSM of {n} points: the engine holds {}, the buffers {} bases and {} scalars",
            C::NAME,
            self.capacity,
            bases.len(),
            scalars.len()
        );
        let mut out = C::Jacobian::default();
        let mut ms = 0f64;
        // SAFETY: `ctx` is this curve's context; both buffers hold at least `n` values of the
        // types the C side reads; `out` is a blst Jacobian point, the C side's point_t.
        let status = unsafe {
            sppark_bench_msm_run(
                self.ctx,
                (&mut out as *mut C::Jacobian).cast(),
                bases.ptr,
                scalars.ptr,
                n,
                &mut ms,
            )
        };
        check(status, || {
            format!("sppark {} MSM of 2^{} points", C::NAME, n.ilog2())
        })?;
        Ok((out, ms))
    }
}

impl<C: Curve> Drop for Msm<C> {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from sppark_bench_msm_new and is freed once, here.
        unsafe { sppark_bench_msm_free(self.ctx) };
    }
}

/// sppark's forward NTT of the buffer in place (natural order in and out), with its device time
/// in ms (CUDA events around the call on sppark's stream).
pub fn ntt_forward(data: &mut DeviceBuffer<blst_fr>) -> Result<f32> {
    let n = data.len();
    ensure!(n.is_power_of_two(), "NTT of {n} values: not a power of two");
    let lg_n = n.ilog2();
    let mut ms = 0f32;
    // SAFETY: the buffer holds 2^lg_n Fr values, which the call transforms in place.
    let status = unsafe { sppark_bench_ntt_forward(data.ptr, lg_n, &mut ms) };
    check(status, || format!("sppark forward NTT of 2^{lg_n}"))?;
    Ok(ms)
}
