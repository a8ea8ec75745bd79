//! The 2 KiB Filecoin fixtures' setting (feature `filecoin`): the parameter
//! cache every test of a target directory shares, filecoin-proofs pointed at
//! it, the seeded test keys and SnarkPack SRS made there when absent, and
//! Curio's wrapper of a C1.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use cuzk_filecoin::{Circuit, ParamsDir, PostType, ProofType};

/// The seed of the test keys' and the test SRS's toxic waste (what
/// `cuzk fixtures keys` uses by default).
pub const KEY_SEED: u64 = 0;

/// Proofs the test SnarkPack SRS aggregates: 65 sectors of 13 partitions,
/// padded.
pub const TEST_SRS_PROOFS: usize = 1024;

/// A test process's Filecoin setting: the shared parameter cache and a work
/// folder of its own.
#[derive(Debug)]
pub struct FilecoinCache {
    /// `CARGO_TARGET_TMPDIR/filecoin-proof-parameters`: kept between runs
    /// (the keys are deterministic), shared by every test of the target
    /// directory.
    pub dir: PathBuf,
    /// The same folder as filecoin-proofs reads it.
    pub params: ParamsDir,
    /// A fresh folder kept after the run (sealed sectors, the parent cache).
    pub work: PathBuf,
}

/// The parameter cache under `target_tmpdir` (the test's
/// `env!("CARGO_TARGET_TMPDIR")`) and a fresh work folder, with
/// `FIL_PROOFS_PARAMETER_CACHE` and `FIL_PROOFS_PARENT_CACHE` set to them.
///
/// # Panics
///
/// When filecoin-proofs read its settings (once per process) before this
/// call and so reads another cache.
pub fn filecoin_cache(target_tmpdir: &str) -> FilecoinCache {
    let dir = Path::new(target_tmpdir).join("filecoin-proof-parameters");
    let work = tempfile::tempdir().expect("a temporary work folder").keep();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.join("parents"));
    let params = ParamsDir::new(&dir);
    assert_eq!(
        ParamsDir::filecoin(),
        params,
        "filecoin-proofs reads another parameter cache (its settings were read before \
         FIL_PROOFS_PARAMETER_CACHE was set)"
    );
    FilecoinCache { dir, params, work }
}

impl FilecoinCache {
    /// The test keys of each circuit (from [`KEY_SEED`]), generated where
    /// absent or incomplete, then checked.
    ///
    /// # Panics
    ///
    /// When a key cannot be generated or does not check.
    pub fn keys<C: Into<Circuit>>(&self, circuits: impl IntoIterator<Item = C>) {
        for circuit in circuits {
            let circuit = circuit.into();
            if self.params.check(circuit).is_err() {
                let t = std::time::Instant::now();
                let keys = self
                    .params
                    .generate_test_keys(circuit, KEY_SEED)
                    .unwrap_or_else(|e| panic!("generating the test keys: {e}"));
                eprintln!(
                    "generated {} ({} public inputs) in {:.1?}",
                    keys.params.display(),
                    keys.summary.public_inputs(),
                    t.elapsed()
                );
            }
            if let Err(e) = self.params.check(circuit) {
                panic!("the test keys in {}: {e}", self.dir.display());
            }
        }
    }

    /// The WinningPoSt and WindowPoSt types of `seal`'s sectors, their test
    /// keys made as [`keys`](Self::keys) makes them.
    pub fn post_keys(&self, seal: ProofType) -> (PostType, PostType) {
        let (winning, window) = (PostType::winning_for(seal), PostType::window_for(seal));
        self.keys([winning, window]);
        (winning, window)
    }

    /// The test SnarkPack SRS (from [`KEY_SEED`], [`TEST_SRS_PROOFS`]
    /// proofs), generated when absent or incomplete.
    ///
    /// # Panics
    ///
    /// When it cannot be generated.
    pub fn srs(&self) {
        if self.params.check_srs(TEST_SRS_PROOFS).is_err() {
            self.params
                .generate_test_srs(KEY_SEED, TEST_SRS_PROOFS)
                .unwrap_or_else(|e| panic!("generating the test SRS: {e}"));
        }
    }

    /// A parameter cache of its own at `dir`: links to this cache's key
    /// files of `circuit` (its `.params` and `.vk`), nothing else.
    ///
    /// # Panics
    ///
    /// When the folder or a link cannot be made.
    pub fn link_keys(&self, circuit: impl Into<Circuit>, dir: &Path) {
        let circuit = circuit.into();
        std::fs::create_dir_all(dir).unwrap();
        let params = ParamsDir::new(dir);
        for (ours, theirs) in [
            (
                params.params_path(circuit),
                self.params.params_path(circuit),
            ),
            (params.vk_path(circuit), self.params.vk_path(circuit)),
        ] {
            let (ours, theirs) = (ours.unwrap(), theirs.unwrap());
            if !ours.exists() {
                std::os::unix::fs::symlink(theirs, ours).unwrap();
            }
        }
    }
}

/// Curio's wrapper of a C1 (`c1` the plain JSON): its sector number, the C1
/// in base64 and the sector size in bytes.
pub fn curio_wrapper(c1: &[u8], sector: u64, sector_size: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "SectorNum": sector,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1),
        "SectorSize": sector_size,
    }))
    .expect("a JSON object")
}
