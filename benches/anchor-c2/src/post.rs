//! `anchor-c2 winning-post` and `anchor-c2 window-post`: a WinningPoSt or one WindowPoSt
//! partition through filecoin-proofs-api (`generate_winning_post_with_vanilla`,
//! `generate_single_window_post_with_vanilla`) on supraseal-c2, from the per-sector vanilla
//! proofs `cuzk winning-post` / `cuzk window-post` read (bincode `FallbackPoStSectorProof`s, one
//! file per sector, a directory standing for its `vanilla-<i>.bin` in order), then checked with
//! `verify_winning_post` / `verify_window_post`.
//!
//! The verifiers take the sectors (id and comm_r) as a sorted map; they are read from the vanilla
//! proofs themselves, decoded here with the tree shape of the proof type's sector size (which
//! also rejects a file that does not decode before any key is read; that its inclusion proofs
//! answer the challenges, the crates check inside the generate call). A WindowPoSt partition
//! whose sectors are not in strictly ascending order is refused: `verify_window_post` rebuilds the
//! public inputs in map order, so it could not check such a proof.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use filecoin_proofs::{with_shape, FallbackPoStSectorProof, MerkleTreeTrait};
use filecoin_proofs_api::post::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla,
    verify_window_post, verify_winning_post,
};
use filecoin_proofs_api::{PoStType, PublicReplicaInfo, RegisteredPoStProof, SectorId};

use crate::{
    check_key_files, gib, parse_actor, parse_hex32, peak_rss, prover_id, read_vanilla,
    report_verify, write_atomically, Common, Mode, Stages,
};

/// Which PoSt.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Winning,
    Window,
}

impl Kind {
    fn command(self) -> &'static str {
        match self {
            Kind::Winning => "winning-post",
            Kind::Window => "window-post",
        }
    }

    fn post_type(self) -> PoStType {
        match self {
            Kind::Winning => PoStType::Winning,
            Kind::Window => PoStType::Window,
        }
    }
}

const WINNING_HELP: &str = "anchor-c2 winning-post: a WinningPoSt with filecoin-proofs-api's \
generate_winning_post_with_vanilla (supraseal-c2), verified with verify_winning_post.

usage: anchor-c2 winning-post --proof-type NAME --vanilla DIR|FILE [--vanilla FILE ...]
         --randomness HEX --prover-id f0<ACTOR> (--out PROOF | --verify PROOF) [--params-dir DIR]
         [--runs N] [--verbose]

  --proof-type NAME   a WinningPoSt type: StackedDrgWinning{2KiB,8MiB,512MiB,32GiB,64GiB}V1
  --vanilla PATH      the challenged sector's vanilla proof (a bincode FallbackPoStSectorProof, as
                      generate_single_vanilla_proof returns it); a directory stands for its
                      vanilla-0.bin, vanilla-1.bin, ... in order (what `cuzk fixtures synth-post`
                      writes). As `cuzk winning-post --vanilla`.
  --randomness HEX    the challenge randomness, 32 bytes (64 hex digits)
  --prover-id ACTOR   miner actor id (f01000, t01000 or 1000)
  --out PROOF         where the proof goes, once it has verified
  --verify PROOF      instead of proving: only verify PROOF (e.g. cuzk's) against these inputs
                      (needs only the .vk)
  --params-dir DIR    parameter cache (default FIL_PROOFS_PARAMETER_CACHE, else
                      /var/tmp/filecoin-proof-parameters): the .params and the .vk
  --runs N            prove N times (the key stays in memory after the first)
  --verbose           echo the crates' log records, timestamped";

const WINDOW_HELP: &str =
    "anchor-c2 window-post: one WindowPoSt partition with filecoin-proofs-api's \
generate_single_window_post_with_vanilla (supraseal-c2), verified with verify_window_post.

usage: anchor-c2 window-post --proof-type NAME --vanilla DIR|FILE [--vanilla FILE ...]
         --randomness HEX --prover-id f0<ACTOR> [--partition K] (--out PROOF | --verify PROOF)
         [--params-dir DIR] [--runs N] [--verbose]

  --proof-type NAME   a WindowPoSt type: StackedDrgWindow{2KiB,8MiB,512MiB,32GiB,64GiB}V1_2 (the
                      network's; the V1 types are accepted and left to the crates)
  --vanilla PATH      the partition's sectors' vanilla proofs (bincode FallbackPoStSectorProofs),
                      one file per sector, in order (sector ids ascending); a directory stands for
                      its vanilla-0.bin, vanilla-1.bin, ... in order (what `cuzk fixtures
                      synth-post` writes). As `cuzk window-post --vanilla`.
  --randomness HEX    the challenge randomness, 32 bytes (64 hex digits)
  --prover-id ACTOR   miner actor id (f01000, t01000 or 1000)
  --partition K       the partition's index in the deadline (default 0)
  --out PROOF         where the 192-byte proof goes, once it has verified
  --verify PROOF      instead of proving: only verify PROOF (e.g. cuzk's) against these inputs
                      (needs only the .vk)
  --params-dir DIR    parameter cache (default FIL_PROOFS_PARAMETER_CACHE, else
                      /var/tmp/filecoin-proof-parameters): the .params and the .vk
  --runs N            prove N times (the key stays in memory after the first)
  --verbose           echo the crates' log records, timestamped";

/// Every registered PoSt proof type, to look one up by its name.
const POST_TYPES: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

pub struct PostArgs {
    kind: Kind,
    proof_type: RegisteredPoStProof,
    vanilla: Vec<PathBuf>,
    randomness: [u8; 32],
    actor: u64,
    partition: usize,
    pub common: Common,
}

impl PostArgs {
    pub fn parse(kind: Kind, args: &[String]) -> Result<Self, String> {
        let help = match kind {
            Kind::Winning => WINNING_HELP,
            Kind::Window => WINDOW_HELP,
        };
        let usage = help.split("\n\n").nth(1).unwrap_or(help);
        let mut it = args.iter();
        let (mut proof_type, mut randomness, mut actor) = (None, None, None);
        let (mut vanilla, mut partition) = (Vec::new(), 0usize);
        let mut common = Common::new();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value\n{usage}"))
            };
            if common.take(flag, &mut value)? {
                continue;
            }
            match flag.as_str() {
                "--proof-type" => {
                    let name = value()?;
                    let found = POST_TYPES
                        .into_iter()
                        .find(|p| format!("{p:?}") == name)
                        .ok_or_else(|| {
                            format!("--proof-type {name}: not a registered PoSt proof type")
                        })?;
                    if found.typ() != kind.post_type() {
                        return Err(format!(
                            "--proof-type {name} is not a {} type",
                            match kind {
                                Kind::Winning => "WinningPoSt",
                                Kind::Window => "WindowPoSt",
                            }
                        ));
                    }
                    proof_type = Some(found);
                }
                "--vanilla" => vanilla.push(PathBuf::from(value()?)),
                "--randomness" => randomness = Some(parse_hex32(&value()?, "--randomness")?),
                "--prover-id" => actor = Some(parse_actor(&value()?)?),
                "--partition" if kind == Kind::Window => {
                    partition = value()?.parse().map_err(|e| format!("--partition: {e}"))?
                }
                "-h" | "--help" => crate::help_exit(help),
                other => return Err(format!("unknown argument {other}\n{usage}")),
            }
        }
        let need = |what: &str| format!("{what} is needed\n{usage}");
        if vanilla.is_empty() {
            return Err(need("--vanilla"));
        }
        common.check_mode(usage)?;
        Ok(PostArgs {
            kind,
            proof_type: proof_type.ok_or_else(|| need("--proof-type"))?,
            vanilla,
            randomness: randomness.ok_or_else(|| need("--randomness"))?,
            actor: actor.ok_or_else(|| need("--prover-id"))?,
            partition,
            common,
        })
    }
}

/// Decodes every vanilla proof as a `FallbackPoStSectorProof` of `Tree`: its sector id and
/// comm_r, in order.
fn sectors_of<Tree: 'static + MerkleTreeTrait>(
    files: &[(PathBuf, Vec<u8>)],
) -> Result<Vec<(u64, [u8; 32])>, String> {
    files
        .iter()
        .map(|(path, bytes)| {
            let proof: FallbackPoStSectorProof<Tree> =
                bincode::deserialize(bytes).map_err(|e| {
                    format!(
                        "{}: not a bincode FallbackPoStSectorProof: {e}",
                        path.display()
                    )
                })?;
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&proof.comm_r));
            Ok((u64::from(proof.sector_id), comm_r))
        })
        .collect()
}

/// The sector numbers: all up to 8, else the first three, how many more, and the last.
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

pub fn run(args: PostArgs) -> Result<(), String> {
    let mode = args.common.prepare()?;
    let wall = Instant::now();
    let pt = args.proof_type;
    let command = args.kind.command();

    let t = Instant::now();
    let files = read_vanilla(&args.vanilla)?;
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    let sectors = with_shape!(u64::from(pt.sector_size()), sectors_of, &files)?;
    let count = pt.sector_count();
    match args.kind {
        Kind::Winning if sectors.len() != count => {
            return Err(format!(
                "{} vanilla proofs for {pt:?}: it proves exactly {count} sector(s)",
                sectors.len()
            ))
        }
        Kind::Window if sectors.len() > count => {
            return Err(format!(
                "{} vanilla proofs for one {pt:?} partition: it holds at most {count} sectors",
                sectors.len()
            ))
        }
        Kind::Window if !sectors.windows(2).all(|w| w[0].0 < w[1].0) => {
            return Err(
                "the vanilla proofs' sector ids are not strictly ascending: verify_window_post \
                 (which takes the sectors as a sorted map) could not check the proof"
                    .into(),
            )
        }
        _ => {}
    }
    let replicas: BTreeMap<SectorId, PublicReplicaInfo> = sectors
        .iter()
        .map(|&(id, comm_r)| (SectorId::from(id), PublicReplicaInfo::new(pt, comm_r)))
        .collect();
    let vanilla: Vec<Vec<u8>> = files.into_iter().map(|(_, b)| b).collect();
    let parse = t.elapsed();

    println!(
        "anchor-c2 {command}: {pt:?}, {} sector(s) ({}) of f0{}, {bytes} bytes of vanilla proofs{}, parse {:.3} s",
        sectors.len(),
        sector_list(&sectors),
        args.actor,
        match args.kind {
            Kind::Winning => String::new(),
            Kind::Window => format!(", partition {}", args.partition),
        },
        parse.as_secs_f64()
    );

    let params = match mode {
        Mode::Prove(_) => Some(
            pt.cache_params_path()
                .map_err(|e| format!("the key's path: {e:#}"))?,
        ),
        Mode::Verify(..) => None,
    };
    check_key_files(
        params,
        pt.cache_verifying_key_path()
            .map_err(|e| format!("the verifying key's path: {e:#}"))?,
        command,
    )?;
    let prover = prover_id(args.actor);

    let (generate_name, verify_name) = match args.kind {
        Kind::Winning => ("generate_winning_post_with_vanilla", "verify_winning_post"),
        Kind::Window => (
            "generate_single_window_post_with_vanilla",
            "verify_window_post",
        ),
    };
    let verify = |proof: &[u8]| {
        match args.kind {
            Kind::Winning => verify_winning_post(&args.randomness, proof, &replicas, prover),
            Kind::Window => verify_window_post(&args.randomness, &[(pt, proof)], &replicas, prover),
        }
        .map_err(|e| format!("{verify_name}: {e:#}"))
    };
    let out = match mode {
        Mode::Prove(out) => out,
        Mode::Verify(path, proof) => {
            let t = Instant::now();
            let valid = verify(&proof)?;
            return report_verify(command, verify_name, &path, &proof, t, valid);
        }
    };
    let mut last = None;
    for run in 1..=args.common.runs {
        let t0 = Instant::now();
        let proof = match args.kind {
            Kind::Winning => {
                let mut proofs =
                    generate_winning_post_with_vanilla(pt, &args.randomness, prover, &vanilla)
                        .map_err(|e| format!("{generate_name}: {e:#}"))?;
                if proofs.len() != 1 {
                    return Err(format!(
                        "{generate_name} returned {} proofs, not one",
                        proofs.len()
                    ));
                }
                proofs.remove(0).1
            }
            Kind::Window => {
                generate_single_window_post_with_vanilla(
                    pt,
                    &args.randomness,
                    prover,
                    &vanilla,
                    args.partition,
                )
                .map_err(|e| format!("{generate_name}: {e:#}"))?
                .0
            }
        };
        let stages = Stages::of_call(t0, Instant::now());

        let t = Instant::now();
        let valid = verify(&proof)?;
        let verified_in = t.elapsed();
        if !valid {
            return Err(format!(
                "run {run}: {verify_name} rejected the proof ({} bytes)",
                proof.len()
            ));
        }
        println!(
            "run {run}: {generate_name} {}; {verify_name} {:.3} s: valid",
            stages.line(),
            verified_in.as_secs_f64()
        );
        last = Some((proof, stages, verified_in));
    }
    let (proof, stages, verified_in) = last.expect("at least one run");
    write_atomically(&out, &proof)?;
    if let Some(peak) = peak_rss() {
        println!("peak RSS {}", gib(peak));
    }
    println!(
        "wrote {} ({} bytes); wall {:.3} s",
        out.display(),
        proof.len(),
        wall.elapsed().as_secs_f64()
    );
    println!(
        "anchor-c2 {command}: proof {} B, {}, verify {:.3} s, valid",
        proof.len(),
        stages.summary(),
        verified_in.as_secs_f64()
    );
    Ok(())
}
