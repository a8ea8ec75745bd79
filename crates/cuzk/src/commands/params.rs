//! `cuzk params`: the one step that readies a box's parameter cache for the
//! daemon's fast path. It fetches the official keys of a sector size
//! (resumed, retried, BLAKE2b-checked, as `cuzk fixtures fetch`) and records
//! each circuit once beside its key (as `cuzk precompile`), so that the
//! daemon's `synthesis = "auto"` synthesizes only witnesses (a 32 GiB
//! PoRep proof in ~14 s rather than a minute more of CPU per partition).
//! What is already there and checks out is left alone: running it again is
//! cheap, and resumes an interrupted download.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::fetch;
use cuzk_filecoin::precompile::{default_cache_path, precompile, PrecompiledCircuit};
use cuzk_filecoin::{Circuit, ParamsDir};
use cuzk_pipeline::memory::human;

use crate::commands::fixtures::{circuit_arg, dir_or_default, fetch_entries, size_arg};
use crate::output::spinner;

/// Every circuit a daemon proves, by `--kinds` name.
const KINDS: [&str; 4] = ["porep", "winning-post", "window-post", "update"];

#[derive(Args, Debug)]
pub(crate) struct ParamsArgs {
    /// Sector size of the keys and recordings (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
    #[arg(long, default_value = "32GiB")]
    sector_size: String,
    /// Circuits, comma-separated: porep, winning-post, window-post, update.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning-post,window-post,update"
    )]
    kinds: Vec<String>,
    /// Parameter cache (default: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters); the daemon's proving.params_dir.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// IPFS gateway URL prefix (default: IPFS_GATEWAY, else Filecoin's).
    #[arg(long)]
    gateway: Option<String>,
    /// Do not download: the keys are in place (test keys, another fetch).
    #[arg(long)]
    no_fetch: bool,
    /// Do not record the circuits: only fetch the keys.
    #[arg(long, conflicts_with = "no_fetch")]
    no_record: bool,
}

pub(crate) fn run(args: ParamsArgs) -> Result<()> {
    if let Some(dir) = &args.dir {
        // The Filecoin crates read their parameter cache from here.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let params = dir_or_default(args.dir.clone());
    let circuits = circuits(&args.sector_size, &args.kinds)?;
    if !args.no_fetch {
        let entries = entries_for(&params, size_arg(&args.sector_size)?, &circuits)?;
        fetch_entries(&params, args.gateway.clone(), &entries)?;
    }
    if !args.no_record {
        for c in &circuits {
            record(&params, *c)?;
        }
    }
    Ok(())
}

/// The circuits of `kinds` at `sector_size`, in `KINDS` order, once each.
fn circuits(sector_size: &str, kinds: &[String]) -> Result<Vec<Circuit>> {
    if let Some(bad) = kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
        bail!("--kinds {bad:?}: expected some of {}", KINDS.join(", "));
    }
    KINDS
        .iter()
        .filter(|k| kinds.iter().any(|w| w == *k))
        .map(|k| circuit_arg(sector_size, k, None))
        .collect()
}

/// The manifest's files (`.params` and `.vk`) of each circuit's key.
fn entries_for(
    params: &ParamsDir,
    sector_size: u64,
    circuits: &[Circuit],
) -> Result<Vec<fetch::ManifestEntry>> {
    let manifest = fetch::manifest(Some(sector_size), false);
    let mut out = Vec::new();
    for c in circuits {
        let key = params.params_path(*c)?;
        let stem = key.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let files: Vec<_> = manifest
            .iter()
            .filter(|e| Path::new(&e.name).file_stem().and_then(|s| s.to_str()) == Some(stem))
            .cloned()
            .collect();
        if files.is_empty() {
            bail!(
                "the crates' parameter manifest has no file for {} ({stem})",
                c.name()
            );
        }
        out.extend(files);
    }
    Ok(out)
}

/// Records `circuit` beside its key unless a recording is there and opens
/// (checksums and structure), then opens the new one to check it.
fn record(params: &ParamsDir, circuit: Circuit) -> Result<()> {
    let path = default_cache_path(params, circuit)?;
    if path.exists() {
        match PrecompiledCircuit::open(&path, circuit, None) {
            Ok(_) => {
                println!("recording present, checked: {}", path.display());
                return Ok(());
            }
            Err(e) => println!(
                "recording {} is not usable ({e}): recording again",
                path.display()
            ),
        }
    }
    let bar = spinner(format!(
        "recording the {} circuit into {} (a 32 GiB PoRep: ~1.5 min, 5.9 GB)",
        circuit.name(),
        path.display()
    ));
    let made = precompile(circuit, &path).with_context(|| format!("writing {}", path.display()))?;
    bar.finish_and_clear();
    let t = Instant::now();
    PrecompiledCircuit::open(&path, circuit, None)
        .with_context(|| format!("checking the new recording {}", path.display()))?;
    println!(
        "recorded {} in {:.1} s: {} ({}), checked in {:.1} s",
        circuit.name(),
        made.record_secs + made.write_secs,
        path.display(),
        human(made.file_bytes),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_names_its_key_files_in_the_manifest() {
        let params = ParamsDir::new("/nonexistent");
        let all: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
        let every = circuits("32GiB", &all).unwrap();
        assert_eq!(every.len(), 4);
        let entries = entries_for(&params, 32 << 30, &every).unwrap();
        // A .params and a .vk per circuit, all of the 32 GiB manifest.
        assert_eq!(entries.len(), 8, "{entries:?}");
        assert_eq!(
            entries.iter().filter(|e| e.name.ends_with(".vk")).count(),
            4
        );
        assert!(entries.iter().all(|e| e.sector_size == 32 << 30));
        let porep_only = circuits_of(&["porep"]);
        let e = entries_for(&params, 32 << 30, &porep_only).unwrap();
        assert!(
            e.iter()
                .all(|e| e.name.contains("stacked-proof-of-replication")),
            "{e:?}"
        );
        assert!(circuits("32GiB", &["seal".to_string()])
            .unwrap_err()
            .to_string()
            .contains("\"seal\""));
    }

    fn circuits_of(kinds: &[&str]) -> Vec<Circuit> {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        circuits("32GiB", &kinds).unwrap()
    }
}
