//! Embeds `target/kernels/cuzk.fatbin` when it exists and was built from the
//! current `kernels/` sources (its `.sha256` matches the sources' content
//! hash, computed by the same code as `cargo xtask kernels`). Otherwise the
//! crate builds without kernels and every GPU call returns
//! `Error::KernelsNotBuilt`, which says to run `cargo xtask kernels`.
//!
//! `CUZK_FATBIN=/path/to/cuzk.fatbin` overrides the location (its `.sha256`
//! must sit beside it).

#[path = "source_hash.rs"]
mod source_hash;

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuzk_kernels)");
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.join("../..");
    let kernels = root.join("kernels");
    println!("cargo::rerun-if-env-changed=CUZK_FATBIN");
    println!("cargo::rerun-if-env-changed=CARGO_TARGET_DIR");
    println!("cargo::rerun-if-changed={}", kernels.display());
    println!("cargo::rerun-if-changed=source_hash.rs");

    let fatbin = match std::env::var_os("CUZK_FATBIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let target = match std::env::var_os("CARGO_TARGET_DIR") {
                Some(t) => root.join(t),
                None => root.join("target"),
            };
            let dir = target.join("kernels");
            // Watch the folder (created if missing, so that cargo has something to
            // watch): a new or rebuilt fatbin changes its contents.
            let _ = std::fs::create_dir_all(&dir);
            println!("cargo::rerun-if-changed={}", dir.display());
            dir.join("cuzk.fatbin")
        }
    };
    let hash_file = PathBuf::from(format!("{}.sha256", fatbin.display()));
    let archs_file = PathBuf::from(format!("{}.archs", fatbin.display()));
    for f in [&fatbin, &hash_file, &archs_file] {
        println!("cargo::rerun-if-changed={}", f.display());
    }

    match check(&kernels, &fatbin, &hash_file) {
        Ok(()) => {
            println!("cargo::rustc-cfg=cuzk_kernels");
            println!("cargo::rustc-env=CUZK_FATBIN_PATH={}", fatbin.display());
        }
        // Not a build error: the crate builds without kernels (CI has no nvcc).
        // Only a stale fatbin is worth a warning; a missing one is the normal
        // state of a machine without CUDA.
        Err(Missing::Stale(why)) => {
            println!("cargo::warning=cuzk-cuda built without CUDA kernels: {why}; run `cargo xtask kernels`");
        }
        Err(Missing::NotBuilt) => {}
    }
}

enum Missing {
    NotBuilt,
    Stale(String),
}

fn check(kernels: &Path, fatbin: &Path, hash_file: &Path) -> Result<(), Missing> {
    if !fatbin.is_file() {
        return Err(Missing::NotBuilt);
    }
    let archs_file = PathBuf::from(format!("{}.archs", fatbin.display()));
    if !archs_file.is_file() {
        return Err(Missing::Stale(format!(
            "{} is missing",
            archs_file.display()
        )));
    }
    let recorded = std::fs::read_to_string(hash_file)
        .map_err(|e| Missing::Stale(format!("{}: {e}", hash_file.display())))?;
    let current = source_hash::source_hash(kernels)
        .map_err(|e| Missing::Stale(format!("hashing {}: {e}", kernels.display())))?;
    if recorded.trim() != current {
        return Err(Missing::Stale(
            "kernels/ changed since the fatbin was built".into(),
        ));
    }
    Ok(())
}
