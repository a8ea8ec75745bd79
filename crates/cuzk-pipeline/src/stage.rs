//! The stages of one partition and the messages between them.
//!
//! ```text
//!  Intake ──Admitted──▶ synthesize ──SynthesizedPartition──▶ prove ──ProvedPartition──▶ finish
//!  (budget)             (CPU pool)                           (device)                  (verify)
//! ```
//!
//! Two layers, for schedulers to use as they like:
//!
//! * **Stage functions** ([`synthesize_partition`], [`prove_partition`],
//!   [`finish_partition`]): pure work on one partition, panics caught, no
//!   threads, no bookkeeping.
//! * **Steps** ([`Admitted::synthesize`], [`SynthesizedPartition::prove`],
//!   [`ProvedPartition::finish`]): a message in, the next message out (or
//!   `None` when the partition ended). A step skips partitions of finished
//!   jobs, emits the TIMELINE events, keeps the busy meters, releases the
//!   memory reservation in steps as buffers are freed, and reports failures
//!   and proofs to the job. A scheduler that moves these messages between
//!   threads, in priority order, is a correct scheduler.
//!
//! **Architecture Invariant:** stages never spawn threads or own channels;
//! the scheduler owns every thread and channel.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use cuzk_groth16::prover::{
    check_key_shape, finish, prove_with, Backend, BackendFailure, MsmSums, StageTimings,
};
use cuzk_groth16::verifier::verify_proof;
use cuzk_groth16::{Proof, ProvingKey};
use cuzk_synth::{CircuitShape, Synthesized};

use crate::admission::AdmissionTicket;
use crate::config::{DeviceWorker, EngineConfig};
use crate::intake::{Admitted, Reservation};
use crate::job::{PartitionError, PartitionReport, PartitionSource, Priority, Stage, Verification};
use crate::memory::witness_bytes;
use crate::metrics::Meters;
use crate::state::JobState;
use crate::timeline::{EventKind, Timeline};

/// What every step needs from its engine.
#[derive(Clone)]
#[non_exhaustive]
pub struct StageContext {
    /// Where events go.
    pub timeline: Arc<Timeline>,
    /// Busy meters and job counters.
    pub meters: Arc<Meters>,
    /// Verify proofs in the epilogue.
    pub verify: bool,
    /// The backend that proves again when a proof is invalid.
    pub fallback: Arc<dyn Backend>,
}

impl StageContext {
    /// The context for an engine configured by `config`, with its meters.
    pub fn new(config: &EngineConfig, meters: Arc<Meters>) -> Self {
        StageContext {
            timeline: Arc::clone(&config.timeline),
            meters,
            verify: config.verify,
            fallback: Arc::clone(&config.fallback),
        }
    }

    // Events of a partition are emitted before its reservation is dropped,
    // so a partition admitted with the freed memory always appears later in
    // the timeline; the job hears last, so whoever sees it resolve sees the
    // memory back.
    fn discard(&self, job: &JobState, partition: usize, worker: &str, reservation: Reservation) {
        self.timeline
            .emit(job.id(), partition, EventKind::Discarded, worker);
        drop(reservation);
    }

    fn fail(
        &self,
        job: &JobState,
        partition: usize,
        worker: &str,
        reservation: Reservation,
        error: PartitionError,
    ) {
        self.timeline
            .emit(job.id(), partition, EventKind::Failed, worker);
        drop(reservation);
        job.fail(partition, error);
    }
}

impl std::fmt::Debug for StageContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageContext")
            .field("verify", &self.verify)
            .field("fallback", &self.fallback.name())
            .finish_non_exhaustive()
    }
}

/// A synthesized partition on its way to a prover.
#[derive(Debug)]
#[non_exhaustive]
pub struct SynthesizedPartition {
    /// Its job.
    pub job: Arc<JobState>,
    /// Its index in the job.
    pub partition: usize,
    /// The witness.
    pub witness: Synthesized,
    /// The inputs to verify against (present when verification is on).
    pub public_inputs: Option<Vec<Fr>>,
    /// Synthesis wall time.
    pub synthesis: Duration,
    /// Its memory: the witness's actual bytes plus the prover's working set.
    pub reservation: Reservation,
}

/// A proved partition (its MSM sums) on its way to the epilogue.
#[derive(Debug)]
#[non_exhaustive]
pub struct ProvedPartition {
    /// Its job.
    pub job: Arc<JobState>,
    /// Its index in the job.
    pub partition: usize,
    /// The raw MSM sums.
    pub sums: MsmSums,
    /// The backend that computed them.
    pub backend: &'static str,
    /// The device (index in the configuration) it ran on.
    pub device: usize,
    /// The backend's stage timings.
    pub timings: StageTimings,
    /// How the backend ran it ([`cuzk_groth16::prover::Backend::last_run`]).
    pub plan: Option<String>,
    /// The witness's shape (constraints, inputs, aux, densities).
    pub shape: CircuitShape,
    /// Synthesis wall time.
    pub synthesis: Duration,
    /// The witness, kept for a retry when verification is on.
    pub witness: Option<Synthesized>,
    /// The inputs to verify against (present when verification is on).
    pub public_inputs: Option<Vec<Fr>>,
    /// Its memory: the witness when kept, else nothing (but the slot).
    pub reservation: Reservation,
    /// Partitions proved in the same backend call, itself among them (1
    /// alone; more in a batch: [`SynthesizedPartition::prove_batch`]).
    pub batch: usize,
    /// The bytes it moved between host and device, when the backend says
    /// ([`Backend::last_crossed`]).
    pub crossed: Option<u64>,
}

impl Admitted {
    /// The synthesis step: synthesizes the partition (and, when verifying,
    /// its public inputs), then gives back the part of the reservation the
    /// witness did not use.
    pub fn synthesize(self, ctx: &StageContext, worker: &str) -> Option<SynthesizedPartition> {
        let Admitted {
            job,
            partition,
            mut reservation,
        } = self;
        if job.is_finished() {
            ctx.discard(&job, partition, worker, reservation);
            return None;
        }
        ctx.timeline
            .emit(job.id(), partition, EventKind::SynthesisStart, worker);
        let started = Instant::now();
        let result = {
            let _busy = ctx.meters.stage(Stage::Synthesis).busy();
            synthesize_partition(job.source(), partition, ctx.verify)
        };
        let synthesis = started.elapsed();
        let (witness, public_inputs) = match result {
            Ok(out) => out,
            Err(e) => {
                ctx.fail(&job, partition, worker, reservation, e);
                return None;
            }
        };
        if job.is_finished() {
            // Cancelled (or failed elsewhere) while synthesizing.
            drop(witness);
            ctx.discard(&job, partition, worker, reservation);
            return None;
        }
        let (actual, estimate) = (witness_bytes(&witness), job.footprint().witness);
        if actual <= estimate {
            reservation.release(estimate - actual);
        } else {
            tracing::warn!(job = %job.id(), partition, actual, estimate,
                "witness larger than its estimate (does the source presize its vectors?)");
        }
        ctx.timeline
            .emit(job.id(), partition, EventKind::SynthesisEnd, worker);
        Some(SynthesizedPartition {
            job,
            partition,
            witness,
            public_inputs,
            synthesis,
            reservation,
        })
    }
}

impl SynthesizedPartition {
    /// Its job's priority (the lane to queue it on).
    pub fn priority(&self) -> Priority {
        self.job.priority()
    }

    /// Emits `queued_for_prover`; call it when handing the partition to the
    /// provers' queue.
    pub fn mark_queued(&self, ctx: &StageContext, worker: &str) {
        ctx.timeline.emit(
            self.job.id(),
            self.partition,
            EventKind::QueuedForProver,
            worker,
        );
    }

    /// The prove step on one worker of a device: waits for the device's
    /// admission, computes the MSM sums on the worker's backend, gives back
    /// the working set, and the witness too when nothing will verify the
    /// proof.
    pub fn prove(
        self,
        on: &DeviceWorker,
        ctx: &StageContext,
        worker: &str,
    ) -> Option<ProvedPartition> {
        let SynthesizedPartition {
            job,
            partition,
            witness,
            public_inputs,
            synthesis,
            mut reservation,
        } = self;
        if job.is_finished() {
            ctx.discard(&job, partition, worker, reservation);
            return None;
        }
        let ticket = catch_panic(Stage::Prove, || {
            on.backend
                .prepare_key(job.shared_key())
                .map_err(PartitionError::from)?;
            on.admission
                .admit_witness(job.shape(), &witness)
                .map_err(|source| PartitionError::Admission {
                    device: on.device_name.clone(),
                    source,
                })
        });
        let ticket = match ticket {
            Ok(t) => t,
            Err(e) => {
                ctx.fail(&job, partition, worker, reservation, e);
                return None;
            }
        };
        if job.is_finished() {
            drop(ticket);
            ctx.discard(&job, partition, worker, reservation);
            return None;
        }
        ctx.timeline
            .emit(job.id(), partition, EventKind::ProveStart, worker);
        let mut ticket = Some(ticket);
        let mut backend = on.backend.name();
        let mut grown = 0;
        let result = {
            let _busy = ctx.meters.stage(Stage::Prove).busy();
            let admitted = ticket.as_ref().and_then(AdmissionTicket::plan);
            match prove_partition(&*on.backend, job.key(), &witness, admitted) {
                // The device lacked memory for this partition: the partition
                // is fine, so it is proved on the fallback (the CPU) rather
                // than failing its job. Any other backend failure is a
                // device fault and fails the partition: proving elsewhere
                // would hide a broken device.
                Err(PartitionError::Prove(e))
                    if e.backend_failure() == Some(BackendFailure::OutOfDeviceMemory) =>
                {
                    let fallback = ctx.fallback.name();
                    tracing::warn!(job = %job.id(), partition, backend, fallback,
                        error = %crate::ErrorChain(&e),
                        "out of device memory; proving the partition on the fallback");
                    // The device's room is not needed for the fallback, but
                    // the fallback's host working set is (a GPU's is in VRAM).
                    drop(ticket.take());
                    grown = ctx
                        .fallback
                        .host_working_set(job.shape())
                        .saturating_sub(job.footprint().working_set);
                    reservation.grow(grown);
                    backend = fallback;
                    prove_partition(&*ctx.fallback, job.key(), &witness, None)
                }
                other => other,
            }
        };
        // How the backend ran it (the plan a GPU chose), read right after
        // the run on this worker's own backend.
        let ran: &dyn Backend = if backend == on.backend.name() {
            &*on.backend
        } else {
            &*ctx.fallback
        };
        let (plan, crossed) = (ran.last_run(), ran.last_crossed());
        let (sums, timings) = match result {
            Ok(out) => out,
            Err(e) => {
                drop((ticket, witness));
                ctx.fail(&job, partition, worker, reservation, e);
                return None;
            }
        };
        // `prove_end` before the device's room is given back, so a partition
        // admitted into that room starts later in the timeline.
        ctx.timeline
            .emit_prove_end(&[(job.id(), partition)], worker, 1, crossed);
        drop(ticket);
        let done = SynthesizedPartition {
            job,
            partition,
            witness,
            public_inputs,
            synthesis,
            reservation,
        };
        let run = Run {
            backend,
            device: on.device,
            plan,
            grown,
            batch: 1,
            crossed,
        };
        Some(done.proved(ctx, sums, timings, run))
    }

    /// The proved partition, after its prove step's end event and with the
    /// device's room given back: the working set released, the witness
    /// kept for a retry when verifying, else recycled.
    fn proved(
        self,
        ctx: &StageContext,
        sums: MsmSums,
        timings: StageTimings,
        run: Run,
    ) -> ProvedPartition {
        let SynthesizedPartition {
            job,
            partition,
            witness,
            public_inputs,
            synthesis,
            mut reservation,
        } = self;
        let shape = witness.shape();
        reservation.release(job.footprint().working_set + run.grown);
        let witness = if ctx.verify {
            Some(witness)
        } else {
            job.source().recycle(partition, witness);
            let rest = reservation.bytes();
            reservation.release(rest);
            None
        };
        ProvedPartition {
            job,
            partition,
            sums,
            backend: run.backend,
            device: run.device,
            timings,
            plan: run.plan,
            shape,
            synthesis,
            witness,
            public_inputs,
            reservation,
            batch: run.batch,
            crossed: run.crossed,
        }
    }
}

/// How a partition's prove step ran: the backend that made its sums, on
/// which device, its plan, the host bytes its reservation grew by (a
/// fallback's working set), and the batch's size.
struct Run {
    backend: &'static str,
    device: usize,
    plan: Option<String>,
    grown: u64,
    batch: usize,
    crossed: Option<u64>,
}

mod batch;

impl ProvedPartition {
    /// Its job's priority (the lane to queue it on).
    pub fn priority(&self) -> Priority {
        self.job.priority()
    }

    /// The epilogue step: makes the proof, verifies it (proving once more on
    /// the fallback backend if it is invalid), frees the partition's memory
    /// and reports the proof or the error to the job.
    pub fn finish(self, ctx: &StageContext, worker: &str) {
        let ProvedPartition {
            job,
            partition,
            sums,
            backend,
            device,
            timings,
            plan,
            shape,
            synthesis,
            witness,
            public_inputs,
            reservation,
            batch,
            crossed,
        } = self;
        if job.is_finished() {
            drop(witness);
            ctx.discard(&job, partition, worker, reservation);
            return;
        }
        ctx.timeline
            .emit(job.id(), partition, EventKind::EpilogueStart, worker);
        let result = {
            let _busy = ctx.meters.stage(Stage::Epilogue).busy();
            let retry = witness.as_ref().map(|w| (w, &*ctx.fallback));
            let inputs = public_inputs.as_deref().filter(|_| ctx.verify);
            catch_panic(Stage::Epilogue, || {
                finish_partition(&job, partition, &sums, backend, inputs, retry)
            })
        };
        if let Some(witness) = witness {
            job.source().recycle(partition, witness);
        }
        match result {
            Ok((proof, verification)) => {
                ctx.timeline
                    .emit(job.id(), partition, EventKind::EpilogueEnd, worker);
                drop(reservation);
                let backend = match verification {
                    Verification::ValidAfterRetry { retried_on, .. } => retried_on,
                    _ => backend,
                };
                job.complete_partition(
                    partition,
                    proof,
                    PartitionReport {
                        backend,
                        device,
                        verification,
                        timings,
                        plan,
                        shape,
                        synthesis,
                        batch,
                        crossed,
                    },
                );
            }
            Err(e) => ctx.fail(&job, partition, worker, reservation, e),
        }
    }
}

/// Synthesizes partition `index` of `source`, and its public inputs when
/// `with_inputs` (the source's own, else the witness's inputs after ONE).
/// A panic is caught and returned as [`PartitionError::Panic`].
pub fn synthesize_partition(
    source: &dyn PartitionSource,
    index: usize,
    with_inputs: bool,
) -> Result<(Synthesized, Option<Vec<Fr>>), PartitionError> {
    catch_panic(Stage::Synthesis, || {
        let witness = source
            .synthesize(index)
            .map_err(PartitionError::Synthesis)?;
        let inputs = if with_inputs {
            let own = source
                .public_inputs(index)
                .map_err(PartitionError::PublicInputs)?;
            Some(own.unwrap_or_else(|| witness.input_assignment[1..].to_vec()))
        } else {
            None
        };
        Ok((witness, inputs))
    })
}

/// Checks the witness against the key and computes its MSM sums on
/// `backend`, under the plan its device's admission made when there is one
/// (`admitted`, from [`AdmissionTicket::plan`]). A panic is caught and
/// returned as [`PartitionError::Panic`].
pub fn prove_partition(
    backend: &dyn Backend,
    key: &ProvingKey,
    witness: &Synthesized,
    admitted: Option<&(dyn Any + Send + Sync)>,
) -> Result<(MsmSums, StageTimings), PartitionError> {
    catch_panic(Stage::Prove, || {
        check_key_shape(key, &witness.shape())?;
        let mut timings = StageTimings::default();
        let sums = match admitted {
            Some(plan) => backend.msm_sums_admitted(key, witness, &mut timings, plan)?,
            None => backend.msm_sums(key, witness, &mut timings)?,
        };
        Ok((sums, timings))
    })
}

/// The epilogue of partition `index` of `job`: the proof from `sums` with the
/// job's `(r, s)`; when `public_inputs` is given, verified against them, and
/// if invalid, proved again from the `retry` witness on the `retry` backend
/// and verified again. An invalid proof is logged at error level either way.
pub fn finish_partition(
    job: &JobState,
    index: usize,
    sums: &MsmSums,
    backend: &'static str,
    public_inputs: Option<&[Fr]>,
    retry: Option<(&Synthesized, &dyn Backend)>,
) -> Result<(Proof, Verification), PartitionError> {
    let (r, s) = job.randomness(index);
    let proof = finish(job.key(), sums, r, s)?;
    let (Some(inputs), Some(pvk)) = (public_inputs, job.verifying_key()) else {
        return Ok((proof, Verification::Skipped));
    };
    if verify_proof(pvk, &proof, inputs)? {
        return Ok((proof, Verification::Valid));
    }
    let Some((witness, fallback)) = retry else {
        tracing::error!(job = %job.id(), label = job.label(), partition = index, backend,
            "INVALID PROOF, and no witness to retry with");
        return Err(PartitionError::InvalidProof {
            backend,
            retried_on: "nothing",
        });
    };
    let retried_on = fallback.name();
    tracing::error!(job = %job.id(), label = job.label(), partition = index, backend,
        retried_on, "INVALID PROOF from backend; proving the partition again");
    let again = prove_with(fallback, job.key(), witness, r, s)?;
    if verify_proof(pvk, &again.proof, inputs)? {
        tracing::error!(job = %job.id(), label = job.label(), partition = index, backend,
            retried_on, "retry made a valid proof; the first backend is suspect");
        Ok((
            again.proof,
            Verification::ValidAfterRetry {
                invalid_from: backend,
                retried_on,
            },
        ))
    } else {
        tracing::error!(job = %job.id(), label = job.label(), partition = index, backend,
            retried_on, "INVALID PROOF again after the retry; failing the job");
        Err(PartitionError::InvalidProof {
            backend,
            retried_on,
        })
    }
}

/// Runs `f`, turning a panic into [`PartitionError::Panic`] for `stage`.
pub fn catch_panic<T>(
    stage: Stage,
    f: impl FnOnce() -> Result<T, PartitionError>,
) -> Result<T, PartitionError> {
    // Unwind safety: a stage only reads shared state (keys, the job's
    // immutable parts) and writes its own locals; the job's mutable slot is
    // behind a lock that is not held while stage code runs.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(PartitionError::Panic {
            stage,
            message: panic_message(&*payload),
        })
    })
}

/// The text of a panic payload (`&str` or `String`; anything else is named).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
