//! a, b, c on the device for witnesses that leave them to the prover
//! (cuzk-synth `DeferredAbc`, pre-compiled circuits): the recording's
//! matrices resident in a device's [`MatrixSlot`] (one recording per
//! device, shared by its workers, uploaded on first use), z = (inputs, aux)
//! uploaded, then A·z, B·z and C·z by cuzk-cuda's SpMV into the zero-padded
//! buffers the H polynomial transforms. The host never holds a, b, c, and
//! only z crosses PCIe (a third of a, b, c at a 32 GiB PoRep partition).
//!
//! When the plan finds no room for the matrices beside the key, they stay
//! on the host and cross PCIe in chunks of rows for every partition
//! (cuzk-cuda `StreamedR1cs`): slower than resident, still without a, b, c
//! on the host. The recording is laid out in those chunks and page-locked
//! in host memory once per process (cuzk-cuda `PinnedR1cs`, shared by
//! every worker and device), so the chunks cross straight from it with the
//! checks made once; where host memory cannot be pinned, the chunks cross
//! through the worker's staging buffers, checked as they are filled.
//!
//! Slot rules: a recording is evicted (replaced by another, or for a
//! partition's room by admission) only when no partition uses it: no worker
//! holds its device matrices and no admitted partition has pinned its id.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use cuzk_cuda::abc::{
    device_bytes, ChunkedR1cs, DeviceR1cs, HostIds, HostMatrix, PinnedR1cs, StreamedR1cs, Streaming,
};
use cuzk_cuda::DeviceBuffer;
use cuzk_field::limbs::{fr_as_limbs, FrLimbs};
use cuzk_groth16::prover::StageTimings;
use cuzk_pipeline::HostBudget;
use cuzk_synth::precompiled::{CircuitId, CoeffIdsRef, DeferredAbc, MatrixRef, R1csRef};
use cuzk_synth::Synthesized;
use parking_lot::{Mutex, MutexGuard};

use crate::plan::Shape;
use crate::worker::{Clock, Worker};
use crate::{ZUpload, ZUploadReport};

/// One matrix as cuzk-cuda's SpMV takes it.
fn host_matrix<'a>(m: &MatrixRef<'a>) -> HostMatrix<'a> {
    HostMatrix {
        row_ptr: m.row_ptr,
        cols: m.cols,
        ids: match m.ids {
            CoeffIdsRef::U16(v) => HostIds::U16(v),
            CoeffIdsRef::U32(v) => HostIds::U32(v),
        },
    }
}

/// Device bytes the recording's matrices and coefficient table take.
pub fn matrix_bytes(r1cs: &R1csRef<'_>) -> u64 {
    device_bytes(r1cs.coeffs.len(), &host_matrices(r1cs))
}

/// The plan shape of a witness: its circuit's, with a, b, c on the device
/// when it leaves them to the prover. The one place both the backend and
/// the admission derive it, so they plan alike.
pub fn witness_shape(w: &Synthesized) -> Shape {
    let circuit = w.shape();
    let shape = Shape::of_circuit(&circuit);
    match &w.deferred {
        Some(d) => {
            let r1cs = d.r1cs();
            let terms = [&r1cs.a, &r1cs.b, &r1cs.c]
                .iter()
                .map(|m| m.cols.len())
                .max()
                .unwrap_or(0);
            shape.with_device_abc(&circuit, matrix_bytes(&r1cs), r1cs.coeffs.len(), terms)
        }
        None => shape,
    }
}

/// Where a partition's a, b, c come from on the device.
pub(crate) enum AbcMatrices<'a> {
    /// The recording resident in the device's slot.
    Resident(Arc<DeviceR1cs>),
    /// The recording on the host, streamed in chunks of this many terms,
    /// straight from its pinned layout when there is one.
    Streamed(Box<R1csRef<'a>>, usize, Option<Arc<PinnedR1cs>>),
}

/// A recording laid out and pinned for streaming, or the finding that it
/// could not be (not tried again).
struct PinnedEntry {
    id: CircuitId,
    terms: usize,
    pinned: Option<Arc<PinnedR1cs>>,
    /// Its host bytes' loan from the process's budget
    /// ([`count_pinned_matrices_in`]), held while the pin lives (the
    /// process's life).
    _loan: Option<Box<dyn Send + Sync>>,
}

/// The budget pinned recordings are counted in; none until one is given
/// (then they are not counted).
static PIN_BUDGET: Mutex<Option<Arc<dyn HostBudget>>> = Mutex::new(None);

/// Counts every recording this process pins for streaming from now on in
/// `budget`, the engine's host budget (cuzk-sched's `HostLender`; the daemon
/// and the `cuzk` CLI give theirs): a pinned 32 GiB PoRep recording is
/// ~6 GB. It is asked from a prover thread, which cannot wait for the
/// partitions beside it: when they hold the whole budget at that moment,
/// the recording is pinned uncounted and a warning says so.
pub fn count_pinned_matrices_in(budget: Arc<dyn HostBudget>) {
    *PIN_BUDGET.lock() = Some(budget);
}

/// The recordings pinned for streaming in this process, one per circuit
/// and chunk size, kept for the process's life (as a streamed key's pin is
/// kept): ~6 GB of host memory for a 32 GiB PoRep partition's.
static PINNED: Mutex<Vec<PinnedEntry>> = Mutex::new(Vec::new());

/// The streamed matrices from `r1cs` on `s`: straight from `pinned` when
/// there is one, else through the staging buffers.
fn streamed_from<'a>(
    s: &cuzk_cuda::Stream,
    r1cs: &'a R1csRef<'a>,
    pinned: Option<&'a PinnedR1cs>,
) -> cuzk_cuda::Result<StreamedR1cs<'a>> {
    let streamed = StreamedR1cs::new(s, fr_as_limbs(r1cs.coeffs), host_matrices(r1cs))?;
    match pinned {
        Some(p) => streamed.with_pinned(p),
        None => Ok(streamed),
    }
}

struct Resident {
    id: CircuitId,
    bytes: u64,
    matrices: Arc<DeviceR1cs>,
}

#[derive(Default)]
pub(crate) struct Slot {
    resident: Option<Resident>,
    pub(crate) pins: BTreeMap<[u8; 32], usize>,
    pub(crate) uploads: u64,
    pub(crate) evictions: u64,
}

impl Slot {
    /// Device bytes of the resident matrices.
    pub(crate) fn bytes(&self) -> u64 {
        self.resident.as_ref().map_or(0, |r| r.bytes)
    }

    pub(crate) fn holds(&self, id: &CircuitId) -> bool {
        self.resident.as_ref().is_some_and(|r| r.id == *id)
    }

    fn idle(&self) -> bool {
        self.resident.as_ref().is_some_and(|r| {
            Arc::strong_count(&r.matrices) == 1 && !self.pins.contains_key(&r.id.0)
        })
    }

    /// Drops the resident matrices if no partition uses them; their bytes.
    pub(crate) fn evict_idle(&mut self) -> Option<u64> {
        if !self.idle() {
            return None;
        }
        self.evictions += 1;
        self.resident.take().map(|r| r.bytes)
    }

    pub(crate) fn pin(&mut self, id: &CircuitId) {
        *self.pins.entry(id.0).or_default() += 1;
    }

    pub(crate) fn unpin(&mut self, id: &CircuitId) {
        if let Some(n) = self.pins.get_mut(&id.0) {
            *n -= 1;
            if *n == 0 {
                self.pins.remove(&id.0);
            }
        }
    }
}

/// The recording resident on one device, shared by its workers and its
/// admission.
#[derive(Clone, Default)]
pub struct MatrixSlot(Arc<Mutex<Slot>>);

impl std::fmt::Debug for MatrixSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0.lock();
        write!(
            f,
            "MatrixSlot({:?}, {} bytes)",
            s.resident.as_ref().map(|r| r.id),
            s.bytes()
        )
    }
}

impl MatrixSlot {
    /// Device bytes of the resident matrices (0 when none).
    pub fn bytes(&self) -> u64 {
        self.0.lock().bytes()
    }

    /// The resident recording's id.
    pub fn resident(&self) -> Option<CircuitId> {
        self.0.lock().resident.as_ref().map(|r| r.id)
    }

    /// Recordings uploaded and evicted since the slot was made.
    pub fn counts(&self) -> (u64, u64) {
        let s = self.0.lock();
        (s.uploads, s.evictions)
    }

    /// Drops the resident matrices unless a partition uses them; whether
    /// they were dropped.
    pub fn evict(&self) -> bool {
        self.0.lock().evict_idle().is_some()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Slot> {
        self.0.lock()
    }
}

impl Worker {
    /// `d`'s matrices laid out in chunks of `terms` terms and page-locked
    /// in host memory: made once per process (the first partition's
    /// `r1cs_pin`), then shared by every partition, worker and device.
    /// `None` when they cannot be (said once, with the reason: the chunks
    /// then cross through the staging buffers).
    pub(crate) fn pinned_matrices(
        &self,
        d: &DeferredAbc,
        terms: usize,
        t: &mut StageTimings,
    ) -> Option<Arc<PinnedR1cs>> {
        let mut pinned = PINNED.lock();
        if let Some(e) = pinned.iter().find(|e| e.id == *d.id() && e.terms == terms) {
            return e.pinned.clone();
        }
        let start = Instant::now();
        let r1cs = d.r1cs();
        // Counted in the host budget before it is made, when the budget
        // has room now. Without room it is pinned all the same, uncounted
        // (a partition's prover cannot wait for the partitions beside it,
        // and the staging buffers would cost every partition ~0.3 s at
        // 16 GiB), and the log says so.
        let budget = PIN_BUDGET.lock().clone();
        let bytes = ChunkedR1cs::bytes_at_most(&host_matrices(&r1cs), terms);
        let loan = match budget.map(|b| b.try_borrow(bytes)) {
            Some(None) => {
                tracing::warn!(
                    "the host budget had no room for the {} pinned layout of circuit {}'s \
                     matrices when it was made (partitions held it all): pinned beyond the \
                     budget; leave it that much memory",
                    cuzk_arena::human(bytes),
                    d.id()
                );
                None
            }
            Some(loan) => loan,
            None => None,
        };
        let made = ChunkedR1cs::new(host_matrices(&r1cs), r1cs.coeffs.len(), terms)
            .and_then(|layout| PinnedR1cs::new(&self.gpu, Arc::new(layout)));
        let entry = match made {
            Ok(p) => {
                t.record("r1cs_pin", start.elapsed());
                tracing::info!(
                    "matrices of circuit {} laid out in chunks of {terms} terms and pinned in \
                     host memory: {} in {:.1} s (their chunks cross without staging)",
                    d.id(),
                    cuzk_arena::human(p.layout().bytes()),
                    start.elapsed().as_secs_f64()
                );
                Some(Arc::new(p))
            }
            Err(e) => {
                tracing::warn!(
                    "the matrices of circuit {} stay unpinned ({e}): their chunks cross \
                     through the staging buffers, filled and checked on the host",
                    d.id()
                );
                None
            }
        };
        pinned.push(PinnedEntry {
            id: *d.id(),
            terms,
            pinned: entry.clone(),
            _loan: entry.as_ref().and(loan),
        });
        entry
    }

    /// `d`'s matrices on the device: uploaded unless already resident
    /// (replacing an idle recording of another circuit). The slot stays
    /// locked during the upload, so two workers never upload it twice.
    pub(crate) fn make_matrices_resident(
        &mut self,
        d: &DeferredAbc,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<Arc<DeviceR1cs>> {
        let slot = self.matrices.clone();
        let mut s = slot.lock();
        if let Some(r) = s.resident.as_ref().filter(|r| r.id == *d.id()) {
            return Ok(Arc::clone(&r.matrices));
        }
        if s.resident.is_some() && s.evict_idle().is_none() {
            return Err(cuzk_cuda::Error::OutOfMemory(format!(
                "the matrices of circuit {} are in use on this device; those of {} cannot \
                 replace them (admission should have kept this partition waiting)",
                s.resident
                    .as_ref()
                    .map(|r| r.id.to_string())
                    .unwrap_or_default(),
                d.id()
            )));
        }
        let start = Instant::now();
        let r1cs = d.r1cs();
        let bytes = matrix_bytes(&r1cs);
        let matrices = Arc::new(DeviceR1cs::upload(
            &self.stream,
            fr_as_limbs(r1cs.coeffs),
            host_matrices(&r1cs),
        )?);
        self.stream.synchronize()?;
        t.record("r1cs_upload", start.elapsed());
        tracing::info!(
            "matrices of circuit {} resident: {} ({} rows, {} coefficients)",
            d.id(),
            cuzk_arena::human(bytes),
            matrices.rows(),
            matrices.coefficients()
        );
        s.uploads += 1;
        s.resident = Some(Resident {
            id: *d.id(),
            bytes,
            matrices: Arc::clone(&matrices),
        });
        Ok(matrices)
    }

    /// Uploads z = (inputs, aux) into an unzeroed buffer on the copy stream
    /// (the compute stream waits for it before it reads z): the stage
    /// `upload_z`.
    fn upload_z(
        &mut self,
        w: &Synthesized,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<DeviceBuffer<FrLimbs>> {
        let s = self.stream.clone();
        let inputs = w.input_assignment.len();
        let aux = w.num_aux();
        // upload_z, on the copy stream: the host's packing, the transfers and
        // the expansion (the stream idles while the host packs, so its events
        // count it). Not on the compute stream: kernels queued there (this
        // partition's zeroing, and behind them another worker's partition on
        // the GPU) would hold the copies back, and the workers would take
        // turns instead of overlapping. z is not zeroed (the copies write it
        // whole); the compute stream waits for the copies before it reads z.
        let copy = self.copy.clone();
        clock.start(&copy, "upload_z")?;
        let mut z = s.alloc_uninit::<FrLimbs>(inputs + aux)?;
        copy.upload_at(fr_as_limbs(&w.input_assignment), &mut z, 0)?;
        let values = fr_as_limbs(&w.aux_assignment);
        let report = match (&w.compact_aux, self.z_upload) {
            // Born compact: its sections go up as they are (no host pass
            // over 32-byte values), checked first.
            (Some(c), _) => ZUploadReport::packed(self.staging.upload_classed(
                &copy,
                crate::worker::classed(c),
                &mut z,
                inputs,
            )?),
            (None, ZUpload::Packed) => {
                ZUploadReport::packed(self.staging.upload_packed(&copy, values, &mut z, inputs)?)
            }
            (None, ZUpload::Plain) => {
                self.staging.take_times();
                self.stage_upload(&copy, values, &mut z, inputs)?;
                ZUploadReport {
                    mode: ZUpload::Plain,
                    values: aux,
                    packed: 0,
                    others: 0,
                    bytes: std::mem::size_of_val(values) as u64,
                    staging: self.staging.take_times(),
                }
            }
        };
        clock.stop(&copy)?;
        s.wait(&copy.record()?)?;
        tracing::debug!("upload_z {report}");
        self.last_moved += report.bytes;
        self.last_z = Some(report);
        Ok(z)
    }

    /// Uploads z = (inputs, aux) and evaluates a, b, c into three zeroed
    /// `n`-long buffers on the device; returns them and the aux values
    /// (z's tail, for L, A and B).
    pub(crate) fn device_abc(
        &mut self,
        matrices: &AbcMatrices<'_>,
        w: &Synthesized,
        n: usize,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<([DeviceBuffer<FrLimbs>; 3], DeviceBuffer<FrLimbs>)> {
        let s = self.stream.clone();
        let inputs = w.input_assignment.len();
        let z = self.upload_z(w, clock)?;
        clock.start(&s, "abc")?;
        let mut classes = s.alloc::<u8>(z.len())?;
        let mut out = [s.alloc(n)?, s.alloc(n)?, s.alloc(n)?];
        {
            let [a, b, c] = &mut out;
            match matrices {
                AbcMatrices::Resident(m) => m.evaluate(&s, &z, &mut classes, [a, b, c])?,
                AbcMatrices::Streamed(r1cs, terms, pinned) => {
                    let host = HostSide::start(self, pinned.is_some());
                    let streamed = streamed_from(&s, r1cs, pinned.as_deref())?;
                    let copy = self.copy.clone();
                    let mut io = Streaming {
                        compute: &s,
                        copy: &copy,
                        staging: &mut self.staging,
                    };
                    streamed.evaluate(&mut io, &z, &mut classes, [a, b, c], *terms)?;
                    host.log(self, "abc", matrix_bytes(r1cs));
                }
            }
        }
        drop(classes);
        // L, A and B read the aux values where they are, in z's tail.
        let dl = z.into_suffix(inputs)?;
        debug_assert_eq!(dl.len(), w.num_aux());
        clock.stop(&s)?;
        Ok((out, dl))
    }

    /// [`Worker::device_abc`] for the lean H polynomial: z uploaded and
    /// classified once, then a, b and c evaluated one at a time inside
    /// [`Worker::lean_h`], which folds each before the next is made. Returns
    /// the H coefficients and the aux values (z's tail).
    pub(crate) fn device_abc_lean(
        &mut self,
        matrices: &AbcMatrices<'_>,
        w: &Synthesized,
        n: usize,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<(DeviceBuffer<FrLimbs>, DeviceBuffer<FrLimbs>)> {
        let s = self.stream.clone();
        let inputs = w.input_assignment.len();
        let z = self.upload_z(w, clock)?;
        clock.start(&s, "h_poly")?;
        let mut classes = s.alloc::<u8>(z.len())?;
        let h = match matrices {
            AbcMatrices::Resident(m) => {
                m.classify(&s, &z, &mut classes)?;
                self.lean_h(n, |_, which, out| {
                    m.evaluate_classified(&s, &z, &classes, which, out)
                })?
            }
            AbcMatrices::Streamed(r1cs, terms, pinned) => {
                let host = HostSide::start(self, pinned.is_some());
                let streamed = streamed_from(&s, r1cs, pinned.as_deref())?;
                streamed.classify(&s, &z, &mut classes)?;
                let copy = self.copy.clone();
                let h = self.lean_h(n, |worker, which, out| {
                    let mut io = Streaming {
                        compute: &s,
                        copy: &copy,
                        staging: &mut worker.staging,
                    };
                    streamed.evaluate_classified(&mut io, &z, &classes, which, out, *terms)
                })?;
                host.log(self, "h_poly", matrix_bytes(r1cs));
                h
            }
        };
        drop(classes);
        clock.stop(&s)?;
        let dl = z.into_suffix(inputs)?;
        debug_assert_eq!(dl.len(), w.num_aux());
        Ok((h, dl))
    }
}

/// A recording's three matrices as cuzk-cuda's SpMV takes them (resident
/// or streamed).
pub fn host_matrices<'a>(r1cs: &R1csRef<'a>) -> [HostMatrix<'a>; 3] {
    [
        host_matrix(&r1cs.a),
        host_matrix(&r1cs.b),
        host_matrix(&r1cs.c),
    ]
}

/// The host's share of a stage that streams the matrices (`cuzk_gpu::matrices`
/// at info, once per partition): filling the pinned staging buffers (the
/// rows rebased and checked in the same pass), waiting for a buffer's
/// previous copy, and allocations waiting for device memory that queued
/// work still held. What the stage's time is made of beyond its kernels.
struct HostSide {
    start: Instant,
    fence: std::time::Duration,
    pinned: bool,
}

impl HostSide {
    fn start(w: &mut Worker, pinned: bool) -> HostSide {
        w.staging.take_times();
        HostSide {
            start: Instant::now(),
            fence: cuzk_cuda::fence_wait_on_this_thread(),
            pinned,
        }
    }

    /// Logs the host's share (the stage's queued work may still run).
    fn log(self, w: &mut Worker, stage: &str, bytes: u64) {
        w.last_moved += bytes;
        let t = w.staging.take_times();
        tracing::info!(
            "{stage} with the matrices streamed ({}, {}): host {:.3} s, of it filling the \
             staging buffers {:.3} s, waiting for their copies {:.3} s, allocations waiting \
             for device memory {:.3} s",
            cuzk_arena::human(bytes),
            match self.pinned {
                true => "from pinned host memory",
                false => "through the staging buffers",
            },
            self.start.elapsed().as_secs_f64(),
            t.fill.as_secs_f64(),
            t.wait.as_secs_f64(),
            (cuzk_cuda::fence_wait_on_this_thread() - self.fence).as_secs_f64()
        );
    }
}
