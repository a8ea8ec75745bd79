//! `fetch` against a small HTTP server on the loopback interface: a file
//! whose digest is the published one is put in the cache; a corrupted one is
//! refused, naming both digests, and leaves nothing behind; so does a
//! missing one. A connection cut mid-body is resumed with a `Range` request,
//! as is a partial file left by an earlier run.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuzk_filecoin::fetch::{
    fetch, file_digest, manifest, partial_path, FetchError, FetchOptions, Fetched, ManifestEntry,
    Progress,
};

/// How the test server answers one path.
#[derive(Clone)]
struct Served {
    body: Vec<u8>,
    /// Honour `Range: bytes=N-` with a 206 (else always the whole body, 200).
    ranges: bool,
    /// The first this many responses stop after `cut_at` bytes of their
    /// body and close the connection (the header announced them all).
    cuts: usize,
    cut_at: usize,
    /// Answer 503 to every request.
    unavailable: bool,
}

impl Served {
    fn plain(body: Vec<u8>) -> Served {
        Served {
            body,
            ranges: true,
            cuts: 0,
            cut_at: 0,
            unavailable: false,
        }
    }
}

/// The `Range` header of each request the server received ("" for none), in order.
type Log = Arc<Mutex<Vec<String>>>;

/// Serves `files` (path → answer) over HTTP/1.1 on 127.0.0.1; returns the
/// gateway URL and the log of the requests' ranges.
fn serve(files: HashMap<String, Served>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    std::thread::spawn(move || {
        let mut files = files;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            let mut range = String::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    if name.eq_ignore_ascii_case("range") {
                        range = value.trim().to_string();
                    }
                }
            }
            seen.lock().unwrap().push(range.clone());
            let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
            let Some(served) = files.get_mut(&path) else {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
                );
                continue;
            };
            if served.unavailable {
                let _ = stream.write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            let len = served.body.len();
            let start = range
                .strip_prefix("bytes=")
                .and_then(|r| r.strip_suffix('-'))
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|_| served.ranges);
            let (head, from) = match start {
                Some(s) if s >= len => (
                    format!(
                        "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\n\
                         Content-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    len,
                ),
                Some(s) => (
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {s}-{}/{len}\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n",
                        len - 1,
                        len - s
                    ),
                    s,
                ),
                None => (
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
                    ),
                    0,
                ),
            };
            let mut to = len;
            if served.cuts > 0 {
                served.cuts -= 1;
                to = (from + served.cut_at).min(len);
            }
            let body = &served.body[from..to];
            // The client may hang up first (a refused digest): not an error here.
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    (format!("http://{addr}/ipfs/"), log)
}

fn entry(name: &str, cid: &str, digest: String) -> ManifestEntry {
    ManifestEntry {
        name: name.into(),
        cid: cid.into(),
        digest,
        sector_size: 2048,
    }
}

fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// No waiting between retries: the tests are about what is asked, not when.
fn quick(retries: u32) -> FetchOptions {
    FetchOptions {
        retries,
        backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
        timeout: Duration::from_secs(30),
    }
}

/// 300 KB of a fixed pattern and its published digest (computed through the
/// same path a user's file takes).
fn body_and_digest() -> (Vec<u8>, String) {
    let body: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 255) as u8).collect();
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("g"), &body).unwrap();
    let digest = file_digest(&scratch.path().join("g")).unwrap();
    (body, digest)
}

#[test]
fn digest_is_the_published_form_of_blake2b_512() {
    // BLAKE2b-512 of the empty input starts 786a02f7…; 32 hex characters are published.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(
        file_digest(&empty).unwrap(),
        "786a02f742015903c6c6fd852552d272"
    );
}

#[test]
fn good_file_is_kept_corrupted_and_missing_ones_leave_nothing() {
    let (good, good_digest) = body_and_digest();
    let mut corrupted = good.clone();
    corrupted[123_456] ^= 0x20;
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("c"), &corrupted).unwrap();
    let corrupted_digest = file_digest(&scratch.path().join("c")).unwrap();

    let (gateway, _) = serve(HashMap::from([
        ("/ipfs/QmGood".to_string(), Served::plain(good.clone())),
        ("/ipfs/QmBad".to_string(), Served::plain(corrupted)),
    ]));
    let cache = tempfile::tempdir().unwrap();
    let good_entry = entry("v28-good.params", "QmGood", good_digest.clone());
    let bad_entry = entry("v28-bad.params", "QmBad", good_digest.clone());
    let missing_entry = entry("v28-missing.vk", "QmMissing", good_digest.clone());

    let mut heard = Vec::new();
    let got = fetch(
        cache.path(),
        &gateway,
        std::slice::from_ref(&good_entry),
        &quick(0),
        &mut |p| {
            if let Progress::File(e) = p {
                heard.push(e.name.clone())
            }
        },
    )
    .unwrap();
    let kept = cache.path().join("v28-good.params");
    assert_eq!(
        got,
        vec![Fetched::Downloaded(kept.clone(), good.len() as u64)]
    );
    assert_eq!(std::fs::read(&kept).unwrap(), good);
    assert_eq!(heard, vec!["v28-good.params".to_string()]);

    // Present with the right digest: not downloaded again.
    let again = fetch(
        cache.path(),
        &gateway,
        &[good_entry],
        &quick(0),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again, vec![Fetched::Present(kept)]);

    let err = fetch(cache.path(), &gateway, &[bad_entry], &quick(0), &mut |_| {}).unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("v28-bad.params")
            && message.contains(&good_digest)
            && message.contains(&corrupted_digest)
            && message.contains("discarded"),
        "{message}"
    );

    // A 404 is final: not retried.
    let err = fetch(
        cache.path(),
        &gateway,
        &[missing_entry],
        &quick(3),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, FetchError::Http { .. }), "{err}");
    assert!(err.to_string().contains("404"), "{err}");

    // Only the good file: no corrupted file, no partial leftovers.
    assert_eq!(
        listing(cache.path()),
        BTreeSet::from(["v28-good.params".to_string()])
    );
}

#[test]
fn a_cut_connection_is_resumed_from_where_it_stopped() {
    let (body, digest) = body_and_digest();
    let (gateway, log) = serve(HashMap::from([(
        "/ipfs/QmCut".to_string(),
        Served {
            cuts: 2,
            cut_at: 100_000,
            ..Served::plain(body.clone())
        },
    )]));
    let cache = tempfile::tempdir().unwrap();
    let mut retries = Vec::new();
    let got = fetch(
        cache.path(),
        &gateway,
        &[entry("v28-cut.params", "QmCut", digest)],
        &quick(1),
        &mut |p| {
            if let Progress::Retry { attempt, from, .. } = p {
                retries.push((attempt, from))
            }
        },
    )
    .unwrap();
    let path = cache.path().join("v28-cut.params");
    assert_eq!(got, vec![Fetched::Downloaded(path.clone(), 300_000)]);
    assert_eq!(std::fs::read(&path).unwrap(), body);
    // Each cut made progress, so one retry allowed in a row was enough twice.
    assert_eq!(*log.lock().unwrap(), ["", "bytes=100000-", "bytes=200000-"]);
    assert_eq!(retries, [(1, 100_000), (1, 200_000)]);
    assert_eq!(
        listing(cache.path()),
        BTreeSet::from(["v28-cut.params".into()])
    );
}

/// What an earlier run left: a partial file of `prefix` (the body's first
/// bytes, or something else).
fn resume_check(prefix: &[u8], ranges: bool, expected_requests: &[&str]) {
    let (body, digest) = body_and_digest();
    let (gateway, log) = serve(HashMap::from([(
        "/ipfs/QmPart".to_string(),
        Served {
            ranges,
            ..Served::plain(body.clone())
        },
    )]));
    let cache = tempfile::tempdir().unwrap();
    std::fs::write(partial_path(cache.path(), "v28-part.vk"), prefix).unwrap();
    let mut hashed = Vec::new();
    fetch(
        cache.path(),
        &gateway,
        &[entry("v28-part.vk", "QmPart", digest)],
        &quick(0),
        &mut |p| {
            if let Progress::Hashing { bytes, .. } = p {
                hashed.push(bytes)
            }
        },
    )
    .unwrap();
    assert_eq!(
        std::fs::read(cache.path().join("v28-part.vk")).unwrap(),
        body
    );
    assert_eq!(*log.lock().unwrap(), expected_requests);
    assert_eq!(hashed, [prefix.len() as u64]);
    assert_eq!(
        listing(cache.path()),
        BTreeSet::from(["v28-part.vk".into()])
    );
}

#[test]
fn a_partial_file_of_an_earlier_run_is_resumed() {
    let (body, _) = body_and_digest();
    resume_check(&body[..123_457], true, &["bytes=123457-"]);
}

#[test]
fn a_server_that_ignores_ranges_sends_it_all_again() {
    let (body, _) = body_and_digest();
    resume_check(&body[..50_000], false, &["bytes=50000-"]);
}

#[test]
fn a_damaged_partial_file_is_downloaded_again_from_the_start() {
    // Right length, wrong bytes (a crash that left zeros): the resumed
    // file's digest fails, and the whole file is fetched once more.
    resume_check(&[0u8; 200_000], true, &["bytes=200000-", ""]);
}

#[test]
fn a_partial_file_as_long_as_the_file_starts_over() {
    // The server answers 416: nothing beyond it.
    resume_check(&[1u8; 300_000], true, &["bytes=300000-", ""]);
}

#[test]
fn an_unavailable_server_is_given_up_after_the_retries() {
    let (gateway, log) = serve(HashMap::from([(
        "/ipfs/QmDown".to_string(),
        Served {
            unavailable: true,
            ..Served::plain(vec![1, 2, 3])
        },
    )]));
    let cache = tempfile::tempdir().unwrap();
    let err = fetch(
        cache.path(),
        &gateway,
        &[entry("v28-down.params", "QmDown", "0".repeat(32))],
        &quick(2),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, FetchError::Exhausted { attempts: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!(log.lock().unwrap().len(), 3);
    // Nothing was received: no partial file is left.
    assert!(listing(cache.path()).is_empty());
}

#[test]
fn a_wrong_file_in_the_cache_is_replaced() {
    let body = b"the right contents".to_vec();
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("r"), &body).unwrap();
    let digest = file_digest(&scratch.path().join("r")).unwrap();
    let (gateway, _) = serve(HashMap::from([(
        "/ipfs/QmRight".to_string(),
        Served::plain(body.clone()),
    )]));
    let cache = tempfile::tempdir().unwrap();
    let path = cache.path().join("v28-x.vk");
    std::fs::write(&path, b"stale").unwrap();
    let got = fetch(
        cache.path(),
        &gateway,
        &[entry("v28-x.vk", "QmRight", digest)],
        &quick(0),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        got,
        vec![Fetched::Downloaded(path.clone(), body.len() as u64)]
    );
    assert_eq!(std::fs::read(&path).unwrap(), body);
}

#[test]
fn manifest_has_the_porep_files_of_each_sector_size() {
    for size in [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30] {
        let files = manifest(Some(size), true);
        let names: Vec<_> = files.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(files.len(), 2, "{size}: {names:?}");
        assert!(names.iter().any(|n| n.ends_with(".params")));
        assert!(names.iter().any(|n| n.ends_with(".vk")));
        assert!(files
            .iter()
            .all(|e| e.digest.len() == 32 && e.sector_size == size));
    }
}
