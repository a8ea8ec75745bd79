//! The native Poseidon witness (`cuzk_filecoin::poseidon`) against the
//! gadgets the Filecoin crates run, on fresh random inputs (the seed is
//! printed; `CUZK_TEST_SEED` repeats a run): each side runs on its own
//! `WitnessAssignment` from the same allocated inputs, and the two
//! witnesses must be equal value for value.
//!
//! * One hash, for every arity filecoin-hashers has constants for: the
//!   gadget is neptune's `circuit::poseidon_hash` (what `hash2_circuit`
//!   and `hash_multi_leaf_circuit` call); the hash is also checked against
//!   neptune's native `Poseidon::hash`.
//! * One inclusion path, for the tree shapes of every sector size and the
//!   arities 2 and 4: the gadget is `PoRCircuit::synthesize` (with the
//!   root already allocated and private, as the PoSt and PoRep circuits
//!   call it), the path a real one from a random tree of the shape, whose
//!   root the native path must reach.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::ConstraintSystem;
use blstrs::Scalar as Fr;
use cuzk_filecoin::poseidon::{hash, inclusion_path, packed_inputs};
use cuzk_synth::precompiled::{Witness, WitnessAssignment};
use ff::Field;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{
    POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_16, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_24,
    POSEIDON_CONSTANTS_36, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use generic_array::typenum::{Unsigned, U0, U2, U4, U8};
use neptune::poseidon::{Arity, PoseidonConstants};
use neptune::Poseidon;
use rand::Rng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::gadgets::por::PoRCircuit;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::{generate_tree, DiskTree, MerkleProofTrait, MerkleTreeTrait};

/// A system with ONE allocated, as `cuzk_synth::precompiled::witness` starts.
fn system() -> WitnessAssignment {
    let mut cs = WitnessAssignment::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    cs
}

fn alloc(cs: &mut WitnessAssignment, value: Fr) -> AllocatedNum<Fr> {
    AllocatedNum::alloc(cs.namespace(|| "value"), || Ok(value)).unwrap()
}

/// The gadget and the native hash of three random preimages.
fn check_hash<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, rng: &mut ChaCha20Rng) {
    for _ in 0..3 {
        let preimage: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut *rng)).collect();

        let mut cs = system();
        let nums = preimage.iter().map(|&x| alloc(&mut cs, x)).collect();
        let gadget_hash = neptune::circuit::poseidon_hash(&mut cs, nums, constants)
            .unwrap()
            .get_value()
            .unwrap();
        let gadget = cs.into_witness();

        let mut cs = system();
        cs.aux_mut().extend_from_slice(&preimage);
        let native_hash = hash(&preimage, constants, cs.aux_mut());
        let native = cs.into_witness();

        let arity = A::to_usize();
        assert_witness_eq(&gadget, &native, &format!("Poseidon arity {arity}"));
        assert_eq!(native_hash, gadget_hash, "arity {arity}: the hash");
        let plain = Poseidon::new_with_preimage(&preimage, constants).hash();
        assert_eq!(native_hash, plain, "arity {arity}: Poseidon::hash");
    }
}

fn assert_witness_eq(gadget: &Witness, native: &Witness, what: &str) {
    cuzk_testkit::assert_same_assignment(
        what,
        (&gadget.input_assignment, &gadget.aux_assignment),
        (&native.input_assignment, &native.aux_assignment),
    );
}

#[test]
fn native_poseidon_hash_is_the_gadgets() {
    let mut rng = cuzk_testkit::test_rng("native_poseidon_hash_is_the_gadgets");
    check_hash(&*POSEIDON_CONSTANTS_2, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_4, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_8, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_11, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_16, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_24, &mut rng);
    check_hash(&*POSEIDON_CONSTANTS_36, &mut rng);
}

/// Inclusion paths of random leaves of a random `Tree` of `nodes` leaves,
/// through the gadget and natively.
fn check_path<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    nodes: usize,
    rng: &mut ChaCha20Rng,
) {
    let (_, tree) = generate_tree::<Tree, _>(rng, nodes, None);
    for _ in 0..4 {
        let challenge = rng.gen_range(0..nodes);
        let proof = MerkleTreeTrait::gen_proof(&tree, challenge).unwrap();
        let (leaf, root): (Fr, Fr) = (proof.leaf().into(), proof.root().into());
        let path = proof.as_options();

        let mut cs = system();
        let root_num = alloc(&mut cs, root);
        PoRCircuit::<Tree>::synthesize(
            cs.namespace(|| "inclusion"),
            Root::Val(Some(leaf)),
            path.clone().into(),
            Root::from_allocated::<WitnessAssignment>(root_num),
            true,
        )
        .unwrap();
        let gadget = cs.into_witness();

        let mut cs = system();
        cs.aux_mut().extend([root, leaf]);
        let (computed, bits) = inclusion_path(leaf, &path, cs.aux_mut()).unwrap();
        for input in packed_inputs(&bits) {
            cs.alloc_input(|| "path", || Ok(input)).unwrap();
        }
        let native = cs.into_witness();

        let what = format!(
            "tree {}-{}-{} of {nodes} leaves, challenge {challenge}",
            Tree::Arity::to_usize(),
            Tree::SubTreeArity::to_usize(),
            Tree::TopTreeArity::to_usize()
        );
        assert_witness_eq(&gadget, &native, &what);
        assert_eq!(computed, root, "{what}: the root");
    }
}

#[test]
fn native_inclusion_path_is_the_gadgets() {
    let mut rng = cuzk_testkit::test_rng("native_inclusion_path_is_the_gadgets");
    // 2 KiB and 512 MiB sectors: 8-0-0.
    check_path::<DiskTree<PoseidonHasher, U8, U0, U0>>(64, &mut rng);
    // 8 MiB: 8-4-0.
    check_path::<DiskTree<PoseidonHasher, U8, U4, U0>>(4 * 64, &mut rng);
    // 32 GiB: 8-8-0.
    check_path::<DiskTree<PoseidonHasher, U8, U8, U0>>(8 * 64, &mut rng);
    // 64 GiB: 8-8-2.
    check_path::<DiskTree<PoseidonHasher, U8, U8, U2>>(2 * 8 * 64, &mut rng);
    // Binary and quaternary trees (the insertions of 2 and 4 nodes).
    check_path::<DiskTree<PoseidonHasher, U2, U0, U0>>(32, &mut rng);
    check_path::<DiskTree<PoseidonHasher, U4, U0, U0>>(64, &mut rng);
    check_path::<DiskTree<PoseidonHasher, U4, U2, U0>>(2 * 16, &mut rng);
}
