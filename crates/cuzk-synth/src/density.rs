//! Density bitmaps: which variables of one kind a Groth16 query needs.
//!
//! The prover's A, B (G1 and G2) MSMs only run over the variables that appear
//! in some constraint's A or B linear combination with a nonzero coefficient;
//! the proving key stores points for exactly those. A [`Density`] records that
//! set for one kind of variable (inputs or aux) and one query.

use std::fmt;

/// A bit vector with a cached count of set bits.
///
/// Representation: bit `i` is bit `i % 64` of word `i / 64` (least significant
/// bit first); bits of the last word at positions `>= len()` are always zero,
/// so [`Density::as_words`] can be handed to a popcount or a GPU kernel as is.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

const WORD_BITS: usize = u64::BITS as usize;

impl Density {
    /// An empty bitmap.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty bitmap with room for `bits` bits.
    pub fn with_capacity(bits: usize) -> Self {
        Self {
            words: Vec::with_capacity(bits.div_ceil(WORD_BITS)),
            len: 0,
            ones: 0,
        }
    }

    /// Builds a bitmap from `bools`, first element at index 0.
    pub fn from_bools<I: IntoIterator<Item = bool>>(bools: I) -> Self {
        let mut density = Self::new();
        for bit in bools {
            density.push(bit);
        }
        density
    }

    /// Builds a bitmap of `len` bits from words laid out as [`Density::as_words`]
    /// returns them.
    ///
    /// # Panics
    ///
    /// If `words` is not exactly `len.div_ceil(64)` long or a bit at or past
    /// `len` is set.
    pub fn from_words(words: Vec<u64>, len: usize) -> Self {
        assert_eq!(
            words.len(),
            len.div_ceil(WORD_BITS),
            "{len} bits need {} words",
            len.div_ceil(WORD_BITS)
        );
        if len % WORD_BITS != 0 {
            let last = words[words.len() - 1];
            assert_eq!(last >> (len % WORD_BITS), 0, "bits set past len {len}");
        }
        let ones = count_ones(&words);
        Self { words, len, ones }
    }

    /// Number of bits (variables tracked).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether bit `index` is set.
    ///
    /// # Panics
    ///
    /// If `index >= len()`.
    pub fn get(&self, index: usize) -> bool {
        assert!(index < self.len, "bit {index} of {}", self.len);
        self.words[index / WORD_BITS] >> (index % WORD_BITS) & 1 == 1
    }

    /// Number of set bits (kept up to date on every change, so O(1)).
    pub fn count_ones(&self) -> usize {
        self.ones
    }

    /// Indices of the set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * WORD_BITS + bit)
            })
        })
    }

    /// All bits in order, as booleans.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The backing words; see the type's documentation for the layout.
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Appends one bit.
    pub(crate) fn push(&mut self, bit: bool) {
        if self.len % WORD_BITS == 0 {
            self.words.push(0);
        }
        self.len += 1;
        if bit {
            self.set(self.len - 1);
        }
    }

    /// Sets bit `index` (bellperson's `DensityTracker::inc`).
    ///
    /// # Panics
    ///
    /// If `index >= len()`, as bellperson does.
    #[inline]
    pub(crate) fn set(&mut self, index: usize) {
        assert!(index < self.len, "density bit {index} of {}", self.len);
        let word = &mut self.words[index / WORD_BITS];
        let mask = 1u64 << (index % WORD_BITS);
        if *word & mask == 0 {
            *word |= mask;
            self.ones += 1;
        }
    }

    /// Appends `other` (bellperson's `DensityTracker::extend`).
    ///
    /// With `coalesce_first` (input densities), `other`'s bit 0 stands for the
    /// ONE input that both systems allocated: it is OR-ed into our bit 0 and
    /// not appended. Two quirks are kept for bit-for-bit agreement: an empty
    /// `other` changes nothing, and an empty `self` becomes a copy of `other`
    /// including its bit 0.
    pub(crate) fn extend(&mut self, other: &Density, coalesce_first: bool) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.clone_from(other);
            return;
        }
        let skip = usize::from(coalesce_first);
        let skipped_one = coalesce_first && other.get(0);
        if skipped_one {
            self.set(0);
        }
        self.append_bits(other, skip);
        self.ones += other.ones - usize::from(skipped_one);
    }

    /// Appends bits `from..` of `other` a word at a time (the bitmaps of a
    /// 2^27 partition hold ~130 M bits); leaves `ones` to the caller.
    /// ORs `other`'s first `shared` bits into ours (the same variables, a
    /// shared prefix) and appends the rest of `other`.
    ///
    /// # Panics
    ///
    /// If either bitmap is shorter than `shared`.
    pub(crate) fn merge_prefix_and_extend(&mut self, other: &Density, shared: usize) {
        assert!(
            shared <= self.len && shared <= other.len,
            "a shared prefix of {shared} bits, bitmaps of {} and {}",
            self.len,
            other.len
        );
        let full = shared / WORD_BITS;
        for (mine, theirs) in self.words[..full].iter_mut().zip(&other.words[..full]) {
            self.ones += (theirs & !*mine).count_ones() as usize;
            *mine |= theirs;
        }
        if shared % WORD_BITS != 0 {
            let mask = (1u64 << (shared % WORD_BITS)) - 1;
            let theirs = other.words[full] & mask;
            let mine = &mut self.words[full];
            self.ones += (theirs & !*mine).count_ones() as usize;
            *mine |= theirs;
        }
        if other.len > shared {
            let before = self.len;
            self.append_bits(other, shared);
            self.ones += count_ones_from(&self.words, before);
        }
    }

    fn append_bits(&mut self, other: &Density, from: usize) {
        let count = other.len - from;
        let shift = self.len % WORD_BITS;
        // Bit `from + 64 j ..` of `other` as one word (zeros past its end).
        let source = |j: usize| {
            let bit = from + j * WORD_BITS;
            let (w, b) = (bit / WORD_BITS, bit % WORD_BITS);
            let low = other.words.get(w).copied().unwrap_or(0) >> b;
            let high = match b {
                0 => 0,
                _ => other.words.get(w + 1).copied().unwrap_or(0) << (WORD_BITS - b),
            };
            low | high
        };
        let new_len = self.len + count;
        self.words
            .reserve(new_len.div_ceil(WORD_BITS) - self.words.len());
        for j in 0..count.div_ceil(WORD_BITS) {
            let word = source(j);
            if shift == 0 {
                self.words.push(word);
            } else {
                *self.words.last_mut().expect("shift > 0: a partial word") |= word << shift;
                self.words.push(word >> (WORD_BITS - shift));
            }
        }
        self.len = new_len;
        // Drop the spill word past the end and clear bits past `len`.
        self.words.truncate(new_len.div_ceil(WORD_BITS));
        if new_len % WORD_BITS != 0 {
            *self.words.last_mut().expect("len > 0") &= (1u64 << (new_len % WORD_BITS)) - 1;
        }
    }
}

/// Set bits at or past bit `from`.
fn count_ones_from(words: &[u64], from: usize) -> usize {
    let (w, b) = (from / WORD_BITS, from % WORD_BITS);
    let head = words
        .get(w)
        .map_or(0, |&word| (word >> b).count_ones() as usize);
    head + count_ones(words.get(w + 1..).unwrap_or(&[]))
}

fn count_ones(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

impl FromIterator<bool> for Density {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        Self::from_bools(iter)
    }
}

impl fmt::Debug for Density {
    /// Summarises: a PoRep partition's bitmaps hold ~10^8 bits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Density")
            .field("len", &self.len)
            .field("ones", &self.ones)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(pattern: &str) -> Density {
        pattern.chars().map(|c| c == '1').collect()
    }

    fn pattern(density: &Density) -> String {
        density.iter().map(|b| if b { '1' } else { '0' }).collect()
    }

    #[test]
    fn layout_is_lsb_first_and_count_is_cached() {
        let mut density = Density::from_bools((0..130).map(|i| i % 3 == 0));
        assert_eq!(density.len(), 130);
        assert_eq!(density.as_words().len(), 3);
        assert_eq!(density.as_words()[0] & 0b1111, 0b1001);
        assert_eq!(density.as_words()[2], 0b10, "bit 129 is bit 1 of word 2");
        assert_eq!(density.count_ones(), 44);
        assert_eq!(
            density.count_ones(),
            count_ones(density.as_words()),
            "cache agrees with popcount"
        );
        density.set(1);
        density.set(1);
        assert_eq!(density.count_ones(), 45, "setting a set bit counts once");
        let ones: Vec<usize> = density.iter_ones().collect();
        assert_eq!(&ones[..4], &[0, 1, 3, 6]);
        assert_eq!(ones.last(), Some(&129));
        assert_eq!(
            Density::from_words(density.as_words().to_vec(), 130),
            density
        );
    }

    #[test]
    #[should_panic(expected = "bits set past len")]
    fn from_words_rejects_bits_past_len() {
        Density::from_words(vec![0b100], 2);
    }

    #[test]
    fn extend_matches_density_tracker_semantics() {
        // (self, other, coalesce_first, expected)
        let cases = [
            ("101", "", false, "101"),
            ("", "011", true, "011"),
            ("101", "011", false, "101011"),
            ("001", "110", true, "10110"),
            ("101", "110", true, "10110"),
            ("100", "010", true, "10010"),
        ];
        for (mine, other, coalesce, expected) in cases {
            let mut density = bits(mine);
            density.extend(&bits(other), coalesce);
            assert_eq!(pattern(&density), expected, "{mine} + {other} ({coalesce})");
            assert_eq!(density, bits(expected), "{mine} + {other} ({coalesce})");
        }
        let long: Density = (0..200).map(|i| i % 7 == 1).collect();
        let mut density: Density = (0..61).map(|i| i % 5 == 0).collect();
        let expected: Density = density.iter().chain(long.iter().skip(1)).collect();
        density.extend(&long, true);
        assert_eq!(density, expected);
    }

    #[test]
    fn merge_prefix_and_extend_agrees_with_bit_by_bit_at_every_alignment() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut bit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % 3 == 0
        };
        for mine_len in [0, 1, 5, 63, 64, 65, 100, 128, 129] {
            for other_len in [0, 1, 7, 63, 64, 65, 130, 200] {
                for shared in [0, 1, 3, 63, 64, 65, 100] {
                    if shared > mine_len || shared > other_len {
                        continue;
                    }
                    let mine: Vec<bool> = (0..mine_len).map(|_| bit()).collect();
                    let other: Vec<bool> = (0..other_len).map(|_| bit()).collect();
                    let mut expected = mine.clone();
                    for (e, o) in expected.iter_mut().zip(&other[..shared]) {
                        *e |= o;
                    }
                    expected.extend(&other[shared..]);
                    let mut density: Density = mine.iter().copied().collect();
                    density.merge_prefix_and_extend(&other.iter().copied().collect(), shared);
                    let expected: Density = expected.into_iter().collect();
                    let case = format!("{mine_len} + {other_len} sharing {shared}");
                    assert_eq!(density, expected, "{case}");
                    assert_eq!(
                        density.count_ones(),
                        count_ones(density.as_words()),
                        "{case}"
                    );
                }
            }
        }
    }

    #[test]
    fn extend_agrees_with_bit_by_bit_appending_at_every_alignment() {
        // A fixed xorshift stream: the cases are many, not random per run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut bit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state & 3 == 0
        };
        for mine_len in (0..140).step_by(7).chain([63, 64, 65, 128]) {
            for other_len in (1..200).step_by(11).chain([1, 64, 65, 129]) {
                for coalesce in [false, true] {
                    let mine: Vec<bool> = (0..mine_len).map(|_| bit()).collect();
                    let other: Vec<bool> = (0..other_len).map(|_| bit()).collect();
                    let mut expected = mine.clone();
                    match (mine.is_empty(), coalesce) {
                        (true, _) => expected = other.clone(),
                        (false, true) => {
                            expected[0] |= other[0];
                            expected.extend(&other[1..]);
                        }
                        (false, false) => expected.extend(&other),
                    }
                    let mut density: Density = mine.iter().copied().collect();
                    density.extend(&other.iter().copied().collect(), coalesce);
                    let expected: Density = expected.into_iter().collect();
                    assert_eq!(density, expected, "{mine_len} + {other_len} ({coalesce})");
                    assert_eq!(density.count_ones(), count_ones(density.as_words()));
                }
            }
        }
    }
}
