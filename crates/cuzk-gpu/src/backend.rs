//! [`CudaBackend`]: the GPU implementation of the prover's `Backend`. One
//! backend is one worker on one device; this file opens it (alone on the
//! device's arena, under a smaller budget, or as one of several workers
//! sharing an arena and a resident key) and plans each partition before any
//! kernel runs. The proving itself is `worker.rs` and `streamed.rs`.

use std::sync::Arc;

use cuzk_cuda::msm::BatchSum;
use cuzk_cuda::staging::Staging;
use cuzk_cuda::{Arena, Gpu, VramBudget};
use cuzk_groth16::prover::{Backend, MsmSums, ProveError, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;
use parking_lot::Mutex;

use crate::error::{gpu_err, GpuError};
use crate::matrices::{witness_shape, MatrixSlot};
use crate::plan::{
    CudaFootprints, HPoly, MatrixLayout, PlanError, PlanOptions, Shape, SrsMode, VramPlan,
};
use crate::srs::SrsSlot;
use crate::worker::Worker;
use crate::{GpuConfig, ZUpload, ZUploadReport, FILL_THREADS, STAGE_BYTES};

/// The GPU backend of the prover: one worker (one compute stream, one copy
/// stream, its own MSM scratch and pinned staging) on one device, with every
/// buffer taken from a VRAM arena.
pub struct CudaBackend {
    name: &'static str,
    inner: Mutex<Worker>,
    last_plan: Mutex<Option<VramPlan>>,
    forced: Mutex<Option<(SrsMode, HPoly, Option<MatrixLayout>)>>,
    /// Whether plans may keep H shifted (see [`CudaBackend::set_shifted_h`]).
    shifted_h: std::sync::atomic::AtomicBool,
    /// Whether plans may give a streamed H kept buckets (see
    /// [`CudaBackend::set_kept_h`]).
    kept_h: std::sync::atomic::AtomicBool,
    /// Whether plans may fill a streamed key's first ring buffers during
    /// the H polynomial (see [`CudaBackend::set_ring_ahead`]).
    ring_ahead: std::sync::atomic::AtomicBool,
    /// Whether batches may park their members (see
    /// [`CudaBackend::set_parked_batches`]).
    parked_batches: std::sync::atomic::AtomicBool,
    /// Whether a batch parks its members even where held ones fit, at the
    /// plan's own chunk (see [`CudaBackend::force_parked`]).
    force_parked: std::sync::atomic::AtomicBool,
    /// The device's pinned buffers for parked H coefficients (its workers'
    /// `Worker::parked`), reachable without the worker's lock.
    parked_pool: crate::streamed::ParkedPool,
    /// Whether a thread is pinning the pool's buffers ahead (one per device).
    warming: Arc<std::sync::atomic::AtomicBool>,
    /// The most host memory the pool may pin ([`GpuConfig::parked_pins`]).
    parked_pins: u64,
    /// How many partitions the last batch call proved together.
    last_batch: std::sync::atomic::AtomicUsize,
    /// The device, its keys and its arena's size, outside the worker's lock
    /// (for [`Backend::prepare_key`], which must not wait for a partition).
    gpu: Gpu,
    keys: SrsSlot,
    capacity: u64,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// A worker on `gpu`, using the device's whole arena.
    pub fn new(gpu: Gpu) -> Result<Self, cuzk_cuda::Error> {
        let arena = gpu.arena().clone();
        Self::in_arena(gpu, arena, SrsSlot::default(), MatrixSlot::default())
    }

    /// A worker that behaves as if the device had `budget` of memory: with
    /// `Bytes(b)` smaller than the device's arena, an arena of `b` bytes is
    /// carved out of it (no device allocation); otherwise the device's arena.
    pub fn with_budget(gpu: Gpu, budget: VramBudget) -> Result<Self, cuzk_cuda::Error> {
        let arena = match budget {
            VramBudget::Bytes(b) if b < gpu.arena().capacity() => {
                let s = gpu.new_stream()?;
                gpu.arena().sub(b, &s)?
            }
            _ => gpu.arena().clone(),
        };
        Self::in_arena(gpu, arena, SrsSlot::default(), MatrixSlot::default())
    }

    /// `config.workers` workers on one device sharing an arena (the
    /// device's, or one of `config.budget` carved from it), its resident
    /// keys and matrices, each planning with `config`'s settings: the
    /// scheduler's GPU workers ([`GpuDevice::open`](crate::GpuDevice::open)
    /// makes them with their admission). Each gives its scratch back after
    /// every partition, so that
    /// [`VramAdmission`](crate::admission::VramAdmission) can count memory
    /// per running partition.
    pub fn workers(gpu: &Gpu, config: &GpuConfig) -> Result<Vec<Self>, cuzk_cuda::Error> {
        let arena = match config.budget {
            VramBudget::Bytes(b) if b < gpu.arena().capacity() => {
                let s = gpu.new_stream()?;
                gpu.arena().sub(b, &s)?
            }
            _ => gpu.arena().clone(),
        };
        let slot = SrsSlot::shared();
        let matrices = MatrixSlot::default();
        let parked = crate::streamed::ParkedPool::default();
        let warming = Arc::<std::sync::atomic::AtomicBool>::default();
        let parked_pins = config.parked_pins();
        (0..config.workers.max(1))
            .map(|_| {
                let mut b =
                    Self::in_arena(gpu.clone(), arena.clone(), slot.clone(), matrices.clone())?;
                b.inner.lock().parked = parked.clone();
                b.parked_pool = parked.clone();
                b.warming = Arc::clone(&warming);
                b.parked_pins = parked_pins;
                b.inner.lock().release_scratch = true;
                b.inner.lock().z_upload = config.z_upload;
                b.set_shifted_h(config.shifted_h);
                b.set_kept_h(config.kept_h);
                b.set_ring_ahead(config.ring_ahead);
                b.set_parked_batches(config.parked_batches);
                Ok(b)
            })
            .collect()
    }

    fn in_arena(
        gpu: Gpu,
        arena: Arena,
        srs: SrsSlot,
        matrices: MatrixSlot,
    ) -> Result<Self, cuzk_cuda::Error> {
        let stream = gpu.new_stream_in(&arena)?;
        // The witness upload's stream (an ordinary one: top priority measured
        // no different, BENCHMARKS.md issue 17, copy_overlap).
        let copy = gpu.new_stream_in(&arena)?;
        let ordinal = gpu.info().ordinal;
        let name: &'static str = Box::leak(format!("cuda:{ordinal}").into_boxed_str());
        let (pin_gpu, pin_keys, capacity) = (gpu.clone(), srs.clone(), arena.capacity());
        let parked_pool = crate::streamed::ParkedPool::default();
        let fill = rayon::ThreadPoolBuilder::new()
            .num_threads(FILL_THREADS)
            .thread_name(move |i| format!("cuzk-cuda{ordinal}-fill{i}"))
            .build()
            .map_err(|e| {
                tracing::warn!(
                    "GPU {ordinal}: no staging-fill threads ({e}); the global rayon pool fills"
                )
            })
            .ok();
        Ok(CudaBackend {
            name,
            inner: Mutex::new(Worker {
                staging: Staging::new(&gpu, STAGE_BYTES, fill)?,
                pin: None,
                sum_g1: BatchSum::new(&stream)?,
                sum_g2: BatchSum::new(&stream)?,
                scratch: None,
                release_scratch: false,
                z_upload: ZUpload::default(),
                last_z: None,
                last_key_bytes: 0,
                parked: parked_pool.clone(),
                last_parked: (0, 0),
                last_moved: 0,
                gpu,
                arena,
                stream,
                copy,
                srs,
                matrices,
            }),
            last_plan: Mutex::new(None),
            forced: Mutex::new(None),
            shifted_h: std::sync::atomic::AtomicBool::new(false),
            kept_h: std::sync::atomic::AtomicBool::new(true),
            ring_ahead: std::sync::atomic::AtomicBool::new(true),
            parked_batches: std::sync::atomic::AtomicBool::new(true),
            force_parked: std::sync::atomic::AtomicBool::new(false),
            parked_pool,
            warming: Default::default(),
            parked_pins: GpuConfig::default().parked_pins(),
            last_batch: std::sync::atomic::AtomicUsize::new(1),
            gpu: pin_gpu,
            keys: pin_keys,
            capacity,
        })
    }

    /// The keys resident on this worker's device (shared by the workers of
    /// [`CudaBackend::workers`]).
    pub fn resident_keys(&self) -> SrsSlot {
        self.inner.lock().srs.clone()
    }

    /// The pre-compiled circuit's matrices resident on this worker's device
    /// (shared by the workers of [`CudaBackend::workers`]).
    pub fn resident_matrices(&self) -> MatrixSlot {
        self.inner.lock().matrices.clone()
    }

    /// Runs every partition in `mode` instead of the planner's choice (when
    /// it fits the budget): for tests and benchmarks of streaming on a card
    /// where the key would be resident. `None` restores the planner.
    pub fn force_mode(&self, mode: Option<SrsMode>) {
        *self.forced.lock() = mode.map(|m| (m, HPoly::Full, None));
    }

    /// [`CudaBackend::force_mode`] with the H polynomial's layout forced too
    /// (the lean one on a card that would hold a, b, c at once).
    pub fn force_layout(&self, layout: Option<(SrsMode, HPoly)>) {
        *self.forced.lock() = layout.map(|(m, h)| (m, h, None));
    }

    /// [`CudaBackend::force_layout`] with the matrices' layout forced too,
    /// for a witness whose a, b, c the device evaluates (a streamed key
    /// beside resident matrices, a resident key beside streamed ones).
    pub fn force_layout_with(&self, layout: Option<(SrsMode, HPoly, MatrixLayout)>) {
        *self.forced.lock() = layout.map(|(m, h, x)| (m, h, Some(x)));
    }

    /// How deferred witnesses' z goes up from now on (plain unless the
    /// [`GpuConfig`] said otherwise).
    pub fn set_z_upload(&self, mode: ZUpload) {
        self.inner.lock().z_upload = mode;
    }

    /// What the last deferred witness's z upload moved.
    pub fn last_z_upload(&self) -> Option<ZUploadReport> {
        self.inner.lock().last_z
    }

    /// The backend on the first CUDA device; `Ok(None)` when there is none.
    pub fn first() -> Result<Option<Self>, cuzk_cuda::Error> {
        match Gpu::first()? {
            None => Ok(None),
            Some(gpu) => Self::new(gpu).map(Some),
        }
    }

    /// The device's name, for reports.
    pub fn device_name(&self) -> String {
        self.inner.lock().gpu.info().name.clone()
    }

    /// Bytes of the arena this worker allocates from.
    pub fn budget_bytes(&self) -> u64 {
        self.inner.lock().arena.capacity()
    }

    /// The plan a partition of `shape` would run under, or why none fits.
    pub fn plan(&self, shape: Shape) -> Result<VramPlan, PlanError> {
        VramPlan::new_with(shape, self.budget_bytes(), &CudaFootprints, self.options())
    }

    /// Whether this worker's plans may keep H shifted (`VramPlan::h_shift`;
    /// off unless its [`GpuConfig`] says so). A worker under
    /// `VramAdmission` runs the plan the admission made (it travels on the
    /// ticket), so this matters for a worker alone on its arena (tests,
    /// benchmarks); [`GpuDevice::open`](crate::GpuDevice::open) gives both the
    /// same setting.
    pub fn set_shifted_h(&self, on: bool) {
        self.shifted_h
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this worker's plans may give a streamed H kept buckets
    /// (`VramPlan::h_kept`; on unless its [`GpuConfig`] says otherwise,
    /// off only to measure against). As with
    /// [`CudaBackend::set_shifted_h`], a worker under `VramAdmission` runs
    /// the admission's plan, made with the same setting.
    pub fn set_kept_h(&self, on: bool) {
        self.kept_h.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this worker's plans may fill a streamed key's first ring
    /// buffers while a partition's H polynomial runs (`VramPlan::ring_ahead`;
    /// on unless its [`GpuConfig`] says otherwise, off only to measure
    /// against). A worker under `VramAdmission` runs the admission's plan.
    pub fn set_ring_ahead(&self, on: bool) {
        self.ring_ahead
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this worker's batches may park their members where no held
    /// member fits (`VramPlan::parked_batch`; on unless its [`GpuConfig`]
    /// says otherwise, off only to measure against).
    pub fn set_parked_batches(&self, on: bool) {
        self.parked_batches
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Tests: batches park their members whenever the plan streams the key
    /// with a, b, c on the device, the pass at the plan's own chunk (a
    /// forced small chunk gives many chunks per section), even where held
    /// members would fit.
    pub fn force_parked(&self, on: bool) {
        self.force_parked
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    fn options(&self) -> PlanOptions {
        use std::sync::atomic::Ordering::Relaxed;
        PlanOptions::default()
            .with_shifted_h(self.shifted_h.load(Relaxed))
            .with_kept_h(self.kept_h.load(Relaxed))
            .with_ring_ahead(self.ring_ahead.load(Relaxed))
            .with_parked_batches(self.parked_batches.load(Relaxed))
    }

    /// Key bytes the last partition copied in from host memory, or each
    /// member's share of the last batch's pass
    /// ([`CudaBackend::msm_sums_batch`]); 0 with the key resident.
    pub fn last_key_bytes(&self) -> u64 {
        self.inner.lock().last_key_bytes
    }

    /// After a parked batch: its members and the H coefficients' bytes
    /// each member moved each way; (0, 0) after anything else.
    pub fn last_parked(&self) -> (usize, u64) {
        self.inner.lock().last_parked
    }

    /// The plan of the last partition proved (for reports).
    pub fn last_plan(&self) -> Option<VramPlan> {
        self.last_plan.lock().clone()
    }

    /// The arena's accounting (in use, peak, largest free block).
    pub fn arena_usage(&self) -> cuzk_arena::Usage {
        self.inner.lock().arena.usage()
    }

    /// Proves `w` under `admitted` (the plan its admission reserved room
    /// for), else under a plan made here from the witness's shape and the
    /// arena (the same function admission plans with), unless a test forced
    /// a layout. Plans before any kernel runs: a budget too small fails
    /// here, with numbers.
    fn prove_planned(
        &self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
        admitted: Option<&VramPlan>,
    ) -> Result<MsmSums, ProveError> {
        let mut worker = self.inner.lock();
        let plan = self.plan_for(witness_shape(w), worker.arena.capacity(), admitted)?;
        worker.prove(&plan, key, w, t).map_err(gpu_err)
    }

    /// The plan a partition of `shape` runs under: the admitted one, a
    /// forced layout (refused when it does not fit), or the planner's.
    fn plan_for(
        &self,
        shape: Shape,
        budget: u64,
        admitted: Option<&VramPlan>,
    ) -> Result<VramPlan, GpuError> {
        let plan = match (*self.forced.lock(), admitted) {
            (None, Some(plan)) => Ok(plan.clone()),
            (None, None) => VramPlan::new_with(shape, budget, &CudaFootprints, self.options())
                .map_err(GpuError::Plan),
            (Some((mode, h_poly, matrices)), _) => {
                let p = match matrices {
                    None => VramPlan::with_layout(shape, budget, mode, h_poly, &CudaFootprints),
                    Some(x) => {
                        VramPlan::with_matrices(shape, budget, mode, h_poly, x, &CudaFootprints)
                    }
                };
                // H's kept buckets as the planner would give them (a forced
                // layout forces where things live, not how H is summed).
                let options = self.options();
                let p = match options.kept_h {
                    true => p.with_kept_h(&CudaFootprints),
                    false => p,
                };
                let p = match options.ring_ahead {
                    true => p.with_ring_ahead(),
                    false => p,
                };
                if p.fits() {
                    Ok(p)
                } else {
                    Err(GpuError::ForcedPlanDoesNotFit {
                        plan: p.to_string(),
                        budget,
                    })
                }
            }
        }?;
        tracing::debug!(%plan, "VRAM plan");
        *self.last_plan.lock() = Some(plan.clone());
        Ok(plan)
    }

    /// The five sums of several partitions of one circuit (`ws`, each with
    /// its timings in `t`), over one pass of the key where the key streams:
    /// with a, b, c evaluated on the device, every chunk of the key crosses
    /// PCIe once for the whole batch instead of once per partition
    /// (`batch.rs`), each member's H scalars and aux values held in VRAM
    /// until the pass is done. Under a plan that keeps the key resident, or
    /// evaluates a, b, c on the host, nothing would be shared, and the
    /// partitions are proved one after the other under that plan.
    ///
    /// Witnesses of different circuits are proved one after the other,
    /// each under its own plan. Refused before any work: a witness that
    /// does not fit the key, and a batch whose members' held state does not
    /// fit the budget beside the plan (both numbers).
    ///
    /// # Panics
    /// If `t` and `ws` differ in length (a caller's bug).
    pub fn msm_sums_batch(
        &self,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
    ) -> Result<Vec<MsmSums>, ProveError> {
        self.batch_planned(key, ws, t, None)
    }

    /// [`CudaBackend::msm_sums_batch`] under `admitted`, the plan the
    /// device's admission reserved the batch's room for, when there is one.
    fn batch_planned(
        &self,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
        admitted: Option<&VramPlan>,
    ) -> Result<Vec<MsmSums>, ProveError> {
        assert_eq!(ws.len(), t.len(), "one StageTimings per witness");
        use std::sync::atomic::Ordering::Relaxed;
        // One at a time unless a pass below takes them all.
        self.last_batch.store(1, Relaxed);
        let Some(first) = ws.first() else {
            return Ok(Vec::new());
        };
        for w in ws {
            cuzk_groth16::prover::check_key_shape(key, &w.shape())?;
        }
        let shape = witness_shape(first);
        if ws
            .iter()
            .any(|w| witness_shape(w) != shape || w.deferred != first.deferred)
        {
            // Partitions of different circuits share no key pass.
            return ws
                .iter()
                .zip(t.iter_mut())
                .map(|(w, t)| self.prove_planned(key, w, t, None))
                .collect();
        }
        let mut worker = self.inner.lock();
        let budget = worker.arena.capacity();
        let plan = self.plan_for(shape, budget, admitted)?;
        let shares = matches!(plan.mode, SrsMode::Streamed { .. })
            && plan.interleaved
            && first.deferred.is_some();
        if !shares || ws.len() == 1 {
            return ws
                .iter()
                .zip(t.iter_mut())
                .map(|(w, t)| worker.prove(&plan, key, w, t).map_err(gpu_err))
                .collect();
        }
        let forced = self.force_parked.load(Relaxed);
        if forced || ws.len() > plan.batch_room() {
            // The pass as `batch_room` and the admission chose it (for a
            // proof's partitions), whatever this batch's size: fewer
            // members at the same chunk stay within what was reserved.
            let most = crate::plan::BATCH_COUNTED.max(ws.len());
            if let Some(parked) = self.parked_for(&plan, ws, most) {
                if parked.members >= ws.len() {
                    // While a thread pins the pool ahead, a batch does not
                    // wait for it: its partitions go one at a time.
                    let pin_here = !self.warming.load(Relaxed);
                    let done = worker
                        .prove_batch_parked(&plan, &parked, key, ws, t, pin_here)
                        .map_err(gpu_err)?;
                    if let Some(sums) = done {
                        self.last_batch.store(ws.len(), Relaxed);
                        return Ok(sums);
                    }
                    return ws
                        .iter()
                        .zip(t.iter_mut())
                        .map(|(w, t)| worker.prove(&plan, key, w, t).map_err(gpu_err))
                        .collect();
                }
            }
        }
        if ws.len() > plan.batch_room() {
            return Err(GpuError::BatchDoesNotFit {
                members: ws.len(),
                needed: plan.batch_peak(ws.len()),
                budget,
            }
            .into());
        }
        let sums = worker.prove_batch(&plan, key, ws, t).map_err(gpu_err)?;
        self.last_batch.store(ws.len(), Relaxed);
        Ok(sums)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        self.name
    }

    fn msm_sums(
        &self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> Result<MsmSums, ProveError> {
        self.prove_planned(key, w, t, None)
    }

    /// Runs the plan the device's admission reserved room for (a
    /// [`VramPlan`]; anything else is ignored and the worker plans), unless
    /// a test forced a layout.
    fn msm_sums_admitted(
        &self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
        admitted: &(dyn std::any::Any + Send + Sync),
    ) -> Result<MsmSums, ProveError> {
        self.prove_planned(key, w, t, admitted.downcast_ref::<VramPlan>())
    }

    /// Pins the key in host memory when this device streams it: its
    /// points are more than the arena can hold beside a partition (the
    /// plan for the key's own shape streams it), or a test forced a
    /// streamed layout. Once per key and device slot; the pin lasts until
    /// the key is evicted by name ([`SrsSlot::evict`]).
    fn prepare_key(&self, key: &Arc<ProvingKey>) -> Result<(), ProveError> {
        let forced = matches!(*self.forced.lock(), Some((SrsMode::Streamed { .. }, _, _)));
        if !forced {
            let shape = Shape::of_key(key);
            let plan = VramPlan::new(shape, self.capacity, &CudaFootprints);
            if matches!(plan, Ok(ref p) if p.mode == SrsMode::Resident) {
                return Ok(());
            }
        }
        self.keys.pin_in_host(&self.gpu, key).map_err(gpu_err)?;
        Ok(())
    }

    /// The plan's `batch_room`: more than 1 only where a batch shares the
    /// key's pass (the key streamed, a, b, c on the device). Held members
    /// where they fit, else a parked batch's members (of the first
    /// `BATCH_COUNTED`, a proof's partitions, and as many as the device's
    /// pool may pin) where the plan parks one.
    fn batch_room(&self, _key: &ProvingKey, witness: &Synthesized) -> usize {
        let Ok(plan) = self.plan(witness_shape(witness)) else {
            return 1;
        };
        match plan.batch_room() {
            1 => match self.parked_for(&plan, &[witness], crate::plan::BATCH_COUNTED) {
                Some(b) => {
                    self.warm_parked(plan.shape.domain, b.members);
                    b.members
                }
                None => 1,
            },
            held => held,
        }
    }

    /// A proof's partitions (`BATCH_COUNTED`):
    /// the most a batch, held or parked, is planned for.
    fn most_batch_room(&self) -> usize {
        crate::plan::BATCH_COUNTED
    }

    fn msm_sums_batch(
        &self,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
        admitted: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> Result<Vec<MsmSums>, ProveError> {
        let plan = admitted.and_then(|a| a.downcast_ref::<VramPlan>());
        self.batch_planned(key, ws, t, plan)
    }

    fn last_crossed(&self) -> Option<u64> {
        Some(self.inner.lock().last_crossed())
    }

    fn last_batch(&self) -> Option<usize> {
        Some(self.last_batch.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn last_run(&self) -> Option<String> {
        let plan = self.last_plan.lock().clone()?;
        let worker = self.inner.lock();
        let crossed = match (worker.last_key_bytes, worker.last_parked) {
            (0, _) => String::new(),
            (b, (0, _)) => format!("; key {:.2} GB crossed", b as f64 / 1e9),
            (b, (members, h)) => format!(
                "; a parked batch of {members}: key {:.2} GB crossed (its share), H coefficients \
                 {:.2} GB each way",
                b as f64 / 1e9,
                h as f64 / 1e9
            ),
        };
        Some(format!("{plan}; arena {}{crossed}", worker.arena.usage()))
    }

    /// Nothing per partition: a, b, c (or z, when the device evaluates
    /// them) and the aux values go to the device straight from the witness
    /// through the worker's pinned pool (made once per worker), and the
    /// quotient, the gathered scalars and the MSM scratch live in VRAM under
    /// the arena's admission. (A deferred witness whose matrices do not fit
    /// beside the key has a, b, c evaluated on the host: that partition's
    /// 3 × n scalars are not counted here; the plan logs it.)
    fn host_working_set(&self, _shape: &cuzk_synth::CircuitShape) -> u64 {
        0
    }
}

mod parked;
