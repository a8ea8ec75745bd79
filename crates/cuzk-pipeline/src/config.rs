//! An engine's configuration: workers per stage, devices, queue bounds, the
//! host-memory budget, verification, and the timeline.

use std::fmt;
use std::sync::Arc;

use cuzk_groth16::prover::{Backend, CpuBackend};
use cuzk_synth::CircuitShape;

use crate::admission::{Admission, AlwaysAdmit};
use crate::intake::HostReserve;
use crate::job::Priority;
use crate::memory::Provers;
use crate::scheduler::StartError;
use crate::timeline::Timeline;
use cuzk_arena::human as format_bytes;

/// One proving device: a backend for each of its workers, and what admits
/// partitions to it. "Devices" are abstract: today CPU backends, later one
/// per GPU, where each worker's backend owns its own CUDA streams while the
/// device's admission (its VRAM arena) is shared by all of them.
#[derive(Clone)]
#[non_exhaustive]
pub struct Device {
    /// A name for logs and timelines ("cpu-0", "cuda-0").
    pub name: String,
    /// One backend per prover worker: as many workers as backends. On the
    /// CPU every worker shares one backend.
    pub backends: Vec<Arc<dyn Backend>>,
    /// Decides when a partition fits on the device.
    pub admission: Arc<dyn Admission>,
}

impl Device {
    /// A device named `name` whose `workers` workers share `backend`, and
    /// that admits everything.
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>, workers: usize) -> Self {
        Device::per_worker(name, vec![backend; workers])
    }

    /// A device with one worker per backend (a GPU: one backend per stream
    /// set), admitting everything until [`Device::with_admission`].
    pub fn per_worker(name: impl Into<String>, backends: Vec<Arc<dyn Backend>>) -> Self {
        Device {
            name: name.into(),
            backends,
            admission: Arc::new(AlwaysAdmit),
        }
    }

    /// The CPU backend as device "cpu-`index`" with `workers` workers.
    pub fn cpu(index: usize, workers: usize) -> Self {
        Device::new(format!("cpu-{index}"), Arc::new(CpuBackend), workers)
    }

    /// Replaces the admission.
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.admission = admission;
        self
    }

    /// Its number of prover workers.
    pub fn workers(&self) -> usize {
        self.backends.len()
    }

    /// What worker `worker` of this device (number `index` in the
    /// configuration) proves with.
    ///
    /// # Panics
    ///
    /// If `worker >= self.workers()`.
    pub fn worker(&self, index: usize, worker: usize) -> DeviceWorker {
        DeviceWorker {
            device: index,
            device_name: self.name.clone(),
            backend: Arc::clone(&self.backends[worker]),
            admission: Arc::clone(&self.admission),
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name)
            .field(
                "backends",
                &self.backends.iter().map(|b| b.name()).collect::<Vec<_>>(),
            )
            .field("admission", &self.admission.usage())
            .finish()
    }
}

/// One prover worker's view of its device: its own backend, the device's
/// shared admission.
#[derive(Clone)]
#[non_exhaustive]
pub struct DeviceWorker {
    /// The device's index in the configuration.
    pub device: usize,
    /// The device's name.
    pub device_name: String,
    /// This worker's backend.
    pub backend: Arc<dyn Backend>,
    /// The device's admission.
    pub admission: Arc<dyn Admission>,
}

impl fmt::Debug for DeviceWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceWorker")
            .field("device", &self.device)
            .field("device_name", &self.device_name)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

/// How an engine is laid out. Every scheduler takes the same configuration;
/// one that has no use for a knob (a serial scheduler has one thread) says so
/// in its docs.
#[derive(Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Synthesis workers (each synthesizes one partition at a time; rayon
    /// runs data-parallel loops inside).
    pub synthesis_workers: usize,
    /// Proving devices (at least one).
    pub devices: Vec<Device>,
    /// Epilogue workers (finish + verify: milliseconds per partition).
    pub epilogue_workers: usize,
    /// Partitions admitted past the intake at once (synthesizing, waiting for
    /// a prover, proving, or in the epilogue).
    pub max_in_flight: usize,
    /// Bound of each priority class's channel from synthesis to the provers.
    pub prover_queue: usize,
    /// Bound of each priority class's channel from the provers to the epilogue.
    pub epilogue_queue: usize,
    /// Host memory the engine may reserve for partitions, bytes (see
    /// [`crate::PartitionFootprint`]). It covers the partitions in flight only: the
    /// proving keys (loaded or mapped by the caller) and the engine's own
    /// few megabytes come on top.
    pub memory_budget: u64,
    /// Bytes of `memory_budget` only partitions of `reserve_class` and more
    /// urgent classes may use (0 by default: no reserve), so a CRITICAL
    /// job's synthesis starts even when lower-class work has taken the rest
    /// (see [`crate::intake`]). Less than the budget.
    pub critical_reserve: u64,
    /// The least urgent class that may use `critical_reserve`
    /// ([`Priority::Critical`] by default; [`Priority::High`] lets WindowPoSt
    /// use it too).
    pub reserve_class: Priority,
    /// Verify every proof before returning it (on by default). An invalid
    /// proof is proved once more on `fallback` and reported at error level.
    pub verify: bool,
    /// The backend of that retry (the CPU backend by default).
    pub fallback: Arc<dyn Backend>,
    /// Where TIMELINE events go (always `tracing`; in memory if recording).
    pub timeline: Arc<Timeline>,
    /// The largest partition the engine is started for: a budget that cannot
    /// hold one of these is refused at start. Without it, the check happens
    /// per job at submission.
    pub largest_partition: Option<CircuitShape>,
}

impl Default for EngineConfig {
    /// One synthesis worker, one CPU device with one worker, one epilogue
    /// worker, 4 partitions in flight, queues of 2, verification on, and a
    /// budget of ¾ of the memory this process may use
    /// ([`crate::host::default_memory_budget`]: cgroup-aware, 8 GiB if unknown).
    fn default() -> Self {
        EngineConfig {
            synthesis_workers: 1,
            devices: vec![Device::cpu(0, 1)],
            epilogue_workers: 1,
            max_in_flight: 4,
            prover_queue: 2,
            epilogue_queue: 2,
            memory_budget: crate::host::default_memory_budget(),
            critical_reserve: 0,
            reserve_class: Priority::Critical,
            verify: true,
            fallback: Arc::new(CpuBackend),
            timeline: Arc::new(Timeline::new()),
            largest_partition: None,
        }
    }
}

impl EngineConfig {
    /// This configuration with room for its devices' batches: the provers'
    /// queue as deep as the most any device's backend takes in one batch
    /// ([`Backend::most_batch_room`]), and partitions in flight for two
    /// such batches and one more per prover, so the next batch fills while
    /// the device proves one (the host budget still bounds what is in
    /// flight). Unchanged where no backend batches.
    ///
    /// [`Backend::most_batch_room`]: cuzk_groth16::prover::Backend::most_batch_room
    pub fn with_batch_room(mut self) -> Self {
        let (room, provers) = self
            .devices
            .iter()
            .map(|d| {
                let room = d.backends.iter().map(|b| b.most_batch_room()).max();
                (room.unwrap_or(1), d.backends.len())
            })
            .fold((1, 0), |(r, p), (room, n)| (r.max(room), p + n));
        if room > 1 {
            self.prover_queue = self.prover_queue.max(room);
            self.max_in_flight = self.max_in_flight.max(2 * room + provers);
        }
        self
    }

    /// The reserve as the intake takes it.
    pub fn host_reserve(&self) -> HostReserve {
        HostReserve {
            bytes: self.critical_reserve,
            class: self.reserve_class,
        }
    }

    /// Total prover workers over all devices.
    pub fn prover_workers(&self) -> usize {
        self.devices.iter().map(Device::workers).sum()
    }

    /// Refuses configurations an engine cannot run: no devices, a stage or
    /// device with no workers, zero bounds, or a budget too small for
    /// `largest_partition`.
    pub fn validate(&self) -> Result<(), StartError> {
        let zero = |what: &'static str, n: usize| {
            if n == 0 {
                Err(StartError::Zero { what })
            } else {
                Ok(())
            }
        };
        if self.devices.is_empty() {
            return Err(StartError::NoDevices);
        }
        zero("synthesis_workers", self.synthesis_workers)?;
        zero("epilogue_workers", self.epilogue_workers)?;
        zero("max_in_flight", self.max_in_flight)?;
        zero("prover_queue", self.prover_queue)?;
        zero("epilogue_queue", self.epilogue_queue)?;
        for d in &self.devices {
            if d.workers() == 0 {
                return Err(StartError::DeviceWithoutWorkers {
                    device: d.name.clone(),
                });
            }
        }
        if self.critical_reserve > 0 && self.critical_reserve >= self.memory_budget {
            return Err(StartError::ReserveTooLarge {
                reserve: self.critical_reserve,
                budget: self.memory_budget,
            });
        }
        if let Some(shape) = &self.largest_partition {
            let f = Provers::of(self).footprint(shape);
            // Every class must be able to run one: the budget less the reserve.
            let budget = self.memory_budget - self.critical_reserve;
            if f.total() > budget {
                return Err(StartError::BudgetTooSmall {
                    budget,
                    needed: f.total(),
                    witness: f.witness,
                    working_set: f.working_set,
                });
            }
        }
        Ok(())
    }
}

impl fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineConfig")
            .field("synthesis_workers", &self.synthesis_workers)
            .field("devices", &self.devices)
            .field("epilogue_workers", &self.epilogue_workers)
            .field("max_in_flight", &self.max_in_flight)
            .field("prover_queue", &self.prover_queue)
            .field("epilogue_queue", &self.epilogue_queue)
            .field("memory_budget", &format_bytes(self.memory_budget))
            .field("critical_reserve", &format_bytes(self.critical_reserve))
            .field("reserve_class", &self.reserve_class)
            .field("verify", &self.verify)
            .field("fallback", &self.fallback.name())
            .field("largest_partition", &self.largest_partition)
            .finish_non_exhaustive()
    }
}
