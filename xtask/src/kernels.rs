//! `cargo xtask kernels`: each compilation unit of the manifest into its own
//! fatbin (SASS for every architecture, PTX for the lowest), cached on the
//! unit's hash (the unit and every header): adding or editing one unit
//! compiles only that unit; editing a header compiles them all.
//!
//! Each unit becomes its own CUDA module at run time (cuzk-cuda loads all of
//! them and finds a kernel in whichever has it), so kernel names must be
//! unique across units; unit-local helpers may clash freely.

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../crates/cuzk-cuda/source_hash.rs"]
pub mod source_hash;

/// Real architectures that get SASS by default; PTX is added for the first.
const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"];

/// The pinned toolchain wheels (docs/cuda.md): nvcc, its crt headers, libnvvm,
/// the runtime headers, and CCCL (CUB) headers.
const PINNED_WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];

#[derive(Debug)]
pub(crate) struct Options {
    /// Architectures to build SASS for (`sm_XX`).
    pub archs: Vec<String>,
    /// Whether to add PTX for the lowest architecture (full builds only).
    pub ptx: bool,
    /// Rebuild even when the fatbin's stamp matches the sources and archs.
    pub force: bool,
    /// `bundle` only: kernel folders to leave out (`--exclude msm`).
    pub exclude: Vec<String>,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> Result<Self> {
        let mut archs: Option<String> = std::env::var("CUZK_ARCHS").ok().filter(|s| !s.is_empty());
        let mut force = false;
        let mut exclude = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--force" => force = true,
                "--exclude" => exclude.push(it.next().context("--exclude needs a folder")?.clone()),
                "--arch" | "--archs" => {
                    archs = Some(it.next().context("--arch needs a value")?.clone())
                }
                other => match other.strip_prefix("--arch=") {
                    Some(v) => archs = Some(v.to_string()),
                    None => bail!("unknown argument `{other}`"),
                },
            }
        }
        Ok(match archs {
            None => Options {
                archs: DEFAULT_ARCHS.iter().map(|s| s.to_string()).collect(),
                ptx: true,
                force,
                exclude,
            },
            Some(list) => {
                let archs: Vec<String> = list
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for a in &archs {
                    let ok = a.strip_prefix("sm_").is_some_and(|n| {
                        !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric())
                    });
                    if !ok {
                        bail!("bad architecture `{a}` (expected e.g. sm_90)");
                    }
                }
                if archs.is_empty() {
                    bail!("empty architecture list");
                }
                Options {
                    archs,
                    ptx: false,
                    force,
                    exclude,
                }
            }
        })
    }
}

/// Builds every unit's fatbin into `target/kernels/`; returns that folder.
pub(crate) fn build(root: &Path, opts: &Options) -> Result<PathBuf> {
    build_from(
        &root.join("kernels"),
        &crate::target_dir(root).join("kernels"),
        opts,
        root,
        None,
    )
}

/// Builds one fatbin per manifest unit from the sources in `kernels` into
/// `out_dir` (`<stem>.fatbin` with its stamp `<stem>.fatbin.sha256` and
/// ptxas report `<stem>.resource-usage.txt`, stem from
/// [`source_hash::unit_stem`]); a unit whose stamp matches its hash and the
/// architectures is left alone, or copied from `reuse` (another output folder,
/// e.g. `target/kernels` for a bundle) when it is current there. Returns
/// `out_dir`.
pub(crate) fn build_from(
    kernels: &Path,
    out_dir: &Path,
    opts: &Options,
    root: &Path,
    reuse: Option<&Path>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let units = source_hash::read_manifest(kernels).map_err(anyhow::Error::msg)?;
    check_every_unit_listed(kernels, &units)?;
    let archs = format!(
        "{}{}",
        opts.archs.join(","),
        if opts.ptx { "+ptx" } else { "" }
    );

    let mut stale = Vec::new();
    for unit in &units {
        let hash = source_hash::unit_hash(kernels, unit)
            .with_context(|| format!("hashing kernels/{unit}"))?;
        let fatbin = out_dir.join(format!("{}.fatbin", source_hash::unit_stem(unit)));
        if !opts.force && stamp_matches(&fatbin, &hash, &archs) {
            println!("kernels/{unit}: up to date ({archs}; --force rebuilds)");
        } else if let Some(from) = reuse.filter(|dir| {
            !opts.force && stamp_matches(&dir.join(fatbin.file_name().unwrap()), &hash, &archs)
        }) {
            copy_unit(from, out_dir, unit)?;
            println!("kernels/{unit}: current in {}, copied", from.display());
        } else {
            stale.push((unit, hash, fatbin));
        }
    }
    if stale.is_empty() {
        return Ok(out_dir.to_path_buf());
    }
    let nvcc = find_or_install_nvcc(root)?;
    println!("nvcc: {}", nvcc.display());
    for (unit, hash, fatbin) in stale {
        compile_unit(&nvcc, kernels, unit, &hash, &fatbin, opts, &archs)?;
    }
    Ok(out_dir.to_path_buf())
}

/// Compiles `kernels/<unit>` into `fatbin` (SASS for every architecture,
/// PTX for the lowest when `opts.ptx`) and writes its stamp: the unit's hash
/// (first line), the fatbin's own hash (so that a fatbin and stamp from two
/// concurrent builds never pass as a pair) and the architectures.
fn compile_unit(
    nvcc: &Path,
    kernels: &Path,
    unit: &str,
    hash: &str,
    fatbin: &Path,
    opts: &Options,
    archs: &str,
) -> Result<()> {
    let out_dir = fatbin.parent().expect("fatbin in a folder");
    let stem = source_hash::unit_stem(unit);
    // Per-process names: two builds at once (a shared target dir) must not
    // write each other's files; the final renames are atomic.
    let pid = std::process::id();
    let tmp = out_dir.join(format!("{stem}.fatbin.{pid}.tmp"));
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
    .arg(&tmp)
    .arg(kernels.join(unit));
    for arch in &opts.archs {
        let num = arch.trim_start_matches("sm_");
        cmd.arg("-gencode")
            .arg(format!("arch=compute_{num},code=sm_{num}"));
    }
    if opts.ptx {
        let lowest = opts
            .archs
            .iter()
            .min_by_key(|a| arch_number(a))
            .expect("non-empty");
        let num = lowest.trim_start_matches("sm_");
        cmd.arg("-gencode")
            .arg(format!("arch=compute_{num},code=compute_{num}"));
    }
    println!(
        "kernels/{unit}: compiling for {}{} ...",
        opts.archs.join(","),
        if opts.ptx { " + PTX" } else { "" }
    );
    let started = std::time::Instant::now();
    let output = cmd
        .output()
        .with_context(|| format!("running {}", nvcc.display()))?;
    let report = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        let failed = out_dir.join(format!("{stem}.nvcc-failed.{pid}.txt"));
        std::fs::write(&failed, &report)?;
        let _ = std::fs::remove_file(&tmp);
        eprintln!("{}", String::from_utf8_lossy(&output.stdout));
        eprintln!(
            "{}",
            report
                .lines()
                .filter(|l| !l.starts_with("ptxas info"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        bail!(
            "nvcc failed on kernels/{unit} ({}); full output in {}",
            output.status,
            failed.display()
        );
    }
    let report_path = out_dir.join(format!("{stem}.resource-usage.txt"));
    write_atomically(&report_path, report.as_bytes())?;
    std::fs::rename(&tmp, fatbin)?;

    if source_hash::unit_hash(kernels, unit)? != hash {
        eprintln!(
            "warning: kernels/{unit} or a header changed during the build; its fatbin will be reported stale"
        );
    }
    let fatbin_hash = source_hash::sha256_hex(&std::fs::read(fatbin)?);
    let stamp = format!("{hash}\nfatbin {fatbin_hash}\narchs {archs}\n");
    write_atomically(
        &PathBuf::from(format!("{}.sha256", fatbin.display())),
        stamp.as_bytes(),
    )?;
    let size = std::fs::metadata(fatbin)?.len();
    println!(
        "kernels/{unit}: wrote {} ({:.1} MiB) in {:.0} s; resource report: {}",
        fatbin.display(),
        size as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64(),
        report_path.display()
    );
    print_resource_summary(&report);
    Ok(())
}

/// Copies a unit's fatbin, stamp and resource report from `from` to `to`
/// (each through a temporary name, so a reader never sees half a file).
fn copy_unit(from: &Path, to: &Path, unit: &str) -> Result<()> {
    let stem = source_hash::unit_stem(unit);
    // The fatbin before its stamp: a stamp never describes a missing fatbin.
    for f in [
        format!("{stem}.fatbin"),
        format!("{stem}.resource-usage.txt"),
        format!("{stem}.fatbin.sha256"),
    ] {
        let bytes = std::fs::read(from.join(&f))
            .with_context(|| format!("reading {}", from.join(&f).display()))?;
        write_atomically(&to.join(&f), &bytes)?;
    }
    Ok(())
}

/// Whether `fatbin` exists, is the one its stamp describes, and was built
/// from sources with hash `sources` for `archs`.
fn stamp_matches(fatbin: &Path, sources: &str, archs: &str) -> bool {
    let stamp = std::fs::read_to_string(format!("{}.sha256", fatbin.display())).unwrap_or_default();
    let Ok(bytes) = std::fs::read(fatbin) else {
        return false;
    };
    let want = format!(
        "{sources}\nfatbin {}\narchs {archs}\n",
        source_hash::sha256_hex(&bytes)
    );
    stamp == want
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = PathBuf::from(format!("{}.{}.tmp", path.display(), std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

fn arch_number(arch: &str) -> u32 {
    arch.trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(u32::MAX)
}

fn check_every_unit_listed(kernels: &Path, units: &[String]) -> Result<()> {
    let listed: BTreeSet<&str> = units.iter().map(String::as_str).collect();
    let unlisted: Vec<String> = source_hash::source_files(kernels)?
        .into_iter()
        .filter(|f| f.ends_with(".cu") && !listed.contains(f.as_str()))
        .collect();
    if !unlisted.is_empty() {
        bail!(
            "these CUDA units are not listed in kernels/manifest.toml (or an included manifest): {}",
            unlisted.iter().map(|u| format!("kernels/{u}")).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// nvcc from $NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, or the pinned wheels
/// under target/cuda-toolchain (installed with pip when absent).
fn find_or_install_nvcc(root: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("$NVCC is set to {}, which is not a file", p.display());
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var) {
            let p = PathBuf::from(home).join("bin/nvcc");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("nvcc");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let site = crate::target_dir(root).join("cuda-toolchain/site");
    let nvcc = site.join("nvidia/cu13/bin/nvcc");
    if nvcc.is_file() {
        return Ok(nvcc);
    }
    println!("no nvcc found ($NVCC, $CUDA_HOME/bin, PATH): installing the pinned CUDA 13.0 wheels into {}", site.display());
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&site)
        .args(PINNED_WHEELS)
        .status()
        .context("running python3 -m pip (python3 with pip is needed to fetch nvcc)")?;
    if !status.success() {
        bail!(
            "pip install of {} failed ({status})",
            PINNED_WHEELS.join(" ")
        );
    }
    if !nvcc.is_file() {
        bail!(
            "the wheels installed, but {} is missing (wheel layout changed?)",
            nvcc.display()
        );
    }
    Ok(nvcc)
}

/// Prints, per kernel, registers, stack and spills for the highest
/// architecture built, flagging spills.
fn print_resource_summary(report: &str) {
    struct Entry {
        kernel: String,
        arch: String,
        regs: String,
        stack: String,
        spills: String,
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut current: Option<Entry> = None;
    for line in report.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            if let Some(e) = current.take() {
                entries.push(e);
            }
            let mut it = rest.split('\'');
            let kernel = it.next().unwrap_or("").to_string();
            let arch = it.nth(1).unwrap_or("").to_string();
            current = Some(Entry {
                kernel,
                arch,
                regs: "?".into(),
                stack: "?".into(),
                spills: "?".into(),
            });
        } else if let Some(e) = current.as_mut() {
            if line.contains("bytes stack frame") && e.stack == "?" {
                let nums: Vec<&str> = line
                    .split_whitespace()
                    .filter(|w| w.parse::<u64>().is_ok())
                    .collect();
                if nums.len() >= 3 {
                    e.stack = nums[0].to_string();
                    e.spills = format!("{}/{}", nums[1], nums[2]);
                }
            } else if let Some(r) = line.split("Used ").nth(1) {
                e.regs = r.split_whitespace().next().unwrap_or("?").to_string();
            }
        }
    }
    if let Some(e) = current.take() {
        entries.push(e);
    }
    let Some(top) = entries
        .iter()
        .map(|e| e.arch.clone())
        .max_by_key(|a| arch_number(a))
    else {
        return;
    };
    println!(
        "{:<40} {:>5} {:>7} {:>13}   ({top})",
        "kernel", "regs", "stack", "spill st/ld"
    );
    for e in entries.iter().filter(|e| e.arch == top) {
        let flag = if e.spills != "0/0" { "  <- spills" } else { "" };
        println!(
            "{:<40} {:>5} {:>7} {:>13}{flag}",
            e.kernel, e.regs, e.stack, e.spills
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_manifest_arrays() {
        use source_hash::parse_arrays;
        let text = "# c\nunits = [\n  \"a.cu\", # x\n  \"b/c.cu\",\n]\ninclude = [\"msm/manifest.toml\"]\n";
        let got = parse_arrays(text).unwrap();
        assert_eq!(
            got[0],
            (
                "units".to_string(),
                vec!["a.cu".to_string(), "b/c.cu".to_string()]
            )
        );
        assert_eq!(
            got[1],
            ("include".to_string(), vec!["msm/manifest.toml".to_string()])
        );
        assert!(parse_arrays("units = [\"a.cu\"").is_err());
        assert!(parse_arrays("units = [a.cu]").is_err());
    }

    /// A unit's hash moves with the unit and with any header, never with
    /// another unit or the manifest.
    #[test]
    fn unit_hash_covers_the_unit_and_the_headers_only() {
        use source_hash::{read_manifest, unit_hash};
        let dir = std::env::temp_dir().join(format!("cuzk-unit-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("msm")).unwrap();
        let write = |rel: &str, text: &str| std::fs::write(dir.join(rel), text).unwrap();
        write(
            "manifest.toml",
            "units = [\"a.cu\"]\ninclude = [\"msm/manifest.toml\"]\n",
        );
        write("msm/manifest.toml", "units = [\"b.cu\"]\n");
        write("a.cu", "// a\n");
        write("msm/b.cu", "// b\n");
        write("field.cuh", "// h\n");
        assert_eq!(read_manifest(&dir).unwrap(), ["a.cu", "msm/b.cu"]);
        let hashes = || {
            (
                unit_hash(&dir, "a.cu").unwrap(),
                unit_hash(&dir, "msm/b.cu").unwrap(),
            )
        };
        let (a0, b0) = hashes();
        assert_ne!(a0, b0);

        write("a.cu", "// a, edited\n");
        let (a1, b1) = hashes();
        assert_ne!(a1, a0);
        assert_eq!(b1, b0);

        write("c.cu", "// c\n");
        write(
            "manifest.toml",
            "units = [\"a.cu\", \"c.cu\"]\ninclude = [\"msm/manifest.toml\"]\n",
        );
        assert_eq!(hashes(), (a1.clone(), b1.clone()));

        write("msm/extra.cuh", "// new header\n");
        let (a2, b2) = hashes();
        assert_ne!(a2, a1);
        assert_ne!(b2, b1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
