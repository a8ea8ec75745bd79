//! The C1 check: everything a partition circuit will enforce about a C1's
//! vanilla proofs, checked natively before any synthesis starts, so that a
//! broken C1 costs milliseconds instead of a partition's synthesis and names
//! the partition and challenge where it breaks. Then storage-proofs' own
//! vanilla verification, which must agree.
//!
//! storage-proofs' verification alone is not enough: it checks each label
//! against the labelling proof's own copy of the parents, and the tree_d and
//! tree_r_last openings only by their index, while the circuit reads the
//! parents from the column openings and hashes every path.

use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait, VanillaSealProof};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{generate_replica_id, ColumnProof, StackedDrg, TOTAL_PARENTS};

use crate::porep::prove::{hex_prefix, sector, vanilla_proofs, Sector};
use crate::porep::sdr::create_label;
use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error, SectorIdentity};

/// Checks a parsed C1 output against itself before any proving: every
/// opening, label and replica node its partition circuits will check, then
/// storage-proofs' vanilla verification against its comm_r, comm_d, seed
/// and replica id. With a sector identity, the replica id must also be the
/// one that identity and the C1's ticket and comm_d derive (and Curio's
/// SectorNum must agree). A failure names what is wrong and, inside the
/// vanilla proofs, the partition and challenge.
pub fn check_c1(c1: &C1Input, sector: Option<&SectorIdentity>) -> Result<(), Error> {
    if let (Some(s), Some(num)) = (sector, c1.sector_num()) {
        if s.sector_id != num {
            return Err(Error::OtherSector(format!(
                "Curio's wrapper says sector {num}, the sector to prove is {}",
                s.sector_id
            )));
        }
    }
    with_sector_shape!(c1.proof_type.sector_size(), check_typed, c1, sector)
}

fn check_typed<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    identity: Option<&SectorIdentity>,
) -> Result<(), Error> {
    let s = sector::<Tree>(c1)?;
    let o = &c1.output;
    if let Some(id) = identity {
        let comm_d = DefaultPieceDomain::try_from_bytes(&o.comm_d)
            .map_err(|e| Error::Tampered(format!("comm_d: {e:#}")))?;
        let derived: <Tree::Hasher as Hasher>::Domain = generate_replica_id::<Tree::Hasher, _>(
            &id.prover_id,
            id.sector_id,
            &o.ticket,
            comm_d,
            &s.config.porep_id,
        );
        if derived != s.inputs.replica_id {
            return Err(Error::OtherSector(format!(
                "its replica id is not the one prover {} and sector {} derive with its ticket \
                 and comm_d (another sector's or another miner's C1, or a changed ticket)",
                hex_prefix(&id.prover_id),
                id.sector_id
            )));
        }
    }
    let vanilla = vanilla_proofs::<Tree>(c1)?;
    check_commitments(&s, &vanilla)?;
    check_openings(&s, &vanilla)?;
    let ok = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::verify_all_partitions(
        &s.params.vanilla_params,
        &s.inputs,
        &vanilla,
    )
    .map_err(|e| Error::filecoin("checking the vanilla proofs", e))?;
    if ok {
        Ok(())
    } else {
        Err(Error::Tampered(
            "every opening, label and replica node checks, but storage-proofs' vanilla \
             verification refuses the proofs (changed labelling or encoding proofs?)"
                .into(),
        ))
    }
}

/// The sector-wide facts: comm_r is H(comm_c, comm_r_last) of the proofs,
/// every proof opens the same comm_c, comm_r_last and comm_d, and each
/// partition's proofs open the challenges its seed and replica id select.
fn check_commitments<Tree: 'static + MerkleTreeTrait>(
    s: &Sector<Tree>,
    vanilla: &[Vec<VanillaSealProof<Tree>>],
) -> Result<(), Error> {
    let tau = s.inputs.tau.as_ref().expect("set by sector()");
    let first = &vanilla[0][0];
    let (comm_c, comm_r_last) = (first.comm_c(), first.comm_r_last());
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    if comm_r != tau.comm_r {
        return Err(Error::Tampered(
            "comm_r is not H(comm_c, comm_r_last) of its vanilla proofs (changed comm_r?)".into(),
        ));
    }
    let nodes = s.params.vanilla_params.graph.size();
    for (k, proofs) in vanilla.iter().enumerate() {
        if let Some(i) = proofs
            .iter()
            .position(|p| p.comm_d_proofs.root() != tau.comm_d)
        {
            return Err(Error::Tampered(format!(
                "comm_d is not the data tree root that partition {k}, challenge {i} opens \
                 (changed comm_d?)"
            )));
        }
        if let Some(i) = proofs
            .iter()
            .position(|p| p.comm_c() != comm_c || p.comm_r_last() != comm_r_last)
        {
            return Err(Error::Tampered(format!(
                "partition {k}, challenge {i} opens other tree_c or tree_r_last roots than \
                 partition 0's first challenge"
            )));
        }
        let challenges = s
            .inputs
            .challenges(&s.params.vanilla_params.challenges, nodes, Some(k));
        let answered = challenges.len() == proofs.len()
            && proofs
                .iter()
                .zip(&challenges)
                .all(|(p, &c)| p.comm_d_proofs.proves_challenge(c));
        if !answered {
            return Err(Error::Tampered(format!(
                "partition {k}'s vanilla proofs open other nodes than the {} challenges its seed \
                 and replica id select (changed seed or replica id?)",
                challenges.len()
            )));
        }
    }
    Ok(())
}

/// Per challenge, what the circuit enforces: the data, replica and column
/// openings hash to their roots at the right indices, every challenged
/// label is the labelling function of the parent columns, and the replica
/// node is the last label plus the data.
fn check_openings<Tree: 'static + MerkleTreeTrait>(
    s: &Sector<Tree>,
    vanilla: &[Vec<VanillaSealProof<Tree>>],
) -> Result<(), Error> {
    let graph = &s.params.vanilla_params.graph;
    let layers = s.params.vanilla_params.num_layers;
    let base_degree = graph.base_graph().degree();
    let replica_id = &s.inputs.replica_id;
    let comm_c = vanilla[0][0].comm_c();
    let mut parents = vec![0u32; graph.degree()];
    for (k, proofs) in vanilla.iter().enumerate() {
        for (i, p) in proofs.iter().enumerate() {
            let node = p.comm_d_proofs.path_index();
            let broken = |what: String| {
                Error::Tampered(format!(
                    "partition {k}, challenge {i} (node {node}): {what}"
                ))
            };
            if !p.comm_d_proofs.verify() {
                return Err(broken(
                    "its data-tree (comm_d) opening does not hash to its root".into(),
                ));
            }
            if !p.comm_r_last_proof.validate(node) {
                return Err(broken(
                    "its replica-tree (comm_r_last) opening does not hash to its root at this node"
                        .into(),
                ));
            }
            graph
                .parents(node, &mut parents)
                .map_err(|e| Error::filecoin("computing a challenge's parents", e))?;
            let columns = &p.replica_column_proofs;
            let (drg, exp) = (&columns.drg_parents, &columns.exp_parents);
            if drg.len() != base_degree || drg.len() + exp.len() != parents.len() {
                return Err(broken(format!(
                    "{} base and {} expander parent columns, the graph has {} and {}",
                    drg.len(),
                    exp.len(),
                    base_degree,
                    parents.len() - base_degree
                )));
            }
            if !columns.c_x.verify(node as u32, &comm_c) {
                return Err(broken(
                    "its own column does not hash to its tree_c opening (a changed label or path)"
                        .into(),
                ));
            }
            for (j, (column, &parent)) in drg.iter().chain(exp).zip(&parents).enumerate() {
                if !column.verify(parent, &comm_c) {
                    return Err(broken(format!(
                        "the column of parent {j} (node {parent}) does not hash to its tree_c \
                         opening (a changed label or path)"
                    )));
                }
            }
            let at = |c: &ColumnProof<_>, layer: usize| {
                c.get_node_at_layer(layer)
                    .copied()
                    .map_err(|e| broken(format!("a column lacks layer {layer}: {e:#}")))
            };
            for layer in 1..=layers {
                let mut used = Vec::with_capacity(parents.len());
                for c in drg {
                    used.push(at(c, layer)?);
                }
                if layer > 1 {
                    for c in exp {
                        used.push(at(c, layer - 1)?);
                    }
                }
                let repeated: Vec<_> = used.iter().copied().cycle().take(TOTAL_PARENTS).collect();
                if at(&columns.c_x, layer)? != create_label(replica_id, layer, node, &repeated) {
                    return Err(broken(format!(
                        "its layer-{layer} label is not the labelling function of its parents' \
                         columns"
                    )));
                }
            }
            let key: Fr = at(&columns.c_x, layers)?.into();
            let data: Fr = p.comm_d_proofs.leaf().into();
            let replica: Fr = p.comm_r_last_proof.leaf().into();
            if replica != key + data {
                return Err(broken(
                    "its replica node is not its last label plus its data".into(),
                ));
            }
        }
    }
    Ok(())
}
