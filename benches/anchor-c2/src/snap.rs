//! `anchor-c2 snap-prove`: a SnapDeals (empty sector update) proof through filecoin-proofs-api's
//! `generate_empty_sector_update_proof_with_vanilla` on supraseal-c2, from the per-partition
//! vanilla proofs `cuzk snap-prove` reads (bincode `PartitionProof`s, one file per partition, a
//! directory standing for its `vanilla-<k>.bin` in order: 16 at 32 GiB) and the three
//! commitments, then checked with `verify_empty_sector_update_proof`.
//!
//! The commitments are `--comm-r-old`, `--comm-r-new` and `--comm-d-new` in hex, as cuzk takes
//! them; where one is not given, it is read from `commitments.txt` in the `--vanilla` directory
//! (lines `comm_r_old <hex>`, …, as `cuzk fixtures synth-snap` writes them).
//!
//! storage-proofs-core proves the partitions in batches of at most 10 circuits (all of a batch
//! synthesized at once by bellperson before supraseal-c2 proves them), so at 32 GiB there are two
//! batches, 10 and 6; the stage times are summed over them.

use std::path::PathBuf;
use std::time::Instant;

use filecoin_proofs::types::{PartitionProof, SectorUpdateConfig};
use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::parameter_cache::{
    parameter_cache_params_path, parameter_cache_verifying_key_path, CacheableParameters,
};
use storage_proofs_update::circuit::EmptySectorUpdateCircuit;
use storage_proofs_update::{EmptySectorUpdateCompound, PublicParams};
use filecoin_proofs_api::update::{
    generate_empty_sector_update_proof_with_vanilla, verify_empty_sector_update_proof,
};
use filecoin_proofs_api::{PartitionProofBytes, RegisteredUpdateProof};

use crate::{
    check_key_files, gib, parse_hex32, peak_rss, read_vanilla, report_verify, write_atomically,
    Common, Mode, Stages,
};

const HELP: &str = "anchor-c2 snap-prove: a SnapDeals (empty sector update) proof with \
filecoin-proofs-api's generate_empty_sector_update_proof_with_vanilla (supraseal-c2), verified \
with verify_empty_sector_update_proof.

usage: anchor-c2 snap-prove (--sector-size SIZE | --update-type NAME) --vanilla DIR|FILE
         [--vanilla FILE ...] [--comm-r-old HEX --comm-r-new HEX --comm-d-new HEX]
         (--out PROOF | --verify PROOF) [--params-dir DIR] [--runs N] [--verbose]

  --sector-size SIZE  2KiB, 8MiB, 512MiB, 32GiB or 64GiB: the update proof type of that size
  --update-type NAME  or the type by name: StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}V1
  --vanilla PATH      the partitions' vanilla proofs (bincode PartitionProofs, as
                      generate_partition_proofs returns them), one file per partition, in order
                      (16 at 32 GiB); a directory stands for its vanilla-0.bin, vanilla-1.bin, ...
                      in order (what `cuzk fixtures synth-snap` writes). As `cuzk snap-prove
                      --vanilla`.
  --comm-r-old HEX    comm_r of the sector key, 32 bytes in hex
  --comm-r-new HEX    comm_r of the updated replica, 32 bytes in hex
  --comm-d-new HEX    comm_d of the new data, 32 bytes in hex
                      (each one not given is read from commitments.txt in the --vanilla directory)
  --out PROOF         where the proof (192 bytes per partition) goes, once it has verified
  --verify PROOF      instead of proving: only verify PROOF (e.g. cuzk's) against these inputs
                      (needs only the .vk)
  --params-dir DIR    parameter cache (default FIL_PROOFS_PARAMETER_CACHE, else
                      /var/tmp/filecoin-proof-parameters): the .params and the .vk
  --runs N            prove N times (the key stays in memory after the first)
  --verbose           echo the crates' log records, timestamped";

const UPDATE_TYPES: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

/// `2KiB`, `8MiB`, `32GiB` (or a plain byte count) in bytes.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    for (suffix, unit) in [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)] {
        if let Some(n) = t.strip_suffix(suffix) {
            return n.trim().parse::<u64>().ok()?.checked_mul(unit);
        }
    }
    t.parse().ok()
}

pub struct SnapArgs {
    update_type: RegisteredUpdateProof,
    vanilla: Vec<PathBuf>,
    comm_r_old: Option<[u8; 32]>,
    comm_r_new: Option<[u8; 32]>,
    comm_d_new: Option<[u8; 32]>,
    pub common: Common,
}

impl SnapArgs {
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let usage = HELP.split("\n\n").nth(1).unwrap_or(HELP);
        let mut it = args.iter();
        let mut update_type = None;
        let (mut comm_r_old, mut comm_r_new, mut comm_d_new) = (None, None, None);
        let mut vanilla = Vec::new();
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
                "--sector-size" => {
                    let text = value()?;
                    let size = parse_size(&text).ok_or_else(|| {
                        format!("--sector-size {text:?} is not a size like 32GiB")
                    })?;
                    update_type = Some(
                        UPDATE_TYPES
                            .into_iter()
                            .find(|u| u64::from(u.sector_size()) == size)
                            .ok_or_else(|| {
                                format!("--sector-size {text}: no update proof type has this size")
                            })?,
                    );
                }
                "--update-type" => {
                    let name = value()?;
                    update_type = Some(
                        UPDATE_TYPES
                            .into_iter()
                            .find(|u| format!("{u:?}") == name)
                            .ok_or_else(|| {
                                format!("--update-type {name}: not a registered update proof type")
                            })?,
                    );
                }
                "--vanilla" => vanilla.push(PathBuf::from(value()?)),
                "--comm-r-old" => comm_r_old = Some(parse_hex32(&value()?, "--comm-r-old")?),
                "--comm-r-new" => comm_r_new = Some(parse_hex32(&value()?, "--comm-r-new")?),
                "--comm-d-new" => comm_d_new = Some(parse_hex32(&value()?, "--comm-d-new")?),
                "-h" | "--help" => crate::help_exit(HELP),
                other => return Err(format!("unknown argument {other}\n{usage}")),
            }
        }
        let need = |what: &str| format!("{what} is needed\n{usage}");
        if vanilla.is_empty() {
            return Err(need("--vanilla"));
        }
        common.check_mode(usage)?;
        Ok(SnapArgs {
            update_type: update_type.ok_or_else(|| need("--sector-size or --update-type"))?,
            vanilla,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            common,
        })
    }
}

/// Commitment `name` from `dir/commitments.txt` (a line `name <64 hex digits>`).
fn commitment_from_file(dirs: &[PathBuf], name: &str) -> Result<[u8; 32], String> {
    let flag = format!("--{}", name.replace('_', "-"));
    let dir = dirs.iter().find(|p| p.is_dir()).ok_or_else(|| {
        format!("{flag} is needed (no --vanilla directory to read commitments.txt from)")
    })?;
    let file = dir.join("commitments.txt");
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("{flag} not given, and {}: {e}", file.display()))?;
    let value = text
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(name)).then(|| words.next().unwrap_or(""))
        })
        .ok_or_else(|| {
            format!(
                "{flag} not given, and {} has no {name} line",
                file.display()
            )
        })?;
    parse_hex32(value, &format!("{} {name}", file.display()))
}

/// Decodes every vanilla proof as a `PartitionProof` of `Tree` (the crates decode them again;
/// this rejects a wrong file before the key is read).
fn check_partitions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    files: &[(PathBuf, Vec<u8>)],
) -> Result<(), String> {
    for (path, bytes) in files {
        bincode::deserialize::<PartitionProof<Tree>>(bytes)
            .map_err(|e| format!("{}: not a bincode PartitionProof: {e}", path.display()))?;
    }
    Ok(())
}

/// The parameter set identifier of the update circuit, as filecoin-proofs' update prover and
/// verifier name its key files (`RegisteredUpdateProof::cache_params_path` would name the
/// PoRep key of the same sector size).
fn update_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    ut: RegisteredUpdateProof,
) -> String {
    let params = PublicParams::from_sector_size(u64::from(ut.sector_size()));
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(&params)
}

pub fn run(args: SnapArgs) -> Result<(), String> {
    let mode = args.common.prepare()?;
    let wall = Instant::now();
    let ut = args.update_type;

    let t = Instant::now();
    let files = read_vanilla(&args.vanilla)?;
    let comm = |given: Option<[u8; 32]>, name: &str| match given {
        Some(c) => Ok(c),
        None => commitment_from_file(&args.vanilla, name),
    };
    let comm_r_old = comm(args.comm_r_old, "comm_r_old")?;
    let comm_r_new = comm(args.comm_r_new, "comm_r_new")?;
    let comm_d_new = comm(args.comm_d_new, "comm_d_new")?;
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    let partitions =
        usize::from(SectorUpdateConfig::from_porep_config(&ut.as_v1_config()).update_partitions);
    if files.len() != partitions {
        return Err(format!(
            "{} vanilla proofs for {ut:?}: it has {partitions} partitions, one vanilla proof each",
            files.len()
        ));
    }
    with_shape!(u64::from(ut.sector_size()), check_partitions, &files)?;
    let vanilla: Vec<PartitionProofBytes> = files
        .into_iter()
        .map(|(_, b)| PartitionProofBytes(b))
        .collect();
    let parse = t.elapsed();

    println!(
        "anchor-c2 snap-prove: update {ut:?}, {partitions} partition(s), {bytes} bytes of vanilla proofs, parse {:.3} s",
        parse.as_secs_f64()
    );

    let id = with_shape!(u64::from(ut.sector_size()), update_identifier, ut);
    let params = match mode {
        Mode::Prove(_) => Some(parameter_cache_params_path(&id)),
        Mode::Verify(..) => None,
    };
    check_key_files(params, parameter_cache_verifying_key_path(&id), "update")?;

    const VERIFIER: &str = "verify_empty_sector_update_proof";
    let verify = |proof: &[u8]| {
        verify_empty_sector_update_proof(ut, proof, comm_r_old, comm_r_new, comm_d_new)
            .map_err(|e| format!("{VERIFIER}: {e:#}"))
    };
    let out = match mode {
        Mode::Prove(out) => out,
        Mode::Verify(path, proof) => {
            let t = Instant::now();
            let valid = verify(&proof)?;
            return report_verify("snap-prove", VERIFIER, &path, &proof, t, valid);
        }
    };
    let mut last = None;
    for run in 1..=args.common.runs {
        let t0 = Instant::now();
        let proof = generate_empty_sector_update_proof_with_vanilla(
            ut,
            vanilla.clone(),
            comm_r_old,
            comm_r_new,
            comm_d_new,
        )
        .map_err(|e| format!("generate_empty_sector_update_proof_with_vanilla: {e:#}"))?
        .0;
        let stages = Stages::of_call(t0, Instant::now());

        let t = Instant::now();
        let valid = verify(&proof)?;
        let verified_in = t.elapsed();
        if !valid {
            return Err(format!(
                "run {run}: verify_empty_sector_update_proof rejected the proof ({} bytes)",
                proof.len()
            ));
        }
        println!(
            "run {run}: generate_empty_sector_update_proof_with_vanilla {}; verify_empty_sector_update_proof {:.3} s: valid",
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
        "anchor-c2 snap-prove: proof {} B ({partitions} partitions), {}, verify {:.3} s, valid",
        proof.len(),
        stages.summary(),
        verified_in.as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32GiB"), Some(32 << 30));
        assert_eq!(parse_size("2KiB"), Some(2048));
        assert_eq!(parse_size("2048"), Some(2048));
        assert_eq!(parse_size("big"), None);
    }

    #[test]
    fn commitments_file() {
        let dir = std::env::temp_dir().join(format!("anchor-c2-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hex = |b: u8| format!("{b:02x}").repeat(32);
        std::fs::write(
            dir.join("commitments.txt"),
            format!(
                "comm_r_old {}\ncomm_r_new {}\ncomm_d_new {}\n",
                hex(1),
                hex(2),
                hex(3)
            ),
        )
        .unwrap();
        let dirs = [dir.clone()];
        assert_eq!(commitment_from_file(&dirs, "comm_r_new").unwrap(), [2; 32]);
        assert_eq!(commitment_from_file(&dirs, "comm_d_new").unwrap(), [3; 32]);
        assert!(commitment_from_file(&dirs, "comm_x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
