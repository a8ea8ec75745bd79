//! Poseidon hashes and Poseidon Merkle inclusion paths, natively: the aux
//! values the crates' gadgets allocate, in their order, pushed onto a
//! witness's aux vector, plain or compact (any `AuxSink`, as
//! `cuzk_synth::native` does for SHA-256), with no linear combination built.
//!
//! The Filecoin crates hash with neptune 11's legacy circuit
//! (`neptune::circuit::poseidon_hash`, through filecoin-hashers'
//! `hash2_circuit` and `hash_multi_leaf_circuit`). It runs the optimized
//! round schedule on a state of `width = arity + 1` elements, the domain
//! tag first, and keeps each element either allocated or as a linear
//! combination of allocated ones; an S-box allocates its input when that
//! is a combination. What it allocates, per hash:
//!
//! * first full round: for each preimage element `x` (already allocated),
//!   `(x + pre)²`, its square, and `(x + pre)⁵ + post`, with `pre` and
//!   `post` the first two `width`-runs of the compressed round constants;
//!   the tag's S-box is a constant (nothing allocated);
//! * every other full round, for each element `x` (a combination): `x`,
//!   `x²`, `x⁴`, `x⁵ + c` (no `c` in the terminal round);
//! * each partial round: the same four for element 0 only;
//! * the result, state element 1, allocated once more.
//!
//! Between rounds the state is multiplied by the MDS matrix of the round:
//! the pre-sparse matrix after the last initial full round, the sparse
//! matrices (dense first row `w_hat`, first column `v_rest`, identity
//! elsewhere) after the partial rounds, the full matrix `m` otherwise.
//!
//! An inclusion path (`storage_proofs_core::gadgets::por::PoRCircuit`)
//! allocates per level: the position's bits (`AllocatedBit`s, least
//! significant first), the siblings, what `insertion::insert` allocates to
//! place the current node among them, and the hash of the `arity` nodes.
//! The position bits of all levels then form the packed public inputs.
//!
//! `tests/native_poseidon.rs` checks both against the gadgets on random
//! inputs, value for value.

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_synth::native::bits::{bit_value, CAPACITY};
use cuzk_synth::precompiled::AuxSink;
use ff::Field;
use filecoin_hashers::{POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8};
use neptune::poseidon::{Arity, PoseidonConstants};

/// The Poseidon hash of `preimage` (exactly the arity's length) as
/// `neptune::circuit::poseidon_hash` computes it, pushing each value it
/// allocates onto `aux`; returns the hash (the last value pushed).
pub fn hash<A: Arity<Fr>, S: AuxSink + ?Sized>(
    preimage: &[Fr],
    constants: &PoseidonConstants<Fr, A>,
    aux: &mut S,
) -> Fr {
    let width = constants.width();
    assert_eq!(
        preimage.len() + 1,
        width,
        "a Poseidon preimage has exactly the arity's length"
    );
    let keys = &constants.compressed_round_constants;
    let half = constants.half_full_rounds;
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    state.extend_from_slice(preimage);

    // First full round: keys added before and after the S-box.
    let (pre, post) = (&keys[..width], &keys[width..2 * width]);
    let mut offset = 2 * width;
    state[0] = (state[0] + pre[0]).pow_vartime([5]) + post[0];
    for i in 1..width {
        state[i] = s_box(state[i] + pre[i], post[i], aux);
    }
    let mut round = 0;
    mix(constants, round, &mut state);

    let full = |state: &mut [Fr], keys: Option<&[Fr]>, aux: &mut S| {
        for (i, x) in state.iter_mut().enumerate() {
            // The S-box's input, a combination after the first round, is
            // allocated first.
            aux.push_value(*x);
            *x = s_box(*x, keys.map_or(Fr::ZERO, |k| k[i]), aux);
        }
    };
    for _ in 1..half {
        full(&mut state, Some(&keys[offset..offset + width]), aux);
        offset += width;
        round += 1;
        mix(constants, round, &mut state);
    }
    for _ in 0..constants.partial_rounds {
        aux.push_value(state[0]);
        state[0] = s_box(state[0], keys[offset], aux);
        offset += 1;
        round += 1;
        mix(constants, round, &mut state);
    }
    for _ in 1..half {
        full(&mut state, Some(&keys[offset..offset + width]), aux);
        offset += width;
        round += 1;
        mix(constants, round, &mut state);
    }
    full(&mut state, None, aux);
    round += 1;
    mix(constants, round, &mut state);

    aux.push_value(state[1]);
    state[1]
}

/// `x⁵ + key`, pushing the S-box's three allocations: `x²`, `x⁴`, `x⁵ + key`.
fn s_box<S: AuxSink + ?Sized>(x: Fr, key: Fr, aux: &mut S) -> Fr {
    let x2 = x.square();
    let x4 = x2.square();
    let out = x4 * x + key;
    aux.push_values(&[x2, x4, out]);
    out
}

/// The state times the MDS matrix of round `round` (0-based, full and
/// partial rounds counted together), as the circuit's `product_mds`.
fn mix<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, round: usize, state: &mut Vec<Fr>) {
    let width = state.len();
    let sparse_from = constants.half_full_rounds - 1;
    let dense = |matrix: &[Vec<Fr>], state: &[Fr]| -> Vec<Fr> {
        (0..width)
            .map(|j| (0..width).map(|i| state[i] * matrix[i][j]).sum())
            .collect()
    };
    if round == sparse_from {
        *state = dense(&constants.pre_sparse_matrix, state);
    } else if round > sparse_from && round < constants.half_full_rounds + constants.partial_rounds {
        let sparse = &constants.sparse_matrixes[round - sparse_from - 1];
        let first: Fr = state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
        let x0 = state[0];
        for (x, v) in state[1..].iter_mut().zip(&sparse.v_rest) {
            *x += x0 * v;
        }
        state[0] = first;
    } else {
        *state = dense(&constants.mds_matrices.m, state);
    }
}

/// A Merkle path as `MerkleProofTrait::as_options` gives it: per level
/// (base tree first, then the sub and top trees' levels), the siblings and
/// the position among them. A level's arity is its sibling count plus one.
pub type Path = [(Vec<Option<Fr>>, Option<usize>)];

/// The levels of `PoRCircuit::synthesize`'s authentication path from the
/// node `leaf` (allocated by the caller, as the circuit's `value`): for
/// each level its position bits, siblings, insertion and hash are pushed
/// onto `aux`. Returns the computed root (the last hash) and the position
/// bits of all levels, least significant first per level (what the
/// circuit packs into public inputs: [`packed_inputs`]).
///
/// A missing sibling or position is `AssignmentMissing`, as the gadget's;
/// a level of an arity the crates do not build (not 2, 4 or 8) is
/// `Unsatisfiable`.
pub fn inclusion_path<S: AuxSink + ?Sized>(
    leaf: Fr,
    path: &Path,
    aux: &mut S,
) -> Result<(Fr, Vec<bool>), SynthesisError> {
    let mut node = leaf;
    let mut path_bits = Vec::new();
    for (siblings, position) in path {
        let position = position.ok_or(SynthesisError::AssignmentMissing)?;
        let arity = siblings.len() + 1;
        if !matches!(arity, 2 | 4 | 8) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let bits: Vec<bool> = (0..arity.trailing_zeros())
            .map(|i| (position >> i) & 1 == 1)
            .collect();
        bits.iter().for_each(|&b| aux.push_bit(b));
        let siblings = siblings
            .iter()
            .map(|s| s.ok_or(SynthesisError::AssignmentMissing))
            .collect::<Result<Vec<_>, _>>()?;
        aux.push_values(&siblings);
        let nodes = insert(node, &bits, &siblings, aux);
        node = match arity {
            2 => hash(&nodes, &POSEIDON_CONSTANTS_2, aux),
            4 => hash(&nodes, &POSEIDON_CONSTANTS_4, aux),
            _ => hash(&nodes, &POSEIDON_CONSTANTS_8, aux),
        };
        path_bits.extend(bits);
    }
    Ok((node, path_bits))
}

/// `storage_proofs_core::gadgets::insertion::insert` for 2, 4 or 8 nodes:
/// `node` placed among `siblings` at the position `bits` spell (least
/// significant first). The gadget selects each output node through a
/// tree of `pick`s (each allocates its result) and, for 8 nodes, first
/// allocates `nor` and `and` of the two low bits; the picks here are the
/// gadget's, in its order, so the intermediate values pushed are its too.
fn insert<S: AuxSink + ?Sized>(node: Fr, bits: &[bool], siblings: &[Fr], aux: &mut S) -> Vec<Fr> {
    if let [b0, b1, _] = *bits {
        aux.push_bit(!b0 && !b1);
        aux.push_bit(b0 && b1);
    }
    let mut pick = |condition: bool, if_set: Fr, if_clear: Fr| {
        let value = if condition { if_set } else { if_clear };
        aux.push_value(value);
        value
    };
    let a = node;
    match *bits {
        [b0] => {
            let b = siblings[0];
            vec![pick(b0, b, a), pick(b0, a, b)]
        }
        [b0, b1] => {
            let [b, c, d] = [siblings[0], siblings[1], siblings[2]];
            let p0 = pick(b0, b, a);
            let p0 = pick(b1, b, p0);
            let p1 = pick(b0, a, b);
            let p1 = pick(b1, c, p1);
            let p2 = pick(b0, d, a);
            let p2 = pick(b1, p2, c);
            let p3 = pick(b0, a, d);
            let p3 = pick(b1, p3, d);
            vec![p0, p1, p2, p3]
        }
        [b0, b1, b2] => {
            let [b, c, d, e, f, g, h] = std::array::from_fn(|i| siblings[i]);
            let (nor, and) = (!b0 && !b1, b0 && b1);
            let p0 = pick(nor, a, b);
            let p0 = pick(b2, b, p0);
            let p1 = pick(b0, a, b);
            let p1 = pick(b1, c, p1);
            let p1 = pick(b2, c, p1);
            let p2 = pick(b0, d, a);
            let p2 = pick(b1, p2, c);
            let p2 = pick(b2, d, p2);
            let p3 = pick(and, a, d);
            let p3 = pick(b2, e, p3);
            let p4 = pick(nor, a, f);
            let p4 = pick(b2, p4, e);
            let p5 = pick(b0, a, f);
            let p5 = pick(b1, g, p5);
            let p5 = pick(b2, p5, f);
            let p6 = pick(b0, h, a);
            let p6 = pick(b1, p6, g);
            let p6 = pick(b2, p6, g);
            let p7 = pick(and, a, h);
            let p7 = pick(b2, p7, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => unreachable!("inclusion_path checks the arity"),
    }
}

/// `multipack::pack_into_inputs` of `bits`: one public input per
/// [`CAPACITY`] bits, least significant first.
pub fn packed_inputs(bits: &[bool]) -> Vec<Fr> {
    bits.chunks(CAPACITY)
        .map(|chunk| {
            chunk
                .iter()
                .rev()
                .fold(Fr::ZERO, |acc, &b| acc.double() + bit_value(b))
        })
        .collect()
}
