//! What the commands share for talking to the user and writing files:
//! durations, spinners, stage lists, the proof RNG, atomic writes.

use std::path::Path;
use std::time::Duration;

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_filecoin::{Circuit, ParamsDir};
use cuzk_groth16::prover::StageTimings;
use cuzk_groth16::ProvingKey;
use indicatif::{ProgressBar, ProgressStyle};

/// The timing lines a command prints at the end: stage, time, what it did.
pub(crate) type Stages = Vec<(String, Duration, String)>;

/// Reads `circuit`'s proving key from the parameter cache behind a spinner
/// and records the `key` stage (time and file).
pub(crate) fn read_key(
    params: &ParamsDir,
    circuit: impl Into<Circuit>,
    stages: &mut Stages,
) -> Result<ProvingKey> {
    let circuit = circuit.into();
    let t = Instant::now();
    let path = params.params_path(circuit)?;
    let s = spinner(format!("reading {}", path.display()));
    let key = params.load_proving_key(circuit)?;
    s.finish_and_clear();
    stages.push(("key".into(), t.elapsed(), path.display().to_string()));
    Ok(key)
}

pub(crate) fn spinner(msg: String) -> ProgressBar {
    let s = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"),
    );
    s.set_message(msg);
    s.enable_steady_tick(Duration::from_millis(120));
    s
}

pub(crate) fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

/// "h_poly 0.053s, msm_h 0.216s, ...": a backend's stages in order.
pub(crate) fn stage_list(timings: &StageTimings) -> String {
    let stages: Vec<String> = timings
        .stages
        .iter()
        .map(|(name, d)| format!("{name} {}", secs(*d)))
        .collect();
    stages.join(", ")
}

/// Prints one line per proved partition of a job ("{label}partition k/n:
/// synthesis, proving stages (backend: stages; verification; plan)") and
/// returns the synthesis and proving time summed over them.
pub(crate) fn report_partitions(
    label: &str,
    partitions: &[cuzk_pipeline::PartitionReport],
) -> (Duration, Duration) {
    let (mut synthesis, mut proving) = (Duration::ZERO, Duration::ZERO);
    for (k, p) in partitions.iter().enumerate() {
        let busy = p.timings.total();
        synthesis += p.synthesis;
        proving += busy;
        let mut plan = p
            .plan
            .as_deref()
            .map_or_else(String::new, |plan| format!("; {plan}"));
        if let Some(bytes) = p.crossed.filter(|&b| b > 0) {
            // Everything it moved over PCIe (its share of a batch's pass).
            plan.push_str(&format!("; {:.2} GB over PCIe", bytes as f64 / 1e9));
        }
        if p.batch > 1 {
            // Its key pass shared with the others (the figures: its share).
            plan.push_str(&format!("; proved in a batch of {}", p.batch));
        }
        eprintln!(
            "{label}partition {}/{}: synthesis {}, proving stages {} ({}: {}; {:?}{plan})",
            k + 1,
            partitions.len(),
            secs(p.synthesis),
            secs(busy),
            p.backend,
            stage_list(&p.timings),
            p.verification
        );
    }
    (synthesis, proving)
}

/// Writes `bytes` to a temporary sibling of `path`, syncs it and renames it
/// over `path`, so a reader never sees a partial file (creating the folder).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    cuzk_groth16::file::write_bytes_atomically(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// The process's peak resident set (`VmHWM`), where the OS reports it.
pub(crate) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
