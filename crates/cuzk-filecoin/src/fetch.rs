//! Downloading the official parameter files.
//!
//! The manifest is the one the Filecoin crates ship (storage-proofs-core's
//! `parameters.json`, and `srs-inner-product.json` for the SnarkPack SRS,
//! [`srs_manifest`]): for each file name, its IPFS content id, its digest
//! and the sector size it is for. A file is fetched from an IPFS HTTP
//! gateway (`<gateway>/<cid>`) into `.<name>.partial` in the cache
//! directory, hashed as it streams, and renamed into place only when its
//! digest is the published one; otherwise the partial file is removed and
//! the download is an error naming both digests.
//!
//! The files are large (a 32 GiB PoRep key is 47 GB, a WindowPoSt key
//! 61 GB), so a download survives its connection: a failed read, a refused
//! connection or a 5xx answer is retried after a doubling wait
//! ([`FetchOptions`]), asking the server for the rest only (HTTP `Range`);
//! a partial file left by an earlier run is resumed the same way (its bytes
//! are hashed first). A server that ignores `Range` sends the whole file
//! again, and it is started over.
//!
//! The digest is the one Filecoin's tools check (storage-proofs-core's
//! `verify_production_entry`, Lotus' paramfetch): BLAKE2b-512 of the whole
//! file, written in lowercase hex, of which the first 32 characters
//! (128 bits) are published.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// How downloads are retried and timed out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchOptions {
    /// Failed attempts in a row (none of them receiving a byte) before a file
    /// is given up; an attempt that made progress resets the count, so a long
    /// download over a flaky link goes on as long as it advances.
    pub retries: u32,
    /// The wait before the first retry; doubled after each failure in a row,
    /// at most [`FetchOptions::max_backoff`].
    pub backoff: Duration,
    /// The longest wait between two retries.
    pub max_backoff: Duration,
    /// A connection or a read that waits longer than this fails (and is
    /// retried).
    pub timeout: Duration,
}

impl Default for FetchOptions {
    /// 8 retries from 2 s up to 60 s (about 5 minutes of outage), 60 s
    /// without a byte before a read is abandoned.
    fn default() -> Self {
        FetchOptions {
            retries: 8,
            backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(60),
            timeout: Duration::from_secs(60),
        }
    }
}

impl FetchOptions {
    /// The wait before retry number `attempt` (1 = the first retry).
    fn wait(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// What a download reports as it goes, to draw progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress<'a> {
    /// This file is next: checked if present, else downloaded.
    File(&'a ManifestEntry),
    /// Hashing bytes already on disk: a complete file, or a partial one
    /// about to be resumed (`bytes` long).
    Hashing {
        /// The file's manifest entry.
        entry: &'a ManifestEntry,
        /// Bytes already on disk, being hashed.
        bytes: u64,
    },
    /// `done` bytes of the file are on disk, of `total` when the server said.
    Bytes {
        /// The file's manifest entry.
        entry: &'a ManifestEntry,
        /// Bytes on disk so far.
        done: u64,
        /// The file's length, when the server said.
        total: Option<u64>,
    },
    /// An attempt failed; the next, retry number `attempt`, asks for the
    /// bytes from `from` on after `wait`.
    Retry {
        /// The file's manifest entry.
        entry: &'a ManifestEntry,
        /// Failed attempts in a row so far.
        attempt: u32,
        /// The byte the next attempt resumes from.
        from: u64,
        /// How long it waits first.
        wait: Duration,
        /// Why the last attempt failed.
        error: String,
    },
}

/// Why a file could not be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    #[error("downloading {name} from {url}: {message}")]
    /// The server's answer cannot be used, and retrying would not change it.
    Http {
        /// The file's name.
        name: String,
        /// The address it was fetched from.
        url: String,
        /// What went wrong.
        message: String,
    },
    #[error(
        "downloading {name} from {url}: gave up after {attempts} attempts in a row without \
         progress, {bytes} bytes in (a next run resumes from {partial} when there are any): {last}",
        partial = partial.display()
    )]
    /// Every retry failed without a byte of progress.
    Exhausted {
        /// The file's name.
        name: String,
        /// The address it was fetched from.
        url: String,
        /// Attempts made in a row.
        attempts: u32,
        /// Bytes on disk when it gave up.
        bytes: u64,
        /// The partial file a next run resumes.
        partial: PathBuf,
        /// Why the last attempt failed.
        last: String,
    },
    #[error(
        "{name}: digest {got} is not the published {expected}; the download was discarded \
         (nothing was written to {dir})",
        dir = dir.display()
    )]
    /// The downloaded file's digest is not the published one (the file is discarded).
    Digest {
        /// The file's name.
        name: String,
        /// The published digest.
        expected: String,
        /// The downloaded file's digest.
        got: String,
        /// The folder it was to go to.
        dir: PathBuf,
    },
    #[error("{context} {path}", path = path.display())]
    /// A local file could not be read or written.
    Io {
        /// What was being done with the file.
        context: &'static str,
        /// The file.
        path: PathBuf,
        #[source]
        /// The I/O error.
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

/// The file a download of `name` streams into, kept between runs.
pub fn partial_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.partial"))
}

/// Fetches each entry into `dir` unless it is already there with the right
/// digest. `gateway` is a URL prefix the content id is appended to
/// (`https://…/ipfs/`, `http://127.0.0.1:8080/ipfs/`). One run per
/// directory at a time: two would write the same partial files.
pub fn fetch(
    dir: &Path,
    gateway: &str,
    entries: &[ManifestEntry],
    options: &FetchOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Fetched>, FetchError> {
    std::fs::create_dir_all(dir).map_err(|source| FetchError::Io {
        context: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(options.timeout)
        .timeout_read(options.timeout)
        .build();
    entries
        .iter()
        .map(|e| {
            progress(Progress::File(e));
            fetch_one(&agent, dir, gateway, e, options, progress)
        })
        .collect()
}

/// The partial file of one download and the hash of what it holds.
struct Partial {
    path: PathBuf,
    file: File,
    state: blake2b_simd::State,
    len: u64,
}

impl Partial {
    /// Opens the partial file, hashing what an earlier run left in it.
    fn open(
        path: PathBuf,
        e: &ManifestEntry,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Partial, FetchError> {
        let io = |context, source| FetchError::Io {
            context,
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|s| io("opening", s))?;
        let len = file
            .metadata()
            .map_err(|s| io("reading the size of", s))?
            .len();
        let mut state = blake2b_simd::Params::new().to_state();
        if len > 0 {
            progress(Progress::Hashing {
                entry: e,
                bytes: len,
            });
            file.rewind().map_err(|s| io("reading", s))?;
            let hashed = io::copy(&mut BufReader::new(&mut file).take(len), &mut state)
                .map_err(|s| io("hashing", s))?;
            if hashed != len {
                return Err(io(
                    "hashing",
                    io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank"),
                ));
            }
        }
        Ok(Partial {
            path,
            file,
            state,
            len,
        })
    }

    /// Empties it: the server sends the whole file again.
    fn restart(&mut self) -> Result<(), FetchError> {
        self.file.set_len(0).map_err(|source| FetchError::Io {
            context: "truncating",
            path: self.path.clone(),
            source,
        })?;
        self.state = blake2b_simd::Params::new().to_state();
        self.len = 0;
        Ok(())
    }

    /// Closes it, removing the file when it holds nothing (a refused or
    /// unreachable file leaves no trace); returns its path and length.
    fn discard_if_empty(self) -> (PathBuf, u64) {
        let Partial {
            path, file, len, ..
        } = self;
        drop(file);
        if len == 0 {
            let _ = std::fs::remove_file(&path);
        }
        (path, len)
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), FetchError> {
        self.file
            .write_all(bytes)
            .map_err(|source| FetchError::Io {
                context: "writing",
                path: self.path.clone(),
                source,
            })?;
        self.state.update(bytes);
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// How one attempt ended without the whole file.
enum Failure {
    /// Worth another attempt (the connection, a timeout, a 5xx).
    Transient(String),
    /// Not: the server refuses the file, or the disk fails.
    Fatal(FetchError),
    /// The partial file was emptied (the server cannot continue it): the
    /// next attempt asks for the whole file at once, not counted as a failure.
    StartOver(String),
}

fn fetch_one(
    agent: &ureq::Agent,
    dir: &Path,
    gateway: &str,
    e: &ManifestEntry,
    options: &FetchOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Fetched, FetchError> {
    let path = dir.join(&e.name);
    let io = |context, path: &Path, source| FetchError::Io {
        context,
        path: path.to_path_buf(),
        source,
    };
    if path.exists() {
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        progress(Progress::Hashing { entry: e, bytes });
        let digest = file_digest(&path).map_err(|s| io("hashing", &path, s))?;
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
    let mut partial = Partial::open(partial_path(dir, &e.name), e, progress)?;
    // A partial file from an earlier run may hold bytes that never reached
    // the disk whole (a crash): if the digest then fails, the file is
    // downloaded once more from the start before giving up.
    let mut resumed_from_disk = partial.len > 0;
    let mut failures = 0u32;
    loop {
        let before = partial.len;
        match attempt(agent, &url, e, &mut partial, progress) {
            Ok(()) => {}
            Err(Failure::Fatal(err)) => {
                partial.discard_if_empty();
                return Err(err);
            }
            Err(Failure::StartOver(why)) => {
                tracing::warn!("{}: {why}", e.name);
                continue;
            }
            Err(Failure::Transient(error)) => {
                failures = if partial.len > before {
                    1
                } else {
                    failures + 1
                };
                if failures > options.retries {
                    let partial = partial.discard_if_empty();
                    return Err(FetchError::Exhausted {
                        name: e.name.clone(),
                        url,
                        attempts: failures,
                        bytes: partial.1,
                        partial: partial.0,
                        last: error,
                    });
                }
                let wait = options.wait(failures);
                tracing::warn!(
                    "{}: {error}; retry {failures} of {} in {wait:?} from byte {}",
                    e.name,
                    options.retries,
                    partial.len
                );
                progress(Progress::Retry {
                    entry: e,
                    attempt: failures,
                    from: partial.len,
                    wait,
                    error,
                });
                std::thread::sleep(wait);
                continue;
            }
        }
        let got = published(&partial.state.finalize());
        if got != e.digest {
            if resumed_from_disk {
                tracing::warn!(
                    "{}: digest {got} is not the published {} after resuming {}: \
                     downloading it again from the start",
                    e.name,
                    e.digest,
                    partial.path.display()
                );
                resumed_from_disk = false;
                partial.restart()?;
                continue;
            }
            let Partial { path: p, file, .. } = partial;
            drop(file);
            let _ = std::fs::remove_file(&p);
            return Err(FetchError::Digest {
                name: e.name.clone(),
                expected: e.digest.clone(),
                got,
                dir: dir.to_path_buf(),
            });
        }
        let total = partial.len;
        let Partial { path: p, file, .. } = partial;
        file.sync_all().map_err(|s| io("syncing", &p, s))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(|s| io("setting permissions of", &p, s))?;
        }
        drop(file);
        std::fs::rename(&p, &path).map_err(|s| io("renaming into", &path, s))?;
        return Ok(Fetched::Downloaded(path, total));
    }
}

/// One request for the bytes `partial` lacks, appended as they come.
fn attempt(
    agent: &ureq::Agent,
    url: &str,
    e: &ManifestEntry,
    partial: &mut Partial,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(), Failure> {
    let fatal = |message: String| {
        Failure::Fatal(FetchError::Http {
            name: e.name.clone(),
            url: url.to_string(),
            message,
        })
    };
    let mut request = agent.get(url);
    if partial.len > 0 {
        request = request.set("Range", &format!("bytes={}-", partial.len));
    }
    let response = match request.call() {
        Ok(r) => r,
        // The partial file is not shorter than the file: start over.
        Err(ureq::Error::Status(416, _)) if partial.len > 0 => {
            partial.restart().map_err(Failure::Fatal)?;
            return Err(Failure::StartOver(
                "the server has no bytes beyond the partial file (HTTP 416): starting over".into(),
            ));
        }
        Err(ureq::Error::Status(code, r)) if code >= 500 || code == 408 || code == 429 => {
            return Err(Failure::Transient(format!(
                "HTTP {code} {}",
                r.status_text()
            )))
        }
        Err(ureq::Error::Status(code, r)) => {
            return Err(fatal(format!("HTTP {code} {}", r.status_text())))
        }
        Err(ureq::Error::Transport(t)) => return Err(Failure::Transient(t.to_string())),
    };
    let total = if response.status() == 206 {
        let range = response.header("Content-Range").unwrap_or("");
        match parse_content_range(range) {
            Some((start, total)) if start == partial.len => total,
            _ => {
                partial.restart().map_err(Failure::Fatal)?;
                return Err(Failure::StartOver(format!(
                    "asked for bytes from {} on, the server sent `Content-Range: {range}`: \
                     starting over",
                    partial.len
                )));
            }
        }
    } else {
        // 200: the whole file, whatever was asked.
        if partial.len > 0 {
            tracing::info!(
                "{}: the server does not resume (HTTP {}): downloading from the start",
                e.name,
                response.status()
            );
            partial.restart().map_err(Failure::Fatal)?;
        }
        response
            .header("Content-Length")
            .and_then(|v| v.trim().parse().ok())
    };
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut reported = partial.len;
    progress(Progress::Bytes {
        entry: e,
        done: partial.len,
        total,
    });
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(Failure::Transient(format!("reading the body: {err}"))),
        };
        partial.append(&buf[..n]).map_err(Failure::Fatal)?;
        if partial.len - reported >= 64 << 20 {
            reported = partial.len;
            progress(Progress::Bytes {
                entry: e,
                done: partial.len,
                total,
            });
        }
    }
    if let Some(total) = total.filter(|t| *t != partial.len) {
        return Err(Failure::Transient(format!(
            "the body ended at byte {} of {total}",
            partial.len
        )));
    }
    progress(Progress::Bytes {
        entry: e,
        done: partial.len,
        total,
    });
    Ok(())
}

/// `bytes START-END/TOTAL` → (START, TOTAL when not `*`).
fn parse_content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (start, _end) = range.split_once('-')?;
    let start = start.trim().parse().ok()?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((start, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_and_backoff() {
        assert_eq!(
            parse_content_range("bytes 100-999/1000"),
            Some((100, Some(1000)))
        );
        assert_eq!(parse_content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(parse_content_range("items 1-2/3"), None);
        let o = FetchOptions::default();
        let waits: Vec<u64> = (1..=7).map(|a| o.wait(a).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(o.wait(40), o.max_backoff);
    }
}
