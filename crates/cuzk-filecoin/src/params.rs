//! Parameter files as Filecoin users have them: one directory (the
//! "parameter cache", `FIL_PROOFS_PARAMETER_CACHE`, by default
//! `/var/tmp/filecoin-proof-parameters/`) holding `v28-<circuit id>.params`
//! (bellperson's proving key) and `v28-<circuit id>.vk` (its verifying key)
//! for each circuit, named by the Filecoin crates' own identifier.
//!
//! Test keys for small sectors are generated here from a seed, through
//! cuzk's key generator (byte-identical to bellperson's for the same RNG),
//! from the crates' blank circuit, in that layout and under those names; a
//! PoRep key also from the circuit's recording (`precompile`), the same
//! bytes without a second synthesis.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use bellperson::groth16;
use blstrs::Bls12;
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::params::KeySummary;
use cuzk_groth16::setup::{CpuFixedBase, FixedBase};
use cuzk_groth16::ProvingKey;

use crate::circuit::Circuit;
use crate::precompile::PrecompiledCircuit;
use crate::proof_type::sector_size_label;
use crate::Error;

/// A parameter cache directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamsDir(PathBuf);

impl ParamsDir {
    /// A given directory.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ParamsDir(path.into())
    }

    /// The directory filecoin-proofs itself uses: `FIL_PROOFS_PARAMETER_CACHE`
    /// as read when the crates' settings were first used, else its default.
    pub fn filecoin() -> Self {
        ParamsDir(PathBuf::from(
            &storage_proofs_core::settings::SETTINGS.parameter_cache,
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Where the proving key of a circuit (a PoRep [`ProofType`](crate::ProofType), a
    /// [`crate::PostType`], …) is (or would be).
    pub fn params_path(&self, circuit: impl Into<Circuit>) -> Result<PathBuf, Error> {
        Ok(self.0.join(circuit.into().params_file_name()?))
    }

    /// Where the verifying key of a circuit is (or would be).
    pub fn vk_path(&self, circuit: impl Into<Circuit>) -> Result<PathBuf, Error> {
        Ok(self.0.join(circuit.into().vk_file_name()?))
    }

    /// Checks, cheaply, that both key files are present and whole: the
    /// `.params` file's section counts must account for its exact length and
    /// its public inputs must be the circuit's; the `.vk` must decode.
    pub fn check(&self, circuit: impl Into<Circuit>) -> Result<(), Error> {
        let circuit = circuit.into();
        let params = self.params_path(circuit)?;
        let summary = KeySummary::from_path(&params)
            .map_err(|e| self.key_error("proving key", &params, circuit, e))?;
        let vk = self.load_verifying_key(circuit)?;
        if summary.ic.count != vk.ic.len() as u64 {
            return Err(self.key_error(
                "proving key",
                &params,
                circuit,
                format!(
                    "has {} public inputs but the verifying key has {}: the two files are from different setups",
                    summary.public_inputs(),
                    vk.ic.len().saturating_sub(1)
                ),
            ));
        }
        Ok(())
    }

    /// Reads the proving key for cuzk's prover. Points are checked on the
    /// curve, not for subgroup membership, as Filecoin does for files whose
    /// digest it trusts (see `cargo xtask fixtures fetch`).
    pub fn load_proving_key(&self, circuit: impl Into<Circuit>) -> Result<ProvingKey, Error> {
        let circuit = circuit.into();
        let path = self.params_path(circuit)?;
        ProvingKey::read_mmap(&path, PointCheck::OnCurve)
            .map_err(|e| self.key_error("proving key", &path, circuit, e))
    }

    /// Reads the verifying key as the Filecoin crates do (bellperson's reader).
    pub fn load_verifying_key(
        &self,
        circuit: impl Into<Circuit>,
    ) -> Result<groth16::VerifyingKey<Bls12>, Error> {
        let circuit = circuit.into();
        let path = self.vk_path(circuit)?;
        let file = File::open(&path)
            .map_err(|e| self.key_error("verifying key", &path, circuit, missing(e)))?;
        groth16::VerifyingKey::<Bls12>::read(BufReader::new(file))
            .map_err(|e| self.key_error("verifying key", &path, circuit, e))
    }

    fn key_error(
        &self,
        what: &'static str,
        path: &Path,
        circuit: Circuit,
        problem: impl std::fmt::Display,
    ) -> Error {
        Error::KeyFile {
            what,
            path: path.to_path_buf(),
            dir: self.0.clone(),
            problem: problem.to_string(),
            hint: fixtures_hint(circuit, &self.0),
        }
    }

    /// Generates test keys for a circuit from `seed` and writes both files
    /// under their official names (each atomically). Anyone who knows the
    /// seed can forge proofs: these keys are for tests only.
    pub fn generate_test_keys(
        &self,
        circuit: impl Into<Circuit>,
        seed: u64,
    ) -> Result<TestKeys, Error> {
        self.generate_test_keys_with(circuit, seed, &CpuFixedBase)
    }

    /// [`ParamsDir::generate_test_keys`] with the key generator's fixed-base
    /// step done by `fixed_base` (the GPU's, `cuzk_gpu::keygen::GpuFixedBase`,
    /// or the CPU's): the same bytes either way.
    pub fn generate_test_keys_with(
        &self,
        circuit: impl Into<Circuit>,
        seed: u64,
        fixed_base: &dyn FixedBase,
    ) -> Result<TestKeys, Error> {
        let circuit = circuit.into();
        self.write_test_keys(circuit, || circuit.generate_key(seed, fixed_base))
    }

    /// [`ParamsDir::generate_test_keys_with`] for a circuit (PoRep, PoSt or
    /// update), from its recording as made by
    /// [`precompile`](crate::precompile::precompile) (`cuzk precompile`) at
    /// `recording`, instead of a synthesis of the blank circuit: the same
    /// bytes, the QAP evaluated from the recorded matrices. The file is
    /// checked as the prover checks it; one filed under another circuit is
    /// refused, naming the file, the proof type and, when known, the proof
    /// types whose circuit it holds.
    pub fn generate_test_keys_from_recording(
        &self,
        circuit: impl Into<Circuit>,
        seed: u64,
        recording: &Path,
        fixed_base: &dyn FixedBase,
    ) -> Result<TestKeys, Error> {
        let circuit = circuit.into();
        let precompiled = PrecompiledCircuit::open(recording, circuit, None)?;
        self.write_test_keys(circuit, || {
            crate::circuit::key_from_recording(precompiled.r1cs(), seed, fixed_base)
        })
    }

    /// Makes the directory, generates the key with `generate` and writes
    /// both files under `circuit`'s official names, each atomically.
    fn write_test_keys(
        &self,
        circuit: Circuit,
        generate: impl FnOnce() -> Result<ProvingKey, Error>,
    ) -> Result<TestKeys, Error> {
        let params = self.params_path(circuit)?;
        let vk = self.vk_path(circuit)?;
        std::fs::create_dir_all(&self.0).map_err(|source| Error::Io {
            context: "creating the parameter directory",
            path: self.0.clone(),
            source,
        })?;
        let key = generate()?;
        key.write_to_path(&params).map_err(|e| Error::Io {
            context: "writing",
            path: params.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        write_atomically(&vk, &key.vk.to_bytes())?;
        Ok(TestKeys {
            params,
            vk,
            summary: key.summary(),
        })
    }
}

/// What [`ParamsDir::generate_test_keys`] wrote.
#[derive(Clone, Debug)]
pub struct TestKeys {
    /// The `.params` file.
    pub params: PathBuf,
    /// The `.vk` file.
    pub vk: PathBuf,
    /// The proving key's layout.
    pub summary: KeySummary,
}

/// How to get the key files of a circuit into `dir`.
pub fn fixtures_hint(circuit: impl Into<Circuit>, dir: &Path) -> String {
    let circuit = circuit.into();
    let size = sector_size_label(circuit.sector_size());
    let fetch = format!(
        "`cargo xtask fixtures fetch --sector-size {size} --dir {}` (the official files, checked against their published digests)",
        dir.display()
    );
    // The update types share their names with PoRep types: name them by size and kind.
    let which = match circuit {
        Circuit::Update(_) => format!("--sector-size {size} --kind update"),
        _ => format!("--proof-type {}", circuit.name()),
    };
    format!(
        "`cargo xtask fixtures keys {which} --dir {}` (test keys, generated offline from a seed; \
         a 32 GiB key takes minutes on a GPU box and ~100 GB of RAM), or {fetch}",
        dir.display()
    )
}

fn missing(e: std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "not found".into()
    } else {
        e.to_string()
    }
}

/// Writes `bytes` to a temporary sibling of `path`, syncs it, and renames it
/// over `path`, so a reader never sees a partial file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let io = |source| Error::Io {
        context: "writing",
        path: path.to_path_buf(),
        source,
    };
    cuzk_groth16::file::write_bytes_atomically(path, bytes).map_err(io)
}
