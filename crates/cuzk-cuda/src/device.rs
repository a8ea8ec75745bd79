//! Device discovery, the per-device handle with its loaded kernels, streams,
//! events, and typed device and pinned-host buffers.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, LaunchConfig,
};
use cuzk_field::limbs::{as_bytes, DeviceRepr};

use crate::arena::{self, Arena, Region, VramBudget};
use crate::error::{DriverContext, Error, Result};
use crate::ffi::{self, KernelArgs};
use crate::kernels;

/// What a device is, for logs and for sizing work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for an H100/H200.
    pub compute_capability: (i32, i32),
    pub total_memory: usize,
    pub multiprocessors: u32,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GPU {}: {} (sm_{}{}, {} SMs, {:.1} GiB)",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.multiprocessors,
            self.total_memory as f64 / (1u64 << 30) as f64
        )
    }
}

/// Whether the CUDA driver library can be loaded at all. Every other driver
/// call panics inside cudarc when it cannot, so this is asked first.
pub fn driver_present() -> bool {
    ffi::driver_library_present()
}

/// The CUDA devices of this machine. No driver, no device, or a driver that
/// fails to initialize all give `Err(Error::NoDevice(why))`, never a panic.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    if !driver_present() {
        return Err(Error::NoDevice(
            "the CUDA driver library (libcuda) is not installed".into(),
        ));
    }
    let count = CudaContext::device_count()
        .map_err(|e| Error::NoDevice(format!("cuInit/cuDeviceGetCount: {e}")))?;
    if count <= 0 {
        return Err(Error::NoDevice("the driver reports 0 devices".into()));
    }
    (0..count as usize).map(device_info).collect()
}

fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    let what = || format!("device {ordinal}");
    let ctx = CudaContext::new(ordinal).cuda("cuCtxCreate/cuDevicePrimaryCtxRetain", what)?;
    info_of(&ctx)
}

fn info_of(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let ordinal = ctx.ordinal();
    let what = || format!("device {ordinal}");
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().cuda("cuDeviceGetName", what)?,
        compute_capability: ctx
            .compute_capability()
            .cuda("cuDeviceGetAttribute", what)?,
        total_memory: ctx.total_mem().cuda("cuDeviceTotalMem", what)?,
        multiprocessors: ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .cuda("cuDeviceGetAttribute", what)? as u32,
    })
}

/// One CUDA device with cuzk's kernels loaded (once per handle; clone the
/// handle to share it: clones share the context, module and kernel cache).
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

struct GpuInner {
    ctx: Arc<CudaContext>,
    /// The device's VRAM arena, reserved when the device was opened.
    arena: Arena,
    /// One module per kernel unit: (unit, module), in manifest order.
    modules: Vec<(&'static str, Arc<CudaModule>)>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    info: DeviceInfo,
    /// Per-device state of kernel families (e.g. NTT twiddle tables), created on first use.
    pub(crate) extensions: Mutex<HashMap<&'static str, Arc<dyn std::any::Any + Send + Sync>>>,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

/// The devices opened in this process: one handle (and one arena) per device.
static OPEN: Mutex<Vec<(usize, Weak<GpuInner>)>> = Mutex::new(Vec::new());

impl Gpu {
    /// Opens device `ordinal` with the [`VramBudget::Auto`] budget (what is
    /// free less a margin), or returns the handle already open in this
    /// process, whatever its budget. The bindings read no setting of their
    /// own: a program that takes a budget (`--vram-budget`) resolves it once
    /// and opens with [`Gpu::open_with`] / [`Gpu::first_with`].
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let mut open = OPEN.lock().expect("device registry poisoned");
        open.retain(|(_, w)| w.strong_count() > 0);
        if let Some(inner) = open
            .iter()
            .find(|(o, _)| *o == ordinal)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(Gpu { inner });
        }
        let gpu = Self::open_new(ordinal, VramBudget::Auto)?;
        open.push((ordinal, Arc::downgrade(&gpu.inner)));
        Ok(gpu)
    }

    /// Opens device `ordinal` with an explicit VRAM budget. Fails when the
    /// device is already open in this process with another budget (carve a
    /// smaller arena with [`Arena::sub`] instead).
    pub fn open_with(ordinal: usize, budget: VramBudget) -> Result<Gpu> {
        let mut open = OPEN.lock().expect("device registry poisoned");
        open.retain(|(_, w)| w.strong_count() > 0);
        if let Some(inner) = open
            .iter()
            .find(|(o, _)| *o == ordinal)
            .and_then(|(_, w)| w.upgrade())
        {
            let have = inner.arena.budget();
            if have != budget {
                return Err(Error::BadArguments {
                    kernel: "Gpu::open_with",
                    message: format!(
                        "device {ordinal} is already open in this process with a VRAM budget of {have}, not {budget}"
                    ),
                });
            }
            return Ok(Gpu { inner });
        }
        let gpu = Self::open_new(ordinal, budget)?;
        open.push((ordinal, Arc::downgrade(&gpu.inner)));
        Ok(gpu)
    }

    /// Opens device `ordinal`, loads the kernel fatbins and reserves the arena.
    fn open_new(ordinal: usize, budget: VramBudget) -> Result<Gpu> {
        let count = devices()?.len();
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device {ordinal} asked for, {count} present"
            )));
        }
        let kernels = kernels::load()?;
        let ctx = CudaContext::new(ordinal)
            .cuda("cuDevicePrimaryCtxRetain", || format!("device {ordinal}"))?;
        ffi::disable_event_tracking(&ctx);
        let info = info_of(&ctx)?;
        let mut modules = Vec::with_capacity(kernels.fatbins().len());
        for fatbin in kernels.fatbins() {
            let module = ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(fatbin.bytes.clone()))
                .cuda("cuModuleLoadData", || {
                    format!(
                        "loading the {} KiB fatbin of kernels/{} from {} on {info} (built for: {}; no SASS or PTX for this GPU?)",
                        fatbin.bytes.len() / 1024,
                        fatbin.unit,
                        kernels.dir().display(),
                        kernels.archs()
                    )
                })?;
            modules.push((fatbin.unit, module));
        }
        tracing::debug!(%info, "loaded cuzk kernels");
        let arena = Arena::reserve(&ctx, budget, &info.to_string())?;
        Ok(Gpu {
            inner: Arc::new(GpuInner {
                arena,
                ctx,
                modules,
                functions: Mutex::new(HashMap::new()),
                info,
                extensions: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The first device, or `Ok(None)` when this machine has none (no driver,
    /// no device). Errors are real failures: kernels missing, driver errors.
    pub fn first() -> Result<Option<Gpu>> {
        match devices() {
            Err(Error::NoDevice(why)) => {
                tracing::debug!("no CUDA device: {why}");
                Ok(None)
            }
            Err(e) => Err(e),
            Ok(_) => Gpu::open(0).map(Some),
        }
    }

    /// As [`Gpu::first`], opening the device with an explicit VRAM budget.
    pub fn first_with(budget: VramBudget) -> Result<Option<Gpu>> {
        match devices() {
            Err(Error::NoDevice(why)) => {
                tracing::debug!("no CUDA device: {why}");
                Ok(None)
            }
            Err(e) => Err(e),
            Ok(_) => Gpu::open_with(0, budget).map(Some),
        }
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The device's VRAM arena (reserved when it was opened).
    pub fn arena(&self) -> &Arena {
        &self.inner.arena
    }

    /// The most shared memory one block may opt in to (bytes).
    pub fn max_shared_per_block_optin(&self) -> Result<usize> {
        let v = self
            .inner
            .ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .cuda("cuDeviceGetAttribute", || {
                "max shared memory per block (opt-in)".into()
            })?;
        Ok(v as usize)
    }

    /// A new non-blocking stream (one per worker) allocating from the device's arena.
    pub fn new_stream(&self) -> Result<Stream> {
        self.new_stream_in(&self.inner.arena)
    }

    /// A new stream whose buffers come from `arena` (this device's arena or
    /// one carved from it).
    pub fn new_stream_in(&self, arena: &Arena) -> Result<Stream> {
        let inner = self
            .inner
            .ctx
            .new_stream()
            .cuda("cuStreamCreate", || self.inner.info.to_string())?;
        Ok(Stream {
            gpu: self.clone(),
            inner,
            arena: arena.clone(),
        })
    }

    /// A stream and an arena of `bytes` carved out of the device's arena, for
    /// a worker that must behave as if the card had only that much memory.
    pub fn budgeted_stream(&self, bytes: u64) -> Result<Stream> {
        let carve = self.new_stream()?;
        let arena = self.inner.arena.sub(bytes, &carve)?;
        self.new_stream_in(&arena)
    }

    /// A kernel by name, found in whichever unit's module has it, loaded once
    /// and cached.
    pub(crate) fn function(&self, name: &'static str) -> Result<CudaFunction> {
        // Callers go on to use the function (launch, occupancy query, attribute)
        // from this thread: the context must be current on it. A fresh worker
        // thread has none until its first driver call that binds it.
        self.inner
            .ctx
            .bind_to_thread()
            .cuda("cuCtxSetCurrent", || self.inner.info.to_string())?;
        let mut cache = self.inner.functions.lock().expect("kernel cache poisoned");
        if let Some(f) = cache.get(name) {
            return Ok(f.clone());
        }
        // Kernel names are unique across units; the first module that has
        // the name is the one.
        let mut last = None;
        for (_, module) in &self.inner.modules {
            match module.load_function(name) {
                Ok(f) => {
                    cache.insert(name, f.clone());
                    return Ok(f);
                }
                Err(e) => last = Some(e),
            }
        }
        let units = self.inner.modules.len();
        let left_out = kernels::left_out().join(", ");
        Err(last.expect("kernels are loaded only when some unit is built"))
            .cuda("cuModuleGetFunction", || {
                if left_out.is_empty() {
                    format!("kernel {name} in none of the {units} kernel modules")
                } else {
                    format!("kernel {name} in none of the {units} kernel modules (not loaded: {left_out}; run `cargo xtask kernels`)")
                }
            })
    }

    /// Per-device state of a kernel family, created by `make` on first use.
    pub(crate) fn extension<T: Send + Sync + 'static>(
        &self,
        key: &'static str,
        make: impl FnOnce(&Gpu) -> Result<T>,
    ) -> Result<Arc<T>> {
        let mut map = self.inner.extensions.lock().expect("extensions poisoned");
        if let Some(v) = map.get(key) {
            return Ok(Arc::clone(v)
                .downcast::<T>()
                .expect("one type per extension key"));
        }
        let v = Arc::new(make(self)?);
        map.insert(key, v.clone());
        Ok(v)
    }
}

/// A CUDA stream on one device. Work on one stream runs in order; order work
/// across streams with [`Event`]s. Buffers allocated on a stream come from its
/// arena and return to it in order on that stream: drop a buffer only after
/// work on other streams that uses it has been waited for.
#[derive(Clone)]
pub struct Stream {
    gpu: Gpu,
    inner: Arc<CudaStream>,
    arena: Arena,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.gpu.inner.info.ordinal)
            .finish_non_exhaustive()
    }
}

impl Stream {
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The arena this stream's buffers come from.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    pub(crate) fn cu(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// `len` zeroed elements of device memory: a region of this stream's
    /// arena (no device allocation), zeroed on the stream.
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::BadArguments {
                    kernel: "alloc",
                    message: format!("{len} elements overflow"),
                })?;
        let region = self.arena.region(bytes as u64, self).map_err(|e| match e {
            Error::OutOfMemory(m) => Error::OutOfMemory(format!(
                "{m} (allocating {len} × {})",
                std::any::type_name::<T>()
            )),
            e => e,
        })?;
        arena::zero(&self.inner, region.ptr, bytes.max(1) as u64)?;
        Ok(DeviceBuffer {
            ptr: region.ptr,
            _region: region,
            len,
            _t: PhantomData,
        })
    }

    /// Allocates and uploads `host`.
    pub fn upload_new<T: DeviceRepr>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(host.len())?;
        self.upload(host, &mut buf)?;
        Ok(buf)
    }

    /// Copies `host` into `dst` (same length). From pageable memory the copy
    /// is staged by the driver before this returns; use [`PinnedBuffer`] for
    /// full-rate asynchronous copies.
    pub fn upload<T: DeviceRepr>(&self, host: &[T], dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("upload", host.len(), dst.len)?;
        self.upload_prefix(host, dst)
    }

    /// Copies `host` into the first `host.len()` elements of `dst` and leaves
    /// the rest as it is (e.g. the zeros of a fresh [`Stream::alloc`]), so a
    /// short vector can be padded on the device instead of on the host.
    pub fn upload_prefix<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.upload_at(host, dst, 0)
    }

    /// Copies `host` into `dst[offset..offset + host.len()]`.
    pub fn upload_at<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        if offset
            .checked_add(host.len())
            .is_none_or(|end| end > dst.len)
        {
            return Err(Error::BadArguments {
                kernel: "upload_at",
                message: format!(
                    "{} elements at offset {offset} into a buffer of {}",
                    host.len(),
                    dst.len
                ),
            });
        }
        let bytes = as_bytes(host);
        if bytes.is_empty() {
            return Ok(());
        }
        let at = dst.ptr + (offset * std::mem::size_of::<T>()) as u64;
        #[allow(unsafe_code)]
        // SAFETY: `at..at+bytes` lies inside dst's live region (checked above);
        // `host` is pageable, so the driver stages it before returning.
        unsafe { ffi::copy_htod(&self.inner, at, bytes) }
            .cuda("cuMemcpyHtoDAsync", || format!("{} bytes", bytes.len()))
    }

    /// Copies `src` into `host` (same length) and waits for the copy.
    pub fn download<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        check_len("download", host.len(), src.len)?;
        let bytes = std::mem::size_of_val(host);
        if bytes > 0 {
            let dst = ffi::as_bytes_mut(host);
            #[allow(unsafe_code)]
            // SAFETY: src's region holds `bytes`; we wait for the copy below
            // before `host` can be touched again.
            unsafe { ffi::copy_dtoh(&self.inner, dst, src.ptr) }
                .cuda("cuMemcpyDtoHAsync", || format!("{bytes} bytes"))?;
        }
        self.synchronize()
    }

    /// Downloads into a new vector.
    pub fn download_vec<T: DeviceRepr + Default>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::default(); src.len];
        self.download(src, &mut v)?;
        Ok(v)
    }

    /// Pinned host → device, asynchronous (ordered on this stream): the first
    /// `count` elements of `host` into `dst[offset..]`. The pinned buffer must
    /// not be written again before the copy has run: [`PinnedBuffer::write`]
    /// waits for it.
    pub fn upload_pinned_at<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        self.copy_pinned("upload_pinned_at", host, count, dst, offset)
    }

    /// Pinned staging bytes → device: the first `count` values of type `T`
    /// held in `host` (see [`PinnedBuffer::values_mut`]) into `dst[offset..]`,
    /// asynchronous (ordered on this stream).
    pub fn upload_staged<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<u8>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        self.copy_pinned("upload_staged", host, count, dst, offset)
    }

    /// The first `count` values of type `T` held in pinned `host` (of any
    /// element type) into `dst[offset..]`, asynchronous; both ranges checked.
    fn copy_pinned<U: DeviceRepr, T: DeviceRepr>(
        &self,
        op: &'static str,
        host: &PinnedBuffer<U>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        let bytes = count * std::mem::size_of::<T>();
        let host_bytes = host.len * std::mem::size_of::<U>();
        if bytes > host_bytes || offset.checked_add(count).is_none_or(|e| e > dst.len) {
            return Err(Error::BadArguments {
                kernel: op,
                message: format!(
                    "{count} values ({bytes} bytes) from {host_bytes} pinned bytes at offset {offset} into a buffer of {}",
                    dst.len
                ),
            });
        }
        if bytes == 0 {
            return Ok(());
        }
        let at = dst.ptr + (offset * std::mem::size_of::<T>()) as u64;
        #[allow(unsafe_code)]
        // SAFETY: `bytes` fit both `host` and dst's live region from `offset`
        // (checked above); the pinned memory stays alive (owned by
        // `host`) and `host` records the copy's completion below, so it is not
        // rewritten before the copy ran.
        unsafe { ffi::copy_htod(&self.inner, at, &host.bytes.as_slice()[..bytes]) }
            .cuda("cuMemcpyHtoDAsync", || format!("{bytes} pinned bytes"))?;
        host.mark_used(self)
    }

    /// Pinned host → device, asynchronous (ordered on this stream).
    pub fn upload_pinned<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("upload_pinned", host.len, dst.len)?;
        self.upload_pinned_at(host, host.len, dst, 0)
    }

    /// Device → pinned host, asynchronous (ordered on this stream).
    pub fn download_pinned<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        host: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        check_len("download_pinned", host.len, src.len)?;
        let bytes = host.len * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        host.wait_unused()?;
        #[allow(unsafe_code)]
        // SAFETY: src's region holds `bytes`; host's reads wait for the event
        // recorded below before touching the memory.
        unsafe {
            ffi::copy_dtoh(
                &self.inner,
                &mut host.bytes.as_mut_slice()[..bytes],
                src.ptr,
            )
        }
        .cuda("cuMemcpyDtoHAsync", || format!("{bytes} pinned bytes"))?;
        host.mark_used(self)
    }

    /// Device → device copy of equal-length buffers.
    pub fn copy<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("copy", src.len, dst.len)?;
        self.copy_range(src, 0, dst, 0, src.len)
    }

    /// Copies `src[src_at..src_at + count]` to `dst[dst_at..]`.
    pub fn copy_range<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        src_at: usize,
        dst: &mut DeviceBuffer<T>,
        dst_at: usize,
        count: usize,
    ) -> Result<()> {
        let fits = |at: usize, len: usize| at.checked_add(count).is_some_and(|e| e <= len);
        if !fits(src_at, src.len) || !fits(dst_at, dst.len) {
            return Err(Error::BadArguments {
                kernel: "copy_range",
                message: format!(
                    "{count} elements from {src_at} of {} to {dst_at} of {}",
                    src.len, dst.len
                ),
            });
        }
        let size = std::mem::size_of::<T>();
        let bytes = count * size;
        if bytes == 0 {
            return Ok(());
        }
        #[allow(unsafe_code)]
        // SAFETY: both ranges lie inside live regions (checked above).
        unsafe {
            ffi::copy_dtod(
                &self.inner,
                dst.ptr + (dst_at * size) as u64,
                src.ptr + (src_at * size) as u64,
                bytes,
            )
        }
        .cuda("cuMemcpyDtoDAsync", || format!("{bytes} bytes"))
    }

    /// Sets `dst[at..at + count]` to zero bytes.
    pub fn zero_range<T: DeviceRepr>(
        &self,
        dst: &mut DeviceBuffer<T>,
        at: usize,
        count: usize,
    ) -> Result<()> {
        if at.checked_add(count).is_none_or(|e| e > dst.len) {
            return Err(Error::BadArguments {
                kernel: "zero_range",
                message: format!("{count} elements from {at} of {}", dst.len),
            });
        }
        let size = std::mem::size_of::<T>();
        if count == 0 {
            return Ok(());
        }
        arena::zero(
            &self.inner,
            dst.ptr + (at * size) as u64,
            (count * size) as u64,
        )
    }

    /// Waits until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .cuda("cuStreamSynchronize", || self.gpu.inner.info.to_string())
    }

    /// Records a timing-capable event at this point of the stream.
    pub fn record(&self) -> Result<Event> {
        let e = self
            .inner
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .cuda("cuEventRecord", || "timing event".into())?;
        Ok(Event { inner: e })
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .cuda("cuStreamWaitEvent", || "cross-stream order".into())
    }

    /// Launches `kernel` with `args` (crate-internal: launch wrappers only).
    ///
    /// # Safety
    /// As [`KernelArgs::launch`]: the arguments must match the kernel.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        args: KernelArgs,
        sizes: impl FnOnce() -> String,
    ) -> Result<()> {
        let f = self.gpu.function(kernel)?;
        // SAFETY: forwarded to the caller.
        unsafe { args.launch(&self.inner, &f, cfg) }.cuda("cuLaunchKernel", || {
            format!(
                "kernel {kernel}, grid {:?} x block {:?}, {}",
                cfg.grid_dim,
                cfg.block_dim,
                sizes()
            )
        })
    }
}

fn check_len(op: &'static str, a: usize, b: usize) -> Result<()> {
    crate::error::ensure(op, a == b, || {
        format!("length mismatch: {a} vs {b} elements")
    })
}

/// A point in a stream's work, for ordering and timing.
#[derive(Debug)]
pub struct Event {
    inner: CudaEvent,
}

impl Event {
    /// Milliseconds between `self` and a later event `end` (both completed).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        end.inner
            .synchronize()
            .cuda("cuEventSynchronize", || "timing".into())?;
        self.inner
            .elapsed_ms(&end.inner)
            .cuda("cuEventElapsedTime", || "timing".into())
    }

    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .cuda("cuEventSynchronize", || "event".into())
    }
}

/// `len` values of `T` in device memory: a handle, never a Rust reference to
/// device memory. A region of an arena, returned (in order on its stream)
/// when dropped.
pub struct DeviceBuffer<T: DeviceRepr> {
    /// The arena region (released, stream-ordered, on drop).
    _region: Region,
    ptr: sys::CUdeviceptr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}] @ {:#x}",
            std::any::type_name::<T>(),
            self.len,
            self.ptr
        )
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address, for kernel arguments (crate-internal).
    pub(crate) fn device_ptr(&self) -> u64 {
        self.ptr
    }
}

/// Page-locked host memory for full-rate asynchronous copies. Remembers
/// its last asynchronous copy, and waits for it before the host touches the
/// memory again.
pub struct PinnedBuffer<T: DeviceRepr> {
    bytes: ffi::PinnedBytes,
    len: usize,
    last_use: Mutex<Option<CudaEvent>>,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PinnedBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// Allocates `len` zeroed elements of pinned host memory on `gpu`'s
    /// context (a slow, host-side call: allocate staging once, at start).
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = len * std::mem::size_of::<T>();
        let pinned = ffi::PinnedBytes::new(&gpu.inner.ctx, bytes)
            .cuda("cuMemHostAlloc", || format!("{bytes} bytes"))?;
        Ok(PinnedBuffer {
            bytes: pinned,
            len,
            last_use: Mutex::new(None),
            _t: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn mark_used(&self, stream: &Stream) -> Result<()> {
        let e = stream
            .inner
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .cuda("cuEventRecord", || "pinned buffer use".into())?;
        *self.last_use.lock().expect("pinned lock poisoned") = Some(e);
        Ok(())
    }

    /// Waits for the last asynchronous copy that used this buffer.
    pub fn wait_unused(&self) -> Result<()> {
        if let Some(e) = self.last_use.lock().expect("pinned lock poisoned").take() {
            e.synchronize()
                .cuda("cuEventSynchronize", || "pinned buffer".into())?;
        }
        Ok(())
    }

    /// The memory as values, for filling it in place (after pending copies).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait_unused()?;
        let len = self.len;
        let bytes = self.bytes.as_mut_slice();
        Ok(&mut ffi::values_mut::<T>(bytes)[..len])
    }

    /// Fills the buffer from `values` (same length). Waits for pending copies
    /// involving this buffer first.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        check_len("PinnedBuffer::write", values.len(), self.len)?;
        self.as_mut_slice()?.copy_from_slice(values);
        Ok(())
    }

    /// Copies the buffer into `out` (same length), after pending copies finish.
    pub fn read(&self, out: &mut [T]) -> Result<()> {
        check_len("PinnedBuffer::read", out.len(), self.len)?;
        self.wait_unused()?;
        let dst = ffi::as_bytes_mut(out);
        let n = dst.len();
        dst.copy_from_slice(&self.bytes.as_slice()[..n]);
        Ok(())
    }
}

impl PinnedBuffer<u8> {
    /// Staging bytes viewed as values of `T` (as many whole values as fit),
    /// for filling in place; waits for the buffer's last copy first.
    pub fn values_mut<T: DeviceRepr>(&mut self) -> Result<&mut [T]> {
        self.wait_unused()?;
        Ok(ffi::values_mut::<T>(self.bytes.as_mut_slice()))
    }
}

impl<T: DeviceRepr> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let _ = self.wait_unused();
    }
}

/// A 1-D launch configuration: `blocks` × `threads`, no dynamic shared memory.
pub(crate) fn grid(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}
