//! The aux values of bellperson 0.27's SHA-256 compression gadget
//! (`gadgets::sha256::sha256_compression_function`), computed natively.
//!
//! The gadget works on [`Boolean`](bellperson::gadgets::boolean::Boolean)s
//! that are constants, allocated bits or their negations, and folds
//! constants as it goes: an operation whose result is fixed by constant
//! operands allocates nothing, or fewer bits than the general case. The
//! number and order of its allocations therefore depend on which operand
//! bits are constant, never on their values. [`Bit`] carries exactly that
//! status, and every operation here takes the same case as the gadget's,
//! pushing each bit the gadget would allocate, in the gadget's order, onto
//! the aux vector. The values are plain `bool`/`u32` arithmetic: no linear
//! combination, no constraint.
//!
//! What each gadget step allocates (bellpepper-core 0.2 `Boolean`, bellperson
//! 0.27 `UInt32`):
//!
//! * `xor` of two bits: nothing if either is constant (the result is the
//!   other bit or its negation); else one bit, the xor of the two underlying
//!   variables, negated if exactly one operand was.
//! * `and`: nothing if either is constant; else one bit (`and`, `and_not` or
//!   `nor` of the variables: always the logical and of the operands).
//! * `ch(a, b, c)` and `maj(a, b, c)`: nothing when all three are constant;
//!   with one constant, the `and` it reduces to (see [`ch`] and [`maj`] for
//!   the case order, which is the gadget's); else one bit (`maj`: then one
//!   more, `b and c`).
//! * `addmany` of `n` words: nothing if every bit of every operand is
//!   constant; else the `bitlen(n · (2^32 − 1))` bits of the full sum, of
//!   which the low 32 are the result.
//! * `rotr`, `shr`: nothing (`shr` fills with constant zeros).

use crate::precompiled::compact::spread;
use crate::precompiled::AuxSink;

/// SHA-256 round constants (FIPS 180-4, section 4.2.2).
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

/// SHA-256 initial hash value (FIPS 180-4, section 5.3.3).
pub const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// A bit as the gadget's `Boolean` holds it: a constant, or an allocated
/// variable (by its value) read as is or negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    /// `Boolean::Constant`.
    Constant(bool),
    /// `Boolean::Is`: the variable's value.
    Is(bool),
    /// `Boolean::Not`: the *variable's* value (the bit reads as its negation).
    Not(bool),
}

impl Bit {
    /// Allocates a bit as `AllocatedBit::alloc` does: pushes its value.
    #[inline]
    pub fn alloc<S: AuxSink + ?Sized>(value: bool, aux: &mut S) -> Self {
        aux.push_bit(value);
        Bit::Is(value)
    }

    /// The bit's value.
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    /// Whether it is a constant.
    pub fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }
}

impl std::ops::Not for Bit {
    type Output = Self;

    /// `Boolean::not`: no allocation.
    fn not(self) -> Self {
        match self {
            Bit::Constant(v) => Bit::Constant(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

/// `Boolean::xor`.
pub fn xor<S: AuxSink + ?Sized>(a: Bit, b: Bit, aux: &mut S) -> Bit {
    match (a, b) {
        (Bit::Constant(false), x) | (x, Bit::Constant(false)) => x,
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => !x,
        // Is ^ Not: the xor of the variables, negated.
        (Bit::Is(x), Bit::Not(y)) | (Bit::Not(x), Bit::Is(y)) => !Bit::alloc(x ^ y, aux),
        (Bit::Is(x), Bit::Is(y)) | (Bit::Not(x), Bit::Not(y)) => Bit::alloc(x ^ y, aux),
    }
}

/// `Boolean::and`.
pub fn and<S: AuxSink + ?Sized>(a: Bit, b: Bit, aux: &mut S) -> Bit {
    match (a, b) {
        (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
        // and, and_not and nor all allocate the logical and.
        (x, y) => Bit::alloc(x.value() & y.value(), aux),
    }
}

/// `Boolean::sha256_ch`: `(a & b) ^ (!a & c)`, the gadget's cases in its order.
pub fn ch<S: AuxSink + ?Sized>(a: Bit, b: Bit, c: Bit, aux: &mut S) -> Bit {
    let value = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
        (Bit::Constant(false), _, c) => c,
        (a, Bit::Constant(false), c) => and(!a, c, aux),
        (a, b, Bit::Constant(false)) => and(a, b, aux),
        (a, b, Bit::Constant(true)) => !and(a, !b, aux),
        (a, Bit::Constant(true), c) => !and(!a, !c, aux),
        // `a` constant true, or no constant: one bit.
        _ => Bit::alloc(value, aux),
    }
}

/// `Boolean::sha256_maj`: `(a & b) ^ (a & c) ^ (b & c)`, the gadget's cases
/// in its order.
pub fn maj<S: AuxSink + ?Sized>(a: Bit, b: Bit, c: Bit, aux: &mut S) -> Bit {
    let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
        (Bit::Constant(false), b, c) => and(b, c, aux),
        (a, Bit::Constant(false), c) => and(a, c, aux),
        (a, b, Bit::Constant(false)) => and(a, b, aux),
        (a, b, Bit::Constant(true)) => !and(!a, !b, aux),
        (a, Bit::Constant(true), c) => !and(!a, !c, aux),
        (Bit::Constant(true), b, c) => !and(!b, !c, aux),
        // No constant: the result bit, then `b and c` for the constraint.
        (_, b, c) => {
            let result = Bit::alloc(value, aux);
            and(b, c, aux);
            result
        }
    }
}

/// A 32-bit word as the gadget's `UInt32` holds it: 32 [`Bit`]s, least
/// significant first, held as three masks (bit `i` of each is the word's
/// bit of weight `2^i`): `value`, what each bit reads as; `constant`, which
/// bits are constants; `negated`, which allocated bits are a variable's
/// negation (`Bit::Not`; never a constant's). Whole words then go through
/// the gadget's cases at once when none of their bits is constant (the
/// common case after the first rounds), and bit by bit otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    value: u32,
    constant: u32,
    negated: u32,
}

impl Word {
    /// `UInt32::constant`.
    pub fn constant(value: u32) -> Self {
        Word {
            value,
            constant: !0,
            negated: 0,
        }
    }

    /// `UInt32::alloc`: 32 bits, least significant first.
    pub fn alloc<S: AuxSink + ?Sized>(value: u32, aux: &mut S) -> Self {
        aux.push_bits(value, 32);
        Word {
            value,
            constant: 0,
            negated: 0,
        }
    }

    /// The word of these bits, `bits[i]` of weight `2^i`.
    pub fn from_bits(bits: [Bit; 32]) -> Self {
        let mut w = Word {
            value: 0,
            constant: 0,
            negated: 0,
        };
        for (i, bit) in bits.into_iter().enumerate() {
            w.value |= u32::from(bit.value()) << i;
            match bit {
                Bit::Constant(_) => w.constant |= 1 << i,
                Bit::Not(_) => w.negated |= 1 << i,
                Bit::Is(_) => {}
            }
        }
        w
    }

    /// Bit `i` (of weight `2^i`).
    pub fn bit(&self, i: usize) -> Bit {
        let v = self.value >> i & 1 == 1;
        if self.constant >> i & 1 == 1 {
            Bit::Constant(v)
        } else if self.negated >> i & 1 == 1 {
            Bit::Not(!v)
        } else {
            Bit::Is(v)
        }
    }

    /// The 32 bits, least significant first.
    pub fn bits(&self) -> [Bit; 32] {
        std::array::from_fn(|i| self.bit(i))
    }

    /// `UInt32::from_bits_be`: `bits[0]` is the most significant.
    pub fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32, "a word is 32 bits");
        Self::from_bits(std::array::from_fn(|i| bits[31 - i]))
    }

    /// `UInt32::into_bits_be`.
    pub fn into_bits_be(self) -> [Bit; 32] {
        std::array::from_fn(|i| self.bit(31 - i))
    }

    /// The word's value.
    pub fn value(&self) -> u32 {
        self.value
    }

    fn rotr(&self, by: u32) -> Self {
        Word {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// Shifted right, the top `by` bits constant zeros.
    fn shr(&self, by: u32) -> Self {
        Word {
            value: self.value >> by,
            constant: self.constant >> by | !(!0u32 >> by),
            negated: self.negated >> by,
        }
    }

    /// `xor` bit by bit: a constant operand flips or passes the other bit;
    /// two allocated ones allocate the xor of their variables, in bit order.
    fn xor<S: AuxSink + ?Sized>(&self, other: &Self, aux: &mut S) -> Self {
        let (a, b) = (self, other);
        let both = !a.constant & !b.constant;
        let variables = (a.value ^ a.negated) ^ (b.value ^ b.negated);
        push_masked(variables, both, aux);
        Word {
            value: a.value ^ b.value,
            constant: a.constant & b.constant,
            negated: (a.negated ^ b.negated ^ (a.value & a.constant) ^ (b.value & b.constant))
                & !(a.constant & b.constant),
        }
    }

    fn is_constant(&self) -> bool {
        self.constant == !0
    }

    /// Whether no bit is a constant.
    fn is_allocated(&self) -> bool {
        self.constant == 0
    }

    /// A word of 32 bits allocated with `value` (pushed by the caller).
    fn allocated(value: u32) -> Self {
        Word {
            value,
            constant: 0,
            negated: 0,
        }
    }
}

/// Pushes the bits of `bits` at the set bits of `mask`, least significant
/// first (what allocating exactly those bits of a word pushes).
#[inline]
fn push_masked<S: AuxSink + ?Sized>(bits: u32, mask: u32, aux: &mut S) {
    if mask == !0 {
        aux.push_bits(bits, 32);
    } else {
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            aux.push_bit(bits >> i & 1 == 1);
            m &= m - 1;
        }
    }
}

/// `UInt32::addmany` of 2 to 8 words.
fn addmany<S: AuxSink + ?Sized>(operands: &[Word], aux: &mut S) -> Word {
    debug_assert!((2..=8).contains(&operands.len()));
    let sum: u64 = operands.iter().map(|w| u64::from(w.value())).sum();
    if operands.iter().all(Word::is_constant) {
        return Word::constant(sum as u32);
    }
    let max = operands.len() as u64 * u64::from(u32::MAX);
    let result_bits = 64 - max.leading_zeros() as usize;
    // All the bits of the full sum; the carries past bit 31 are allocated
    // but not part of the word.
    aux.push_bits(sum as u32, 32);
    aux.push_bits((sum >> 32) as u32, result_bits - 32);
    Word::allocated(sum as u32)
}

/// `ch` or `maj` of three words, bit by bit in the gadget's order.
fn triop<S: AuxSink + ?Sized>(
    a: &Word,
    b: &Word,
    c: &Word,
    aux: &mut S,
    op: fn(Bit, Bit, Bit, &mut S) -> Bit,
) -> Word {
    Word::from_bits(std::array::from_fn(|i| {
        op(a.bit(i), b.bit(i), c.bit(i), aux)
    }))
}

/// `sha256_ch` of three words: with no constant bit, one allocated bit
/// each, the result's.
fn ch_word<S: AuxSink + ?Sized>(a: &Word, b: &Word, c: &Word, aux: &mut S) -> Word {
    if a.is_allocated() && b.is_allocated() && c.is_allocated() {
        let value = (a.value & b.value) ^ (!a.value & c.value);
        aux.push_bits(value, 32);
        Word::allocated(value)
    } else {
        triop(a, b, c, aux, ch)
    }
}

/// `sha256_maj` of three words: with no constant bit, per bit the result
/// and then `b and c`, interleaved.
fn maj_word<S: AuxSink + ?Sized>(a: &Word, b: &Word, c: &Word, aux: &mut S) -> Word {
    if a.is_allocated() && b.is_allocated() && c.is_allocated() {
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        let both = b.value & c.value;
        // Bit 2i the result's bit i, bit 2i + 1 `b and c`'s.
        let pairs = spread(value) | spread(both) << 1;
        aux.push_bits(pairs as u32, 32);
        aux.push_bits((pairs >> 32) as u32, 32);
        Word::allocated(value)
    } else {
        triop(a, b, c, aux, maj)
    }
}

/// The gadget's state register `a` or `e`: a word, or the operands of an
/// addition not done yet (the gadget defers it to fold it with the next
/// use); at most 7 operands, and one more when it is computed.
enum Deferred {
    Word(Word),
    Sum([Word; 8], usize),
}

impl Deferred {
    fn sum(operands: &[Word]) -> Self {
        let mut words = [Word::constant(0); 8];
        words[..operands.len()].copy_from_slice(operands);
        Deferred::Sum(words, operands.len())
    }

    fn compute<S: AuxSink + ?Sized>(self, more: Option<Word>, aux: &mut S) -> Word {
        match self {
            // As the gadget: a concrete word ignores `more`.
            Deferred::Word(w) => w,
            Deferred::Sum(mut operands, mut n) => {
                if let Some(m) = more {
                    operands[n] = m;
                    n += 1;
                }
                addmany(&operands[..n], aux)
            }
        }
    }
}

/// One SHA-256 compression of the 512 message bits `input` (most significant
/// bit of each word first, as the gadget takes them) from `state`, pushing
/// onto `aux` every value `sha256_compression_function` allocates, in its
/// order. Returns the new state.
///
/// # Panics
///
/// If `input` is not 512 bits.
pub fn compression<S: AuxSink + ?Sized>(
    input: &[Bit],
    state: &[Word; 8],
    aux: &mut S,
) -> [Word; 8] {
    assert_eq!(input.len(), 512, "a SHA-256 block is 512 bits");
    let mut w: Vec<Word> = input.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(&w[i - 15].rotr(18), aux);
        let s0 = s0.xor(&w[i - 15].shr(3), aux);
        let s1 = w[i - 2].rotr(17).xor(&w[i - 2].rotr(19), aux);
        let s1 = s1.xor(&w[i - 2].shr(10), aux);
        let next = addmany(&[w[i - 16], s0, w[i - 7], s1], aux);
        w.push(next);
    }

    let mut a = Deferred::Word(state[0]);
    let [mut b, mut c, mut d] = [state[1], state[2], state[3]];
    let mut e = Deferred::Word(state[4]);
    let [mut f, mut g, mut h] = [state[5], state[6], state[7]];
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(None, aux);
        let s1 = new_e.rotr(6).xor(&new_e.rotr(11), aux);
        let s1 = s1.xor(&new_e.rotr(25), aux);
        let ch = ch_word(&new_e, &f, &g, aux);
        let temp1 = [h, s1, ch, Word::constant(k), w[i]];

        let new_a = a.compute(None, aux);
        let s0 = new_a.rotr(2).xor(&new_a.rotr(13), aux);
        let s0 = s0.xor(&new_a.rotr(22), aux);
        let maj = maj_word(&new_a, &b, &c, aux);

        h = g;
        g = f;
        f = new_e;
        e = Deferred::sum(&[temp1[0], temp1[1], temp1[2], temp1[3], temp1[4], d]);
        d = c;
        c = b;
        b = new_a;
        a = Deferred::sum(&[temp1[0], temp1[1], temp1[2], temp1[3], temp1[4], s0, maj]);
    }

    let h0 = a.compute(Some(state[0]), aux);
    let h1 = addmany(&[state[1], b], aux);
    let h2 = addmany(&[state[2], c], aux);
    let h3 = addmany(&[state[3], d], aux);
    let h4 = e.compute(Some(state[4]), aux);
    let h5 = addmany(&[state[5], f], aux);
    let h6 = addmany(&[state[6], g], aux);
    let h7 = addmany(&[state[7], h], aux);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// SHA-256 of `message` (a whole number of bytes, most significant bit of
/// each byte first) as bellperson's `sha256` gadget computes it: padded
/// with constant bits (a one, zeros, the 64-bit length), then compressed
/// block by block from the constant IV. Pushes every allocated value onto
/// `aux` in the gadget's order and returns the 256 digest bits, most
/// significant bit of each word first.
///
/// # Panics
///
/// If `message` is not a whole number of bytes.
pub fn sha256<S: AuxSink + ?Sized>(message: &[Bit], aux: &mut S) -> Vec<Bit> {
    assert!(message.len() % 8 == 0, "a SHA-256 message is whole bytes");
    let length = message.len() as u64;
    let mut padded = Vec::with_capacity((message.len() + 64 + 1).div_ceil(512) * 512);
    padded.extend_from_slice(message);
    padded.push(Bit::Constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Constant(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Constant(length >> i & 1 == 1)));
    let mut state = IV.map(Word::constant);
    for block in padded.chunks(512) {
        state = compression(block, &state, aux);
    }
    state.iter().flat_map(|w| w.into_bits_be()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_sha256() {
        // SHA-256("abc"): one padded block from the IV, all bits constant:
        // the gadget folds everything, so nothing is allocated.
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        block[3] = 0x80;
        block[63] = 24;
        let bits: Vec<Bit> = block
            .iter()
            .flat_map(|byte| (0..8).rev().map(move |i| Bit::Constant(byte >> i & 1 == 1)))
            .collect();
        let mut aux: Vec<blstrs::Scalar> = Vec::new();
        let state = compression(&bits, &IV.map(Word::constant), &mut aux);
        assert!(aux.is_empty());
        assert_eq!(state[0].value(), 0xba78_16bf);
        assert_eq!(state[7].value(), 0xf200_15ad);
    }
}
