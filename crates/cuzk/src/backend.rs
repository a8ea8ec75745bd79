//! Choosing where work runs: the prover's backend (`--backend auto|cuda|cpu`,
//! `--vram-budget`) and the key generator's fixed-base step. Every choice is
//! announced on stderr, and `auto` says why when it falls back to the CPU.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_cuda::VramBudget;
use cuzk_gpu::CudaBackend;
use cuzk_groth16::prover::{Backend, CpuBackend};
use cuzk_groth16::setup::FixedBase;
use cuzk_pipeline::Device;

#[derive(Args, Debug, Clone)]
pub(crate) struct BackendArgs {
    /// Backend: `auto` (the first CUDA device when there is one and the kernels are built, else the CPU, saying why), `cuda` or `cpu`.
    #[arg(long, default_value = "auto")]
    pub(crate) backend: String,
    /// Device memory the GPU backend may use: `auto` (what is free, less a margin) or a size such as `16GiB`; a budget smaller than the key streams the key from host memory.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    pub(crate) vram_budget: VramBudget,
}

fn parse_budget(s: &str) -> Result<VramBudget, cuzk_cuda::BudgetError> {
    VramBudget::parse(s)
}

/// How many CUDA workers share a GPU when the pipeline engine proves.
#[derive(Args, Debug, Clone)]
pub(crate) struct GpuWorkerArgs {
    /// CUDA workers on the GPU when partitions go through the engine: with 2,
    /// one partition's witness upload and H polynomial run beside another's
    /// MSMs (each worker has its own scratch; VRAM admission holds a partition
    /// back while both do not fit). 1 proves one partition at a time. Ignored
    /// on the CPU backend.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub(crate) gpu_workers: u64,
}

/// What `--backend` resolves to on this machine.
enum Chosen {
    Cpu,
    Cuda(cuzk_cuda::Gpu),
}

/// Resolves `args.backend`, saying on stderr why `auto` chose the CPU.
fn choose(args: &BackendArgs) -> Result<Chosen> {
    let first = || cuzk_cuda::Gpu::first_with(args.vram_budget);
    match args.backend.as_str() {
        "cpu" => {
            eprintln!("backend: cpu (asked for)");
            Ok(Chosen::Cpu)
        }
        "cuda" => match first() {
            Ok(Some(gpu)) => Ok(Chosen::Cuda(gpu)),
            Ok(None) => bail!("--backend cuda: no CUDA device on this machine"),
            Err(e) => bail!("--backend cuda: {e}"),
        },
        "auto" => match first() {
            Ok(Some(gpu)) => Ok(Chosen::Cuda(gpu)),
            Ok(None) => {
                eprintln!("backend: cpu (no CUDA device)");
                Ok(Chosen::Cpu)
            }
            Err(e) => {
                eprintln!("backend: cpu — a CUDA device is present but unusable: {e}");
                Ok(Chosen::Cpu)
            }
        },
        other => bail!("unknown backend {other:?}: expected `auto`, `cuda` or `cpu`"),
    }
}

/// Announces the GPU backend on stderr.
fn announce(gpu: &cuzk_cuda::Gpu, workers: Option<usize>) {
    let workers = workers.map_or(String::new(), |w| format!(", {w} GPU worker(s)"));
    eprintln!(
        "backend: cuda:{} ({}, VRAM arena {}{workers})",
        gpu.info().ordinal,
        gpu.info().name,
        cuzk_gpu::human(gpu.arena().capacity())
    );
}

/// The backend `args` ask for, announced on stderr.
pub(crate) fn select_backend(args: &BackendArgs) -> Result<Box<dyn Backend>> {
    match choose(args)? {
        Chosen::Cpu => Ok(Box::new(CpuBackend)),
        Chosen::Cuda(gpu) => {
            announce(&gpu, None);
            let name = format!("cuda:{}", gpu.info().ordinal);
            Ok(Box::new(
                CudaBackend::new(gpu).with_context(|| format!("opening {name}"))?,
            ))
        }
    }
}

/// The pipeline engine's device for `args`: on CUDA, `workers.gpu_workers`
/// workers sharing the GPU's arena and resident key under VRAM admission;
/// on the CPU, the one backend as one prover. Announced on stderr.
pub(crate) fn select_engine_device(args: &BackendArgs, workers: &GpuWorkerArgs) -> Result<Device> {
    match choose(args)? {
        Chosen::Cpu => Ok(Device::new("cpu", Arc::new(CpuBackend), 1)),
        Chosen::Cuda(gpu) => {
            let n = workers.gpu_workers as usize;
            announce(&gpu, Some(n));
            cuzk_gpu::admission::pipeline_device(&gpu, n, args.vram_budget)
                .with_context(|| format!("opening {n} worker(s) on cuda:{}", gpu.info().ordinal))
        }
    }
}

/// What the GPU side of this machine looks like, for `cuzk info`.
pub(crate) fn gpu_status() -> String {
    match cuzk_cuda::devices() {
        Err(e) => e.to_string(),
        Ok(devs) => {
            let kernels = if cuzk_cuda::kernels::available() {
                format!("kernels built for {}", cuzk_cuda::kernels::archs())
            } else {
                "kernels not built: run `cargo xtask kernels`".to_string()
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
    let (chosen, note) = cuzk_gpu::keygen::select_fixed_base(backend)?;
    if let Some(note) = note {
        eprintln!("{who}: {note}");
    }
    eprintln!("{who} backend: {}", chosen.name());
    Ok(chosen)
}
