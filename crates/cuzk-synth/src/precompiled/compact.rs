//! A witness born compact: [`CompactAux`] holds a bit-heavy aux vector as
//! a 2-bit class per value and only the values other than 0 and 1 in full,
//! so a 32 GiB PoRep partition's 130.2 M aux values (98.7% of them 0 or 1)
//! take ~86 MB instead of 4.2 GB. Native generators ([`crate::native`])
//! write it value by value, or 32 bits at a time, through [`AuxSink`];
//! [`CompactAssignment`] is the constraint system that does the same for
//! gadgets run witness-only and joins prefix-sharing pieces.
//!
//! The representation, in three vectors (value `j` of `len`):
//!
//! | vector | what |
//! | --- | --- |
//! | `codes: Vec<u64>`, ⌈len / 32⌉ words | value j's class in bits 2(j mod 32), 2(j mod 32) + 1 of word j / 32: [`ZERO`] (`Fr::ZERO`), [`ONE`] (`Fr::ONE`: blstrs' Montgomery one), [`OTHER`]; never 3; the bits past `len` in the last word are 0 |
//! | `before: Vec<u32>`, one per code word | the number of [`OTHER`] classes in all earlier code words |
//! | `others: Vec<Fr>` | the other values, in order |
//!
//! These are cuzk-cuda `packed`'s wire sections (codes, `before`, others),
//! kept apart so they can grow: a piece of that format is the three side by
//! side with `before` rebased to the piece's first word, which the GPU path
//! assembles straight from these vectors (no pass over 32-byte values);
//! cuzk-gpu's tests pin that the two agree. A value is [`ONE`] only when it
//! equals `Fr::ONE` exactly, so [`CompactAux::expand`] gives the values
//! pushed, bit for bit.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};

use super::{Witness, WitnessError};
use crate::prefix::{check_fits, PieceFault, Prefix, PrefixJoin};

/// The class of `Fr::ZERO`.
pub const ZERO: u64 = 0;
/// The class of `Fr::ONE`.
pub const ONE: u64 = 1;
/// The class of every other value (kept in full).
pub const OTHER: u64 = 2;

/// The high bit of every 2-bit class: set exactly for [`OTHER`].
const OTHER_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// Values per code word.
const PER_WORD: usize = 32;

/// Where a witness generator puts the aux values it computes, in
/// allocation order: a plain `Vec<Fr>` or a [`CompactAux`].
pub trait AuxSink {
    /// Values so far.
    fn len(&self) -> usize;

    /// Whether nothing was pushed.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An allocated bit: `Fr::ONE` or `Fr::ZERO`.
    fn push_bit(&mut self, bit: bool);

    /// The `n` bits of `bits` (n ≤ 32), least significant first: what
    /// `n` calls of [`AuxSink::push_bit`] push.
    fn push_bits(&mut self, bits: u32, n: usize) {
        debug_assert!(n <= 32);
        for i in 0..n {
            self.push_bit(bits >> i & 1 == 1);
        }
    }

    /// Any value (a bit's value too: it is classified exactly).
    fn push_value(&mut self, value: Fr);

    /// Values in order.
    fn push_values(&mut self, values: &[Fr]) {
        for &v in values {
            self.push_value(v);
        }
    }
}

impl AuxSink for Vec<Fr> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.push(if bit { Fr::ONE } else { Fr::ZERO });
    }

    #[inline]
    fn push_value(&mut self, value: Fr) {
        self.push(value);
    }

    fn push_values(&mut self, values: &[Fr]) {
        self.extend_from_slice(values);
    }
}

/// The class of `value`.
#[inline]
pub fn class_of(value: &Fr) -> u64 {
    if *value == Fr::ZERO {
        ZERO
    } else if *value == Fr::ONE {
        ONE
    } else {
        OTHER
    }
}

/// `bits`' low 32 bits spread to the even bits of a `u64`: bit i becomes
/// bit 2i, the 2-bit classes ([`ZERO`], [`ONE`]) of 32 bits.
#[inline(always)]
pub fn spread(bits: u32) -> u64 {
    let mut x = u64::from(bits);
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & 0x5555_5555_5555_5555
}

/// An aux vector held compactly (the representation is in the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactAux {
    len: usize,
    codes: Vec<u64>,
    before: Vec<u32>,
    others: Vec<Fr>,
}

/// Value counts of a [`CompactAux`] by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    /// `Fr::ZERO`s.
    pub zeros: usize,
    /// `Fr::ONE`s.
    pub ones: usize,
    /// The rest, kept in full.
    pub others: usize,
}

/// A [`CompactAux`] whose parts disagree: never built by pushing, only by
/// [`CompactAux::from_parts`] from outside data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The code words do not cover `len` values.
    #[error("{len} values need {expected} code words, the witness has {found}")]
    CodeWords {
        /// Values.
        len: usize,
        /// ⌈len / 32⌉.
        expected: usize,
        /// Code words given.
        found: usize,
    },
    /// Not one `before` count per code word.
    #[error("{expected} code words need as many before counts, the witness has {found}")]
    BeforeCounts {
        /// Code words.
        expected: usize,
        /// Counts given.
        found: usize,
    },
    /// A class 3, or a class past `len`.
    #[error("code word {word} holds a class that is not 0, 1 or 2 of a value below {len}")]
    BadClass {
        /// The word.
        word: usize,
        /// Values.
        len: usize,
    },
    /// A `before` count that disagrees with the codes.
    #[error(
        "code word {word}: its before count is {found}, its earlier words hold {expected} others"
    )]
    Before {
        /// The word.
        word: usize,
        /// Others in the earlier words.
        expected: u64,
        /// The count given.
        found: u32,
    },
    /// The codes' others and the values in full disagree.
    #[error("the codes mark {classes} values as others, the witness holds {values} in full")]
    Others {
        /// Class-2 codes.
        classes: usize,
        /// Values in full.
        values: usize,
    },
}

impl CompactAux {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty vector with room for `len` values, `others` of them in full.
    pub fn with_capacity(len: usize, others: usize) -> Self {
        let words = len.div_ceil(PER_WORD);
        CompactAux {
            len: 0,
            codes: Vec::with_capacity(words),
            before: Vec::with_capacity(words),
            others: Vec::with_capacity(others),
        }
    }

    /// The vector of `values`, classified.
    pub fn from_values(values: &[Fr]) -> Self {
        let others = values.par_iter().filter(|v| class_of(v) == OTHER).count();
        let mut aux = Self::with_capacity(values.len(), others);
        aux.push_values(values);
        aux
    }

    /// A vector from its parts (the module docs' layout), checked: every
    /// count, every class and every `before` count must agree.
    pub fn from_parts(
        len: usize,
        codes: Vec<u64>,
        before: Vec<u32>,
        others: Vec<Fr>,
    ) -> Result<Self, CompactError> {
        let aux = CompactAux {
            len,
            codes,
            before,
            others,
        };
        aux.check()?;
        Ok(aux)
    }

    /// Checks that the parts agree (always so for a vector made by pushing).
    pub fn check(&self) -> Result<(), CompactError> {
        let words = self.len.div_ceil(PER_WORD);
        if self.codes.len() != words {
            return Err(CompactError::CodeWords {
                len: self.len,
                expected: words,
                found: self.codes.len(),
            });
        }
        if self.before.len() != words {
            return Err(CompactError::BeforeCounts {
                expected: words,
                found: self.before.len(),
            });
        }
        let mut seen = 0u64;
        for (w, (&word, &before)) in self.codes.iter().zip(&self.before).enumerate() {
            let valid = match self.len - w * PER_WORD {
                n if n >= PER_WORD => !0u64,
                n => (1u64 << (2 * n)) - 1,
            };
            // A class 3 has both bits set.
            if word & !valid != 0 || word & (word >> 1) & 0x5555_5555_5555_5555 != 0 {
                return Err(CompactError::BadClass {
                    word: w,
                    len: self.len,
                });
            }
            if u64::from(before) != seen {
                return Err(CompactError::Before {
                    word: w,
                    expected: seen,
                    found: before,
                });
            }
            seen += u64::from((word & OTHER_BITS).count_ones());
        }
        if seen != self.others.len() as u64 {
            return Err(CompactError::Others {
                classes: seen as usize,
                values: self.others.len(),
            });
        }
        Ok(())
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The code words (module docs).
    pub fn codes(&self) -> &[u64] {
        &self.codes
    }

    /// The others in the code words before each one (module docs).
    pub fn before(&self) -> &[u32] {
        &self.before
    }

    /// The values other than 0 and 1, in order.
    pub fn others(&self) -> &[Fr] {
        &self.others
    }

    /// Values by class.
    pub fn counts(&self) -> ClassCounts {
        let ones = self
            .codes
            .par_iter()
            .map(|w| (w & !(w >> 1) & 0x5555_5555_5555_5555).count_ones() as usize)
            .sum();
        let others = self.others.len();
        ClassCounts {
            zeros: self.len - ones - others,
            ones,
            others,
        }
    }

    /// Bytes held (the vectors' lengths, not their capacity).
    pub fn bytes(&self) -> usize {
        self.codes.len() * 8 + self.before.len() * 4 + self.others.len() * 32
    }

    /// Bytes the vectors took from the allocator (their capacity).
    pub fn capacity_bytes(&self) -> usize {
        self.codes.capacity() * 8 + self.before.capacity() * 4 + self.others.capacity() * 32
    }

    /// Shrinks the vectors to their lengths (the others grow by doubling
    /// while a witness is made).
    pub fn shrink_to_fit(&mut self) {
        self.codes.shrink_to_fit();
        self.before.shrink_to_fit();
        self.others.shrink_to_fit();
    }

    /// Bytes a vector of `len` values, `others` of them in full, holds.
    pub fn bytes_for(len: usize, others: usize) -> usize {
        len.div_ceil(PER_WORD) * 12 + others * 32
    }

    /// Value `j`'s class.
    #[inline]
    fn class(&self, j: usize) -> u64 {
        self.codes[j / PER_WORD] >> (2 * (j % PER_WORD)) & 3
    }

    /// The index in `others` of the first other at or after value `j`
    /// (`j ≤ len`).
    fn rank(&self, j: usize) -> usize {
        let w = j / PER_WORD;
        match self.codes.get(w) {
            None => self.others.len(),
            Some(&word) => {
                let below = (1u64 << (2 * (j % PER_WORD))) - 1;
                self.before[w] as usize + (word & OTHER_BITS & below).count_ones() as usize
            }
        }
    }

    /// Value `j`, or `None` past the end.
    pub fn get(&self, j: usize) -> Option<Fr> {
        (j < self.len).then(|| match self.class(j) {
            ZERO => Fr::ZERO,
            ONE => Fr::ONE,
            _ => self.others[self.rank(j)],
        })
    }

    /// Every value in full, on rayon (the CPU prover's and the tests' form).
    pub fn expand(&self) -> Vec<Fr> {
        let mut out = Vec::new();
        self.expand_into(&mut out);
        out
    }

    /// Appends every value in full to `out`, on rayon.
    pub fn expand_into(&self, out: &mut Vec<Fr>) {
        out.par_extend(
            (0..self.len)
                .into_par_iter()
                .with_min_len(1 << 14)
                .map(|j| match self.class(j) {
                    ZERO => Fr::ZERO,
                    ONE => Fr::ONE,
                    _ => self.others[self.rank(j)],
                }),
        );
    }

    /// Starts a code word (`len` is a multiple of 32).
    #[inline]
    fn start_word(&mut self) {
        let before = match (self.codes.last(), self.before.last()) {
            (Some(&w), Some(&b)) => b + (w & OTHER_BITS).count_ones(),
            _ => 0,
        };
        self.codes.push(0);
        self.before.push(before);
    }

    /// Appends the `n` classes (n ≤ 32) in `classes` (class i in bits 2i,
    /// 2i + 1; zero above): the others among them must be pushed onto
    /// `others` by the caller, in order.
    #[inline]
    fn push_classes(&mut self, classes: u64, n: usize) {
        debug_assert!(n <= PER_WORD && (n == PER_WORD || classes >> (2 * n) == 0));
        if n == 0 {
            return;
        }
        let shift = 2 * (self.len % PER_WORD);
        if shift == 0 {
            self.start_word();
        }
        let last = self.codes.len() - 1;
        self.codes[last] |= classes << shift;
        if shift + 2 * n > 64 {
            self.start_word();
            self.codes[last + 1] = classes >> (64 - shift);
        }
        self.len += n;
    }

    /// Appends values `[from, other.len())` of `other`.
    pub fn extend_from(&mut self, other: &CompactAux, from: usize) {
        assert!(from <= other.len, "{from} past {} values", other.len);
        let first_other = other.rank(from);
        let mut j = from;
        // Up to the end of `from`'s word, then whole words.
        while j < other.len {
            let n = (PER_WORD - j % PER_WORD).min(other.len - j);
            let word = other.codes[j / PER_WORD] >> (2 * (j % PER_WORD));
            let classes = if n == PER_WORD {
                word
            } else {
                word & ((1u64 << (2 * n)) - 1)
            };
            self.push_classes(classes, n);
            j += n;
        }
        self.others.extend_from_slice(&other.others[first_other..]);
    }

    /// Whether values `[0, n)` of both are equal.
    fn prefix_equal(&self, other: &CompactAux, n: usize) -> bool {
        if n > self.len || n > other.len {
            return false;
        }
        let (whole, rest) = (n / PER_WORD, n % PER_WORD);
        if self.codes[..whole] != other.codes[..whole] {
            return false;
        }
        if rest > 0 {
            let mask = (1u64 << (2 * rest)) - 1;
            if (self.codes[whole] ^ other.codes[whole]) & mask != 0 {
                return false;
            }
        }
        let others = self.rank(n);
        others == other.rank(n) && self.others[..others] == other.others[..others]
    }

    /// Room for `additional` more values, `others` of them in full.
    pub fn reserve(&mut self, additional: usize, others: usize) {
        let words = (self.len + additional).div_ceil(PER_WORD) - self.codes.len();
        self.codes.reserve(words);
        self.before.reserve(words);
        self.others.reserve(others);
    }
}

impl AuxSink for CompactAux {
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.push_classes(u64::from(bit), 1);
    }

    #[inline]
    fn push_bits(&mut self, bits: u32, n: usize) {
        debug_assert!(n <= 32 && (n == 32 || bits >> n == 0));
        self.push_classes(spread(bits), n);
    }

    #[inline]
    fn push_value(&mut self, value: Fr) {
        let class = class_of(&value);
        if class == OTHER {
            self.others.push(value);
        }
        self.push_classes(class, 1);
    }
}

/// A witness with its aux values compact: inputs in full (ONE first), aux
/// as a [`CompactAux`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactWitness {
    /// Public inputs, ONE first.
    pub input_assignment: Vec<Fr>,
    /// Private (aux) variables.
    pub aux: CompactAux,
}

impl CompactWitness {
    /// The witness in full (every aux value 32 bytes), on rayon.
    pub fn expand(&self) -> Witness {
        Witness {
            input_assignment: self.input_assignment.clone(),
            aux_assignment: self.aux.expand(),
        }
    }

    /// The compact form of `witness`.
    pub fn from_witness(witness: &Witness) -> Self {
        CompactWitness {
            input_assignment: witness.input_assignment.clone(),
            aux: CompactAux::from_values(&witness.aux_assignment),
        }
    }

    /// Bytes held: the inputs and the compact aux.
    pub fn bytes(&self) -> usize {
        self.input_assignment.len() * 32 + self.aux.bytes()
    }
}

impl super::R1csRef<'_> {
    /// Checks that a compact witness fits the recording: its numbers of
    /// inputs and aux values (each error names both numbers), and that its
    /// class counts agree with what it holds ([`CompactAux::check`]).
    pub fn check_compact(&self, witness: &CompactWitness) -> Result<(), CompactWitnessError> {
        if witness.input_assignment.len() != self.shape.num_inputs {
            return Err(WitnessError::Inputs {
                expected: self.shape.num_inputs,
                found: witness.input_assignment.len(),
            }
            .into());
        }
        if witness.aux.len() != self.shape.num_aux {
            return Err(WitnessError::Aux {
                expected: self.shape.num_aux,
                found: witness.aux.len(),
            }
            .into());
        }
        witness.aux.check()?;
        Ok(())
    }
}

/// A compact witness that does not fit its recording, or whose parts
/// disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactWitnessError {
    /// Another shape than the recording's.
    #[error(transparent)]
    Shape(#[from] WitnessError),
    /// Parts that disagree.
    #[error("a malformed compact witness: {0}")]
    Parts(#[from] CompactError),
}

/// A constraint system that records only the values, the aux values
/// compactly: [`WitnessAssignment`](super::WitnessAssignment)'s twin for
/// native generators, which push onto [`CompactAssignment::aux_mut`]
/// directly, and for gadgets run witness-only among them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactAssignment {
    witness: CompactWitness,
}

impl CompactAssignment {
    /// An empty system; not even ONE is allocated.
    pub fn new() -> Self {
        Self::default()
    }

    /// The aux values so far, for native generators.
    pub fn aux_mut(&mut self) -> &mut CompactAux {
        &mut self.witness.aux
    }

    /// The values recorded.
    pub fn into_witness(self) -> CompactWitness {
        self.witness
    }
}

impl ConstraintSystem<Fr> for CompactAssignment {
    crate::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let aux = &mut self.witness.aux;
        aux.push_value(f()?);
        Ok(Variable::new_unchecked(Index::Aux(aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let inputs = &mut self.witness.input_assignment;
        inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _annotation: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`'s values; its input 0 is the ONE both allocated and
    /// is dropped.
    fn extend(&mut self, other: &Self) {
        self.witness
            .input_assignment
            .extend_from_slice(&other.witness.input_assignment[1..]);
        self.witness.aux.extend_from(&other.witness.aux, 0);
    }
}

impl PrefixJoin for CompactAssignment {
    /// Constraints are not kept: always 0.
    fn sizes(&self) -> Prefix {
        Prefix {
            inputs: self.witness.input_assignment.len(),
            aux: self.witness.aux.len(),
            constraints: 0,
        }
    }

    fn reserve(&mut self, additional: Prefix) {
        self.witness.input_assignment.reserve(additional.inputs);
        // The others' share is unknown here; they grow by doubling (a
        // PoRep partition's are 1.3% of its values).
        self.witness.aux.reserve(additional.aux, 0);
    }

    /// See [`PrefixJoin::join_past`]; the prefix's values must be equal in
    /// both.
    fn join_past(&mut self, piece: Self, prefix: Prefix) -> Result<(), PieceFault> {
        check_fits(prefix, self.sizes(), piece.sizes())?;
        let (mine, theirs) = (&mut self.witness, &piece.witness);
        let (i, x) = (prefix.inputs, prefix.aux);
        if mine.input_assignment[..i] != theirs.input_assignment[..i] {
            return Err(PieceFault::PrefixValues("inputs"));
        }
        if !mine.aux.prefix_equal(&theirs.aux, x) {
            return Err(PieceFault::PrefixValues("aux values"));
        }
        mine.input_assignment
            .extend_from_slice(&theirs.input_assignment[i..]);
        mine.aux.extend_from(&theirs.aux, x);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    /// Values of a PoRep-like mix: `other` in 256 of them in full.
    fn mixed(rng: &mut ChaCha20Rng, n: usize, other: u32) -> Vec<Fr> {
        (0..n)
            .map(|_| match rng.next_u32() % 256 {
                r if r < other => Fr::random(&mut *rng),
                r if r % 2 == 0 => Fr::ONE,
                _ => Fr::ZERO,
            })
            .collect()
    }

    /// Pushes `values` value by value, compares everything a compact
    /// vector answers with the values, and the parts with a fresh check.
    fn check(name: &str, values: &[Fr]) -> CompactAux {
        let aux = CompactAux::from_values(values);
        assert_eq!(aux.len(), values.len(), "{name}");
        assert_eq!(aux.expand(), values, "{name}: expand");
        for (j, v) in values.iter().enumerate() {
            assert_eq!(aux.get(j), Some(*v), "{name}: value {j}");
        }
        assert_eq!(aux.get(values.len()), None, "{name}");
        let others = values.iter().filter(|v| class_of(v) == OTHER).count();
        let ones = values.iter().filter(|v| **v == Fr::ONE).count();
        assert_eq!(
            aux.counts(),
            ClassCounts {
                zeros: values.len() - ones - others,
                ones,
                others
            },
            "{name}"
        );
        assert_eq!(aux.check(), Ok(()), "{name}");
        assert_eq!(aux.bytes(), CompactAux::bytes_for(values.len(), others));
        aux
    }

    #[test]
    fn round_trips_and_counts() {
        let mut rng = ChaCha20Rng::seed_from_u64(34);
        check("empty", &[]);
        // -1 and 2 are other values.
        check("minus one", &[-Fr::ONE, Fr::ONE, Fr::ZERO, Fr::from(2u64)]);
        for n in [1, 31, 32, 33, 64, 65, 1000, 4099] {
            check(&format!("{n} zeros"), &vec![Fr::ZERO; n]);
            check(&format!("{n} ones"), &vec![Fr::ONE; n]);
            check(&format!("{n} others"), &mixed(&mut rng, n, 256));
            check(&format!("{n} mixed"), &mixed(&mut rng, n, 4));
        }
        // The PoRep share of others: 1.3%.
        check("PoRep mix", &mixed(&mut rng, 100_003, 3));
    }

    #[test]
    fn bits_pushed_at_any_offset_are_bits_pushed_one_by_one() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for lead in 0..70 {
            let head = mixed(&mut rng, lead, 32);
            let (mut by_bits, mut one_by_one) = (
                CompactAux::from_values(&head),
                CompactAux::from_values(&head),
            );
            let mut values = head.clone();
            for n in [32, 0, 1, 7, 31, 32, 33 % 32, 17, 32] {
                let bits = if n == 32 {
                    rng.next_u32()
                } else {
                    rng.next_u32() & ((1 << n) - 1)
                };
                by_bits.push_bits(bits, n);
                AuxSink::push_bits(&mut values, bits, n);
                for i in 0..n {
                    one_by_one.push_bit(bits >> i & 1 == 1);
                }
                by_bits.push_value(Fr::from(3u64));
                one_by_one.push_value(Fr::from(3u64));
                values.push(Fr::from(3u64));
            }
            assert_eq!(by_bits, one_by_one, "after {lead}");
            assert_eq!(by_bits.expand(), values, "after {lead}");
            assert_eq!(by_bits.check(), Ok(()));
        }
    }

    #[test]
    fn extends_past_any_point_as_pushing_the_rest() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let a = mixed(&mut rng, 77, 40);
        let b = mixed(&mut rng, 300, 40);
        let (ca, cb) = (CompactAux::from_values(&a), CompactAux::from_values(&b));
        for from in [0, 1, 31, 32, 33, 64, 100, 299, 300] {
            let mut joined = ca.clone();
            joined.extend_from(&cb, from);
            let mut values = a.clone();
            values.extend_from_slice(&b[from..]);
            assert_eq!(joined, CompactAux::from_values(&values), "from {from}");
        }
    }

    #[test]
    fn prefixes_compare_by_value() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let a = mixed(&mut rng, 100, 40);
        let mut b = a[..70].to_vec();
        b.extend(mixed(&mut rng, 50, 40));
        let (ca, cb) = (CompactAux::from_values(&a), CompactAux::from_values(&b));
        let first_difference = (0..100).find(|&j| a[j] != b[j]).unwrap();
        for n in 0..=100 {
            assert_eq!(ca.prefix_equal(&cb, n), n <= first_difference, "{n}");
        }
        assert!(!ca.prefix_equal(&cb, 101), "past the end");
    }

    #[test]
    fn parts_that_disagree_are_refused_naming_both_numbers() {
        let values = [Fr::ONE, Fr::from(5u64), Fr::ZERO, Fr::from(6u64)];
        let aux = CompactAux::from_values(&values);
        let parts = || {
            (
                aux.len(),
                aux.codes().to_vec(),
                aux.before().to_vec(),
                aux.others().to_vec(),
            )
        };
        let (len, codes, before, others) = parts();
        assert_eq!(
            CompactAux::from_parts(len, codes, before, others),
            Ok(aux.clone())
        );
        let (len, codes, before, _) = parts();
        let short = CompactAux::from_parts(len, codes, before, vec![Fr::from(5u64)]);
        assert_eq!(
            short,
            Err(CompactError::Others {
                classes: 2,
                values: 1
            })
        );
        assert_eq!(
            short.unwrap_err().to_string(),
            "the codes mark 2 values as others, the witness holds 1 in full"
        );
        let (_, codes, before, others) = parts();
        assert_eq!(
            CompactAux::from_parts(33, codes, before, others),
            Err(CompactError::CodeWords {
                len: 33,
                expected: 2,
                found: 1
            })
        );
        let (len, mut codes, before, others) = parts();
        codes[0] |= 3 << 8;
        assert_eq!(
            CompactAux::from_parts(len, codes, before, others),
            Err(CompactError::BadClass { word: 0, len: 4 })
        );
        let (len, codes, _, others) = parts();
        assert_eq!(
            CompactAux::from_parts(len, codes, vec![1], others),
            Err(CompactError::Before {
                word: 0,
                expected: 0,
                found: 1
            })
        );
    }

    #[test]
    fn the_assignment_joins_pieces_past_their_prefix() {
        let mut rng = ChaCha20Rng::seed_from_u64(13);
        let preamble = mixed(&mut rng, 45, 40);
        let pieces: Vec<Vec<Fr>> = (0..3).map(|_| mixed(&mut rng, 90, 40)).collect();
        let system = |own: &[Fr]| {
            let mut cs = CompactAssignment::new();
            cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
            for v in preamble.iter().chain(own) {
                cs.alloc(|| "v", || Ok(*v)).unwrap();
            }
            cs.alloc_input(|| "in", || Ok(own[0])).unwrap();
            cs
        };
        let prefix = Prefix {
            inputs: 1,
            aux: preamble.len(),
            constraints: 0,
        };
        let mut joined = system(&pieces[0]);
        for p in &pieces[1..] {
            joined.join_past(system(p), prefix).unwrap();
        }
        let w = joined.into_witness();
        let mut aux = preamble.clone();
        aux.extend(pieces.iter().flatten());
        assert_eq!(w.aux.expand(), aux);
        assert_eq!(
            w.input_assignment,
            [Fr::ONE, pieces[0][0], pieces[1][0], pieces[2][0]]
        );
        // A piece whose preamble differs in its last value is refused.
        let mut first = system(&pieces[0]);
        let mut changed = CompactAssignment::new();
        changed.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        for (j, v) in preamble.iter().enumerate() {
            let v = if j == preamble.len() - 1 {
                *v + Fr::ONE
            } else {
                *v
            };
            changed.alloc(|| "v", || Ok(v)).unwrap();
        }
        assert!(matches!(
            first.join_past(changed, prefix),
            Err(PieceFault::PrefixValues("aux values"))
        ));
    }
}
