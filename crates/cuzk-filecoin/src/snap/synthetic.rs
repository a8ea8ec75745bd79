//! Synthetic SnapDeals vanilla proofs: for every partition of an
//! empty-sector update of any size, the bincode `PartitionProof` a storage
//! provider's node would send (what Curio packs into `vanilla_proofs`),
//! with the three commitments, made in seconds without a sealed or
//! updated replica. **Test data**: no sector with these commitments
//! exists; the proofs are only consistent, and the SNARKs made from them
//! are real proofs that `verify_empty_sector_update_proof` judges like any
//! other.
//!
//! What has to agree (storage-proofs-update's vanilla verification and its
//! circuit): each partition's challenges are derived from comm_r_new; at
//! each challenged node the openings of tree_r_old, tree_d_new and
//! tree_r_new verify against their roots, comm_r_old = H(comm_c,
//! root_r_old), comm_r_new = H(comm_c, root_r_new), and the leaves encode
//! `new = old + data · rho(phi, high)`, with phi = H(comm_d_new,
//! comm_r_old) and `high` the challenge's top `h` bits; the partition's
//! apex leaves are tree_d_new's nodes at the apex row.
//!
//! The challenges depend on tree_r_new, so its challenged leaves cannot be
//! chosen after them; instead every leaf of all three trees is fixed first,
//! by a rule whose trees are cheap to hash: the sector is cut into
//! [`BLOCKS`] aligned blocks of equal length (a block never straddles two
//! `high` values), and every node of a block holds that block's old value
//! and data value, drawn from the seed; its new value is then
//! `old + data · rho(phi, high)`, which phi (fixed by tree_d_new and
//! tree_r_old) allows. A subtree inside one block is uniform, so each level
//! costs one hash per block below the block's height and one per node
//! above it; every opening is then a real path, and every leaf a
//! challenge can land on is a full-width field element.

use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, TreeRHasher};
use merkletree::hash::Algorithm;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams};

use crate::porep::sdr::field_bytes;
use crate::proof_type::with_sector_shape;
use crate::synthetic::{domain_bytes, opening, tree_arities};
use crate::{Error, UpdateType};

/// log2 of the number of uniform blocks a sector is cut into (fewer for
/// sectors of fewer nodes: then every node is its own block).
pub const BLOCKS_LOG2: u32 = 14;

/// The number of uniform blocks of a sector of the largest sizes.
pub const BLOCKS: usize = 1 << BLOCKS_LOG2;

/// What to make: the vanilla proofs of every partition of an update of
/// `update_type`, every free choice drawn from `seed`. The same request
/// gives the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticUpdate {
    /// The registered update proof type.
    pub update_type: UpdateType,
    /// Seed of the old replica, the new data and comm_c.
    pub seed: u64,
}

/// Synthetic update vanilla proofs and what went into them.
#[derive(Clone, Debug)]
pub struct SyntheticUpdateProofs {
    /// One bincode `PartitionProof` per partition, in order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// comm_r of the sector before the update.
    pub comm_r_old: [u8; 32],
    /// comm_r of the updated replica.
    pub comm_r_new: [u8; 32],
    /// comm_d of the new data.
    pub comm_d_new: [u8; 32],
    /// Challenges over all partitions.
    pub challenges: usize,
    /// Uniform blocks the sector was cut into.
    pub blocks: usize,
    /// Time to make them.
    pub elapsed: Duration,
}

impl SyntheticUpdate {
    /// Builds the vanilla proofs and the commitments.
    pub fn generate(&self) -> Result<SyntheticUpdateProofs, Error> {
        let start = Instant::now();
        let mut out = with_sector_shape!(self.update_type.sector_size(), generate_typed, self)?;
        out.elapsed = start.elapsed();
        Ok(out)
    }

    /// A value drawn from the seed: `what` names it, `index` tells one
    /// block (or other item) from another.
    fn drawn<D: filecoin_hashers::Domain>(&self, what: &[u8], index: u64) -> D {
        let digest = Sha256::new()
            .chain_update(b"cuzk synthetic update")
            .chain_update(self.seed.to_be_bytes())
            .chain_update(what)
            .chain_update(index.to_be_bytes())
            .finalize();
        field_bytes::<D>(digest.into())
    }
}

fn generate_typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    request: &SyntheticUpdate,
) -> Result<SyntheticUpdateProofs, Error> {
    type RDomain = <TreeRHasher as Hasher>::Domain;
    type DDomain = <DefaultPieceHasher as Hasher>::Domain;
    let ut = request.update_type;
    let pp = PublicParams::from_sector_size(ut.sector_size());
    let h = ut.config().h;
    let nodes = pp.sector_nodes;
    let bits = nodes.trailing_zeros();
    let block_log2 = bits.saturating_sub(BLOCKS_LOG2);
    // A block must lie within one `high` value: h ≤ 12 < BLOCKS_LOG2.
    if (h as u32) > bits - block_log2 {
        return Err(Error::Unsupported {
            proof_type: ut.name(),
            why: format!("h = {h} exceeds the synthetic generator's {BLOCKS_LOG2} block bits"),
        });
    }
    let blocks = nodes >> block_log2;

    let old: Vec<RDomain> = (0..blocks)
        .into_par_iter()
        .map(|b| request.drawn(b"old replica", b as u64))
        .collect();
    let data: Vec<DDomain> = (0..blocks)
        .into_par_iter()
        .map(|b| request.drawn(b"data", b as u64))
        .collect();
    let comm_c: RDomain = request.drawn(b"comm_c", 0);

    let tree_d = BlockTree::<DefaultPieceHasher>::new(vec![2; bits as usize], block_log2, data);
    let r_arities = tree_arities::<Tree>(nodes);
    let tree_r_old = BlockTree::<TreeRHasher>::new(r_arities.clone(), block_log2, old.clone());
    let comm_d_new = tree_d.root();
    let comm_r_old = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &tree_r_old.root());

    // The encoding: new = old + data · rho(phi, high), high = the node's top h bits.
    let phi = phi(&comm_d_new, &comm_r_old);
    let high_shift = bits as usize - h;
    let rhos: Vec<Fr> = (0..1u32 << h)
        .into_par_iter()
        .map(|high| rho(&phi, high))
        .collect();
    let new: Vec<RDomain> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let first = b << block_log2;
            let old: Fr = old[b].into();
            let data: Fr = tree_d.leaf_of_block(b).into();
            (old + data * rhos[first >> high_shift]).into()
        })
        .collect();
    let tree_r_new = BlockTree::<TreeRHasher>::new(r_arities, block_log2, new);
    let comm_r_new = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &tree_r_new.root());

    let total_apex = pp.partition_count * pp.apex_leaf_count;
    let apex_row = (bits - total_apex.trailing_zeros()) as usize;
    let mut vanilla_proofs = Vec::with_capacity(pp.partition_count);
    let mut challenges = 0;
    for k in 0..pp.partition_count {
        let apex_leafs = (0..pp.apex_leaf_count)
            .map(|i| tree_d.node(apex_row, k * pp.apex_leaf_count + i))
            .collect();
        let challenge_proofs: Vec<ChallengeProof<Tree>> = Challenges::new(nodes, comm_r_new, k)
            .map(|c| ChallengeProof {
                proof_r_old: tree_r_old.proof(c as usize),
                proof_d_new: tree_d.proof(c as usize),
                proof_r_new: tree_r_new.proof(c as usize),
            })
            .collect();
        challenges += challenge_proofs.len();
        let proof = PartitionProof::<Tree> {
            comm_c,
            apex_leafs,
            challenge_proofs,
        };
        vanilla_proofs.push(
            bincode::serialize(&proof)
                .map_err(|e| Error::filecoin("serializing a vanilla proof", e))?,
        );
    }
    Ok(SyntheticUpdateProofs {
        vanilla_proofs,
        comm_r_old: domain_bytes(&comm_r_old),
        comm_r_new: domain_bytes(&comm_r_new),
        comm_d_new: domain_bytes(&comm_d_new),
        challenges,
        blocks,
        elapsed: Duration::ZERO,
    })
}

/// A Merkle tree whose leaves are constant over aligned blocks of
/// 2^`block_log2` leaves: a node whose subtree lies in one block is stored
/// once per block, a node above the blocks once per node.
struct BlockTree<H: Hasher> {
    /// Children per node at each level, leaves first.
    arities: Vec<usize>,
    block_log2: u32,
    /// Leaves under one node of each level (1 for the leaves), and the root.
    spans: Vec<usize>,
    /// Each level's values: per block while the span fits in a block, else per node.
    levels: Vec<Vec<H::Domain>>,
}

impl<H: Hasher> BlockTree<H> {
    fn new(arities: Vec<usize>, block_log2: u32, block_leaves: Vec<H::Domain>) -> Self {
        let block = 1usize << block_log2;
        let mut spans = vec![1usize];
        for &a in &arities {
            spans.push(spans.last().expect("one span at least") * a);
        }
        let nodes = spans[arities.len()];
        debug_assert_eq!(block_leaves.len() * block, nodes);
        let mut tree = BlockTree {
            arities,
            block_log2,
            spans,
            levels: vec![block_leaves],
        };
        for level in 0..tree.arities.len() {
            let arity = tree.arities[level];
            let span = tree.spans[level + 1];
            let hash = |children: &[H::Domain]| {
                let mut f = H::Function::default();
                f.multi_node(children, level)
            };
            let above: Vec<H::Domain> = if span <= block {
                tree.levels[level]
                    .par_iter()
                    .map(|&v| hash(&vec![v; arity]))
                    .collect()
            } else {
                (0..nodes / span)
                    .into_par_iter()
                    .map(|p| {
                        let children: Vec<H::Domain> = (p * arity..(p + 1) * arity)
                            .map(|i| tree.node(level, i))
                            .collect();
                        hash(&children)
                    })
                    .collect()
            };
            tree.levels.push(above);
        }
        tree
    }

    /// Node `index` of `level` (0 = leaves).
    fn node(&self, level: usize, index: usize) -> H::Domain {
        let span = self.spans[level];
        if span <= 1 << self.block_log2 {
            self.levels[level][(index * span) >> self.block_log2]
        } else {
            self.levels[level][index]
        }
    }

    /// The value of every leaf of block `b`.
    fn leaf_of_block(&self, b: usize) -> H::Domain {
        self.levels[0][b]
    }

    fn root(&self) -> H::Domain {
        self.node(self.arities.len(), 0)
    }

    /// The opening of `leaf`: for each level, the siblings in order without
    /// the node itself, and its position among them.
    fn proof<A, S, T>(&self, leaf: usize) -> MerkleProof<H, A, S, T>
    where
        A: 'static + filecoin_hashers::PoseidonArity,
        S: 'static + filecoin_hashers::PoseidonArity,
        T: 'static + filecoin_hashers::PoseidonArity,
    {
        opening(&self.arities, leaf, |level, i| self.node(level, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SparseTree;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::Domain;
    use generic_array::typenum::{U0, U2, U8};
    use storage_proofs_core::merkle::MerkleProofTrait;

    /// A block tree equals the sparse tree of the same leaves written out one by one.
    #[test]
    fn a_block_tree_is_the_tree_of_its_leaves() {
        let arities = vec![8, 8, 2];
        let block_log2 = 3;
        let blocks: Vec<<PoseidonHasher as Hasher>::Domain> = (0..16u64)
            .map(|b| {
                let mut bytes = [0u8; 32];
                bytes[..8].copy_from_slice(&(b * 7 + 1).to_le_bytes());
                Domain::try_from_bytes(&bytes).unwrap()
            })
            .collect();
        let block = BlockTree::<PoseidonHasher>::new(arities.clone(), block_log2, blocks.clone());
        let full = SparseTree::<PoseidonHasher>::new(
            arities,
            (0..128).map(|leaf| (leaf, blocks[leaf >> block_log2])),
        );
        assert_eq!(block.root(), full.root());
        for leaf in [0, 5, 8, 63, 64, 127] {
            let a: MerkleProof<PoseidonHasher, U8, U2, U0> = block.proof(leaf);
            let b: MerkleProof<PoseidonHasher, U8, U2, U0> = full.proof(leaf);
            assert!(a.verify(), "leaf {leaf}");
            assert_eq!(a.path(), b.path(), "leaf {leaf}");
            assert_eq!(a.leaf(), b.leaf(), "leaf {leaf}");
        }
    }
}
