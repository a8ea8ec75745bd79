//! docs/facts.md, "Device memory": after start-up, no device-global CUDA call (device
//! synchronize, memory-pool trim, mem-get-info, device malloc/free) is made
//! anywhere. Such calls may appear only in the arena's start-up and tear-down
//! code (crates/cuzk-cuda/src/arena.rs). This test reads the source tree and
//! fails, naming file and line, when one appears anywhere else.

use std::path::{Path, PathBuf};

/// Call names (Rust wrappers and raw driver/runtime names) that are device-global.
const FORBIDDEN: &[&str] = &[
    "mem_get_info",
    "cuMemGetInfo",
    "cudaMemGetInfo",
    "malloc_sync",
    "malloc_async",
    "alloc_zeros",
    "cuMemAlloc",
    "cudaMalloc",
    "free_sync",
    "free_async",
    "cuMemFree",
    "cudaFree",
    "cuCtxSynchronize",
    "cudaDeviceSynchronize",
    "CudaContext::synchronize",
    "ctx.synchronize(",
    "context().synchronize(",
    "cuMemPoolTrimTo",
    "cudaMemPoolTrimTo",
    "trim_to(",
];

/// The only file allowed to make them: the arena's reservation and release.
const ALLOWED: &[&str] = &["crates/cuzk-cuda/src/arena.rs"];

/// Standalone comparison projects (their own workspaces, built only for the
/// GPU machine) that drive other provers — sppark, supraseal-c2 — with those
/// provers' own memory management: not cuzk's runtime, not scanned.
const OTHER_PROVERS: &[&str] = &[
    "benches/sppark-bench",
    "benches/anchor",
    "benches/anchor-c2",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let other_prover = OTHER_PROVERS.iter().any(|o| p.ends_with(o));
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') && !other_prover {
                sources(&p, out);
            }
        } else if [".rs", ".cu", ".cuh"].iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// The code of a line with its `//` comment removed (string contents are
/// kept: a forbidden name inside a string literal is flagged too, which errs
/// on the safe side).
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

#[test]
fn no_device_global_calls_outside_the_arena() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates", "benches", "kernels", "xtask"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 30,
        "the scan found only {} source files under {}: wrong root?",
        files.len(),
        root.display()
    );
    let this_file = Path::new(file!())
        .file_name()
        .expect("file name")
        .to_owned();
    let mut hits = Vec::new();
    let mut allowed_seen = 0;
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/");
        if f.file_name() == Some(this_file.as_os_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let allowed = ALLOWED.contains(&rel.as_str());
        for (i, line) in text.lines().enumerate() {
            for name in FORBIDDEN {
                if code(line).contains(name) {
                    if allowed {
                        allowed_seen += 1;
                    } else {
                        hits.push(format!("{rel}:{}: `{name}` in: {}", i + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "device-global CUDA calls outside the arena (reserve at start-up instead, \
         and order work with streams and events):\n{}",
        hits.join("\n")
    );
    // The arena itself must still contain its reservation and release, or the
    // check above proves nothing about where they went.
    assert!(
        allowed_seen >= 3,
        "the arena's own reserve/release calls were not found ({allowed_seen}); \
         update ALLOWED if they moved"
    );
}

#[test]
fn the_scan_recognises_a_forbidden_call() {
    let line = "    let (free, _) = ctx.mem_get_info()?; // sizing";
    assert!(FORBIDDEN.iter().any(|n| code(line).contains(n)));
    let comment = "    // never call cudaDeviceSynchronize here";
    assert!(!FORBIDDEN.iter().any(|n| code(comment).contains(n)));
}
