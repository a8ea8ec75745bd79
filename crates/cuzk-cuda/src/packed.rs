//! A witness vector packed for upload, expanded on the device
//! (kernels/prover/expand.cu). Most values of a bit-heavy witness are 0 or 1
//! (a 32 GiB PoRep partition's aux: 51% zero, 47% one, 1.3% other), so the
//! host sends a 2-bit class per value and only the other values in full:
//! ~86 MB instead of 4.2 GB there.
//!
//! The packed form of `len` values (a *piece*) is one `u64` array, the wire
//! format that crosses PCIe as it is (see [`PackedLayout`]):
//!
//! | words | what |
//! | --- | --- |
//! | `[0, cw)`, cw = ⌈len / 32⌉ | codes: value j's class in bits 2(j mod 32), 2(j mod 32) + 1 of word j / 32: 0 zero, 1 one ([`MONT_ONE`]), 2 other |
//! | `[cw, cw + ⌈cw / 2⌉)` | before: one `u32` per code word (little-endian pairs, low half first), the others in all earlier code words |
//! | from `others_at` (even, so 16-byte aligned) | the other values in order, 4 words each ([`FrLimbs`]' limbs) |
//!
//! A value is "one" only when its limbs are exactly those of `Fr::ONE`
//! (Montgomery form); the limbs `[1, 0, 0, 0]` are another field element
//! and travel in full. Classes are exact comparisons, so the expanded
//! vector is the input bit for bit.
//!
//! [`pack_into`] writes a piece into a caller's buffer (a pinned staging
//! buffer, so the host reads each value once and writes only the packed
//! bytes); [`pack`] makes an owned [`Packed`]; [`expand`] is the CPU
//! reference of the device's [`expand_on_device`].
//!
//! A witness born compact (cuzk-synth's `CompactAux`) already holds the
//! three sections, for the whole vector: [`Classed`] borrows them, and
//! [`Classed::write_piece`] lays any run of its code words out as a piece
//! (the codes and others copied, the `before` counts rebased), with no pass
//! over 32-byte values.

use cuzk_field::limbs::FrLimbs;
use rayon::prelude::*;

use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};

/// 1 in Montgomery form: R = 2^256 mod r, r the BLS12-381 scalar field's
/// order, as little-endian limbs (the limbs of blstrs' `Scalar::ONE`; a
/// test pins them).
pub const MONT_ONE: FrLimbs = FrLimbs([
    0x0000_0001_ffff_fffe,
    0x5884_b7fa_0003_4802,
    0x998c_4fef_ecbc_4ff5,
    0x1824_b159_acc5_056f,
]);

/// The high bit of every 2-bit class: set exactly for the others.
const OTHER_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// Code words per rayon task: 65,536 values (2 MiB of input). Even, so a
/// task's `before` entries fill whole words.
const TASK_WORDS: usize = 2048;

/// Where the sections of a packed piece of `len` values with `others`
/// other values lie, in `u64` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedLayout {
    /// Values the piece stands for.
    pub len: usize,
    /// Values that travel in full.
    pub others: usize,
}

impl PackedLayout {
    /// Code words (32 values each).
    pub fn code_words(&self) -> usize {
        self.len.div_ceil(32)
    }

    /// The word where the `before` counts start.
    pub fn before_at(&self) -> usize {
        self.code_words()
    }

    /// The word where the other values start (even: fr_t is 16-byte aligned).
    pub fn others_at(&self) -> usize {
        (self.code_words() + self.code_words().div_ceil(2)).next_multiple_of(2)
    }

    /// Words of the whole piece.
    pub fn words(&self) -> usize {
        self.others_at() + 4 * self.others
    }

    /// Bytes of the whole piece.
    pub fn bytes(&self) -> usize {
        self.words() * 8
    }
}

/// The most words a packed piece of `len` values may take for its upload
/// to pay: one per value, a quarter of the plain bytes (so the piece
/// packs when fewer than ~24% of its values are others). Packing reads the
/// values once either way; past this the saved transfer no longer covers a
/// piece that turns out not to pay and is then copied plainly.
pub const fn budget_words(len: usize) -> usize {
    len
}

/// A value's class: 0 zero, 1 one, 2 other (branch-free: the host's pass
/// over 4.2 GB should run at the memory's rate).
#[inline(always)]
fn class(v: &FrLimbs) -> u64 {
    let [a, b, c, d] = v.0;
    let [o0, o1, o2, o3] = MONT_ONE.0;
    let nonzero = (a | b | c | d) != 0;
    let one = ((a ^ o0) | (b ^ o1) | (c ^ o2) | (d ^ o3)) == 0;
    u64::from(nonzero) + u64::from(nonzero & !one)
}

/// The code word of up to 32 values (a full word unrolled, constant shifts).
#[inline]
fn code_word(values: &[FrLimbs]) -> u64 {
    match <&[FrLimbs; 32]>::try_from(values) {
        Ok(full) => (0..32).fold(0, |w, i| w | class(&full[i]) << (2 * i)),
        Err(_) => values
            .iter()
            .enumerate()
            .fold(0, |w, (i, v)| w | class(v) << (2 * i)),
    }
}

/// Packs `values` into `out` (the format in the module docs); the layout,
/// or `None` (`out` then holds garbage) when the piece needs more than
/// `out.len()` words. Runs on the current rayon pool: codes and counts per
/// task, then each task's `before` counts and others at its offset (the
/// values are read once, the others twice).
pub fn pack_into(values: &[FrLimbs], out: &mut [u64]) -> Option<PackedLayout> {
    let empty = PackedLayout {
        len: values.len(),
        others: 0,
    };
    let room = out.len();
    if room < empty.others_at() {
        return None;
    }
    let (head, tail) = out.split_at_mut(empty.others_at());
    let (codes, before) = head.split_at_mut(empty.before_at());
    // Without the alignment word, so that its tasks are the codes' tasks.
    let before = &mut before[..empty.code_words().div_ceil(2)];
    let counts: Vec<usize> = codes
        .par_chunks_mut(TASK_WORDS)
        .zip(values.par_chunks(32 * TASK_WORDS))
        .map(|(codes, values)| {
            codes
                .iter_mut()
                .zip(values.chunks(32))
                .map(|(c, v)| {
                    *c = code_word(v);
                    (*c & OTHER_BITS).count_ones() as usize
                })
                .sum()
        })
        .collect();
    let layout = PackedLayout {
        others: counts.iter().sum(),
        ..empty
    };
    if layout.words() > room {
        return None;
    }
    // Each task's share of the others section, and the others before it.
    let mut rest = &mut tail[..4 * layout.others];
    let mut shares = Vec::with_capacity(counts.len());
    let mut first = 0usize;
    for &c in &counts {
        let (share, more) = rest.split_at_mut(4 * c);
        shares.push((share, first));
        rest = more;
        first += c;
    }
    before
        .par_chunks_mut(TASK_WORDS / 2)
        .zip(codes.par_chunks(TASK_WORDS))
        .zip(values.par_chunks(32 * TASK_WORDS))
        .zip(shares)
        .for_each(|(((before, codes), values), (share, first))| {
            let mut running = first;
            let mut next = 0;
            for (k, (&word, values)) in codes.iter().zip(values.chunks(32)).enumerate() {
                let count = running as u64; // < 2^32: pieces are u32-indexed
                if k % 2 == 0 {
                    before[k / 2] = count;
                } else {
                    before[k / 2] |= count << 32;
                }
                let mut bits = word & OTHER_BITS;
                while bits != 0 {
                    let v = &values[bits.trailing_zeros() as usize / 2];
                    share[next..next + 4].copy_from_slice(&v.0);
                    next += 4;
                    bits &= bits - 1;
                }
                running += (word & OTHER_BITS).count_ones() as usize;
            }
        });
    Some(layout)
}

/// A packed piece with its own words (for uploads from pageable memory and
/// for tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    /// Where each value's bits are in `words`.
    pub layout: PackedLayout,
    /// The packed bits, 64 per word.
    pub words: Vec<u64>,
}

/// Packs `values` into exactly the words they need (the values are read
/// once to count the others first). Pieces are indexed in `u32`: at most
/// 2^32 − 1 values.
pub fn pack(values: &[FrLimbs]) -> Packed {
    let others = values
        .par_chunks(32 * TASK_WORDS)
        .map(|v| v.iter().filter(|v| class(v) == 2).count())
        .sum();
    let layout = PackedLayout {
        len: values.len(),
        others,
    };
    let mut words = vec![0u64; layout.words()];
    let packed = pack_into(values, &mut words);
    debug_assert_eq!(packed, Some(layout));
    Packed { layout, words }
}

/// The values a packed piece of `len` values stands for (the CPU reference
/// of [`expand_on_device`]); `None` when `words` is not such a piece (too
/// short, a class 3, a count that disagrees with the codes).
pub fn expand(words: &[u64], len: usize) -> Option<Vec<FrLimbs>> {
    let empty = PackedLayout { len, others: 0 };
    let tail = words.len().checked_sub(empty.others_at())?;
    if tail % 4 != 0 {
        return None;
    }
    let layout = PackedLayout {
        others: tail / 4,
        ..empty
    };
    let mut out = Vec::with_capacity(len);
    let mut rank = 0usize;
    for (w, &word) in words[..layout.code_words()].iter().enumerate() {
        let before = (words[layout.before_at() + w / 2] >> (32 * (w % 2))) as u32;
        if before as usize != rank {
            return None;
        }
        for i in 0..32.min(len - 32 * w) {
            out.push(match (word >> (2 * i)) & 3 {
                0 => FrLimbs::default(),
                1 => MONT_ONE,
                2 => {
                    let at = layout.others_at() + 4 * rank;
                    rank += 1;
                    FrLimbs(words.get(at..at + 4)?.try_into().ok()?)
                }
                _ => return None,
            });
        }
    }
    (rank == layout.others).then_some(out)
}

/// A whole vector already in classes (cuzk-synth's `CompactAux`): the
/// three sections of the module docs for all `len` values, `before` as
/// `u32`s counted from the vector's first value.
#[derive(Clone, Copy, Debug)]
pub struct Classed<'a> {
    /// Values.
    pub len: usize,
    /// ⌈len / 32⌉ code words.
    pub codes: &'a [u64],
    /// One count per code word: the others in all earlier words.
    pub before: &'a [u32],
    /// The other values, in order.
    pub others: &'a [FrLimbs],
}

impl Classed<'_> {
    /// Checks that the sections agree: ⌈len / 32⌉ code words, as many
    /// counts, no class 3 and no class past `len`, every count the others
    /// of the earlier words, and as many others as the codes mark. Each
    /// error names both numbers. A compact witness is checked this way
    /// before any of it is uploaded.
    pub fn check(&self) -> Result<()> {
        let kernel = "prover_expand_z";
        let words = self.len.div_ceil(32);
        ensure(kernel, self.codes.len() == words, || {
            format!(
                "{} values need {words} code words, the compact witness has {}",
                self.len,
                self.codes.len()
            )
        })?;
        ensure(kernel, self.before.len() == words, || {
            format!(
                "{words} code words need as many before counts, the compact witness has {}",
                self.before.len()
            )
        })?;
        let mut seen = 0u64;
        for (w, (&word, &before)) in self.codes.iter().zip(self.before).enumerate() {
            let valid = match self.len - 32 * w {
                n if n >= 32 => !0u64,
                n => (1u64 << (2 * n)) - 1,
            };
            ensure(
                kernel,
                word & !valid == 0 && word & (word >> 1) & (OTHER_BITS >> 1) == 0,
                || {
                    format!(
                        "code word {w} holds a class other than 0, 1, 2 of a value below {}",
                        self.len
                    )
                },
            )?;
            ensure(kernel, u64::from(before) == seen, || {
                format!("code word {w}: its before count is {before}, its earlier words mark {seen} others")
            })?;
            seen += u64::from((word & OTHER_BITS).count_ones());
        }
        ensure(kernel, seen == self.others.len() as u64, || {
            format!(
                "the codes mark {seen} others, the compact witness holds {} values in full",
                self.others.len()
            )
        })
    }

    /// The others in code words `[0, w)`.
    fn others_before(&self, w: usize) -> usize {
        match self.before.get(w) {
            Some(&b) => b as usize,
            None => self.others.len(),
        }
    }

    /// The layout of the piece of code words `[w0, w1)`.
    pub fn piece_layout(&self, w0: usize, w1: usize) -> PackedLayout {
        PackedLayout {
            len: (32 * w1).min(self.len) - 32 * w0,
            others: self.others_before(w1) - self.others_before(w0),
        }
    }

    /// The end of the longest run of code words from `w0` whose piece
    /// fits `room` words (at least one word), or `None` when not even one
    /// does (a room below 130 words). The sections must agree
    /// ([`Classed::check`]).
    pub fn piece_end(&self, w0: usize, room: usize) -> Option<usize> {
        let words = self.codes.len();
        let fits = |w1: usize| self.piece_layout(w0, w1).words() <= room;
        if w0 >= words || !fits(w0 + 1) {
            return None;
        }
        // Piece words grow with w1: the last end that fits, by bisection.
        let (mut lo, mut hi) = (w0 + 1, words);
        while lo < hi {
            let mid = hi - (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// Writes the piece of code words `[w0, w1)` into `out` (the format
    /// of the module docs, what [`expand_on_device`] reads) and returns its
    /// layout. The sections must agree ([`Classed::check`]).
    ///
    /// # Panics
    ///
    /// If `out` is shorter than the piece.
    pub fn write_piece(&self, w0: usize, w1: usize, out: &mut [u64]) -> PackedLayout {
        let layout = self.piece_layout(w0, w1);
        let cw = layout.code_words();
        let (head, tail) = out[..layout.words()].split_at_mut(layout.others_at());
        let (codes, before) = head.split_at_mut(cw);
        codes.copy_from_slice(&self.codes[w0..w1]);
        let base = self.before.get(w0).copied().unwrap_or(0);
        for (pair, counts) in before.iter_mut().zip(self.before[w0..w1].chunks(2)) {
            let low = u64::from(counts[0] - base);
            let high = counts.get(1).map_or(0, |&c| u64::from(c - base));
            *pair = low | high << 32;
        }
        // The alignment word, if any, is not read; zero it all the same.
        before[cw.div_ceil(2)..].fill(0);
        let first = self.others_before(w0);
        for (dst, v) in tail
            .chunks_exact_mut(4)
            .zip(&self.others[first..first + layout.others])
        {
            dst.copy_from_slice(&v.0);
        }
        layout
    }
}

const THREADS: u32 = 256;

/// Queues `out[at + j]` = value j of the packed piece in `packed` (the words
/// [`pack_into`] wrote, on the device) for j < `layout.len`.
pub fn expand_on_device(
    stream: &Stream,
    packed: &DeviceBuffer<u64>,
    layout: PackedLayout,
    out: &mut DeviceBuffer<FrLimbs>,
    at: usize,
) -> Result<()> {
    let kernel = decl::prover_expand_z.name();
    let len = layout.len;
    ensure(kernel, packed.len() >= layout.words(), || {
        format!(
            "{len} values with {} others need {} words, the buffer holds {}",
            layout.others,
            layout.words(),
            packed.len()
        )
    })?;
    ensure(
        kernel,
        at.checked_add(len).is_some_and(|e| e <= out.len()),
        || format!("{len} values at {at} into a buffer of {}", out.len()),
    )?;
    ensure(
        kernel,
        u32::try_from(layout.words()).is_ok() && u32::try_from(len).is_ok(),
        || {
            format!(
                "a piece of {len} values, {} words (pieces are u32-indexed)",
                layout.words()
            )
        },
    )?;
    if len == 0 {
        return Ok(());
    }
    let args = (
        packed.arg(),
        len as u32,
        layout.others_at() as u32,
        layout.others as u32,
        out.arg_mut_at(at),
    );
    #[allow(unsafe_code)]
    // SAFETY: reads
    // code words below ⌈len / 32⌉, as many u32 counts from word ⌈len / 32⌉,
    // and others below `others` from word `others_at` (a rank past them is
    // not read), all within `layout.words()` ≤ packed.len() (checked);
    // writes out[at .. at + len) ⊆ out (checked).
    unsafe {
        stream.launch(
            decl::prover_expand_z,
            grid((len as u32).div_ceil(THREADS).clamp(1, 1 << 16), THREADS),
            args,
            || format!("{len} values, {} others", layout.others),
        )
    }
}

/// Uploads `packed` (from pageable memory) and expands it into
/// `out[at..at + packed.layout.len]`.
pub fn upload(
    stream: &Stream,
    packed: &Packed,
    out: &mut DeviceBuffer<FrLimbs>,
    at: usize,
) -> Result<()> {
    if packed.layout.len == 0 {
        return Ok(());
    }
    let words = stream.upload_new(&packed.words)?;
    expand_on_device(stream, &words, packed.layout, out, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar as Fr;
    use cuzk_field::limbs::fr_as_limbs;
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Packs `values` both ways, checks the counts, the sections and the
    /// round trip, and that one word less than the layout is refused.
    fn check(name: &str, values: &[FrLimbs]) {
        let others = values.iter().filter(|v| class(v) == 2).count();
        let p = pack(values);
        assert_eq!(
            p.layout,
            PackedLayout {
                len: values.len(),
                others
            },
            "{name}"
        );
        assert_eq!(p.words.len(), p.layout.words(), "{name}");
        assert_eq!(
            expand(&p.words, values.len()).as_deref(),
            Some(values),
            "{name}: round trip"
        );
        let mut exact = vec![!0u64; p.layout.words()];
        assert_eq!(pack_into(values, &mut exact), Some(p.layout), "{name}");
        // Padding words (the unused before half, the alignment word) are
        // not part of the format; compare the values they stand for.
        assert_eq!(expand(&exact, values.len()).as_deref(), Some(values));
        if p.layout.words() > 0 {
            let mut short = vec![0u64; p.layout.words() - 1];
            assert_eq!(
                pack_into(values, &mut short),
                None,
                "{name}: one word short"
            );
        }
        // Longer buffers are fine: the layout says how much was written.
        let mut long = vec![0u64; p.layout.words() + 9];
        assert_eq!(pack_into(values, &mut long), Some(p.layout), "{name}");
        assert_eq!(
            expand(&long[..p.layout.words()], values.len()).as_deref(),
            Some(values)
        );
    }

    fn mixed(rng: &mut ChaCha20Rng, n: usize, other: f64) -> Vec<FrLimbs> {
        (0..n)
            .map(|_| {
                if rng.gen_bool(other) {
                    fr_as_limbs(&[Fr::random(&mut *rng)])[0]
                } else if rng.gen_bool(0.5) {
                    MONT_ONE
                } else {
                    FrLimbs::default()
                }
            })
            .collect()
    }

    #[test]
    fn mont_one_is_blstrs_one() {
        assert_eq!(fr_as_limbs(&[Fr::ONE])[0], MONT_ONE);
        assert_eq!(fr_as_limbs(&[Fr::ZERO])[0], FrLimbs::default());
    }

    #[test]
    fn round_trips() {
        let zero = FrLimbs::default();
        let canonical_one = FrLimbs([1, 0, 0, 0]);
        let minus_one = fr_as_limbs(&[-Fr::ONE])[0];
        let mut rng = ChaCha20Rng::seed_from_u64(17);
        check("empty", &[]);
        check("one zero", &[zero]);
        check("one one", &[MONT_ONE]);
        check("one other", &[minus_one]);
        for n in [31, 32, 33, 64, 65, 1000] {
            check(&format!("{n} zeros"), &vec![zero; n]);
            check(&format!("{n} ones"), &vec![MONT_ONE; n]);
            check(&format!("{n} others"), &mixed(&mut rng, n, 1.0));
            check(&format!("{n} mixed"), &mixed(&mut rng, n, 0.1));
        }
        // 1 in canonical form is another field element: sent in full.
        let p = pack(&[canonical_one, MONT_ONE, canonical_one]);
        assert_eq!(p.layout.others, 2);
        assert_eq!(p.words[0], 0b10_01_10);
        check("canonical one", &[canonical_one; 40]);
        // Several tasks (65,536 values each), the last one short, at the
        // PoRep mix and at a dense one.
        let n = 3 * 32 * TASK_WORDS + 777;
        check("PoRep mix", &mixed(&mut rng, n, 0.013));
        check("dense", &mixed(&mut rng, n, 0.6));
    }

    #[test]
    fn before_counts_the_earlier_others() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let values = mixed(&mut rng, 32 * TASK_WORDS + 100, 0.3);
        let p = pack(&values);
        let l = p.layout;
        let mut seen = 0u64;
        for w in 0..l.code_words() {
            let before = (p.words[l.before_at() + w / 2] >> (32 * (w % 2))) & 0xffff_ffff;
            assert_eq!(before, seen, "word {w}");
            seen += u64::from((p.words[w] & OTHER_BITS).count_ones());
        }
        assert_eq!(seen as usize, l.others);
        assert_eq!(l.others_at() % 2, 0);
    }

    #[test]
    fn malformed_pieces_are_refused() {
        let values = [MONT_ONE, FrLimbs([5, 0, 0, 0]), FrLimbs::default()];
        let p = pack(&values);
        assert_eq!(expand(&p.words[..p.words.len() - 1], 3), None, "short");
        let mut three = p.words.clone();
        three[0] |= 3 << 4;
        assert_eq!(expand(&three, 3), None, "class 3");
        let mut count = p.words.clone();
        count[p.layout.before_at()] = 1;
        assert_eq!(expand(&count, 3), None, "a wrong before count");
    }

    /// The sections of `values` packed as one piece, as a [`Classed`]
    /// would hold them (a compact witness's vectors).
    fn sections(values: &[FrLimbs]) -> (Vec<u64>, Vec<u32>, Vec<FrLimbs>) {
        let p = pack(values);
        let l = p.layout;
        let codes = p.words[..l.code_words()].to_vec();
        let before = (0..l.code_words())
            .map(|w| (p.words[l.before_at() + w / 2] >> (32 * (w % 2))) as u32)
            .collect();
        let others = p.words[l.others_at()..]
            .chunks(4)
            .map(|c| FrLimbs(c.try_into().unwrap()))
            .collect();
        (codes, before, others)
    }

    #[test]
    fn a_classed_vector_splits_into_pieces_that_expand_to_its_values() {
        let mut rng = ChaCha20Rng::seed_from_u64(34);
        for (n, other) in [(0, 0.0), (1, 1.0), (31, 0.5), (1000, 0.013), (20_000, 0.3)] {
            let values = mixed(&mut rng, n, other);
            let (codes, before, others) = sections(&values);
            let classed = Classed {
                len: n,
                codes: &codes,
                before: &before,
                others: &others,
            };
            classed.check().unwrap();
            for room in [130, 200, 1000, 1 << 20] {
                let mut out = vec![!0u64; room];
                let (mut w0, mut expanded) = (0, Vec::new());
                while w0 < codes.len() {
                    let w1 = classed.piece_end(w0, room).unwrap();
                    assert!(w1 == codes.len() || classed.piece_layout(w0, w1 + 1).words() > room);
                    let layout = classed.write_piece(w0, w1, &mut out);
                    assert!(layout.words() <= room);
                    expanded.extend(expand(&out[..layout.words()], layout.len).unwrap());
                    w0 = w1;
                }
                assert_eq!(expanded, values, "{n} values, room {room}");
            }
            assert_eq!(classed.piece_end(0, 1), None, "no piece fits one word");
        }
    }

    #[test]
    fn a_classed_vector_whose_sections_disagree_is_refused_naming_both_numbers() {
        let mut rng = ChaCha20Rng::seed_from_u64(35);
        let values = mixed(&mut rng, 100, 0.3);
        let (codes, before, others) = sections(&values);
        let message = |c: Classed<'_>| c.check().unwrap_err().to_string();
        let good = Classed {
            len: 100,
            codes: &codes,
            before: &before,
            others: &others,
        };
        good.check().unwrap();
        let n = others.len();
        assert_eq!(
            message(Classed {
                others: &others[1..],
                ..good
            }),
            format!(
                "kernel prover_expand_z: the codes mark {n} others, the compact witness holds {} values in full",
                n - 1
            )
        );
        assert_eq!(
            message(Classed { len: 129, ..good }),
            "kernel prover_expand_z: 129 values need 5 code words, the compact witness has 4"
        );
        let mut three = codes.clone();
        three[3] |= 3;
        assert!(message(Classed {
            codes: &three,
            ..good
        })
        .contains("code word 3 holds a class"));
        let mut wrong = before.clone();
        wrong[2] += 1;
        assert!(message(Classed {
            before: &wrong,
            ..good
        })
        .starts_with("kernel prover_expand_z: code word 2: its before count is"));
    }

    #[test]
    fn a_budget_of_one_word_per_value_packs_the_porep_mix() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let n = 100_000;
        let mut out = vec![0u64; budget_words(n)];
        let porep = pack_into(&mixed(&mut rng, n, 0.013), &mut out).unwrap();
        assert!(porep.bytes() < n * 32 / 30, "{porep:?}");
        assert_eq!(pack_into(&mixed(&mut rng, n, 0.3), &mut out), None);
    }
}
