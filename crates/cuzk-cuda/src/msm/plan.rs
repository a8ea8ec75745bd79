//! How an MSM is shaped before anything runs: the number of windows, the
//! window size the cost model picks under a memory budget, the device bytes
//! a shape needs, and the launch sizes of each step ([`MsmPlan`]). Arithmetic
//! over sizes, except `resident_threads`, which asks the driver how many
//! threads of a kernel fit on the device at once.

use super::bucket_sort::BucketSort;
use super::{MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::device::Stream;
use crate::error::{Error, Result};
use crate::launch::Kernel;
use crate::scan::SCAN_TILE;

/// Threads per block of the bucket accumulation (registers, not shared
/// memory, limit its occupancy; small blocks let the SMs fill up).
pub(super) const ACCUMULATE_THREADS: u32 = 64;
/// Sorted entries per accumulation thread at least (below this the partial
/// slots outnumber the work).
pub(super) const MIN_ENTRIES_PER_THREAD: usize = 8;
/// Partial slots per merge thread; each level shrinks the list by CHUNK/2.
pub(super) const MERGE_CHUNK: u32 = 16;
pub(super) const MERGE_THREADS: u32 = 64;
/// Most bucket-reduction threads (segments × windows). The plan runs one
/// full wave of the reduction kernel: every thread reduces one segment, so a
/// second, partly filled wave would double the time of a few threads' work
/// (H200, c = 20 at 2^24: 53,248 threads in 1.26 waves took 12.9 ms for G1
/// and 61 ms for G2; one wave of 202-bucket segments 9.9 and 49 ms).
pub(super) const REDUCE_MAX_THREADS: u32 = 1 << 17;
pub(super) const REDUCE_THREADS: u32 = 64;
/// Tree sums: threads per block and most blocks per group in the first pass.
pub(super) const SUM_THREADS: u32 = 128;
pub(super) const SUM_MAX_BLOCKS: u32 = 64;
/// Radix sort (kernels/msm/scalars.cu RADIX_*): threads per block, bits per
/// pass, items per tile.
pub(super) const RADIX_THREADS: u32 = 256;
pub(super) const RADIX_BITS: u32 = 8;
pub(super) const RADIX_TILE: usize = 256 * 16;
/// Pairs the radix sort sorts at once (16 bytes of scratch each: 1 GiB): the
/// windows go in groups of ⌊RADIX_GROUP_PAIRS / n⌋ (at least one).
pub(super) const RADIX_GROUP_PAIRS: usize = 1 << 26;
/// Pairs (len · windows) from which [`Msm::new`] sorts by radix. H200
/// (2026-11-30, docs/lab-notes/msm-kernel-results.md run 6): the sort took 0.24 / 0.37 ms
/// (counting / radix) at 2^18 G1, 0.92 / 1.04 at 2^20, 20.9 / 12.5 at 2^24
/// and 83.9 / 48.6 at 2^26: the counting sort's atomics and scattered writes
/// cost more per pair once its cursors and entries outgrow the caches.
/// 2^22 (2^26 pairs at c = 16) is unmeasured; the cut is between.
pub(super) const RADIX_MIN_PAIRS: usize = 1 << 25;

/// Number of windows for c-bit signed digits of a 255-bit scalar: the top
/// window must absorb the last carry, so c·W ≥ 256.
pub fn windows_for(window_bits: u32) -> u32 {
    256u32.div_ceil(window_bits)
}

/// Slots per group of the radix sort for `len` pairs over `slots` key
/// slots of `copies` each (see [`MsmPlan::slots`]): whole sets only, so
/// that the groups' key ranges do not overlap and their sorted runs, one
/// after the other, are sorted.
pub(super) fn radix_group_slots(len: usize, slots: u32, copies: u32) -> u32 {
    let g = (RADIX_GROUP_PAIRS / len.max(1)).clamp(1, slots.max(1) as usize) as u32;
    (g / copies * copies).max(copies)
}

/// (pairs per group, histogram words) of the radix scratch for groups of
/// `group` windows.
pub(super) fn radix_sizes(len: usize, group: u32) -> (usize, usize) {
    let pairs = (len * group as usize).max(1);
    (pairs, (1usize << RADIX_BITS) * pairs.div_ceil(RADIX_TILE))
}

/// Bytes of the radix sort's scratch (`bucket_sort::RadixScratch`) for
/// `slots` key slots of `copies` each: 16 per pair of a group, ≈ 0.5 per
/// pair for the histograms.
pub(super) fn radix_slots_scratch_bytes(len: usize, slots: u32, copies: u32) -> usize {
    let (pairs, hist) = radix_sizes(len, radix_group_slots(len, slots, copies));
    4 * pairs * 4 + (2 * hist + 1 + hist.div_ceil(SCAN_TILE) + 1 + 1) * 4
}

/// Device bytes an MSM of `len` pairs needs with window size `c`, for points of
/// `xyzz_bytes` bytes (192 for G1, 384 for G2), with the sort
/// [`BucketSort::for_shape`] picks. Small fixed parts (partial slots, segment
/// sums) are counted at their largest.
pub fn scratch_bytes(len: usize, window_bits: u32, xyzz_bytes: usize) -> usize {
    shifted_scratch_bytes(len, window_bits, windows_for(window_bits), xyzz_bytes)
}

/// As [`scratch_bytes`], for an MSM whose windows share `sets` bucket sets
/// (over shifted bases, [`ShiftedBases`](super::ShiftedBases); `sets` = W
/// is the plain MSM). The bases' copies are not counted.
pub fn shifted_scratch_bytes(len: usize, window_bits: u32, sets: u32, xyzz_bytes: usize) -> usize {
    let w = windows_for(window_bits) as usize;
    let copies = copies_for(window_bits, sets);
    let slots = (copies * sets.clamp(1, w as u32)) as usize;
    let keys = (sets as usize) << (window_bits - 1);
    let entries = len * slots * 4;
    let key_arrays = keys * 4 * 3 + (keys / SCAN_TILE + 2) * 4;
    let buckets = keys * xyzz_bytes;
    let fixed =
        (1 << 20) * (xyzz_bytes + 4) + (REDUCE_MAX_THREADS as usize * 2 + 4096) * xyzz_bytes;
    let radix = match BucketSort::for_shape(len, window_bits) {
        BucketSort::Radix => radix_slots_scratch_bytes(len, slots as u32, copies),
        BucketSort::Counting => 0,
    };
    entries + key_arrays + buckets + fixed + radix
}

/// The window size for an MSM of `len` pairs: the cheapest by the cost model
/// n·W + 3·W·2^(c−1) (bucket additions; bucket reduction at ≈3 additions per
/// bucket) among sizes up to 20 whose scratch fits `budget_bytes`. Falls back
/// to the smallest footprint when nothing fits. The H200 sweep (2026-11-30)
/// agreed with the model at 2^20 (c = 16) and 2^24 (c = 20), within 1–2%.
pub fn choose_window_bits(len: usize, xyzz_bytes: usize, budget_bytes: usize) -> u32 {
    // Above MAX_AUTO_WINDOW_BITS the bucket counters (W·2^(c−1) u32) outgrow
    // the L2 cache and the atomic sort slows sharply (H200, 2^26 at c = 22:
    // sort 121 ms against 21 ms for 2^24 at c = 20).
    const MAX_AUTO_WINDOW_BITS: u32 = 20;
    let cost = |c: u32| {
        let w = windows_for(c) as f64;
        len as f64 * w + 3.0 * w * (1u64 << (c - 1)) as f64
    };
    let fits = |c: u32| scratch_bytes(len, c, xyzz_bytes) <= budget_bytes;
    (MIN_WINDOW_BITS..=MAX_AUTO_WINDOW_BITS)
        .filter(|&c| fits(c))
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or_else(|| {
            (MIN_WINDOW_BITS..=MAX_WINDOW_BITS)
                .min_by_key(|&c| scratch_bytes(len, c, xyzz_bytes))
                .expect("nonempty range")
        })
}

/// Device bytes an MSM of up to `len` pairs made for kept calls at
/// `kept_bits` ([`Msm::with_kept_window`](super::Msm::with_kept_window))
/// takes beyond [`scratch_bytes`]`(len, held_bits)`: the kept buckets, and
/// what its key arrays and entries grow by to hold the kept calls' plan
/// (its partial and segment sums are counted at their largest already).
pub fn kept_extra_bytes(len: usize, held_bits: u32, kept_bits: u32, xyzz_bytes: usize) -> usize {
    let keys = |c: u32| (windows_for(c) as usize) << (c - 1);
    let key_arrays = |c: u32| keys(c) * 4 * 3 + (keys(c) / SCAN_TILE + 2) * 4;
    let entries = |c: u32| len * windows_for(c) as usize * 4;
    keys(kept_bits) * xyzz_bytes
        + key_arrays(kept_bits).saturating_sub(key_arrays(held_bits))
        + entries(kept_bits).saturating_sub(entries(held_bits))
}

/// The window size for one MSM of `total` pairs summed in calls of up to
/// `chunk` pairs into kept buckets ([`KeptBuckets`](super::KeptBuckets)):
/// the cheapest by the cost model of [`choose_window_bits`], counted once
/// over the whole (`total`·W additions, one reduction), among sizes from
/// the chunk's own window up to 20 whose [`kept_extra_bytes`] fit
/// `budget_bytes` (a smaller window has more windows than the chunk's
/// scratch was sized for, and never pays); `None` when none fits
/// or none beats summing each chunk as an MSM of its own (at its own
/// window, one reduction per chunk), as for a section of one chunk.
pub fn choose_kept_window_bits(
    total: usize,
    chunk: usize,
    xyzz_bytes: usize,
    budget_bytes: usize,
) -> Option<u32> {
    const MAX_AUTO_WINDOW_BITS: u32 = 20;
    let (total, chunk) = (total.max(1), chunk.max(1));
    let cost = |len: usize, c: u32| {
        let w = windows_for(c) as f64;
        len as f64 * w + 3.0 * w * (1u64 << (c - 1)) as f64
    };
    let held = choose_window_bits(chunk, xyzz_bytes, usize::MAX);
    let chunks = total.div_ceil(chunk);
    let per_chunk = (total / chunk) as f64 * cost(chunk, held)
        + match total % chunk {
            0 => 0.0,
            r => cost(r, choose_window_bits(r, xyzz_bytes, usize::MAX)),
        };
    if chunks < 2 {
        return None;
    }
    (held..=MAX_AUTO_WINDOW_BITS)
        .filter(|&c| kept_extra_bytes(chunk, held, c, xyzz_bytes) <= budget_bytes)
        .filter(|&c| chunk.saturating_mul(windows_for(c) as usize) <= u32::MAX as usize)
        .map(|c| (cost(total, c), c))
        .filter(|&(k, _)| k < per_chunk)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Base copies an MSM with c-bit windows over `sets` bucket sets reads:
/// window w uses copy w / sets, so ⌈W / sets⌉.
pub fn copies_for(window_bits: u32, sets: u32) -> u32 {
    windows_for(window_bits).div_ceil(sets.max(1))
}

/// Relative cost of an MSM of `len` pairs with c-bit windows over `sets`
/// bucket sets, in mixed additions: n·W for the buckets (plus the radix
/// sort's passes over the n·W pairs at ≈ 4% of an addition each) and ≈ 4
/// additions per bucket for the reduction (H200, 2^24, c = 20: accumulate
/// 102 ms for 2.2e8 additions, sort 11.7 ms for 3 passes, reduction 12.9 ms
/// for 6.8 M buckets).
fn shape_cost(len: usize, window_bits: u32, sets: u32) -> f64 {
    let w = windows_for(window_bits) as f64;
    let keys = (sets as u64) << (window_bits - 1);
    let passes = (64 - keys.leading_zeros()).div_ceil(RADIX_BITS) as f64;
    len as f64 * w * (1.0 + 0.04 * passes) + 4.0 * keys as f64
}

/// The shape of an MSM over shifted bases of `len` points: (window bits,
/// bucket sets), the cheapest by `shape_cost` whose extra base copies
/// (`copies_for` − 1 of `affine_bytes` per point: the first copy is the
/// bases themselves) and scratch fit `budget_bytes`; `None` when no shape
/// with at least one extra copy fits, or when none is cheaper than the plain
/// MSM's best (sets = W) within the same budget. c runs up to 24 (the digit
/// extraction's limit) and every entry (copy · len + point) must fit the
/// 31-bit index.
pub fn choose_shifted_shape(
    len: usize,
    xyzz_bytes: usize,
    affine_bytes: usize,
    budget_bytes: usize,
) -> Option<(u32, u32)> {
    let len = len.max(1);
    let plain = choose_window_bits(len, xyzz_bytes, budget_bytes);
    let plain_cost = shape_cost(len, plain, windows_for(plain));
    let mut best: Option<(f64, u32, u32)> = None;
    for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
        let w = windows_for(c);
        for sets in 1..w {
            let copies = copies_for(c, sets);
            if copies < 2 || (copies as usize).saturating_mul(len) > super::MAX_LEN - 1 {
                continue;
            }
            // Fewer sets with the same copies only cost more buckets.
            if sets > 1 && copies_for(c, sets - 1) == copies {
                continue;
            }
            let bytes = (copies as usize - 1)
                .saturating_mul(len)
                .saturating_mul(affine_bytes)
                + shifted_scratch_bytes(len, c, sets, xyzz_bytes);
            if bytes > budget_bytes || len.saturating_mul(w as usize) > u32::MAX as usize {
                continue;
            }
            let cost = shape_cost(len, c, sets);
            if best.is_none_or(|(b, _, _)| cost < b) {
                best = Some((cost, c, sets));
            }
        }
    }
    best.filter(|&(cost, _, _)| cost < plain_cost)
        .map(|(_, c, sets)| (c, sets))
}

/// The shape of one MSM: how many pairs at most, the window size, and the
/// parallelism of each phase. Pure data; [`Msm::new`](super::Msm::new) derives it
/// from the device, [`Msm::with_window_bits`](super::Msm::with_window_bits) lets a sweep pick c.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    /// Most pairs per call.
    pub max_len: usize,
    /// c: digits in [−2^(c−1), 2^(c−1)].
    pub window_bits: u32,
    /// ⌈256 / c⌉.
    pub windows: u32,
    /// Bucket sets: W for a plain MSM; fewer over shifted bases, where
    /// window w adds into set w mod sets (see [`ShiftedBases`](super::ShiftedBases)).
    pub sets: u32,
    /// Threads that share the sorted entries in the accumulation.
    pub accumulate_threads: u32,
    /// Buckets per reduction thread (the window's last segment may be shorter).
    pub segment_len: u32,
    /// Which accumulation kernel (an index into the curve's variants).
    pub accumulate_variant: usize,
    /// How the pairs are grouped by bucket.
    pub sort: BucketSort,
}

impl MsmPlan {
    pub(super) fn new(
        max_len: usize,
        window_bits: u32,
        accumulate_capacity: u32,
        reduce_capacity: u32,
        accumulate_variant: usize,
    ) -> Self {
        let windows = windows_for(window_bits);
        Self::with_sets(
            max_len,
            window_bits,
            windows,
            accumulate_capacity,
            reduce_capacity,
            accumulate_variant,
        )
    }

    /// As [`MsmPlan::new`] with the windows sharing `sets` (1 ..= W) bucket sets.
    pub(super) fn with_sets(
        max_len: usize,
        window_bits: u32,
        sets: u32,
        accumulate_capacity: u32,
        reduce_capacity: u32,
        accumulate_variant: usize,
    ) -> Self {
        let windows = windows_for(window_bits);
        let sets = sets.clamp(1, windows);
        let entries = max_len.saturating_mul(windows as usize);
        let wanted = entries.div_ceil(MIN_ENTRIES_PER_THREAD).max(1);
        let threads =
            (wanted.min(accumulate_capacity as usize) as u32).next_multiple_of(ACCUMULATE_THREADS);
        let buckets = 1u32 << (window_bits - 1);
        let wanted = (reduce_capacity.min(REDUCE_MAX_THREADS) / sets).clamp(1, buckets);
        let segment_len = buckets.div_ceil(wanted);
        MsmPlan {
            max_len,
            window_bits,
            windows,
            sets,
            accumulate_threads: threads,
            segment_len,
            accumulate_variant,
            sort: BucketSort::for_shape(max_len, window_bits),
        }
    }

    /// Buckets per window, 2^(c−1).
    pub fn buckets_per_window(&self) -> u32 {
        1 << (self.window_bits - 1)
    }

    /// All bucket keys: sets × buckets.
    pub fn keys(&self) -> usize {
        self.sets as usize * self.buckets_per_window() as usize
    }

    /// Base copies the plan reads (1 for a plain MSM).
    pub fn copies(&self) -> u32 {
        copies_for(self.window_bits, self.sets)
    }

    /// Key slots of the radix sort: copies × sets, set-major (slot
    /// s·copies + k holds window s + k·sets, a zero digit where that is
    /// past the last window); W for a plain MSM. The entries hold
    /// max_len × slots.
    pub fn slots(&self) -> u32 {
        self.copies() * self.sets
    }

    /// The shift between consecutive base copies, c · sets bits.
    pub fn shift_bits(&self) -> u32 {
        self.window_bits * self.sets
    }

    pub(super) fn segments(&self) -> u32 {
        self.buckets_per_window().div_ceil(self.segment_len)
    }

    pub(super) fn sum_blocks(&self) -> u32 {
        self.segments()
            .div_ceil(SUM_THREADS)
            .clamp(1, SUM_MAX_BLOCKS)
    }
}

/// Threads of `kernel` (in blocks of `block`) resident on the whole device at once.
pub(super) fn resident_threads<A>(stream: &Stream, kernel: Kernel<A>, block: u32) -> Result<u32> {
    let gpu = stream.gpu();
    let occupancy = gpu
        .function(kernel)?
        .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
        .map_err(|source| Error::Driver {
            call: "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            what: format!("kernel {}, {block} threads per block", kernel.name()),
            source,
        })?
        .max(1);
    Ok(gpu.info().multiprocessors * occupancy * block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_a_255_bit_scalar_with_its_carry() {
        for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            assert!(windows_for(c) * c >= 256, "c = {c}");
            assert!(
                (windows_for(c) - 1) * c < 256,
                "c = {c}: one window too many"
            );
        }
    }

    #[test]
    fn window_choice_grows_with_n_and_respects_the_budget() {
        let big = 1usize << 40;
        let mut last = 0;
        for log in [0u32, 4, 8, 12, 16, 20, 24, 26] {
            let c = choose_window_bits(1 << log, 192, big);
            assert!(c >= last, "2^{log}: c = {c} after {last}");
            last = c;
        }
        assert!((16..=22).contains(&choose_window_bits(1 << 24, 192, big)));
        let tight = scratch_bytes(1 << 24, 12, 192);
        let c = choose_window_bits(1 << 24, 192, tight);
        assert!(c <= 12 || scratch_bytes(1 << 24, c, 192) <= tight);
    }

    #[test]
    fn copies_cover_every_window() {
        for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            let w = windows_for(c);
            assert_eq!(copies_for(c, w), 1, "c = {c}: the plain MSM");
            for sets in 1..=w {
                let k = copies_for(c, sets);
                // Window w − 1 reads copy (w − 1) / sets, the last one.
                assert_eq!(k, (w - 1) / sets + 1, "c = {c}, {sets} sets");
                assert!(k * sets >= w && (k - 1) * sets < w);
            }
        }
    }

    #[test]
    fn shifted_shapes_fit_their_budget_and_beat_the_plain_msm() {
        let g1 = (192, 96);
        // Without room for a copy there is no shifted shape.
        let n = 1usize << 24;
        let plain = scratch_bytes(n, choose_window_bits(n, g1.0, usize::MAX), g1.0);
        assert_eq!(choose_shifted_shape(n, g1.0, g1.1, plain), None);
        // With room for every copy: one bucket set, a wider window than the
        // plain MSM's 20 bits (H200 sweep: c = 20 is the plain optimum at 2^24).
        let (c, sets) = choose_shifted_shape(n, g1.0, g1.1, 64 << 30).expect("room");
        assert!(
            c > 20 && sets <= 2,
            "2^24 with 64 GiB: c = {c}, {sets} sets"
        );
        for log in [16u32, 20, 24, 26, 27] {
            let n = 1usize << log;
            for budget in [8usize << 30, 40 << 30, 100 << 30] {
                let Some((c, sets)) = choose_shifted_shape(n, g1.0, g1.1, budget) else {
                    continue;
                };
                let copies = copies_for(c, sets) as usize;
                assert!(copies >= 2, "2^{log}: {copies} copies");
                let bytes = (copies - 1) * n * g1.1 + shifted_scratch_bytes(n, c, sets, g1.0);
                assert!(bytes <= budget, "2^{log}, budget {budget}: {bytes} bytes");
                assert!(copies * n < super::super::MAX_LEN);
                let plain = choose_window_bits(n, g1.0, budget);
                assert!(
                    shape_cost(n, c, sets) < shape_cost(n, plain, windows_for(plain)),
                    "2^{log}: ({c}, {sets}) against plain c = {plain}"
                );
            }
        }
        // A 2^27 H query with ~40 GB to spare takes a few copies, not all.
        let (c, sets) = choose_shifted_shape(1 << 27, g1.0, g1.1, 40 << 30).expect("room");
        let copies = copies_for(c, sets);
        assert!(
            (2..=4).contains(&copies),
            "2^27: c = {c}, {sets} sets, {copies} copies"
        );
    }

    #[test]
    fn shifted_plans_reduce_over_their_sets() {
        let p = MsmPlan::with_sets(1 << 20, 22, 1, 132 * 5 * 64, 132 * 320, 0);
        assert_eq!(
            (p.windows, p.sets, p.copies(), p.shift_bits()),
            (12, 1, 12, 22)
        );
        assert_eq!(p.keys(), 1 << 21);
        let p = MsmPlan::with_sets(1 << 20, 22, 5, 132 * 5 * 64, 132 * 320, 0);
        assert_eq!((p.sets, p.copies(), p.shift_bits()), (5, 3, 110));
        let plain = MsmPlan::new(1 << 20, 16, 132 * 5 * 64, 132 * 320, 0);
        assert_eq!((plain.sets, plain.copies()), (plain.windows, 1));
        assert!(
            shifted_scratch_bytes(1 << 20, 22, 1, 192)
                < shifted_scratch_bytes(1 << 20, 22, 12, 192)
        );
    }

    #[test]
    fn radix_sort_is_chosen_for_large_msms_with_bounded_scratch() {
        assert_eq!(BucketSort::for_shape(1 << 20, 16), BucketSort::Counting);
        assert_eq!(BucketSort::for_shape(1 << 24, 20), BucketSort::Radix);
        for log in 16..=31u32 {
            let len = 1usize << log;
            for c in [13u32, 16, 20, 22] {
                let w = windows_for(c);
                let g = radix_group_slots(len, w, 1);
                assert!((1..=w).contains(&g), "2^{log}, c = {c}: group {g}");
                // One group holds ≤ 2^26 pairs unless one window alone is more.
                assert!(len * g as usize <= RADIX_GROUP_PAIRS.max(len));
                let bytes = radix_slots_scratch_bytes(len, w, 1);
                assert!(
                    bytes <= 17 * RADIX_GROUP_PAIRS.max(len) + (1 << 20),
                    "2^{log}"
                );
            }
        }
    }

    #[test]
    fn kept_windows_pay_one_reduction_and_fit_their_budget() {
        let g1 = 192;
        let h = (1usize << 27) - 1;
        let all = usize::MAX;
        // A 32 GiB partition's H in 2^22..2^25-point chunks: the whole
        // section's window (c = 20, as resident), one reduction.
        for log in 22..=25u32 {
            assert_eq!(
                choose_kept_window_bits(h, 1 << log, g1, all),
                Some(20),
                "2^{log}"
            );
        }
        // One chunk holds the whole section: nothing to keep.
        assert_eq!(choose_kept_window_bits(h, 1 << 27, g1, all), None);
        assert_eq!(choose_kept_window_bits(1000, 4096, g1, all), None);
        // Under a byte budget: the largest window whose bytes fit, fewer
        // bytes for a smaller one, none when not even the smallest gain fits.
        let chunk = 1usize << 22;
        let held = choose_window_bits(chunk, g1, all);
        let at = |c| kept_extra_bytes(chunk, held, c, g1);
        assert!(at(18) < at(19) && at(19) < at(20));
        assert!(at(20) > 1 << 30 && at(20) < 3 << 29, "{}", at(20));
        assert_eq!(choose_kept_window_bits(h, chunk, g1, at(20) - 1), Some(19));
        assert_eq!(choose_kept_window_bits(h, chunk, g1, at(19)), Some(19));
        let c = choose_kept_window_bits(h, chunk, g1, at(18)).expect("c = 18 beats 2^22 chunks");
        assert_eq!(c, 18);
        assert_eq!(choose_kept_window_bits(h, chunk, g1, 1 << 20), None);
        // Each choice is cheaper than the chunks' own MSMs by the model.
        let cost = |len: usize, c: u32| {
            let w = windows_for(c) as f64;
            len as f64 * w + 3.0 * w * (1u64 << (c - 1)) as f64
        };
        for log in 20..=26u32 {
            let chunk = 1usize << log;
            if let Some(c) = choose_kept_window_bits(h, chunk, g1, all) {
                let own = choose_window_bits(chunk, g1, all);
                let per_chunk = h.div_ceil(chunk) as f64 * cost(chunk, own);
                assert!(cost(h, c) < per_chunk, "2^{log}: c = {c}");
            }
        }
    }

    #[test]
    fn plan_shapes_are_consistent() {
        for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            let p = MsmPlan::new(1 << 20, c, 132 * 5 * 64, 132 * 320, 0);
            // Segments cover every bucket, the last one possibly short, in one wave.
            assert!(p.segments() * p.segment_len >= p.buckets_per_window());
            assert!((p.segments() - 1) * p.segment_len < p.buckets_per_window());
            assert!(p.segments() * p.windows <= (132 * 320).max(p.windows));
            assert_eq!(p.accumulate_threads % ACCUMULATE_THREADS, 0);
        }
        assert_eq!(
            MsmPlan::new(1, 8, 1 << 16, 1 << 16, 0).accumulate_threads,
            ACCUMULATE_THREADS
        );
    }
}
