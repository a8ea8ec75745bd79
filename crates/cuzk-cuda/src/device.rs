//! Device discovery, the per-device handle with its loaded kernels, streams,
//! events, and typed device and pinned-host buffers.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    LaunchConfig, PinnedHostSlice,
};
use cuzk_field::limbs::{as_bytes, DeviceRepr};

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

impl Gpu {
    /// Opens device `ordinal` and loads the embedded fatbin into it.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let count = devices()?.len();
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device {ordinal} asked for, {count} present"
            )));
        }
        if !kernels::available() {
            return Err(Error::KernelsNotBuilt);
        }
        let ctx = CudaContext::new(ordinal)
            .cuda("cuDevicePrimaryCtxRetain", || format!("device {ordinal}"))?;
        ffi::disable_event_tracking(&ctx);
        let info = info_of(&ctx)?;
        let mut modules = Vec::with_capacity(kernels::fatbins().len());
        for &(unit, fatbin) in kernels::fatbins() {
            let module = ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(fatbin.to_vec()))
                .cuda("cuModuleLoadData", || {
                    format!(
                        "loading the {} KiB fatbin of kernels/{unit} on {info} (built for: {}; no SASS or PTX for this GPU?)",
                        fatbin.len() / 1024,
                        kernels::archs()
                    )
                })?;
            modules.push((unit, module));
        }
        tracing::debug!(%info, "loaded cuzk kernels");
        Ok(Gpu {
            inner: Arc::new(GpuInner {
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

    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// Free and total device memory in bytes. Device-global: for start-up
    /// sizing, not for the steady state (DESIGN.md §4).
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.inner
            .ctx
            .mem_get_info()
            .cuda("cuMemGetInfo", || self.inner.info.to_string())
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

    /// A new non-blocking stream (one per worker).
    pub fn new_stream(&self) -> Result<Stream> {
        let inner = self
            .inner
            .ctx
            .new_stream()
            .cuda("cuStreamCreate", || self.inner.info.to_string())?;
        Ok(Stream {
            gpu: self.clone(),
            inner,
        })
    }

    /// A kernel by name, found in whichever unit's module has it, loaded once
    /// and cached.
    pub(crate) fn function(&self, name: &'static str) -> Result<CudaFunction> {
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
        Err(last.expect("kernels are loaded only when some unit is built"))
            .cuda("cuModuleGetFunction", || {
                format!("kernel {name} in none of the {units} kernel modules (fatbins older than this crate?)")
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
/// across streams with [`Event`]s. Buffers allocated on a stream are freed in
/// order on that stream: drop a buffer only after work on other streams that
/// uses it has been waited for.
#[derive(Clone)]
pub struct Stream {
    gpu: Gpu,
    inner: Arc<CudaStream>,
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

    /// Allocates `len` elements of device memory (contents unspecified until
    /// written: the first use should be an upload or a kernel that writes all).
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::BadArguments {
                    kernel: "alloc",
                    message: format!("{len} elements overflow"),
                })?;
        let slice = self
            .inner
            .alloc_zeros::<u8>(bytes.max(1))
            .cuda("cuMemAllocAsync", || format!("{bytes} bytes"))?;
        let ptr = slice.device_ptr(&self.inner).0;
        Ok(DeviceBuffer {
            slice,
            ptr,
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
        self.inner
            .memcpy_htod(as_bytes(host), &mut dst.slice)
            .cuda("cuMemcpyHtoDAsync", || {
                format!("{} bytes", std::mem::size_of_val(host))
            })
    }

    /// Copies `host` into the first `host.len()` elements of `dst` and leaves
    /// the rest as it is (e.g. the zeros of a fresh [`Stream::alloc`]), so a
    /// short vector can be padded on the device instead of on the host.
    pub fn upload_prefix<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if host.len() > dst.len {
            return Err(Error::BadArguments {
                kernel: "upload_prefix",
                message: format!("{} elements into a buffer of {}", host.len(), dst.len),
            });
        }
        let bytes = std::mem::size_of_val(host);
        if bytes == 0 {
            return Ok(());
        }
        self.inner
            .memcpy_htod(as_bytes(host), &mut dst.slice.slice_mut(..bytes))
            .cuda("cuMemcpyHtoDAsync", || {
                format!("{bytes} bytes into a prefix")
            })
    }

    /// Copies `src` into `host` (same length) and waits for the copy.
    pub fn download<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        check_len("download", host.len(), src.len)?;
        let bytes = std::mem::size_of_val(host);
        let dst = ffi::as_bytes_mut(host);
        self.inner
            .memcpy_dtoh(&src.slice.slice(..bytes), dst)
            .cuda("cuMemcpyDtoHAsync", || format!("{bytes} bytes"))?;
        self.synchronize()
    }

    /// Downloads into a new vector.
    pub fn download_vec<T: DeviceRepr + Default>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::default(); src.len];
        self.download(src, &mut v)?;
        Ok(v)
    }

    /// Pinned host → device, asynchronous (ordered on this stream).
    pub fn upload_pinned<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("upload_pinned", host.len, dst.len)?;
        let bytes = host.len * std::mem::size_of::<T>();
        let mut view = dst.slice.slice_mut(..bytes);
        self.inner
            .memcpy_htod(&host.slice, &mut view)
            .cuda("cuMemcpyHtoDAsync", || format!("{bytes} pinned bytes"))
    }

    /// Device → pinned host, asynchronous (ordered on this stream).
    pub fn download_pinned<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        host: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        check_len("download_pinned", host.len, src.len)?;
        let bytes = host.len * std::mem::size_of::<T>();
        self.inner
            .memcpy_dtoh(&src.slice.slice(..bytes), &mut host.slice)
            .cuda("cuMemcpyDtoHAsync", || format!("{bytes} pinned bytes"))
    }

    /// Device → device copy of equal-length buffers.
    pub fn copy<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("copy", src.len, dst.len)?;
        let bytes = src.len * std::mem::size_of::<T>();
        let mut view = dst.slice.slice_mut(..bytes);
        self.inner
            .memcpy_dtod(&src.slice.slice(..bytes), &mut view)
            .cuda("cuMemcpyDtoDAsync", || format!("{bytes} bytes"))
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
/// device memory. Freed (in order on its stream) when dropped.
pub struct DeviceBuffer<T: DeviceRepr> {
    slice: CudaSlice<u8>,
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

/// Page-locked host memory for full-rate asynchronous copies.
pub struct PinnedBuffer<T: DeviceRepr> {
    slice: PinnedHostSlice<u8>,
    len: usize,
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
    /// Allocates `len` zeroed elements of pinned host memory on `gpu`'s context.
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = len * std::mem::size_of::<T>();
        let slice = ffi::alloc_pinned_bytes(&gpu.inner.ctx, bytes.max(1))
            .cuda("cuMemHostAlloc", || format!("{bytes} bytes"))?;
        Ok(PinnedBuffer {
            slice,
            len,
            _t: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills the buffer from `values` (same length). Waits for pending copies
    /// involving this buffer first.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        check_len("PinnedBuffer::write", values.len(), self.len)?;
        let bytes = as_bytes(values);
        let dst = self
            .slice
            .as_mut_slice()
            .cuda("cuEventSynchronize", || "pinned buffer".into())?;
        dst[..bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Copies the buffer into `out` (same length), after pending copies finish.
    pub fn read(&self, out: &mut [T]) -> Result<()> {
        check_len("PinnedBuffer::read", out.len(), self.len)?;
        let src = self
            .slice
            .as_slice()
            .cuda("cuEventSynchronize", || "pinned buffer".into())?;
        let dst = ffi::as_bytes_mut(out);
        let n = dst.len();
        dst.copy_from_slice(&src[..n]);
        Ok(())
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
