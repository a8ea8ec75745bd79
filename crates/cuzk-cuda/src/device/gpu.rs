//! [`Gpu`]: one CUDA device opened once per process, with its kernel
//! modules (each declared kernel loaded and checked once), arena and per-device extensions.

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
    /// Every declared kernel of the loaded units, by name (checked against
    /// its declaration when the device was opened).
    pub(crate) functions: HashMap<&'static str, CudaFunction>,
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
        let gpu = Self::open_new(ordinal, VramBudget::Auto, 0)?;
        open.push((ordinal, Arc::downgrade(&gpu.inner)));
        Ok(gpu)
    }

    /// Opens device `ordinal` with an explicit VRAM budget. Fails when the
    /// device is already open in this process with another budget (carve a
    /// smaller arena with [`Arena::sub`] instead).
    pub fn open_with(ordinal: usize, budget: VramBudget) -> Result<Gpu> {
        Self::open_pinning(ordinal, budget, 0)
    }

    /// [`Gpu::open_with`], a budget of bytes also leaving room for the page
    /// tables that will map `pinned_host` bytes of host memory the caller
    /// pins later ([`crate::arena::host_mappings`]: 1/512 of them), so that
    /// nvidia-smi stays within the budget once they are pinned. The budget
    /// of a device already open is checked; its arena stays as it was.
    pub fn open_pinning(ordinal: usize, budget: VramBudget, pinned_host: u64) -> Result<Gpu> {
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
        let gpu = Self::open_new(ordinal, budget, pinned_host)?;
        open.push((ordinal, Arc::downgrade(&gpu.inner)));
        Ok(gpu)
    }

    /// Opens device `ordinal`, loads the kernel fatbins and reserves the
    /// arena (room left for the mappings of `pinned_host` bytes).
    fn open_new(ordinal: usize, budget: VramBudget, pinned_host: u64) -> Result<Gpu> {
        let count = devices()?.len();
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device {ordinal} asked for, {count} present"
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .cuda("cuDevicePrimaryCtxRetain", || format!("device {ordinal}"))?;
        ffi::disable_event_tracking(&ctx);
        let info = info_of(&ctx)?;
        // Before the kernels: a card or driver that could never run them is
        // named as such, whatever the kernel folder holds.
        let driver = ffi::driver_version().cuda("cuDriverGetVersion", || info.to_string())?;
        supported(&info, driver).map_err(Error::Unsupported)?;
        let kernels = kernels::load()?;
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
        let functions = declared_functions(&modules, &info)?;
        tracing::debug!(%info, kernels = functions.len(), "loaded cuzk kernels");
        let later = crate::arena::driver_later(&ctx, functions.values())?;
        let mappings = crate::arena::host_mappings(pinned_host);
        let arena = Arena::reserve(&ctx, budget, (later, mappings), &info.to_string())?;
        Ok(Gpu {
            inner: Arc::new(GpuInner {
                arena,
                ctx,
                functions,
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
        Self::first_pinning(budget, 0)
    }

    /// As [`Gpu::first_with`], leaving room for the mappings of
    /// `pinned_host` bytes of host memory ([`Gpu::open_pinning`]).
    pub fn first_pinning(budget: VramBudget, pinned_host: u64) -> Result<Option<Gpu>> {
        match devices() {
            Err(Error::NoDevice(why)) => {
                tracing::debug!("no CUDA device: {why}");
                Ok(None)
            }
            Err(e) => Err(e),
            Ok(_) => Gpu::open_pinning(0, budget, pinned_host).map(Some),
        }
    }

    /// The device's name, capability and memory, as read when it was opened.
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

    /// A declared kernel's function (loaded and checked when the device was
    /// opened), with the device's context made current on this thread:
    /// callers go on to use it (launch, occupancy query, attribute), and a
    /// fresh worker thread has no current context until a call binds one.
    pub(crate) fn function<A>(&self, kernel: Kernel<A>) -> Result<CudaFunction> {
        self.inner
            .ctx
            .bind_to_thread()
            .cuda("cuCtxSetCurrent", || self.inner.info.to_string())?;
        match self.inner.functions.get(kernel.name()) {
            Some(f) => Ok(f.clone()),
            // Only a test or benchmark unit can be left out (production
            // units are required when the kernels load): missing, or stale.
            None => {
                let (unit, path) = (kernel.unit(), kernels::fatbin_path(kernel.unit()));
                Err(Error::Kernels(if path.is_file() {
                    KernelsProblem::Stale {
                        unit,
                        path,
                        why: format!("was left out (stale), so {kernel} is not loaded"),
                    }
                } else {
                    KernelsProblem::Missing { unit, path }
                }))
            }
        }
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

/// The oldest compute capability the kernels are built for: `cargo xtask
/// kernels` makes SASS for sm_80, sm_86, sm_89, sm_90 and sm_120 and PTX for
/// sm_80, none of which a Turing (sm_75) or older card can run.
pub const MIN_COMPUTE_CAPABILITY: (i32, i32) = (8, 0);

/// The CUDA version the kernels are compiled with (xtask's pinned nvcc,
/// 13.0), as `cuDriverGetVersion` writes it: a driver must support it,
/// which the NVIDIA driver does from R580 on.
pub const MIN_DRIVER_CUDA: i32 = 13000;

/// Whether a device and the driver (`cuDriverGetVersion`'s number) can run
/// this build's kernels; if not, why, by name, and what to do instead.
pub fn supported(info: &DeviceInfo, driver: i32) -> std::result::Result<(), String> {
    let (major, minor) = info.compute_capability;
    if (major, minor) < MIN_COMPUTE_CAPABILITY {
        let family = match major {
            7 if minor >= 5 => "a Turing card (T4, RTX 20xx, Quadro RTX)",
            7 => "a Volta card",
            _ => "older than Ampere",
        };
        return Err(format!(
            "{info} is {family}: cuzk's kernels are built for sm_80 and newer \
             (A100, RTX 30xx and later), and sm_{major}{minor} cannot run them; prove on \
             the CPU (backend = \"cpu\") or leave this GPU out (proving.gpus)"
        ));
    }
    if driver < MIN_DRIVER_CUDA {
        return Err(format!(
            "{info}: the NVIDIA driver supports CUDA {}.{}, and cuzk's kernels are built with \
             CUDA {}.{}: install driver R580 or newer",
            driver / 1000,
            driver % 1000 / 10,
            MIN_DRIVER_CUDA / 1000,
            MIN_DRIVER_CUDA % 1000 / 10
        ));
    }
    Ok(())
}

/// Loads every declared kernel (`src/decl.rs`) of the units in `modules`
/// and checks it against its declaration: the kernel must be in its unit,
/// and where the driver reports parameter info (CUDA 12.4 and later) its
/// parameters' count and sizes must be the declared ones. Kernels of a unit
/// that is not loaded (a test or benchmark unit left out) are skipped.
fn declared_functions(
    modules: &[(&'static str, Arc<CudaModule>)],
    info: &DeviceInfo,
) -> Result<HashMap<&'static str, CudaFunction>> {
    let version = ffi::driver_version().cuda("cuDriverGetVersion", || info.to_string())?;
    let param_info = version >= 12040;
    if !param_info {
        tracing::warn!(
            version,
            "the CUDA driver is older than 12.4: kernel parameters not checked against their declarations"
        );
    }
    let mut functions = HashMap::with_capacity(crate::decl::DECLARED.len());
    for d in crate::decl::DECLARED {
        let Some((_, module)) = modules.iter().find(|(unit, _)| *unit == d.unit) else {
            continue;
        };
        let f = module.load_function(d.name).map_err(|e| {
            Error::Kernels(KernelsProblem::Declaration(format!(
                "kernel {} is not in kernels/{} ({e})",
                d.name, d.unit
            )))
        })?;
        if param_info {
            let sizes =
                ffi::param_sizes(&f).cuda("cuFuncGetParamInfo", || format!("kernel {}", d.name))?;
            crate::launch::compare_params(d, &sizes)
                .map_err(|why| Error::Kernels(KernelsProblem::Declaration(why)))?;
        }
        functions.insert(d.name, f);
    }
    Ok(functions)
}

#[cfg(test)]
mod support_tests {
    use super::*;

    fn card(name: &str, cc: (i32, i32)) -> DeviceInfo {
        DeviceInfo {
            ordinal: 1,
            name: name.into(),
            compute_capability: cc,
            total_memory: 16 << 30,
            multiprocessors: 40,
        }
    }

    #[test]
    fn turing_and_old_drivers_are_refused_by_name() {
        assert_eq!(supported(&card("NVIDIA H100", (9, 0)), 13000), Ok(()));
        assert_eq!(supported(&card("NVIDIA A100", (8, 0)), 13010), Ok(()));
        let t4 = supported(&card("Tesla T4", (7, 5)), 13000).unwrap_err();
        assert!(
            t4.contains("Tesla T4") && t4.contains("Turing") && t4.contains("sm_75"),
            "{t4}"
        );
        assert!(t4.contains("backend = \"cpu\""), "{t4}");
        let v100 = supported(&card("Tesla V100", (7, 0)), 13000).unwrap_err();
        assert!(v100.contains("Volta"), "{v100}");
        let old = supported(&card("NVIDIA H100", (9, 0)), 12080).unwrap_err();
        assert!(
            old.contains("CUDA 12.8") && old.contains("CUDA 13.0") && old.contains("R580"),
            "{old}"
        );
    }
}
