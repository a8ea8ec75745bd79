//! The native SHA-256 witness against bellperson's gadget, run through the
//! witness-only system: the same aux values in the same order, and the same
//! output bits (values and which are constant), on random inputs whose bits
//! are any mix of constants, allocated bits and negated allocated bits;
//! and the same values pushed onto a compact aux vector (`CompactAux`).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_synth::native::sha256::{compression, Bit, Word, IV};
use cuzk_synth::precompiled::{AuxSink, CompactAux, WitnessAssignment};
use ff::Field;
use proptest::prelude::*;

/// How one input bit enters the compression.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Constant,
    Allocated,
    Negated,
}

/// One input bit: how it is made, and the value of the bit as read.
type BitSpec = (Kind, bool);

/// One state word: a constant word, an allocated word (`UInt32::alloc`),
/// or 32 bits of any kinds (`UInt32::from_bits`, least significant first).
#[derive(Clone, Debug)]
enum WordSpec {
    Constant(u32),
    Allocated(u32),
    Bits(Vec<BitSpec>),
}

fn gadget_bit<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    (kind, value): BitSpec,
) -> Result<Boolean, SynthesisError> {
    Ok(match kind {
        Kind::Constant => Boolean::constant(value),
        Kind::Allocated => Boolean::from(AllocatedBit::alloc(cs.namespace(|| "bit"), Some(value))?),
        Kind::Negated => {
            Boolean::from(AllocatedBit::alloc(cs.namespace(|| "bit"), Some(!value))?).not()
        }
    })
}

fn native_bit<S: AuxSink>(aux: &mut S, (kind, value): BitSpec) -> Bit {
    match kind {
        Kind::Constant => Bit::Constant(value),
        Kind::Allocated => Bit::alloc(value, aux),
        Kind::Negated => !Bit::alloc(!value, aux),
    }
}

/// A witness assignment holding ONE and `message`'s bits, and those bits.
fn gadget_message(message: &[BitSpec]) -> (WitnessAssignment, Vec<Boolean>) {
    let mut cs = WitnessAssignment::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    let bits = message
        .iter()
        .map(|&b| gadget_bit(&mut cs, b).unwrap())
        .collect();
    (cs, bits)
}

/// The gadget's aux vector and output bits (big-endian per word).
fn gadget(message: &[BitSpec], state: &[WordSpec]) -> (Vec<Fr>, Vec<Boolean>) {
    let (mut cs, bits) = gadget_message(message);
    let words: Vec<UInt32> = state
        .iter()
        .map(|w| match w {
            WordSpec::Constant(v) => UInt32::constant(*v),
            WordSpec::Allocated(v) => UInt32::alloc(cs.namespace(|| "word"), Some(*v)).unwrap(),
            WordSpec::Bits(bits) => {
                let bits: Vec<Boolean> = bits
                    .iter()
                    .map(|&b| gadget_bit(&mut cs, b).unwrap())
                    .collect();
                UInt32::from_bits(&bits)
            }
        })
        .collect();
    let out = sha256_compression_function(cs.namespace(|| "compress"), &bits, &words).unwrap();
    let out_bits = out.into_iter().flat_map(UInt32::into_bits_be).collect();
    (cs.into_witness().aux_assignment, out_bits)
}

fn native<S: AuxSink + Default>(message: &[BitSpec], state: &[WordSpec]) -> (S, Vec<Bit>) {
    let mut aux = S::default();
    let bits: Vec<Bit> = message.iter().map(|&b| native_bit(&mut aux, b)).collect();
    let words: Vec<Word> = state
        .iter()
        .map(|w| match w {
            WordSpec::Constant(v) => Word::constant(*v),
            WordSpec::Allocated(v) => Word::alloc(*v, &mut aux),
            WordSpec::Bits(bits) => {
                Word::from_bits(std::array::from_fn(|i| native_bit(&mut aux, bits[i])))
            }
        })
        .collect();
    let out = compression(&bits, &words.try_into().unwrap(), &mut aux);
    (aux, out.into_iter().flat_map(Word::into_bits_be).collect())
}

fn check(message: &[BitSpec], state: &[WordSpec]) {
    let (expected_aux, expected_out) = gadget(message, state);
    let (aux, out) = native::<Vec<Fr>>(message, state);
    let (compact, compact_out) = native::<CompactAux>(message, state);
    assert_eq!(compact_out, out, "output bits, compact");
    assert_eq!(
        compact,
        CompactAux::from_values(&expected_aux),
        "compact aux"
    );
    cuzk_testkit::assert_same_aux("compression", &aux, &expected_aux);
    for (i, (n, g)) in out.iter().zip(&expected_out).enumerate() {
        assert_eq!(Some(n.value()), g.get_value(), "output bit {i}");
        assert_eq!(n.is_constant(), g.is_constant(), "output bit {i} constness");
    }
}

fn kind(constant: u32, allocated: u32, negated: u32) -> impl Strategy<Value = Kind> {
    prop_oneof![
        constant => Just(Kind::Constant),
        allocated => Just(Kind::Allocated),
        negated => Just(Kind::Negated),
    ]
}

fn bits(n: usize) -> impl Strategy<Value = Vec<BitSpec>> {
    // Mostly one kind per case, so whole words fold (or not) as in real use.
    (0u32..4, 0u32..4, 0u32..4).prop_flat_map(move |(c, a, n_)| {
        prop::collection::vec((kind(c + 1, a + 1, n_), any::<bool>()), n)
    })
}

fn word() -> impl Strategy<Value = WordSpec> {
    prop_oneof![
        any::<u32>().prop_map(WordSpec::Constant),
        any::<u32>().prop_map(WordSpec::Allocated),
        bits(32).prop_map(WordSpec::Bits),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn native_aux_equals_the_gadgets(message in bits(512), state in prop::collection::vec(word(), 8)) {
        check(&message, &state);
    }

    #[test]
    fn native_aux_equals_the_gadgets_from_the_iv(message in bits(512)) {
        check(&message, &IV.map(WordSpec::Constant));
    }
}

#[test]
fn the_demo_and_labelling_cases() {
    // Allocated message from the constant IV (a demo lane's first block,
    // PoRep's first labelling block); allocated message and state (every
    // later block); a message whose second half is constant padding.
    let allocated: Vec<BitSpec> = (0..512).map(|i| (Kind::Allocated, i % 3 == 0)).collect();
    check(&allocated, &IV.map(WordSpec::Constant));
    check(&allocated, &IV.map(WordSpec::Allocated));
    let mut padded = allocated.clone();
    padded[256..].iter_mut().for_each(|b| b.0 = Kind::Constant);
    check(&padded, &IV.map(WordSpec::Allocated));
    // All constant: nothing allocated beyond the inputs.
    let constant: Vec<BitSpec> = (0..512).map(|i| (Kind::Constant, i % 5 == 0)).collect();
    let (aux, _) = native::<Vec<Fr>>(&constant, &IV.map(WordSpec::Constant));
    assert!(aux.is_empty());
    check(&constant, &IV.map(WordSpec::Constant));
}

/// `native::sha256` (padding, then every block) against the gadget's
/// `sha256`, and the bit helpers against `AllocatedNum::to_bits_le` and
/// `multipack::pack_bits`, on messages of any whole number of bytes.
fn check_whole(message: &[BitSpec]) {
    use bellperson::gadgets::multipack::pack_bits;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::gadgets::sha256::sha256;
    use cuzk_synth::native::bits::{alloc_le_bits, pack_le, reverse_bit_numbering};

    let (mut cs, bits) = gadget_message(message);
    let digest = sha256(cs.namespace(|| "sha"), &bits).unwrap();
    let packed = pack_bits(cs.namespace(|| "pack"), &digest).unwrap();
    let num =
        AllocatedNum::alloc(cs.namespace(|| "num"), || Ok(packed.get_value().unwrap())).unwrap();
    num.to_bits_le(cs.namespace(|| "bits")).unwrap();
    let expected = cs.into_witness().aux_assignment;

    let mut aux = Vec::new();
    let mut compact = CompactAux::new();
    let bits: Vec<Bit> = message.iter().map(|&b| native_bit(&mut aux, b)).collect();
    message.iter().for_each(|&b| {
        native_bit(&mut compact, b);
    });
    let out = cuzk_synth::native::sha256::sha256(&bits, &mut aux);
    assert_eq!(cuzk_synth::native::sha256::sha256(&bits, &mut compact), out);
    let value = pack_le(&out);
    aux.push(value);
    aux.push(value);
    compact.push_values(&[value, value]);
    let le = alloc_le_bits(&value, &mut aux);
    assert_eq!(alloc_le_bits(&value, &mut compact), le);
    assert_eq!(compact, CompactAux::from_values(&expected), "compact aux");
    cuzk_testkit::assert_same_aux(&format!("{} bits", message.len()), &aux, &expected);
    // reverse_bit_numbering: padded with a constant zero to whole bytes,
    // then each byte reversed (the padding lands first in the last byte).
    let reversed = reverse_bit_numbering(le.clone());
    assert_eq!(reversed.len(), 256);
    assert_eq!(reversed[7], le[0]);
    assert_eq!(reversed[248], Bit::Constant(false));
    assert_eq!(reversed[255], le[248]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn whole_messages_and_bit_helpers_equal_the_gadgets(
        message in (0usize..140).prop_flat_map(|bytes| bits(bytes * 8))
    ) {
        check_whole(&message);
    }
}
