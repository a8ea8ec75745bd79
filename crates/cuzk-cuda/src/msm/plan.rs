//! How an MSM is shaped before anything runs: the number of windows, the
//! window size the cost model picks under a memory budget, the device bytes
//! a shape needs, and the launch sizes of each step ([`MsmPlan`]). Arithmetic
//! over sizes, except `resident_threads`, which asks the driver how many
//! threads of a kernel fit on the device at once.

use super::bucket_sort::BucketSort;
use super::{MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::device::Stream;
use crate::error::{Error, Result};
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
/// (2026-11-30, kernels/msm/README.md run 6): the sort took 0.24 / 0.37 ms
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

/// Windows per group of the radix sort for `len` pairs and W windows.
pub(super) fn radix_group_windows(len: usize, windows: u32) -> u32 {
    (RADIX_GROUP_PAIRS / len.max(1)).clamp(1, windows as usize) as u32
}

/// (pairs per group, histogram words) of the radix scratch for groups of
/// `group` windows.
pub(super) fn radix_sizes(len: usize, group: u32) -> (usize, usize) {
    let pairs = (len * group as usize).max(1);
    (pairs, (1usize << RADIX_BITS) * pairs.div_ceil(RADIX_TILE))
}

/// Bytes of the radix sort's scratch (`bucket_sort::RadixScratch`): 16 per pair of a group, ≈ 0.5 per pair for the
/// histograms.
pub(super) fn radix_scratch_bytes(len: usize, windows: u32) -> usize {
    let (pairs, hist) = radix_sizes(len, radix_group_windows(len, windows));
    4 * pairs * 4 + (2 * hist + 1 + hist.div_ceil(SCAN_TILE) + 1 + 1) * 4
}

/// Device bytes an MSM of `len` pairs needs with window size `c`, for points of
/// `xyzz_bytes` bytes (192 for G1, 384 for G2), with the sort
/// [`BucketSort::for_shape`] picks. Small fixed parts (partial slots, segment
/// sums) are counted at their largest.
pub fn scratch_bytes(len: usize, window_bits: u32, xyzz_bytes: usize) -> usize {
    let w = windows_for(window_bits) as usize;
    let keys = w << (window_bits - 1);
    let entries = len * w * 4;
    let key_arrays = keys * 4 * 3 + (keys / SCAN_TILE + 2) * 4;
    let buckets = keys * xyzz_bytes;
    let fixed =
        (1 << 20) * (xyzz_bytes + 4) + (REDUCE_MAX_THREADS as usize * 2 + 4096) * xyzz_bytes;
    let radix = match BucketSort::for_shape(len, window_bits) {
        BucketSort::Radix => radix_scratch_bytes(len, w as u32),
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
        let entries = max_len.saturating_mul(windows as usize);
        let wanted = entries.div_ceil(MIN_ENTRIES_PER_THREAD).max(1);
        let threads =
            (wanted.min(accumulate_capacity as usize) as u32).next_multiple_of(ACCUMULATE_THREADS);
        let buckets = 1u32 << (window_bits - 1);
        let wanted = (reduce_capacity.min(REDUCE_MAX_THREADS) / windows).clamp(1, buckets);
        let segment_len = buckets.div_ceil(wanted);
        MsmPlan {
            max_len,
            window_bits,
            windows,
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

    /// All bucket keys: windows × buckets.
    pub fn keys(&self) -> usize {
        self.windows as usize * self.buckets_per_window() as usize
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
pub(super) fn resident_threads(stream: &Stream, kernel: &'static str, block: u32) -> Result<u32> {
    let gpu = stream.gpu();
    let occupancy = gpu
        .function(kernel)?
        .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
        .map_err(|source| Error::Driver {
            call: "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            what: format!("kernel {kernel}, {block} threads per block"),
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
    fn radix_sort_is_chosen_for_large_msms_with_bounded_scratch() {
        assert_eq!(BucketSort::for_shape(1 << 20, 16), BucketSort::Counting);
        assert_eq!(BucketSort::for_shape(1 << 24, 20), BucketSort::Radix);
        for log in 16..=31u32 {
            let len = 1usize << log;
            for c in [13u32, 16, 20, 22] {
                let w = windows_for(c);
                let g = radix_group_windows(len, w);
                assert!((1..=w).contains(&g), "2^{log}, c = {c}: group {g}");
                // One group holds ≤ 2^26 pairs unless one window alone is more.
                assert!(len * g as usize <= RADIX_GROUP_PAIRS.max(len));
                let bytes = radix_scratch_bytes(len, w);
                assert!(
                    bytes <= 17 * RADIX_GROUP_PAIRS.max(len) + (1 << 20),
                    "2^{log}"
                );
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
