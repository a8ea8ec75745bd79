#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub mod keygen;

use std::ops::Add;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_arena::Footprints;
use cuzk_cuda::gather::BitmapGather;
use cuzk_cuda::msm::{BatchSum, Classifier, Msm, MsmCurve, G1, G2};
use cuzk_cuda::ntt::{h_step, ntt, NttKind};
use cuzk_cuda::{Arena, DeviceBuffer, Event, Gpu, PinnedBuffer, Stream};
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, DeviceRepr, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::{Fr, G1Affine, Group};
use cuzk_groth16::prover::{
    dense_ab_scalars, Backend, BackendFailure, MsmSums, ProveError, StageTimings,
};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;
use parking_lot::Mutex;
use rayon::prelude::*;

pub mod admission;

pub use cuzk_arena::{human, PlanError, Shape, SrsMode, VramPlan, MIN_CHUNK};
pub use cuzk_cuda::VramBudget;

/// Bytes of each of the two pinned staging buffers (allocated once per worker).
pub const STAGE_BYTES: usize = 64 << 20;

/// Threads of a worker's own pool that fill its pinned staging buffers. The
/// fill is a memory copy; on the global rayon pool it would queue behind
/// whatever else the host runs there (a parallel synthesis holds every
/// thread for ~0.3 s per task: on the H200 host the 2^24 a, b, c upload went
/// from 41 ms to 450 ms beside one). Four threads copy faster than the
/// PCIe link drains.
pub const FILL_THREADS: usize = 4;

/// The kernels' device-memory footprints, as cuzk-cuda sizes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaFootprints;

impl Footprints for CudaFootprints {
    fn msm_g1(&self, len: usize) -> u64 {
        Msm::<G1>::bytes_for(len)
    }
    fn msm_g2(&self, len: usize) -> u64 {
        Msm::<G2>::bytes_for(len)
    }
    fn classifier(&self, len: usize) -> u64 {
        Classifier::bytes_for(len) + BitmapGather::bytes_for(len)
    }
    fn fixed(&self) -> u64 {
        // Batch-sum partials (a few thousand XYZZ points per curve), the NTT
        // twiddle tables (a few MiB) and result slots.
        64 << 20
    }
}

/// The shape the plan needs, from a key and a witness.
pub fn shape_of(key: &ProvingKey, w: &Synthesized) -> Shape {
    Shape {
        domain: 1usize << w.domain_log2(),
        h: key.h.len(),
        l: key.l.len(),
        a: key.a.len(),
        b_g1: key.b_g1.len(),
        b_g2: key.b_g2.len(),
        aux: w.aux_assignment.len(),
    }
}

/// The shape from a key alone (for admission before synthesis): the domain
/// is one more than the h points, the aux count the l points.
pub fn shape_of_key(key: &ProvingKey) -> Shape {
    Shape {
        domain: key.h.len() + 1,
        h: key.h.len(),
        l: key.l.len(),
        a: key.a.len(),
        b_g1: key.b_g1.len(),
        b_g2: key.b_g2.len(),
        aux: key.l.len(),
    }
}

/// A key's points in device memory, shared by the workers of one device.
struct ResidentSrs {
    fingerprint: Fingerprint,
    h: DeviceBuffer<G1AffineLimbs>,
    l: DeviceBuffer<G1AffineLimbs>,
    a: DeviceBuffer<G1AffineLimbs>,
    b_g1: DeviceBuffer<G1AffineLimbs>,
    b_g2: DeviceBuffer<G2AffineLimbs>,
}

/// Where a device's workers keep the resident key (one per device arena).
#[derive(Clone, Default)]
pub struct SrsSlot(Arc<Mutex<Option<Arc<ResidentSrs>>>>);

impl std::fmt::Debug for SrsSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.lock().is_some();
        write!(f, "SrsSlot(resident: {held})")
    }
}

/// What identifies a key cheaply: every section's length and its first and last points.
#[derive(Clone, PartialEq, Eq)]
struct Fingerprint(Vec<u8>);

impl Fingerprint {
    fn of(key: &ProvingKey) -> Self {
        let mut v = Vec::new();
        let mut g1 = |p: &[G1Affine]| {
            v.extend_from_slice(&(p.len() as u64).to_le_bytes());
            for q in p.first().into_iter().chain(p.last()) {
                v.extend_from_slice(&q.to_compressed());
            }
        };
        g1(&key.h);
        g1(&key.l);
        g1(&key.a);
        g1(&key.b_g1);
        g1(std::slice::from_ref(&key.vk.delta_g1));
        v.extend_from_slice(&(key.b_g2.len() as u64).to_le_bytes());
        for q in key.b_g2.first().into_iter().chain(key.b_g2.last()) {
            v.extend_from_slice(&q.to_compressed());
        }
        Fingerprint(v)
    }
}

/// Why the GPU backend could not prove a partition.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// A CUDA call or kernel launch failed, or the arena ran out.
    #[error(transparent)]
    Cuda(#[from] cuzk_cuda::Error),
    /// No VRAM plan fits the worker's budget.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The plan mode forced by [`CudaBackend::force_mode`] does not fit.
    #[error("the forced plan does not fit: {plan} (budget {})", human(*.budget))]
    ForcedPlanDoesNotFit { plan: String, budget: u64 },
}

impl GpuError {
    /// Whether the device lacked memory (the partition would fit elsewhere)
    /// or failed.
    pub fn failure(&self) -> BackendFailure {
        match self {
            GpuError::Cuda(e) if e.is_out_of_memory() => BackendFailure::OutOfDeviceMemory,
            GpuError::Cuda(_) => BackendFailure::Fault,
            GpuError::Plan(_) | GpuError::ForcedPlanDoesNotFit { .. } => {
                BackendFailure::OutOfDeviceMemory
            }
        }
    }
}

impl From<GpuError> for ProveError {
    fn from(e: GpuError) -> Self {
        ProveError::backend("cuda", e.failure(), e)
    }
}

fn gpu_err(e: cuzk_cuda::Error) -> ProveError {
    GpuError::Cuda(e).into()
}

/// The GPU backend of the prover: one worker (one compute stream, one copy
/// stream, its own MSM scratch and pinned staging) on one device, with every
/// buffer taken from a VRAM arena.
pub struct CudaBackend {
    name: &'static str,
    inner: Mutex<Worker>,
    last_plan: Mutex<Option<VramPlan>>,
    forced: Mutex<Option<SrsMode>>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

struct Scratch {
    len: usize,
    g2_len: usize,
    g1: Msm<G1>,
    g2: Msm<G2>,
    classifier: Classifier,
    gather: BitmapGather,
}

struct Worker {
    gpu: Gpu,
    arena: Arena,
    stream: Stream,
    copy: Stream,
    staging: [PinnedBuffer<u8>; 2],
    next_stage: usize,
    /// Fills the staging buffers; `None` if its threads could not be started
    /// (then the global rayon pool does, slower beside other work).
    fill: Option<rayon::ThreadPool>,
    scratch: Option<Scratch>,
    sum_g1: BatchSum<G1>,
    sum_g2: BatchSum<G2>,
    srs: SrsSlot,
    /// Give the MSM scratch back to the arena after each partition (when the
    /// arena is shared by several workers and admission counts it per partition).
    release_scratch: bool,
}

impl CudaBackend {
    /// A worker on `gpu`, using the device's whole arena.
    pub fn new(gpu: Gpu) -> Result<Self, cuzk_cuda::Error> {
        let arena = gpu.arena().clone();
        Self::in_arena(gpu, arena, SrsSlot::default())
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
        Self::in_arena(gpu, arena, SrsSlot::default())
    }

    /// `count` workers on one device sharing an arena (the device's, or one
    /// of `budget` carved from it) and one resident key: the scheduler's GPU
    /// workers. Each gives its scratch back after every partition, so that
    /// [`admission::VramAdmission`] can count memory per running partition.
    pub fn workers(
        gpu: &Gpu,
        count: usize,
        budget: VramBudget,
    ) -> Result<Vec<Self>, cuzk_cuda::Error> {
        let arena = match budget {
            VramBudget::Bytes(b) if b < gpu.arena().capacity() => {
                let s = gpu.new_stream()?;
                gpu.arena().sub(b, &s)?
            }
            _ => gpu.arena().clone(),
        };
        let slot = SrsSlot::default();
        (0..count)
            .map(|_| {
                let b = Self::in_arena(gpu.clone(), arena.clone(), slot.clone())?;
                b.inner.lock().release_scratch = true;
                Ok(b)
            })
            .collect()
    }

    fn in_arena(gpu: Gpu, arena: Arena, srs: SrsSlot) -> Result<Self, cuzk_cuda::Error> {
        let stream = gpu.new_stream_in(&arena)?;
        let copy = gpu.new_stream_in(&arena)?;
        let ordinal = gpu.info().ordinal;
        let name: &'static str = Box::leak(format!("cuda:{ordinal}").into_boxed_str());
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
                staging: [
                    PinnedBuffer::new(&gpu, STAGE_BYTES)?,
                    PinnedBuffer::new(&gpu, STAGE_BYTES)?,
                ],
                next_stage: 0,
                fill,
                sum_g1: BatchSum::new(&stream)?,
                sum_g2: BatchSum::new(&stream)?,
                scratch: None,
                release_scratch: false,
                gpu,
                arena,
                stream,
                copy,
                srs,
            }),
            last_plan: Mutex::new(None),
            forced: Mutex::new(None),
        })
    }

    /// Runs every partition in `mode` instead of the planner's choice (when
    /// it fits the budget): for tests and benchmarks of streaming on a card
    /// where the key would be resident. `None` restores the planner.
    pub fn force_mode(&self, mode: Option<SrsMode>) {
        *self.forced.lock() = mode;
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
        VramPlan::new(shape, self.budget_bytes(), &CudaFootprints)
    }

    /// The plan of the last partition proved (for reports).
    pub fn last_plan(&self) -> Option<VramPlan> {
        self.last_plan.lock().clone()
    }

    /// The arena's accounting (in use, peak, largest free block).
    pub fn arena_usage(&self) -> cuzk_arena::Usage {
        self.inner.lock().arena.usage()
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
        let mut worker = self.inner.lock();
        // Plan before any kernel runs: a budget too small fails here, with numbers.
        let shape = shape_of(key, w);
        let budget = worker.arena.capacity();
        let plan = match *self.forced.lock() {
            None => VramPlan::new(shape, budget, &CudaFootprints).map_err(GpuError::Plan),
            Some(mode) => {
                let p = VramPlan::with_mode(shape, budget, mode, &CudaFootprints);
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
        worker.prove(&plan, key, w, t).map_err(gpu_err)
    }

    fn last_run(&self) -> Option<String> {
        let plan = self.last_plan.lock().clone()?;
        Some(format!("{plan}; arena {}", self.inner.lock().arena.usage()))
    }

    /// Nothing per partition: a, b, c and the aux values go to the device
    /// straight from the witness through the worker's pinned pool (made once
    /// per worker), and the quotient, the gathered scalars and the MSM
    /// scratch live in VRAM under the arena's admission.
    fn host_working_set(&self, _shape: &cuzk_synth::CircuitShape) -> u64 {
        0
    }
}

/// Device-event marks of one partition's stages on the compute stream.
struct Clock {
    marks: Vec<(&'static str, Event, Event)>,
    open: Option<(&'static str, Event)>,
}

impl Clock {
    fn new() -> Self {
        Clock {
            marks: Vec::new(),
            open: None,
        }
    }

    fn start(&mut self, s: &Stream, name: &'static str) -> cuzk_cuda::Result<()> {
        self.open = Some((name, s.record()?));
        Ok(())
    }

    fn stop(&mut self, s: &Stream) -> cuzk_cuda::Result<()> {
        if let Some((name, start)) = self.open.take() {
            self.marks.push((name, start, s.record()?));
        }
        Ok(())
    }

    /// Each stage's device time (waits for the last event).
    fn report(self, t: &mut StageTimings) -> cuzk_cuda::Result<()> {
        for (name, a, b) in self.marks {
            let ms = a.elapsed_ms(&b)?;
            t.record(name, Duration::from_secs_f64(f64::from(ms) / 1e3));
        }
        Ok(())
    }
}

/// Where a streamed MSM's scalars come from.
enum Scalars<'a> {
    Device(&'a DeviceBuffer<FrLimbs>),
    Host(&'a [Fr]),
}

fn add_opt<P: Add<Output = P> + Copy>(acc: Option<P>, x: P) -> Option<P> {
    Some(match acc {
        None => x,
        Some(a) => a + x,
    })
}

impl Worker {
    fn prove(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = plan.shape.domain;
        match plan.mode {
            SrsMode::Resident => self.make_resident(key, t)?,
            // Free a resident key of another shape before streaming this one.
            SrsMode::Streamed { .. } => *self.srs.0.lock() = None,
        }
        self.size_scratch(plan.msm_len, plan.msm_len.min(plan.shape.b_g2.max(1)))?;
        let mut clock = Clock::new();

        // H polynomial: a, b, c through the pinned pool into zeroed n-long
        // buffers (the padding stays zero), then iNTT, coset NTT, (a·b − c)/Z,
        // coset iNTT, all on the device.
        clock.start(&s, "upload_abc")?;
        let mut abc = Vec::with_capacity(3);
        for v in [&w.a, &w.b, &w.c] {
            let mut d = s.alloc::<FrLimbs>(n)?;
            self.stage_upload(&s, fr_as_limbs(v), &mut d, 0)?;
            abc.push(d);
        }
        clock.stop(&s)?;
        clock.start(&s, "h_poly")?;
        let (mut da, mut db, mut dc) = {
            let mut it = abc.into_iter();
            let mut next = || it.next().expect("three buffers");
            (next(), next(), next())
        };
        for d in [&mut da, &mut db, &mut dc] {
            ntt(&s, d, NttKind::Inverse)?;
            ntt(&s, d, NttKind::CosetForward)?;
        }
        h_step(&s, &mut da, &db, &dc)?;
        drop((db, dc));
        ntt(&s, &mut da, NttKind::CosetInverse)?;
        clock.stop(&s)?;

        let sums = match plan.mode {
            SrsMode::Resident => self.resident_msms(w, da, &mut clock)?,
            SrsMode::Streamed { chunk } => self.streamed_msms(chunk, key, w, da, &mut clock, t)?,
        };
        if self.release_scratch {
            self.scratch = None;
        }
        s.synchronize()?;
        clock.report(t)?;
        Ok(sums)
    }

    fn resident_msms(
        &mut self,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let srs = self.srs.0.lock().clone().expect("made resident above");
        let n = dh.len();

        clock.start(&s, "msm_h")?;
        let scratch = self.scratch.as_mut().expect("sized above");
        scratch.g1.enqueue(&srs.h, &dh, None, n - 1)?;
        let h = scratch.g1.result()?;
        drop(dh);
        clock.stop(&s)?;

        // The aux values go up once: L's scalars, and the source of A's and
        // B's dense scalars, gathered on the device by density bitmap.
        clock.start(&s, "msm_l")?;
        let aux = w.aux_assignment.len();
        let mut dl = s.alloc::<FrLimbs>(aux)?;
        self.stage_upload(&s, fr_as_limbs(&w.aux_assignment), &mut dl, 0)?;
        let l = self.split_g1(&srs.l, &dl)?;
        clock.stop(&s)?;

        clock.start(&s, "msm_a")?;
        let mut da = s.alloc::<FrLimbs>(srs.a.len())?;
        let inputs = fr_as_limbs(&w.input_assignment);
        s.upload_at(inputs, &mut da, 0)?;
        self.gather_aux(&dl, w.a_aux_density.as_words(), &mut da, inputs.len(), aux)?;
        let a = self.split_g1(&srs.a, &da)?;
        drop(da);
        clock.stop(&s)?;

        // B in G1 and G2 share one upload and one classification.
        clock.start(&s, "msm_b_g1")?;
        let mut db = s.alloc::<FrLimbs>(srs.b_g1.len())?;
        let b_inputs: Vec<Fr> = w
            .b_input_density
            .iter_ones()
            .map(|i| w.input_assignment[i])
            .collect();
        s.upload_at(fr_as_limbs(&b_inputs), &mut db, 0)?;
        self.gather_aux(
            &dl,
            w.b_aux_density.as_words(),
            &mut db,
            b_inputs.len(),
            aux,
        )?;
        drop(dl);
        let scratch = self.scratch.as_mut().expect("sized above");
        let counts = scratch.classifier.classify(&db)?;
        let b_g1 = self
            .sum_g1
            .sum_indices(&srs.b_g1, scratch.classifier.ones(), counts.ones)?
            + scratch
                .g1
                .run_indexed(&srs.b_g1, &db, scratch.classifier.others(), counts.others)?;
        clock.stop(&s)?;
        clock.start(&s, "msm_b_g2")?;
        let b_g2 = self
            .sum_g2
            .sum_indices(&srs.b_g2, scratch.classifier.ones(), counts.ones)?
            + scratch
                .g2
                .run_indexed(&srs.b_g2, &db, scratch.classifier.others(), counts.others)?;
        clock.stop(&s)?;
        Ok(MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// Fills `out[head..]` with the aux values at the set bits of `density`
    /// (on the device) and checks that this completes `out` exactly.
    fn gather_aux(
        &mut self,
        aux: &DeviceBuffer<FrLimbs>,
        density: &[u64],
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
        n: usize,
    ) -> cuzk_cuda::Result<()> {
        let scratch = self.scratch.as_mut().expect("sized above");
        let count = scratch.gather.gather(aux, n, density, out, head)?;
        if head + count != out.len() {
            return Err(cuzk_cuda::Error::BadArguments {
                kernel: "prover_gather_set_bits",
                message: format!(
                    "{head} inputs + {count} aux values by density, but the key section has {} points",
                    out.len()
                ),
            });
        }
        Ok(())
    }

    /// Σ scalars[i]·bases[i] with the scalars classified on the device: ones
    /// batch-summed, others through Pippenger, zeros skipped.
    fn split_g1(
        &mut self,
        bases: &DeviceBuffer<G1AffineLimbs>,
        scalars: &DeviceBuffer<FrLimbs>,
    ) -> cuzk_cuda::Result<cuzk_field::G1Projective> {
        let scratch = self.scratch.as_mut().expect("sized above");
        let counts = scratch.classifier.classify(scalars)?;
        let ones = self
            .sum_g1
            .sum_indices(bases, scratch.classifier.ones(), counts.ones)?;
        let rest =
            scratch
                .g1
                .run_indexed(bases, scalars, scratch.classifier.others(), counts.others)?;
        Ok(ones + rest)
    }

    fn streamed_msms(
        &mut self,
        chunk: usize,
        key: &ProvingKey,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        clock: &mut Clock,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = dh.len();
        clock.start(&s, "msm_h")?;
        let h = self.stream_g1(chunk, g1_as_limbs(&key.h), Scalars::Device(&dh), n - 1)?;
        drop(dh);
        clock.stop(&s)?;

        clock.start(&s, "msm_l")?;
        let aux = &w.aux_assignment;
        let l = self.stream_g1(chunk, g1_as_limbs(&key.l), Scalars::Host(aux), aux.len())?;
        clock.stop(&s)?;

        let start = Instant::now();
        let (a_scalars, b_scalars) = dense_ab_scalars(w);
        t.record("gather", start.elapsed());

        clock.start(&s, "msm_a")?;
        let a = self.stream_g1(
            chunk,
            g1_as_limbs(&key.a),
            Scalars::Host(&a_scalars),
            a_scalars.len(),
        )?;
        clock.stop(&s)?;
        clock.start(&s, "msm_b_g1")?;
        let b_g1 = self.stream_g1(
            chunk,
            g1_as_limbs(&key.b_g1),
            Scalars::Host(&b_scalars),
            b_scalars.len(),
        )?;
        clock.stop(&s)?;
        clock.start(&s, "msm_b_g2")?;
        let b_g2 = self.stream_g2(
            chunk,
            g2_as_limbs(&key.b_g2),
            Scalars::Host(&b_scalars),
            b_scalars.len(),
        )?;
        clock.stop(&s)?;
        Ok(MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    fn stream_g1(
        &mut self,
        chunk: usize,
        bases: &[G1AffineLimbs],
        scalars: Scalars<'_>,
        count: usize,
    ) -> cuzk_cuda::Result<cuzk_field::G1Projective> {
        let r = self.stream_section::<G1>(chunk, bases, scalars, count, |w| {
            let sc = w.scratch.as_mut().expect("sized");
            (&mut sc.classifier, &mut sc.g1, &mut w.sum_g1)
        })?;
        Ok(r.unwrap_or_else(Group::identity))
    }

    fn stream_g2(
        &mut self,
        chunk: usize,
        bases: &[G2AffineLimbs],
        scalars: Scalars<'_>,
        count: usize,
    ) -> cuzk_cuda::Result<cuzk_field::G2Projective> {
        let r = self.stream_section::<G2>(chunk, bases, scalars, count, |w| {
            let sc = w.scratch.as_mut().expect("sized");
            (&mut sc.classifier, &mut sc.g2, &mut w.sum_g2)
        })?;
        Ok(r.unwrap_or_else(Group::identity))
    }

    /// Σ scalars[i]·bases[i] for i < count with the bases streamed from host
    /// memory `chunk` points at a time: chunk k+1 is copied in (copy stream,
    /// through the pinned pool) while chunk k's sums run (compute stream).
    fn stream_section<C: MsmCurve>(
        &mut self,
        chunk: usize,
        bases: &[C::Affine],
        scalars: Scalars<'_>,
        count: usize,
        parts: impl Fn(&mut Worker) -> (&mut Classifier, &mut Msm<C>, &mut BatchSum<C>),
    ) -> cuzk_cuda::Result<Option<C::Projective>>
    where
        C::Affine: Sync,
        C::Projective: Add<Output = C::Projective>,
    {
        if count == 0 {
            return Ok(None);
        }
        let s = self.stream.clone();
        let copy = self.copy.clone();
        let mut dbases = [s.alloc::<C::Affine>(chunk)?, s.alloc::<C::Affine>(chunk)?];
        let mut dscalars = s.alloc::<FrLimbs>(chunk)?;
        // The copy stream writes into buffers zeroed on the compute stream.
        copy.wait(&s.record()?)?;
        let chunks = count.div_ceil(chunk);
        let range = |k: usize| (k * chunk, ((k + 1) * chunk).min(count));
        let mut uploaded: [Option<Event>; 2] = [None, None];
        let mut used: [Option<Event>; 2] = [None, None];
        let (s0, e0) = range(0);
        self.stage_upload(&copy, &bases[s0..e0], &mut dbases[0], 0)?;
        uploaded[0] = Some(copy.record()?);
        let mut total = None;
        for k in 0..chunks {
            let slot = k % 2;
            let (start, end) = range(k);
            let len = end - start;
            s.wait(uploaded[slot].as_ref().expect("uploaded before use"))?;
            match scalars {
                Scalars::Device(d) => s.copy_range(d, start, &mut dscalars, 0, len)?,
                Scalars::Host(h) => {
                    self.stage_upload(&s, fr_as_limbs(&h[start..end]), &mut dscalars, 0)?
                }
            }
            if len < chunk {
                s.zero_range(&mut dscalars, len, chunk - len)?;
            }
            {
                let (classifier, msm, sum) = parts(self);
                let counts = classifier.classify(&dscalars)?;
                sum.enqueue_indices(&dbases[slot], classifier.ones(), counts.ones)?;
                msm.enqueue(
                    &dbases[slot],
                    &dscalars,
                    Some(classifier.others()),
                    counts.others,
                )?;
            }
            used[slot] = Some(s.record()?);
            // Copy the next chunk in while this one's sums run.
            if k + 1 < chunks {
                let next = (k + 1) % 2;
                if let Some(e) = &used[next] {
                    copy.wait(e)?;
                }
                let (ns, ne) = range(k + 1);
                self.stage_upload(&copy, &bases[ns..ne], &mut dbases[next], 0)?;
                uploaded[next] = Some(copy.record()?);
            }
            let (_, msm, sum) = parts(self);
            let part = sum.result()? + msm.result()?;
            total = add_opt(total, part);
        }
        Ok(total)
    }

    /// Copies `src` into `dst[at..]` on `stream` through the two pinned
    /// staging buffers: one is filled (in parallel) while the other's copy runs.
    fn stage_upload<T: DeviceRepr + Sync>(
        &mut self,
        stream: &Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> cuzk_cuda::Result<()> {
        let per = (STAGE_BYTES / std::mem::size_of::<T>()).max(1);
        for (i, piece) in src.chunks(per).enumerate() {
            let buf = &mut self.staging[self.next_stage];
            self.next_stage ^= 1;
            let view = &mut buf.values_mut::<T>()?[..piece.len()];
            let mut copy = || {
                view.par_chunks_mut(1 << 14)
                    .zip(piece.par_chunks(1 << 14))
                    .for_each(|(d, s)| d.copy_from_slice(s))
            };
            match &self.fill {
                Some(pool) => pool.install(copy),
                None => copy(),
            }
            stream.upload_staged(buf, piece.len(), dst, at + i * per)?;
        }
        Ok(())
    }

    /// Uploads the key's points unless this key is already resident.
    fn make_resident(&mut self, key: &ProvingKey, t: &mut StageTimings) -> cuzk_cuda::Result<()> {
        let fp = Fingerprint::of(key);
        let slot = self.srs.clone();
        let mut held = slot.0.lock();
        if held.as_ref().is_some_and(|r| r.fingerprint == fp) {
            return Ok(());
        }
        let start = Instant::now();
        *held = None;
        let s = self.stream.clone();
        let up_g1 = |w: &mut Worker, p: &[G1AffineLimbs]| {
            let mut d = s.alloc(p.len())?;
            w.stage_upload(&s, p, &mut d, 0)?;
            Ok::<_, cuzk_cuda::Error>(d)
        };
        let h = up_g1(self, g1_as_limbs(&key.h))?;
        let l = up_g1(self, g1_as_limbs(&key.l))?;
        let a = up_g1(self, g1_as_limbs(&key.a))?;
        let b_g1 = up_g1(self, g1_as_limbs(&key.b_g1))?;
        let mut b_g2 = s.alloc(key.b_g2.len())?;
        self.stage_upload(&s, g2_as_limbs(&key.b_g2), &mut b_g2, 0)?;
        s.synchronize()?;
        *held = Some(Arc::new(ResidentSrs {
            fingerprint: fp,
            h,
            l,
            a,
            b_g1,
            b_g2,
        }));
        t.record("srs_upload", start.elapsed());
        Ok(())
    }

    /// Scratch for G1 MSMs of up to `len` pairs and G2 MSMs of up to `g2_len`.
    fn size_scratch(&mut self, len: usize, g2_len: usize) -> cuzk_cuda::Result<()> {
        if self
            .scratch
            .as_ref()
            .is_some_and(|sc| (sc.len, sc.g2_len) == (len, g2_len))
        {
            return Ok(());
        }
        self.scratch = None; // free the old scratch before making the new one
        let s = &self.stream;
        self.scratch = Some(Scratch {
            len,
            g2_len,
            g1: Msm::new(s, len)?,
            g2: Msm::new(s, g2_len)?,
            classifier: Classifier::new(s, len)?,
            gather: BitmapGather::new(s, len)?,
        });
        Ok(())
    }
}
