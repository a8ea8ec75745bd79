//! A's and B's scalars a chunk at a time, for a streamed key: a section's
//! scalars are its inputs (on the host, a few hundred) then the aux values
//! at the set bits of its density bitmap (in VRAM). Gathering them whole
//! would hold 4.2 GB (A's, at 32 GiB) beside H's scalars; a chunk's are
//! gathered into the chunk's scalar buffer instead, from the bitmap's words
//! that hold the chunk's ranks, the bits outside it cleared.

use cuzk_cuda::DeviceBuffer;
use cuzk_field::limbs::FrLimbs;
use cuzk_field::Fr;

/// A density bitmap with the number of set bits before each word, so the
/// words holding a run of set bits (by rank) are found by binary search.
pub(crate) struct DenseIndex<'a> {
    words: &'a [u64],
    /// Set bits before word w, for w in 0..=words.len().
    before: Vec<usize>,
    /// Bits the bitmap stands for (bits past it are ignored).
    len: usize,
}

impl<'a> DenseIndex<'a> {
    pub(crate) fn new(words: &'a [u64], len: usize) -> Self {
        let words = &words[..len.div_ceil(64).min(words.len())];
        let mut before = Vec::with_capacity(words.len() + 1);
        let mut acc = 0;
        before.push(0);
        for (w, &word) in words.iter().enumerate() {
            acc += (word & live_bits(w, len)).count_ones() as usize;
            before.push(acc);
        }
        DenseIndex { words, before, len }
    }

    /// Set bits below `len`.
    pub(crate) fn ones(&self) -> usize {
        *self.before.last().expect("one entry per word and one more")
    }

    /// The set bits of rank `r0..r1` (`r0 < r1 ≤ ones()`) as a bitmap from
    /// word `w0` on: `(w0, words, bits)`, every other bit cleared; `bits`
    /// is how many of the values from `64 · w0` the words stand for.
    pub(crate) fn chunk(&self, r0: usize, r1: usize) -> (usize, Vec<u64>, usize) {
        assert!(
            r0 < r1 && r1 <= self.ones(),
            "ranks {r0}..{r1} of {}",
            self.ones()
        );
        // The word holding the set bit of rank r: the last w with before[w] ≤ r.
        let word_of = |r: usize| self.before.partition_point(|&b| b <= r) - 1;
        let (w0, w1) = (word_of(r0), word_of(r1 - 1));
        let mut out: Vec<u64> = (w0..=w1)
            .map(|w| self.words[w] & live_bits(w, self.len))
            .collect();
        let last = out.len() - 1;
        out[last] = lowest_set_bits(out[last], r1 - self.before[w1]);
        out[0] = clear_lowest_set_bits(out[0], r0 - self.before[w0]);
        let bits = ((w1 + 1) * 64).min(self.len) - w0 * 64;
        (w0, out, bits)
    }
}

/// The bits of word `w` below `len`.
fn live_bits(w: usize, len: usize) -> u64 {
    match len.saturating_sub(w * 64) {
        0 => 0,
        keep if keep >= 64 => !0,
        keep => (1u64 << keep) - 1,
    }
}

/// The `k` lowest set bits of `word`.
fn lowest_set_bits(mut word: u64, k: usize) -> u64 {
    let mut kept = 0;
    for _ in 0..k {
        let low = word & word.wrapping_neg();
        kept |= low;
        word ^= low;
    }
    kept
}

/// `word` without its `k` lowest set bits.
fn clear_lowest_set_bits(mut word: u64, k: usize) -> u64 {
    for _ in 0..k {
        word &= word.wrapping_sub(1);
    }
    word
}

/// A section's scalars, gathered a chunk at a time: `inputs` first, then
/// the aux values (`aux`, in VRAM) at the set bits of `index`.
pub(crate) struct DenseScalars<'a> {
    pub(crate) aux: &'a DeviceBuffer<FrLimbs>,
    pub(crate) inputs: Vec<Fr>,
    pub(crate) index: DenseIndex<'a>,
}

impl DenseScalars<'_> {
    /// Scalars in the section.
    pub(crate) fn len(&self) -> usize {
        self.inputs.len() + self.index.ones()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// The chunks of every rank range hold exactly the bits of those ranks,
    /// at the positions the whole bitmap has them (bits past `len` set in
    /// the last word, as a careless writer might leave them, ignored).
    #[test]
    fn chunks_hold_exactly_their_ranks() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for (len, density) in [(1000usize, 0.5), (4096, 0.02), (777, 0.98), (130, 1.0)] {
            let mut words = vec![0u64; len.div_ceil(64)];
            let mut set = Vec::new();
            for i in 0..len {
                if rng.gen_bool(density) {
                    words[i / 64] |= 1 << (i % 64);
                    set.push(i);
                }
            }
            if len % 64 != 0 {
                *words.last_mut().unwrap() |= !0u64 << (len % 64);
            }
            let index = DenseIndex::new(&words, len);
            assert_eq!(index.ones(), set.len());
            let ranges = [
                (0, 1),
                (0, set.len()),
                (3, 70),
                (63, 64),
                (set.len() - 1, set.len()),
            ];
            let sizes = [1usize, 5, 64, 65, 200];
            let ones = set.len();
            let chunked = sizes
                .iter()
                .flat_map(|&c| (0..ones).step_by(c).map(move |r0| (r0, (r0 + c).min(ones))));
            for (r0, r1) in ranges.into_iter().chain(chunked) {
                let (w0, chunk, bits) = index.chunk(r0, r1);
                assert!(w0 * 64 + bits <= len);
                let got: Vec<usize> = (0..bits)
                    .filter(|&i| chunk[i / 64] >> (i % 64) & 1 == 1)
                    .map(|i| w0 * 64 + i)
                    .collect();
                assert_eq!(got, set[r0..r1], "len {len}, ranks {r0}..{r1}");
                // No stray bit past `bits` either (the kernel masks them, but
                // the words are what the test can see).
                let stray: u32 = chunk.iter().map(|w| w.count_ones()).sum();
                assert_eq!(stray as usize, r1 - r0);
            }
        }
    }

    #[test]
    fn set_bit_helpers() {
        assert_eq!(lowest_set_bits(0b1011_0110, 2), 0b0000_0110);
        assert_eq!(lowest_set_bits(0b1011_0110, 9), 0b1011_0110);
        assert_eq!(clear_lowest_set_bits(0b1011_0110, 2), 0b1011_0000);
        assert_eq!(clear_lowest_set_bits(0b1, 3), 0);
        assert_eq!(live_bits(0, 3), 0b111);
        assert_eq!(live_bits(1, 64), 0);
        assert_eq!(live_bits(1, 200), !0);
    }
}
