//! Synthetic sectors: a commit phase 1 output for a committed-capacity (all
//! zero) sector of any size, made in seconds without sealing it. **Test
//! data**: no sector with this content exists; the C1 is only consistent,
//! which is all a C2 needs, and the proofs made from it are real Groth16
//! proofs that `verify_seal` judges like any other.
//!
//! Why this is possible: a C1 opens only a few thousand nodes of three
//! Merkle trees. Everything else about the sector is free, so it is chosen:
//!
//! * The data is all zero, so tree_d is the zero tree and comm_d the
//!   known zero commitment of the sector size; the replica id is derived
//!   from prover id, sector number, ticket and comm_d as Filecoin derives
//!   it; the interactive challenges from the replica id and the seed, by
//!   storage-proofs-porep's own derivation.
//! * One label map for the whole sector. A challenged node's labels are
//!   computed with the real labelling function, layer after layer and in
//!   node order within a layer (its base parents precede it, its expander
//!   parents are in the layer below, so their labels are known by then). A
//!   node that is opened only as a parent gets labels drawn from the seed.
//!   A node that is both has one set of labels: the computed one.
//! * tree_c (column hashes) and tree_r_last (replica = last label + data)
//!   are sparse: subtrees nobody opens collapse to per-level default
//!   hashes, so every opening has a valid path, and comm_c, comm_r_last
//!   and comm_r = H(comm_c, comm_r_last) come from their roots.
//!
//! Synthetic-PoRep proof types cannot be made this way: their challenges
//! are drawn from comm_r, which depends on the nodes they open.
//!
//! Non-interactive types draw their challenges from comm_r too
//! (`NiChallenges`: SHA-256 of a tag, the replica id and comm_r), so no
//! challenge can be known before the trees are. For them every node is
//! labelled with the real labelling function (node 0, never challenged,
//! gets drawn labels) and both trees are built whole; the challenges are
//! derived from the resulting comm_r, and whichever nodes they select
//! open consistently. That is the labelling of the whole sector: seconds
//! for 2 KiB and 8 MiB, minutes and several GB for 512 MiB; 32 and 64 GiB
//! (11 layers of 2^30 and 2^31 nodes) would be a sealing, and are refused.

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{
    parameters::setup_params, DefaultPieceHasher, MerkleTreeTrait, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB, VanillaSealProof,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof as AnyVanillaProofs};
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof};
use generic_array::typenum::Unsigned;
use merkletree::hash::Algorithm;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    generate_replica_id, Column, ColumnProof, EncodingProof, LabelingProof, PublicInputs,
    ReplicaColumnProof, StackedDrg, Tau, TOTAL_PARENTS,
};

use crate::porep::sdr::{create_label, field_bytes};
use crate::proof_type::with_sector_shape;
use crate::{Error, ProofType, SectorIdentity};

/// What to make: a CC sector of `proof_type` for `identity`, every free
/// choice (ticket, seed, the labels of nodes only opened as parents) drawn
/// from `seed`. The same request gives the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSector {
    /// The registered proof type (interactive, not synthetic PoRep).
    pub proof_type: ProofType,
    /// Prover id and sector number.
    pub identity: SectorIdentity,
    /// Seed of every free choice.
    pub seed: u64,
}

/// A synthetic C1 output and what went into it.
#[derive(Clone, Debug)]
pub struct SyntheticC1 {
    /// The commit phase 1 output, as filecoin-proofs-api defines it.
    pub output: SealCommitPhase1Output,
    /// Challenges over all partitions.
    pub challenges: usize,
    /// Distinct nodes whose labels were computed (challenged nodes).
    pub labelled_nodes: usize,
    /// Distinct nodes opened in tree_c (challenges and their parents).
    pub opened_nodes: usize,
    /// Time to make it.
    pub elapsed: Duration,
}

impl SyntheticSector {
    /// Builds the C1 output. Refuses synthetic-PoRep proof types (see the
    /// module documentation) naming the ones that can be made.
    pub fn generate(&self) -> Result<SyntheticC1, Error> {
        let proof = self.proof_type.registered();
        if self.proof_type.is_non_interactive()
            && self.proof_type.sector_size() > MAX_NON_INTERACTIVE_SIZE
        {
            return Err(Error::Unsupported {
                proof_type: self.proof_type.name(),
                why: format!(
                    "a synthetic non-interactive sector labels every node (its challenges are \
                     drawn from comm_r, which depends on all of them): that is the sealing of \
                     the whole sector at this size. Supported: {}",
                    supported_names().join(", ")
                ),
            });
        }
        if proof.feature_enabled(ApiFeature::SyntheticPoRep) {
            return Err(Error::Unsupported {
                proof_type: self.proof_type.name(),
                why: format!(
                    "synthetic sectors cannot be made for synthetic-PoRep types: their challenges \
                     are drawn from comm_r, which depends on the nodes they open. Supported: {}",
                    supported_names().join(", ")
                ),
            });
        }
        let start = Instant::now();
        let mut c1 = with_sector_shape!(self.proof_type.sector_size(), generate_typed, self)?;
        c1.elapsed = start.elapsed();
        Ok(c1)
    }
}

/// The proof types synthetic sectors are made for: every interactive,
/// non-synthetic PoRep type, and the non-interactive ones up to
/// [`MAX_NON_INTERACTIVE_SIZE`].
pub fn supported_names() -> Vec<String> {
    ProofType::ALL
        .into_iter()
        .filter(|p| {
            !p.feature_enabled(ApiFeature::SyntheticPoRep)
                && (!p.feature_enabled(ApiFeature::NonInteractivePoRep)
                    || u64::from(p.sector_size()) <= MAX_NON_INTERACTIVE_SIZE)
        })
        .map(|p| format!("{p:?}"))
        .collect()
}

/// The largest sector a synthetic non-interactive sector is made for: every
/// node is labelled (see the module documentation).
pub const MAX_NON_INTERACTIVE_SIZE: u64 = filecoin_proofs::SECTOR_SIZE_512_MIB;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PieceDomain = <DefaultPieceHasher as Hasher>::Domain;

fn generate_typed<Tree: 'static + MerkleTreeTrait>(
    request: &SyntheticSector,
) -> Result<SyntheticC1, Error> {
    let config = request.proof_type.config();
    let setup =
        setup_params(&config).map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?;
    let pp = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(&setup)
        .map_err(|e| Error::filecoin("setting up the PoRep parameters", e))?;
    let graph = &pp.graph;
    let nodes = graph.size();
    let layers = pp.num_layers;

    let mut rng = ChaCha20Rng::seed_from_u64(request.seed);
    // Tickets and seeds are field elements on chain: clear the top two bits.
    let mut ticket = [0u8; 32];
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut seed);
    ticket[31] &= 0x3f;
    seed[31] &= 0x3f;
    let mut label_seed = [0u8; 32];
    rng.fill_bytes(&mut label_seed);

    // All-zero data: tree_d has no touched leaf, its root is the zero commitment.
    let tree_d =
        SparseTree::<DefaultPieceHasher>::new(vec![2; nodes.trailing_zeros() as usize], []);
    let comm_d: PieceDomain = tree_d.root();
    let id = &request.identity;
    let replica_id: TreeDomain<Tree> = generate_replica_id::<Tree::Hasher, _>(
        &id.prover_id,
        id.sector_id,
        &ticket,
        comm_d,
        &config.porep_id,
    );

    let mut inputs = PublicInputs::<TreeDomain<Tree>, PieceDomain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let partitions = request.proof_type.partitions();
    let non_interactive = request.proof_type.is_non_interactive();
    // Interactive challenges are known now; non-interactive ones only once
    // comm_r is, so every node but 0 is labelled for them.
    let interactive: Option<Vec<Vec<usize>>> = (!non_interactive).then(|| {
        (0..partitions)
            .map(|k| inputs.challenges(&pp.challenges, nodes, Some(k)))
            .collect()
    });
    let labelled: BTreeSet<usize> = match &interactive {
        Some(challenges) => challenges.iter().flatten().copied().collect(),
        None => (1..nodes).collect(),
    };

    // Parents of every labelled node: the first base-degree are in the
    // same layer, the rest (expander parents) in the layer below.
    let base_degree = graph.base_graph().degree();
    let mut parents: HashMap<usize, Vec<usize>> = HashMap::new();
    for &c in &labelled {
        let mut p = vec![0u32; graph.degree()];
        graph
            .parents(c, &mut p)
            .map_err(|e| Error::filecoin("computing a challenge's parents", e))?;
        parents.insert(c, p.into_iter().map(|x| x as usize).collect());
    }

    let labels = LabelMap::<Tree>::compute(
        &replica_id,
        &labelled,
        &parents,
        base_degree,
        layers,
        label_seed,
    );

    // tree_c: one column hash per opened node; tree_r_last: the replica of
    // every labelled node (its last label plus its data, which is zero).
    let opened: BTreeSet<usize> = if non_interactive {
        (0..nodes).collect()
    } else {
        labelled
            .iter()
            .flat_map(|c| std::iter::once(*c).chain(parents[c].iter().copied()))
            .collect()
    };
    let arities = tree_arities::<Tree>(nodes);
    let columns: HashMap<usize, Vec<TreeDomain<Tree>>> = opened
        .iter()
        .map(|&n| (n, (1..=layers).map(|l| labels.get(n, l)).collect()))
        .collect();
    let column_hash = |n: usize| -> Result<TreeDomain<Tree>, Error> {
        let column = Column::<Tree::Hasher>::new(n as u32, columns[&n].clone())
            .map_err(|e| Error::filecoin("building a column", e))?;
        Ok(column.hash().into())
    };
    let tree_c_leaves = opened
        .iter()
        .map(|&n| Ok((n, column_hash(n)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let tree_c = SparseTree::<Tree::Hasher>::new(arities.clone(), tree_c_leaves);
    let zero_data: Fr = PieceDomain::default().into();
    let replica = |n: usize| -> TreeDomain<Tree> {
        let key: Fr = labels.get(n, layers).into();
        (key + zero_data).into()
    };
    let tree_r =
        SparseTree::<Tree::Hasher>::new(arities, labelled.iter().map(|&n| (n, replica(n))));
    let comm_c = tree_c.root();
    let comm_r_last = tree_r.root();
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let challenges = match interactive {
        Some(challenges) => challenges,
        None => {
            inputs.tau = Some(Tau { comm_d, comm_r });
            (0..partitions)
                .map(|k| inputs.challenges(&pp.challenges, nodes, Some(k)))
                .collect()
        }
    };

    let column_proof = |n: usize| -> Result<ColumnProof<MerkleProof<_, _, _, _>>, Error> {
        let column = Column::<Tree::Hasher>::new(n as u32, columns[&n].clone())
            .map_err(|e| Error::filecoin("building a column", e))?;
        ColumnProof::from_column(column, tree_c.proof(n))
            .map_err(|e| Error::filecoin("building a column proof", e))
    };
    let mut vanilla: Vec<Vec<VanillaSealProof<Tree>>> = Vec::with_capacity(partitions);
    for partition in &challenges {
        let mut proofs = Vec::with_capacity(partition.len());
        for &c in partition {
            let p = &parents[&c];
            let (drg, exp) = p.split_at(base_degree);
            let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> = (1..=layers)
                .map(|layer| {
                    LabelingProof::new(
                        layer as u32,
                        c as u64,
                        labels.parent_labels(p, base_degree, layer),
                    )
                })
                .collect();
            let encoding_proof = EncodingProof::new(
                layers as u32,
                c as u64,
                labels.parent_labels(p, base_degree, layers),
            );
            proofs.push(VanillaSealProof::<Tree> {
                comm_d_proofs: tree_d.proof(c),
                comm_r_last_proof: tree_r.proof(c),
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column_proof(c)?,
                    drg_parents: drg
                        .iter()
                        .map(|&n| column_proof(n))
                        .collect::<Result<_, _>>()?,
                    exp_parents: exp
                        .iter()
                        .map(|&n| column_proof(n))
                        .collect::<Result<_, _>>()?,
                },
                labeling_proofs,
                encoding_proof,
            });
        }
        vanilla.push(proofs);
    }

    let replica_fr: Fr = replica_id.into();
    let output = SealCommitPhase1Output {
        registered_proof: request.proof_type.registered(),
        vanilla_proofs: wrap_proofs::<Tree>(request.proof_type.registered(), vanilla)?,
        comm_r: domain_bytes(&comm_r),
        comm_d: domain_bytes(&comm_d),
        replica_id: replica_fr.into(),
        seed,
        ticket,
    };
    Ok(SyntheticC1 {
        output,
        challenges: challenges.iter().map(Vec::len).sum(),
        labelled_nodes: labelled.len(),
        opened_nodes: opened.len(),
        elapsed: Duration::ZERO,
    })
}

pub(crate) fn domain_bytes<D: Domain>(d: &D) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&d.into_bytes());
    out
}

/// The arity of each level of a sector's tree_c / tree_r_last, leaves
/// first: base levels of `Tree::Arity` over each base tree, then one level
/// of `SubTreeArity` and one of `TopTreeArity` where the shape has them.
pub(crate) fn tree_arities<Tree: MerkleTreeTrait>(nodes: usize) -> Vec<usize> {
    let base = Tree::Arity::to_usize();
    let sub = Tree::SubTreeArity::to_usize();
    let top = Tree::TopTreeArity::to_usize();
    let base_trees = sub.max(1) * top.max(1);
    let base_leaves = nodes / base_trees;
    let base_levels = base_leaves.trailing_zeros() / base.trailing_zeros();
    debug_assert_eq!(base.pow(base_levels) * base_trees, nodes);
    let mut arities = vec![base; base_levels as usize];
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    arities
}

/// Wraps one shape's proofs into filecoin-proofs-api's enum, by sector size:
/// the 2 KiB, 8 MiB and 512 MiB shapes are one Rust type, so the type alone
/// cannot say which variant the proofs belong in.
fn wrap_proofs<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    proofs: Vec<Vec<VanillaSealProof<Tree>>>,
) -> Result<AnyVanillaProofs, Error> {
    fn take<T: 'static>(any: Box<dyn Any>) -> Option<T> {
        any.downcast::<T>().ok().map(|b| *b)
    }
    let any: Box<dyn Any> = Box::new(proofs);
    let size = u64::from(proof.sector_size());
    let wrapped = match size {
        s if s == filecoin_proofs::SECTOR_SIZE_2_KIB => {
            take::<Vec<Vec<VanillaSealProof<SectorShape2KiB>>>>(any)
                .map(AnyVanillaProofs::StackedDrg2KiBV1)
        }
        s if s == filecoin_proofs::SECTOR_SIZE_8_MIB => {
            take::<Vec<Vec<VanillaSealProof<SectorShape8MiB>>>>(any)
                .map(AnyVanillaProofs::StackedDrg8MiBV1)
        }
        s if s == filecoin_proofs::SECTOR_SIZE_512_MIB => {
            take::<Vec<Vec<VanillaSealProof<SectorShape512MiB>>>>(any)
                .map(AnyVanillaProofs::StackedDrg512MiBV1)
        }
        s if s == filecoin_proofs::SECTOR_SIZE_32_GIB => {
            take::<Vec<Vec<VanillaSealProof<SectorShape32GiB>>>>(any)
                .map(AnyVanillaProofs::StackedDrg32GiBV1)
        }
        s if s == filecoin_proofs::SECTOR_SIZE_64_GIB => {
            take::<Vec<Vec<VanillaSealProof<SectorShape64GiB>>>>(any)
                .map(AnyVanillaProofs::StackedDrg64GiBV1)
        }
        _ => None,
    };
    wrapped.ok_or_else(|| Error::Unsupported {
        proof_type: format!("{proof:?}"),
        why: "its tree shape is not the one of its sector size".into(),
    })
}

/// Every opened node's label at every layer (see the module documentation):
/// computed for challenged nodes, drawn from the seed for the others.
struct LabelMap<Tree: MerkleTreeTrait> {
    /// Challenged node → its labels, layer 1 first.
    computed: HashMap<usize, Vec<TreeDomain<Tree>>>,
    label_seed: [u8; 32],
}

impl<Tree: MerkleTreeTrait> LabelMap<Tree> {
    fn compute(
        replica_id: &TreeDomain<Tree>,
        challenged: &BTreeSet<usize>,
        parents: &HashMap<usize, Vec<usize>>,
        base_degree: usize,
        layers: usize,
        label_seed: [u8; 32],
    ) -> Self {
        let mut map = LabelMap {
            computed: challenged
                .iter()
                .map(|&c| (c, Vec::with_capacity(layers)))
                .collect(),
            label_seed,
        };
        for layer in 1..=layers {
            // Node order within a layer: a challenged base parent (always a
            // smaller node) already has this layer's label.
            for &c in challenged {
                let parent_labels = map.parent_labels(&parents[&c], base_degree, layer);
                let label = create_label(replica_id, layer, c, &parent_labels);
                map.computed
                    .get_mut(&c)
                    .expect("inserted above")
                    .push(label);
            }
        }
        map
    }

    /// The label of `node` at `layer` (1-based).
    fn get(&self, node: usize, layer: usize) -> TreeDomain<Tree> {
        match self.computed.get(&node) {
            Some(labels) => labels[layer - 1],
            None => self.drawn(node, layer),
        }
    }

    /// A label nobody computes: a hash of the seed, the layer and the node,
    /// reduced to a field element as real labels are.
    fn drawn(&self, node: usize, layer: usize) -> TreeDomain<Tree> {
        let digest = Sha256::new()
            .chain_update(b"cuzk synthetic sector label")
            .chain_update(self.label_seed)
            .chain_update((layer as u32).to_be_bytes())
            .chain_update((node as u64).to_be_bytes())
            .finalize();
        field_bytes::<TreeDomain<Tree>>(digest.into())
    }

    /// The labelling function's parent list: the base parents' labels at
    /// `layer`, then (above layer 1) the expander parents' at `layer - 1`,
    /// repeated to [`TOTAL_PARENTS`] entries, as the vanilla proofs carry it.
    fn parent_labels(
        &self,
        parents: &[usize],
        base_degree: usize,
        layer: usize,
    ) -> Vec<TreeDomain<Tree>> {
        let base = parents[..base_degree].iter().map(|&p| self.get(p, layer));
        let used: Vec<TreeDomain<Tree>> = if layer == 1 {
            base.collect()
        } else {
            base.chain(
                parents[base_degree..]
                    .iter()
                    .map(|&p| self.get(p, layer - 1)),
            )
            .collect()
        };
        used.iter().copied().cycle().take(TOTAL_PARENTS).collect()
    }
}

/// A Merkle tree of which only a few leaves are known: every node nobody
/// set holds its level's default (the tree of default leaves), so a path
/// exists for every leaf and costs one hash per level per touched node.
pub(crate) struct SparseTree<H: Hasher> {
    /// Children per node at each level, leaves first.
    arities: Vec<usize>,
    /// The value of an untouched node at each level (0 = leaves), and the root.
    defaults: Vec<H::Domain>,
    /// The touched nodes of each level, leaves first, then the root.
    levels: Vec<HashMap<usize, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    pub(crate) fn new(
        arities: Vec<usize>,
        leaves: impl IntoIterator<Item = (usize, H::Domain)>,
    ) -> Self {
        let hash = |children: &[H::Domain], level: usize| {
            let mut f = H::Function::default();
            f.multi_node(children, level)
        };
        let mut defaults = vec![H::Domain::default()];
        for (level, &arity) in arities.iter().enumerate() {
            let below = defaults[level];
            defaults.push(hash(&vec![below; arity], level));
        }
        let mut levels = vec![leaves.into_iter().collect::<HashMap<_, _>>()];
        for (level, &arity) in arities.iter().enumerate() {
            let parents: BTreeSet<usize> = levels[level].keys().map(|i| i / arity).collect();
            let above = parents
                .into_iter()
                .map(|p| {
                    let children: Vec<H::Domain> = (p * arity..(p + 1) * arity)
                        .map(|i| *levels[level].get(&i).unwrap_or(&defaults[level]))
                        .collect();
                    (p, hash(&children, level))
                })
                .collect();
            levels.push(above);
        }
        SparseTree {
            arities,
            defaults,
            levels,
        }
    }

    fn node(&self, level: usize, index: usize) -> H::Domain {
        *self.levels[level]
            .get(&index)
            .unwrap_or(&self.defaults[level])
    }

    pub(crate) fn root(&self) -> H::Domain {
        self.node(self.arities.len(), 0)
    }

    /// The opening of `leaf`: for each level, the siblings in order without
    /// the node itself, and its position among them.
    pub(crate) fn proof<A, S, T>(&self, leaf: usize) -> MerkleProof<H, A, S, T>
    where
        A: 'static + filecoin_hashers::PoseidonArity,
        S: 'static + filecoin_hashers::PoseidonArity,
        T: 'static + filecoin_hashers::PoseidonArity,
    {
        opening(&self.arities, leaf, |level, i| self.node(level, i))
    }
}

/// The opening of `leaf` in a tree of `arities` (leaves first) whose node
/// at (level, index) is `node`: for each level, the siblings in order
/// without the node itself, and its position among them; the root is the
/// single node above the last level.
pub(crate) fn opening<H, A, S, T>(
    arities: &[usize],
    leaf: usize,
    node: impl Fn(usize, usize) -> H::Domain,
) -> MerkleProof<H, A, S, T>
where
    H: Hasher,
    A: 'static + filecoin_hashers::PoseidonArity,
    S: 'static + filecoin_hashers::PoseidonArity,
    T: 'static + filecoin_hashers::PoseidonArity,
{
    let mut index = leaf;
    let mut path = Vec::with_capacity(arities.len());
    for (level, &arity) in arities.iter().enumerate() {
        let group = index / arity * arity;
        let siblings = (group..group + arity)
            .filter(|&i| i != index)
            .map(|i| node(level, i))
            .collect();
        path.push((siblings, index - group));
        index /= arity;
    }
    MerkleProof::from_parts(node(0, leaf), node(arities.len(), 0), path)
}
