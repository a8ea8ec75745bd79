//! `cargo xtask install [--prefix DIR] [--arch LIST] [--force]`: the one
//! install path for a GPU box. Builds the kernels (`cargo xtask kernels`,
//! every supported architecture by default), installs the `cuzk` binary
//! with `cargo install --path crates/cuzk --root DIR`, and copies the
//! production fatbins with their stamps to `DIR/lib/cuzk/kernels`, where
//! the binary looks first (`cuzk_cuda::kernels`). The binary checks each
//! fatbin against its stamp and against the kernel sources it was built
//! from, so a copy of the binary without its kernels, or with another
//! build's, refuses to use the GPU by name instead of proving on the CPU.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::kernels::source_hash;

/// Where the fatbins go under the prefix (the binary is in `bin/`).
pub(crate) const KERNELS_UNDER_PREFIX: &str = "lib/cuzk/kernels";

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut prefix = PathBuf::from("/usr/local");
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--prefix" => prefix = PathBuf::from(it.next().context("--prefix needs a folder")?),
            other => match other.strip_prefix("--prefix=") {
                Some(p) => prefix = PathBuf::from(p),
                None => rest.push(arg.clone()),
            },
        }
    }
    let opts = crate::kernels::Options::parse(&rest)?;
    if !opts.exclude.is_empty() {
        bail!("--exclude is for bundles: an install carries every production kernel");
    }
    let built = crate::kernels::build(root, &opts)?;

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "install",
            "--locked",
            "--force",
            "--path",
            "crates/cuzk",
            "--root",
        ])
        .arg(&prefix)
        .status()
        .context("running cargo install")?;
    if !status.success() {
        bail!(
            "cargo install --path crates/cuzk --root {} failed",
            prefix.display()
        );
    }

    let dest = prefix.join(KERNELS_UNDER_PREFIX);
    let placed = place_kernels(&root.join("kernels"), &built, &dest)?;
    println!(
        "installed {} and {placed} kernel fatbins in {}",
        prefix.join("bin/cuzk").display(),
        dest.display()
    );
    println!(
        "check it: {} doctor (the kernels line names their build and folder)",
        prefix.join("bin/cuzk").display()
    );
    Ok(())
}

/// Copies each production unit's fatbin and stamp from `built` to `dest`,
/// removing the fatbins and stamps of an earlier install first (a unit that
/// is gone must not linger). Each file goes through a temporary name; the
/// fatbin before its stamp. Returns the number of fatbins.
fn place_kernels(kernels: &Path, built: &Path, dest: &Path) -> Result<usize> {
    std::fs::create_dir_all(dest).with_context(|| format!("creating {}", dest.display()))?;
    for entry in std::fs::read_dir(dest)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with(".fatbin") || name.ends_with(".fatbin.sha256") {
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the old {}", path.display()))?;
        }
    }
    let units = source_hash::read_manifest_file(kernels, source_hash::MANIFESTS[0])
        .map_err(anyhow::Error::msg)?;
    for unit in &units {
        let stem = source_hash::unit_stem(unit);
        for f in [format!("{stem}.fatbin"), format!("{stem}.fatbin.sha256")] {
            let from = built.join(&f);
            let tmp = dest.join(format!(".{f}.{}.tmp", std::process::id()));
            std::fs::copy(&from, &tmp).with_context(|| format!("copying {}", from.display()))?;
            std::fs::rename(&tmp, dest.join(&f))?;
        }
    }
    Ok(units.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_the_production_units_and_drops_an_old_install() {
        let root = crate::workspace_root();
        let kernels = root.join("kernels");
        let units = source_hash::read_manifest_file(&kernels, source_hash::MANIFESTS[0]).unwrap();
        let scratch = std::env::temp_dir().join(format!("xtask-install-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let (built, dest) = (
            scratch.join("built"),
            scratch.join("prefix/lib/cuzk/kernels"),
        );
        std::fs::create_dir_all(&built).unwrap();
        std::fs::create_dir_all(&dest).unwrap();
        for unit in &units {
            let stem = source_hash::unit_stem(unit);
            std::fs::write(built.join(format!("{stem}.fatbin")), unit.as_bytes()).unwrap();
            std::fs::write(built.join(format!("{stem}.fatbin.sha256")), b"stamp").unwrap();
        }
        std::fs::write(dest.join("gone_unit.fatbin"), b"old").unwrap();
        std::fs::write(dest.join("gone_unit.fatbin.sha256"), b"old").unwrap();
        std::fs::write(dest.join("README"), b"kept").unwrap();

        assert_eq!(place_kernels(&kernels, &built, &dest).unwrap(), units.len());
        let mut names: Vec<String> = std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want: Vec<String> = units
            .iter()
            .flat_map(|u| {
                let stem = source_hash::unit_stem(u);
                [format!("{stem}.fatbin"), format!("{stem}.fatbin.sha256")]
            })
            .chain(["README".to_string()])
            .collect();
        want.sort();
        assert_eq!(names, want);
        let first = source_hash::unit_stem(&units[0]);
        assert_eq!(
            std::fs::read(dest.join(format!("{first}.fatbin"))).unwrap(),
            units[0].as_bytes()
        );
        std::fs::remove_dir_all(&scratch).unwrap();
    }
}
