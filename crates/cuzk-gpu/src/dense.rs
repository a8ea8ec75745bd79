//! A's and B's scalars a chunk at a time, for a streamed key: a section's
//! scalars are its inputs (a few hundred) then the aux values at the set
//! bits of its density bitmap (in VRAM). Gathering them whole would hold
//! 4.2 GB (A's, at 32 GiB) beside H's scalars; a chunk's are gathered into
//! the chunk's scalar buffer instead, by rank, from the bitmap words that
//! hold the chunk's ranks (found here, on the host, from the set bits
//! before each word), with nothing uploaded per chunk (cuzk-cuda's
//! `RankedBitmap`: the bitmap and its word offsets go up once).

use cuzk_cuda::compact::CompactOnDevice;
use cuzk_cuda::gather::RankedBitmap;
use cuzk_cuda::DeviceBuffer;
use cuzk_field::limbs::FrLimbs;

/// A density bitmap with the number of set bits before each word, so the
/// words holding a run of set bits (by rank) are found by binary search.
pub(crate) struct DenseIndex {
    /// Set bits before word w, for w in 0..=words (bits past the bitmap's
    /// length not counted).
    before: Vec<usize>,
}

impl DenseIndex {
    pub(crate) fn new(words: &[u64], len: usize) -> Self {
        let words = &words[..len.div_ceil(64).min(words.len())];
        let mut before = Vec::with_capacity(words.len() + 1);
        let mut acc = 0;
        before.push(0);
        for (w, &word) in words.iter().enumerate() {
            acc += (word & live_bits(w, len)).count_ones() as usize;
            before.push(acc);
        }
        DenseIndex { before }
    }

    /// Set bits below `len`.
    pub(crate) fn ones(&self) -> usize {
        *self.before.last().expect("one entry per word and one more")
    }

    /// The words holding the set bits of rank `r0..r1` (`r0 < r1 ≤
    /// ones()`): the first and the last, inclusive.
    pub(crate) fn span(&self, r0: usize, r1: usize) -> (usize, usize) {
        assert!(
            r0 < r1 && r1 <= self.ones(),
            "ranks {r0}..{r1} of {}",
            self.ones()
        );
        // The word holding the set bit of rank r: the last w with before[w] ≤ r.
        let word_of = |r: usize| self.before.partition_point(|&b| b <= r) - 1;
        (word_of(r0), word_of(r1 - 1))
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

/// The aux values a section's scalars are gathered from, in VRAM.
#[derive(Clone, Copy)]
pub(crate) enum AuxValues<'a> {
    /// Every value in full (z's tail, when a, b, c were evaluated there).
    Full(&'a DeviceBuffer<FrLimbs>),
    /// Compact, read in place (a parked batch member's).
    Compact(&'a CompactOnDevice),
}

/// A section's scalars, gathered a chunk at a time: `inputs` first (on the
/// device), then the aux values (`aux`, in VRAM) at the set bits of the
/// bitmap (`index` on the host, `ranked` on the device).
pub(crate) struct DenseScalars<'a> {
    pub(crate) aux: AuxValues<'a>,
    pub(crate) inputs: DeviceBuffer<FrLimbs>,
    pub(crate) num_inputs: usize,
    pub(crate) index: DenseIndex,
    pub(crate) ranked: RankedBitmap,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// What the device's rank gather takes from words `span(r0, r1)`: the
    /// set bits whose rank (set bits before the word, plus those below it in
    /// the word) lies in r0..r1 — exactly the bits of those ranks, at the
    /// positions the whole bitmap has them (bits past `len` set in the last
    /// word, as a careless writer might leave them, ignored).
    #[test]
    fn spans_hold_exactly_their_ranks() {
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
            let ones = set.len();
            let ranges = [(0, 1), (0, ones), (3, 70), (63, 64), (ones - 1, ones)];
            let sizes = [1usize, 5, 64, 65, 200];
            let chunked = sizes
                .iter()
                .flat_map(|&c| (0..ones).step_by(c).map(move |r0| (r0, (r0 + c).min(ones))));
            for (r0, r1) in ranges.into_iter().chain(chunked) {
                let (w0, w1) = index.span(r0, r1);
                let mut got = Vec::new();
                for (w, &word) in words.iter().enumerate().take(w1 + 1).skip(w0) {
                    let word = word & live_bits(w, len);
                    for bit in 0..64 {
                        if word >> bit & 1 == 1 {
                            let rank = index.before[w]
                                + (word & ((1u64 << bit) - 1)).count_ones() as usize;
                            if (r0..r1).contains(&rank) {
                                got.push(w * 64 + bit);
                            }
                        }
                    }
                }
                assert_eq!(got, set[r0..r1], "len {len}, ranks {r0}..{r1}");
                // The span is no wider than it must be.
                assert!(got[0] / 64 == w0 && got[got.len() - 1] / 64 == w1);
            }
        }
    }

    #[test]
    fn live_bits_mask_the_tail() {
        assert_eq!(live_bits(0, 3), 0b111);
        assert_eq!(live_bits(1, 64), 0);
        assert_eq!(live_bits(1, 200), !0);
    }
}
