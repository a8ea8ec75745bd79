//! Test kit for schedulers (feature `conformance`): the committed 2^10 demo
//! key and a generated 2^11 one, a [`Gate`] that holds a stage until a test
//! opens it, and fault injection: [`FaultySource`] (synthesis errors and
//! panics) and [`FaultyBackend`] (backend errors, panics, wrong sums).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use blstrs::{G1Projective, Scalar as Fr};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::prover::{
    Backend, BackendFailure, CpuBackend, MsmSums, ProveError, StageTimings,
};
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{CircuitShape, DemoCircuit, Synthesized};
use group::Group;
use parking_lot::{Condvar, Mutex};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::job::{DemoSource, Job, JobOutput, PartitionSource, SourceError};

/// SHA share of the committed fixture key (`fixtures/demo-k10-sha95.params`).
pub const SHARE: f64 = 0.95;

/// The proving key for demo circuits of `2^log_size` (10: the committed
/// fixture; 11: generated once per process with bellperson's generator, a
/// few seconds), cached.
///
/// # Panics
///
/// For other sizes, or if the fixture is missing.
pub fn demo_key(log_size: u32) -> Arc<ProvingKey> {
    static K10: OnceLock<Arc<ProvingKey>> = OnceLock::new();
    static K11: OnceLock<Arc<ProvingKey>> = OnceLock::new();
    match log_size {
        10 => Arc::clone(K10.get_or_init(|| {
            let path = fixture_path("demo-k10-sha95.params");
            Arc::new(
                ProvingKey::read_from_path(&path, PointCheck::OnCurve)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display())),
            )
        })),
        11 => Arc::clone(K11.get_or_init(|| {
            let circuit = DemoCircuit::new(11, SHARE, 0);
            let key = generate_key(circuit, &mut ChaCha20Rng::seed_from_u64(11))
                .expect("bellperson generates the 2^11 demo key");
            Arc::new(key)
        })),
        other => panic!("no demo key for 2^{other} in the test kit (10 and 11 only)"),
    }
}

/// The prepared verifying key of [`demo_key`], cached.
pub fn demo_pvk(log_size: u32) -> Arc<PreparedVerifyingKey> {
    type Cache = Mutex<Vec<(u32, Arc<PreparedVerifyingKey>)>>;
    static PVKS: OnceLock<Cache> = OnceLock::new();
    let cache = PVKS.get_or_init(Default::default);
    if let Some((_, pvk)) = cache.lock().iter().find(|(k, _)| *k == log_size) {
        return Arc::clone(pvk);
    }
    let pvk = Arc::new(PreparedVerifyingKey::new(&demo_key(log_size).vk));
    cache.lock().push((log_size, Arc::clone(&pvk)));
    pvk
}

/// A path under this crate's `fixtures/`: a link to the workspace's
/// `fixtures/` in the repository, a copy of it in a packaged crate, so the
/// suite runs for a scheduler crate that gets this one from a registry.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A demo source of `partitions` circuits of `2^log_size` from `first_seed`.
pub fn demo_source(log_size: u32, first_seed: u64, partitions: usize) -> Arc<DemoSource> {
    Arc::new(DemoSource::new(log_size, SHARE, first_seed, partitions))
}

/// A job over `source` with the matching demo key, seeded with `first_seed`.
pub fn demo_job(log_size: u32, source: Arc<dyn PartitionSource>, seed: u64) -> Job {
    Job::new(source, demo_key(log_size))
        .seeded(seed)
        .with_verifying_key(demo_pvk(log_size))
}

/// The public inputs of demo partition `index` of a source made by
/// [`demo_source`] with `first_seed`.
pub fn demo_inputs(log_size: u32, first_seed: u64, index: usize) -> Vec<Fr> {
    DemoCircuit::new(log_size, SHARE, first_seed + index as u64).public_inputs()
}

/// Verifies every proof of `out` independently of the engine, against the
/// inputs of a [`demo_source`]`(log_size, first_seed, _)`; one bool per
/// partition.
pub fn verify_demo_output(out: &JobOutput, log_size: u32, first_seed: u64) -> Vec<bool> {
    let pvk = demo_pvk(log_size);
    out.proofs
        .iter()
        .enumerate()
        .map(|(i, proof)| {
            verify_proof(&pvk, proof, &demo_inputs(log_size, first_seed, i))
                .expect("well-formed verification")
        })
        .collect()
}

/// A gate that holds whoever calls [`Gate::pass`] until the test calls
/// [`Gate::open`]; the test can wait until someone is held.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    open: bool,
    held: usize,
}

/// How long a test waits for a gate before failing (instead of hanging CI).
const GATE_TIMEOUT: Duration = Duration::from_secs(120);

impl Gate {
    /// A closed gate.
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    /// Blocks while the gate is closed.
    pub fn pass(&self) {
        let mut st = self.state.lock();
        st.held += 1;
        self.changed.notify_all();
        while !st.open {
            self.changed.wait(&mut st);
        }
    }

    /// Blocks until at least one caller is held (or has passed).
    ///
    /// # Panics
    ///
    /// After two minutes without one: the scheduler never reached the gate.
    pub fn wait_held(&self) {
        let mut st = self.state.lock();
        while st.held == 0 {
            assert!(
                !self.changed.wait_for(&mut st, GATE_TIMEOUT).timed_out(),
                "nobody reached the gate"
            );
        }
    }

    /// Opens the gate for good.
    pub fn open(&self) {
        self.state.lock().open = true;
        self.changed.notify_all();
    }
}

/// The [`PartitionSource`] methods a test wrapper passes to `self.inner`
/// unchanged (each wrapper writes only the ones it alters).
macro_rules! forward_to_inner {
    ($($method:ident),* $(,)?) => {
        $(forward_to_inner!(@ $method);)*
    };
    (@ num_partitions) => {
        fn num_partitions(&self) -> usize {
            self.inner.num_partitions()
        }
    };
    (@ shape) => {
        fn shape(&self) -> CircuitShape {
            self.inner.shape()
        }
    };
    (@ synthesize) => {
        fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError> {
            self.inner.synthesize(index)
        }
    };
    (@ public_inputs) => {
        fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
            self.inner.public_inputs(index)
        }
    };
    (@ recycle) => {
        fn recycle(&self, index: usize, witness: Synthesized) {
            self.inner.recycle(index, witness)
        }
    };
    (@ defers_abc) => {
        fn defers_abc(&self) -> bool {
            self.inner.defers_abc()
        }
    };
    (@ compact_others) => {
        fn compact_others(&self) -> Option<usize> {
            self.inner.compact_others()
        }
    };
}

/// A source whose partition `partition` passes `gate` before synthesizing.
pub struct GatedSource {
    inner: Arc<dyn PartitionSource>,
    gate: Arc<Gate>,
    partition: usize,
}

impl GatedSource {
    /// Gates partition `partition` of `inner`.
    pub fn new(inner: Arc<dyn PartitionSource>, gate: Arc<Gate>, partition: usize) -> Self {
        GatedSource {
            inner,
            gate,
            partition,
        }
    }
}

impl PartitionSource for GatedSource {
    forward_to_inner!(
        num_partitions,
        shape,
        public_inputs,
        recycle,
        defers_abc,
        compact_others
    );
    fn describe(&self) -> String {
        format!("gated({})", self.inner.describe())
    }
    fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError> {
        if index == self.partition {
            self.gate.pass();
        }
        self.inner.synthesize(index)
    }
}

/// What a [`FaultySource`] does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFault {
    /// `synthesize` returns an error.
    SynthesisError,
    /// `synthesize` panics.
    SynthesisPanic,
    /// `public_inputs` returns an error.
    PublicInputsError,
}

/// The message every injected fault carries.
pub const INJECTED: &str = "injected fault";

/// A source whose partition `partition` fails with `fault`.
pub struct FaultySource {
    inner: Arc<dyn PartitionSource>,
    partition: usize,
    fault: SourceFault,
}

impl FaultySource {
    /// Partition `partition` of `inner` fails with `fault`.
    pub fn new(inner: Arc<dyn PartitionSource>, partition: usize, fault: SourceFault) -> Self {
        FaultySource {
            inner,
            partition,
            fault,
        }
    }
}

impl PartitionSource for FaultySource {
    forward_to_inner!(num_partitions, shape, recycle, defers_abc, compact_others);
    fn describe(&self) -> String {
        format!("faulty({:?}, {})", self.fault, self.inner.describe())
    }
    fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError> {
        if index == self.partition {
            match self.fault {
                SourceFault::SynthesisError => {
                    return Err(SourceError::new(format!("{INJECTED}: synthesis error")))
                }
                SourceFault::SynthesisPanic => panic!("{INJECTED}: synthesis panic"),
                SourceFault::PublicInputsError => {}
            }
        }
        self.inner.synthesize(index)
    }
    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        if index == self.partition && self.fault == SourceFault::PublicInputsError {
            return Err(SourceError::new(format!("{INJECTED}: public inputs")));
        }
        self.inner.public_inputs(index)
    }
}

/// A source that notes every witness handed back to it
/// ([`PartitionSource::recycle`]): the partition and the witness's number
/// of aux values, in the order they came.
pub struct RecyclingSource {
    inner: Arc<dyn PartitionSource>,
    returned: Mutex<Vec<(usize, usize)>>,
}

impl RecyclingSource {
    /// Forwards to `inner` and notes what comes back.
    pub fn new(inner: Arc<dyn PartitionSource>) -> Arc<Self> {
        Arc::new(RecyclingSource {
            inner,
            returned: Mutex::new(Vec::new()),
        })
    }

    /// (partition, aux values) of every witness handed back so far.
    pub fn returned(&self) -> Vec<(usize, usize)> {
        self.returned.lock().clone()
    }
}

impl PartitionSource for RecyclingSource {
    forward_to_inner!(
        num_partitions,
        shape,
        synthesize,
        public_inputs,
        defers_abc,
        compact_others
    );
    fn describe(&self) -> String {
        format!("recycling({})", self.inner.describe())
    }
    fn recycle(&self, index: usize, witness: Synthesized) {
        self.returned.lock().push((index, witness.num_aux()));
    }
}

/// What a [`FaultyBackend`] does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendFault {
    /// Returns `ProveError::Backend` with a device fault.
    Error,
    /// Returns `ProveError::Backend` out of device memory.
    OutOfDeviceMemory,
    /// Panics.
    Panic,
    /// Returns sums off by the generator in ΣH: an invalid proof.
    WrongSums,
    /// Passes a gate before computing (holds the worker until opened).
    Gate,
}

/// A backend that misbehaves on the partitions whose public inputs (ONE
/// excluded) are in its trigger list, and otherwise forwards to `inner`.
pub struct FaultyBackend {
    inner: Arc<dyn Backend>,
    faults: Mutex<Vec<(Vec<Fr>, BackendFault)>>,
    gate: Arc<Gate>,
    /// `Some(bytes)`: the host working set it reports (a GPU's is 0).
    host_working_set: Option<u64>,
    /// What [`Backend::batch_room`] says (1 unless set: no batches).
    batch_room: std::sync::atomic::AtomicUsize,
    /// Each [`Backend::msm_sums_batch`] call's partitions, by their first
    /// public input (the demo's seed).
    batches: Mutex<Vec<Vec<Fr>>>,
    /// Whether a batch call proves its members one at a time and says so
    /// ([`Backend::last_batch`]), as a GPU whose pinned pool is not ready.
    one_at_a_time: std::sync::atomic::AtomicBool,
    /// What [`Backend::last_crossed`] says (`None` unless set).
    crossed: Mutex<Option<u64>>,
}

impl FaultyBackend {
    /// Forwards to the CPU backend until told otherwise.
    pub fn new() -> Arc<FaultyBackend> {
        Arc::new(FaultyBackend {
            inner: Arc::new(CpuBackend),
            faults: Mutex::new(Vec::new()),
            gate: Gate::new(),
            host_working_set: None,
            batch_room: std::sync::atomic::AtomicUsize::new(1),
            batches: Mutex::new(Vec::new()),
            one_at_a_time: std::sync::atomic::AtomicBool::new(false),
            crossed: Mutex::new(None),
        })
    }

    /// Like [`FaultyBackend::new`], but reporting no host working set, as a
    /// GPU backend does (its working set is in VRAM): the engine then
    /// reserves only the witness for its partitions.
    pub fn in_vram() -> Arc<FaultyBackend> {
        Arc::new(FaultyBackend {
            inner: Arc::new(CpuBackend),
            faults: Mutex::new(Vec::new()),
            gate: Gate::new(),
            host_working_set: Some(0),
            batch_room: std::sync::atomic::AtomicUsize::new(1),
            batches: Mutex::new(Vec::new()),
            one_at_a_time: std::sync::atomic::AtomicBool::new(false),
            crossed: Mutex::new(None),
        })
    }

    /// Misbehave with `fault` on the partition with these public inputs.
    pub fn inject(&self, public_inputs: Vec<Fr>, fault: BackendFault) {
        self.faults.lock().push((public_inputs, fault));
    }

    /// The gate of [`BackendFault::Gate`].
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Says `room` to [`Backend::batch_room`] from now on: the engine then
    /// proves up to `room` queued partitions of one key in one
    /// [`Backend::msm_sums_batch`] call (each member as `msm_sums` would,
    /// faults included).
    pub fn set_batch_room(&self, room: usize) {
        self.batch_room
            .store(room, std::sync::atomic::Ordering::Relaxed);
    }

    /// From now on a batch call proves its members one at a time and
    /// reports a batch of one ([`Backend::last_batch`]).
    pub fn set_one_at_a_time(&self, on: bool) {
        self.one_at_a_time
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// From now on [`Backend::last_crossed`] says `bytes` (a GPU's count of
    /// what crossed PCIe for the last partition, or each member's share).
    pub fn set_crossed(&self, bytes: Option<u64>) {
        *self.crossed.lock() = bytes;
    }

    /// Every batch proved so far, each as its members' first public inputs.
    pub fn batches(&self) -> Vec<Vec<Fr>> {
        self.batches.lock().clone()
    }

    fn fault_for(&self, witness: &Synthesized) -> Option<BackendFault> {
        let inputs = witness.input_assignment.get(1..)?;
        self.faults
            .lock()
            .iter()
            .find(|(trigger, _)| trigger.as_slice() == inputs)
            .map(|(_, f)| *f)
    }
}

impl Backend for FaultyBackend {
    fn name(&self) -> &'static str {
        "faulty"
    }

    fn msm_sums(
        &self,
        key: &ProvingKey,
        witness: &Synthesized,
        timings: &mut StageTimings,
    ) -> Result<MsmSums, ProveError> {
        match self.fault_for(witness) {
            Some(BackendFault::Error) => Err(ProveError::backend(
                "faulty",
                BackendFailure::Fault,
                format!("{INJECTED}: backend error"),
            )),
            Some(BackendFault::OutOfDeviceMemory) => Err(ProveError::backend(
                "faulty",
                BackendFailure::OutOfDeviceMemory,
                format!("{INJECTED}: out of device memory"),
            )),
            Some(BackendFault::Panic) => panic!("{INJECTED}: backend panic"),
            Some(BackendFault::WrongSums) => {
                let mut sums = self.inner.msm_sums(key, witness, timings)?;
                sums.h += G1Projective::generator();
                Ok(sums)
            }
            Some(BackendFault::Gate) => {
                self.gate.pass();
                self.inner.msm_sums(key, witness, timings)
            }
            None => self.inner.msm_sums(key, witness, timings),
        }
    }

    fn host_working_set(&self, shape: &cuzk_synth::CircuitShape) -> u64 {
        self.host_working_set
            .unwrap_or_else(|| self.inner.host_working_set(shape))
    }

    fn batch_room(&self, _key: &ProvingKey, _witness: &Synthesized) -> usize {
        self.batch_room.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn most_batch_room(&self) -> usize {
        self.batch_room.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn last_crossed(&self) -> Option<u64> {
        *self.crossed.lock()
    }

    fn last_batch(&self) -> Option<usize> {
        let one = self
            .one_at_a_time
            .load(std::sync::atomic::Ordering::Relaxed);
        one.then_some(1)
    }

    fn msm_sums_batch(
        &self,
        key: &ProvingKey,
        witnesses: &[&Synthesized],
        timings: &mut [StageTimings],
        _admitted: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> Result<Vec<MsmSums>, ProveError> {
        let firsts = witnesses
            .iter()
            .map(|w| w.input_assignment.get(1).copied().unwrap_or_default())
            .collect();
        self.batches.lock().push(firsts);
        witnesses
            .iter()
            .zip(timings.iter_mut())
            .map(|(w, t)| self.msm_sums(key, w, t))
            .collect()
    }
}

impl std::fmt::Debug for GatedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedSource")
            .field("inner", &self.inner.describe())
            .field("partition", &self.partition)
            .finish()
    }
}

impl std::fmt::Debug for FaultySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultySource")
            .field("inner", &self.inner.describe())
            .field("partition", &self.partition)
            .field("fault", &self.fault)
            .finish()
    }
}

impl std::fmt::Debug for RecyclingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecyclingSource")
            .field("inner", &self.inner.describe())
            .field("returned", &*self.returned.lock())
            .finish()
    }
}

impl std::fmt::Debug for FaultyBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyBackend")
            .field("inner", &self.inner.name())
            .field("faults", &self.faults.lock().len())
            .finish()
    }
}
