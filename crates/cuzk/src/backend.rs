//! Choosing where work runs: the prover's backend (`--backend auto|cuda|cpu`,
//! `--vram-budget`, `--shifted-h` or `CUZK_SHIFTED_H`, `--no-kept-h` or
//! `CUZK_KEPT_H=0`, `--no-ring-ahead` or `CUZK_RING_AHEAD=0`,
//! `--no-parked-batches` or `CUZK_PARKED_BATCHES=0`) and the key
//! generator's fixed-base step. Every choice is announced on stderr, and
//! `auto` says why when it runs on the CPU.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_gpu::{BackendChoice, GpuConfig, GpuDevice, Resolved, VramBudget};
use cuzk_groth16::prover::CpuBackend;
use cuzk_groth16::setup::FixedBase;
use cuzk_pipeline::Device;

#[derive(Args, Debug, Clone)]
pub(crate) struct BackendArgs {
    /// Backend: `auto` (the first CUDA device when there is one, else the CPU, saying why; a device that is there but cannot prove is an error), `cuda` or `cpu`.
    #[arg(long, default_value_t = BackendChoice::Auto)]
    pub(crate) backend: BackendChoice,
    /// Device memory the GPU backend may use: `auto` (what is free, less a margin) or a size such as `16GiB`; a budget smaller than the key streams the key from host memory.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    pub(crate) vram_budget: VramBudget,
    /// Keep two shifted copies of H's points beside a resident key and run H's MSM over them: ~3% less per partition once the key is resident, 7 s more to make the copies when it goes resident at 32 GiB (worth it in long runs). Also on when the environment has CUZK_SHIFTED_H=1.
    #[arg(long)]
    pub(crate) shifted_h: bool,
    /// With the key streamed, sum each of H's chunks as an MSM of its own instead of into buckets kept across the section (the default where the card has room for them: one reduction at the section's window). For measuring the default against; also when the environment has CUZK_KEPT_H=0.
    #[arg(long)]
    pub(crate) no_kept_h: bool,
    /// With the key streamed, start its first chunks crossing only after a partition's H polynomial instead of during it (the default where the card has room for their buffers beside it). For measuring the default against; also when the environment has CUZK_RING_AHEAD=0.
    #[arg(long)]
    pub(crate) no_ring_ahead: bool,
    /// With the key streamed and no room for a second partition's state on the card, prove the partitions queued together one at a time instead of in a parked batch (the default where the batch's pass reaches a larger chunk: each member's H coefficients parked in pinned host memory, ~4.3 GB at 32 GiB, its aux values compact on the card, and the key crossing PCIe once for the batch). For measuring the default against, or a host short of memory; also when the environment has CUZK_PARKED_BATCHES=0.
    #[arg(long)]
    pub(crate) no_parked_batches: bool,
}

fn parse_budget(s: &str) -> Result<VramBudget, cuzk_gpu::BudgetError> {
    VramBudget::parse(s)
}

/// How many CUDA workers share a GPU when the pipelined engine proves.
#[derive(Args, Debug, Clone)]
pub(crate) struct GpuWorkerArgs {
    /// CUDA workers on the GPU when the pipelined engine proves (the serial
    /// scheduler, one partition at a time, uses one): with 2,
    /// one partition's witness upload and H polynomial run beside another's
    /// MSMs (each worker has its own scratch; VRAM admission holds a partition
    /// back while both do not fit). 1 proves one partition at a time. Ignored
    /// on the CPU backend.
    #[arg(long, default_value_t = cuzk_gpu::DEFAULT_GPU_WORKERS as u64, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub(crate) gpu_workers: u64,
}

/// Resolves `args` with `workers` CUDA workers on the first GPU, saying on
/// stderr which backend runs (and, for `auto` on the CPU, why).
fn choose(args: &BackendArgs, workers: usize) -> Result<Option<GpuDevice>> {
    // The settings this binary also reads from the environment (`--help` says so).
    let shifted_h = args.shifted_h
        || std::env::var_os("CUZK_SHIFTED_H").is_some_and(|v| !v.is_empty() && v != "0");
    let kept_h = !args.no_kept_h && std::env::var_os("CUZK_KEPT_H").is_none_or(|v| v != "0");
    let ring_ahead =
        !args.no_ring_ahead && std::env::var_os("CUZK_RING_AHEAD").is_none_or(|v| v != "0");
    let parked =
        !args.no_parked_batches && std::env::var_os("CUZK_PARKED_BATCHES").is_none_or(|v| v != "0");
    let config = GpuConfig::default()
        .with_budget(args.vram_budget)
        .with_workers(workers)
        .with_shifted_h(shifted_h)
        .with_kept_h(kept_h)
        .with_ring_ahead(ring_ahead)
        .with_parked_batches(parked);
    match cuzk_gpu::resolve(args.backend, Some(&[0]), &config)
        .with_context(|| format!("--backend {}", args.backend))?
    {
        Resolved::Cpu { why } => {
            eprintln!("backend: cpu ({why})");
            Ok(None)
        }
        Resolved::Cuda(mut devices) => {
            let device = devices.remove(0);
            eprintln!("backend: {}", device.describe());
            Ok(Some(device))
        }
    }
}

/// The engine's device for `args`: on CUDA, `workers` workers sharing the
/// GPU's arena and resident key under VRAM admission (the serial scheduler
/// asks for one); on the CPU, the one backend as one prover. Announced on
/// stderr.
pub(crate) fn select_engine_device(args: &BackendArgs, workers: usize) -> Result<Device> {
    Ok(match choose(args, workers)? {
        None => Device::new("cpu", Arc::new(CpuBackend), 1),
        Some(device) => device.pipeline_device(),
    })
}

/// What the GPU side of this machine looks like, for `cuzk info`.
pub(crate) fn gpu_status() -> String {
    match cuzk_gpu::devices() {
        Err(e) => e.to_string(),
        Ok(devs) => {
            let kernels = match cuzk_gpu::kernels::load() {
                Ok(k) => format!("kernels built for {}", k.archs()),
                Err(e) => format!("kernels unusable: {e}"),
            };
            let names: Vec<String> = devs.iter().map(|d| d.to_string()).collect();
            format!("{}; {kernels}", names.join("; "))
        }
    }
}

/// The key generator's fixed-base step for `--backend`; says on stderr
/// (prefixed by `who`) which one runs and, for `auto`, why it is the CPU's
/// when it falls back.
pub(crate) fn select_fixed_base(who: &str, backend: &str) -> Result<Box<dyn FixedBase>> {
    let choice: BackendChoice = backend.parse().map_err(anyhow::Error::msg)?;
    let (chosen, note) = cuzk_gpu::keygen::select_fixed_base(choice)?;
    if let Some(note) = note {
        eprintln!("{who}: {note}");
    }
    eprintln!("{who} backend: {}", chosen.name());
    Ok(chosen)
}
