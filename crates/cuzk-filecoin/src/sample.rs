//! Sealing a sector of random data through filecoin-proofs (add piece,
//! pre-commit phases 1 and 2, the synthetic proofs for synthetic PoRep types,
//! commit phase 1), to get a real C1 output for
//! tests, demos and benchmarks without a storage provider's pipeline; and,
//! from the sealed replica and its cache, the PoSt vanilla proofs a
//! storage provider's node would send (filecoin-proofs-api's challenges and
//! `generate_single_vanilla_proof`); and a SnapDeals update of a sealed
//! CC sector (`empty_sector_update_encode_into`) with its per-partition
//! vanilla proofs (`generate_partition_proofs`).
//!
//! filecoin-proofs reads its settings once per process: set
//! `FIL_PROOFS_PARENT_CACHE` (where pre-commit phase 1 keeps the graph's
//! parent cache; default `/var/tmp/filecoin-parents`) before the first call
//! if the default is not wanted. No parameter file is needed to seal.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use filecoin_proofs::{PaddedBytesAmount, UnpaddedBytesAmount};
use filecoin_proofs_api::post::{
    generate_fallback_sector_challenges, generate_single_vanilla_proof,
};
use filecoin_proofs_api::seal::{
    add_piece, generate_synth_proofs, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, SealCommitPhase1Output,
};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{ApiFeature, PieceInfo, PrivateReplicaInfo, SectorId};
use rand_core::RngCore;

use crate::{Error, PostType, ProofType, SectorIdentity, UpdateType};

/// The largest sector this is meant for (sealing is done in `work`, on disk).
pub const MAX_SAMPLE_SECTOR: u64 = 512 << 20;

/// Seals one sector of `proof_type` filled with random data from `rng` as
/// sector `identity`, in the directory `work` (staged, sealed and cache
/// files), with a random ticket and seed, and returns the C1 output.
pub fn seal_random_sector(
    proof_type: ProofType,
    work: &Path,
    identity: &SectorIdentity,
    rng: &mut dyn RngCore,
) -> Result<SealCommitPhase1Output, Error> {
    Ok(seal_sample_sector(proof_type, work, identity, rng)?.c1)
}

/// A sector sealed by [`seal_sample_sector`]: its C1 output, and the
/// replica and cache a PoSt's vanilla proofs are read from (both kept:
/// nothing clears the cache).
#[derive(Clone, Debug)]
pub struct SampleSector {
    /// The commit phase 1 output.
    pub c1: SealCommitPhase1Output,
    /// The sealed replica file.
    pub sealed: PathBuf,
    /// The cache directory (trees, p_aux, t_aux).
    pub cache: PathBuf,
}

impl SampleSector {
    /// The replica as filecoin-proofs-api's PoSt functions name it.
    pub fn replica_info(&self, post_type: PostType) -> PrivateReplicaInfo {
        PrivateReplicaInfo::new(
            post_type.registered(),
            self.c1.comm_r,
            self.cache.clone(),
            self.sealed.clone(),
        )
    }
}

/// [`seal_random_sector`], keeping the replica and cache paths.
pub fn seal_sample_sector(
    proof_type: ProofType,
    work: &Path,
    identity: &SectorIdentity,
    rng: &mut dyn RngCore,
) -> Result<SampleSector, Error> {
    seal_sector(proof_type, work, identity, rng, false)
}

/// A committed-capacity sector (all zeros) sealed as [`seal_sample_sector`]
/// seals one: what a SnapDeals update fills with data.
pub fn seal_cc_sector(
    proof_type: ProofType,
    work: &Path,
    identity: &SectorIdentity,
    rng: &mut dyn RngCore,
) -> Result<SampleSector, Error> {
    seal_sector(proof_type, work, identity, rng, true)
}

fn seal_sector(
    proof_type: ProofType,
    work: &Path,
    identity: &SectorIdentity,
    rng: &mut dyn RngCore,
    zeros: bool,
) -> Result<SampleSector, Error> {
    if proof_type.sector_size() > MAX_SAMPLE_SECTOR {
        return Err(Error::Unsupported {
            proof_type: proof_type.name(),
            why: "sample sectors are sealed for sizes up to 512MiB only".into(),
        });
    }
    let proof = proof_type.registered();
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(proof_type.sector_size()));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    if !zeros {
        rng.fill_bytes(&mut data);
    }
    let staged = work.join("staged");
    let sealed = work.join("sealed");
    let cache = work.join("cache");
    let io = |context, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io {
            context,
            path,
            source,
        }
    };
    std::fs::create_dir_all(&cache).map_err(io("creating", &cache))?;
    File::create(&sealed).map_err(io("creating", &sealed))?;
    let staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(io("creating", &staged))?;
    let (piece, _) = add_piece(proof, &data[..], staged_file, unpadded, &[])
        .map_err(|e| Error::filecoin("add_piece", e))?;
    let pieces = [piece];
    // Tickets and seeds are field elements on chain: clear the top two bits.
    let mut ticket = [0u8; 32];
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut seed);
    ticket[31] &= 0x3f;
    seed[31] &= 0x3f;
    let sector = SectorId::from(identity.sector_id);
    let pc1 = seal_pre_commit_phase1(
        proof,
        &cache,
        &staged,
        &sealed,
        identity.prover_id,
        sector,
        ticket,
        &pieces,
    )
    .map_err(|e| Error::filecoin("seal_pre_commit_phase1", e))?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &sealed)
        .map_err(|e| Error::filecoin("seal_pre_commit_phase2", e))?;
    if proof.feature_enabled(ApiFeature::SyntheticPoRep) {
        // Synthetic PoRep proves its challenges ahead of the seed, from the layers.
        generate_synth_proofs(
            &cache,
            &sealed,
            identity.prover_id,
            sector,
            ticket,
            pc2.clone(),
            &pieces,
        )
        .map_err(|e| Error::filecoin("generate_synth_proofs", e))?;
    }
    let c1 = seal_commit_phase1(
        &cache,
        &sealed,
        identity.prover_id,
        sector,
        ticket,
        seed,
        pc2,
        &pieces,
    )
    .map_err(|e| Error::filecoin("seal_commit_phase1", e))?;
    Ok(SampleSector { c1, sealed, cache })
}

/// The bincode `FallbackPoStSectorProof`s a node sends for a PoSt of
/// `post_type` over `sectors` (sector number and its sealed replica), in
/// that order: the challenges of every sector from
/// `generate_fallback_sector_challenges`, then each sector's
/// `generate_single_vanilla_proof`. For a WindowPoSt the challenges of
/// V1_2 do not depend on the partition, so any run of consecutive sectors
/// of the list is one partition's proofs.
///
/// A replica may stand for several sector numbers: a PoSt binds a sector
/// number to its comm_r only through the challenges.
pub fn post_vanilla_proofs(
    post_type: PostType,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    sectors: &[(u64, &SampleSector)],
) -> Result<Vec<Vec<u8>>, Error> {
    let ids: Vec<SectorId> = sectors.iter().map(|(id, _)| SectorId::from(*id)).collect();
    let challenges =
        generate_fallback_sector_challenges(post_type.registered(), randomness, &ids, prover_id)
            .map_err(|e| Error::filecoin("generate_fallback_sector_challenges", e))?;
    sectors
        .iter()
        .map(|(id, sector)| {
            let id = SectorId::from(*id);
            let of_sector = challenges.get(&id).ok_or_else(|| {
                Error::filecoin(
                    "generate_fallback_sector_challenges",
                    "a sector without challenges",
                )
            })?;
            generate_single_vanilla_proof(
                post_type.registered(),
                id,
                &sector.replica_info(post_type),
                of_sector,
            )
            .map_err(|e| Error::filecoin("generate_single_vanilla_proof", e))
        })
        .collect()
}

/// A SnapDeals update made by [`update_sample_sector`]: the commitments
/// and the per-partition vanilla proofs (bincode `PartitionProof`s, as
/// Curio sends them).
#[derive(Clone, Debug)]
pub struct SampleUpdate {
    /// comm_r of the sector key (the CC sector before the update).
    pub comm_r_old: [u8; 32],
    /// comm_r of the updated replica.
    pub comm_r_new: [u8; 32],
    /// comm_d of the new data.
    pub comm_d_new: [u8; 32],
    /// One vanilla proof per partition, in order.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// Updates the sealed CC sector `sector` with new data through
/// filecoin-proofs-api, in `work`: one piece of random data from `rng`
/// filling the first half of the sector and a zero piece the rest (how a
/// deal smaller than the sector is padded), encoded into a new replica by
/// `empty_sector_update_encode_into`; then the partitions' vanilla proofs
/// by `generate_partition_proofs`.
pub fn update_sample_sector(
    sector: &SampleSector,
    work: &Path,
    rng: &mut dyn RngCore,
) -> Result<SampleUpdate, Error> {
    let seal = ProofType::new(sector.c1.registered_proof)?;
    let update = UpdateType::for_seal(seal);
    let io = |context, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io {
            context,
            path,
            source,
        }
    };
    let cache = work.join("update-cache");
    let replica = work.join("update-sealed");
    let staged = work.join("update-staged");
    std::fs::create_dir_all(&cache).map_err(io("creating", &cache))?;
    // encode_into maps the new replica: it must have the sector key's size.
    File::create(&replica)
        .and_then(|f| f.set_len(seal.sector_size()))
        .map_err(io("creating", &replica))?;
    let mut staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(io("creating", &staged))?;
    let half = UnpaddedBytesAmount::from(PaddedBytesAmount(seal.sector_size() / 2));
    let mut data = vec![0u8; u64::from(half) as usize];
    rng.fill_bytes(&mut data);
    let zeros = vec![0u8; data.len()];
    let mut pieces: Vec<PieceInfo> = Vec::new();
    for bytes in [&data, &zeros] {
        let (piece, _) = add_piece(
            seal.registered(),
            &bytes[..],
            &mut staged_file,
            half,
            &pieces.iter().map(|p| p.size).collect::<Vec<_>>(),
        )
        .map_err(|e| Error::filecoin("add_piece", e))?;
        pieces.push(piece);
    }
    drop(staged_file);
    let encoded = empty_sector_update_encode_into(
        update.registered(),
        &replica,
        &cache,
        &sector.sealed,
        &sector.cache,
        &staged,
        &pieces,
    )
    .map_err(|e| Error::filecoin("empty_sector_update_encode_into", e))?;
    let vanilla = generate_partition_proofs(
        update.registered(),
        sector.c1.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector.sealed,
        &sector.cache,
        &replica,
        &cache,
    )
    .map_err(|e| Error::filecoin("generate_partition_proofs", e))?;
    Ok(SampleUpdate {
        comm_r_old: sector.c1.comm_r,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
    })
}
