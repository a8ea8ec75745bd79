//! The one module with `unsafe`: byte views of device-representable values,
//! raw launches, pinned allocation, and turning off cudarc's implicit event
//! tracking. Everything else in the crate is safe code over these.
#![allow(unsafe_code)]

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DriverError, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
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
/// copy: cuzk orders work itself, with streams and events (DESIGN.md §4), and
/// the implicit events would add work to every call.
pub(crate) fn disable_event_tracking(ctx: &CudaContext) {
    // SAFETY: with tracking off, cudarc no longer orders accesses to a buffer
    // across streams. This crate's contract (documented on `Stream` and
    // `DeviceBuffer`) is that callers order cross-stream use with events, and
    // every buffer is freed in order on the stream that allocated it.
    unsafe { ctx.disable_event_tracking() }
}

/// Allocates `len` bytes of zeroed, page-locked host memory.
pub(crate) fn alloc_pinned_bytes(
    ctx: &Arc<CudaContext>,
    len: usize,
) -> Result<PinnedHostSlice<u8>, DriverError> {
    // SAFETY: the memory is uninitialized after allocation; we zero it below
    // before anyone can read it (u8 has no invalid bit patterns).
    let mut slice = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, 0) }?;
    slice.as_mut_slice()?.fill(0);
    Ok(slice)
}

/// A kernel's arguments, each stored as the bytes the kernel expects (device
/// pointers as u64, scalars, structs by value), kept alive until the launch.
#[derive(Debug, Default)]
pub(crate) struct KernelArgs {
    values: Vec<Vec<u64>>,
}

impl KernelArgs {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends a value passed by value: its bytes, 8-byte aligned.
    pub(crate) fn value<T: DeviceRepr>(mut self, v: &T) -> Self {
        let bytes = cuzk_field::limbs::as_bytes(std::slice::from_ref(v));
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= (*b as u64) << (8 * (i % 8));
        }
        self.values.push(words);
        self
    }

    pub(crate) fn u32(self, v: u32) -> Self {
        self.value(&v)
    }

    #[allow(dead_code)] // for wrappers with u64 parameters (MSM)
    pub(crate) fn u64(self, v: u64) -> Self {
        self.value(&v)
    }

    /// Appends a raw device address (from a `DeviceBuffer`).
    pub(crate) fn device_ptr(self, ptr: u64) -> Self {
        self.value(&ptr)
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
