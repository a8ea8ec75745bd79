//! A GPU that faults is taken out of service: every backend of a CUDA
//! device is wrapped in a [`Guarded`] backend sharing the device's
//! [`DeviceHealth`]. The first unrecoverable fault (a driver or kernel
//! error: `BackendFailure::Fault`) marks the device out of service, logs it
//! and counts it; that partition and every later one sent to the device
//! are answered "out of device memory", which the engine proves on its
//! fallback (the CPU) instead of failing the job. The device is never
//! retried until the daemon restarts; the status and metrics name it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cuzk_groth16::prover::{Backend, BackendFailure, MsmSums, ProveError, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;
use parking_lot::Mutex;

/// Whether a device is in service, shared by its backends.
#[derive(Debug)]
pub(crate) struct DeviceHealth {
    device: String,
    fault: Mutex<Option<String>>,
    partitions_diverted: AtomicU64,
}

impl DeviceHealth {
    /// A device named `device`, in service.
    pub(crate) fn new(device: impl Into<String>) -> Arc<DeviceHealth> {
        Arc::new(DeviceHealth {
            device: device.into(),
            fault: Mutex::new(None),
            partitions_diverted: AtomicU64::new(0),
        })
    }

    /// The fault that took the device out of service, if one did.
    pub(crate) fn out_of_service(&self) -> Option<String> {
        self.fault.lock().clone()
    }

    /// Partitions sent to the device since and proved on the fallback.
    #[cfg(test)]
    pub(crate) fn partitions_diverted(&self) -> u64 {
        self.partitions_diverted.load(Ordering::Relaxed)
    }

    fn take_out(&self, why: &str) {
        let mut fault = self.fault.lock();
        if fault.is_none() {
            tracing::error!(device = %self.device, fault = %why,
                "the device faulted: it is out of service until the daemon restarts; its partitions are proved on the fallback");
            *fault = Some(why.to_string());
        }
    }
}

/// A device's backend behind its [`DeviceHealth`].
pub(crate) struct Guarded {
    inner: Arc<dyn Backend>,
    health: Arc<DeviceHealth>,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("inner", &self.inner.name())
            .field("health", &self.health)
            .finish()
    }
}

impl Guarded {
    /// `inner`, answering for the device of `health`.
    pub(crate) fn new(inner: Arc<dyn Backend>, health: Arc<DeviceHealth>) -> Arc<Guarded> {
        Arc::new(Guarded { inner, health })
    }

    fn diverted(&self, why: String) -> ProveError {
        self.health
            .partitions_diverted
            .fetch_add(1, Ordering::Relaxed);
        ProveError::backend(
            self.inner.name(),
            BackendFailure::OutOfDeviceMemory,
            format!(
                "{} is out of service ({why}); proving on the fallback",
                self.health.device
            ),
        )
    }
}

impl Backend for Guarded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn msm_sums(
        &self,
        key: &ProvingKey,
        witness: &Synthesized,
        timings: &mut StageTimings,
    ) -> Result<MsmSums, ProveError> {
        self.guarded(|inner| inner.msm_sums(key, witness, timings))
    }

    /// The inner backend's, so a GPU runs the plan its admission reserved
    /// room for.
    fn msm_sums_admitted(
        &self,
        key: &ProvingKey,
        witness: &Synthesized,
        timings: &mut StageTimings,
        admitted: &(dyn std::any::Any + Send + Sync),
    ) -> Result<MsmSums, ProveError> {
        self.guarded(|inner| inner.msm_sums_admitted(key, witness, timings, admitted))
    }

    fn prepare_key(&self, key: &Arc<ProvingKey>) -> Result<(), ProveError> {
        self.inner.prepare_key(key)
    }

    fn last_run(&self) -> Option<String> {
        self.inner.last_run()
    }

    fn last_batch(&self) -> Option<usize> {
        self.inner.last_batch()
    }

    fn last_crossed(&self) -> Option<u64> {
        self.inner.last_crossed()
    }

    fn host_working_set(&self, shape: &cuzk_synth::CircuitShape) -> u64 {
        self.inner.host_working_set(shape)
    }

    fn batch_room(&self, key: &ProvingKey, witness: &Synthesized) -> usize {
        match self.health.out_of_service() {
            Some(_) => 1,
            None => self.inner.batch_room(key, witness),
        }
    }

    fn most_batch_room(&self) -> usize {
        self.inner.most_batch_room()
    }

    fn msm_sums_batch(
        &self,
        key: &ProvingKey,
        witnesses: &[&Synthesized],
        timings: &mut [StageTimings],
        admitted: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> Result<Vec<MsmSums>, ProveError> {
        self.guarded(|inner| inner.msm_sums_batch(key, witnesses, timings, admitted))
    }
}

impl Guarded {
    /// `run` on the inner backend unless the device is out of service; a
    /// device fault takes it out of service.
    fn guarded<T>(
        &self,
        run: impl FnOnce(&dyn Backend) -> Result<T, ProveError>,
    ) -> Result<T, ProveError> {
        if let Some(why) = self.health.out_of_service() {
            return Err(self.diverted(why));
        }
        match run(&*self.inner) {
            Err(e) if e.backend_failure() == Some(BackendFailure::Fault) => {
                let why = cuzk_pipeline::ErrorChain(&e).to_string();
                self.health.take_out(&why);
                Err(self.diverted(why))
            }
            other => other,
        }
    }
}

/// `device` with each backend behind `health`.
pub(crate) fn guard(
    mut device: cuzk_pipeline::Device,
    health: &Arc<DeviceHealth>,
) -> cuzk_pipeline::Device {
    device.backends = device
        .backends
        .into_iter()
        .map(|b| Guarded::new(b, Arc::clone(health)) as Arc<dyn Backend>)
        .collect();
    device
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_pipeline::testing::{
        demo_inputs, demo_job, demo_source, verify_demo_output, BackendFault, FaultyBackend,
    };
    use cuzk_pipeline::{Device, EngineConfig, Scheduler};

    #[test]
    fn a_faulting_gpu_is_taken_out_of_service_and_its_partitions_prove_elsewhere() {
        let faulty = FaultyBackend::in_vram();
        // Partition 1 of the first job faults the device; a partition of the
        // second job would panic if the device were still used.
        faulty.inject(demo_inputs(10, 100, 1), BackendFault::Error);
        faulty.inject(demo_inputs(10, 200, 0), BackendFault::Panic);
        let health = DeviceHealth::new("cuda-0");
        let device = guard(
            Device::per_worker("cuda-0", vec![faulty as Arc<dyn Backend>]),
            &health,
        );
        let mut config = EngineConfig::default();
        config.devices = vec![device];
        config.memory_budget = 1 << 30;
        let engine = cuzk_sched::Engine::start(config).unwrap();

        let first = engine
            .submit(demo_job(10, demo_source(10, 100, 3), 1))
            .unwrap()
            .wait()
            .expect("the job completes: the faulted partition is proved on the fallback");
        assert!(verify_demo_output(&first, 10, 100).iter().all(|v| *v));
        assert_eq!(first.partitions[1].backend, "cpu");
        let why = health.out_of_service().expect("out of service");
        assert!(why.contains("injected fault: backend error"), "{why}");

        let second = engine
            .submit(demo_job(10, demo_source(10, 200, 2), 2))
            .unwrap()
            .wait()
            .expect("the device is not used again");
        assert!(verify_demo_output(&second, 10, 200).iter().all(|v| *v));
        assert!(second.partitions.iter().all(|p| p.backend == "cpu"));
        let on_cpu = first
            .partitions
            .iter()
            .chain(&second.partitions)
            .filter(|p| p.backend == "cpu")
            .count();
        assert_eq!(health.partitions_diverted(), on_cpu as u64);
    }
}
