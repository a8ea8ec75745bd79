//! Choosing where work runs: the prover's backend (`--backend auto|cuda|cpu`,
//! `--vram-budget`) and the key generator's fixed-base step. Every choice is
//! announced on stderr, and `auto` says why when it falls back to the CPU.

use anyhow::{bail, Result};
use clap::Args;
use cuzk_cuda::VramBudget;
use cuzk_gpu::CudaBackend;
use cuzk_groth16::prover::{Backend, CpuBackend};
use cuzk_groth16::setup::FixedBase;

#[derive(Args, Debug, Clone)]
pub(crate) struct BackendArgs {
    /// Backend: `auto` (the first CUDA device when there is one and the kernels are built, else the CPU, saying why), `cuda` or `cpu`.
    #[arg(long, default_value = "auto")]
    pub(crate) backend: String,
    /// Device memory the GPU backend may use: `auto` (what is free, less a margin) or a size such as `16GiB`; a budget smaller than the key streams the key from host memory.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    pub(crate) vram_budget: VramBudget,
}

fn parse_budget(s: &str) -> Result<VramBudget, String> {
    VramBudget::parse(s)
}

/// The CUDA backend on the first device with `budget`; `Ok(None)` without a device.
fn cuda_backend(budget: VramBudget) -> Result<Option<CudaBackend>, cuzk_cuda::Error> {
    match cuzk_cuda::Gpu::first_with(budget)? {
        None => Ok(None),
        Some(gpu) => CudaBackend::new(gpu).map(Some),
    }
}

/// The backend `args` ask for, announced on stderr.
pub(crate) fn select_backend(args: &BackendArgs) -> Result<Box<dyn Backend>> {
    let announce = |gpu: &CudaBackend| {
        eprintln!(
            "backend: {} ({}, VRAM arena {})",
            gpu.name(),
            gpu.device_name(),
            cuzk_gpu::human(gpu.budget_bytes())
        );
    };
    match args.backend.as_str() {
        "cpu" => {
            eprintln!("backend: cpu (asked for)");
            Ok(Box::new(CpuBackend))
        }
        "cuda" => match cuda_backend(args.vram_budget) {
            Ok(Some(gpu)) => {
                announce(&gpu);
                Ok(Box::new(gpu))
            }
            Ok(None) => bail!("--backend cuda: no CUDA device on this machine"),
            Err(e) => bail!("--backend cuda: {e}"),
        },
        "auto" => match cuda_backend(args.vram_budget) {
            Ok(Some(gpu)) => {
                announce(&gpu);
                Ok(Box::new(gpu))
            }
            Ok(None) => {
                eprintln!("backend: cpu (no CUDA device)");
                Ok(Box::new(CpuBackend))
            }
            Err(e) => {
                eprintln!("backend: cpu — a CUDA device is present but unusable: {e}");
                Ok(Box::new(CpuBackend))
            }
        },
        other => bail!("unknown backend {other:?}: expected `auto`, `cuda` or `cpu`"),
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
    let (chosen, note) =
        cuzk_gpu::keygen::select_fixed_base(backend).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        eprintln!("{who}: {note}");
    }
    eprintln!("{who} backend: {}", chosen.name());
    Ok(chosen)
}
