//! The kernel fatbins, one per unit of `kernels/manifest.toml` (production)
//! and `kernels/manifest-dev.toml` (test and benchmark kernels), built by
//! `cargo xtask kernels` or, with the `build-kernels` feature, by this
//! crate's build script (into its `OUT_DIR`),
//! read at run time from one folder rather than embedded in every
//! executable: a bundle of thirty test and bench binaries then carries the
//! fatbins once, and rebuilding a kernel recompiles no Rust.
//!
//! The folder is the first of [`search_path`] that holds any fatbin: an
//! explicit one alone when given (the folder set by [`use_dir`]: the
//! daemon's `proving.kernels_dir`, or `$CUZK_FATBIN_DIR` as the binaries
//! read it; a wrong setting is not hidden by a fallback); otherwise beside
//! the executable, as an install
//! places them (`<exe dir>/kernels`, `<exe dir>/../lib/cuzk/kernels`, a
//! bundle's `<exe dir>/../kernels`), then the folder this build was made
//! against (`<target dir>/kernels`, or the build script's
//! `$OUT_DIR/kernels` with `build-kernels`). In it, every production unit
//! must be present and current: its stamp (written by the shared
//! `nvcc.rs`, for xtask and the build script alike) holds
//! the hash of the sources this build was compiled with, and the fatbin's
//! own SHA-256, both checked; a mismatch is refused naming the file, the
//! expected and found hashes and the command that rebuilds it (a stale
//! folder after an upgrade never falls back to another one). A test or
//! benchmark unit that is missing or stale is left out (with a warning for
//! a stale one); only the kernels it holds are then missing. Each unit
//! becomes its own CUDA module on a device.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{Error, KernelsProblem, Result};

/// Which manifest lists a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitSet {
    /// `kernels/manifest.toml`: what a proof runs; required.
    Production,
    /// `kernels/manifest-dev.toml`: probes and tuning variants; optional.
    Dev,
}

/// A unit this build expects: its manifest, path under `kernels/`, fatbin
/// file stem and source hash (see `source_hash.rs`).
#[derive(Clone, Copy, Debug)]
struct Unit {
    set: UnitSet,
    unit: &'static str,
    stem: &'static str,
    hash: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/units.rs"));

/// One loaded fatbin.
#[derive(Debug)]
pub struct Fatbin {
    /// The unit's path under `kernels/` (`"msm/g1.cu"`).
    pub unit: &'static str,
    /// Which manifest lists it.
    pub set: UnitSet,
    /// The fatbin's bytes, as the driver loads them.
    pub bytes: Vec<u8>,
}

/// The fatbins of this process, read once from one folder.
#[derive(Debug)]
pub struct Kernels {
    dir: PathBuf,
    fatbins: Vec<Fatbin>,
    archs: String,
    build: String,
}

impl Kernels {
    /// The folder the fatbins were read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The fatbins, production units first, in manifest order.
    pub fn fatbins(&self) -> &[Fatbin] {
        &self.fatbins
    }

    /// The architectures the fatbins were built for (from their stamps, e.g.
    /// `sm_90+ptx`; several lists joined by ` / ` when the units differ).
    pub fn archs(&self) -> &str {
        &self.archs
    }

    /// Which build of the kernels this is: the first 12 hex digits of the
    /// SHA-256 over the loaded production fatbins' own hashes, in manifest
    /// order (equal on two boxes exactly when they run the same fatbins).
    pub fn build(&self) -> &str {
        &self.build
    }
}

/// The folder [`use_dir`] set, searched alone when set.
static CONFIGURED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Makes `dir` the only folder kernels are read from (`None`: the default
/// search, beside the executable then the build's folder). Takes effect at
/// the first device opened. The library reads no environment: a binary
/// that honours `$CUZK_FATBIN_DIR` passes it here.
pub fn use_dir(dir: Option<PathBuf>) {
    *CONFIGURED.lock().unwrap_or_else(|p| p.into_inner()) = dir;
}

/// The command that makes current fatbins, for error messages: the build's
/// own and, for an installed binary, the install that places them.
pub(crate) const REBUILD: &str =
    "`cargo xtask kernels` in the cuzk checkout this binary was built from (or, for an installed binary, `cargo xtask install` from it again; for cuzk-cuda from a registry, build it with its `build-kernels` feature)";

static LOADED: OnceLock<Kernels> = OnceLock::new();

/// The kernels of this process, read on the first successful call. A
/// failure is not remembered: building the kernels and asking again works.
pub fn load() -> Result<&'static Kernels> {
    if let Some(k) = LOADED.get() {
        return Ok(k);
    }
    let k = read(&search_path())?;
    Ok(LOADED.get_or_init(|| k))
}

/// Whether this process finds current fatbins for every production unit.
pub fn available() -> bool {
    load().is_ok()
}

/// The architectures of the loaded fatbins, or `none` when there are none.
pub fn archs() -> &'static str {
    load().map(|k| k.archs()).unwrap_or("none")
}

/// One line naming the loaded kernels: build, architectures and folder
/// (`3f2a9c1b0d4e sm_80,sm_86,sm_89,sm_90,sm_120+ptx from /usr/local/lib/cuzk/kernels`),
/// or why there are none.
pub fn describe() -> String {
    match load() {
        Ok(k) => format!("{} {} from {}", k.build(), k.archs(), k.dir().display()),
        Err(e) => format!("none ({e})"),
    }
}

/// The units of this build that the loaded kernels lack (test and
/// benchmark units whose fatbins are missing or stale), as `kernels/…` paths.
pub fn left_out() -> Vec<String> {
    let Some(k) = LOADED.get() else {
        return Vec::new();
    };
    UNITS
        .iter()
        .filter(|u| !k.fatbins.iter().any(|f| f.unit == u.unit))
        .map(|u| format!("kernels/{}", u.unit))
        .collect()
}

/// The fatbin file of `unit` (a `kernels/…` path's tail) in the folder the
/// kernels were loaded from (or `.` before they are).
pub(crate) fn fatbin_path(unit: &str) -> PathBuf {
    let stem = UNITS
        .iter()
        .find(|u| u.unit == unit)
        .map_or(unit, |u| u.stem);
    let dir = LOADED.get().map_or(Path::new("."), |k| k.dir());
    dir.join(format!("{stem}.fatbin"))
}

/// The units of both manifests, as paths under `kernels/` (for the source
/// test of the declarations, `launch.rs`).
#[cfg(test)]
pub(crate) fn unit_paths() -> impl Iterator<Item = &'static str> {
    UNITS.iter().map(|u| u.unit)
}

/// The folders searched for fatbins, in order (see the module docs).
pub fn search_path() -> Vec<PathBuf> {
    // An explicit folder is the only one looked at: a wrong setting must
    // not be hidden by a fallback.
    let configured = CONFIGURED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(dir) = configured {
        return vec![dir];
    }
    let exe = std::env::current_exe().ok();
    default_search_path(exe.as_deref().and_then(Path::parent))
}

/// Beside the executable in folder `bin` (when known), then the build's
/// folder.
fn default_search_path(bin: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(bin) = bin {
        // Installed: `<prefix>/bin/cuzk` with `<prefix>/lib/cuzk/kernels`,
        // or the fatbins in `kernels/` beside the binary.
        dirs.push(bin.join("kernels"));
        if let Some(parent) = bin.parent() {
            dirs.push(parent.join("lib/cuzk/kernels"));
            // A bundle: `bin/` and `kernels/` side by side.
            dirs.push(parent.join("kernels"));
        }
    }
    let built = PathBuf::from(BUILD_FATBIN_DIR);
    if !dirs.contains(&built) {
        dirs.push(built);
    }
    dirs
}

/// Reads the fatbins from the first folder of `dirs` that holds any.
fn read(dirs: &[PathBuf]) -> Result<Kernels> {
    if let Some(problem) = MANIFEST_PROBLEM {
        return Err(Error::Kernels(KernelsProblem::Manifest(
            problem.to_string(),
        )));
    }
    let holds_any = |dir: &Path| {
        UNITS
            .iter()
            .any(|u| dir.join(format!("{}.fatbin", u.stem)).is_file())
    };
    let Some(dir) = dirs.iter().find(|d| holds_any(d)) else {
        return Err(Error::Kernels(KernelsProblem::NotBuilt {
            searched: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }));
    };
    let mut fatbins = Vec::with_capacity(UNITS.len());
    let mut archs: Vec<String> = Vec::new();
    for unit in UNITS {
        match read_unit(dir, unit) {
            Ok((bytes, a)) => {
                if !archs.contains(&a) {
                    archs.push(a);
                }
                fatbins.push(Fatbin {
                    unit: unit.unit,
                    set: unit.set,
                    bytes,
                });
            }
            Err(e) if unit.set == UnitSet::Dev => {
                if !matches!(e, KernelsProblem::Missing { .. }) {
                    tracing::warn!("test/bench kernels left out: {e}");
                }
            }
            Err(e) => return Err(Error::Kernels(e)),
        }
    }
    let mut build = Sha256::new();
    for f in fatbins.iter().filter(|f| f.set == UnitSet::Production) {
        build.update(Sha256::digest(&f.bytes));
    }
    let build = hex(&build.finalize())[..12].to_string();
    Ok(Kernels {
        dir: dir.clone(),
        fatbins,
        archs: archs.join(" / "),
        build,
    })
}

/// Reads one unit's fatbin from `dir` and checks it against its stamp
/// (`<unit hash>`, `fatbin <sha256 of the fatbin>`, `archs <list>`, one per
/// line) and the stamp against this build's sources; returns the bytes and
/// the architecture list.
fn read_unit(dir: &Path, unit: &Unit) -> std::result::Result<(Vec<u8>, String), KernelsProblem> {
    let fatbin = dir.join(format!("{}.fatbin", unit.stem));
    let stale = |why: String| KernelsProblem::Stale {
        unit: unit.unit,
        path: fatbin.clone(),
        why,
    };
    let bytes = match std::fs::read(&fatbin) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(KernelsProblem::Missing {
                unit: unit.unit,
                path: fatbin,
            })
        }
        Err(source) => {
            return Err(KernelsProblem::Read {
                path: fatbin,
                source,
            })
        }
    };
    let stamp_path = PathBuf::from(format!("{}.sha256", fatbin.display()));
    let stamp = std::fs::read_to_string(&stamp_path).map_err(|source| KernelsProblem::Read {
        path: stamp_path.clone(),
        source,
    })?;
    let (recorded, fatbin_hash, archs) = parse_stamp(&stamp);
    if recorded != unit.hash {
        return Err(stale(format!(
            "was built from other sources than this executable: its stamp {} records \
             source hash {recorded}, this executable expects {} (the unit or a header changed)",
            stamp_path.display(),
            unit.hash
        )));
    }
    let actual = hex(&Sha256::digest(&bytes));
    if actual != fatbin_hash {
        return Err(stale(format!(
            "does not match its stamp {}: the file's SHA-256 is {actual}, the stamp's \
             {fatbin_hash} (damaged, or two builds at once?)",
            stamp_path.display()
        )));
    }
    Ok((bytes, archs.to_string()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// (source hash, fatbin hash, archs) of a stamp; empty strings and
/// `unknown` for what it lacks.
fn parse_stamp(stamp: &str) -> (&str, &str, &str) {
    let mut lines = stamp.lines();
    let recorded = lines.next().unwrap_or("").trim();
    let mut fatbin_hash = "";
    let mut archs = "unknown";
    for line in lines {
        if let Some(v) = line.strip_prefix("fatbin ") {
            fatbin_hash = v.trim();
        } else if let Some(v) = line.strip_prefix("archs ") {
            archs = v.trim();
        }
    }
    (recorded, fatbin_hash, archs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cuzk-kernels-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes a fatbin and its stamp for `unit` as `cargo xtask kernels` does.
    fn write_unit(dir: &Path, unit: &Unit, bytes: &[u8], source_hash: &str) {
        std::fs::write(dir.join(format!("{}.fatbin", unit.stem)), bytes).unwrap();
        let h: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        std::fs::write(
            dir.join(format!("{}.fatbin.sha256", unit.stem)),
            format!("{source_hash}\nfatbin {h}\narchs sm_90+ptx\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_manifests_name_production_and_dev_units() {
        assert!(UNITS.iter().any(|u| u.set == UnitSet::Production));
        assert!(UNITS
            .iter()
            .any(|u| u.set == UnitSet::Dev && u.unit == "tests/field_ec_tests.cu"));
        assert!(MANIFEST_PROBLEM.is_none());
    }

    /// With `build-kernels` (nvcc needed, so never in CI) the build script
    /// compiled every production unit into the folder it recorded, and the
    /// loader accepts them there: stamps against this build's sources,
    /// fatbins against their stamps.
    #[cfg(feature = "build-kernels")]
    #[test]
    fn the_build_scripts_fatbins_load_from_the_folder_it_recorded() {
        let dir = PathBuf::from(BUILD_FATBIN_DIR);
        assert!(dir.ends_with("out/kernels"), "{}", dir.display());
        let k = read(std::slice::from_ref(&dir)).unwrap();
        let production = |set: UnitSet| set == UnitSet::Production;
        assert_eq!(
            k.fatbins().iter().filter(|f| production(f.set)).count(),
            UNITS.iter().filter(|u| production(u.set)).count()
        );
    }

    #[test]
    fn an_empty_search_path_names_every_folder() {
        let a = scratch("empty-a");
        let b = scratch("empty-b");
        let err = read(&[a.clone(), b.clone()]).unwrap_err().to_string();
        assert!(err.contains(&a.display().to_string()), "{err}");
        assert!(err.contains(&b.display().to_string()), "{err}");
        assert!(err.contains("cargo xtask kernels"), "{err}");
    }

    #[test]
    fn current_units_load_and_the_first_folder_with_fatbins_wins() {
        let empty = scratch("first-empty");
        let dir = scratch("first-full");
        for (i, u) in UNITS.iter().enumerate() {
            if u.set == UnitSet::Production {
                write_unit(&dir, u, &[i as u8; 3], u.hash);
            }
        }
        let k = read(&[empty, dir.clone()]).unwrap();
        assert_eq!(k.dir(), dir);
        assert_eq!(k.archs(), "sm_90+ptx");
        let production = UNITS
            .iter()
            .filter(|u| u.set == UnitSet::Production)
            .count();
        // The dev units are absent: left out, not an error.
        assert_eq!(k.fatbins().len(), production);
        assert!(k.fatbins().iter().all(|f| f.set == UnitSet::Production));
    }

    #[test]
    fn an_installed_binary_looks_beside_itself_before_the_build_folder() {
        let dirs = default_search_path(Some(Path::new("/opt/cuzk/bin")));
        let want: Vec<PathBuf> = [
            "/opt/cuzk/bin/kernels",
            "/opt/cuzk/lib/cuzk/kernels",
            "/opt/cuzk/kernels",
            BUILD_FATBIN_DIR,
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(dirs, want);
    }

    #[test]
    fn the_build_id_follows_the_fatbins_bytes() {
        let build_of = |name: &str, byte: u8| {
            let dir = scratch(name);
            for u in UNITS.iter().filter(|u| u.set == UnitSet::Production) {
                write_unit(&dir, u, &[byte; 4], u.hash);
            }
            read(&[dir]).unwrap().build().to_string()
        };
        let a = build_of("build-a", 1);
        assert_eq!(a.len(), 12);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_eq!(a, build_of("build-a2", 1));
        assert_ne!(a, build_of("build-b", 2));
    }

    #[test]
    fn a_stale_or_tampered_production_unit_is_named() {
        let dir = scratch("stale");
        let prod: Vec<&Unit> = UNITS
            .iter()
            .filter(|u| u.set == UnitSet::Production)
            .collect();
        for u in &prod {
            write_unit(&dir, u, b"abc", u.hash);
        }
        write_unit(&dir, prod[0], b"abc", "0000");
        let err = read(std::slice::from_ref(&dir)).unwrap_err().to_string();
        // The file, both source hashes, and what rebuilds it.
        assert!(err.contains(prod[0].unit), "{err}");
        assert!(err.contains("other sources"), "{err}");
        assert!(
            err.contains("source hash 0000") && err.contains(prod[0].hash),
            "{err}"
        );
        assert!(err.contains("cargo xtask kernels"), "{err}");

        write_unit(&dir, prod[0], b"abc", prod[0].hash);
        std::fs::write(dir.join(format!("{}.fatbin", prod[1].stem)), b"abd").unwrap();
        let err = read(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(err.contains(prod[1].unit), "{err}");
        assert!(err.contains("does not match its stamp"), "{err}");
        // SHA-256 of "abd" (found) and of "abc" (its stamp's).
        assert!(err.contains(&hex(&Sha256::digest(b"abd"))), "{err}");
        assert!(err.contains(&hex(&Sha256::digest(b"abc"))), "{err}");

        std::fs::remove_file(dir.join(format!("{}.fatbin", prod[1].stem))).unwrap();
        let err = read(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(
            err.contains(prod[1].unit) && err.contains("not built"),
            "{err}"
        );
    }
}
