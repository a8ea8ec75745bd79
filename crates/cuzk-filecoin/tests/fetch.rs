//! `fetch` against a small HTTP server on the loopback interface: a file
//! whose digest is the published one is put in the cache; a corrupted one is
//! refused and leaves nothing behind; so does a missing one.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use cuzk_filecoin::fetch::{fetch, file_digest, manifest, FetchError, Fetched, ManifestEntry};

/// Serves `files` (path → body) over HTTP/1.1 on 127.0.0.1; returns the base URL.
fn serve(files: HashMap<String, Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
            }
            let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
            let (status, body) = match files.get(&path) {
                Some(body) => ("200 OK", body.clone()),
                None => ("404 Not Found", b"not found".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&body).unwrap();
        }
    });
    format!("http://{addr}/ipfs/")
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
    let good: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 255) as u8).collect();
    let mut corrupted = good.clone();
    corrupted[123_456] ^= 0x20;
    // The digest of `good`, computed through the same path a user's file takes.
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("g"), &good).unwrap();
    let good_digest = file_digest(&scratch.path().join("g")).unwrap();

    let gateway = serve(HashMap::from([
        ("/ipfs/QmGood".to_string(), good.clone()),
        ("/ipfs/QmBad".to_string(), corrupted),
    ]));
    let cache = tempfile::tempdir().unwrap();
    let good_entry = entry("v28-good.params", "QmGood", good_digest.clone());
    let bad_entry = entry("v28-bad.params", "QmBad", good_digest.clone());
    let missing_entry = entry("v28-missing.vk", "QmMissing", good_digest);

    let mut heard = Vec::new();
    let got = fetch(
        cache.path(),
        &gateway,
        std::slice::from_ref(&good_entry),
        &mut |e| heard.push(e.name.clone()),
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
    let again = fetch(cache.path(), &gateway, &[good_entry], &mut |_| {}).unwrap();
    assert_eq!(again, vec![Fetched::Present(kept)]);

    let err = fetch(cache.path(), &gateway, &[bad_entry], &mut |_| {}).unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("discarded"), "{err}");

    let err = fetch(cache.path(), &gateway, &[missing_entry], &mut |_| {}).unwrap_err();
    assert!(matches!(err, FetchError::Http { .. }), "{err}");

    // Only the good file: no corrupted file, no temporary leftovers.
    assert_eq!(
        listing(cache.path()),
        BTreeSet::from(["v28-good.params".to_string()])
    );
}

#[test]
fn a_wrong_file_in_the_cache_is_replaced() {
    let body = b"the right contents".to_vec();
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("r"), &body).unwrap();
    let digest = file_digest(&scratch.path().join("r")).unwrap();
    let gateway = serve(HashMap::from([("/ipfs/QmRight".to_string(), body.clone())]));
    let cache = tempfile::tempdir().unwrap();
    let path = cache.path().join("v28-x.vk");
    std::fs::write(&path, b"stale").unwrap();
    let got = fetch(
        cache.path(),
        &gateway,
        &[entry("v28-x.vk", "QmRight", digest)],
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
