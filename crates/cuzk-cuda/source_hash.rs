//! The kernel sources as the build sees them, shared (by `#[path]`) between
//! `cargo xtask kernels`, which writes each unit's hash next to its fatbin,
//! and cuzk-cuda's build script, which records the same hashes so that the
//! run-time loader accepts only fatbins built from this build's sources.
//!
//! * The manifest (`kernels/manifest.toml`, with its `include`d
//!   sub-manifests) lists the compilation units; [`read_manifest`].
//! * A unit's hash covers the unit's own file and every header (`.cuh`)
//!   under `kernels/`: editing a header rebuilds every unit, editing or adding
//!   a unit rebuilds only that unit; [`unit_hash`].
//!
//! Each hashed file contributes its `/`-separated path relative to
//! `kernels/`, a NUL byte, its length (u64 little-endian) and its bytes to
//! one SHA-256, headers in sorted path order after the unit.

// Included by `#[path]` as a private module of two crates (this build script
// and xtask), each using a different part of it: the items stay `pub` so the
// part one includer leaves unused is not dead code there.
#![allow(unreachable_pub)]

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// Files that make up the kernel sources (`.cu`, `.cuh` and `manifest.toml`
/// files), relative to `kernels_dir`, sorted.
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
        let is_source =
            rel.ends_with(".cu") || rel.ends_with(".cuh") || rel.ends_with("manifest.toml");
        if is_source {
            out.push(rel);
        }
    }
    Ok(())
}

/// Hex SHA-256 of `unit` (a path relative to `kernels_dir`, as the manifest
/// lists it) and every header under `kernels_dir` (see the module docs).
pub fn unit_hash(kernels_dir: &Path, unit: &str) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let headers = source_files(kernels_dir)?
        .into_iter()
        .filter(|f| f.ends_with(".cuh"));
    for rel in std::iter::once(unit.to_string()).chain(headers) {
        let bytes = std::fs::read(kernels_dir.join(&rel))?;
        hasher.update(rel.as_bytes());
        hasher.update([0u8]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex_lower(&hasher.finalize()))
}

/// Hex SHA-256 of a byte string (a fatbin's own hash in its stamp).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_lower(&Sha256::digest(bytes))
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file name stem of a unit's fatbin: its path with `/` as `_` and
/// without `.cu` (`msm/g1.cu` → `msm_g1`, so `msm_g1.fatbin` and its stamp
/// `msm_g1.fatbin.sha256`).
pub fn unit_stem(unit: &str) -> String {
    unit.trim_end_matches(".cu").replace('/', "_")
}

/// The manifests of the kernel units, relative to `kernels/`: the production
/// units (what a proof runs) and the test and benchmark units (probes of the
/// device arithmetic, tuning variants), which a release build need not carry.
pub const MANIFESTS: [&str; 2] = ["manifest.toml", "manifest-dev.toml"];

/// Every unit of both manifests ([`MANIFESTS`]; the second may be absent),
/// relative to `kernels_dir`, in manifest order; a unit listed twice, in one
/// manifest or across both, is an error.
pub fn read_manifest(kernels_dir: &Path) -> Result<Vec<String>, String> {
    let mut units = Vec::new();
    for (i, manifest) in MANIFESTS.iter().enumerate() {
        if i > 0 && !kernels_dir.join(manifest).is_file() {
            continue;
        }
        units.extend(read_manifest_file(kernels_dir, manifest)?);
    }
    let mut seen = BTreeSet::new();
    for u in &units {
        if !seen.insert(u) {
            return Err(format!("kernels/{u} is listed twice in the manifests"));
        }
    }
    Ok(units)
}

/// The units listed by `kernels_dir/<manifest>` and its includes, relative
/// to `kernels_dir`, in manifest order.
///
/// A manifest holds `units = ["a.cu", …]` (paths relative to the manifest's
/// folder) and optionally `include = ["msm/manifest.toml", …]`, sub-manifests
/// of the same form. Errors name the manifest and the entry.
pub fn read_manifest_file(kernels_dir: &Path, manifest: &str) -> Result<Vec<String>, String> {
    let mut units = Vec::new();
    read_manifest_into(kernels_dir, manifest, &mut units, 0)?;
    Ok(units)
}

fn read_manifest_into(
    kernels: &Path,
    rel: &str,
    units: &mut Vec<String>,
    depth: u32,
) -> Result<(), String> {
    if depth > 4 {
        return Err(format!("manifest includes nest too deep at kernels/{rel}"));
    }
    let path = kernels.join(rel);
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let dir = rel
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap_or_default();
    for (key, values) in parse_arrays(&text).map_err(|e| format!("parsing kernels/{rel}: {e}"))? {
        for v in values {
            let full = format!("{dir}{v}");
            match key.as_str() {
                "units" => {
                    if !full.ends_with(".cu") {
                        return Err(format!("kernels/{rel}: unit `{v}` is not a .cu file"));
                    }
                    if !kernels.join(&full).is_file() {
                        return Err(format!(
                            "kernels/{rel} lists `{v}`, but kernels/{full} does not exist"
                        ));
                    }
                    units.push(full);
                }
                "include" => read_manifest_into(kernels, &full, units, depth + 1)?,
                other => {
                    return Err(format!(
                        "kernels/{rel}: unknown key `{other}` (expected units or include)"
                    ))
                }
            }
        }
    }
    Ok(())
}

/// The tiny TOML subset the manifests use: `key = [ "string", … ]` arrays of
/// strings (over several lines if wanted) and `#` comments.
pub fn parse_arrays(text: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for (no, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut rest = line;
        if open.is_none() {
            let (key, value) = rest
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected `key = [`", no + 1))?;
            let Some(after) = value.trim().strip_prefix('[') else {
                return Err(format!("line {}: expected an array", no + 1));
            };
            open = Some((key.trim().to_string(), Vec::new()));
            rest = after;
        }
        let (_, values) = open.as_mut().expect("set above");
        let mut closed = false;
        for part in rest.split(',') {
            let mut part = part.trim();
            if let Some(p) = part.strip_suffix(']') {
                closed = true;
                part = p.trim();
            }
            if part.is_empty() {
                continue;
            }
            let s = part
                .strip_prefix('"')
                .and_then(|p| p.strip_suffix('"'))
                .ok_or_else(|| {
                    format!("line {}: expected a quoted string, got `{part}`", no + 1)
                })?;
            values.push(s.to_string());
        }
        if closed {
            out.push(open.take().expect("open"));
        }
    }
    if let Some((key, _)) = open {
        return Err(format!("array `{key}` is not closed"));
    }
    Ok(out)
}
