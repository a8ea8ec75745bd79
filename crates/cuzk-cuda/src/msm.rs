//! Multi-scalar multiplication (Pippenger) for G1 and G2, batch summation of
//! the points whose scalar is one, and scalar classification, on the GPU
//! (kernels/msm/).
//!
//! Inputs stay in device memory: bases as [`G1AffineLimbs`] / [`G2AffineLimbs`]
//! (infinity = all-zero limbs, skipped), scalars as [`FrLimbs`] (Montgomery
//! form, converted on the device). Results come back as blstrs projective
//! points.
//!
//! **Pippenger** ([`Msm`]): signed c-bit digits (|d| ≤ 2^(c−1), the point is
//! negated for negative digits), all ⌈256/c⌉ windows at once:
//! 1. a sort of the (bucket, point) pairs by bucket ([`BucketSort`]): for
//!    small MSMs a counting sort (histogram with warp-aggregated atomics,
//!    exclusive scan, scatter through atomic cursors), for large ones an LSD
//!    radix sort over 8-bit digits (no global atomics per pair);
//! 2. bucket accumulation with the sorted pairs cut into equal chunks, one per
//!    thread, however the buckets are sized (PoRep scalars repeat, so some
//!    buckets are huge); runs that straddle chunks are merged level by level;
//! 3. per window Σ_b b·B_b by running sums over segments of buckets, one
//!    thread per segment, then a tree sum per window and Horner over windows.
//!
//! The window size c comes from [`choose_window_bits`]: a cost model
//! (n·⌈256/c⌉ mixed additions for the buckets, ≈3 additions per bucket for the
//! reduction) minimized under the memory budget. Nothing is synchronized
//! between launches: the sort's total is read on the device.
//!
//! **Batch sums** ([`BatchSum`]): Σ P_i over a bitmap (bit i of word i/64,
//! LSB first) or an index list; each thread accumulates in XYZZ, then a tree.
//!
//! **Classification** ([`Classifier`]): zero / one / other per scalar, with the
//! ones' and others' indices compacted in increasing order, so a prover
//! skips zeros, batch-sums ones and runs Pippenger over the others only
//! ([`Msm::run_indexed`] takes that index list directly).
//!
//! Scratch memory is allocated once per [`Msm`] / [`BatchSum`] /
//! [`Classifier`] and reused by every call.

use std::fmt;
use std::marker::PhantomData;

use cudarc::driver::LaunchConfig;
use cuzk_field::limbs::{DeviceRepr, Fq2Limbs, FqLimbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Fq, Fq2, G1Projective, G2Projective};

use crate::device::{grid, DeviceBuffer, Event, Stream};
use crate::error::{ensure, Error, Result};
use crate::ffi::KernelArgs;

/// Smallest and largest window sizes the kernels support (bucket keys are
/// u32 and digits are extracted 31 bits at a time).
pub const MIN_WINDOW_BITS: u32 = 2;
pub const MAX_WINDOW_BITS: u32 = 24;

/// Most pairs one MSM takes: entries carry the point index in 31 bits.
pub const MAX_LEN: usize = 1 << 31;

/// Threads per block of the bucket accumulation (registers, not shared
/// memory, limit its occupancy; small blocks let the SMs fill up).
const ACCUMULATE_THREADS: u32 = 64;
/// Sorted entries per accumulation thread at least (below this the partial
/// slots outnumber the work).
const MIN_ENTRIES_PER_THREAD: usize = 8;
/// Partial slots per merge thread; each level shrinks the list by CHUNK/2.
const MERGE_CHUNK: u32 = 16;
const MERGE_THREADS: u32 = 64;
/// Most bucket-reduction threads (segments × windows). The plan runs one
/// full wave of the reduction kernel: every thread reduces one segment, so a
/// second, partly filled wave would double the time of a few threads' work
/// (H200, c = 20 at 2^24: 53,248 threads in 1.26 waves took 12.9 ms for G1
/// and 61 ms for G2; one wave of 202-bucket segments 9.9 and 49 ms).
const REDUCE_MAX_THREADS: u32 = 1 << 17;
const REDUCE_THREADS: u32 = 64;
/// Tree sums: threads per block and most blocks per group in the first pass.
const SUM_THREADS: u32 = 128;
const SUM_MAX_BLOCKS: u32 = 64;
/// Digit kernels: threads per block, blocks per SM.
const DIGIT_THREADS: u32 = 256;
const DIGIT_BLOCKS_PER_SM: u32 = 8;
/// Radix sort (kernels/msm/scalars.cu RADIX_*): threads per block, bits per
/// pass, items per tile.
const RADIX_THREADS: u32 = 256;
const RADIX_BITS: u32 = 8;
const RADIX_TILE: usize = 256 * 16;
/// Pairs the radix sort sorts at once (16 bytes of scratch each: 1 GiB): the
/// windows go in groups of ⌊RADIX_GROUP_PAIRS / n⌋ (at least one).
const RADIX_GROUP_PAIRS: usize = 1 << 26;
/// Pairs (len · windows) from which [`Msm::new`] sorts by radix. H200
/// (2026-11-30, kernels/msm/README.md run 6): the sort took 0.24 / 0.37 ms
/// (counting / radix) at 2^18 G1, 0.92 / 1.04 at 2^20, 20.9 / 12.5 at 2^24
/// and 83.9 / 48.6 at 2^26: the counting sort's atomics and scattered writes
/// cost more per pair once its cursors and entries outgrow the caches.
/// 2^22 (2^26 pairs at c = 16) is unmeasured; the cut is between.
const RADIX_MIN_PAIRS: usize = 1 << 25;
/// kernels/msm/scalars.cu SCAN_TILE and CLASSIFY_TILE.
pub(crate) const SCAN_TILE: usize = 256 * 16;
const CLASSIFY_TILE: usize = 256 * 8;
const BATCH_THREADS: u32 = 128;
/// Points per thread of the benchmark-base chain, and points per launch.
const CHAIN_LEN: u32 = 64;
const CHAIN_SLICE: usize = 1 << 22;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::G1 {}
    impl Sealed for super::G2 {}
}

/// The BLS12-381 groups the MSM kernels are built for: [`G1`] and [`G2`].
pub trait MsmCurve: sealed::Sealed + Send + Sync + 'static {
    /// "G1" or "G2", for messages.
    const NAME: &'static str;
    /// Affine base as the kernels read it (infinity = all zero).
    type Affine: DeviceRepr + Default + PartialEq + fmt::Debug;
    /// The host result type.
    type Projective: Copy + fmt::Debug + PartialEq;
    /// u64 words of one XYZZ point on the device (4 coordinates).
    #[doc(hidden)]
    const XYZZ_WORDS: usize;
    /// Kernel names: accumulate, merge, reduce_segments, sum_groups, horner,
    /// batch_sum_bitmap, batch_sum_indices, chain_bases.
    #[doc(hidden)]
    const KERNELS: [&'static str; 8];
    /// Accumulation kernels compiled with different launch bounds (index 0 is
    /// KERNELS' own); the benchmark times them.
    #[doc(hidden)]
    const ACCUMULATE_VARIANTS: &'static [&'static str];
    /// Likewise for the bitmap batch sum.
    #[doc(hidden)]
    const BITMAP_VARIANTS: &'static [&'static str];
    /// The variants used by default.
    #[doc(hidden)]
    const DEFAULT_ACCUMULATE_VARIANT: usize;
    #[doc(hidden)]
    const DEFAULT_BITMAP_VARIANT: usize;
    /// Builds the host point from Jacobian (X, Y, Z) Montgomery limbs, 3 ×
    /// XYZZ_WORDS / 4 words.
    #[doc(hidden)]
    fn from_jacobian_words(words: &[u64]) -> Self::Projective;
    /// Builds the host point from XYZZ (X, Y, ZZ, ZZZ) Montgomery limbs,
    /// XYZZ_WORDS words (ZZ = 0 is infinity).
    #[doc(hidden)]
    fn from_xyzz_words(words: &[u64]) -> Self::Projective;
    /// 2·p (host).
    #[doc(hidden)]
    fn double(p: &Self::Projective) -> Self::Projective;
    /// p + q (host).
    #[doc(hidden)]
    fn add(p: &Self::Projective, q: &Self::Projective) -> Self::Projective;
}

/// Jacobian (X·ZZ·ZZZ², Y·ZZZ⁴, ZZ·ZZZ) of an XYZZ point: the same map as
/// `xyzz_t::to_jacobian` on the device (x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²).
fn xyzz_to_jacobian<F: ff::Field>(x: F, y: F, zz: F, zzz: F) -> (F, F, F) {
    let zzz2 = zzz.square();
    (x * zz * zzz2, y * zzz2.square(), zz * zzz)
}

/// G1: bases [`G1AffineLimbs`], results [`G1Projective`].
#[derive(Clone, Copy, Debug)]
pub enum G1 {}
/// G2: bases [`G2AffineLimbs`], results [`G2Projective`].
#[derive(Clone, Copy, Debug)]
pub enum G2 {}

const K_ACCUMULATE: usize = 0;
const K_MERGE: usize = 1;
const K_REDUCE: usize = 2;
const K_SUM_GROUPS: usize = 3;
const K_HORNER: usize = 4;
const K_BITMAP: usize = 5;
const K_INDICES: usize = 6;
const K_CHAIN: usize = 7;

fn fq_from_words(w: &[u64]) -> Fq {
    let mut l = [0u64; 6];
    l.copy_from_slice(&w[..6]);
    Fq::from_raw_unchecked(l)
}

impl MsmCurve for G1 {
    const NAME: &'static str = "G1";
    type Affine = G1AffineLimbs;
    type Projective = G1Projective;
    const XYZZ_WORDS: usize = 4 * 6;
    const KERNELS: [&'static str; 8] = [
        "msm_accumulate_g1",
        "msm_merge_g1",
        "msm_reduce_segments_g1",
        "msm_sum_groups_g1",
        "msm_horner_g1",
        "msm_batch_sum_bitmap_g1",
        "msm_batch_sum_indices_g1",
        "msm_chain_bases_g1",
    ];
    // Residency variants (kernels/msm/g1.cu); the default kernel carries the
    // launch bounds that won on the H200.
    const ACCUMULATE_VARIANTS: &'static [&'static str] = &[
        "msm_accumulate_g1",
        "msm_accumulate_g1_8x64",
        "msm_accumulate_g1_unbounded",
    ];
    /// Unbounded registers: H200 17:51Z, 130.3 ms against 133.3 at 2^24, 468.3
    /// against 488.7 at 2^26.
    const DEFAULT_ACCUMULATE_VARIANT: usize = 2;
    const DEFAULT_BITMAP_VARIANT: usize = 0;
    const BITMAP_VARIANTS: &'static [&'static str] = &[
        "msm_batch_sum_bitmap_g1",
        "msm_batch_sum_bitmap_g1_4x128",
        "msm_batch_sum_bitmap_g1_unbounded",
    ];
    fn from_jacobian_words(w: &[u64]) -> G1Projective {
        G1Projective::from_raw_unchecked(
            fq_from_words(&w[0..6]),
            fq_from_words(&w[6..12]),
            fq_from_words(&w[12..18]),
        )
    }
    fn from_xyzz_words(w: &[u64]) -> G1Projective {
        let f = |i: usize| fq_from_words(&w[6 * i..6 * i + 6]);
        let (x, y, z) = xyzz_to_jacobian(f(0), f(1), f(2), f(3));
        G1Projective::from_raw_unchecked(x, y, z)
    }
    fn double(p: &G1Projective) -> G1Projective {
        cuzk_field::Group::double(p)
    }
    fn add(p: &G1Projective, q: &G1Projective) -> G1Projective {
        p + q
    }
}

impl MsmCurve for G2 {
    const NAME: &'static str = "G2";
    type Affine = G2AffineLimbs;
    type Projective = G2Projective;
    const XYZZ_WORDS: usize = 4 * 12;
    const KERNELS: [&'static str; 8] = [
        "msm_accumulate_g2",
        "msm_merge_g2",
        "msm_reduce_segments_g2",
        "msm_sum_groups_g2",
        "msm_horner_g2",
        "msm_batch_sum_bitmap_g2",
        "msm_batch_sum_indices_g2",
        "msm_chain_bases_g2",
    ];
    const ACCUMULATE_VARIANTS: &'static [&'static str] = &[
        "msm_accumulate_g2",
        "msm_accumulate_g2_noprefetch",
        "msm_accumulate_g2_noprefetch_eager",
    ];
    const BITMAP_VARIANTS: &'static [&'static str] = &["msm_batch_sum_bitmap_g2"];
    /// Without the prefetch: fewer spills (H200 17:51Z, 2^24: 376 ms against 425).
    const DEFAULT_ACCUMULATE_VARIANT: usize = 1;
    const DEFAULT_BITMAP_VARIANT: usize = 0;
    fn from_jacobian_words(w: &[u64]) -> G2Projective {
        let fq2 = |w: &[u64]| Fq2::new(fq_from_words(&w[0..6]), fq_from_words(&w[6..12]));
        G2Projective::from_raw_unchecked(fq2(&w[0..12]), fq2(&w[12..24]), fq2(&w[24..36]))
    }
    fn from_xyzz_words(w: &[u64]) -> G2Projective {
        let f = |i: usize| {
            let w = &w[12 * i..12 * i + 12];
            Fq2::new(fq_from_words(&w[0..6]), fq_from_words(&w[6..12]))
        };
        let (x, y, z) = xyzz_to_jacobian(f(0), f(1), f(2), f(3));
        G2Projective::from_raw_unchecked(x, y, z)
    }
    fn double(p: &G2Projective) -> G2Projective {
        cuzk_field::Group::double(p)
    }
    fn add(p: &G2Projective, q: &G2Projective) -> G2Projective {
        p + q
    }
}

// Layout pins for the limb types the kernels reinterpret.
const _: () =
    assert!(std::mem::size_of::<FqLimbs>() == 48 && std::mem::size_of::<Fq2Limbs>() == 96);
const _: () = assert!(
    std::mem::size_of::<G1AffineLimbs>() == 96 && std::mem::size_of::<G2AffineLimbs>() == 192
);

/// Number of windows for c-bit signed digits of a 255-bit scalar: the top
/// window must absorb the last carry, so c·W ≥ 256.
pub fn windows_for(window_bits: u32) -> u32 {
    256u32.div_ceil(window_bits)
}

/// How the (bucket, point) pairs are grouped by bucket before accumulation.
/// Both give every bucket the same multiset of entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketSort {
    /// Histogram, scan, scatter through per-bucket atomic cursors: few
    /// launches, but one return-value atomic and one random 4-byte write per
    /// pair (18.6 ms of 2.2e8 pairs at 2^24 on the H200).
    Counting,
    /// LSD radix sort of (key, entry) over 8-bit digits, reduce-then-scan
    /// per tile, no global atomics; bucket offsets from the sorted keys'
    /// run boundaries. Sorts the windows in groups of ≈ 2^26 pairs (at least
    /// one window), with 16 bytes of scratch per pair of a group: 1 GiB up
    /// to n = 2^26, 16·n bytes above.
    Radix,
}

impl BucketSort {
    /// The sort [`Msm::new`] uses for `len` pairs with c-bit windows.
    pub fn for_shape(len: usize, window_bits: u32) -> Self {
        let w = windows_for(window_bits);
        if len.saturating_mul(w as usize) >= RADIX_MIN_PAIRS {
            BucketSort::Radix
        } else {
            BucketSort::Counting
        }
    }
}

/// Windows per group of the radix sort for `len` pairs and W windows.
fn radix_group_windows(len: usize, windows: u32) -> u32 {
    (RADIX_GROUP_PAIRS / len.max(1)).clamp(1, windows as usize) as u32
}

/// Scratch of the radix sort beyond the counting sort's, for one group of
/// windows: keys and entries twice (ping-pong), the per-tile histograms and
/// their scan, and the running count of sorted entries.
struct RadixScratch {
    keys: [DeviceBuffer<u32>; 2],
    vals: [DeviceBuffer<u32>; 2],
    tile_hist: DeviceBuffer<u32>,
    tile_off: DeviceBuffer<u32>,
    tile_sums: DeviceBuffer<u32>,
    done: DeviceBuffer<u32>,
    /// Windows per group.
    group: u32,
}

/// (pairs per group, histogram words) of the radix scratch for groups of
/// `group` windows.
fn radix_sizes(len: usize, group: u32) -> (usize, usize) {
    let pairs = (len * group as usize).max(1);
    (pairs, (1usize << RADIX_BITS) * pairs.div_ceil(RADIX_TILE))
}

/// Bytes of [`RadixScratch`]: 16 per pair of a group, ≈ 0.5 per pair for the
/// histograms.
fn radix_scratch_bytes(len: usize, windows: u32) -> usize {
    let (pairs, hist) = radix_sizes(len, radix_group_windows(len, windows));
    4 * pairs * 4 + (2 * hist + 1 + hist.div_ceil(SCAN_TILE) + 1 + 1) * 4
}

impl RadixScratch {
    fn new(stream: &Stream, max_len: usize, group: u32) -> Result<Self> {
        let (pairs, hist) = radix_sizes(max_len, group);
        Ok(RadixScratch {
            keys: [stream.alloc(pairs)?, stream.alloc(pairs)?],
            vals: [stream.alloc(pairs)?, stream.alloc(pairs)?],
            tile_hist: stream.alloc(hist)?,
            tile_off: stream.alloc(hist + 1)?,
            tile_sums: stream.alloc(hist.div_ceil(SCAN_TILE) + 1)?,
            done: stream.alloc(1)?,
            group,
        })
    }
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
/// parallelism of each phase. Pure data; [`Msm::new`] derives it from the
/// device, [`Msm::with_window_bits`] lets a sweep pick c.
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
    fn new(
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

    fn segments(&self) -> u32 {
        self.buckets_per_window().div_ceil(self.segment_len)
    }

    fn sum_blocks(&self) -> u32 {
        self.segments()
            .div_ceil(SUM_THREADS)
            .clamp(1, SUM_MAX_BLOCKS)
    }
}

/// Step times of the last profiled MSM: (step, milliseconds) in launch order
/// ("histogram", "scan", "scatter", or "radix digits", "radix sort",
/// "bucket offsets"; then "accumulate", "merge", "reduce", "window sums").
pub type MsmPhases = Vec<(&'static str, f32)>;

/// A reusable Pippenger MSM for curve `C` on one stream, with its scratch.
pub struct Msm<C: MsmCurve> {
    stream: Stream,
    plan: MsmPlan,
    counts: DeviceBuffer<u32>,
    offsets: DeviceBuffer<u32>,
    cursors: DeviceBuffer<u32>,
    tile_sums: DeviceBuffer<u32>,
    entries: DeviceBuffer<u32>,
    bucket_sums: DeviceBuffer<u64>,
    part_keys: [DeviceBuffer<u32>; 2],
    part_pts: [DeviceBuffer<u64>; 2],
    segment_sums: DeviceBuffer<u64>,
    group_sums: DeviceBuffer<u64>,
    window_sums: DeviceBuffer<u64>,
    /// Present when the plan sorts by radix.
    radix: Option<RadixScratch>,
    profile: bool,
    /// Profiling marks: an event after each step, labelled by the step.
    marks: Vec<(&'static str, Event)>,
    _curve: PhantomData<C>,
}

impl<C: MsmCurve> fmt::Debug for Msm<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Msm")
            .field("curve", &C::NAME)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl<C: MsmCurve> Msm<C> {
    /// An MSM for up to `max_len` pairs, window size chosen for `max_len` by
    /// the cost model (at most 2^20 buckets per window; see
    /// [`scratch_bytes`] for the memory it takes from the stream's arena).
    pub fn new(stream: &Stream, max_len: usize) -> Result<Self> {
        Self::with_window_bits(stream, max_len, Self::window_bits_for(max_len))
    }

    /// The window size [`Msm::new`] picks for `max_len` pairs.
    pub fn window_bits_for(max_len: usize) -> u32 {
        choose_window_bits(max_len.max(1), C::XYZZ_WORDS * 8, usize::MAX)
    }

    /// Device bytes [`Msm::new`]`(max_len)` takes from the arena (with
    /// alignment slack).
    pub fn bytes_for(max_len: usize) -> u64 {
        scratch_bytes(
            max_len.max(1),
            Self::window_bits_for(max_len),
            C::XYZZ_WORDS * 8,
        ) as u64
            + 16 * crate::arena::ALIGN
    }

    /// An MSM for up to `max_len` pairs with window size `window_bits`.
    pub fn with_window_bits(stream: &Stream, max_len: usize, window_bits: u32) -> Result<Self> {
        Self::with_tuning(stream, max_len, window_bits, C::DEFAULT_ACCUMULATE_VARIANT)
    }

    /// As [`Msm::with_window_bits`], with a chosen accumulation kernel variant
    /// (for tuning sweeps; see `MsmCurve::ACCUMULATE_VARIANTS`).
    #[doc(hidden)]
    pub fn with_tuning(
        stream: &Stream,
        max_len: usize,
        window_bits: u32,
        variant: usize,
    ) -> Result<Self> {
        let kernel = C::KERNELS[K_ACCUMULATE];
        ensure(kernel, variant < C::ACCUMULATE_VARIANTS.len(), || {
            format!("no accumulation variant {variant}")
        })?;
        ensure(
            kernel,
            (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&window_bits),
            || format!("window size {window_bits} outside {MIN_WINDOW_BITS}..={MAX_WINDOW_BITS}"),
        )?;
        ensure(kernel, max_len < MAX_LEN, || {
            format!("{max_len} pairs: at most 2^31 − 1")
        })?;
        ensure(
            kernel,
            max_len.saturating_mul(windows_for(window_bits) as usize) <= u32::MAX as usize,
            || {
                format!(
                    "{max_len} pairs × {} windows overflow 32-bit entry offsets",
                    windows_for(window_bits)
                )
            },
        )?;
        let kernel = C::ACCUMULATE_VARIANTS[variant];
        let capacity = resident_threads(stream, kernel, ACCUMULATE_THREADS)?;
        let reduce_capacity = resident_threads(stream, C::KERNELS[K_REDUCE], REDUCE_THREADS)?;
        let plan = MsmPlan::new(max_len, window_bits, capacity, reduce_capacity, variant);
        Self::with_plan(stream, plan)
    }

    /// An MSM with an explicit plan (e.g. from a sweep).
    pub fn with_plan(stream: &Stream, plan: MsmPlan) -> Result<Self> {
        let keys = plan.keys();
        let parts = 2 * plan.accumulate_threads as usize;
        let xw = C::XYZZ_WORDS;
        let w = plan.windows as usize;
        Ok(Msm {
            stream: stream.clone(),
            counts: stream.alloc(keys)?,
            offsets: stream.alloc(keys + 1)?,
            cursors: stream.alloc(keys + 1)?,
            tile_sums: stream.alloc(keys.div_ceil(SCAN_TILE) + 1)?,
            entries: stream.alloc((plan.max_len * w).max(1))?,
            bucket_sums: stream.alloc(keys * xw)?,
            part_keys: [stream.alloc(parts)?, stream.alloc(parts)?],
            part_pts: [stream.alloc(parts * xw)?, stream.alloc(parts * xw)?],
            segment_sums: stream.alloc(w * plan.segments() as usize * xw)?,
            group_sums: stream.alloc(w * plan.sum_blocks() as usize * xw)?,
            window_sums: stream.alloc(w * xw)?,
            radix: match plan.sort {
                BucketSort::Radix => Some(RadixScratch::new(
                    stream,
                    plan.max_len,
                    radix_group_windows(plan.max_len, plan.windows),
                )?),
                BucketSort::Counting => None,
            },
            profile: false,
            marks: Vec::new(),
            plan,
            _curve: PhantomData,
        })
    }

    pub fn plan(&self) -> &MsmPlan {
        &self.plan
    }

    /// Switches the bucket sort (allocating the radix scratch if needed); for
    /// tests and benchmarks.
    pub fn set_bucket_sort(&mut self, sort: BucketSort) -> Result<()> {
        if sort == BucketSort::Radix && self.radix.is_none() {
            let group = radix_group_windows(self.plan.max_len, self.plan.windows);
            self.radix = Some(RadixScratch::new(&self.stream, self.plan.max_len, group)?);
        }
        self.plan.sort = sort;
        Ok(())
    }

    /// Sorts by radix with groups of `windows` windows (1 ..= W; reallocates
    /// the scratch): for tests of the grouping.
    #[doc(hidden)]
    pub fn set_radix_group(&mut self, windows: u32) -> Result<()> {
        ensure(
            "msm_radix_scatter",
            (1..=self.plan.windows).contains(&windows),
            || format!("groups of {windows} of {} windows", self.plan.windows),
        )?;
        self.radix = None;
        self.radix = Some(RadixScratch::new(&self.stream, self.plan.max_len, windows)?);
        self.plan.sort = BucketSort::Radix;
        Ok(())
    }

    /// Runs only the bucket sort and returns (offsets[0..=keys], the sorted
    /// entries[0..offsets[keys]]): for tests that compare the two sorts.
    /// `bound` stands for the bases' length: pairs at or past
    /// min(bound, scalars.len()) have zero digits, as in [`Msm::enqueue`].
    #[doc(hidden)]
    pub fn sorted_buckets(
        &mut self,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
        bound: usize,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let kernel = "msm_digit_histogram";
        ensure(kernel, len <= self.plan.max_len, || {
            format!("{len} pairs, planned for at most {}", self.plan.max_len)
        })?;
        match indices {
            Some(idx) => ensure(kernel, len <= idx.len(), || {
                format!("{len} pairs but {} indices", idx.len())
            })?,
            None => ensure(kernel, len <= bound, || {
                format!("{len} scalars but a bound of {bound} (the bases' length)")
            })?,
        }
        let bound = bound.min(scalars.len()).min(u32::MAX as usize) as u32;
        self.marks.clear();
        self.sort(scalars, indices, len, bound)?;
        let offsets = self.stream.download_vec(&self.offsets)?;
        let total = offsets[self.plan.keys()] as usize;
        let entries = self.stream.download_vec(&self.entries)?;
        Ok((offsets, entries[..total].to_vec()))
    }

    /// Records phase events on later calls (see [`Msm::last_phases`]).
    pub fn set_profiling(&mut self, on: bool) {
        self.profile = on;
        self.marks.clear();
    }

    /// Step times of the last call made with profiling on (waits for it).
    pub fn last_phases(&self) -> Result<Option<MsmPhases>> {
        if self.marks.len() < 2 {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(self.marks.len() - 1);
        for pair in self.marks.windows(2) {
            out.push((pair[1].0, pair[0].1.elapsed_ms(&pair[1].1)?));
        }
        Ok(Some(out))
    }

    /// Records a profiling event labelled with the step that just ended.
    fn mark(&mut self, step: &'static str) -> Result<()> {
        if self.profile {
            let e = self.stream.record()?;
            self.marks.push((step, e));
        }
        Ok(())
    }

    /// Σ scalars[i]·bases[i] for i < scalars.len() (bases may be longer).
    pub fn run(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
    ) -> Result<C::Projective> {
        self.enqueue(bases, scalars, None, scalars.len())?;
        self.result()
    }

    /// Σ scalars[idx[j]]·bases[idx[j]] for j < count (e.g. the "others" of a
    /// [`Classifier`]). Indices beyond either array are skipped.
    pub fn run_indexed(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<C::Projective> {
        self.enqueue(bases, scalars, Some(indices), count)?;
        self.result()
    }

    /// Queues the MSM on the stream without waiting; [`Msm::result`] reads it.
    /// With `indices`, the pairs are idx[0..len); else 0..len.
    pub fn enqueue(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
    ) -> Result<()> {
        let kernel = "msm_digit_histogram";
        let plan = self.plan.clone();
        ensure(kernel, len <= plan.max_len, || {
            format!("{len} pairs, planned for at most {}", plan.max_len)
        })?;
        match indices {
            Some(idx) => ensure(kernel, len <= idx.len(), || {
                format!("{len} pairs but {} indices", idx.len())
            })?,
            None => ensure(kernel, len <= bases.len(), || {
                format!("{len} scalars but {} {} bases", bases.len(), C::NAME)
            })?,
        }
        let bound = bases.len().min(scalars.len()).min(u32::MAX as usize) as u32;
        self.marks.clear();

        // 1. Sort of (bucket, point) pairs by bucket.
        self.sort(scalars, indices, len, bound)?;
        let keys = plan.keys() as u32;
        self.step_2_3(bases, len, keys)
    }

    /// Step 1: entries grouped by bucket key, offsets[key] where each starts
    /// (offsets[keys] = the number of entries). Marks "start" first.
    fn sort(
        &mut self,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
        bound: u32,
    ) -> Result<()> {
        self.mark("start")?;
        if self.plan.sort == BucketSort::Radix {
            return self.radix_sort(scalars, indices, len, bound);
        }
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let keys = plan.keys() as u32;
        fill_u32(s, &self.counts, 0, keys)?;
        let digit_grid = grid(
            (len as u32)
                .div_ceil(DIGIT_THREADS)
                .clamp(1, s.gpu().info().multiprocessors * DIGIT_BLOCKS_PER_SM),
            DIGIT_THREADS,
        );
        let idx_ptr = indices.map_or(0, |b| b.device_ptr());
        let sizes = || {
            format!(
                "{len} pairs, c = {}, {} windows",
                plan.window_bits, plan.windows
            )
        };
        let args = KernelArgs::new()
            .device_ptr(scalars.device_ptr())
            .device_ptr(idx_ptr)
            .u32(len as u32)
            .u32(bound)
            .u32(plan.window_bits)
            .u32(plan.windows)
            .device_ptr(self.counts.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: arguments in the order of msm_digit_histogram; scalars are read
        // at indices < bound ≤ scalars.len() (or < len ≤ bound), idx at j < len ≤
        // idx.len(), counts at keys < plan.keys() = counts.len().
        unsafe {
            s.launch("msm_digit_histogram", digit_grid, args, sizes)?;
        }
        self.mark("histogram")?;
        exclusive_scan(
            s,
            &self.counts,
            keys,
            &self.tile_sums,
            &self.offsets,
            Some(&self.cursors),
        )?;
        self.mark("scan")?;
        let args = KernelArgs::new()
            .device_ptr(scalars.device_ptr())
            .device_ptr(idx_ptr)
            .u32(len as u32)
            .u32(bound)
            .u32(plan.window_bits)
            .u32(plan.windows)
            .device_ptr(self.cursors.device_ptr())
            .device_ptr(self.entries.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: as for the histogram; cursors has keys + 1 entries and every
        // position written is < offsets[keys] ≤ len·windows ≤ entries.len().
        unsafe {
            s.launch("msm_digit_scatter", digit_grid, args, sizes)?;
        }
        self.mark("scatter")
    }

    /// The radix sort (see kernels/msm/scalars.cu): the keys of all pairs into
    /// `entries`, window-major; then per group of windows
    /// ⌈log₂(W·2^(c−1) + 1) / 8⌉ passes, the last writing the group's entries
    /// after those of the groups before, and the group's bucket counts; then
    /// the scan of the counts into offsets.
    fn radix_sort(
        &mut self,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
        bound: u32,
    ) -> Result<()> {
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let keys = plan.keys() as u32;
        let sentinel = keys; // W·2^(c−1): zero digits, sorted past every bucket
        let passes = (32 - sentinel.leading_zeros()).div_ceil(RADIX_BITS);
        let windows = plan.windows;
        let r = self.radix.as_ref().ok_or_else(|| Error::BadArguments {
            kernel: "msm_radix_scatter",
            message: "radix sort without its scratch".into(),
        })?;
        let group = r.group;
        // Two passes at least: the first reads keys from `entries`, the last
        // writes entries there, and they must not be one launch.
        ensure("msm_radix_scatter", passes >= 2, || {
            format!("{passes} passes for keys below {sentinel}")
        })?;
        ensure(
            "msm_radix_scatter",
            len * group as usize <= r.keys[0].len(),
            || format!("{len} pairs × {group} windows, scratch {}", r.keys[0].len()),
        )?;
        let word = std::mem::size_of::<u32>() as u64;
        let idx_ptr = indices.map_or(0, |b| b.device_ptr());
        fill_u32(s, &self.counts, 0, keys)?;
        fill_u32(s, &r.done, 0, 1)?;
        if len > 0 {
            let blocks = (len as u32)
                .div_ceil(256)
                .min(s.gpu().info().multiprocessors * DIGIT_BLOCKS_PER_SM);
            let args = KernelArgs::new()
                .device_ptr(scalars.device_ptr())
                .device_ptr(idx_ptr)
                .u32(len as u32)
                .u32(bound)
                .u32(plan.window_bits)
                .u32(windows)
                .device_ptr(self.entries.device_ptr());
            #[allow(unsafe_code)]
            // SAFETY: msm_radix_digits(scalars, idx, n, bound, c, windows,
            // keys_out): reads scalars below bound ≤ scalars.len() and idx[0..len)
            // (len ≤ idx.len(), checked by the callers); writes
            // entries[0..len·windows), len ≤ max_len.
            unsafe {
                s.launch("msm_radix_digits", grid(blocks, 256), args, || {
                    format!("{len} scalars, c = {}", plan.window_bits)
                })?;
            }
        }
        // (self.mark would borrow all of self while `r` is held.)
        if self.profile {
            let e = s.record()?;
            self.marks.push(("radix digits", e));
        }
        let mut w0 = 0;
        while len > 0 && w0 < windows {
            let w1 = (w0 + group).min(windows);
            let total = (len * (w1 - w0) as usize) as u32;
            let ntiles = (total as usize).div_ceil(RADIX_TILE) as u32;
            let hist = ntiles << RADIX_BITS;
            let sizes =
                || format!("windows {w0}..{w1} of {len} pairs, {ntiles} tiles, {passes} passes");
            ensure(
                "msm_radix_counts",
                hist as usize <= r.tile_hist.len(),
                sizes,
            )?;
            for p in 0..passes {
                let shift = p * RADIX_BITS;
                let last = p + 1 == passes;
                let (keys_in, vals_in) = if p == 0 {
                    (self.entries.device_ptr() + w0 as u64 * len as u64 * word, 0)
                } else {
                    let q = ((p - 1) % 2) as usize;
                    (r.keys[q].device_ptr(), r.vals[q].device_ptr())
                };
                let q = (p % 2) as usize;
                let (vals_out, out_base) = if last {
                    (self.entries.device_ptr(), r.done.device_ptr())
                } else {
                    (r.vals[q].device_ptr(), 0)
                };
                let args = KernelArgs::new()
                    .device_ptr(keys_in)
                    .u32(total)
                    .u32(shift)
                    .device_ptr(r.tile_hist.device_ptr())
                    .u32(ntiles);
                #[allow(unsafe_code)]
                // SAFETY: msm_radix_counts(keys_in, total, shift, tile_hist,
                // ntiles): reads keys_in[0..total) (the group's slice of
                // entries, or a scratch buffer of ≥ total words), writes
                // tile_hist[0..256·ntiles), within its length (checked above).
                unsafe {
                    s.launch("msm_radix_counts", grid(ntiles, RADIX_THREADS), args, sizes)?;
                }
                exclusive_scan(s, &r.tile_hist, hist, &r.tile_sums, &r.tile_off, None)?;
                let args = KernelArgs::new()
                    .device_ptr(keys_in)
                    .device_ptr(vals_in)
                    .u32(total)
                    .u32(shift)
                    .device_ptr(r.tile_off.device_ptr())
                    .u32(ntiles)
                    .device_ptr(idx_ptr)
                    .u32(len as u32)
                    .device_ptr(out_base)
                    .device_ptr(r.keys[q].device_ptr())
                    .device_ptr(vals_out);
                #[allow(unsafe_code)]
                // SAFETY: msm_radix_scatter(keys_in, vals_in, total, shift,
                // tile_off, ntiles, idx, n, out_base, keys_out, vals_out): reads
                // [0..total) of the inputs and idx[0..len); writes a permutation
                // of [0, total) of keys[q] (≠ the input buffer) and of vals_out:
                // scratch, or entries from *done (the real entries of earlier
                // groups, ≤ w0·len) to at most w1·len ≤ entries.len(), keys of
                // later groups untouched.
                unsafe {
                    s.launch(
                        "msm_radix_scatter",
                        grid(ntiles, RADIX_THREADS),
                        args,
                        sizes,
                    )?;
                }
            }
            let q = ((passes - 1) % 2) as usize;
            let blocks = total
                .div_ceil(256)
                .min(s.gpu().info().multiprocessors * DIGIT_BLOCKS_PER_SM * 2);
            let args = KernelArgs::new()
                .device_ptr(r.keys[q].device_ptr())
                .u32(total)
                .u32(sentinel)
                .device_ptr(self.counts.device_ptr())
                .device_ptr(r.done.device_ptr());
            #[allow(unsafe_code)]
            // SAFETY: msm_radix_bucket_counts(keys, total, sentinel, counts,
            // real_total): reads keys[q][0..total), adds to counts[k] for k <
            // sentinel = plan.keys() = counts.len() and to done[0].
            unsafe {
                s.launch("msm_radix_bucket_counts", grid(blocks, 256), args, sizes)?;
            }
            w0 = w1;
        }
        if self.profile {
            let e = s.record()?;
            self.marks.push(("radix sort", e));
        }
        exclusive_scan(s, &self.counts, keys, &self.tile_sums, &self.offsets, None)?;
        self.mark("bucket offsets")
    }

    /// Steps 2 and 3: accumulation, merge levels, bucket reduction, window sums.
    fn step_2_3(&mut self, bases: &DeviceBuffer<C::Affine>, len: usize, keys: u32) -> Result<()> {
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;

        // 2. Bucket accumulation, then merge levels over the partial slots.
        let t = plan.accumulate_threads;
        let args = KernelArgs::new()
            .device_ptr(bases.device_ptr())
            .device_ptr(self.entries.device_ptr())
            .device_ptr(self.offsets.device_ptr())
            .u32(keys)
            .u32(t)
            .device_ptr(self.bucket_sums.device_ptr())
            .device_ptr(self.part_keys[0].device_ptr())
            .device_ptr(self.part_pts[0].device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_accumulate_*; entries hold point indices
        // < bound ≤ bases.len() (written by the scatter above); thread t writes
        // partial slots 2t, 2t+1 < 2·accumulate_threads; keys < bucket_sums.
        unsafe {
            s.launch(
                C::ACCUMULATE_VARIANTS[plan.accumulate_variant],
                grid(t / ACCUMULATE_THREADS, ACCUMULATE_THREADS),
                args,
                || format!("{len} pairs, {} keys, {t} threads", plan.keys()),
            )?;
        }
        self.mark("accumulate")?;
        let mut len_parts = 2 * t;
        let mut src = 0;
        loop {
            let last = len_parts <= MERGE_CHUNK;
            let threads = if last {
                1
            } else {
                len_parts.div_ceil(MERGE_CHUNK)
            };
            let chunk = if last { len_parts } else { MERGE_CHUNK };
            let (out_keys, out_pts) = if last {
                (0, 0)
            } else {
                (
                    self.part_keys[1 - src].device_ptr(),
                    self.part_pts[1 - src].device_ptr(),
                )
            };
            let args = KernelArgs::new()
                .device_ptr(self.part_keys[src].device_ptr())
                .device_ptr(self.part_pts[src].device_ptr())
                .u32(len_parts)
                .u32(chunk)
                .u32(threads)
                .device_ptr(self.bucket_sums.device_ptr())
                .device_ptr(out_keys)
                .device_ptr(out_pts);
            #[allow(unsafe_code)]
            // SAFETY: argument order of msm_merge_*; reads slots < len_parts ≤
            // 2t, writes out slots < 2·threads < len_parts and keys written by
            // earlier levels (< keys).
            unsafe {
                s.launch(
                    C::KERNELS[K_MERGE],
                    grid(threads.div_ceil(MERGE_THREADS), MERGE_THREADS),
                    args,
                    || format!("{len_parts} partial sums, chunk {chunk}"),
                )?;
            }
            if last {
                break;
            }
            len_parts = 2 * threads;
            src = 1 - src;
        }
        self.mark("merge")?;

        // 3. Bucket reduction, window sums, Horner.
        let segs = plan.segments();
        let nthreads = segs * plan.windows;
        let args = KernelArgs::new()
            .device_ptr(self.bucket_sums.device_ptr())
            .device_ptr(self.offsets.device_ptr())
            .u32(plan.buckets_per_window())
            .u32(plan.segment_len)
            .u32(segs)
            .u32(plan.windows)
            .device_ptr(self.segment_sums.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_reduce_segments_*; reads keys <
        // windows·buckets (bucket sums only where offsets say non-empty), writes
        // windows·segments sums.
        unsafe {
            s.launch(
                C::KERNELS[K_REDUCE],
                grid(nthreads.div_ceil(REDUCE_THREADS), REDUCE_THREADS),
                args,
                || {
                    format!(
                        "{} windows × {segs} segments of {}",
                        plan.windows, plan.segment_len
                    )
                },
            )?;
        }
        self.mark("reduce")?;
        let blocks = plan.sum_blocks();
        sum_groups::<C>(
            s,
            &self.segment_sums,
            segs,
            plan.windows,
            blocks,
            &self.group_sums,
        )?;
        sum_groups::<C>(
            s,
            &self.group_sums,
            blocks,
            plan.windows,
            1,
            &self.window_sums,
        )?;
        self.mark("window sums")?;
        // Horner over the windows runs on the host (see `result`): on the
        // device it is one thread's chain of ~256 dependent doublings
        // (7 ms for G1, 21 ms for G2 on the H200), on the CPU well under 1 ms.
        Ok(())
    }

    /// Waits for the queued MSM and returns its result: the window sums are
    /// downloaded and combined, Σ_w 2^(c·w)·R_w, on the host.
    pub fn result(&self) -> Result<C::Projective> {
        let words = self.stream.download_vec(&self.window_sums)?;
        let xw = C::XYZZ_WORDS;
        let c = self.plan.window_bits;
        let windows = self.plan.windows as usize;
        let sum = |w: usize| C::from_xyzz_words(&words[w * xw..(w + 1) * xw]);
        let mut acc = sum(windows - 1);
        for w in (0..windows - 1).rev() {
            for _ in 0..c {
                acc = C::double(&acc);
            }
            acc = C::add(&acc, &sum(w));
        }
        Ok(acc)
    }
}

/// Threads of `kernel` (in blocks of `block`) resident on the whole device at once.
fn resident_threads(stream: &Stream, kernel: &'static str, block: u32) -> Result<u32> {
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

/// out[y·blocks + x] = Σ of block x's share of group y's `len` points.
fn sum_groups<C: MsmCurve>(
    s: &Stream,
    input: &DeviceBuffer<u64>,
    len: u32,
    groups: u32,
    blocks: u32,
    out: &DeviceBuffer<u64>,
) -> Result<()> {
    let kernel = C::KERNELS[K_SUM_GROUPS];
    let xw = C::XYZZ_WORDS;
    ensure(
        kernel,
        input.len() >= len as usize * groups as usize * xw,
        || format!("{} words for {groups} groups of {len} points", input.len()),
    )?;
    ensure(
        kernel,
        out.len() >= blocks as usize * groups as usize * xw,
        || format!("output {} words for {groups} × {blocks}", out.len()),
    )?;
    let args = KernelArgs::new()
        .device_ptr(input.device_ptr())
        .u32(len)
        .device_ptr(out.device_ptr());
    let cfg = LaunchConfig {
        grid_dim: (blocks, groups, 1),
        block_dim: (SUM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: argument order of msm_sum_groups_*; sizes checked above.
    unsafe {
        s.launch(kernel, cfg, args, || {
            format!("{groups} groups of {len} points, {blocks} blocks")
        })
    }
}

/// out (Jacobian) = Σ_w 2^(c·w)·sums[w].
fn horner<C: MsmCurve>(
    s: &Stream,
    sums: &DeviceBuffer<u64>,
    windows: u32,
    c: u32,
    out: &DeviceBuffer<u64>,
) -> Result<()> {
    let kernel = C::KERNELS[K_HORNER];
    ensure(
        kernel,
        windows >= 1 && sums.len() >= windows as usize * C::XYZZ_WORDS,
        || format!("{windows} windows in {} words", sums.len()),
    )?;
    ensure(kernel, out.len() * 4 == 3 * C::XYZZ_WORDS, || {
        format!("output of {} words", out.len())
    })?;
    let args = KernelArgs::new()
        .device_ptr(sums.device_ptr())
        .u32(windows)
        .u32(c)
        .device_ptr(out.device_ptr());
    #[allow(unsafe_code)]
    // SAFETY: argument order of msm_horner_*; sizes checked above.
    unsafe {
        s.launch(kernel, grid(1, 1), args, || {
            format!("{windows} windows of {c} bits")
        })
    }
}

fn fill_u32(s: &Stream, buf: &DeviceBuffer<u32>, value: u32, len: u32) -> Result<()> {
    ensure("msm_fill_u32", len as usize <= buf.len(), || {
        format!("{len} of {}", buf.len())
    })?;
    if len == 0 {
        return Ok(());
    }
    let blocks = len.div_ceil(256).min(s.gpu().info().multiprocessors * 16);
    let args = KernelArgs::new()
        .device_ptr(buf.device_ptr())
        .u32(len)
        .u32(value);
    #[allow(unsafe_code)]
    // SAFETY: msm_fill_u32(dst, len, value) writes dst[0..len), len ≤ buf.len().
    unsafe {
        s.launch("msm_fill_u32", grid(blocks, 256), args, || {
            format!("{len} words")
        })
    }
}

/// out[i] = Σ_{k<i} input[k] for i ≤ len (out[len] = total); out2 likewise.
pub(crate) fn exclusive_scan(
    s: &Stream,
    input: &DeviceBuffer<u32>,
    len: u32,
    tile_sums: &DeviceBuffer<u32>,
    out: &DeviceBuffer<u32>,
    out2: Option<&DeviceBuffer<u32>>,
) -> Result<()> {
    let tiles = (len as usize).div_ceil(SCAN_TILE) as u32;
    let n = len as usize;
    ensure(
        "msm_scan_tiles",
        input.len() >= n && out.len() > n && out2.is_none_or(|o| o.len() > n),
        || format!("scan of {len}: input {}, output {}", input.len(), out.len()),
    )?;
    ensure(
        "msm_scan_tile_sums",
        tile_sums.len() > tiles as usize,
        || format!("{tiles} tiles, {} tile sums", tile_sums.len()),
    )?;
    let out2_ptr = out2.map_or(0, |o| o.device_ptr());
    let sizes = || format!("scan of {len} words, {tiles} tiles");
    if tiles > 0 {
        let args = KernelArgs::new()
            .device_ptr(input.device_ptr())
            .u32(len)
            .device_ptr(tile_sums.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: msm_scan_tile_sums(in, len, tile_sums): reads in[0..len), writes
        // tile_sums[0..tiles); sizes checked above.
        unsafe {
            s.launch("msm_scan_tile_sums", grid(tiles, 256), args, sizes)?;
        }
    }
    let args = KernelArgs::new()
        .device_ptr(tile_sums.device_ptr())
        .u32(tiles)
        .device_ptr(out.device_ptr())
        .device_ptr(out2_ptr)
        .u32(len);
    #[allow(unsafe_code)]
    // SAFETY: msm_scan_tile_offsets(tile_sums, ntiles, out, out2, len): one block;
    // rewrites tile_sums[0..=tiles], writes out[len] and out2[len].
    unsafe {
        s.launch("msm_scan_tile_offsets", grid(1, 1024), args, sizes)?;
    }
    if tiles > 0 {
        let args = KernelArgs::new()
            .device_ptr(input.device_ptr())
            .u32(len)
            .device_ptr(tile_sums.device_ptr())
            .device_ptr(out.device_ptr())
            .device_ptr(out2_ptr);
        #[allow(unsafe_code)]
        // SAFETY: msm_scan_tiles(in, len, tile_offsets, out, out2): reads
        // in[0..len) and tile_offsets[0..tiles), writes out[0..len), out2[0..len).
        unsafe {
            s.launch("msm_scan_tiles", grid(tiles, 256), args, sizes)?;
        }
    }
    Ok(())
}

/// Reusable batch summation Σ P_i over selected points, for curve `C`.
pub struct BatchSum<C: MsmCurve> {
    stream: Stream,
    blocks: u32,
    bitmap_kernel: &'static str,
    partials: DeviceBuffer<u64>,
    partials2: DeviceBuffer<u64>,
    result: DeviceBuffer<u64>,
    _curve: PhantomData<C>,
}

impl<C: MsmCurve> fmt::Debug for BatchSum<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSum")
            .field("curve", &C::NAME)
            .field("blocks", &self.blocks)
            .finish_non_exhaustive()
    }
}

impl<C: MsmCurve> BatchSum<C> {
    pub fn new(stream: &Stream) -> Result<Self> {
        Self::with_variant(stream, C::DEFAULT_BITMAP_VARIANT)
    }

    /// With a chosen bitmap kernel variant (for tuning; see
    /// `MsmCurve::BITMAP_VARIANTS`).
    #[doc(hidden)]
    pub fn with_variant(stream: &Stream, variant: usize) -> Result<Self> {
        let kernel = C::KERNELS[K_BITMAP];
        ensure(kernel, variant < C::BITMAP_VARIANTS.len(), || {
            format!("no bitmap variant {variant}")
        })?;
        let bitmap_kernel = C::BITMAP_VARIANTS[variant];
        let blocks = resident_threads(stream, bitmap_kernel, BATCH_THREADS)? / BATCH_THREADS;
        let xw = C::XYZZ_WORDS;
        Ok(BatchSum {
            stream: stream.clone(),
            blocks,
            bitmap_kernel,
            partials: stream.alloc(blocks as usize * xw)?,
            partials2: stream.alloc(SUM_MAX_BLOCKS as usize * xw)?,
            result: stream.alloc(3 * xw / 4)?,
            _curve: PhantomData,
        })
    }

    /// Σ bases[i] over i < n with bit i of `bitmap` set (word i/64, LSB first;
    /// bits at i ≥ n are ignored).
    pub fn sum_bitmap(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        bitmap: &DeviceBuffer<u64>,
        n: usize,
    ) -> Result<C::Projective> {
        self.enqueue_bitmap(bases, bitmap, n)?;
        self.result()
    }

    /// Σ bases[indices[j]] for j < count; indices ≥ bases.len() are skipped.
    pub fn sum_indices(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<C::Projective> {
        self.enqueue_indices(bases, indices, count)?;
        self.result()
    }

    pub fn enqueue_bitmap(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        bitmap: &DeviceBuffer<u64>,
        n: usize,
    ) -> Result<()> {
        let kernel = self.bitmap_kernel;
        ensure(kernel, n <= bases.len() && n < MAX_LEN, || {
            format!("{n} points selected from {} bases", bases.len())
        })?;
        ensure(kernel, n.div_ceil(64) <= bitmap.len(), || {
            format!("{n} points but a bitmap of {} words", bitmap.len())
        })?;
        let args = KernelArgs::new()
            .device_ptr(bases.device_ptr())
            .device_ptr(bitmap.device_ptr())
            .u32(n as u32)
            .device_ptr(self.partials.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_batch_sum_bitmap_*; reads bases[i] and
        // bitmap words for i < n only (checked above); writes partials[0..blocks).
        unsafe {
            self.stream
                .launch(kernel, grid(self.blocks, BATCH_THREADS), args, || {
                    format!("{n} points")
                })?;
        }
        self.finish()
    }

    pub fn enqueue_indices(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<()> {
        let kernel = C::KERNELS[K_INDICES];
        ensure(kernel, count <= indices.len() && count < MAX_LEN, || {
            format!("{count} indices asked, {} present", indices.len())
        })?;
        let nbases = bases.len().min(u32::MAX as usize) as u32;
        let args = KernelArgs::new()
            .device_ptr(bases.device_ptr())
            .u32(nbases)
            .device_ptr(indices.device_ptr())
            .u32(count as u32)
            .device_ptr(self.partials.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: argument order of msm_batch_sum_indices_*; reads indices[0..count)
        // and bases only at indices < nbases; writes partials[0..blocks).
        unsafe {
            self.stream
                .launch(kernel, grid(self.blocks, BATCH_THREADS), args, || {
                    format!("{count} indices")
                })?;
        }
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        let s = &self.stream;
        let b2 = self.blocks.div_ceil(SUM_THREADS).clamp(1, SUM_MAX_BLOCKS);
        sum_groups::<C>(s, &self.partials, self.blocks, 1, b2, &self.partials2)?;
        sum_groups::<C>(s, &self.partials2, b2, 1, 1, &self.partials)?;
        horner::<C>(s, &self.partials, 1, 0, &self.result)
    }

    /// Waits for the queued sum and returns it.
    pub fn result(&self) -> Result<C::Projective> {
        let words = self.stream.download_vec(&self.result)?;
        Ok(C::from_jacobian_words(&words))
    }
}

/// How many scalars of each class the last [`Classifier::classify`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    pub zeros: usize,
    pub ones: usize,
    pub others: usize,
}

/// Splits scalars into zero / one / other on the device, writing the ones'
/// and the others' indices (increasing) into resident buffers.
pub struct Classifier {
    stream: Stream,
    max_len: usize,
    ones_per_tile: DeviceBuffer<u32>,
    others_per_tile: DeviceBuffer<u32>,
    ones_offsets: DeviceBuffer<u32>,
    others_offsets: DeviceBuffer<u32>,
    tile_sums: DeviceBuffer<u32>,
    totals: DeviceBuffer<u32>,
    ones: DeviceBuffer<u32>,
    others: DeviceBuffer<u32>,
}

impl fmt::Debug for Classifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Classifier")
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

impl Classifier {
    /// Device bytes [`Classifier::new`]`(max_len)` takes from the arena.
    pub fn bytes_for(max_len: usize) -> u64 {
        let tiles = max_len.div_ceil(CLASSIFY_TILE).max(1) as u64;
        let words = 4 * (tiles + 1) + tiles.div_ceil(SCAN_TILE as u64) + 1 + 2;
        (words + 2 * max_len.max(1) as u64) * 4 + 8 * crate::arena::ALIGN
    }

    /// A classifier for up to `max_len` scalars (2 × 4 bytes per scalar of
    /// index space).
    pub fn new(stream: &Stream, max_len: usize) -> Result<Self> {
        ensure("msm_classify_count", max_len < MAX_LEN, || {
            format!("{max_len} scalars")
        })?;
        let tiles = max_len.div_ceil(CLASSIFY_TILE).max(1);
        Ok(Classifier {
            stream: stream.clone(),
            max_len,
            ones_per_tile: stream.alloc(tiles)?,
            others_per_tile: stream.alloc(tiles)?,
            ones_offsets: stream.alloc(tiles + 1)?,
            others_offsets: stream.alloc(tiles + 1)?,
            tile_sums: stream.alloc(tiles.div_ceil(SCAN_TILE) + 1)?,
            totals: stream.alloc(2)?,
            ones: stream.alloc(max_len.max(1))?,
            others: stream.alloc(max_len.max(1))?,
        })
    }

    /// Classifies `scalars` (waits for the two counts).
    pub fn classify(&mut self, scalars: &DeviceBuffer<FrLimbs>) -> Result<ClassCounts> {
        let n = scalars.len();
        ensure("msm_classify_count", n <= self.max_len, || {
            format!("{n} scalars, sized for {}", self.max_len)
        })?;
        if n == 0 {
            return Ok(ClassCounts::default());
        }
        let s = &self.stream;
        let tiles = n.div_ceil(CLASSIFY_TILE) as u32;
        let args = KernelArgs::new()
            .device_ptr(scalars.device_ptr())
            .u32(n as u32)
            .device_ptr(self.ones_per_tile.device_ptr())
            .device_ptr(self.others_per_tile.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: msm_classify_count(scalars, n, ones, others): reads scalars[0..n),
        // writes one count per tile (tiles ≤ per-tile buffer lengths).
        unsafe {
            s.launch("msm_classify_count", grid(tiles, 256), args, || {
                format!("{n} scalars")
            })?;
        }
        exclusive_scan(
            s,
            &self.ones_per_tile,
            tiles,
            &self.tile_sums,
            &self.ones_offsets,
            None,
        )?;
        exclusive_scan(
            s,
            &self.others_per_tile,
            tiles,
            &self.tile_sums,
            &self.others_offsets,
            None,
        )?;
        let args = KernelArgs::new()
            .device_ptr(scalars.device_ptr())
            .u32(n as u32)
            .device_ptr(self.ones_offsets.device_ptr())
            .device_ptr(self.others_offsets.device_ptr())
            .device_ptr(self.ones.device_ptr())
            .device_ptr(self.others.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: msm_classify_scatter(scalars, n, ones_off, others_off, ones,
        // others): writes at most n indices into each list (len ≥ max_len ≥ n).
        unsafe {
            s.launch("msm_classify_scatter", grid(tiles, 256), args, || {
                format!("{n} scalars")
            })?;
        }
        let word = std::mem::size_of::<u32>() as u64;
        let args = KernelArgs::new()
            .device_ptr(self.ones_offsets.device_ptr() + tiles as u64 * word)
            .device_ptr(self.others_offsets.device_ptr() + tiles as u64 * word)
            .device_ptr(self.totals.device_ptr());
        #[allow(unsafe_code)]
        // SAFETY: msm_gather_pair_u32(a, b, out): reads the totals at index tiles
        // of the offset arrays (tiles + 1 entries each), writes totals[0..2).
        unsafe {
            s.launch("msm_gather_pair_u32", grid(1, 32), args, || {
                "class totals".into()
            })?;
        }
        let totals = s.download_vec(&self.totals)?;
        let (ones, others) = (totals[0] as usize, totals[1] as usize);
        Ok(ClassCounts {
            zeros: n - ones - others,
            ones,
            others,
        })
    }

    /// Indices of the scalars equal to one (first `ones` entries valid).
    pub fn ones(&self) -> &DeviceBuffer<u32> {
        &self.ones
    }

    /// Indices of the other nonzero scalars (first `others` entries valid).
    pub fn others(&self) -> &DeviceBuffer<u32> {
        &self.others
    }
}

/// Benchmark and test data made on the device.
pub mod data {
    use super::*;

    /// Fills `out` with uniformly random field elements (Montgomery limbs)
    /// from a counter-based hash of (`seed`, index).
    pub fn random_scalars(stream: &Stream, out: &DeviceBuffer<FrLimbs>, seed: u64) -> Result<()> {
        let n = out.len();
        ensure("msm_random_scalars", n < MAX_LEN, || format!("{n} scalars"))?;
        if n == 0 {
            return Ok(());
        }
        let args = KernelArgs::new()
            .device_ptr(out.device_ptr())
            .u32(n as u32)
            .u64(seed);
        #[allow(unsafe_code)]
        // SAFETY: msm_random_scalars(out, n, seed) writes out[0..n).
        unsafe {
            stream.launch(
                "msm_random_scalars",
                grid((n as u32).div_ceil(256), 256),
                args,
                || format!("{n} scalars"),
            )
        }
    }

    /// Fills `out` with P_i = p0 + i·step (affine): distinct points whose
    /// discrete logs have nothing to do with random scalars. One field
    /// inversion per 64 points (Montgomery's trick).
    pub fn chain_bases<C: MsmCurve>(
        stream: &Stream,
        p0: C::Affine,
        step: C::Affine,
        out: &DeviceBuffer<C::Affine>,
    ) -> Result<()> {
        let kernel = C::KERNELS[K_CHAIN];
        let n = out.len();
        ensure(kernel, n < MAX_LEN, || format!("{n} points"))?;
        let consts = stream.upload_new(&[p0, step])?;
        let slice = n.min(CHAIN_SLICE);
        let scratch: DeviceBuffer<u64> = stream.alloc(slice.max(1) * C::XYZZ_WORDS)?;
        let point_bytes = std::mem::size_of::<C::Affine>() as u64;
        let mut first = 0;
        while first < n {
            let len = (n - first).min(CHAIN_SLICE) as u32;
            let args = KernelArgs::new()
                .device_ptr(consts.device_ptr())
                .u32(first as u32)
                .u32(len)
                .u32(CHAIN_LEN)
                .device_ptr(scratch.device_ptr())
                .device_ptr(out.device_ptr() + first as u64 * point_bytes);
            let threads = len.div_ceil(CHAIN_LEN);
            #[allow(unsafe_code)]
            // SAFETY: msm_chain_bases_*(consts, first, n, L, scratch, out): reads
            // consts[0..2), writes scratch[0..len) (len ≤ slice) and out[first..first + len).
            unsafe {
                stream.launch(kernel, grid(threads.div_ceil(64), 64), args, || {
                    format!("points {first}..+{len}")
                })?;
            }
            first += len as usize;
        }
        // Keep `consts` and `scratch` alive until the kernels have run.
        stream.synchronize()
    }
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
