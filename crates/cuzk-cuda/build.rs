//! Embeds `target/kernels/cuzk.fatbin` when it exists and was built from the
//! current `kernels/` sources (its `.sha256` matches the sources' content
//! hash, computed by the same code as `cargo xtask kernels`). Otherwise the
//! crate builds without kernels and every GPU call returns
//! `Error::KernelsNotBuilt`, which says to run `cargo xtask kernels`.
//!
//! `CUZK_FATBIN=/path/to/cuzk.fatbin` overrides the location (its `.sha256`
//! must sit beside it), and `CUZK_KERNELS_DIR` the sources it is checked
//! against (`cargo xtask bundle` builds from a snapshot of `kernels/`).

#[path = "source_hash.rs"]
mod source_hash;

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuzk_kernels)");
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.join("../..");
    // CUZK_KERNELS_DIR: the sources the fatbin was built from, when not
    // kernels/ (`cargo xtask bundle` builds from a snapshot).
    let kernels = match std::env::var_os("CUZK_KERNELS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("kernels"),
    };
    println!("cargo::rerun-if-env-changed=CUZK_KERNELS_DIR");
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
    for f in [&fatbin, &hash_file] {
        println!("cargo::rerun-if-changed={}", f.display());
    }

    match check(&kernels, &fatbin, &hash_file) {
        Ok(archs) => {
            println!("cargo::rustc-cfg=cuzk_kernels");
            println!("cargo::rustc-env=CUZK_FATBIN_PATH={}", fatbin.display());
            println!("cargo::rustc-env=CUZK_FATBIN_ARCHS={archs}");
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

/// Checks the stamp written by `cargo xtask kernels` (`<sources hash>`,
/// `fatbin <sha256 of the fatbin>`, `archs <list>`, one per line) against the
/// sources and the fatbin; returns the architecture list.
fn check(kernels: &Path, fatbin: &Path, hash_file: &Path) -> Result<String, Missing> {
    if !fatbin.is_file() {
        return Err(Missing::NotBuilt);
    }
    let stamp = std::fs::read_to_string(hash_file)
        .map_err(|e| Missing::Stale(format!("{}: {e}", hash_file.display())))?;
    let mut lines = stamp.lines();
    let recorded = lines.next().unwrap_or("").trim();
    let mut fatbin_hash = "";
    let mut archs = "unknown";
    for line in lines {
        if let Some(v) = line.strip_prefix("fatbin ") {
            fatbin_hash = v.trim();
        } else if let Some(v) = line.strip_prefix("archs ") {
            archs = v.trim();
        }
    }
    let current = source_hash::source_hash(kernels)
        .map_err(|e| Missing::Stale(format!("hashing {}: {e}", kernels.display())))?;
    if recorded != current {
        return Err(Missing::Stale(
            "kernels/ changed since the fatbin was built".into(),
        ));
    }
    let bytes =
        std::fs::read(fatbin).map_err(|e| Missing::Stale(format!("{}: {e}", fatbin.display())))?;
    if source_hash::sha256_hex(&bytes) != fatbin_hash {
        return Err(Missing::Stale(format!(
            "{} does not match its stamp (two builds at once?)",
            fatbin.display()
        )));
    }
    Ok(archs.to_string())
}
