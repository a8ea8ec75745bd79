//! The bit gadgets around hashes, natively: a field element taken apart
//! into allocated bits (`AllocatedNum::to_bits_le`), bits packed back into
//! one (`multipack::pack_bits`, `multipack::pack_into_inputs`), and the
//! byte-wise bit reversal Filecoin's circuits put between them
//! (`storage_proofs_core::util::reverse_bit_numbering`).

use bellperson::gadgets::boolean::Boolean;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

use super::sha256::Bit;
use crate::precompiled::AuxSink;

/// Bits in a field element's canonical representation (`Fr::NUM_BITS`).
pub const FIELD_BITS: usize = Fr::NUM_BITS as usize;

/// Bits that always fit in a field element (`Fr::CAPACITY`): how many
/// `pack_bits` reads.
pub const CAPACITY: usize = Fr::CAPACITY as usize;

/// `AllocatedNum::to_bits_le` of a number whose value is `value`: its 255
/// bits, least significant first, each allocated (pushed onto `aux`, 32
/// at a time).
pub fn alloc_le_bits<S: AuxSink + ?Sized>(value: &Fr, aux: &mut S) -> Vec<Bit> {
    let bytes = value.to_bytes_le();
    for (k, chunk) in bytes.chunks(4).enumerate() {
        let word = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        let n = (FIELD_BITS - 32 * k).min(32);
        aux.push_bits(if n == 32 { word } else { word & ((1 << n) - 1) }, n);
    }
    (0..FIELD_BITS)
        .map(|i| Bit::Is(bytes[i / 8] >> (i % 8) & 1 == 1))
        .collect()
}

/// `reverse_bit_numbering`: `bits` padded with constant zeros to whole
/// bytes, then each byte's bits in reverse order.
pub fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    while bits.len() % 8 != 0 {
        bits.push(Bit::Constant(false));
    }
    for byte in bits.chunks_mut(8) {
        byte.reverse();
    }
    bits
}

/// The number `pack_bits` allocates for `bits`: the first [`CAPACITY`] of
/// them read least significant first (also one input of
/// `pack_into_inputs`, for up to [`CAPACITY`] bits).
pub fn pack_le(bits: &[Bit]) -> Fr {
    let mut bytes = [0u8; 32];
    for (i, bit) in bits.iter().take(CAPACITY).enumerate() {
        bytes[i / 8] |= u8::from(bit.value()) << (i % 8);
    }
    // Fewer than 255 bits are always below the modulus.
    Fr::from_bytes_le(&bytes).expect("254 bits fit in Fr")
}

/// A gadget's `Boolean` as a [`Bit`]: its kind, and the value of the
/// variable behind it. A `Boolean` without a value (a blank circuit) has
/// no witness.
pub fn from_boolean(b: &Boolean) -> Result<Bit, SynthesisError> {
    let value = |v: Option<bool>| v.ok_or(SynthesisError::AssignmentMissing);
    Ok(match b {
        Boolean::Constant(c) => Bit::Constant(*c),
        Boolean::Is(bit) => Bit::Is(value(bit.get_value())?),
        Boolean::Not(bit) => Bit::Not(value(bit.get_value())?),
    })
}

/// The field value of an allocated bit (what `AllocatedBit::alloc` pushes).
pub fn bit_value(bit: bool) -> Fr {
    if bit {
        Fr::ONE
    } else {
        Fr::ZERO
    }
}
