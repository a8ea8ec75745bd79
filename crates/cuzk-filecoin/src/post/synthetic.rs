//! Synthetic PoSt vanilla proofs: for each sector a WinningPoSt or a
//! WindowPoSt partition challenges, the bincode `FallbackPoStSectorProof`
//! a storage provider's node would send (what Curio packs into
//! `vanilla_proofs`), for sectors of any size, made in milliseconds without
//! a sealed replica. **Test data**: no sector with these commitments
//! exists; the proofs are only consistent, and the SNARKs made from them
//! are real proofs that `verify_winning_post` / `verify_window_post` judge
//! like any other.
//!
//! A PoSt opens only tree_r_last, at the leaves its challenges name, so
//! everything else about a sector is free:
//!
//! * The challenged leaves come from filecoin-proofs-api's
//!   `generate_fallback_sector_challenges` (randomness, prover id, sector
//!   numbers), exactly the ones a verifier derives.
//! * Each challenged leaf's value (a replica node) is drawn from the seed;
//!   tree_r_last is a sparse tree over them (every other node its level's
//!   default hash), so each opening has a valid path to comm_r_last.
//! * comm_c is drawn from the seed (a PoSt never opens tree_c), and
//!   comm_r = H(comm_c, comm_r_last), as the crates check it.

use std::time::{Duration, Instant};

use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, MerkleTreeTrait};
use filecoin_proofs_api::post::generate_fallback_sector_challenges;
use filecoin_proofs_api::SectorId;
use sha2::{Digest, Sha256};
use storage_proofs_post::fallback::{Proof, SectorProof};

use crate::porep::sdr::field_bytes;
use crate::proof_type::with_sector_shape;
use crate::synthetic::{domain_bytes, tree_arities, SparseTree};
use crate::{Error, PostKind, PostType};

/// What to make: the vanilla proofs of `sectors` (in that order) for a PoSt
/// of `post_type` with `randomness` and `prover_id`, every free choice
/// drawn from `seed`. The same request gives the same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticPost {
    /// The registered PoSt proof type.
    pub post_type: PostType,
    /// The chain randomness (a field element).
    pub randomness: [u8; 32],
    /// The prover id (the miner's id address payload).
    pub prover_id: [u8; 32],
    /// The sector numbers: exactly `post_type.sector_count()` (1) for a
    /// WinningPoSt, 1 to `sector_count()` for a WindowPoSt partition.
    pub sectors: Vec<u64>,
    /// Seed of the leaves and comm_c of every sector.
    pub seed: u64,
}

/// Synthetic vanilla proofs and what went into them.
#[derive(Clone, Debug)]
pub struct SyntheticPostProofs {
    /// One bincode `FallbackPoStSectorProof` per sector, in order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Each sector's comm_r, in order.
    pub comm_rs: Vec<[u8; 32]>,
    /// Challenges over all sectors.
    pub challenges: usize,
    /// Time to make them.
    pub elapsed: Duration,
}

impl SyntheticPost {
    /// Builds the vanilla proofs; refuses a sector count the proof type
    /// does not take, and a sector listed twice.
    pub fn generate(&self) -> Result<SyntheticPostProofs, Error> {
        let pt = self.post_type;
        let n = self.sectors.len();
        let count = pt.sector_count();
        let fits = match pt.kind() {
            PostKind::Winning => n == count,
            PostKind::Window => (1..=count).contains(&n),
        };
        if !fits {
            return Err(Error::BadRequest {
                kind: "synthetic PoSt",
                problem: format!(
                    "{n} sectors for {}: it takes {}",
                    pt.name(),
                    match pt.kind() {
                        PostKind::Winning => format!("exactly {count}"),
                        PostKind::Window => format!("1 to {count} per partition"),
                    }
                ),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = self.sectors.iter().find(|s| !seen.insert(**s)) {
            return Err(Error::BadRequest {
                kind: "synthetic PoSt",
                problem: format!("sector {twice} is listed twice"),
            });
        }
        let start = Instant::now();
        let mut out = with_sector_shape!(pt.sector_size(), generate_typed, self)?;
        out.elapsed = start.elapsed();
        Ok(out)
    }

    /// A value drawn from the seed for `sector`: `what` names it, `index`
    /// tells a leaf from another.
    fn drawn<D: filecoin_hashers::Domain>(&self, sector: u64, what: &[u8], index: u64) -> D {
        let digest = Sha256::new()
            .chain_update(b"cuzk synthetic PoSt")
            .chain_update(self.seed.to_be_bytes())
            .chain_update(sector.to_be_bytes())
            .chain_update(what)
            .chain_update(index.to_be_bytes())
            .finalize();
        field_bytes::<D>(digest.into())
    }
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

fn generate_typed<Tree: 'static + MerkleTreeTrait>(
    request: &SyntheticPost,
) -> Result<SyntheticPostProofs, Error> {
    let pt = request.post_type;
    let ids: Vec<SectorId> = request.sectors.iter().map(|&s| SectorId::from(s)).collect();
    let challenges = generate_fallback_sector_challenges(
        pt.registered(),
        &request.randomness,
        &ids,
        request.prover_id,
    )
    .map_err(|e| Error::filecoin("generate_fallback_sector_challenges", e))?;
    let nodes = (pt.sector_size() / 32) as usize;
    let arities = tree_arities::<Tree>(nodes);
    let mut vanilla_proofs = Vec::with_capacity(ids.len());
    let mut comm_rs = Vec::with_capacity(ids.len());
    let mut total = 0;
    for (&sector, id) in request.sectors.iter().zip(&ids) {
        let leaves = challenges.get(id).ok_or_else(|| {
            Error::filecoin(
                "generate_fallback_sector_challenges",
                "a sector without challenges",
            )
        })?;
        total += leaves.len();
        let tree = SparseTree::<Tree::Hasher>::new(
            arities.clone(),
            leaves
                .iter()
                .map(|&leaf| (leaf as usize, request.drawn(sector, b"leaf", leaf))),
        );
        let comm_c: TreeDomain<Tree> = request.drawn(sector, b"comm_c", 0);
        let comm_r_last = tree.root();
        let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
        let proof = FallbackPoStSectorProof::<Tree> {
            sector_id: *id,
            comm_r,
            vanilla_proof: Proof {
                sectors: vec![SectorProof {
                    inclusion_proofs: leaves.iter().map(|&l| tree.proof(l as usize)).collect(),
                    comm_c,
                    comm_r_last,
                }],
            },
        };
        vanilla_proofs.push(
            bincode::serialize(&proof)
                .map_err(|e| Error::filecoin("serializing a vanilla proof", e))?,
        );
        comm_rs.push(domain_bytes(&comm_r));
    }
    Ok(SyntheticPostProofs {
        vanilla_proofs,
        comm_rs,
        challenges: total,
        elapsed: Duration::ZERO,
    })
}
