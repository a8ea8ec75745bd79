//! `cuzk doctor`: what this box has (GPUs and driver, cores, memory from
//! the cgroup limit when lower than the physical), which keys and
//! recordings the parameter cache holds, and the settings the daemon would
//! choose ([`crate::defaults`]).

use std::fmt::Write as _;

use cuzk_filecoin::precompile::default_cache_path;
use cuzk_filecoin::ParamsDir;
use cuzk_gpu::human;

use crate::defaults::{choose, runs, BoxFacts, Known};
use crate::srs::circuits;

/// The GPUs as the report shows them: each device, or why there is none.
pub type Gpus = Result<Vec<cuzk_gpu::DeviceInfo>, String>;

/// This box's GPUs.
pub fn gpus_here() -> Gpus {
    cuzk_gpu::devices().map_err(|e| e.to_string())
}

/// The kernel driver's version (`/proc/driver/nvidia/version`), if loaded.
pub fn driver_here() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ..."
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

/// What the CUDA side of this build finds: the CUDA version the driver
/// supports and the kernels this binary would load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaStack {
    /// `cuDriverGetVersion` (13000 for 13.0), when a driver is there.
    pub(crate) driver_cuda: Option<i32>,
    /// [`cuzk_gpu::kernels::describe`]: build, architectures and folder,
    /// or why there are none.
    pub(crate) kernels: String,
}

/// This box's CUDA driver version and this binary's kernels.
pub fn cuda_here() -> CudaStack {
    CudaStack {
        driver_cuda: cuzk_gpu::driver_version().ok(),
        kernels: cuzk_gpu::kernels::describe(),
    }
}

/// The report.
pub fn report(
    facts: BoxFacts,
    memory_from: &str,
    gpus: &Gpus,
    driver: Option<&str>,
    cuda: &CudaStack,
    params: &ParamsDir,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "box");
    let _ = writeln!(o, "  cores   {}", facts.cores);
    let _ = writeln!(o, "  memory  {} ({memory_from})", human(facts.memory));
    let _ = writeln!(
        o,
        "  driver  {}{}",
        driver.unwrap_or("no NVIDIA kernel driver loaded"),
        cuda.driver_cuda
            .map(|v| format!(" (CUDA {}.{})", v / 1000, v % 1000 / 10))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "  kernels {}", cuda.kernels);
    match gpus {
        Ok(list) => {
            for g in list {
                let _ = writeln!(
                    o,
                    "  cuda-{}  {} (sm_{}{}), {} VRAM, {} SMs",
                    g.ordinal,
                    g.name,
                    g.compute_capability.0,
                    g.compute_capability.1,
                    human(g.total_memory as u64),
                    g.multiprocessors
                );
                if let Some(Err(why)) = cuda.driver_cuda.map(|v| cuzk_gpu::supported(g, v)) {
                    let _ = writeln!(o, "          NOT usable: {why}");
                }
            }
        }
        Err(why) => {
            let _ = writeln!(
                o,
                "  GPUs    none usable: {why}; backend \"auto\" proves on the CPU \
                 (unless an NVIDIA card is on the PCI bus: then it refuses to start)"
            );
        }
    }

    let _ = writeln!(o, "\nparameter cache {}", params.path().display());
    for (id, circuit) in circuits() {
        let Ok(key) = params.params_path(*circuit) else {
            continue;
        };
        let key_state = match std::fs::metadata(&key) {
            Ok(m) => format!("key {}", human(m.len())),
            Err(_) => "no key".to_string(),
        };
        let recording = default_cache_path(params, *circuit)
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or("no recording".to_string(), |m| {
                format!("recording {}", human(m.len()))
            });
        // Only what is there, and the 32 GiB circuits whether or not.
        if key_state != "no key" || id.ends_with("-32g") {
            let _ = writeln!(o, "  {id:<12} {key_state:<16} {recording}");
        }
    }

    let chosen = choose(facts);
    let _ = writeln!(o, "\nsettings it would choose (each key left at 0)");
    let _ = writeln!(
        o,
        "  proving.engine_memory_budget  {}",
        human(chosen.engine_memory_budget)
    );
    let _ = writeln!(
        o,
        "  srs.host_budget               {}",
        human(chosen.host_budget)
    );
    let _ = writeln!(
        o,
        "  proving.post_aux_pool         {}",
        if chosen.post_aux_pool == 0 {
            "off".to_string()
        } else {
            human(chosen.post_aux_pool)
        }
    );
    let _ = writeln!(
        o,
        "  proving.partitions_in_flight  {}",
        chosen.partitions_in_flight
    );
    let _ = writeln!(
        o,
        "  proving.synthesis_workers     {}",
        chosen.synthesis_workers
    );
    let _ = writeln!(
        o,
        "  limits.request_memory         {}",
        human(chosen.request_memory)
    );
    let on_gpu = gpus.as_ref().is_ok_and(|g| !g.is_empty());
    let _ = writeln!(
        o,
        "\n32 GiB proofs under these settings ({})",
        if on_gpu { "GPU" } else { "CPU backend" }
    );
    for k in Known::ALL {
        let verdict = if runs(k, &chosen, on_gpu) {
            "fits"
        } else {
            "does NOT fit: its key and one partition exceed the budgets"
        };
        let _ = writeln!(o, "  {:<12} {verdict}", k.circuit_id());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_what_is_there_and_what_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let params = ParamsDir::new(dir.path());
        let (_, porep_2k) = circuits().iter().find(|(id, _)| *id == "porep-2k").unwrap();
        let key = params.params_path(*porep_2k).unwrap();
        std::fs::write(&key, vec![0u8; 2048]).unwrap();
        std::fs::write(key.with_extension("r1cs"), vec![0u8; 1024]).unwrap();
        let facts = BoxFacts {
            memory: 128 << 30,
            cores: 32,
        };
        let gpus: Gpus = Err("the CUDA driver library (libcuda) is not installed".into());
        let cuda = CudaStack {
            driver_cuda: None,
            kernels: "none (CUDA kernels not built)".into(),
        };
        let r = report(facts, "cgroup memory limit", &gpus, None, &cuda, &params);
        for words in [
            "kernels none (CUDA kernels not built)",
            "cores   32",
            "memory  128.00 GiB (cgroup memory limit)",
            "none usable: the CUDA driver library",
            "porep-2k     key 2.0 KiB",
            "recording 1.0 KiB",
            "porep-32g    no key",
            "proving.partitions_in_flight  3",
            "wpost-32g    fits",
        ] {
            assert!(r.contains(words), "no {words:?} in:\n{r}");
        }
        // Sizes without a key are left out, except the 32 GiB ones.
        assert!(!r.contains("porep-8m"), "{r}");

        // A Turing card beside an H100, under a CUDA 13.0 driver.
        let card = |ordinal, name: &str, cc| cuzk_gpu::DeviceInfo {
            ordinal,
            name: name.into(),
            compute_capability: cc,
            total_memory: 16 << 30,
            multiprocessors: 40,
        };
        let gpus: Gpus = Ok(vec![
            card(0, "NVIDIA H100", (9, 0)),
            card(1, "Tesla T4", (7, 5)),
        ]);
        let cuda = CudaStack {
            driver_cuda: Some(13000),
            kernels: "0123456789ab sm_90 from /opt/cuzk/lib/cuzk/kernels".into(),
        };
        let r = report(
            facts,
            "cgroup memory limit",
            &gpus,
            Some("580.65.06"),
            &cuda,
            &params,
        );
        assert!(r.contains("driver  580.65.06 (CUDA 13.0)"), "{r}");
        assert!(r.contains("kernels 0123456789ab sm_90"), "{r}");
        let not_usable: Vec<&str> = r.lines().filter(|l| l.contains("NOT usable")).collect();
        assert_eq!(not_usable.len(), 1, "{r}");
        assert!(
            not_usable[0].contains("Tesla T4") && not_usable[0].contains("Turing"),
            "{r}"
        );
    }
}
