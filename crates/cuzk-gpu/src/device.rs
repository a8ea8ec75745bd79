//! One GPU opened once from one configuration ([`GpuDevice::open`]): its
//! VRAM arena reserved (the budget, or what is free less a margin), its
//! workers made, their admission built over the same keys, matrices and
//! settings. And the one place `--backend auto|cuda|cpu` (or a daemon's
//! `backend`) becomes the devices that prove ([`resolve`]).
//!
//! Programs read their settings (flags, config files, the environment) and
//! hand them over here as a [`GpuConfig`]; nothing below reads the
//! environment, so the admission and the workers plan alike by construction.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use cuzk_cuda::{DeviceInfo, Gpu, VramBudget};
use cuzk_groth16::prover::Backend;

use crate::admission::VramAdmission;
use crate::srs::SrsSlot;
use crate::{CudaBackend, ZUpload};

/// CUDA workers per device unless configured: two partitions in flight, one
/// partition's witness upload and H polynomial beside the other's MSMs
/// (1.40 s per 32 GiB partition against 1.59 with one worker, H200,
/// BENCHMARKS.md).
pub const DEFAULT_GPU_WORKERS: usize = 2;

/// How one GPU proves: everything [`GpuDevice::open`] needs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuConfig {
    /// The device memory the arena reserves.
    pub budget: VramBudget,
    /// CUDA workers sharing the arena and its resident keys.
    pub workers: usize,
    /// Plans may keep H's points with shifted copies (`VramPlan::h_shift`).
    /// Off by default: the copies take 7 s to make when a 32 GiB key goes
    /// resident and save ~40 ms a partition, so they pay in a long-running
    /// daemon, not a one-shot command.
    pub shifted_h: bool,
    /// A streamed key's H chunks summed into buckets kept across the
    /// section where the MSM stage has room (`VramPlan::h_kept`). On by
    /// default; off only to measure against.
    pub kept_h: bool,
    /// A streamed key's first chunks crossing during a partition's H
    /// polynomial where the ring's buffers fit beside it
    /// (`VramPlan::ring_ahead`). On by default; off only to measure against.
    pub ring_ahead: bool,
    /// Batches of a streamed key's partitions with their state parked
    /// (`VramPlan::parked_batch`: H coefficients in pinned host memory,
    /// ~4.3 GB a member at 32 GiB, aux values compact in VRAM) where no
    /// held member fits. On by default; off only to measure against.
    pub parked_batches: bool,
    /// How a deferred witness's z crosses to the device.
    pub z_upload: ZUpload,
}

impl GpuConfig {
    /// The host memory a device's parked pool may pin (its members' H
    /// coefficients): none with parked batches off; else a third of the
    /// memory this process may use ([`cuzk_pipeline::host::memory`]), and
    /// no more than a full batch (ten members, the most a batch counts)
    /// of 2^27-domain partitions, the largest Filecoin proves: 40 GiB. The
    /// device's arena leaves room for the page tables that map it
    /// ([`Gpu::open_pinning`]) and a batch parks no more members than it
    /// holds.
    pub fn parked_pins(&self) -> u64 {
        if !self.parked_batches {
            return 0;
        }
        let batch = crate::plan::BATCH_COUNTED as u64 * (1 << 27) * crate::plan::SCALAR_BYTES;
        (cuzk_pipeline::host::memory().unwrap_or(0) / 3).min(batch)
    }
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            budget: VramBudget::Auto,
            workers: DEFAULT_GPU_WORKERS,
            shifted_h: false,
            kept_h: true,
            ring_ahead: true,
            parked_batches: true,
            z_upload: ZUpload::default(),
        }
    }
}

impl GpuConfig {
    /// This configuration with the arena reserving `budget`.
    pub fn with_budget(mut self, budget: VramBudget) -> Self {
        self.budget = budget;
        self
    }

    /// This configuration with `workers` CUDA workers (at least one).
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// This configuration with H over shifted bases allowed or not.
    pub fn with_shifted_h(mut self, on: bool) -> Self {
        self.shifted_h = on;
        self
    }

    /// This configuration with a streamed H's kept buckets allowed or not.
    pub fn with_kept_h(mut self, on: bool) -> Self {
        self.kept_h = on;
        self
    }

    /// This configuration with the ring's first buffers filled during the H
    /// polynomial or not.
    pub fn with_ring_ahead(mut self, on: bool) -> Self {
        self.ring_ahead = on;
        self
    }

    /// This configuration with parked batches allowed or not.
    pub fn with_parked_batches(mut self, on: bool) -> Self {
        self.parked_batches = on;
        self
    }

    /// This configuration with z uploaded as `mode` says.
    pub fn with_z_upload(mut self, mode: ZUpload) -> Self {
        self.z_upload = mode;
        self
    }
}

/// One GPU ready to prove: its arena reserved, its workers made and their
/// admission built, from one [`GpuConfig`].
pub struct GpuDevice {
    info: DeviceInfo,
    config: GpuConfig,
    arena_bytes: u64,
    workers: Vec<Arc<CudaBackend>>,
    keys: SrsSlot,
    admission: Arc<VramAdmission>,
}

impl fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuDevice")
            .field("info", &self.info)
            .field("config", &self.config)
            .field("arena_bytes", &self.arena_bytes)
            .finish_non_exhaustive()
    }
}

impl GpuDevice {
    /// Opens device `ordinal`: reserves its arena under `config.budget`
    /// (a budget larger than the card is refused, naming both), makes
    /// `config.workers` workers that share the arena, its resident keys and
    /// matrices, and the admission that counts them.
    pub fn open(ordinal: usize, config: &GpuConfig) -> Result<Self, cuzk_cuda::Error> {
        let gpu = Gpu::open_pinning(ordinal, config.budget, config.parked_pins())?;
        Self::on(&gpu, config)
    }

    /// [`GpuDevice::open`] on the first device; `Ok(None)` when there is
    /// none (no driver, no device), an error when one is there but unusable.
    pub fn first(config: &GpuConfig) -> Result<Option<Self>, cuzk_cuda::Error> {
        match Gpu::first_pinning(config.budget, config.parked_pins())? {
            None => Ok(None),
            Some(gpu) => Self::on(&gpu, config).map(Some),
        }
    }

    /// [`GpuDevice::open`] on a device already opened.
    pub(crate) fn on(gpu: &Gpu, config: &GpuConfig) -> Result<Self, cuzk_cuda::Error> {
        let workers = CudaBackend::workers(gpu, config)?;
        let arena_bytes = workers[0].budget_bytes();
        let keys = workers[0].resident_keys();
        let matrices = workers[0].resident_matrices();
        let admission = Arc::new(
            VramAdmission::with_slots(arena_bytes, keys.clone(), matrices)
                .with_shifted_h(config.shifted_h)
                .with_kept_h(config.kept_h)
                .with_ring_ahead(config.ring_ahead)
                .with_parked_batches(config.parked_batches),
        );
        Ok(GpuDevice {
            info: gpu.info().clone(),
            config: config.clone(),
            arena_bytes,
            workers: workers.into_iter().map(Arc::new).collect(),
            keys,
            admission,
        })
    }

    /// What the driver says of the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &GpuConfig {
        &self.config
    }

    /// Bytes of the arena its workers share.
    pub fn arena_bytes(&self) -> u64 {
        self.arena_bytes
    }

    /// The keys resident on the device (to report them, or evict one).
    pub fn resident_keys(&self) -> SrsSlot {
        self.keys.clone()
    }

    /// The device's workers.
    pub fn workers(&self) -> &[Arc<CudaBackend>] {
        &self.workers
    }

    /// The device's VRAM admission (plans, in-use bytes).
    pub fn admission(&self) -> &Arc<VramAdmission> {
        &self.admission
    }

    /// The device as the pipeline engine sees it: its workers, each a
    /// prover, under its VRAM admission.
    pub fn pipeline_device(&self) -> cuzk_pipeline::Device {
        let backends: Vec<Arc<dyn Backend>> = self
            .workers
            .iter()
            .map(|w| Arc::clone(w) as Arc<dyn Backend>)
            .collect();
        cuzk_pipeline::Device::per_worker(format!("cuda-{}", self.info.ordinal), backends)
            .with_admission(Arc::clone(&self.admission) as Arc<dyn cuzk_pipeline::Admission>)
    }

    /// One line for logs and `--help`-style reports:
    /// `cuda:0 (NVIDIA H200, VRAM arena 130.0 GiB, 2 GPU worker(s))`.
    pub fn describe(&self) -> String {
        format!(
            "cuda:{} ({}, VRAM arena {}, {} GPU worker(s){}{}{}{})",
            self.info.ordinal,
            self.info.name,
            cuzk_arena::human(self.arena_bytes),
            self.workers.len(),
            if self.config.shifted_h {
                ", H over shifted bases"
            } else {
                ""
            },
            if self.config.kept_h {
                ""
            } else {
                ", no kept buckets for a streamed H"
            },
            if self.config.ring_ahead {
                ""
            } else {
                ", a streamed key's chunks only after the H polynomial"
            },
            if self.config.parked_batches {
                ""
            } else {
                ", no parked batches"
            }
        )
    }
}

/// Where proving runs, as a program is asked: `auto` (every usable CUDA
/// device, else the CPU, saying why), `cuda` (a GPU or an error) or `cpu`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    #[default]
    /// Every usable CUDA device, else the CPU (saying why).
    Auto,
    /// A CUDA device, or an error.
    Cuda,
    /// The CPU backend.
    Cpu,
}

impl BackendChoice {
    /// The names, in `--help` order.
    pub const NAMES: [&'static str; 3] = ["auto", "cuda", "cpu"];
}

impl FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cuda" => Ok(BackendChoice::Cuda),
            "cpu" => Ok(BackendChoice::Cpu),
            other => Err(format!(
                "unknown backend {other:?}: expected `auto`, `cuda` or `cpu`"
            )),
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Cpu => "cpu",
        })
    }
}

/// What a [`BackendChoice`] resolved to on this machine.
#[derive(Debug)]
pub enum Resolved {
    /// Prove on the CPU; `why` says so in words ("asked for", "no CUDA
    /// device: …", "a CUDA device is present but unusable: …").
    Cpu {
        /// Why the CPU: asked for, or what kept the GPU out.
        why: String,
    },
    /// Prove on these GPUs, each opened with the configuration.
    Cuda(Vec<GpuDevice>),
}

/// Why a choice cannot be honoured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// `cuda` was asked for and there is no device.
    #[error("backend `cuda` asked for, but there is no CUDA device: {0}")]
    NoDevice(String),
    /// A device was selected that this machine does not have.
    #[error("GPU {ordinal} was selected, but this machine has {count} CUDA device(s)")]
    NoSuchDevice {
        /// The ordinal selected.
        ordinal: usize,
        /// CUDA devices this machine has.
        count: usize,
    },
    /// A device is there but cannot prove (stale kernels, a driver error).
    #[error("opening GPU {ordinal}")]
    Unusable {
        /// The ordinal it was opened by.
        ordinal: usize,
        #[source]
        /// Why the CUDA layer could not use it.
        source: cuzk_cuda::Error,
    },
}

/// Resolves `choice` on this machine: `cpu` as asked; `cuda` and `auto`
/// open `ordinals` (every device when `None`) with `config`. `auto` falls
/// back to the CPU only when there is no CUDA device at all; a device that
/// is there but cannot be opened is an error for both (a GPU box that
/// silently proves on its CPU is a fault, not a choice).
pub fn resolve(
    choice: BackendChoice,
    ordinals: Option<&[usize]>,
    config: &GpuConfig,
) -> Result<Resolved, ResolveError> {
    if choice == BackendChoice::Cpu {
        return Ok(Resolved::Cpu {
            why: "asked for".into(),
        });
    }
    let infos = match cuzk_cuda::devices() {
        Ok(infos) if !infos.is_empty() => infos,
        Ok(_) => return no_device(choice, "the driver lists no device".into()),
        Err(cuzk_cuda::Error::NoDevice(why)) => return no_device(choice, why),
        Err(source) => return Err(ResolveError::Unusable { ordinal: 0, source }),
    };
    let all: Vec<usize> = infos.iter().map(|i| i.ordinal).collect();
    let wanted = ordinals.map_or(all.clone(), <[usize]>::to_vec);
    let mut devices = Vec::with_capacity(wanted.len());
    for ordinal in wanted {
        if !all.contains(&ordinal) {
            return Err(ResolveError::NoSuchDevice {
                ordinal,
                count: all.len(),
            });
        }
        let device = GpuDevice::open(ordinal, config)
            .map_err(|source| ResolveError::Unusable { ordinal, source })?;
        devices.push(device);
    }
    Ok(Resolved::Cuda(devices))
}

fn no_device(choice: BackendChoice, why: String) -> Result<Resolved, ResolveError> {
    match choice {
        BackendChoice::Cuda => Err(ResolveError::NoDevice(why)),
        _ => Ok(Resolved::Cpu {
            why: format!("no CUDA device: {why}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_choices_parse_and_print_back() {
        for name in BackendChoice::NAMES {
            let choice: BackendChoice = name.parse().unwrap();
            assert_eq!(choice.to_string(), name);
        }
        let err = "gpu".parse::<BackendChoice>().unwrap_err();
        assert!(err.contains("\"gpu\"") && err.contains("`cuda`"), "{err}");
    }

    #[test]
    fn the_default_config_is_two_plain_workers_under_auto() {
        let c = GpuConfig::default();
        assert_eq!(c.workers, DEFAULT_GPU_WORKERS);
        assert_eq!(c.budget, VramBudget::Auto);
        assert!(!c.shifted_h);
        assert_eq!(c.z_upload, ZUpload::Plain);
        assert_eq!(GpuConfig::default().with_workers(0).workers, 1);
    }

    /// The parked pool's pins (and so the page tables the arena leaves room
    /// for): none with parked batches off; else a third of the process's
    /// memory, at most ten 2^27-domain partitions' H coefficients (40 GiB).
    #[test]
    fn the_parked_pool_pins_a_third_of_memory_at_most_a_full_batch() {
        let off = GpuConfig::default().with_parked_batches(false);
        assert_eq!(off.parked_pins(), 0);
        let memory = cuzk_pipeline::host::memory().unwrap_or(0);
        let pins = GpuConfig::default().parked_pins();
        assert_eq!(pins, (memory / 3).min(40 << 30), "{memory} bytes of memory");
    }

    /// Without a CUDA driver (CI), `auto` is the CPU and says why, `cuda` is
    /// an error naming the reason, `cpu` needs no probe. On a GPU machine
    /// this test only checks `cpu`.
    #[test]
    fn resolution_without_a_device() {
        let config = GpuConfig::default();
        match resolve(BackendChoice::Cpu, None, &config).unwrap() {
            Resolved::Cpu { why } => assert_eq!(why, "asked for"),
            Resolved::Cuda(_) => panic!("`cpu` opened a GPU"),
        }
        if matches!(cuzk_cuda::devices(), Err(cuzk_cuda::Error::NoDevice(_))) {
            match resolve(BackendChoice::Auto, None, &config).unwrap() {
                Resolved::Cpu { why } => assert!(why.starts_with("no CUDA device"), "{why}"),
                Resolved::Cuda(_) => panic!("no device, yet a GPU opened"),
            }
            let err = resolve(BackendChoice::Cuda, None, &config).unwrap_err();
            assert!(matches!(err, ResolveError::NoDevice(_)), "{err}");
        }
    }
}
