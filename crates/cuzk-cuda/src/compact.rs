//! A compact vector kept on the device and read in place
//! (kernels/prover/expand.cu): the three sections of a [`Classed`] vector
//! (a 2-bit class per value, the others before each code word, the other
//! values in full) as three device arrays. A batch member's aux values
//! through a streamed key's pass take ~0.1 GB this way instead of 4.2 GB
//! at 32 GiB: L's chunks are expanded from it ([`CompactOnDevice::expand_span`])
//! and A's and B's gathered from it by rank
//! ([`RankedBitmap::gather_compact`](crate::gather::RankedBitmap::gather_compact)).
//!
//! [`value`] is the CPU reference of the kernels' read.

use cuzk_field::limbs::FrLimbs;

use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::DevPtr;
use crate::packed::{Classed, MONT_ONE};

/// A [`Classed`] vector's sections in VRAM.
pub struct CompactOnDevice {
    codes: DeviceBuffer<u64>,
    before: DeviceBuffer<u32>,
    others: DeviceBuffer<FrLimbs>,
    len: usize,
    nothers: usize,
}

impl std::fmt::Debug for CompactOnDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactOnDevice")
            .field("len", &self.len)
            .field("others", &self.nothers)
            .finish()
    }
}

const THREADS: u32 = 256;

impl CompactOnDevice {
    /// Device bytes of a vector of `len` values with `others` of them in
    /// full (three arena regions).
    pub fn bytes_for(len: usize, others: usize) -> u64 {
        let words = len.div_ceil(32).max(1) as u64;
        words * 8 + words * 4 + others.max(1) as u64 * 32 + 3 * crate::arena::ALIGN
    }

    /// Room for `len` values with `others` of them in full, on `s`'s
    /// device, to be filled by [`CompactOnDevice::sections_mut`].
    pub fn alloc(s: &Stream, len: usize, others: usize) -> Result<Self> {
        let words = len.div_ceil(32).max(1);
        Ok(CompactOnDevice {
            codes: s.alloc_uninit(words)?,
            before: s.alloc_uninit(words)?,
            others: s.alloc_uninit(others.max(1))?,
            len,
            nothers: others,
        })
    }

    /// `c`'s sections uploaded on `s` (from pageable memory), after
    /// [`Classed::check`]: a malformed vector is refused before any of it
    /// crosses.
    pub fn upload(s: &Stream, c: &Classed<'_>) -> Result<Self> {
        c.check()?;
        let mut d = Self::alloc(s, c.len, c.others.len())?;
        let (codes, before, others) = d.sections_mut();
        s.upload_at(c.codes, codes, 0)?;
        s.upload_at(c.before, before, 0)?;
        s.upload_at(c.others, others, 0)?;
        Ok(d)
    }

    /// The code words, the before counts and the others, to be filled with
    /// a [`Classed`] vector's (checked by [`Classed::check`]) of the
    /// length and others count [`CompactOnDevice::alloc`] was given.
    pub fn sections_mut(
        &mut self,
    ) -> (
        &mut DeviceBuffer<u64>,
        &mut DeviceBuffer<u32>,
        &mut DeviceBuffer<FrLimbs>,
    ) {
        (&mut self.codes, &mut self.before, &mut self.others)
    }

    /// Values it stands for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it stands for no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Values held in full.
    pub fn others(&self) -> usize {
        self.nothers
    }

    /// The kernels' first four arguments: codes, before, others, their count.
    pub(crate) fn args(&self) -> (DevPtr<u64>, DevPtr<u32>, DevPtr<FrLimbs>, u32) {
        (
            self.codes.arg(),
            self.before.arg(),
            self.others.arg(),
            self.nothers as u32,
        )
    }

    /// Queues `out[i]` = value `start + i` for `i < n`, zero for `n ≤ i <
    /// out.len()`: a chunk's scalars, padded, expanded in place.
    pub fn expand_span(
        &self,
        s: &Stream,
        start: usize,
        n: usize,
        out: &mut DeviceBuffer<FrLimbs>,
    ) -> Result<()> {
        let kernel = decl::prover_expand_span.name();
        let total = out.len();
        ensure(
            kernel,
            start.checked_add(n).is_some_and(|e| e <= self.len)
                && n <= total
                && u32::try_from(self.len).is_ok()
                && u32::try_from(total).is_ok(),
            || {
                format!(
                    "values {start}..{} of {} into a buffer of {total}",
                    start.saturating_add(n),
                    self.len
                )
            },
        )?;
        if total == 0 {
            return Ok(());
        }
        let (codes, before, others, nothers) = self.args();
        let args = (
            codes,
            before,
            others,
            nothers,
            start as u32,
            n as u32,
            out.arg_mut(),
            total as u32,
        );
        #[allow(unsafe_code)]
        // SAFETY: reads values below start + n ≤ len: code words and before
        // counts below ⌈len / 32⌉ (both arrays hold that many), others below
        // `nothers` (a rank past them is not read); writes out[0..total).
        unsafe {
            s.launch(
                decl::prover_expand_span,
                grid((total as u32).div_ceil(THREADS).clamp(1, 1 << 16), THREADS),
                args,
                || format!("values {start}..{} of {}", start + n, self.len),
            )
        }
    }
}

/// Value `j` of a [`Classed`] vector, read as the kernels read it: its
/// class from its code word, an other by its rank (the others of earlier
/// words, then those below it in its word); a rank past the others reads
/// zero. `j < c.len`.
pub fn value(c: &Classed<'_>, j: usize) -> FrLimbs {
    let (w, shift) = (j / 32, 2 * (j % 32));
    let word = c.codes[w];
    match (word >> shift) & 3 {
        0 => FrLimbs([0; 4]),
        1 => MONT_ONE,
        _ => {
            let other_bits = (word >> 1) & 0x5555_5555_5555_5555;
            let below = (other_bits & ((1u64 << shift) - 1)).count_ones() as usize;
            let rank = c.before[w] as usize + below;
            c.others.get(rank).copied().unwrap_or(FrLimbs([0; 4]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::{expand, pack};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// A vector's sections as a whole [`Classed`]: the packed piece's code
    /// words and others, the before counts unpaired.
    fn sections(values: &[FrLimbs]) -> (Vec<u64>, Vec<u32>, Vec<FrLimbs>) {
        let p = pack(values);
        let cw = p.layout.code_words();
        let codes = p.words[..cw].to_vec();
        let before = (0..cw)
            .map(|w| (p.words[cw + w / 2] >> (32 * (w % 2))) as u32)
            .collect();
        let others = p.words[p.layout.others_at()..p.layout.words()]
            .chunks_exact(4)
            .map(|l| FrLimbs([l[0], l[1], l[2], l[3]]))
            .collect();
        (codes, before, others)
    }

    /// The kernels' read of every value, at every position of a word and
    /// across words, equals the packed form's expansion (the device's
    /// z expansion, itself checked against the input): mostly zeros and
    /// ones with others at 1.3%, all others, none, and a short tail word.
    #[test]
    fn values_read_in_place_are_the_vector() {
        let mut rng = ChaCha20Rng::seed_from_u64(34);
        for (n, other) in [(1000usize, 0.013), (333, 1.0), (64, 0.0), (4097, 0.3)] {
            let values: Vec<FrLimbs> = (0..n)
                .map(|_| match rng.gen_range(0.0..1.0) {
                    x if x < other => {
                        FrLimbs([rng.gen(), rng.gen(), rng.gen(), rng.gen::<u64>() >> 3])
                    }
                    x if x < (1.0 + other) / 2.0 => MONT_ONE,
                    _ => FrLimbs([0; 4]),
                })
                .collect();
            let (codes, before, others) = sections(&values);
            let c = Classed {
                len: n,
                codes: &codes,
                before: &before,
                others: &others,
            };
            c.check().expect("the sections agree");
            let expanded = expand(&pack(&values).words, n).expect("well formed");
            assert_eq!(expanded, values);
            for (j, v) in values.iter().enumerate() {
                assert_eq!(value(&c, j), *v, "n {n}, value {j}");
            }
        }
    }

    #[test]
    fn bytes_count_every_section() {
        // 130,169,893 aux values, 1.69 M others: a 32 GiB PoRep partition's.
        let b = CompactOnDevice::bytes_for(130_169_893, 1_690_000);
        assert!(b > 48_800_000 + 54_080_000 && b < 103_500_000, "{b}");
    }
}
