//! Compiling the kernel units with nvcc, shared (by `#[path]`) between
//! `cargo xtask kernels` and cuzk-cuda's build script (its `build-kernels`
//! feature), so that both find nvcc the same way, run the same command line
//! and write the same files: `<stem>.fatbin`, its stamp
//! `<stem>.fatbin.sha256` (the unit's source hash, `fatbin <its SHA-256>`,
//! `archs <list>`, one per line: what the run-time loader checks) and the
//! ptxas report `<stem>.resource-usage.txt`.
//!
//! Reads no environment itself: the includer passes what it read (so a
//! build script can also tell cargo which variables it depends on).
//! Errors are strings naming the problem (a build script has no `anyhow`).
//!
//! The includer declares `source_hash.rs` as a sibling module of this one
//! (`super::source_hash`).

// Included by `#[path]` as a private module of two crates, each using a
// different part of it: the items stay `pub` so the part one includer
// leaves unused is not dead code there.
#![allow(unreachable_pub)]

use super::source_hash;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Real architectures that get SASS by default; PTX is added for the lowest.
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"];

/// The environment variable holding an architecture list (`sm_90,sm_89`)
/// that replaces [`DEFAULT_ARCHS`] (and drops the PTX).
pub const ARCHS_VAR: &str = "CUZK_ARCHS";

/// The variables [`find_nvcc`] consults, in order, besides `PATH`.
pub const NVCC_VARS: [&str; 3] = ["NVCC", "CUDA_HOME", "CUDA_PATH"];

/// The pinned toolchain wheels (docs/cuda.md): nvcc, its crt headers,
/// libnvvm, the runtime headers, and CCCL (CUB) headers. Installed with
/// `pip install --no-deps --target DIR` (their own dependencies are
/// unpinned), nvcc is then `DIR/nvidia/cu13/bin/nvcc`.
pub const PINNED_WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];

/// Where nvcc lies in a folder the [`PINNED_WHEELS`] were installed into.
pub const WHEEL_NVCC: &str = "nvidia/cu13/bin/nvcc";

/// What a fatbin is built for: SASS for each real architecture, plus PTX
/// for the lowest when `ptx` (full builds only: PTX from a newer toolkit
/// does not JIT on an older driver, so it is a fallback, not the plan).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archs {
    /// `sm_XX` names.
    pub list: Vec<String>,
    /// Whether PTX for the lowest architecture is added.
    pub ptx: bool,
}

impl Archs {
    /// [`DEFAULT_ARCHS`] with PTX when `list` is `None` (or blank), else
    /// the comma-separated `list` (`sm_90,sm_89`) without PTX.
    pub fn parse(list: Option<&str>) -> Result<Archs, String> {
        let Some(text) = list.filter(|l| !l.trim().is_empty()) else {
            return Ok(Archs {
                list: DEFAULT_ARCHS.iter().map(|s| s.to_string()).collect(),
                ptx: true,
            });
        };
        let list: Vec<String> = text
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if list.is_empty() {
            return Err(format!("empty architecture list `{text}`"));
        }
        for a in &list {
            let ok = a
                .strip_prefix("sm_")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()));
            if !ok {
                return Err(format!("bad architecture `{a}` (expected e.g. sm_90)"));
            }
        }
        Ok(Archs { list, ptx: false })
    }

    /// The list as stamps record it: `sm_80,sm_86,…,sm_120+ptx`.
    pub fn label(&self) -> String {
        format!(
            "{}{}",
            self.list.join(","),
            if self.ptx { "+ptx" } else { "" }
        )
    }
}

/// The number in `sm_90a` (90), for ordering; unknown forms sort last.
pub fn arch_number(arch: &str) -> u32 {
    arch.trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(u32::MAX)
}

/// nvcc from `$NVCC` (which must then be a file), `$CUDA_HOME/bin`,
/// `$CUDA_PATH/bin`, or a folder of `PATH`, `var` looking a variable up.
/// The error lists every place looked at.
pub fn find_nvcc(var: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, String> {
    if let Some(p) = var("NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(format!(
            "$NVCC is set to {}, which is not a file",
            p.display()
        ));
    }
    let mut searched = vec!["$NVCC (not set)".to_string()];
    for name in ["CUDA_HOME", "CUDA_PATH"] {
        match var(name) {
            Some(home) => {
                let p = PathBuf::from(home).join("bin/nvcc");
                if p.is_file() {
                    return Ok(p);
                }
                searched.push(format!("${name}/bin ({} is not a file)", p.display()));
            }
            None => searched.push(format!("${name}/bin (${name} not set)")),
        }
    }
    match var("PATH") {
        Some(path) => {
            for dir in std::env::split_paths(&path) {
                let p = dir.join("nvcc");
                if p.is_file() {
                    return Ok(p);
                }
            }
            searched.push("every folder of $PATH".to_string());
        }
        None => searched.push("$PATH (not set)".to_string()),
    }
    Err(format!("no nvcc found; searched {}", searched.join(", ")))
}

/// What one compilation produced.
#[derive(Debug)]
pub struct Compiled {
    /// nvcc's stderr: ptxas's per-kernel resource report (also written
    /// beside the fatbin).
    pub report: String,
    /// The resource report's path.
    pub report_path: PathBuf,
    /// The fatbin's size in bytes.
    pub size: u64,
    /// Wall time of the nvcc run, in seconds.
    pub seconds: f64,
    /// Whether the unit or a header changed while nvcc ran (the fatbin is
    /// stamped with the hash from before, so the loader reports it stale).
    pub sources_moved: bool,
}

/// The nvcc command line that compiles `kernels/<unit>` into `out`: C++17,
/// `-O3`, compressed SASS for every architecture of `archs` and PTX for the
/// lowest when asked, ptxas's resource report on stderr.
pub fn command(nvcc: &Path, kernels: &Path, unit: &str, out: &Path, archs: &Archs) -> Command {
    let mut cmd = Command::new(nvcc);
    cmd.args([
        "-std=c++17",
        "-O3",
        "--fatbin",
        // Compress the SASS too (by default only PTX is): a unit's fatbin
        // shrinks 3-5x (msm/g1.cu, sm_90: 5.2 -> ~1.5 MB), which every
        // process reads and every bundle carries.
        "-Xfatbin=-compress-all",
        "-Xptxas",
        "-v",
        "--threads",
        "2",
    ])
    .arg("-I")
    .arg(kernels)
    .arg("-o")
    .arg(out)
    .arg(kernels.join(unit));
    for arch in &archs.list {
        let num = arch.trim_start_matches("sm_");
        cmd.arg("-gencode")
            .arg(format!("arch=compute_{num},code=sm_{num}"));
    }
    if archs.ptx {
        if let Some(lowest) = archs.list.iter().min_by_key(|a| arch_number(a)) {
            let num = lowest.trim_start_matches("sm_");
            cmd.arg("-gencode")
                .arg(format!("arch=compute_{num},code=compute_{num}"));
        }
    }
    cmd
}

/// A fatbin's stamp: its sources' hash, its own SHA-256, its architectures.
pub fn stamp_text(source_hash: &str, fatbin_sha256: &str, archs_label: &str) -> String {
    format!("{source_hash}\nfatbin {fatbin_sha256}\narchs {archs_label}\n")
}

/// The stamp path of a fatbin (`<fatbin>.sha256`).
pub fn stamp_path(fatbin: &Path) -> PathBuf {
    PathBuf::from(format!("{}.sha256", fatbin.display()))
}

/// Whether `fatbin` exists, is the one its stamp describes, and was built
/// from sources with hash `sources` for `archs_label`.
pub fn stamp_matches(fatbin: &Path, sources: &str, archs_label: &str) -> bool {
    let stamp = std::fs::read_to_string(stamp_path(fatbin)).unwrap_or_default();
    let Ok(bytes) = std::fs::read(fatbin) else {
        return false;
    };
    stamp == stamp_text(sources, &source_hash::sha256_hex(&bytes), archs_label)
}

/// Compiles `kernels/<unit>` (whose source hash is `hash`) into `fatbin`
/// with [`command`], then writes the resource report and the stamp. Files
/// are written under per-process temporary names and renamed, the fatbin
/// before its stamp: two builds sharing a folder never see half a file, and
/// a stamp never describes a missing fatbin. On failure nvcc's output is
/// kept in `<stem>.nvcc-failed.<pid>.txt` and the error quotes its lines
/// other than ptxas's resource notes.
pub fn compile_unit(
    nvcc: &Path,
    kernels: &Path,
    unit: &str,
    hash: &str,
    fatbin: &Path,
    archs: &Archs,
) -> Result<Compiled, String> {
    let out_dir = fatbin.parent().expect("fatbin in a folder");
    let stem = source_hash::unit_stem(unit);
    let pid = std::process::id();
    let tmp = out_dir.join(format!("{stem}.fatbin.{pid}.tmp"));
    let started = std::time::Instant::now();
    let output = command(nvcc, kernels, unit, &tmp, archs)
        .output()
        .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
    let report = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        let failed = out_dir.join(format!("{stem}.nvcc-failed.{pid}.txt"));
        let _ = std::fs::write(&failed, &report);
        let _ = std::fs::remove_file(&tmp);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let errors: Vec<&str> = stdout
            .lines()
            .chain(report.lines())
            .filter(|l| !l.starts_with("ptxas info"))
            .collect();
        return Err(format!(
            "nvcc failed on kernels/{unit} ({}); full output in {}:\n{}",
            output.status,
            failed.display(),
            errors.join("\n")
        ));
    }
    let seconds = started.elapsed().as_secs_f64();
    let report_path = out_dir.join(format!("{stem}.resource-usage.txt"));
    write_atomically(&report_path, report.as_bytes())?;
    std::fs::rename(&tmp, fatbin)
        .map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), fatbin.display()))?;
    let sources_moved = source_hash::unit_hash(kernels, unit)
        .map_err(|e| format!("hashing kernels/{unit}: {e}"))?
        != hash;
    let bytes = std::fs::read(fatbin).map_err(|e| format!("reading {}: {e}", fatbin.display()))?;
    let stamp = stamp_text(hash, &source_hash::sha256_hex(&bytes), &archs.label());
    write_atomically(&stamp_path(fatbin), stamp.as_bytes())?;
    Ok(Compiled {
        report,
        report_path,
        size: bytes.len() as u64,
        seconds,
        sources_moved,
    })
}

/// Writes `bytes` to `path` through a per-process temporary name.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = PathBuf::from(format!("{}.{}.tmp", path.display(), std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("writing {}: {e}", path.display()))
}
