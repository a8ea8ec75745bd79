//! `cuzk aggregate`: one SnarkPack aggregate (v2) over 1–65 sectors' PoRep
//! proofs of one proof type, interactive or non-interactive, made by
//! filecoin-proofs' `aggregate_seal_commit_proofs` (so its bytes), checked
//! with `verify_aggregate_seal_commit_proofs`, and only then written.
//!
//! Input, per sector: its C1 output (plain JSON or Curio's wrapper; comm_r,
//! the seed and the replica id come from it, the vanilla proofs are not
//! used) and its partition proofs, 192 bytes per partition (an interactive
//! C2 output, or `cuzk porep-c2 --partition-proofs` for a non-interactive
//! sector). The counts are checked before any file is read, each C1 is
//! dropped once its public inputs are derived, and the SRS is checked
//! before aggregating.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_filecoin::aggregate::{padded_len, MAX_SECTORS};
use cuzk_filecoin::{
    aggregate, check_c1, parse_c1, verify_aggregate, CommitProofs, SectorIdentity,
};

use crate::commands::porep_c2::parse_actor;
use crate::commands::proving::{one_per_c1, parameter_cache, verification, write_and_report};
use crate::output::Stages;

#[derive(Args, Debug)]
pub(crate) struct AggregateArgs {
    /// A sector's C1 output (filecoin-proofs-api's JSON or Curio's wrapper).
    /// Repeat, one per sector, in the order of the aggregate (1 to 65).
    #[arg(long, required = true)]
    c1: Vec<PathBuf>,
    /// That sector's partition proofs (192 bytes per partition), one per --c1
    /// in the same order.
    #[arg(long, required = true)]
    proof: Vec<PathBuf>,
    /// Where to write the aggregate (atomically, only once it has verified).
    #[arg(long, short)]
    out: PathBuf,
    /// Parameter cache holding the .vk and the SnarkPack SRS
    /// v28-fil-inner-product-v1.srs (default: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Miner actor id (f01000 or 1000). With it each C1 in Curio's wrapper is
    /// checked to belong to its sector (its replica id, from SectorNum) before
    /// aggregating.
    #[arg(long)]
    prover_id: Option<String>,
    /// Do not verify the aggregate before writing it.
    #[arg(long)]
    no_verify: bool,
}

pub(crate) fn run(args: AggregateArgs) -> Result<()> {
    let params = parameter_cache(args.params_dir.as_deref());
    one_per_c1(args.c1.len(), args.proof.len(), "--proof")?;
    if args.c1.len() > MAX_SECTORS {
        bail!(
            "{} sectors: an aggregate takes 1 to {MAX_SECTORS} (FIP-0092); nothing was written",
            args.c1.len()
        );
    }
    let actor = args.prover_id.as_deref().map(parse_actor).transpose()?;
    let mut stages: Stages = Vec::new();

    let t = Instant::now();
    let mut sectors = Vec::with_capacity(args.c1.len());
    for (c1_path, proof_path) in args.c1.iter().zip(&args.proof) {
        let bytes = std::fs::read(c1_path)
            .with_context(|| format!("reading the C1 file {}", c1_path.display()))?;
        let c1 = parse_c1(&bytes).with_context(|| format!("{}", c1_path.display()))?;
        drop(bytes);
        if let Some(first) = sectors.first().map(|s: &CommitProofs| s.proof_type) {
            if c1.proof_type != first {
                bail!(
                    "{} is {} but {} is {}: one aggregate holds proofs of one proof type (one \
                     sector size, one verifying key); nothing was written",
                    c1_path.display(),
                    c1.proof_type.name(),
                    args.c1[0].display(),
                    first.name()
                );
            }
        }
        if let Some(actor) = actor {
            let sector = c1.sector_num().with_context(|| {
                format!(
                    "{}: --prover-id needs each C1 in Curio's wrapper (its SectorNum)",
                    c1_path.display()
                )
            })?;
            check_c1(&c1, Some(&SectorIdentity::from_actor(actor, sector)))
                .with_context(|| format!("{}", c1_path.display()))?;
        }
        let proofs = std::fs::read(proof_path)
            .with_context(|| format!("reading the proof file {}", proof_path.display()))?;
        sectors.push(
            CommitProofs::new(&c1, proofs).with_context(|| format!("{}", proof_path.display()))?,
        );
    }
    let pt = sectors[0].proof_type;
    let proofs = sectors.len() * pt.partitions();
    stages.push((
        "read".into(),
        t.elapsed(),
        format!(
            "{} sector(s) of {}, {} partition proofs{}",
            sectors.len(),
            pt.name(),
            proofs,
            if actor.is_some() {
                ", each C1 checked against its sector"
            } else {
                ""
            }
        ),
    ));

    let t = Instant::now();
    let srs = params.check_srs(proofs)?;
    stages.push((
        "srs".into(),
        t.elapsed(),
        format!("{} (up to {} proofs)", srs.path.display(), srs.max_proofs),
    ));

    let t = Instant::now();
    let aggregate = aggregate(&sectors)?;
    stages.push((
        "aggregation".into(),
        t.elapsed(),
        format!(
            "SnarkPack v2 (filecoin-proofs' aggregate_seal_commit_proofs) of {proofs} proofs, \
             padded to {}; {} bytes",
            padded_len(proofs),
            aggregate.len()
        ),
    ));

    verification(args.no_verify, &mut stages, || {
        verify_aggregate(&sectors, &aggregate)?;
        Ok("filecoin-proofs verify_aggregate_seal_commit_proofs: valid".into())
    })?;

    write_and_report(&args.out, &aggregate, &stages)
}
