//! Downloading the official parameter files.
//!
//! The manifest is the one the Filecoin crates ship (storage-proofs-core's
//! `parameters.json`, and `srs-inner-product.json` for the SnarkPack SRS,
//! [`srs_manifest`]): for each file name, its IPFS content id, its digest
//! and the sector size it is for. A file is fetched from an IPFS HTTP
//! gateway (`<gateway>/<cid>`), hashed while it streams to a temporary file
//! in the cache directory, and renamed into place only when its digest is
//! the published one; otherwise the temporary file is removed and the
//! download is an error.
//!
//! The digest is the one Filecoin's tools check (storage-proofs-core's
//! `verify_production_entry`, Lotus' paramfetch): BLAKE2b-512 of the whole
//! file, written in lowercase hex, of which the first 32 characters
//! (128 bits) are published.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use storage_proofs_core::parameter_cache::{PARAMETERS, SRS_PARAMETERS};

/// The gateway Filecoin's paramfetch uses when `IPFS_GATEWAY` is not set.
pub const DEFAULT_GATEWAY: &str = "https://proofs.filecoin.io/ipfs/";

/// Hex characters of the published digest.
pub const DIGEST_HEX_LEN: usize = 32;

/// One file of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    /// File name in the cache (`v28-…​.params`, `.vk`).
    pub name: String,
    /// IPFS content id.
    pub cid: String,
    /// Published digest (see the module docs).
    pub digest: String,
    /// Sector size the circuit is for, in bytes.
    pub sector_size: u64,
}

/// The crates' manifest, optionally restricted to one sector size and to
/// PoRep files (`stacked-proof-of-replication`), in name order.
pub fn manifest(sector_size: Option<u64>, porep_only: bool) -> Vec<ManifestEntry> {
    PARAMETERS
        .iter()
        .filter(|(_, d)| sector_size.is_none_or(|s| d.sector_size == s))
        .filter(|(name, _)| !porep_only || name.contains("stacked-proof-of-replication"))
        .map(|(name, d)| ManifestEntry {
            name: name.clone(),
            cid: d.cid.clone(),
            digest: d.digest.clone(),
            sector_size: d.sector_size,
        })
        .collect()
}

/// The SnarkPack SRS (`v28-fil-inner-product-v1.srs`, for non-interactive
/// PoRep and aggregates), from the crates' other manifest
/// (storage-proofs-core's `srs-inner-product.json`; its sector size is 0:
/// one file for every size).
pub fn srs_manifest() -> Vec<ManifestEntry> {
    SRS_PARAMETERS
        .iter()
        .map(|(name, d)| ManifestEntry {
            name: name.clone(),
            cid: d.cid.clone(),
            digest: d.digest.clone(),
            sector_size: d.sector_size,
        })
        .collect()
}

/// Why a file could not be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    #[error("downloading {name} from {url}: {message}")]
    Http {
        name: String,
        url: String,
        message: String,
    },
    #[error(
        "{name}: digest {got} is not the published {expected}; the download was discarded \
         (nothing was written to {dir})",
        dir = dir.display()
    )]
    Digest {
        name: String,
        expected: String,
        got: String,
        dir: PathBuf,
    },
    #[error("{context} {path}", path = path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// It was already there with the published digest.
    Present(PathBuf),
    /// It was downloaded, checked and put in place; this many bytes.
    Downloaded(PathBuf, u64),
}

/// The published form of a file's digest.
pub fn file_digest(path: &Path) -> io::Result<String> {
    let mut state = blake2b_simd::Params::new().to_state();
    io::copy(&mut BufReader::new(File::open(path)?), &mut state)?;
    Ok(published(&state.finalize()))
}

fn published(hash: &blake2b_simd::Hash) -> String {
    hash.to_hex()[..DIGEST_HEX_LEN].to_string()
}

/// Fetches each entry into `dir` unless it is already there with the right
/// digest. `gateway` is a URL prefix the content id is appended to
/// (`https://…/ipfs/`, `http://127.0.0.1:8080/ipfs/`). `progress` hears
/// each file's name before it is checked or downloaded.
pub fn fetch(
    dir: &Path,
    gateway: &str,
    entries: &[ManifestEntry],
    progress: &mut dyn FnMut(&ManifestEntry),
) -> Result<Vec<Fetched>, FetchError> {
    std::fs::create_dir_all(dir).map_err(|source| FetchError::Io {
        context: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(std::time::Duration::from_secs(30))
        .build();
    entries
        .iter()
        .map(|e| {
            progress(e);
            fetch_one(&agent, dir, gateway, e)
        })
        .collect()
}

fn fetch_one(
    agent: &ureq::Agent,
    dir: &Path,
    gateway: &str,
    e: &ManifestEntry,
) -> Result<Fetched, FetchError> {
    let path = dir.join(&e.name);
    if path.exists() {
        let digest = file_digest(&path).map_err(|source| FetchError::Io {
            context: "hashing",
            path: path.clone(),
            source,
        })?;
        if digest == e.digest {
            return Ok(Fetched::Present(path));
        }
        tracing::warn!(
            "{} has digest {digest}, not {}: downloading it again",
            e.name,
            e.digest
        );
    }
    let url = format!("{}/{}", gateway.trim_end_matches('/'), e.cid);
    let http = |message: String| FetchError::Http {
        name: e.name.clone(),
        url: url.clone(),
        message,
    };
    let response = agent
        .get(&url)
        .call()
        .map_err(|err| http(err.to_string()))?;
    let io = |context, source| FetchError::Io {
        context,
        path: path.clone(),
        source,
    };
    // The temporary file is deleted on every early return (Drop).
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", e.name))
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|s| io("creating a temporary file for", s))?;
    let mut state = blake2b_simd::Params::new().to_state();
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|err| http(format!("reading the body: {err}")))?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
        tmp.write_all(&buf[..n])
            .map_err(|s| io("writing a temporary file for", s))?;
        total += n as u64;
    }
    let got = published(&state.finalize());
    if got != e.digest {
        return Err(FetchError::Digest {
            name: e.name.clone(),
            expected: e.digest.clone(),
            got,
            dir: dir.to_path_buf(),
        });
    }
    tmp.as_file()
        .sync_all()
        .map_err(|s| io("syncing a temporary file for", s))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|s| io("setting permissions of", s))?;
    }
    tmp.persist(&path)
        .map_err(|err| io("renaming into", err.error))?;
    Ok(Fetched::Downloaded(path, total))
}
