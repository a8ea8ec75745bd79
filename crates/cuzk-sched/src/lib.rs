#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use cuzk_pipeline::{
    priority_channel, DeviceWorker, EngineConfig, HostBudget, HostLoan, Intake, Job, JobHandle,
    JobId, JobState, Meters, MetricsSnapshot, PriorityReceiver, PrioritySender, ProvedPartition,
    Provers, Scheduler, StageContext, StartError, SubmitError, SynthesizedPartition, Timeline,
};

/// The pipelined engine: a synthesis pool, prover workers per device and an
/// epilogue pool, connected by bounded priority channels; see the
/// [crate documentation](crate).
#[derive(Debug)]
pub struct Engine {
    intake: Arc<Intake>,
    /// Every device's prover backends: what a partition's footprint is sized for.
    provers: Provers,
    ctx: StageContext,
    meters: Arc<Meters>,
    next_id: AtomicU64,
    verify: bool,
    /// Kept to read queue depths (receivers do not keep the senders' side
    /// connected, so shutdown still drains).
    to_provers: PriorityReceiver<SynthesizedPartition>,
    to_epilogue: PriorityReceiver<ProvedPartition>,
    /// Synthesis workers first, then provers, then epilogue workers: the
    /// order they stop in.
    threads: Vec<JoinHandle<()>>,
}

impl Engine {
    fn spawn(name: String, body: impl FnOnce(String) + Send + 'static) -> JoinHandle<()> {
        std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || body(name))
            .expect("spawning an engine thread")
    }

    fn synthesis_worker(
        intake: Arc<Intake>,
        ctx: StageContext,
        provers: PrioritySender<SynthesizedPartition>,
    ) -> impl FnOnce(String) + Send + 'static {
        move |name| {
            while let Some(admitted) = intake.next() {
                let Some(witness) = admitted.synthesize(&ctx, &name) else {
                    continue;
                };
                witness.mark_queued(&ctx, &name);
                // Blocks while the provers' lane is full: backpressure.
                if let Err(lost) = provers.send(witness.priority(), witness) {
                    // Only if every prover thread died, which steps prevent.
                    lost.0.job.abandon();
                    break;
                }
            }
        }
    }

    /// One prover thread of a device. `forming` is the device's: held from
    /// taking a partition until its batch is formed (its room on the
    /// device reserved and the queued partitions taken), so that while one
    /// prover waits for the device with a batch to form, the device's other
    /// provers take nothing from the queue, and what queues meanwhile joins
    /// that batch.
    fn prover_worker(
        on: DeviceWorker,
        forming: Arc<parking_lot::Mutex<()>>,
        ctx: StageContext,
        inbox: PriorityReceiver<SynthesizedPartition>,
        epilogue: PrioritySender<ProvedPartition>,
    ) -> impl FnOnce(String) + Send + 'static {
        move |name| {
            // A partition taken while forming a batch that could not join it.
            let mut carried: Option<SynthesizedPartition> = None;
            loop {
                let former = forming.lock();
                let Some(first) = carried.take().or_else(|| inbox.recv()) else {
                    break;
                };
                // A batch forms from partitions already queued, never by
                // waiting for more (batch_room is 1 for a CRITICAL one).
                // Its room on the device is reserved first: while another
                // prover's partition holds the device, the partitions
                // queued meanwhile join this batch instead of each forming
                // their own (a 16 GiB card holds one partition at a time).
                let room = first.batch_room(&on);
                let reserved = match room {
                    1 => None,
                    _ => first.reserve_batch(&on, room),
                };
                let mut batch = vec![first];
                while batch.len() < room {
                    match inbox.try_recv() {
                        Some(w) if batch[0].batches_with(&w) => batch.push(w),
                        Some(w) => {
                            carried = Some(w);
                            break;
                        }
                        None => break,
                    }
                }
                // One more urgent than the batch goes first.
                let urgent = carried.take_if(|w| w.priority().rank() < batch[0].priority().rank());
                // The urgent one needs the device first: the batch's room
                // is given back and taken again after it.
                let reserved = reserved.filter(|_| urgent.is_none());
                drop(former);
                let mut proved = Vec::with_capacity(batch.len() + 1);
                if let Some(w) = urgent {
                    proved.extend(w.prove(&on, &ctx, &name));
                }
                match (batch.len(), reserved) {
                    (1, ticket) => {
                        drop(ticket);
                        proved.extend(batch.pop().and_then(|w| w.prove(&on, &ctx, &name)))
                    }
                    (_, Some(ticket)) => proved.extend(SynthesizedPartition::prove_batch_admitted(
                        batch, ticket, &on, &ctx, &name,
                    )),
                    (_, None) => {
                        proved.extend(SynthesizedPartition::prove_batch(batch, &on, &ctx, &name))
                    }
                }
                for p in proved {
                    if let Err(lost) = epilogue.send(p.priority(), p) {
                        lost.0.job.abandon();
                        return;
                    }
                }
            }
        }
    }

    fn epilogue_worker(
        ctx: StageContext,
        inbox: PriorityReceiver<ProvedPartition>,
    ) -> impl FnOnce(String) + Send + 'static {
        move |name| {
            while let Some(proved) = inbox.recv() {
                proved.finish(&ctx, &name);
            }
        }
    }
}

impl Engine {
    /// What lends this engine's host memory to whatever else lives in it
    /// (the daemon's HOT proving keys), so partitions get the rest.
    pub fn host_lender(&self) -> HostLender {
        HostLender(Arc::clone(&self.intake))
    }
}

/// Lends an engine's host memory ([`Engine::host_lender`]); cheap to clone.
#[derive(Debug, Clone)]
pub struct HostLender(Arc<Intake>);

impl HostBudget for HostLender {
    fn try_borrow(&self, bytes: u64) -> Option<Box<dyn Send + Sync>> {
        self.try_lend(bytes)
            .map(|loan| Box::new(loan) as Box<dyn Send + Sync>)
    }
}

impl HostLender {
    /// Takes `bytes` out of the partitions' budget until the loan drops,
    /// waiting for admitted partitions to leave room; `None` if it could
    /// never fit. See [`Intake::lend`].
    pub fn lend(&self, bytes: u64) -> Option<HostLoan> {
        self.0.lend(bytes)
    }

    /// A loan of `bytes` only if the budget has room for it now; never
    /// waits. See [`Intake::try_lend`].
    pub fn try_lend(&self, bytes: u64) -> Option<HostLoan> {
        self.0.try_lend(bytes)
    }

    /// The most a loan may take: the engine's budget less its reserve.
    pub fn lendable(&self) -> u64 {
        self.0.lendable()
    }
}

impl Scheduler for Engine {
    fn start(config: EngineConfig) -> Result<Self, StartError> {
        config.validate()?;
        let intake = Intake::with_reserve(
            config.memory_budget,
            config.max_in_flight,
            config.host_reserve(),
        );
        let meters = Arc::new(Meters::new([
            config.synthesis_workers,
            config.prover_workers(),
            config.epilogue_workers,
        ]));
        let ctx = StageContext::new(&config, Arc::clone(&meters));
        let (to_provers_tx, to_provers) = priority_channel(config.prover_queue);
        let (to_epilogue_tx, to_epilogue) = priority_channel(config.epilogue_queue);

        let mut threads = Vec::new();
        for i in 0..config.synthesis_workers {
            threads.push(Self::spawn(
                format!("synth-{i}"),
                Self::synthesis_worker(Arc::clone(&intake), ctx.clone(), to_provers_tx.clone()),
            ));
        }
        for (d, device) in config.devices.iter().enumerate() {
            let forming = Arc::new(parking_lot::Mutex::new(()));
            for w in 0..device.workers() {
                threads.push(Self::spawn(
                    format!("{}/w{w}", device.name),
                    Self::prover_worker(
                        device.worker(d, w),
                        Arc::clone(&forming),
                        ctx.clone(),
                        to_provers.clone(),
                        to_epilogue_tx.clone(),
                    ),
                ));
            }
        }
        for i in 0..config.epilogue_workers {
            threads.push(Self::spawn(
                format!("epilogue-{i}"),
                Self::epilogue_worker(ctx.clone(), to_epilogue.clone()),
            ));
        }
        // The workers hold every sender now: when the synthesis workers stop,
        // the provers' channel disconnects, and so on down the pipeline.
        drop((to_provers_tx, to_epilogue_tx));
        tracing::info!(config = ?config, "cuzk-sched engine started");
        Ok(Engine {
            intake,
            provers: Provers::of(&config),
            ctx,
            meters,
            next_id: AtomicU64::new(0),
            verify: config.verify,
            to_provers,
            to_epilogue,
            threads,
        })
    }

    fn name(&self) -> &'static str {
        "pipelined"
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
        self.meters.snapshot(
            [
                self.intake.queued(),
                self.to_provers.len(),
                self.to_epilogue.len(),
            ],
            self.intake.memory(),
        )
    }

    fn timeline(&self) -> &Arc<Timeline> {
        &self.ctx.timeline
    }

    fn wait_idle(&self) {
        self.intake.wait_idle();
    }

    fn shutdown(self) {
        self.intake.wait_idle();
        // Drop closes the intake and joins the threads.
    }
}

impl Drop for Engine {
    /// Abandons jobs not yet started (they resolve as `Shutdown`), lets
    /// partitions already admitted run to the end, and joins every thread.
    fn drop(&mut self) {
        for job in self.intake.close() {
            job.abandon();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
