//! What the commands share for talking to the user and writing files:
//! durations, spinners, stage lists, the proof RNG, atomic writes.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use cuzk_groth16::prover::StageTimings;
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The proof randomness: seeded when asked for (reproducible proofs), else from the OS.
pub(crate) fn rng_from(seed: Option<u64>) -> ChaCha20Rng {
    seed.map_or_else(ChaCha20Rng::from_entropy, ChaCha20Rng::seed_from_u64)
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

/// Writes `bytes` to a temporary sibling of `path`, syncs it and renames it
/// over `path`, so a reader never sees a partial file (creating the folder).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    // Temporary files start owner-only; proofs and inputs are public data.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

/// The process's peak resident set (`VmHWM`), where the OS reports it.
pub(crate) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
