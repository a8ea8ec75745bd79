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
//! The field arithmetic is `montgomery`'s: blst_fr's own limbs, inline,
//! each MDS row's sum of products reduced once (the values are blstrs'
//! bit for bit). `tests/native_poseidon.rs` checks both against the
//! gadgets on random inputs, value for value.

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_field::limbs::fr_as_limbs;
use cuzk_synth::native::bits::{bit_value, CAPACITY};
use cuzk_synth::precompiled::AuxSink;
use ff::Field;
use filecoin_hashers::{
    POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use neptune::poseidon::{Arity, PoseidonConstants};

mod montgomery;

use montgomery::{mul, Acc, Limbs, ACC_TERMS};

/// The widest state neptune builds (arity 36).
const MAX_WIDTH: usize = 37;

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
    // The widths the Filecoin trees and columns hash with get their own
    // copy, unrolled; any other goes through the widest.
    match width {
        3 => hash_width::<3, A, S>(3, preimage, constants, aux),
        5 => hash_width::<5, A, S>(5, preimage, constants, aux),
        9 => hash_width::<9, A, S>(9, preimage, constants, aux),
        12 => hash_width::<12, A, S>(12, preimage, constants, aux),
        _ => hash_width::<MAX_WIDTH, A, S>(width, preimage, constants, aux),
    }
}

/// [`hash`] on a state of `width` ≤ `W` elements.
#[inline(always)]
fn hash_width<const W: usize, A: Arity<Fr>, S: AuxSink + ?Sized>(
    width: usize,
    preimage: &[Fr],
    constants: &PoseidonConstants<Fr, A>,
    aux: &mut S,
) -> Fr {
    assert!(width <= W && width <= ACC_TERMS);
    let keys = fr_as_limbs(&constants.compressed_round_constants);
    let half = constants.half_full_rounds;
    let mut state = [Limbs::default(); W];
    state[0] = Limbs::from(constants.domain_tag);
    for (x, p) in state[1..width].iter_mut().zip(preimage) {
        *x = Limbs::from(*p);
    }
    let state = &mut state[..width];

    // First full round: keys added before and after the S-box; the tag's
    // S-box is a constant (nothing allocated).
    let (pre, post) = (&keys[..width], &keys[width..2 * width]);
    let mut offset = 2 * width;
    let x = montgomery::add(&state[0], &pre[0]);
    let x4 = mul(&mul(&x, &x), &mul(&x, &x));
    state[0] = montgomery::add(&mul(&x4, &x), &post[0]);
    for i in 1..width {
        state[i] = s_box(&montgomery::add(&state[i], &pre[i]), Some(&post[i]), aux);
    }
    let mut round = 0;
    mix::<W, A>(constants, round, state);

    // The S-box's input, a combination after the first round, is
    // allocated first.
    let full = |state: &mut [Limbs], keys: Option<&[Limbs]>, aux: &mut S| {
        for (i, x) in state.iter_mut().enumerate() {
            push(aux, x);
            *x = s_box(x, keys.map(|k| &k[i]), aux);
        }
    };
    for _ in 1..half {
        full(state, Some(&keys[offset..offset + width]), aux);
        offset += width;
        round += 1;
        mix::<W, A>(constants, round, state);
    }
    match cross_terms(constants) {
        Some(cross) => partial_rounds_in_blocks(constants, cross, &keys[offset..], state, aux),
        None => {
            for i in 0..constants.partial_rounds {
                push(aux, &state[0]);
                state[0] = s_box(&state[0], Some(&keys[offset + i]), aux);
                mix::<W, A>(constants, round + 1 + i, state);
            }
        }
    }
    offset += constants.partial_rounds;
    round += constants.partial_rounds;
    for _ in 1..half {
        full(state, Some(&keys[offset..offset + width]), aux);
        offset += width;
        round += 1;
        mix::<W, A>(constants, round, state);
    }
    full(state, None, aux);
    // The last matrix: only the result, element 1, is used.
    let result = column(&constants.mds_matrices.m, 1, state);
    let result = Fr::from(result);
    aux.push_value(result);
    result
}

/// Partial rounds taken [`BLOCK`] at a time (the cross terms below).
const BLOCK: usize = 4;

/// The partial rounds, [`BLOCK`] at a time, with the same values as one
/// at a time. Round q's S-box output y_q enters element 0 of the next
/// state through the sparse matrix's first row w_q and every other
/// element j through v_q[j]: s_j ← s_j + y_q·v_q[j]. Within a block from
/// round p, the elements j ≥ 1 are left as they were at p, and round q's
/// next element 0 is taken as w_q[0]·y_q + Σ_j w_q[j]·s_j(p) +
/// Σ_{p ≤ q' < q} y_q'·c(q, q'), with the cross term c(q, q') =
/// Σ_j w_q[j]·v_q'[j] precomputed; the elements j ≥ 1 are brought up to
/// date once at the block's end, each sum of products reduced once. At
/// arity 8 this is 5–7% fewer cycles a hash than round by round (dev-2c).
fn partial_rounds_in_blocks<A: Arity<Fr>, S: AuxSink + ?Sized>(
    constants: &PoseidonConstants<Fr, A>,
    cross: &CrossTerms,
    keys: &[Limbs],
    state: &mut [Limbs],
    aux: &mut S,
) {
    let width = state.len();
    let sparse = &constants.sparse_matrixes;
    let rounds = constants.partial_rounds;
    let mut start = [Limbs::default(); MAX_WIDTH];
    let mut p = 0;
    while p < rounds {
        let block = BLOCK.min(rounds - p);
        start[..width].copy_from_slice(state);
        let mut outputs = [Limbs::default(); BLOCK];
        let mut x = state[0];
        for t in 0..block {
            let q = p + t;
            push(aux, &x);
            let y = s_box(&x, Some(&keys[q]), aux);
            outputs[t] = y;
            let w = fr_as_limbs(&sparse[q].w_hat);
            let mut next = Acc::new();
            next.mul_add(&y, &w[0]);
            for j in 1..width {
                next.mul_add(&start[j], &w[j]);
            }
            for (earlier, y) in outputs[..t].iter().enumerate() {
                next.mul_add(y, cross.get(q, t - earlier));
            }
            x = next.reduce();
        }
        for j in 1..width {
            let mut element = Acc::new();
            element.add(&start[j]);
            for (t, y) in outputs[..block].iter().enumerate() {
                element.mul_add(y, &fr_as_limbs(&sparse[p + t].v_rest)[j - 1]);
            }
            state[j] = element.reduce();
        }
        state[0] = x;
        p += block;
    }
}

/// The cross terms c(q, q − d) = Σ_{j ≥ 1} w_q[j]·v_{q−d}[j] of
/// [`partial_rounds_in_blocks`], for 1 ≤ d < [`BLOCK`].
struct CrossTerms {
    terms: Vec<Limbs>,
}

impl CrossTerms {
    fn new<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>) -> Self {
        let sparse = &constants.sparse_matrixes;
        let mut terms = Vec::with_capacity(constants.partial_rounds * (BLOCK - 1));
        for q in 0..constants.partial_rounds {
            let w = fr_as_limbs(&sparse[q].w_hat);
            for d in 1..BLOCK {
                let mut c = Acc::new();
                if let Some(earlier) = q.checked_sub(d) {
                    for (w, v) in w[1..].iter().zip(fr_as_limbs(&sparse[earlier].v_rest)) {
                        c.mul_add(w, v);
                    }
                }
                terms.push(c.reduce());
            }
        }
        CrossTerms { terms }
    }

    /// c(q, q − d).
    #[inline(always)]
    fn get(&self, q: usize, d: usize) -> &Limbs {
        &self.terms[q * (BLOCK - 1) + d - 1]
    }
}

/// The cross terms of filecoin-hashers' constants of arity 2, 4, 8 and
/// 11 (the trees' and the columns' hashes), made on first use; other
/// constants take the partial rounds one at a time.
fn cross_terms<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>) -> Option<&'static CrossTerms> {
    use std::sync::OnceLock;
    static TERMS: [OnceLock<CrossTerms>; 4] = [const { OnceLock::new() }; 4];
    let address = constants as *const PoseidonConstants<Fr, A> as *const ();
    let known: [*const (); 4] = [
        &*POSEIDON_CONSTANTS_2 as *const _ as *const (),
        &*POSEIDON_CONSTANTS_4 as *const _ as *const (),
        &*POSEIDON_CONSTANTS_8 as *const _ as *const (),
        &*POSEIDON_CONSTANTS_11 as *const _ as *const (),
    ];
    let i = known.iter().position(|&k| std::ptr::eq(k, address))?;
    Some(TERMS[i].get_or_init(|| CrossTerms::new(constants)))
}

/// `x⁵ + key` (no key: `x⁵`), pushing the S-box's three allocations: `x²`,
/// `x⁴`, `x⁵ + key`.
#[inline(always)]
fn s_box<S: AuxSink + ?Sized>(x: &Limbs, key: Option<&Limbs>, aux: &mut S) -> Limbs {
    let x2 = mul(x, x);
    let x4 = mul(&x2, &x2);
    let x5 = mul(&x4, x);
    let out = key.map_or(x5, |k| montgomery::add(&x5, k));
    aux.push_values(&[Fr::from(x2), Fr::from(x4), Fr::from(out)]);
    out
}

#[inline(always)]
fn push<S: AuxSink + ?Sized>(aux: &mut S, x: &Limbs) {
    aux.push_value(Fr::from(*x));
}

/// Column `j` of the state times `matrix` (rows indexed by the state's
/// element): Σᵢ stateᵢ·matrix[i][j], one reduction.
#[inline(always)]
fn column(matrix: &[Vec<Fr>], j: usize, state: &[Limbs]) -> Limbs {
    let mut acc = Acc::new();
    for (x, row) in state.iter().zip(matrix) {
        acc.mul_add(x, &fr_as_limbs(row)[j]);
    }
    acc.reduce()
}

/// The state times the MDS matrix of round `round` (0-based, full and
/// partial rounds counted together), as the circuit's `product_mds`.
#[inline(always)]
fn mix<const W: usize, A: Arity<Fr>>(
    constants: &PoseidonConstants<Fr, A>,
    round: usize,
    state: &mut [Limbs],
) {
    let sparse_from = constants.half_full_rounds - 1;
    let dense = |matrix: &[Vec<Fr>], state: &mut [Limbs]| {
        let mut out = [Limbs::default(); W];
        for (j, o) in out[..state.len()].iter_mut().enumerate() {
            *o = column(matrix, j, state);
        }
        state.copy_from_slice(&out[..state.len()]);
    };
    if round == sparse_from {
        dense(&constants.pre_sparse_matrix, state);
    } else if round > sparse_from && round < constants.half_full_rounds + constants.partial_rounds {
        let sparse = &constants.sparse_matrixes[round - sparse_from - 1];
        let mut first = Acc::new();
        for (x, w) in state.iter().zip(fr_as_limbs(&sparse.w_hat)) {
            first.mul_add(x, w);
        }
        let x0 = state[0];
        for (x, v) in state[1..].iter_mut().zip(fr_as_limbs(&sparse.v_rest)) {
            *x = montgomery::add(x, &mul(&x0, v));
        }
        state[0] = first.reduce();
    } else {
        dense(&constants.mds_matrices.m, state);
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
    inclusion_path_hashing(leaf, path, aux, |_, nodes, aux| hash_nodes(nodes, aux))
}

/// [`inclusion_path`], each level's hash computed by `level_hash(level,
/// nodes, aux)`, which must push what [`hash_nodes`] pushes and return
/// the hash (a caller that already hashed the same nodes may repeat the
/// values it pushed then).
pub(crate) fn inclusion_path_hashing<S: AuxSink + ?Sized>(
    leaf: Fr,
    path: &Path,
    aux: &mut S,
    mut level_hash: impl FnMut(usize, &[Fr], &mut S) -> Fr,
) -> Result<(Fr, Vec<bool>), SynthesisError> {
    let mut node = leaf;
    let mut path_bits = Vec::new();
    for (level, (siblings, position)) in path.iter().enumerate() {
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
        node = level_hash(level, &nodes, aux);
        path_bits.extend(bits);
    }
    Ok((node, path_bits))
}

/// The Poseidon hash of a tree level's 2, 4 or 8 nodes (filecoin-hashers'
/// constants), pushing what the gadget allocates.
pub(crate) fn hash_nodes<S: AuxSink + ?Sized>(nodes: &[Fr], aux: &mut S) -> Fr {
    match nodes.len() {
        2 => hash(nodes, &POSEIDON_CONSTANTS_2, aux),
        4 => hash(nodes, &POSEIDON_CONSTANTS_4, aux),
        8 => hash(nodes, &POSEIDON_CONSTANTS_8, aux),
        n => unreachable!("inclusion_path checks the arity: {n} nodes"),
    }
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
