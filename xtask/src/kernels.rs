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

// The nvcc command line, the stamp and finding nvcc: shared with
// cuzk-cuda's build script (its `build-kernels` feature), which uses parts
// this crate does not.
#[allow(dead_code)]
#[path = "../../crates/cuzk-cuda/nvcc.rs"]
pub mod nvcc;

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
        let mut archs: Option<String> = std::env::var(nvcc::ARCHS_VAR).ok();
        let mut force = false;
        let mut exclude = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--force" => force = true,
                "--exclude" => exclude.push(it.next().context("--exclude needs a folder")?.clone()),
                "--arch" | "--archs" => {
                    let list = it.next().context("--arch needs a value")?;
                    if list.trim().is_empty() {
                        bail!("empty architecture list");
                    }
                    archs = Some(list.clone());
                }
                other => match other.strip_prefix("--arch=") {
                    Some(v) if v.trim().is_empty() => bail!("empty architecture list"),
                    Some(v) => archs = Some(v.to_string()),
                    None => bail!("unknown argument `{other}`"),
                },
            }
        }
        let archs = nvcc::Archs::parse(archs.as_deref()).map_err(anyhow::Error::msg)?;
        Ok(Options {
            archs: archs.list,
            ptx: archs.ptx,
            force,
            exclude,
        })
    }

    /// The architectures as the shared compiler code takes them.
    pub(crate) fn nvcc_archs(&self) -> nvcc::Archs {
        nvcc::Archs {
            list: self.archs.clone(),
            ptx: self.ptx,
        }
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
    let nvcc_archs = opts.nvcc_archs();
    let archs = nvcc_archs.label();

    let mut stale = Vec::new();
    for unit in &units {
        let hash = source_hash::unit_hash(kernels, unit)
            .with_context(|| format!("hashing kernels/{unit}"))?;
        let fatbin = out_dir.join(format!("{}.fatbin", source_hash::unit_stem(unit)));
        if !opts.force && nvcc::stamp_matches(&fatbin, &hash, &archs) {
            println!("kernels/{unit}: up to date ({archs}; --force rebuilds)");
        } else if let Some(from) = reuse.filter(|dir| {
            !opts.force
                && nvcc::stamp_matches(&dir.join(fatbin.file_name().unwrap()), &hash, &archs)
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
    let compiler = find_or_install_nvcc(root)?;
    println!("nvcc: {}", compiler.display());
    for (unit, hash, fatbin) in stale {
        println!(
            "kernels/{unit}: compiling for {}{} ...",
            opts.archs.join(","),
            if opts.ptx { " + PTX" } else { "" }
        );
        let done = nvcc::compile_unit(&compiler, kernels, unit, &hash, &fatbin, &nvcc_archs)
            .map_err(anyhow::Error::msg)?;
        if done.sources_moved {
            eprintln!(
                "warning: kernels/{unit} or a header changed during the build; its fatbin will be reported stale"
            );
        }
        println!(
            "kernels/{unit}: wrote {} ({:.1} MiB) in {:.0} s; resource report: {}",
            fatbin.display(),
            done.size as f64 / (1 << 20) as f64,
            done.seconds,
            done.report_path.display()
        );
        print_resource_summary(&done.report);
    }
    Ok(out_dir.to_path_buf())
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
        nvcc::write_atomically(&to.join(&f), &bytes).map_err(anyhow::Error::msg)?;
    }
    Ok(())
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

/// nvcc as [`nvcc::find_nvcc`] finds it ($NVCC, $CUDA_HOME/bin,
/// $CUDA_PATH/bin, PATH), or the pinned wheels under
/// target/cuda-toolchain (installed with pip when absent).
pub(crate) fn find_or_install_nvcc(root: &Path) -> Result<PathBuf> {
    let not_found = match nvcc::find_nvcc(&|name| std::env::var_os(name)) {
        Ok(p) => return Ok(p),
        // A wrong $NVCC is an error, not a reason to install another.
        Err(e) if std::env::var_os("NVCC").is_some() => bail!("{e}"),
        Err(e) => e,
    };
    let site = crate::target_dir(root).join("cuda-toolchain/site");
    let nvcc = site.join(nvcc::WHEEL_NVCC);
    if nvcc.is_file() {
        return Ok(nvcc);
    }
    println!(
        "{not_found}: installing the pinned CUDA 13.0 wheels into {}",
        site.display()
    );
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
        .args(nvcc::PINNED_WHEELS)
        .status()
        .context("running python3 -m pip (python3 with pip is needed to fetch nvcc)")?;
    if !status.success() {
        bail!(
            "pip install of {} failed ({status})",
            nvcc::PINNED_WHEELS.join(" ")
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
        .max_by_key(|a| nvcc::arch_number(a))
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
