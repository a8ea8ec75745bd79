//! The one module with `unsafe`: byte views of device-representable values,
//! raw launches, pinned allocation, and turning off cudarc's implicit event
//! tracking. Everything else in the crate is safe code over these.
#![allow(unsafe_code)]

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cuzk_field::limbs::DeviceRepr;

/// Mutable byte view of device-representable values (for downloads).
pub(crate) fn as_bytes_mut<T: DeviceRepr>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: DeviceRepr types have no padding and every bit pattern is a
    // valid value, so any bytes written through the view leave valid Ts; the
    // length covers exactly the slice and the borrow is exclusive.
    unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values))
    }
}

/// Stops cudarc from recording and waiting on events around every launch and
/// copy: cuzk orders work itself, with streams and events (docs/facts.md, "Device memory"), and
/// the implicit events would add work to every call.
pub(crate) fn disable_event_tracking(ctx: &CudaContext) {
    // SAFETY: with tracking off, cudarc no longer orders accesses to a buffer
    // across streams. This crate's contract (documented on `Stream` and
    // `DeviceBuffer`) is that callers order cross-stream use with events, and
    // every buffer is freed in order on the stream that allocated it.
    unsafe { ctx.disable_event_tracking() }
}

/// Values view of page-aligned bytes (pinned memory), rounded down to whole values.
pub(crate) fn values_mut<T: DeviceRepr>(bytes: &mut [u8]) -> &mut [T] {
    let size = std::mem::size_of::<T>().max(1);
    assert_eq!(
        bytes.as_ptr() as usize % std::mem::align_of::<T>(),
        0,
        "pinned memory is page-aligned"
    );
    // SAFETY: aligned (checked), in bounds (whole values only), and every bit
    // pattern is a valid DeviceRepr value; the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), bytes.len() / size) }
}

fn bind(stream: &CudaStream) -> Result<(), DriverError> {
    stream.context().bind_to_thread()
}

/// Zeroes `bytes` of device memory at `ptr`, ordered on `stream`.
pub(crate) fn memset_zero(stream: &CudaStream, ptr: u64, bytes: usize) -> Result<(), DriverError> {
    bind(stream)?;
    // SAFETY: callers pass a live region of at least `bytes` (an arena region
    // they own); u8 zeros are valid for every DeviceRepr type.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, 0, bytes, stream.cu_stream()) }
}

/// Host → device copy of `src` to `dst`, ordered on `stream`.
///
/// # Safety
/// `dst` must be a live device region of at least `src.len()` bytes. If `src`
/// is page-locked the copy is asynchronous: `src` must stay alive and
/// unchanged until the stream has passed this point.
pub(crate) unsafe fn copy_htod(
    stream: &CudaStream,
    dst: u64,
    src: &[u8],
) -> Result<(), DriverError> {
    bind(stream)?;
    // SAFETY: forwarded to the caller.
    unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, stream.cu_stream()) }
}

/// Device → host copy of `src` into `dst`, ordered on `stream`.
///
/// # Safety
/// `src` must be a live device region of at least `dst.len()` bytes; `dst`
/// must stay alive and untouched until the stream has passed this point.
pub(crate) unsafe fn copy_dtoh(
    stream: &CudaStream,
    dst: &mut [u8],
    src: u64,
) -> Result<(), DriverError> {
    bind(stream)?;
    // SAFETY: forwarded to the caller.
    unsafe { cudarc::driver::result::memcpy_dtoh_async(dst, src, stream.cu_stream()) }
}

/// Device → device copy of `bytes`, ordered on `stream`.
///
/// # Safety
/// Both must be live device regions of at least `bytes` bytes.
pub(crate) unsafe fn copy_dtod(
    stream: &CudaStream,
    dst: u64,
    src: u64,
    bytes: usize,
) -> Result<(), DriverError> {
    bind(stream)?;
    // SAFETY: forwarded to the caller.
    unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
}

/// Page-locked host memory: the pointer and its length in bytes.
#[derive(Debug)]
pub(crate) struct PinnedBytes {
    ctx: Arc<CudaContext>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the memory is owned by this value alone; access goes through &/&mut.
unsafe impl Send for PinnedBytes {}
// SAFETY: shared access only reads.
unsafe impl Sync for PinnedBytes {}

impl PinnedBytes {
    /// `len` zeroed bytes of page-locked host memory.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        Self::with_flags(ctx, len, 0)
    }

    /// `len` zeroed bytes allocated with `cuMemHostAlloc` flags `flags`.
    fn with_flags(ctx: &Arc<CudaContext>, len: usize, flags: u32) -> Result<Self, DriverError> {
        ctx.bind_to_thread()?;
        // SAFETY: a plain host allocation of len ≥ 1 bytes, freed in Drop.
        let ptr = unsafe { cudarc::driver::result::malloc_host(len.max(1), flags) }? as *mut u8;
        // SAFETY: freshly allocated, len bytes, exclusively ours.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(PinnedBytes {
            ctx: ctx.clone(),
            ptr,
            len,
        })
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our live allocation; callers wait for
        // pending device writes before reading (PinnedBuffer does).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusive through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBytes {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: allocated by malloc_host in `new`, freed once; the owner waited
        // for pending copies before dropping.
        let r = unsafe { cudarc::driver::result::free_host(self.ptr.cast()) };
        self.ctx.record_err(r);
    }
}

/// Page-locked host memory mapped into the device's address space
/// (`CU_MEMHOSTALLOC_DEVICEMAP`): kernels write it in place, over PCIe, and
/// the host reads it once their stream is synchronized. No copy engine is
/// involved (a download is a copy, queued behind other streams' copies).
#[derive(Debug)]
pub(crate) struct MappedBytes {
    host: PinnedBytes,
    dev: u64,
}

impl MappedBytes {
    /// `len` zeroed bytes, page-locked and mapped.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        let host = PinnedBytes::with_flags(
            ctx,
            len.max(1),
            cudarc::driver::sys::CU_MEMHOSTALLOC_DEVICEMAP,
        )?;
        let mut dev = 0;
        // SAFETY: host.ptr was allocated with DEVICEMAP in this context (and
        // is freed by `host`'s drop if this fails).
        unsafe { cudarc::driver::sys::cuMemHostGetDevicePointer_v2(&mut dev, host.ptr.cast(), 0) }
            .result()?;
        Ok(MappedBytes { host, dev })
    }

    /// The device's address of the memory.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.dev
    }

    /// The bytes as the host sees them, read with volatile loads (the
    /// device wrote them; callers synchronize the writing stream first).
    pub(crate) fn read(&self, out: &mut [u8]) {
        let len = self.host.len;
        assert!(out.len() <= len, "{} bytes of {len}", out.len());
        for (i, o) in out.iter_mut().enumerate() {
            // SAFETY: i < len, inside our live allocation.
            *o = unsafe { std::ptr::read_volatile(self.host.ptr.add(i)) };
        }
    }
}

/// Host memory the driver has page-locked in place (`cuMemHostRegister`,
/// portable: every context copies from it as pinned memory). Unregistered
/// on drop.
#[derive(Debug)]
pub(crate) struct Registered {
    ctx: Arc<CudaContext>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the value only names the range; it reads or writes nothing.
unsafe impl Send for Registered {}
// SAFETY: as above.
unsafe impl Sync for Registered {}

impl Registered {
    /// Page-locks the `len` bytes at `ptr` in place.
    ///
    /// # Safety
    /// The range must be mapped, and the memory must stay allocated, and not be written while a copy from
    /// it may run, until this value is dropped; every context that copies
    /// from it must be synchronized before the drop.
    pub(crate) unsafe fn new(
        ctx: &Arc<CudaContext>,
        ptr: *const u8,
        len: usize,
    ) -> Result<Self, DriverError> {
        ctx.bind_to_thread()?;
        let ptr = ptr.cast_mut();
        // SAFETY: a live, mapped host range (the caller keeps it so); the
        // driver only locks its pages. PORTABLE makes it pinned for every
        // context.
        unsafe {
            cudarc::driver::sys::cuMemHostRegister_v2(
                ptr.cast(),
                len,
                cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
            .result()?
        };
        Ok(Registered {
            ctx: ctx.clone(),
            ptr,
            len,
        })
    }

    /// Whether `bytes` lies inside the registered range.
    pub(crate) fn holds(&self, bytes: &[u8]) -> bool {
        let (start, end) = (self.ptr as usize, self.ptr as usize + self.len);
        let p = bytes.as_ptr() as usize;
        p >= start && p + bytes.len() <= end
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: registered in `new`, unregistered once; the owner
        // synchronized every context that copied from it.
        let r = unsafe { cudarc::driver::sys::cuMemHostUnregister(self.ptr.cast()).result() };
        self.ctx.record_err(r);
    }
}

/// A kernel's arguments, each stored as the bytes the kernel expects (device
/// addresses as u64, scalars, structs by value), kept alive until the launch.
/// Filled by `launch::Args` from a declared kernel's argument tuple.
#[derive(Debug, Default)]
pub(crate) struct KernelArgs {
    values: Vec<Vec<u64>>,
}

impl KernelArgs {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends a value passed by value: its bytes, 8-byte aligned.
    pub(crate) fn push_value<T: DeviceRepr>(&mut self, v: &T) {
        let bytes = cuzk_field::limbs::as_bytes(std::slice::from_ref(v));
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= (*b as u64) << (8 * (i % 8));
        }
        self.values.push(words);
    }

    /// Launches `func` on `stream`.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list in number, order
    /// and size; device pointers must point to live allocations large enough
    /// for every access the kernel makes with these arguments, and outputs
    /// must not alias inputs unless the kernel allows it.
    pub(crate) unsafe fn launch(
        &self,
        stream: &CudaStream,
        func: &CudaFunction,
        cfg: LaunchConfig,
    ) -> Result<(), DriverError> {
        let mut builder = stream.launch_builder(func);
        for v in &self.values {
            // cuLaunchKernel copies each parameter's size (known from the
            // kernel image) from the address given; v holds exactly those bytes.
            builder.arg(&v[0]);
        }
        // SAFETY: forwarded to the caller (see above).
        unsafe { builder.launch(cfg) }.map(|_| ())
    }
}

/// Makes `#[derive(DeviceRepr)]`-like plain structs usable as kernel arguments
/// and buffer elements. Local types only (here: the NTT twiddle table set).
macro_rules! device_repr {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: the type is #[repr(C)], made only of u64 fields, no padding.
            #[allow(unsafe_code)]
            unsafe impl cuzk_field::limbs::DeviceRepr for $t {}
        )*
    };
}
pub(crate) use device_repr;

/// The driver's CUDA version (`12040` for 12.4).
pub(crate) fn driver_version() -> Result<i32, DriverError> {
    let mut v = 0i32;
    // SAFETY: writes one int; the driver library is loaded (callers opened a
    // context first).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// The size in bytes of each parameter of `func`, from the driver
/// (`cuFuncGetParamInfo`; the caller checks that the driver is 12.4 or later).
pub(crate) fn param_sizes(func: &CudaFunction) -> Result<Vec<usize>, DriverError> {
    let mut sizes = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `func` is a live function of a loaded module (the
        // CudaFunction keeps the module alive); the call writes two usizes.
        let r = unsafe {
            cudarc::driver::sys::cuFuncGetParamInfo(
                func.cu_function(),
                sizes.len(),
                &mut offset,
                &mut size,
            )
        };
        match r {
            cudarc::driver::sys::CUresult::CUDA_SUCCESS => sizes.push(size),
            // Past the last parameter.
            cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(sizes),
            e => return Err(DriverError(e)),
        }
    }
}

/// Whether libcuda can be loaded (cudarc panics on the first driver call otherwise).
pub(crate) fn driver_library_present() -> bool {
    // SAFETY: only tries to dlopen the driver library by its usual names; no
    // driver function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Lets `func` use up to `bytes` of dynamic shared memory per block (above
/// the default 48 KiB needs this opt-in).
pub(crate) fn set_max_dynamic_shared_bytes(
    func: &CudaFunction,
    bytes: usize,
) -> Result<(), DriverError> {
    // SAFETY: `func` is a live function handle of a loaded module (the
    // CudaFunction keeps its module alive); the attribute only raises a limit.
    unsafe {
        cudarc::driver::result::function::set_function_attribute(
            func.cu_function(),
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    }
}
