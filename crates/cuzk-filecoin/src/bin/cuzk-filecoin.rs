//! `cuzk-filecoin`: Filecoin fixtures for cuzk, run by `cargo xtask
//! fixtures`. `keys` makes PoRep test keys for a small sector size offline
//! from a seed (the fixed-base step on a CUDA device when there is one); `fetch` downloads the official files listed in the Filecoin
//! crates' manifest and checks each against its digest; `seal` seals a
//! sector of random data and writes its C1 output (what `cuzk porep-c2` reads).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use cuzk_filecoin::fetch::{self, Fetched};
use cuzk_filecoin::sample::seal_random_sector;
use cuzk_filecoin::{parse_sector_size, ParamsDir, ProofType, SectorIdentity};
use cuzk_groth16::setup::FixedBase;
use rand::SeedableRng;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-filecoin",
    version,
    about = "Filecoin fixtures for cuzk: test keys, official parameter files, sample C1 output"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate PoRep test keys (.params and .vk) under their official names.
    /// Test keys only: anyone with the seed can forge proofs.
    Keys {
        /// Sector size (2KiB, 8MiB, 512MiB); every PoRep proof type of one
        /// sector size shares one circuit, hence one key.
        #[arg(long, default_value = "2KiB", conflicts_with = "proof_type")]
        sector_size: String,
        /// A registered proof type name instead (StackedDrg2KiBV1_1, ...).
        #[arg(long)]
        proof_type: Option<String>,
        /// Seed of the toxic waste.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Parameter cache directory (default: FIL_PROOFS_PARAMETER_CACHE, else
        /// /var/tmp/filecoin-proof-parameters).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Regenerate even if both files are present and whole.
        #[arg(long)]
        force: bool,
        /// Where the key generator's fixed-base step runs: `auto` (the first
        /// CUDA device when there is one, else the CPU), `cuda` or `cpu`. The
        /// bytes are the same.
        #[arg(long, default_value = "auto")]
        backend: String,
    },
    /// Download the official parameter files and check their digests.
    Fetch {
        /// Only files for this sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
        #[arg(long)]
        sector_size: Option<String>,
        /// Only PoRep files (not PoSt or sector update).
        #[arg(long)]
        porep_only: bool,
        /// Parameter cache directory (default as for `keys`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// IPFS gateway URL prefix (default: IPFS_GATEWAY, else Filecoin's).
        #[arg(long)]
        gateway: Option<String>,
    },
    /// Seal a sector of random data with filecoin-proofs; write its C1 output as JSON.
    Seal {
        /// Registered proof type.
        #[arg(long, default_value = "StackedDrg2KiBV1_1")]
        proof_type: String,
        /// Miner actor id (f0<id>).
        #[arg(long, default_value_t = 1000)]
        actor: u64,
        /// Sector number.
        #[arg(long, default_value_t = 1)]
        sector: u64,
        /// Seed of the data, ticket and seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write Curio's wrapper ({"SectorNum","Phase1Out","SectorSize"}) instead of the plain JSON.
        #[arg(long)]
        curio: bool,
        /// Where to write the C1 output.
        #[arg(long, short)]
        out: PathBuf,
    },
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn dir_or_default(dir: Option<PathBuf>) -> ParamsDir {
    dir.map_or_else(ParamsDir::filecoin, ParamsDir::new)
}

/// The fixed-base step for `keys --backend`; says on stderr which one runs
/// and, for `auto`, why it is the CPU's when it falls back.
fn select_fixed_base(backend: &str) -> Result<Box<dyn FixedBase>> {
    let (chosen, note) =
        cuzk_gpu::keygen::select_fixed_base(backend).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        eprintln!("keys: {note}");
    }
    eprintln!("keys backend: {}", chosen.name());
    Ok(chosen)
}

fn size_arg(text: &str) -> Result<u64> {
    parse_sector_size(text)
        .with_context(|| format!("{text:?} is not a sector size (like 2KiB, 32GiB)"))
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Keys {
            sector_size,
            proof_type,
            seed,
            dir,
            force,
            backend,
        } => {
            let proof_type = match proof_type {
                Some(name) => ProofType::from_name(&name)?,
                None => {
                    let size = size_arg(&sector_size)?;
                    let proof = ProofType::ALL
                        .into_iter()
                        .find(|p| {
                            u64::from(p.sector_size()) == size && format!("{p:?}").ends_with("V1_1")
                        })
                        .with_context(|| format!("no PoRep proof type has {size}-byte sectors"))?;
                    ProofType::new(proof)?
                }
            };
            let dir = dir_or_default(dir);
            if !force && dir.check(proof_type).is_ok() {
                println!(
                    "present: {} and {}",
                    dir.params_path(proof_type)?.display(),
                    dir.vk_path(proof_type)?.display()
                );
                return Ok(());
            }
            let fixed_base = select_fixed_base(&backend)?;
            eprintln!(
                "generating test keys for {} (seed {seed}) in {}",
                proof_type.name(),
                dir.path().display()
            );
            let t = Instant::now();
            let keys = dir.generate_test_keys_with(proof_type, seed, fixed_base.as_ref())?;
            println!(
                "wrote {} ({} bytes) and {} in {:.1}s (fixed-base step: {})",
                keys.params.display(),
                keys.summary.file_len,
                keys.vk.display(),
                t.elapsed().as_secs_f64(),
                fixed_base.name()
            );
            Ok(())
        }
        Command::Seal {
            proof_type,
            actor,
            sector,
            seed,
            curio,
            out,
        } => {
            let proof_type = ProofType::from_name(&proof_type)?;
            let work = tempfile::tempdir().context("creating a work directory")?;
            if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
                std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.path().join("parents"));
            }
            let identity = SectorIdentity::from_actor(actor, sector);
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            let t = Instant::now();
            let c1 = seal_random_sector(proof_type, work.path(), &identity, &mut rng)?;
            let plain = serde_json::to_vec(&c1)?;
            let bytes = if curio {
                use base64::Engine as _;
                serde_json::to_vec(&serde_json::json!({
                    "SectorNum": sector,
                    "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&plain),
                    "SectorSize": proof_type.sector_size(),
                }))?
            } else {
                plain
            };
            std::fs::write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
            println!(
                "sealed sector {sector} of f0{actor} ({}) in {:.1}s; C1 output: {} ({} bytes)",
                proof_type.name(),
                t.elapsed().as_secs_f64(),
                out.display(),
                bytes.len()
            );
            Ok(())
        }
        Command::Fetch {
            sector_size,
            porep_only,
            dir,
            gateway,
        } => {
            let size = sector_size.as_deref().map(size_arg).transpose()?;
            let entries = fetch::manifest(size, porep_only);
            if entries.is_empty() {
                bail!("the manifest lists no file for that selection");
            }
            let dir = dir_or_default(dir);
            let gateway = gateway
                .or_else(|| std::env::var("IPFS_GATEWAY").ok())
                .unwrap_or_else(|| fetch::DEFAULT_GATEWAY.to_string());
            let mut count = 0;
            let results = fetch::fetch(dir.path(), &gateway, &entries, &mut |e| {
                count += 1;
                eprintln!(
                    "[{count}/{}] {} ({} bytes sector)",
                    entries.len(),
                    e.name,
                    e.sector_size
                );
            })?;
            for r in results {
                match r {
                    Fetched::Present(p) => println!("present, digest ok: {}", p.display()),
                    Fetched::Downloaded(p, n) => {
                        println!("downloaded, digest ok: {} ({n} bytes)", p.display())
                    }
                }
            }
            Ok(())
        }
    }
}
