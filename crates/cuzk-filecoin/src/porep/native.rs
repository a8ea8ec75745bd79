//! A PoRep partition's witness, generated natively.
//!
//! `StackedCircuit::synthesize` (storage-proofs-porep 19.1) spends almost
//! all of its time in SHA-256 gadgets: the labelling of every layer of the
//! challenged column (20 compressions per layer) and the comm_d inclusion
//! path (two per level of the binary tree). Run witness-only, those gadgets
//! still build a linear combination for every bit they touch. Here the same
//! witness is produced by replaying the circuit's allocations, challenge by
//! challenge, with the SHA-256 parts computed by `cuzk_synth::native` (plain
//! integer code pushing each value the gadget would allocate, in its order)
//! and the Poseidon parts (column hashes, tree C and tree R paths) by
//! [`crate::poseidon`]; the preamble and a few small gadgets (the
//! challenge's `UInt64`, `encode`) still run the crates' public gadgets.
//! Every value goes straight into a compact witness
//! (`cuzk_synth::precompiled::CompactAssignment`: a 2-bit class per value,
//! the 1.3% that are neither 0 nor 1 in full), SHA-256's bits 32 at a time:
//! a 32 GiB partition's 130 M values never take 32 bytes each unless a
//! consumer expands them.
//!
//! The replay follows `StackedCircuit::synthesize` and `Proof::synthesize`
//! step for step (their private helpers, `enforce_inclusion`,
//! `Column::alloc`, `hash_single_column`, `create_label_circuit`, are
//! rewritten here from what they allocate). Nothing here is trusted on its
//! own: `tests/porep_synthesis.rs` compares the native witness with the
//! gadgets' (`witness_challenges`) value for value, and a witness whose
//! length does not fit the recording is refused by the pre-compiled path.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_synth::native::bits::{alloc_le_bits, from_boolean, pack_le, reverse_bit_numbering};
use cuzk_synth::native::sha256::{sha256, Bit, Word};
use cuzk_synth::precompiled::{AuxSink, CompactAssignment, CompactWitness, Witness};
use cuzk_synth::{synthesize_with_shared_prefix, PieceError, PieceFault, Prefix, PrefixJoin};
use ff::Field;
use filecoin_hashers::{HashFunction, Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::{MerkleTreeTrait, VanillaSealProof};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::{constraint, encode::encode};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_porep::stacked::TOTAL_PARENTS;

use crate::poseidon::{hash, inclusion_path, packed_inputs};
use crate::Error;

/// A Merkle path as `MerkleProofTrait::as_options` gives it: per level, the
/// siblings and the position among them.
type Path = Vec<(Vec<Option<Fr>>, Option<usize>)>;

/// What the partition's challenges share: the values of the preamble.
#[derive(Clone, Debug)]
pub(crate) struct Commitments {
    replica_id: Fr,
    comm_d: Fr,
    comm_r: Fr,
    comm_r_last: Fr,
    comm_c: Fr,
}

/// One parent column of a challenge: its rows (layer 1 first) and its
/// opening in tree C.
#[derive(Clone, Debug)]
struct ParentColumn {
    rows: Vec<Fr>,
    path: Path,
}

/// One challenge's private inputs, read out of its vanilla proof.
#[derive(Clone, Debug)]
pub(crate) struct Challenge {
    node: u64,
    data_leaf: Fr,
    comm_d_path: Path,
    drg_parents: Vec<ParentColumn>,
    exp_parents: Vec<ParentColumn>,
    comm_r_last_path: Path,
    comm_c_path: Path,
    layers: usize,
}

/// A partition, ready for [`witness`].
pub(crate) struct NativePartition<Tree: 'static + MerkleTreeTrait> {
    commitments: Commitments,
    challenges: Vec<Challenge>,
    _tree: std::marker::PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> Clone for NativePartition<Tree> {
    fn clone(&self) -> Self {
        Self {
            commitments: self.commitments.clone(),
            challenges: self.challenges.clone(),
            _tree: std::marker::PhantomData,
        }
    }
}

fn read_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Tampered(format!("vanilla proof: {what}: {e}"))
}

/// A field the crates keep `pub(crate)`, read through the type's serde
/// form (the form the C1 file carries).
fn serde_field<T: serde::Serialize, F: serde::de::DeserializeOwned>(
    value: &T,
    field: &str,
) -> Result<F, Error> {
    let mut v = serde_json::to_value(value).map_err(|e| read_error(field, e))?;
    serde_json::from_value(v[field].take()).map_err(|e| read_error(field, e))
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

impl<Tree: 'static + MerkleTreeTrait> NativePartition<Tree> {
    /// The partition whose challenges' vanilla proofs are `proofs`, for the
    /// sector whose replica id, comm_d and comm_r are given.
    pub(crate) fn new(
        replica_id: Fr,
        comm_d: Fr,
        comm_r: Fr,
        proofs: &[VanillaSealProof<Tree>],
    ) -> Result<Self, Error> {
        let first = proofs
            .first()
            .ok_or_else(|| read_error("partition", "no challenges"))?;
        let commitments = Commitments {
            replica_id,
            comm_d,
            comm_r,
            comm_r_last: first.comm_r_last().into(),
            comm_c: first.comm_c().into(),
        };
        let challenges = proofs
            .iter()
            .map(|p| {
                let (comm_r_last, comm_c): (Fr, Fr) = (p.comm_r_last().into(), p.comm_c().into());
                if comm_r_last != commitments.comm_r_last || comm_c != commitments.comm_c {
                    return Err(read_error(
                        "partition",
                        "challenges disagree on comm_r_last or comm_c",
                    ));
                }
                Challenge::read::<Tree>(p)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            commitments,
            challenges,
            _tree: std::marker::PhantomData,
        })
    }

    /// The partition's witness (inputs with ONE first, aux), challenges on
    /// rayon, joined in order: value for value what `witness_challenges`
    /// gives for the crates' circuits. Made compact
    /// ([`NativePartition::compact_witness`]) and expanded.
    pub(crate) fn witness(self) -> Result<Witness, PieceError> {
        Ok(self.compact_witness()?.expand())
    }

    /// The partition's witness with its aux values compact (a 2-bit class
    /// per value, the others in full), as the generators write them: no
    /// value is ever 32 bytes unless it is neither 0 nor 1.
    pub(crate) fn compact_witness(self) -> Result<CompactWitness, PieceError> {
        let commitments = &self.commitments;
        synthesize_with_shared_prefix(self.challenges, |challenge| {
            piece::<Tree>(commitments, &challenge).map_err(PieceFault::Synthesis)
        })
        .map(|cs| {
            let mut w = cs.into_witness();
            // The others and the inputs grew by doubling; hold what they
            // need (what the engine reserves).
            w.aux.shrink_to_fit();
            w.input_assignment.shrink_to_fit();
            w
        })
    }
}

impl Challenge {
    fn read<Tree: 'static + MerkleTreeTrait>(
        proof: &VanillaSealProof<Tree>,
    ) -> Result<Self, Error> {
        let labeling = proof
            .labeling_proofs
            .first()
            .ok_or_else(|| read_error("labeling proofs", "none"))?;
        let node: u64 = serde_field(labeling, "node")?;
        let layers = proof.labeling_proofs.len();
        let column = |c: &storage_proofs_porep::stacked::ColumnProof<TreeProof<Tree>>| {
            let rows = (1..=layers)
                .map(|layer| {
                    c.get_node_at_layer(layer)
                        .map(|&d| d.into())
                        .map_err(|e| read_error("column", e))
                })
                .collect::<Result<Vec<Fr>, _>>()?;
            let opening: TreeProof<Tree> = serde_field(c, "inclusion_proof")?;
            Ok::<_, Error>(ParentColumn {
                rows,
                path: opening.as_options(),
            })
        };
        let replica = &proof.replica_column_proofs;
        let c_x: TreeProof<Tree> = serde_field(&replica.c_x, "inclusion_proof")?;
        let drg_parents = replica
            .drg_parents
            .iter()
            .map(column)
            .collect::<Result<Vec<_>, _>>()?;
        let exp_parents = replica
            .exp_parents
            .iter()
            .map(column)
            .collect::<Result<Vec<_>, _>>()?;
        if drg_parents.is_empty() || exp_parents.is_empty() {
            return Err(read_error("replica columns", "no parents"));
        }
        Ok(Self {
            node,
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            drg_parents,
            exp_parents,
            comm_r_last_path: proof.comm_r_last_proof.as_options(),
            comm_c_path: c_x.as_options(),
            layers,
        })
    }
}

/// What a challenge uses of the preamble: the replica id's bits (its
/// paths' roots, comm_r_last and comm_c, are private and allocate nothing
/// more).
struct Preamble {
    replica_id_bits: Vec<Bit>,
}

/// One challenge's piece: ONE, the preamble (shared), then the challenge.
fn piece<Tree: 'static + MerkleTreeTrait>(
    commitments: &Commitments,
    challenge: &Challenge,
) -> Result<(CompactAssignment, Prefix), SynthesisError> {
    let mut cs = CompactAssignment::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    let preamble = preamble::<Tree, _>(&mut cs, commitments)?;
    let prefix = cs.sizes();
    prove_challenge(&mut cs, &preamble, challenge)?;
    Ok((cs, prefix))
}

fn alloc<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    value: Fr,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    AllocatedNum::alloc(cs.namespace(|| "value"), || Ok(value))
}

/// `StackedCircuit::synthesize` up to its first challenge.
fn preamble<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    c: &Commitments,
) -> Result<Preamble, SynthesisError> {
    let replica_id = alloc(cs, c.replica_id)?;
    replica_id.inputize(cs.namespace(|| "replica_id_input"))?;
    let bits = replica_id.to_bits_le(cs.namespace(|| "replica_id_bits"))?;
    let replica_id_bits =
        reverse_bit_numbering(bits.iter().map(from_boolean).collect::<Result<_, _>>()?);
    let comm_d = alloc(cs, c.comm_d)?;
    comm_d.inputize(cs.namespace(|| "comm_d_input"))?;
    let comm_r = alloc(cs, c.comm_r)?;
    comm_r.inputize(cs.namespace(|| "comm_r_input"))?;
    let comm_r_last = alloc(cs, c.comm_r_last)?;
    let comm_c = alloc(cs, c.comm_c)?;
    let hash = <Tree::Hasher as Hasher>::Function::hash2_circuit(
        cs.namespace(|| "H_comm_c_comm_r_last"),
        &comm_c,
        &comm_r_last,
    )?;
    constraint::equal(cs, || "comm_r", &comm_r, &hash);
    Ok(Preamble { replica_id_bits })
}

/// `Proof::synthesize` of one challenge.
fn prove_challenge(
    cs: &mut CompactAssignment,
    pre: &Preamble,
    ch: &Challenge,
) -> Result<(), SynthesisError> {
    let data_leaf = alloc(cs, ch.data_leaf)?;
    comm_d_inclusion(cs, &ch.comm_d_path, ch.data_leaf)?;

    let mut columns = |parents: &[ParentColumn]| {
        parents
            .iter()
            .map(|parent| {
                cs.aux_mut().push_values(&parent.rows);
                let hash = hash_single_column(cs, &parent.rows)?;
                tree_inclusion(cs, &parent.path, hash)?;
                Ok(parent.rows.clone())
            })
            .collect::<Result<Vec<Vec<Fr>>, SynthesisError>>()
    };
    let drg = columns(&ch.drg_parents)?;
    let exp = columns(&ch.exp_parents)?;

    let challenge = UInt64::alloc(cs.namespace(|| "challenge"), Some(ch.node))?;
    challenge.pack_into_input(cs.namespace(|| "challenge input"))?;
    let node_bits = challenge
        .to_bits_be()
        .iter()
        .map(from_boolean)
        .collect::<Result<Vec<_>, _>>()?;

    let mut labels = Vec::with_capacity(ch.layers);
    for layer in 1..=ch.layers {
        let value = label(
            cs.aux_mut(),
            &pre.replica_id_bits,
            &node_bits,
            layer,
            &drg,
            &exp,
        );
        labels.push(alloc(cs, value)?);
    }

    let key = labels.last().ok_or(SynthesisError::AssignmentMissing)?;
    let encoded = encode(cs.namespace(|| "encode_node"), key, &data_leaf)?;
    tree_inclusion(cs, &ch.comm_r_last_path, value_of(&encoded)?)?;
    let labels = labels.iter().map(value_of).collect::<Result<Vec<_>, _>>()?;
    let column_hash = hash_single_column(cs, &labels)?;
    tree_inclusion(cs, &ch.comm_c_path, column_hash)
}

fn value_of(n: &AllocatedNum<Fr>) -> Result<Fr, SynthesisError> {
    n.get_value().ok_or(SynthesisError::AssignmentMissing)
}

/// The crates' `hash_single_column`, natively: Poseidon of the column's
/// rows (allocated by the caller), its allocations pushed; returns the hash.
fn hash_single_column(cs: &mut CompactAssignment, rows: &[Fr]) -> Result<Fr, SynthesisError> {
    let aux = cs.aux_mut();
    match rows.len() {
        2 => Ok(hash(rows, &POSEIDON_CONSTANTS_2, aux)),
        11 => Ok(hash(rows, &POSEIDON_CONSTANTS_11, aux)),
        // The crates panic here; a circuit of another layer count does not exist.
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// The crates' `enforce_inclusion` in a tree of the sector's shape (tree C
/// or tree R), natively: `PoRCircuit` from an allocated leaf of value
/// `leaf` to a private root (its variable: nothing allocated for it), then
/// the position bits packed into public inputs.
fn tree_inclusion(cs: &mut CompactAssignment, path: &Path, leaf: Fr) -> Result<(), SynthesisError> {
    let (_root, bits) = inclusion_path(leaf, path, cs.aux_mut())?;
    for input in packed_inputs(&bits) {
        cs.alloc_input(|| "path", || Ok(input))?;
    }
    Ok(())
}

/// The comm_d inclusion (`PoRCircuit` over the binary SHA-256 tree with a
/// private root), natively. Per level: the position bit, the sibling, the
/// two picks of `insert_2`, both children taken apart into bits, the
/// SHA-256 of their 64 bytes, the digest packed into the parent. Then the
/// position bits packed into one public input.
fn comm_d_inclusion(
    cs: &mut CompactAssignment,
    path: &Path,
    leaf: Fr,
) -> Result<(), SynthesisError> {
    let aux = cs.aux_mut();
    let mut cur = leaf;
    let mut positions = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let index = index.ok_or(SynthesisError::AssignmentMissing)?;
        let sibling = match siblings.as_slice() {
            [Some(s)] => *s,
            _ => return Err(SynthesisError::AssignmentMissing),
        };
        let right = index & 1 == 1;
        aux.push_bit(right);
        positions.push(Bit::Is(right));
        aux.push_value(sibling);
        let (l, r) = if right {
            (sibling, cur)
        } else {
            (cur, sibling)
        };
        aux.push_values(&[l, r]);
        let mut message = reverse_bit_numbering(alloc_le_bits(&l, aux));
        message.extend(reverse_bit_numbering(alloc_le_bits(&r, aux)));
        cur = pack_le(&reverse_bit_numbering(sha256(&message, aux)));
        aux.push_value(cur);
    }
    let packed = pack_le(&positions);
    cs.alloc_input(|| "path", || Ok(packed))?;
    Ok(())
}

/// `create_label_circuit` of one layer, with the parents' bits the layer
/// allocates first: pushes everything onto `aux` except the label itself,
/// whose value it returns (the caller allocates it, as `pack_bits` does).
fn label<S: AuxSink + ?Sized>(
    aux: &mut S,
    replica_id_bits: &[Bit],
    node_bits: &[Bit],
    layer: usize,
    drg: &[Vec<Fr>],
    exp: &[Vec<Fr>],
) -> Fr {
    let mut parents: Vec<Vec<Bit>> = drg
        .iter()
        .map(|rows| reverse_bit_numbering(alloc_le_bits(&rows[layer - 1], aux)))
        .collect();
    if layer > 1 {
        parents.extend(
            exp.iter()
                .map(|rows| reverse_bit_numbering(alloc_le_bits(&rows[layer - 2], aux))),
        );
    }
    let mut message = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    message.extend_from_slice(replica_id_bits);
    while message.len() < 256 {
        message.push(Bit::Constant(false));
    }
    message.extend(Word::constant(layer as u32).into_bits_be());
    message.extend_from_slice(node_bits);
    message.resize(512, Bit::Constant(false));
    // The parents repeated to 37, as the crates' labelling hashes them.
    for parent in parents.iter().cycle().take(TOTAL_PARENTS) {
        message.extend_from_slice(parent);
        let padded = message.len().next_multiple_of(256);
        message.resize(padded, Bit::Constant(false));
    }
    pack_le(&reverse_bit_numbering(sha256(&message, aux)))
}
