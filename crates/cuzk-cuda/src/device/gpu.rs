//! [`Gpu`]: one CUDA device opened once per process, with its kernel
//! modules, kernel cache, arena and per-device extensions.

use super::*;

/// One CUDA device with cuzk's kernels loaded (once per handle; clone the
/// handle to share it: clones share the context, module and kernel cache).
#[derive(Clone)]
pub struct Gpu {
    pub(crate) inner: Arc<GpuInner>,
}

pub(crate) struct GpuInner {
    pub(crate) ctx: Arc<CudaContext>,
    /// The device's VRAM arena, reserved when the device was opened.
    pub(crate) arena: Arena,
    /// One module per kernel unit: (unit, module), in manifest order.
    pub(crate) modules: Vec<(&'static str, Arc<CudaModule>)>,
    pub(crate) functions: Mutex<HashMap<&'static str, CudaFunction>>,
    pub(crate) info: DeviceInfo,
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
pub(crate) static OPEN: Mutex<Vec<(usize, Weak<GpuInner>)>> = Mutex::new(Vec::new());

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

    /// A new non-blocking stream of the device's highest priority, its
    /// buffers from `arena`: for copies that should not queue behind another
    /// stream's kernels (`copy_overlap` measures whether they do).
    pub fn new_priority_stream_in(&self, arena: &Arena) -> Result<Stream> {
        self.inner
            .ctx
            .bind_to_thread()
            .cuda("cuCtxSetCurrent", || self.inner.info.to_string())?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
            .cuda("cuCtxGetStreamPriorityRange", || {
                self.inner.info.to_string()
            })?;
        let inner = self
            .inner
            .ctx
            .new_stream_with_priority(greatest)
            .cuda("cuStreamCreateWithPriority", || self.inner.info.to_string())?;
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
