#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use cuzk_pipeline::{
    EngineConfig, Intake, Job, JobError, JobHandle, JobId, JobOutput, JobState, Meters,
    MetricsSnapshot, Provers, Scheduler, StageContext, StartError, SubmitError, Timeline,
};

/// Proves one job to completion on a [`SerialScheduler`] started for it
/// with `config`, then shuts it down: the whole engine path (the key and
/// budget checks at submission, synthesis, prove, the epilogue's check when
/// `config.verify`) for a caller with one job, a library call or a test.
pub fn prove_one(config: EngineConfig, job: Job) -> Result<JobOutput, ProveOneError> {
    let engine = SerialScheduler::start(config).map_err(ProveOneError::Start)?;
    let handle = engine.submit(job).map_err(ProveOneError::Submit)?;
    let out = handle.wait().map_err(ProveOneError::Job);
    engine.shutdown();
    out
}

/// Why [`prove_one`] returned no proofs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProveOneError {
    /// The configuration was refused.
    #[error("the serial scheduler refused its configuration")]
    Start(#[source] StartError),
    /// The job was refused at submission (key, budget, device).
    #[error(transparent)]
    Submit(SubmitError),
    /// A partition failed, or the job was cancelled.
    #[error(transparent)]
    Job(JobError),
}

/// Every partition, one after the other, on one thread: synthesis, prove,
/// epilogue, then the next most urgent partition.
///
/// Of [`EngineConfig`] it uses the devices (partitions go to every worker of
/// every device in turn, one at a time), the memory budget (checked at
/// submission; one partition at a time never exceeds it), verification, the
/// fallback and the timeline; worker counts, queue bounds and the in-flight
/// limit have no meaning here.
#[derive(Debug)]
pub struct SerialScheduler {
    intake: Arc<Intake>,
    /// Every device's prover backends: what a partition's footprint is sized for.
    provers: Provers,
    ctx: StageContext,
    meters: Arc<Meters>,
    next_id: AtomicU64,
    verify: bool,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler for SerialScheduler {
    fn start(config: EngineConfig) -> Result<Self, StartError> {
        config.validate()?;
        let intake = Intake::with_reserve(config.memory_budget, 1, config.host_reserve());
        let meters = Arc::new(Meters::new([1, 1, 1]));
        let ctx = StageContext::new(&config, Arc::clone(&meters));
        let thread = {
            let intake = Arc::clone(&intake);
            let ctx = ctx.clone();
            // Every worker of every device, used in turn.
            let workers: Vec<_> = config
                .devices
                .iter()
                .enumerate()
                .flat_map(|(d, device)| (0..device.workers()).map(move |w| device.worker(d, w)))
                .collect();
            std::thread::Builder::new()
                .name("cuzk-serial".into())
                .spawn(move || {
                    let mut turn = 0usize;
                    while let Some(admitted) = intake.next() {
                        let Some(witness) = admitted.synthesize(&ctx, "serial") else {
                            continue;
                        };
                        witness.mark_queued(&ctx, "serial");
                        let on = &workers[turn % workers.len()];
                        turn += 1;
                        let Some(proved) = witness.prove(on, &ctx, "serial") else {
                            continue;
                        };
                        proved.finish(&ctx, "serial");
                    }
                })
                .expect("spawning the scheduler thread")
        };
        Ok(SerialScheduler {
            intake,
            provers: Provers::of(&config),
            ctx,
            meters,
            next_id: AtomicU64::new(0),
            verify: config.verify,
            thread: Some(thread),
        })
    }

    fn name(&self) -> &'static str {
        "serial"
    }

    fn submit(&self, job: Job) -> Result<JobHandle, SubmitError> {
        let id = JobId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let budget = self.intake.budget_for(job.priority);
        let state = JobState::prepare(
            id,
            job,
            self.verify,
            budget,
            &self.provers,
            Arc::clone(&self.meters.jobs),
        )?;
        self.intake.push(&state)?;
        Ok(state.handle())
    }

    fn metrics(&self) -> MetricsSnapshot {
        self.meters
            .snapshot([self.intake.queued(), 0, 0], self.intake.memory())
    }

    fn timeline(&self) -> &Arc<Timeline> {
        &self.ctx.timeline
    }

    fn wait_idle(&self) {
        self.intake.wait_idle();
    }

    fn shutdown(self) {
        self.intake.wait_idle();
        // Drop closes the intake and joins the thread.
    }
}

impl Drop for SerialScheduler {
    /// Abandons jobs not yet started (they resolve as `Shutdown`), lets the
    /// running partition finish, and joins the thread.
    fn drop(&mut self) {
        for job in self.intake.close() {
            job.abandon();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
