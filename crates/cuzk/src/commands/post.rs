//! What `cuzk winning-post` and `cuzk window-post` share: the request read
//! from files (bincode vanilla proofs, as Curio packs them), the key from
//! the parameter cache under its official name, the proof made by the
//! serial scheduler (one partition), verified with the Filecoin crates, and
//! written atomically only then, with one timing line per stage (porep-c2's
//! conventions).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::{
    verify_post, Circuit, CircuitSynthesis, ParamsDir, PostKind, PostRequest, PostSource, PostType,
    PostVerified, SectorIdentity,
};
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{Job, PartitionSource};

use crate::backend::{select_engine_device, BackendArgs};
use crate::commands::porep_c2::parse_actor;
use crate::output::{peak_rss, read_key, secs, write_atomically, Stages};
use crate::run::{run_jobs, RunSettings, Schedule};

#[derive(Args, Debug)]
pub(crate) struct PostArgs {
    /// The registered PoSt proof type (StackedDrgWinning32GiBV1, StackedDrgWindow32GiBV1_2, …).
    #[arg(long)]
    proof_type: String,
    /// One sector's vanilla proof: a bincode FallbackPoStSectorProof, as
    /// filecoin-proofs-api's generate_single_vanilla_proof returns it and
    /// Curio sends it. Repeat per sector, in order; a directory stands for
    /// its files vanilla-0.bin, vanilla-1.bin, … in that order (what
    /// `cuzk fixtures synth-post` writes).
    #[arg(long, required = true)]
    vanilla: Vec<PathBuf>,
    /// The challenge randomness: 32 bytes in hex (64 digits).
    #[arg(long)]
    randomness: String,
    /// Miner actor id (f01000 or 1000): the prover id is its id address payload.
    #[arg(long)]
    prover_id: String,
    /// Where to write the 192-byte proof; written atomically, and only once it has verified.
    #[arg(long, short)]
    out: PathBuf,
    /// Parameter cache holding v28-….params and .vk (default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Do not verify the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// Seed of the proof randomness (r, s); random when absent.
    #[arg(long)]
    rng_seed: Option<u64>,
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    synthesis: CircuitSynthesisArgs,
}

/// How a PoSt or update circuit is synthesized (`--synthesis`, `--r1cs-cache`).
#[derive(Args, Debug)]
pub(crate) struct CircuitSynthesisArgs {
    /// `full`: the crates' gadgets build every constraint (a WindowPoSt's
    /// sectors over all cores). `precompiled`: the recording `cuzk
    /// precompile` writes, beside the key by default: the gadgets compute
    /// the witness alone and the prover evaluates a, b, c from the recorded
    /// matrices (the GPU from VRAM), so the host never holds them. A
    /// recording that cannot be used is reported and the circuit
    /// synthesized in full.
    #[arg(long, default_value = "full", value_parser = ["full", "precompiled"])]
    synthesis: String,
    /// The recording for --synthesis precompiled (default: beside the key,
    /// v28-….r1cs).
    #[arg(long, value_name = "FILE")]
    r1cs_cache: Option<PathBuf>,
}

impl CircuitSynthesisArgs {
    /// The synthesis asked for, its recording opened and checked against
    /// `key` (the time a stage, with what was opened or why not).
    pub(crate) fn open(
        &self,
        circuit: impl Into<Circuit>,
        params: &ParamsDir,
        key: &ProvingKey,
        stages: &mut Stages,
    ) -> CircuitSynthesis {
        if self.synthesis != "precompiled" {
            return CircuitSynthesis::Full;
        }
        let t = Instant::now();
        let (synthesis, fallback) =
            CircuitSynthesis::precompiled(circuit, params, self.r1cs_cache.as_deref(), Some(key));
        let note = match (&synthesis, fallback) {
            (CircuitSynthesis::Precompiled(pre), _) => format!(
                "precompiled: {} ({}, {} constraints)",
                pre.path().display(),
                cuzk_pipeline::memory::human(pre.file_bytes() as u64),
                pre.shape().num_constraints
            ),
            (_, Some(e)) => format!("full (the pre-compiled circuit is not usable: {e})"),
            (_, None) => "full".into(),
        };
        stages.push(("synthesis mode".into(), t.elapsed(), note));
        synthesis
    }
}

pub(crate) fn parse_hex(text: &str) -> Result<Vec<u8>> {
    let t = text.trim().trim_start_matches("0x");
    if t.len() % 2 != 0 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("{text:?} is not hex (64 hex digits for 32 bytes)");
    }
    Ok((0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).expect("checked hex digits"))
        .collect())
}

/// The vanilla proof files of `--vanilla`: a file as given, a directory as
/// its `vanilla-<i>.bin` from 0 up to the first one absent (at least one).
pub(crate) fn vanilla_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let before = files.len();
        for i in 0.. {
            let file = path.join(format!("vanilla-{i}.bin"));
            if !file.is_file() {
                break;
            }
            files.push(file);
        }
        if files.len() == before {
            bail!(
                "--vanilla {}: a directory without vanilla-0.bin",
                path.display()
            );
        }
    }
    Ok(files)
}

/// The sector numbers, all of them up to 8, else the first three, the
/// count and the last.
fn sector_list(sectors: &[(u64, [u8; 32])]) -> String {
    let ids: Vec<String> = sectors.iter().map(|(id, _)| id.to_string()).collect();
    if ids.len() <= 8 {
        return ids.join(", ");
    }
    format!(
        "{}, … {} more …, {}",
        ids[..3].join(", "),
        ids.len() - 4,
        ids[ids.len() - 1]
    )
}

/// Proves one PoSt of `kind` (`partition`: the WindowPoSt partition index).
pub(crate) fn run(kind: PostKind, args: PostArgs, partition: usize) -> Result<()> {
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, on first use:
    // set it before anything touches the crates, so its verifier and cuzk
    // read the same directory.
    if let Some(dir) = &args.params_dir {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let params = ParamsDir::filecoin();
    let mut stages: Stages = Vec::new();

    let t = Instant::now();
    let post_type = PostType::from_name(&args.proof_type)?;
    let randomness = parse_hex(&args.randomness).context("--randomness")?;
    let prover_id = SectorIdentity::from_actor(parse_actor(&args.prover_id)?, 0).prover_id;
    let mut vanilla = Vec::with_capacity(args.vanilla.len());
    for path in vanilla_files(&args.vanilla)? {
        vanilla.push(
            std::fs::read(&path)
                .with_context(|| format!("reading the vanilla proof {}", path.display()))?,
        );
    }
    let bytes: usize = vanilla.iter().map(Vec::len).sum();
    let request = match kind {
        PostKind::Winning => PostRequest::winning(post_type, &randomness, prover_id, vanilla)?,
        PostKind::Window => {
            PostRequest::window(post_type, &randomness, prover_id, vanilla, partition)?
        }
    };
    let sectors = request.sectors()?;
    stages.push((
        "parse".into(),
        t.elapsed(),
        format!(
            "{}, {} sector(s) ({}), {bytes} bytes of vanilla proofs{}",
            post_type.name(),
            sectors.len(),
            sector_list(&sectors),
            match kind {
                PostKind::Winning => String::new(),
                PostKind::Window => format!(", partition {partition}"),
            }
        ),
    ));

    let t = Instant::now();
    params.check(post_type)?;
    stages.push((
        "check".into(),
        t.elapsed(),
        "key files present and whole".into(),
    ));

    let device = select_engine_device(&args.backend, 1)?;
    let key = read_key(&params, post_type, &mut stages)?;
    let synthesis = args.synthesis.open(post_type, &params, &key, &mut stages);
    let source = Arc::new(PostSource::with_synthesis(&request, &key, &synthesis)?);
    let shape = source.shape();
    let key_bytes = key.summary().file_len;
    let mut job = Job::new(Arc::clone(&source) as _, Arc::new(key));
    if let Some(seed) = args.rng_seed {
        job = job.seeded(seed);
    }
    let settings = RunSettings {
        schedule: Schedule::Serial,
        host_budget: None,
        verify: !args.no_verify,
        what: "partitions",
    };
    let run = run_jobs(device, vec![job], &shape, key_bytes, &settings)?;
    // Building the circuit (decoding and checking the vanilla proofs) is
    // part of the source's construction, before the engine's synthesis.
    let prep = source.prep();
    stages.push(("circuit".into(), prep.total(), prep.to_string()));
    run.report(&mut stages);
    let proof = run.proof_bytes().remove(0);

    if args.no_verify {
        stages.push((
            "verification".into(),
            Duration::ZERO,
            "skipped (--no-verify)".into(),
        ));
    } else {
        let t = Instant::now();
        let vk = params.load_verifying_key(post_type)?;
        let how = verify_post(&request, &proof, &vk)?;
        stages.push((
            "verification".into(),
            t.elapsed(),
            match (how, kind) {
                (PostVerified::FilecoinApi, PostKind::Winning) => {
                    "valid: filecoin-proofs-api verify_winning_post"
                }
                (PostVerified::FilecoinApi, PostKind::Window) => {
                    "valid: filecoin-proofs-api verify_window_post on the partition's sectors"
                }
                (PostVerified::Compound, _) => {
                    "valid: FallbackPoStCompound::verify (sectors not in ascending order)"
                }
            }
            .into(),
        ));
    }

    write_atomically(&args.out, &proof)?;
    for (stage, d, note) in &stages {
        println!("{stage:<13} {:>10}  {note}", secs(*d));
    }
    if let Some(peak) = peak_rss() {
        println!("peak host RSS {}", cuzk_pipeline::memory::human(peak));
    }
    println!("wrote {} ({} bytes)", args.out.display(), proof.len());
    Ok(())
}
