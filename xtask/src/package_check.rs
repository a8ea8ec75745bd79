//! `cargo xtask package-kernels-check [--arch LIST]`: shows that cuzk-cuda's
//! package alone builds its kernels and that its loader accepts them, as a
//! crate taken from a registry would:
//!
//! 1. packs cuzk-cuda and the workspace crates it depends on (`cargo package
//!    --no-verify`, so with the kernel sources the package carries) and
//!    unpacks the `.crate` files into `<target>/package-kernels-check/`;
//! 2. builds the unpacked cuzk-cuda's `kernels` example with `--features
//!    build-kernels` (its build script compiles the fatbins with nvcc into
//!    its `OUT_DIR`), the other cuzk crates patched in from their unpacked
//!    copies: nothing comes from the checkout but the lock file's versions;
//! 3. runs the example, which reads the fatbins through the loader's default
//!    search as opening a device does (each stamp against the packaged
//!    sources, each fatbin against its stamp), and requires every production
//!    unit, read from that `OUT_DIR`;
//! 4. checks each production fatbin's stamp again from here, with the
//!    packaged sources' hashes (`source_hash.rs`) and the architectures.
//!
//! It needs nvcc (found as `cargo xtask kernels` finds it, the pinned wheels
//! installed when there is none) and minutes of nvcc per architecture, so it
//! is not part of CI. Opening a GPU with the fatbins needs a device: the GPU
//! machine's part.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::kernels::{nvcc, source_hash, Options};

/// The crate under test.
const CRATE: &str = "cuzk-cuda";

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    if opts.force || !opts.exclude.is_empty() {
        bail!("package-kernels-check takes only --arch LIST");
    }
    let archs = opts.nvcc_archs();
    let compiler = crate::kernels::find_or_install_nvcc(root)?;
    let target = crate::target_dir(root);
    let version = workspace_version(root)?;
    let work = target.join("package-kernels-check");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("emptying {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;

    // Every crate packed, as CI does (a crate alone cannot be: its cuzk
    // dependencies are on no registry), then cuzk-cuda and every cuzk crate
    // an unpacked manifest depends on unpacked.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args(["package", "--workspace", "--no-verify", "--allow-dirty"])
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .context("running cargo package")?;
    if !status.success() {
        bail!("cargo package --workspace --no-verify failed");
    }
    let mut wanted = vec![CRATE.to_string()];
    let mut done: Vec<String> = Vec::new();
    while let Some(name) = wanted.pop() {
        if done.contains(&name) {
            continue;
        }
        let unpacked = unpack(&target, &work, &name, &version)?;
        for dep in cuzk_dependencies(&unpacked.join("Cargo.toml"))? {
            if !done.contains(&dep) {
                wanted.push(dep);
            }
        }
        done.push(name);
    }
    let package = work.join(format!("{CRATE}-{version}"));
    let kernels = package.join("kernels");
    if !kernels.join("manifest.toml").is_file() {
        bail!(
            "the packaged {CRATE} has no kernels/manifest.toml ({} is missing)",
            kernels.display()
        );
    }
    // The versions this workspace builds with (and has in its cache).
    std::fs::copy(root.join("Cargo.lock"), package.join("Cargo.lock"))
        .context("copying Cargo.lock")?;

    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&package)
        .args([
            "build",
            "--example",
            "kernels",
            "--features",
            "build-kernels",
            "--message-format=json-render-diagnostics",
        ])
        .env("CARGO_TARGET_DIR", &target)
        .env("NVCC", &compiler)
        .env(
            nvcc::ARCHS_VAR,
            if archs.ptx {
                String::new()
            } else {
                archs.list.join(",")
            },
        );
    for dep in done.iter().filter(|d| *d != CRATE) {
        let path = work.join(format!("{dep}-{version}"));
        cmd.arg("--config").arg(format!(
            "patch.crates-io.{dep}.path={:?}",
            path.display().to_string()
        ));
    }
    println!(
        "building the packaged {CRATE}'s kernels example with --features build-kernels ({}) ...",
        archs.label()
    );
    let started = std::time::Instant::now();
    let output = cmd.output().context("running cargo build")?;
    let json = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!("building the packaged {CRATE} failed ({})", output.status);
    }
    println!("built in {:.0} s", started.elapsed().as_secs_f64());
    let out_dir = json
        .lines()
        .filter(|l| l.contains("\"reason\":\"build-script-executed\""))
        .filter(|l| l.contains(&format!("{CRATE}@{version}")) || l.contains(&format!("{CRATE}#")))
        .find_map(|l| json_string(l, "out_dir"))
        .context("cargo reported no build script run of the packaged cuzk-cuda")?;
    let fatbins = PathBuf::from(out_dir).join("kernels");
    let example = json
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter(|l| l.contains("\"name\":\"kernels\"") && l.contains("\"example\""))
        .find_map(|l| json_string(l, "executable"))
        .context("cargo reported no executable of the kernels example")?;

    // The loader's own check, through its default search.
    let run = Command::new(&example)
        .output()
        .with_context(|| format!("running {example}"))?;
    let report = String::from_utf8_lossy(&run.stdout);
    print!("{report}");
    if !run.status.success() {
        bail!(
            "the loader refused the fatbins: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        );
    }
    let loaded_from = report
        .lines()
        .find_map(|l| l.strip_prefix("dir "))
        .context("the example printed no folder")?;
    if Path::new(loaded_from) != fatbins {
        bail!(
            "the loader read {loaded_from}, not the build's {}",
            fatbins.display()
        );
    }
    let production = source_hash::read_manifest_file(&kernels, source_hash::MANIFESTS[0])
        .map_err(anyhow::Error::msg)?;
    let loaded = report
        .lines()
        .filter(|l| l.starts_with("Production "))
        .count();
    if loaded != production.len() {
        bail!(
            "the loader read {loaded} production units, the packaged manifest lists {}",
            production.len()
        );
    }

    // The same stamps checked from here, against the packaged sources.
    for unit in &production {
        let hash = source_hash::unit_hash(&kernels, unit)?;
        let fatbin = fatbins.join(format!("{}.fatbin", source_hash::unit_stem(unit)));
        if !nvcc::stamp_matches(&fatbin, &hash, &archs.label()) {
            bail!(
                "{}: its stamp does not match the packaged kernels/{unit} (hash {hash}) and {}",
                fatbin.display(),
                archs.label()
            );
        }
    }
    println!(
        "ok: the packaged {CRATE} built its {} production fatbins ({}) into {} and its loader accepts them",
        production.len(),
        archs.label(),
        fatbins.display()
    );
    println!("(opening a GPU with them needs a device: run the GPU suites on the GPU machine)");
    Ok(())
}

/// Unpacks the packed `name` under `work`; returns its folder.
fn unpack(target: &Path, work: &Path, name: &str, version: &str) -> Result<PathBuf> {
    let file = target
        .join("package")
        .join(format!("{name}-{version}.crate"));
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&file)
        .arg("-C")
        .arg(work)
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("unpacking {} failed", file.display());
    }
    Ok(work.join(format!("{name}-{version}")))
}

/// The `cuzk-*` crates a packaged (normalized) manifest lists under
/// `[dependencies.cuzk-…]`.
fn cuzk_dependencies(manifest: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[dependencies.cuzk-"))
        .filter_map(|rest| rest.strip_suffix(']'))
        .map(|rest| format!("cuzk-{rest}"))
        .collect())
}

/// `version` of the root manifest's `[workspace.package]`.
fn workspace_version(root: &Path) -> Result<String> {
    let text = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let section = text
        .split("[workspace.package]")
        .nth(1)
        .context("no [workspace.package] in Cargo.toml")?;
    section
        .lines()
        .find_map(|l| l.trim().strip_prefix("version = "))
        .map(|v| v.trim_matches('"').to_string())
        .context("no version in [workspace.package]")
}

/// The string value of `"key":"…"` in one line of cargo's JSON messages
/// (paths here have no quotes or escapes).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let end = start + line[start..].find('"')?;
    Some(line[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargo_messages_and_packaged_manifests() {
        let line = r#"{"reason":"build-script-executed","package_id":"path+file:///w/cuzk-cuda-0.1.0#cuzk-cuda@0.1.0","out_dir":"/t/debug/build/cuzk-cuda-1/out","env":[]}"#;
        assert_eq!(
            json_string(line, "out_dir").as_deref(),
            Some("/t/debug/build/cuzk-cuda-1/out")
        );
        assert_eq!(json_string(line, "executable"), None);

        let dir = std::env::temp_dir().join(format!("cuzk-pkg-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[dependencies.cudarc]\nversion = \"0.19\"\n\n[dependencies.cuzk-arena]\nversion = \"0.1.0\"\n\n[dependencies.cuzk-field]\nversion = \"0.1.0\"\n\n[dev-dependencies.rand]\nversion = \"0.8\"\n",
        )
        .unwrap();
        assert_eq!(
            cuzk_dependencies(&manifest).unwrap(),
            ["cuzk-arena", "cuzk-field"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
