//! What `cuzk winning-post` and `cuzk window-post` share: the request read
//! from files (bincode vanilla proofs, as Curio packs them), the key from
//! the parameter cache under its official name, the proof made by the
//! serial scheduler (one partition), verified with the Filecoin crates, and
//! written atomically only then, with one timing line per stage (porep-c2's
//! conventions).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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
use crate::commands::proving::{
    check_key, parameter_cache, precompiled_note, verification, write_and_report, ProofArgs,
};
use crate::output::{read_key, Stages};
use crate::run::{run_jobs, RunSettings, Schedule};

/// What a PoSt is proved from, as `winning-post`, `window-post` and
/// `client winning-post`/`window-post` take it.
#[derive(Args, Debug)]
pub(crate) struct PostInputArgs {
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
}

/// [`PostInputArgs`] read: the files loaded, the hex and the actor parsed.
pub(crate) struct PostInput {
    pub(crate) post_type: PostType,
    pub(crate) randomness: Vec<u8>,
    /// The miner's actor id.
    pub(crate) actor: u64,
    /// Each sector's vanilla proof, in order.
    pub(crate) vanilla: Vec<Vec<u8>>,
}

impl PostInputArgs {
    pub(crate) fn read(&self) -> Result<PostInput> {
        Ok(PostInput {
            post_type: PostType::from_name(&self.proof_type)?,
            randomness: parse_hex(&self.randomness).context("--randomness")?,
            actor: parse_actor(&self.prover_id)?,
            vanilla: read_vanilla(&self.vanilla)?,
        })
    }
}

#[derive(Args, Debug)]
pub(crate) struct PostArgs {
    #[command(flatten)]
    input: PostInputArgs,
    /// Where to write the 192-byte proof; written atomically, and only once it has verified.
    #[arg(long, short)]
    out: PathBuf,
    #[command(flatten)]
    proof: ProofArgs,
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
            (CircuitSynthesis::Precompiled(pre), _) => precompiled_note(pre),
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

/// The contents of the vanilla proof files of `--vanilla` (see [`vanilla_files`]).
pub(crate) fn read_vanilla(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>> {
    vanilla_files(paths)?
        .iter()
        .map(|path| {
            std::fs::read(path)
                .with_context(|| format!("reading the vanilla proof {}", path.display()))
        })
        .collect()
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
    let params = parameter_cache(args.proof.params_dir.as_deref());
    let mut stages: Stages = Vec::new();

    let t = Instant::now();
    let PostInput {
        post_type,
        randomness,
        actor,
        vanilla,
    } = args.input.read()?;
    let prover_id = SectorIdentity::from_actor(actor, 0).prover_id;
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

    check_key(&params, post_type, &mut stages)?;

    let device = select_engine_device(&args.backend, 1)?;
    let key = read_key(&params, post_type, &mut stages)?;
    let synthesis = args.synthesis.open(post_type, &params, &key, &mut stages);
    let source = Arc::new(PostSource::with_synthesis(&request, &key, &synthesis)?);
    let shape = source.shape();
    let key_bytes = key.summary().file_len;
    let mut job = Job::new(Arc::clone(&source) as _, Arc::new(key));
    if let Some(seed) = args.proof.rng_seed {
        job = job.seeded(seed);
    }
    let settings = RunSettings {
        schedule: Schedule::Serial,
        host_budget: None,
        verify: !args.proof.no_verify,
        what: "partitions",
    };
    let run = run_jobs(device, vec![job], &shape, key_bytes, &settings)?;
    // Building the circuit (decoding and checking the vanilla proofs) is
    // part of the source's construction, before the engine's synthesis.
    let prep = source.prep();
    stages.push(("circuit".into(), prep.total(), prep.to_string()));
    run.report(&mut stages);
    let proof = run.proof_bytes().remove(0);

    verification(args.proof.no_verify, &mut stages, || {
        let vk = params.load_verifying_key(post_type)?;
        let how = verify_post(&request, &proof, &vk)?;
        Ok(match (how, kind) {
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
        .into())
    })?;

    write_and_report(&args.out, &proof, &stages)
}
