//! What a user submits and what comes back: [`Job`], its [`PartitionSource`],
//! [`Priority`] and [`Randomness`]; [`JobOutput`] and the errors.
//!
//! A job is one proof request of one circuit: `num_partitions()` independent
//! circuits (Filecoin's PoRep C2 has 10) proved against one key, giving one
//! 192-byte proof each, returned in partition order.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use blstrs::Scalar as Fr;
use cuzk_groth16::prover::{draw_randomness, ProveError, StageTimings};
use cuzk_groth16::verifier::{PreparedVerifyingKey, VerifyError};
use cuzk_groth16::{Proof, ProvingKey};
use cuzk_synth::{CircuitShape, DemoCircuit, Synthesized};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::admission::AdmissionError;

/// A job's number, unique within one engine, in submission order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job-{}", self.0)
    }
}

/// How urgent a job is: the four classes of Curio's wire (`CRITICAL` >
/// `HIGH` > `NORMAL` > `LOW`), each distinct inside the engine. At every
/// free slot (synthesis worker, prover, epilogue) a partition of a class is
/// taken before every queued partition of a lower class; within a class,
/// jobs go in submission order and a job's partitions in index order.
///
/// Curio submits WinningPoSt as `Critical` (a missed block is lost reward),
/// WindowPoSt as `High` (a missed deadline is a fault), PoRep C2 and
/// SnapDeals as `Normal`. Only the classes at or above
/// [`EngineConfig::reserve_class`](crate::EngineConfig::reserve_class) may
/// use the host-memory reserve
/// ([`EngineConfig::critical_reserve`](crate::EngineConfig::critical_reserve)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Priority {
    /// Overtakes every other class; may use the host-memory reserve.
    Critical,
    /// Overtakes `Normal` and `Low`.
    High,
    /// Throughput work (the default).
    #[default]
    Normal,
    /// Runs when nothing else waits.
    Low,
}

impl Priority {
    /// Every class, most urgent first; `ALL[p.rank()] == p`.
    pub const ALL: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Normal,
        Priority::Low,
    ];

    /// 0 for the most urgent class; the index of per-class queues.
    pub const fn rank(self) -> usize {
        match self {
            Priority::Critical => 0,
            Priority::High => 1,
            Priority::Normal => 2,
            Priority::Low => 3,
        }
    }

    /// Whether this class is at least as urgent as `other`.
    pub const fn at_least(self, other: Priority) -> bool {
        self.rank() <= other.rank()
    }

    /// "critical", "high", "normal" or "low", for logs and timelines.
    pub const fn as_str(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a [`PartitionSource`] could not produce a partition: what went wrong
/// in the source's words, and the underlying error when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct SourceError {
    /// What went wrong, for the job's error and the logs.
    pub message: String,
    /// The error that caused it (a synthesis error, an I/O error), if any.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl SourceError {
    /// An error with this message and no underlying error.
    pub fn new(message: impl Into<String>) -> Self {
        SourceError {
            message: message.into(),
            source: None,
        }
    }

    /// An error with this message, caused by `source`.
    pub fn with_source(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        SourceError {
            message: message.into(),
            source: Some(source.into()),
        }
    }
}

impl From<bellperson::SynthesisError> for SourceError {
    fn from(e: bellperson::SynthesisError) -> Self {
        SourceError::with_source("the circuit returned an error", e)
    }
}

/// Something that can synthesize the partitions of one job: demo circuits
/// now, Filecoin PoRep (a C1 output plus its partition circuits) later.
///
/// Every partition of a job has the same [`CircuitShape`] (one key proves
/// them all); it must be known without synthesizing (a PoRep source knows it
/// from the sector size; a demo source computes it), because the key check
/// and the memory reservation happen before any synthesis.
///
/// Implementations are called from any thread, several partitions at once.
pub trait PartitionSource: Send + Sync {
    /// A short description for logs ("demo 2^14 sha 0.95 seed 7").
    fn describe(&self) -> String;

    /// Number of partitions (at least 1).
    fn num_partitions(&self) -> usize;

    /// The shape every partition synthesizes to.
    fn shape(&self) -> CircuitShape;

    /// Synthesizes partition `index` (`0..num_partitions()`). Sizing the
    /// vectors up front (`cuzk_synth::synthesize_with_capacity`) keeps the
    /// memory estimate exact: a vector grown by doubling may hold up to twice
    /// what it stores.
    fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError>;

    /// Whether this source's witnesses leave a, b, c to the prover
    /// (pre-compiled circuits, `Synthesized::deferred`): their host
    /// footprint then holds no a, b, c, and the backend evaluates them.
    fn defers_abc(&self) -> bool {
        false
    }

    /// `Some(others)`: this source's witnesses defer a, b, c and hold their
    /// aux values compact ([`Synthesized::compact_aux`]), with at most about
    /// `others` values other than 0 and 1 each; the engine then reserves
    /// the compact size ([`crate::PartitionFootprint::of_compact_witness`])
    /// rather than 32 bytes a value. `None` (the default): plain values.
    fn compact_others(&self) -> Option<usize> {
        None
    }

    /// The public inputs a verifier checks partition `index` against (ONE
    /// excluded), computed independently of synthesis where possible, so the
    /// epilogue's check also catches a witness with wrong inputs. `None`: use
    /// the inputs the witness recorded.
    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        let _ = index;
        Ok(None)
    }

    /// Takes back partition `index`'s witness once the engine is done with
    /// it: after its proof is made (and verified, when verification is on),
    /// before the partition's memory reservation is released. A source that
    /// reuses vectors keeps what it wants of it (a native PoSt witness
    /// writes over the last one's aux vector, which is already faulted in);
    /// what it keeps is outside the engine's reservations, so such a source
    /// bounds it and its owner counts that bound in its memory budget. The
    /// default drops it. A witness whose partition failed or was discarded
    /// is dropped without coming back.
    fn recycle(&self, index: usize, witness: Synthesized) {
        let _ = index;
        drop(witness);
    }
}

/// Demo circuits ([`DemoCircuit`]): partition `i` is `DemoCircuit::new(log_size,
/// sha_share, first_seed + i)`, so all partitions share one key.
#[derive(Debug, Clone)]
pub struct DemoSource {
    log_size: u32,
    sha_share: f64,
    first_seed: u64,
    partitions: usize,
    shape: CircuitShape,
    in_sequence: bool,
}

impl DemoSource {
    /// `partitions` demo circuits of `2^log_size` constraints.
    ///
    /// # Panics
    ///
    /// As [`DemoCircuit::new`] (size or share out of range).
    pub fn new(log_size: u32, sha_share: f64, first_seed: u64, partitions: usize) -> Self {
        DemoSource {
            log_size,
            sha_share,
            first_seed,
            partitions,
            shape: DemoCircuit::shape_for(log_size, sha_share),
            in_sequence: false,
        }
    }

    /// The same partitions, each synthesized on one thread
    /// ([`DemoCircuit::in_sequence`]): a PoRep-like synthesis profile.
    pub fn in_sequence(mut self) -> Self {
        self.in_sequence = true;
        self
    }

    /// The circuit of partition `index`.
    pub fn circuit(&self, index: usize) -> DemoCircuit {
        let circuit = DemoCircuit::new(
            self.log_size,
            self.sha_share,
            self.first_seed + index as u64,
        );
        if self.in_sequence {
            circuit.in_sequence()
        } else {
            circuit
        }
    }
}

impl PartitionSource for DemoSource {
    fn describe(&self) -> String {
        format!(
            "demo 2^{} sha {} seeds {}..{}{}",
            self.log_size,
            self.sha_share,
            self.first_seed,
            self.first_seed + self.partitions as u64,
            if self.in_sequence {
                ", synthesized in sequence"
            } else {
                ""
            }
        )
    }

    fn num_partitions(&self) -> usize {
        self.partitions
    }

    fn shape(&self) -> CircuitShape {
        self.shape.clone()
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized, SourceError> {
        Ok(cuzk_synth::synthesize_with_capacity(
            self.circuit(index),
            &self.shape,
        )?)
    }

    fn public_inputs(&self, index: usize) -> Result<Option<Vec<Fr>>, SourceError> {
        Ok(Some(self.circuit(index).public_inputs()))
    }
}

/// Where a job's `r` and `s` come from.
///
/// For a job of k partitions, k values of `r` are drawn, then k values of
/// `s` (`Fr::random`), at submission: bellperson's order for a batch, so a
/// `Seeded` job's proofs are byte-identical to
/// `cuzk_groth16::prove_batch` (and so to bellperson's) with
/// `ChaCha20Rng::seed_from_u64(seed)`, whatever order the partitions run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Randomness {
    /// From the operating system: the production setting.
    #[default]
    Fresh,
    /// From `ChaCha20Rng::seed_from_u64(seed)`: reproducible proofs, for tests.
    Seeded(u64),
    /// From `ChaCha20Rng::seed_from_u64(seed)`, drawn batch by batch: the
    /// first `batch` partitions' r then their s, then the next batch's. The
    /// order of a prover that proves its partitions in batches (SnapDeals'
    /// update proofs go in batches of 10), so its seeded proofs are
    /// reproduced byte for byte.
    SeededInBatches {
        /// The seed.
        seed: u64,
        /// Partitions per batch (at least 1).
        batch: usize,
    },
}

impl Randomness {
    /// The `(r, s)` of each of `partitions` partitions, in partition order.
    pub fn draw(self, partitions: usize) -> Vec<(Fr, Fr)> {
        match self {
            Randomness::Fresh => draw_randomness(partitions, &mut rand::rngs::OsRng),
            Randomness::Seeded(seed) => {
                draw_randomness(partitions, &mut ChaCha20Rng::seed_from_u64(seed))
            }
            Randomness::SeededInBatches { seed, batch } => {
                let mut rng = ChaCha20Rng::seed_from_u64(seed);
                let batch = batch.max(1);
                let mut all = Vec::with_capacity(partitions);
                for start in (0..partitions).step_by(batch) {
                    all.extend(draw_randomness(batch.min(partitions - start), &mut rng));
                }
                all
            }
        }
    }
}

/// A proof request: a source of partitions, the key that proves them, and
/// how to treat them.
#[derive(Clone)]
#[non_exhaustive]
pub struct Job {
    /// The partitions.
    pub source: Arc<dyn PartitionSource>,
    /// The proving key; checked against `source.shape()` at submission.
    pub key: Arc<ProvingKey>,
    /// The key's prepared verifying key, for the epilogue's check. Prepare it
    /// once per key and share it; when `None` (and verification is on) it is
    /// prepared at submission.
    pub verifying_key: Option<Arc<PreparedVerifyingKey>>,
    /// Its class ([`Priority::Normal`] unless set).
    pub priority: Priority,
    /// Where `r` and `s` come from.
    pub randomness: Randomness,
    /// A name for logs, timelines and results (defaults to the source's
    /// description).
    pub label: String,
}

impl Job {
    /// A `Normal` job with fresh randomness.
    pub fn new(source: Arc<dyn PartitionSource>, key: Arc<ProvingKey>) -> Self {
        Job {
            label: source.describe(),
            source,
            key,
            verifying_key: None,
            priority: Priority::Normal,
            randomness: Randomness::Fresh,
        }
    }

    /// Sets the priority.
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Draws `r` and `s` from a seeded ChaCha20 (see [`Randomness`]).
    pub fn seeded(mut self, seed: u64) -> Self {
        self.randomness = Randomness::Seeded(seed);
        self
    }

    /// Draws `r` and `s` from a seeded ChaCha20 batch by batch (see
    /// [`Randomness::SeededInBatches`]).
    pub fn seeded_in_batches(mut self, seed: u64, batch: usize) -> Self {
        self.randomness = Randomness::SeededInBatches { seed, batch };
        self
    }

    /// Sets the label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Supplies the prepared verifying key (saves one pairing per job).
    pub fn with_verifying_key(mut self, pvk: Arc<PreparedVerifyingKey>) -> Self {
        self.verifying_key = Some(pvk);
        self
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job")
            .field("label", &self.label)
            .field("partitions", &self.source.num_partitions())
            .field("priority", &self.priority)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

/// How a partition's proof was checked by the epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Verification is turned off: the proof was returned unchecked.
    Skipped,
    /// The proof verified.
    Valid,
    /// The first proof (from `invalid_from`) did NOT verify; the partition was
    /// proved again on `retried_on` and that proof verified. Logged at error
    /// level: a backend made a wrong proof.
    ValidAfterRetry {
        /// The backend whose proof was invalid.
        invalid_from: &'static str,
        /// The backend that proved it again.
        retried_on: &'static str,
    },
}

/// Where one partition went and how long it took.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PartitionReport {
    /// The backend that made the returned proof.
    pub backend: &'static str,
    /// The index of the device (in the engine's configuration) it ran on.
    pub device: usize,
    /// How the proof was checked.
    pub verification: Verification,
    /// The backend's own stage timings (h_poly, msm_h, ...).
    pub timings: StageTimings,
    /// How the backend ran it, when it says ([`cuzk_groth16::prover::Backend::last_run`]:
    /// a GPU's VRAM plan, the key resident or streamed).
    pub plan: Option<String>,
    /// The witness's shape (constraints, inputs, aux, densities).
    pub shape: CircuitShape,
    /// Synthesis wall time.
    pub synthesis: Duration,
    /// Partitions proved in the same backend call, this one among them (1
    /// alone; a batch shares the key's pass over PCIe: a GPU's plan says
    /// "key ... crossed" of each member's share).
    pub batch: usize,
    /// The bytes it moved between host and device (its share of a batch's),
    /// when the backend says: a GPU streaming its key counts the key's
    /// chunks, the aux values, streamed matrices and parked state.
    pub crossed: Option<u64>,
}

/// A finished job: one proof per partition, in partition order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobOutput {
    /// The job.
    pub id: JobId,
    /// Its label.
    pub label: String,
    /// One proof per partition, in partition order.
    pub proofs: Vec<Proof>,
    /// One report per partition, in partition order.
    pub partitions: Vec<PartitionReport>,
    /// From submission to the last partition's epilogue.
    pub latency: Duration,
}

impl JobOutput {
    /// The partitions whose first proof was invalid (and was proved again).
    pub fn retried_partitions(&self) -> Vec<usize> {
        self.partitions
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.verification, Verification::ValidAfterRetry { .. }))
            .map(|(i, _)| i)
            .collect()
    }
}

/// The stages of the pipeline, for errors, metrics and timelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Circuit synthesis (CPU).
    Synthesis,
    /// The MSM sums on a backend (GPU, or CPU).
    Prove,
    /// Randomization, serialization and verification (CPU).
    Epilogue,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 3] = [Stage::Synthesis, Stage::Prove, Stage::Epilogue];

    /// 0, 1, 2 in pipeline order; `ALL[s.index()] == s`.
    pub const fn index(self) -> usize {
        match self {
            Stage::Synthesis => 0,
            Stage::Prove => 1,
            Stage::Epilogue => 2,
        }
    }

    /// "synthesis", "prove" or "epilogue".
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Synthesis => "synthesis",
            Stage::Prove => "prove",
            Stage::Epilogue => "epilogue",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one partition failed (and with it, its job).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// The source could not synthesize it.
    #[error("synthesis failed")]
    Synthesis(#[source] SourceError),
    /// The source could not compute its public inputs.
    #[error("the public inputs could not be computed")]
    PublicInputs(#[source] SourceError),
    /// A stage panicked; the panic was caught and the engine carries on.
    #[error("panic in the {stage} stage: {message}")]
    Panic {
        /// Where.
        stage: Stage,
        /// The panic's message.
        message: String,
    },
    /// The backend (or the key check, or the epilogue) refused.
    #[error(transparent)]
    Prove(#[from] ProveError),
    /// A device refused to admit the partition (it can never fit).
    #[error("device {device} cannot admit the partition")]
    Admission {
        /// The device's name.
        device: String,
        /// Why.
        #[source]
        source: AdmissionError,
    },
    /// Verification could not run (for example a wrong public-input count).
    #[error("verification could not run")]
    Verify(#[from] VerifyError),
    /// The proof did not verify, and neither did the retry.
    #[error("invalid proof from the {backend} backend, and again after retrying on {retried_on}")]
    InvalidProof {
        /// The backend of the first proof.
        backend: &'static str,
        /// The backend of the retry.
        retried_on: &'static str,
    },
}

/// Why a job produced no proofs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The job was cancelled.
    #[error("job cancelled")]
    Cancelled,
    /// One of its partitions failed (the first failure is reported).
    #[error("partition {partition} failed")]
    Partition {
        /// The partition.
        partition: usize,
        /// Why.
        #[source]
        source: PartitionError,
    },
    /// The engine shut down before the job started.
    #[error("the engine shut down before the job finished")]
    Shutdown,
}

/// The outcome of a job.
pub type JobResult = Result<JobOutput, JobError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_randomness_draws_each_batch_r_then_s() {
        let seed = 0x5eed;
        // 12 partitions in batches of 10: the first ten's r, their s, then
        // the last two's r and s, all from one stream.
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut want = draw_randomness(10, &mut rng);
        want.extend(draw_randomness(2, &mut rng));
        let batched = Randomness::SeededInBatches { seed, batch: 10 }.draw(12);
        assert_eq!(batched, want);
        // It is not the one-batch order once there is more than one batch...
        assert_ne!(batched, Randomness::Seeded(seed).draw(12));
        // ...and is exactly it while one batch holds every partition.
        assert_eq!(
            Randomness::SeededInBatches { seed, batch: 10 }.draw(10),
            Randomness::Seeded(seed).draw(10)
        );
        // A batch of 0 is taken as 1, not a hang.
        assert_eq!(
            Randomness::SeededInBatches { seed, batch: 0 }.draw(3),
            Randomness::SeededInBatches { seed, batch: 1 }.draw(3)
        );
    }
}
