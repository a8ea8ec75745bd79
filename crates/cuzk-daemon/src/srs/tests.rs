//! Loading in the background, made deterministic with FIFOs as key
//! files: a loader thread opening one blocks until the test writes to it,
//! so the test sees the key LOADING for as long as it likes, and what it
//! writes (not a key) makes the load fail.

use super::*;
use cuzk_filecoin::ProofType;
use std::io::Write;

const EIGHT_MIB: &str = "StackedDrg8MiBV1_1";
const HALF_GIB: &str = "StackedDrg512MiBV1_1";

fn fifo_key(params: &ParamsDir, name: &str) -> (Circuit, PathBuf) {
    let pt = Circuit::Porep(ProofType::from_name(name).unwrap());
    let path = params.params_path(pt).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
    (pt, path)
}

/// Blocks until the loader opens the FIFO, then writes what is not a
/// key (the reader may already have given up on its zero length: a
/// broken pipe is fine).
fn feed_garbage(path: &std::path::Path) {
    let mut w = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let _ = w.write_all(b"not a key");
}

fn loading(m: &SrsManager, id: &str) -> bool {
    m.statuses().iter().any(|s| s.circuit_id == id && s.loading)
}

fn wait_failed(m: &Arc<SrsManager>, pt: Circuit, asked: Instant) -> SrsError {
    loop {
        match m.try_acquire(pt, asked) {
            Err(e) => return e,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Ok(Some(_)) => panic!("garbage loaded as a key"),
        }
    }
}

#[test]
fn circuit_ids_are_curios_names_for_every_kind_and_size() {
    let name = |id: &str| circuit_of(id).unwrap().name();
    assert_eq!(name("porep-32g"), "StackedDrg32GiBV1_1");
    assert_eq!(name("winning-2k"), "StackedDrgWinning2KiBV1");
    assert_eq!(name("wpost-32g"), "StackedDrgWindow32GiBV1_2");
    assert_eq!(name("snap-64g"), "StackedDrg64GiBV1");
    assert_eq!(circuits().len(), 20);
    for &(id, c) in circuits() {
        assert_eq!(circuit_id(c), id);
    }
    // Every version of one kind and size shares the id (and the key).
    let v1 = Circuit::Porep(ProofType::from_name("StackedDrg2KiBV1").unwrap());
    assert_eq!(circuit_id(v1), "porep-2k");
    let e = circuit_of("winning-3k").unwrap_err().to_string();
    assert!(e.contains("winning-3k") && e.contains("snap-32g"), "{e}");
}

#[test]
fn loads_run_in_the_background_per_circuit_and_fail_only_their_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let params = ParamsDir::new(dir.path());
    let (eight, eight_path) = fifo_key(&params, EIGHT_MIB);
    let (half, half_path) = fifo_key(&params, HALF_GIB);
    let m = SrsManager::new(
        params,
        1 << 30,
        None,
        Duration::from_secs(600),
        Duration::from_secs(600),
    );
    let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let w = Arc::clone(&woken);
    m.on_load_end(move || {
        w.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });

    // Neither call waits for its (blocked) loader; both keys show LOADING.
    let asked = Instant::now();
    assert!(m.try_acquire(eight, asked).unwrap().is_none());
    assert!(m.try_acquire(half, asked).unwrap().is_none());
    assert!(loading(&m, "porep-8m") && loading(&m, "porep-512m"));

    // The 512 MiB load fails while the 8 MiB one still loads.
    feed_garbage(&half_path);
    let e = wait_failed(&m, half, asked).to_string();
    for part in [
        half_path.to_str().unwrap(),
        "fixtures keys",
        "fixtures fetch",
    ] {
        assert!(e.contains(part), "{part:?} not in: {e}");
    }
    assert!(loading(&m, "porep-8m") && !loading(&m, "porep-512m"));
    assert!(m.try_acquire(eight, asked).unwrap().is_none());
    assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A job that asks after the failure tries again (a new loader).
    assert!(m.try_acquire(half, Instant::now()).unwrap().is_none());
    assert!(loading(&m, "porep-512m"));
    feed_garbage(&half_path);
    feed_garbage(&eight_path);
    assert!(matches!(
        wait_failed(&m, eight, asked),
        SrsError::LoadFailed { .. }
    ));
    assert!(m.statuses().iter().all(|s| s.tier == Tier::Cold));
    assert_eq!(m.hot_bytes(), 0);
}
