//! The content hash of the CUDA sources, shared (by `#[path]`) between
//! `cargo xtask kernels`, which writes it next to the fatbin, and cuzk-cuda's
//! build script, which embeds the fatbin only when the hashes agree.
//!
//! Hashed: `kernels/manifest.toml` and every `.cu` / `.cuh` file under
//! `kernels/`, in sorted order of their `/`-separated relative paths; each
//! contributes its path, a NUL byte, its length (u64 little-endian) and its
//! bytes to one SHA-256.

use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

/// Files that make up the kernel sources, relative to `kernels_dir`, sorted.
pub fn source_files(kernels_dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    collect(kernels_dir, kernels_dir, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect(base: &Path, dir: &Path, out: &mut Vec<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path: PathBuf = entry?.path();
        if path.is_dir() {
            collect(base, &path, out)?;
            continue;
        }
        let rel = path.strip_prefix(base).expect("walked below base");
        let rel: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let rel = rel.join("/");
        let is_source = rel.ends_with(".cu") || rel.ends_with(".cuh") || rel == "manifest.toml";
        if is_source {
            out.push(rel);
        }
    }
    Ok(())
}

/// Hex SHA-256 over the kernel sources (see the module docs).
pub fn source_hash(kernels_dir: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    for rel in source_files(kernels_dir)? {
        let bytes = std::fs::read(kernels_dir.join(&rel))?;
        hasher.update(rel.as_bytes());
        hasher.update([0u8]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex_lower(&hasher.finalize()))
}

/// Hex SHA-256 of a byte string (the fatbin's own hash in the stamp).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_lower(&Sha256::digest(bytes))
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
