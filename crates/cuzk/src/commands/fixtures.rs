//! `cuzk fixtures`: Filecoin test data, also run by `cargo xtask fixtures`.
//!
//! * `keys`: test keys for any sector size (the PoRep, WinningPoSt,
//!   WindowPoSt or update circuit), generated offline from a seed (the fixed-base step
//!   on a CUDA device when there is one), under their official names; a
//!   PoRep key optionally from its recorded circuit (`--from-recording`).
//! * `keys --srs`: a test SnarkPack SRS (non-interactive PoRep, aggregates)
//!   from a seed, in the official file format and under the official name.
//! * `fetch`: the official parameter files of the crates' manifest, each
//!   checked against its digest (`--srs`: the SnarkPack SRS); a cut
//!   download is retried and resumed where it stopped, also by the next run.
//! * `seal`: a sector of random data sealed by filecoin-proofs (up to
//!   512 MiB), written as its C1 output.
//! * `synth-sector`: a synthetic CC sector's C1 output for any size, made in
//!   seconds without sealing (test data; the proofs over it are real).
//! * `synth-post`: synthetic PoSt vanilla proofs (one bincode file per
//!   sector, as Curio sends them) for a WinningPoSt or a WindowPoSt
//!   partition of any sector size.
//! * `synth-snap`: synthetic SnapDeals vanilla proofs (one bincode file per
//!   partition, as Curio sends them) and the three commitments, for an
//!   empty-sector update of any sector size.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use clap::Subcommand;
use cuzk_filecoin::fetch::{self, Fetched};
use cuzk_filecoin::precompile::default_cache_path;
use cuzk_filecoin::sample::seal_random_sector;
use cuzk_filecoin::synthetic::{supported_names, SyntheticSector};
use cuzk_filecoin::synthetic_post::SyntheticPost;
use cuzk_filecoin::synthetic_snap::SyntheticUpdate;
use cuzk_filecoin::{
    parse_sector_size, Circuit, ParamsDir, PostType, ProofType, SectorIdentity, UpdateType,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;

use crate::backend::select_fixed_base;
use crate::commands::porep_c2::parse_actor;
use crate::output::{peak_rss, write_atomically};

#[derive(Subcommand, Debug)]
pub(crate) enum Fixtures {
    /// Generate test keys (.params and .vk) under their official names, for
    /// a PoRep, WinningPoSt, WindowPoSt or SnapDeals update circuit.
    /// Test keys only: anyone with the seed can forge proofs.
    Keys {
        /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB); every PoRep proof type of one
        /// sector size shares one circuit, hence one key.
        #[arg(long, default_value = "2KiB", conflicts_with = "proof_type")]
        sector_size: String,
        /// With --sector-size: which circuit of that size (`porep`, `winning-post`,
        /// `window-post`, `update`: the SnapDeals update, whose proof type names are
        /// the V1 PoRep ones).
        #[arg(long, default_value = "porep", conflicts_with = "proof_type")]
        kind: String,
        /// A registered proof type name instead (StackedDrg2KiBV1_1,
        /// StackedDrgWinning2KiBV1, StackedDrgWindow2KiBV1_2, ...).
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
        /// Generate the key from the circuit's recording (the file `cuzk
        /// precompile` writes) instead of
        /// synthesizing the blank circuit again; the same bytes. Alone, the
        /// recording's default place beside the key (`v28-<circuit id>.r1cs`
        /// in the parameter directory). A file missing, corrupt or holding
        /// another circuit is refused, naming it.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "")]
        from_recording: Option<PathBuf>,
        /// Write a test SnarkPack SRS (v28-fil-inner-product-v1.srs, bellperson's
        /// setup_fake_srs from --seed) instead of keys: what non-interactive PoRep and
        /// `cuzk aggregate` read. Test data only: anyone with the seed can forge aggregates.
        #[arg(long, conflicts_with_all = ["proof_type", "from_recording"])]
        srs: bool,
        /// With --srs: the most proofs one aggregate may hold (rounded up to a power of
        /// two; 8192 covers 65 sectors of 126 partitions).
        #[arg(long, default_value_t = cuzk_filecoin::aggregate::TEST_SRS_PROOFS, requires = "srs")]
        srs_proofs: usize,
    },
    /// Download the official parameter files and check their digests. A
    /// download that fails is retried (8 times in a row without progress,
    /// waiting 2 s doubling to 60 s) from where it stopped; one interrupted
    /// is resumed by the next run (from `.<name>.partial` in the directory).
    Fetch {
        /// Only files for this sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
        #[arg(long)]
        sector_size: Option<String>,
        /// Only PoRep files (not PoSt or sector update).
        #[arg(long)]
        porep_only: bool,
        /// Only the SnarkPack SRS (v28-fil-inner-product-v1.srs, from the crates'
        /// srs-inner-product.json), for non-interactive PoRep and aggregates.
        #[arg(long, conflicts_with_all = ["sector_size", "porep_only"])]
        srs: bool,
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
        /// Miner actor id (f0ID, e.g. f01000).
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
    /// Write the C1 output of a synthetic committed-capacity sector of any size
    /// (test data: consistent, not sealed; the proofs made from it are real).
    SynthSector {
        /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB): its V1_1 proof type.
        #[arg(long, default_value = "32GiB", conflicts_with = "proof_type")]
        sector_size: String,
        /// A registered proof type name instead (interactive, not synthetic PoRep).
        #[arg(long)]
        proof_type: Option<String>,
        /// Seed of the ticket, the interactive seed and the unconstrained labels.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Sector number.
        #[arg(long, default_value_t = 1)]
        sector_id: u64,
        /// Miner actor id (f01000 or 1000): the prover id of the replica id.
        #[arg(long, default_value = "f01000")]
        prover_id: String,
        /// Write the bare C1 JSON instead of Curio's {"SectorNum","Phase1Out","SectorSize"} wrapper.
        #[arg(long)]
        plain: bool,
        /// Where to write the C1 output (written atomically).
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Write synthetic PoSt vanilla proofs for any sector size (test data:
    /// consistent sparse trees, no replica; the proofs made from them are real):
    /// `OUT/vanilla-<i>.bin` per sector, what `cuzk winning-post` / `window-post`
    /// and the daemon take.
    SynthPost {
        /// The registered PoSt proof type (StackedDrgWinning32GiBV1, StackedDrgWindow32GiBV1_2, …).
        #[arg(long)]
        proof_type: String,
        /// The challenge randomness: 32 bytes in hex (a field element: the last byte below 0x40).
        #[arg(long)]
        randomness: String,
        /// Miner actor id (f01000 or 1000): the prover id.
        #[arg(long, default_value = "f01000")]
        prover_id: String,
        /// The sector numbers, in order (WinningPoSt: one; WindowPoSt: up to a partition's,
        /// 2349 at 32 GiB): comma-separated numbers and ranges FIRST-LAST (`1-2349`).
        #[arg(long, required = true, value_delimiter = ',', value_parser = sector_range)]
        sectors: Vec<SectorRange>,
        /// Seed of the challenged leaves and comm_c.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The directory to write `vanilla-<i>.bin` into (created).
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Write synthetic SnapDeals (empty-sector update) vanilla proofs for any
    /// sector size (test data: consistent trees of uniform blocks, no replica;
    /// the proofs made from them are real): `OUT/vanilla-<k>.bin` per partition
    /// and OUT/commitments.txt (comm_r_old, comm_r_new, comm_d_new in hex),
    /// what `cuzk snap-prove` and the daemon take.
    SynthSnap {
        /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB): the update proof type of that size.
        #[arg(long, default_value = "32GiB")]
        sector_size: String,
        /// Seed of the old replica, the new data and comm_c.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The directory to write `vanilla-<k>.bin` and commitments.txt into (created).
        #[arg(long, short)]
        out: PathBuf,
    },
}

pub(crate) fn run(task: Fixtures) -> Result<()> {
    match task {
        Fixtures::Keys {
            seed,
            dir,
            force,
            srs: true,
            srs_proofs,
            ..
        } => test_srs(seed, dir, force, srs_proofs),
        Fixtures::Keys {
            sector_size,
            kind,
            proof_type,
            seed,
            dir,
            force,
            backend,
            from_recording,
            ..
        } => keys(
            &sector_size,
            &kind,
            proof_type.as_deref(),
            seed,
            dir,
            force,
            &backend,
            from_recording,
        ),
        Fixtures::Fetch {
            sector_size,
            porep_only,
            srs,
            dir,
            gateway,
        } => fetch_files(sector_size.as_deref(), porep_only, srs, dir, gateway),
        Fixtures::Seal {
            proof_type,
            actor,
            sector,
            seed,
            curio,
            out,
        } => seal(&proof_type, actor, sector, seed, curio, out),
        Fixtures::SynthSector {
            sector_size,
            proof_type,
            seed,
            sector_id,
            prover_id,
            plain,
            out,
        } => {
            let proof_type = proof_type_arg(&sector_size, proof_type.as_deref()).map_err(|e| {
                anyhow::anyhow!(
                    "{e:#}\n  synthetic sectors are made for: {}",
                    supported_names().join(", ")
                )
            })?;
            let identity = SectorIdentity::from_actor(parse_actor(&prover_id)?, sector_id);
            synth_sector(proof_type, identity, seed, plain, out)
        }
        Fixtures::SynthPost {
            proof_type,
            randomness,
            prover_id,
            sectors,
            seed,
            out,
        } => synth_post(
            &proof_type,
            &randomness,
            &prover_id,
            sectors.into_iter().flat_map(|r| r.0).collect(),
            seed,
            out,
        ),
        Fixtures::SynthSnap {
            sector_size,
            seed,
            out,
        } => synth_snap(&sector_size, seed, out),
    }
}

/// One `--sectors` item: its sector numbers, in order.
#[derive(Clone, Debug)]
pub(crate) struct SectorRange(Vec<u64>);

/// One `--sectors` item: a number, or a range FIRST-LAST of them (inclusive).
fn sector_range(text: &str) -> Result<SectorRange, String> {
    let number = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("{t:?} is not a sector number"))
    };
    match text.split_once('-') {
        None => Ok(SectorRange(vec![number(text)?])),
        Some((a, b)) => {
            let (first, last) = (number(a)?, number(b)?);
            if first > last {
                return Err(format!("{text:?}: the range ends before it starts"));
            }
            Ok(SectorRange((first..=last).collect()))
        }
    }
}

fn synth_post(
    proof_type: &str,
    randomness: &str,
    prover_id: &str,
    sectors: Vec<u64>,
    seed: u64,
    out: PathBuf,
) -> Result<()> {
    let post_type = PostType::from_name(proof_type)?;
    let bytes = crate::commands::post::parse_hex(randomness).context("--randomness")?;
    let randomness: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| anyhow::anyhow!("--randomness is {} bytes; it must be 32", bytes.len()))?;
    let prover = SectorIdentity::from_actor(parse_actor(prover_id)?, 0).prover_id;
    let request = SyntheticPost {
        post_type,
        randomness,
        prover_id: prover,
        sectors: sectors.clone(),
        seed,
    };
    let made = request.generate()?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut total = 0;
    for (i, v) in made.vanilla_proofs.iter().enumerate() {
        let path = out.join(format!("vanilla-{i}.bin"));
        write_atomically(&path, v)?;
        total += v.len();
    }
    println!(
        "TEST DATA: synthetic {} vanilla proofs of prover {}, seed {seed}: no replica, only \
         consistent; proofs made from them are real.",
        post_type.name(),
        hex_prefix(&prover),
    );
    // Every sector's comm_r in OUT/comm_r.txt (what a verifier is given),
    // the first few on stdout.
    let mut listing = String::new();
    for (i, (sector, comm_r)) in sectors.iter().zip(&made.comm_rs).enumerate() {
        let hex: String = comm_r.iter().map(|b| format!("{b:02x}")).collect();
        listing.push_str(&format!("{sector} {hex}\n"));
        if i < 8 {
            println!("sector {sector}: comm_r {hex}");
        }
    }
    if sectors.len() > 8 {
        println!(
            "… {} more sector(s): every comm_r in comm_r.txt",
            sectors.len() - 8
        );
    }
    write_atomically(&out.join("comm_r.txt"), listing.as_bytes())?;
    println!(
        "{} challenges over {} sector(s), made in {:.3}s; wrote {} file(s) vanilla-<i>.bin \
         ({total} bytes) in {}",
        made.challenges,
        sectors.len(),
        made.elapsed.as_secs_f64(),
        made.vanilla_proofs.len(),
        out.display()
    );
    Ok(())
}

fn synth_snap(sector_size: &str, seed: u64, out: PathBuf) -> Result<()> {
    let size = size_arg(sector_size)?;
    let update_type = UpdateType::ALL
        .into_iter()
        .map(UpdateType::new)
        .find(|u| u.sector_size() == size)
        .with_context(|| format!("no update proof type has {sector_size} sectors"))?;
    let made = SyntheticUpdate { update_type, seed }.generate()?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut total = 0;
    for (k, v) in made.vanilla_proofs.iter().enumerate() {
        write_atomically(&out.join(format!("vanilla-{k}.bin")), v)?;
        total += v.len();
    }
    let hex = |bytes: &[u8; 32]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    let commitments = format!(
        "comm_r_old {}\ncomm_r_new {}\ncomm_d_new {}\n",
        hex(&made.comm_r_old),
        hex(&made.comm_r_new),
        hex(&made.comm_d_new)
    );
    write_atomically(&out.join("commitments.txt"), commitments.as_bytes())?;
    println!(
        "TEST DATA: synthetic {} update vanilla proofs, seed {seed}: no replica, only \
         consistent; proofs made from them are real.",
        update_type.name()
    );
    print!("{commitments}");
    println!(
        "{} challenges over {} partition(s), {} uniform blocks, made in {:.3}s; wrote {} \
         file(s) vanilla-<k>.bin ({total} bytes) and commitments.txt in {}",
        made.challenges,
        made.vanilla_proofs.len(),
        made.blocks,
        made.elapsed.as_secs_f64(),
        made.vanilla_proofs.len(),
        out.display()
    );
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
    Ok(())
}

pub(crate) fn dir_or_default(dir: Option<PathBuf>) -> ParamsDir {
    dir.map_or_else(ParamsDir::filecoin, ParamsDir::new)
}

pub(crate) fn size_arg(text: &str) -> Result<u64> {
    parse_sector_size(text)
        .with_context(|| format!("{text:?} is not a sector size (like 2KiB, 32GiB)"))
}

/// `--proof-type NAME`, else the V1_1 type of `--sector-size`.
fn proof_type_arg(sector_size: &str, proof_type: Option<&str>) -> Result<ProofType> {
    if let Some(name) = proof_type {
        return Ok(ProofType::from_name(name)?);
    }
    Ok(ProofType::for_sector_size(size_arg(sector_size)?)?)
}

/// `--proof-type NAME` (any kind), else the `--kind` circuit of `--sector-size`.
pub(crate) fn circuit_arg(
    sector_size: &str,
    kind: &str,
    proof_type: Option<&str>,
) -> Result<Circuit> {
    if let Some(name) = proof_type {
        return Ok(Circuit::from_name(name)?);
    }
    let porep = proof_type_arg(sector_size, None)?;
    Ok(match kind {
        "porep" => Circuit::Porep(porep),
        "winning-post" => Circuit::Post(PostType::winning_for(porep)),
        "window-post" => Circuit::Post(PostType::window_for(porep)),
        "update" => Circuit::Update(UpdateType::for_seal(porep)),
        other => bail!("--kind {other:?}: expected porep, winning-post, window-post or update"),
    })
}

/// The C1 output as the plain JSON, or in Curio's wrapper.
fn c1_bytes(c1: &SealCommitPhase1Output, sector: u64, curio: bool) -> Result<Vec<u8>> {
    let plain = serde_json::to_vec(c1)?;
    if !curio {
        return Ok(plain);
    }
    Ok(serde_json::to_vec(&serde_json::json!({
        "SectorNum": sector,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&plain),
        "SectorSize": u64::from(c1.registered_proof.sector_size()),
    }))?)
}

#[allow(clippy::too_many_arguments)] // one per command-line option
fn keys(
    sector_size: &str,
    kind: &str,
    proof_type: Option<&str>,
    seed: u64,
    dir: Option<PathBuf>,
    force: bool,
    backend: &str,
    from_recording: Option<PathBuf>,
) -> Result<()> {
    let proof_type = circuit_arg(sector_size, kind, proof_type)?;
    let dir = dir_or_default(dir);
    if !force && dir.check(proof_type).is_ok() {
        println!(
            "present: {} and {}",
            dir.params_path(proof_type)?.display(),
            dir.vk_path(proof_type)?.display()
        );
        return Ok(());
    }
    let fixed_base = select_fixed_base("keys", backend)?;
    eprintln!(
        "generating test keys for {} (seed {seed}) in {}",
        proof_type.name(),
        dir.path().display()
    );
    let t = Instant::now();
    let keys = match from_recording {
        None => dir.generate_test_keys_with(proof_type, seed, fixed_base.as_ref())?,
        Some(path) => {
            let path = if path.as_os_str().is_empty() {
                default_cache_path(&dir, proof_type)?
            } else {
                path
            };
            eprintln!("from the recording {}", path.display());
            dir.generate_test_keys_from_recording(proof_type, seed, &path, fixed_base.as_ref())?
        }
    };
    println!(
        "wrote {} ({} bytes) and {} in {:.1}s (fixed-base step: {})",
        keys.params.display(),
        keys.summary.file_len,
        keys.vk.display(),
        t.elapsed().as_secs_f64(),
        fixed_base.name()
    );
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
    Ok(())
}

/// `keys --srs`: the test SnarkPack SRS, unless one large enough is there.
fn test_srs(seed: u64, dir: Option<PathBuf>, force: bool, proofs: usize) -> Result<()> {
    let dir = dir_or_default(dir);
    if !force {
        if let Ok(present) = dir.check_srs(proofs) {
            println!(
                "present: {} (up to {} proofs)",
                present.path.display(),
                present.max_proofs
            );
            return Ok(());
        }
    }
    let t = Instant::now();
    let made = dir.generate_test_srs(seed, proofs)?;
    println!(
        "TEST DATA: wrote the test SnarkPack SRS {} ({} bytes, up to {} proofs, seed {seed}) in \
         {:.1}s",
        made.path.display(),
        made.file_len,
        made.max_proofs,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn seal(
    proof_type: &str,
    actor: u64,
    sector: u64,
    seed: u64,
    curio: bool,
    out: PathBuf,
) -> Result<()> {
    let proof_type = ProofType::from_name(proof_type)?;
    let work = tempfile::tempdir().context("creating a work directory")?;
    if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", work.path().join("parents"));
    }
    let identity = SectorIdentity::from_actor(actor, sector);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let t = Instant::now();
    let c1 = seal_random_sector(proof_type, work.path(), &identity, &mut rng)?;
    let bytes = c1_bytes(&c1, sector, curio)?;
    write_atomically(&out, &bytes)?;
    println!(
        "sealed sector {sector} of f0{actor} ({}) in {:.1}s; C1 output: {} ({} bytes)",
        proof_type.name(),
        t.elapsed().as_secs_f64(),
        out.display(),
        bytes.len()
    );
    Ok(())
}

fn synth_sector(
    proof_type: ProofType,
    identity: SectorIdentity,
    seed: u64,
    plain: bool,
    out: PathBuf,
) -> Result<()> {
    let request = SyntheticSector {
        proof_type,
        identity,
        seed,
    };
    let made = request.generate()?;
    let bytes = c1_bytes(&made.output, identity.sector_id, !plain)?;
    write_atomically(&out, &bytes)?;
    println!(
        "TEST DATA: synthetic CC sector {} of prover {} ({}), seed {seed}: not sealed, only \
         consistent; proofs made from it are real.",
        identity.sector_id,
        hex_prefix(&identity.prover_id),
        proof_type.name(),
    );
    println!(
        "{} challenges over {} partition(s), {} labelled nodes, {} opened nodes, made in {:.3}s",
        made.challenges,
        proof_type.partitions(),
        made.labelled_nodes,
        made.opened_nodes,
        made.elapsed.as_secs_f64()
    );
    println!(
        "wrote {} ({} bytes, {})",
        out.display(),
        bytes.len(),
        if plain {
            "plain C1 JSON"
        } else {
            "Curio's wrapper"
        }
    );
    Ok(())
}

/// Draws a download's progress: one line per file, a bar while it streams,
/// each retry and what it resumes from.
fn fetch_progress(files: usize) -> impl FnMut(fetch::Progress<'_>) {
    let mut count = 0;
    let mut bar: Option<ProgressBar> = None;
    move |p: fetch::Progress<'_>| match p {
        fetch::Progress::File(e) => {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            count += 1;
            eprintln!(
                "[{count}/{files}] {} ({} bytes sector)",
                e.name, e.sector_size
            );
        }
        fetch::Progress::Hashing { entry, bytes } => {
            eprintln!("  checking the {bytes} bytes of {} on disk", entry.name)
        }
        fetch::Progress::Bytes { done, total, .. } => {
            let b = bar.get_or_insert_with(|| {
                let b = ProgressBar::new(total.unwrap_or(0)).with_style(
                    ProgressStyle::with_template(
                        "  {bytes}/{total_bytes} {bar:30} {binary_bytes_per_sec} eta {eta}",
                    )
                    .expect("static template"),
                );
                b.enable_steady_tick(std::time::Duration::from_millis(500));
                b
            });
            if let Some(t) = total {
                b.set_length(t);
            }
            b.set_position(done);
            if total == Some(done) {
                if let Some(b) = bar.take() {
                    b.finish();
                }
            }
        }
        fetch::Progress::Retry {
            attempt,
            from,
            wait,
            error,
            ..
        } => {
            let line = format!(
                "  {error}; retry {attempt} in {:.0}s from byte {from}",
                wait.as_secs_f64()
            );
            match &bar {
                Some(b) => b.println(line),
                None => eprintln!("{line}"),
            }
        }
    }
}

/// The prover id's significant bytes in hex.
fn hex_prefix(id: &[u8; 32]) -> String {
    let len = id.iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
    id[..len].iter().map(|b| format!("{b:02x}")).collect()
}

fn fetch_files(
    sector_size: Option<&str>,
    porep_only: bool,
    srs: bool,
    dir: Option<PathBuf>,
    gateway: Option<String>,
) -> Result<()> {
    let size = sector_size.map(size_arg).transpose()?;
    let entries = if srs {
        fetch::srs_manifest()
    } else {
        fetch::manifest(size, porep_only)
    };
    if entries.is_empty() {
        bail!("the manifest lists no file for that selection");
    }
    fetch_entries(&dir_or_default(dir), gateway, &entries)
}

/// Fetches `entries` into the cache `dir` from `gateway` (else IPFS_GATEWAY,
/// else Filecoin's), drawing progress; prints what each file is now.
pub(crate) fn fetch_entries(
    dir: &ParamsDir,
    gateway: Option<String>,
    entries: &[fetch::ManifestEntry],
) -> Result<()> {
    let gateway = gateway
        .or_else(|| std::env::var("IPFS_GATEWAY").ok())
        .unwrap_or_else(|| fetch::DEFAULT_GATEWAY.to_string());
    let results = fetch::fetch(
        dir.path(),
        &gateway,
        entries,
        &fetch::FetchOptions::default(),
        &mut fetch_progress(entries.len()),
    )?;
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
