#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use cuzk_pipeline::{
    EngineConfig, Intake, Job, JobHandle, JobId, JobState, Meters, MetricsSnapshot, Provers,
    Scheduler, StageContext, StartError, SubmitError, Timeline,
};
use parking_lot::{Condvar, Mutex};

/// How often the feeder looks at the intake while the worker is busy: the
/// intake does not signal outside its crate when a partition ends, so the
/// feeder asks. It bounds the idle gap between two jobs, nothing else.
const FEED_POLL: Duration = Duration::from_millis(2);

/// Shortest job first, within each priority class, on one worker.
///
/// A job's length is the constraint count of its circuit: the time one of its
/// partitions holds the worker. Whenever the worker is idle, the feeder thread
/// hands the intake the waiting job that is most urgent by
/// [`cuzk_pipeline::Priority`], and of those the shortest; jobs of equal
/// length keep their submission order (so the FIFO clause of the contract
/// holds wherever lengths are equal, and the shared priority suite passes).
/// A job once handed over runs all its partitions before the next is chosen
/// (non-preemptive, as the textbook SJF).
///
/// Of [`EngineConfig`] it uses what the serial reference does: the devices
/// (their workers in turn, one partition at a time), the memory budget (checked
/// at submission), verification, the fallback and the timeline.
#[derive(Debug)]
pub struct ShortestJobFirst {
    waiting: Arc<Waiting>,
    intake: Arc<Intake>,
    provers: Provers,
    ctx: StageContext,
    meters: Arc<Meters>,
    next_id: AtomicU64,
    verify: bool,
    threads: Vec<JoinHandle<()>>,
}

/// Jobs submitted and not yet handed to the intake.
#[derive(Debug, Default)]
struct Waiting {
    jobs: Mutex<WaitingJobs>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct WaitingJobs {
    jobs: Vec<Arc<JobState>>,
    closed: bool,
}

impl WaitingJobs {
    /// Drops resolved (cancelled) jobs, then takes the most urgent class's
    /// shortest job, the earliest submitted of equal ones.
    fn take_next(&mut self) -> Option<Arc<JobState>> {
        self.jobs.retain(|j| !j.is_finished());
        let best = self
            .jobs
            .iter()
            .enumerate()
            .min_by_key(|(_, j)| (j.priority().rank(), j.shape().num_constraints, j.id().0))?
            .0;
        Some(self.jobs.remove(best))
    }

    /// Partitions of live jobs.
    fn partitions(&self) -> usize {
        self.jobs
            .iter()
            .filter(|j| !j.is_finished())
            .map(|j| j.partitions())
            .sum()
    }
}

/// Whether nothing is queued in the intake and no partition is admitted.
fn intake_idle(intake: &Intake) -> bool {
    let memory = intake.memory();
    memory.partitions_queued == 0 && memory.partitions_in_flight == 0
}

impl Scheduler for ShortestJobFirst {
    fn start(config: EngineConfig) -> Result<Self, StartError> {
        config.validate()?;
        let intake = Intake::with_reserve(config.memory_budget, 1, config.host_reserve());
        let meters = Arc::new(Meters::new([1, 1, 1]));
        let ctx = StageContext::new(&config, Arc::clone(&meters));
        let waiting = Arc::new(Waiting::default());

        let feeder = {
            let (waiting, intake) = (Arc::clone(&waiting), Arc::clone(&intake));
            std::thread::Builder::new()
                .name("cuzk-sjf-feed".into())
                .spawn(move || loop {
                    let mut w = waiting.jobs.lock();
                    if w.closed {
                        return;
                    }
                    // Chosen only when the worker has nothing: a job handed over
                    // earlier could not be overtaken by a shorter one arriving later.
                    if intake_idle(&intake) {
                        if let Some(job) = w.take_next() {
                            // Under the lock, so `wait_idle` never sees the job in neither place.
                            if intake.push(&job).is_err() {
                                job.abandon();
                            }
                            continue;
                        }
                    }
                    waiting.changed.wait_for(&mut w, FEED_POLL);
                })
                .expect("spawning the feeder thread")
        };

        let worker = {
            let (intake, ctx) = (Arc::clone(&intake), ctx.clone());
            let workers: Vec<_> = config
                .devices
                .iter()
                .enumerate()
                .flat_map(|(d, device)| (0..device.workers()).map(move |w| device.worker(d, w)))
                .collect();
            std::thread::Builder::new()
                .name("cuzk-sjf".into())
                .spawn(move || {
                    let mut turn = 0usize;
                    while let Some(admitted) = intake.next() {
                        let Some(witness) = admitted.synthesize(&ctx, "sjf") else {
                            continue;
                        };
                        witness.mark_queued(&ctx, "sjf");
                        let on = &workers[turn % workers.len()];
                        turn += 1;
                        let Some(proved) = witness.prove(on, &ctx, "sjf") else {
                            continue;
                        };
                        proved.finish(&ctx, "sjf");
                    }
                })
                .expect("spawning the worker thread")
        };

        Ok(ShortestJobFirst {
            waiting,
            intake,
            provers: Provers::of(&config),
            ctx,
            meters,
            next_id: AtomicU64::new(0),
            verify: config.verify,
            threads: vec![feeder, worker],
        })
    }

    fn name(&self) -> &'static str {
        "shortest-job-first"
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
        let mut w = self.waiting.jobs.lock();
        if w.closed {
            return Err(SubmitError::ShutDown);
        }
        w.jobs.push(Arc::clone(&state));
        drop(w);
        self.waiting.changed.notify_all();
        Ok(state.handle())
    }

    fn metrics(&self) -> MetricsSnapshot {
        let waiting = self.waiting.jobs.lock().partitions();
        let mut memory = self.intake.memory();
        memory.partitions_queued += waiting;
        self.meters
            .snapshot([self.intake.queued() + waiting, 0, 0], memory)
    }

    fn timeline(&self) -> &Arc<Timeline> {
        &self.ctx.timeline
    }

    fn wait_idle(&self) {
        let mut w = self.waiting.jobs.lock();
        while w.partitions() > 0 || !intake_idle(&self.intake) {
            self.waiting.changed.wait_for(&mut w, FEED_POLL);
        }
    }

    fn shutdown(self) {
        self.wait_idle();
        // Drop closes both queues and joins the threads.
    }
}

impl Drop for ShortestJobFirst {
    /// Abandons jobs not yet started (they resolve as `Shutdown`), lets the
    /// running partition finish, and joins the threads.
    fn drop(&mut self) {
        let waiting = {
            let mut w = self.waiting.jobs.lock();
            w.closed = true;
            std::mem::take(&mut w.jobs)
        };
        self.waiting.changed.notify_all();
        for job in waiting.into_iter().chain(self.intake.close()) {
            job.abandon();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
