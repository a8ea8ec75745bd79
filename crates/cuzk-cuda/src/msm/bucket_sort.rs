//! Step 1 of Pippenger: the (bucket, point) pairs of every window grouped by
//! bucket, with each bucket's offset into the sorted entries. Two sorts give
//! every bucket the same multiset of entries ([`BucketSort`]): a counting
//! sort for small MSMs and an LSD radix sort for large ones
//! (kernels/msm/scalars.cu); [`super::plan`] picks one per shape.

use cuzk_field::limbs::FrLimbs;

use super::curve::MsmCurve;
use super::plan::{
    radix_sizes, windows_for, RADIX_BITS, RADIX_MIN_PAIRS, RADIX_THREADS, RADIX_TILE,
};
use super::Msm;
use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Error, Result};
use crate::launch::DevPtr;
use crate::scan::{exclusive_scan, fill_u32, SCAN_TILE};

/// Digit kernels: threads per block, blocks per SM.
const DIGIT_THREADS: u32 = 256;
const DIGIT_BLOCKS_PER_SM: u32 = 8;

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

/// Scratch of the radix sort beyond the counting sort's, for one group of
/// windows: keys and entries twice (ping-pong), the per-tile histograms and
/// their scan, and the running count of sorted entries.
pub(super) struct RadixScratch {
    pub(super) keys: [DeviceBuffer<u32>; 2],
    pub(super) vals: [DeviceBuffer<u32>; 2],
    pub(super) tile_hist: DeviceBuffer<u32>,
    pub(super) tile_off: DeviceBuffer<u32>,
    pub(super) tile_sums: DeviceBuffer<u32>,
    pub(super) done: DeviceBuffer<u32>,
    /// Windows per group.
    pub(super) group: u32,
}

impl RadixScratch {
    pub(super) fn new(stream: &Stream, max_len: usize, group: u32) -> Result<Self> {
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

impl<C: MsmCurve> Msm<C> {
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
        let kernel = decl::msm_digit_histogram.name();
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
        let idx = indices.map_or(DevPtr::null(), |b| b.arg());
        self.sort(scalars, idx, len, bound, bound)?;
        let offsets = self.stream.download_vec(&self.offsets)?;
        let total = offsets[self.plan.keys()] as usize;
        let entries = self.stream.download_vec(&self.entries)?;
        Ok((offsets, entries[..total].to_vec()))
    }

    /// Step 1: entries grouped by bucket key, offsets[key] where each starts
    /// (offsets[keys] = the number of entries). Marks "start" first.
    /// `idx_ptr`: the pairs' indices (`len` of them, checked by the
    /// caller), or null for pairs 0..len.
    pub(super) fn sort(
        &mut self,
        scalars: &DeviceBuffer<FrLimbs>,
        idx_ptr: DevPtr<u32>,
        len: usize,
        bound: u32,
        stride: u32,
    ) -> Result<()> {
        self.mark("start")?;
        if self.plan.sort == BucketSort::Radix {
            return self.radix_sort(scalars, idx_ptr, len, bound, stride);
        }
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let keys = plan.keys() as u32;
        fill_u32(s, &mut self.counts, 0, keys)?;
        let digit_grid = grid(
            (len as u32)
                .div_ceil(DIGIT_THREADS)
                .clamp(1, s.gpu().info().multiprocessors * DIGIT_BLOCKS_PER_SM),
            DIGIT_THREADS,
        );
        let sizes = || {
            format!(
                "{len} pairs, c = {}, {} windows",
                plan.window_bits, plan.windows
            )
        };
        let args = (
            scalars.arg(),
            idx_ptr,
            len as u32,
            bound,
            plan.window_bits,
            plan.windows,
            plan.sets,
            self.counts.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: scalars are read at indices < bound ≤ scalars.len() (or <
        // len ≤ bound), idx at j < len ≤ idx.len(), counts at keys <
        // plan.keys() = counts.len().
        unsafe {
            s.launch(decl::msm_digit_histogram, digit_grid, args, sizes)?;
        }
        self.mark("histogram")?;
        exclusive_scan(
            s,
            &self.counts,
            keys,
            &mut self.tile_sums,
            &mut self.offsets,
            Some(&mut self.cursors),
        )?;
        self.mark("scan")?;
        let args = (
            scalars.arg(),
            idx_ptr,
            len as u32,
            bound,
            plan.window_bits,
            plan.windows,
            plan.sets,
            stride,
            self.cursors.arg_mut(),
            self.entries.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: as for the histogram; cursors has keys + 1 entries and every
        // position written is < offsets[keys] ≤ len·windows ≤ entries.len().
        // Entries name points < copies·stride ≤ the bases' length (checked by
        // the caller).
        unsafe {
            s.launch(decl::msm_digit_scatter, digit_grid, args, sizes)?;
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
        idx_ptr: DevPtr<u32>,
        len: usize,
        bound: u32,
        stride: u32,
    ) -> Result<()> {
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let keys = plan.keys() as u32;
        let sentinel = keys; // sets·2^(c−1): zero digits, sorted past every bucket
                             // Two passes at least: the first reads keys from `entries`, the
                             // last writes entries there, and they must not be one launch (a
                             // second pass over bits that are all zero keeps the order).
        let passes = (32 - sentinel.leading_zeros()).div_ceil(RADIX_BITS).max(2);
        let windows = plan.windows;
        let (slots, copies) = (plan.slots(), plan.copies());
        let scatter = decl::msm_radix_scatter.name();
        let r = self.radix.as_mut().ok_or_else(|| Error::BadArguments {
            kernel: scatter,
            message: "radix sort without its scratch".into(),
        })?;
        let group = r.group;
        ensure(scatter, group % copies == 0, || {
            format!("groups of {group} slots, sets of {copies} copies")
        })?;
        ensure(scatter, len * group as usize <= r.keys[0].len(), || {
            format!("{len} pairs × {group} windows, scratch {}", r.keys[0].len())
        })?;
        fill_u32(s, &mut self.counts, 0, keys)?;
        fill_u32(s, &mut r.done, 0, 1)?;
        if len > 0 {
            let blocks = (len as u32)
                .div_ceil(256)
                .min(s.gpu().info().multiprocessors * DIGIT_BLOCKS_PER_SM);
            let args = (
                scalars.arg(),
                idx_ptr,
                len as u32,
                bound,
                plan.window_bits,
                windows,
                plan.sets,
                copies,
                self.entries.arg_mut(),
            );
            #[allow(unsafe_code)]
            // SAFETY: reads scalars below bound ≤ scalars.len() and idx[0..len)
            // (len ≤ idx.len(), checked by the callers); writes
            // entries[0..len·slots), len ≤ max_len, slots = copies·sets.
            unsafe {
                s.launch(decl::msm_radix_digits, grid(blocks, 256), args, || {
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
        // Slot by slot (set-major: a group holds whole sets, see
        // `radix_group_slots`).
        while len > 0 && w0 < slots {
            let w1 = (w0 + group).min(slots);
            let total = (len * (w1 - w0) as usize) as u32;
            let ntiles = (total as usize).div_ceil(RADIX_TILE) as u32;
            let hist = ntiles << RADIX_BITS;
            let sizes =
                || format!("slots {w0}..{w1} of {len} pairs, {ntiles} tiles, {passes} passes");
            ensure(
                decl::msm_radix_counts.name(),
                hist as usize <= r.tile_hist.len(),
                sizes,
            )?;
            for p in 0..passes {
                let shift = p * RADIX_BITS;
                let last = p + 1 == passes;
                let (keys_in, vals_in) = if p == 0 {
                    (self.entries.arg_at(w0 as usize * len), DevPtr::null())
                } else {
                    let q = ((p - 1) % 2) as usize;
                    (r.keys[q].arg(), r.vals[q].arg())
                };
                let q = (p % 2) as usize;
                let (vals_out, out_base) = if last {
                    (self.entries.arg_mut(), r.done.arg())
                } else {
                    (r.vals[q].arg_mut(), DevPtr::null())
                };
                let args = (keys_in, total, shift, r.tile_hist.arg_mut(), ntiles);
                #[allow(unsafe_code)]
                // SAFETY: reads keys_in[0..total) (the group's slice of
                // entries, or a scratch buffer of ≥ total words), writes
                // tile_hist[0..256·ntiles), within its length (checked above).
                unsafe {
                    s.launch(
                        decl::msm_radix_counts,
                        grid(ntiles, RADIX_THREADS),
                        args,
                        sizes,
                    )?;
                }
                exclusive_scan(
                    s,
                    &r.tile_hist,
                    hist,
                    &mut r.tile_sums,
                    &mut r.tile_off,
                    None,
                )?;
                let args = (
                    keys_in,
                    vals_in,
                    total,
                    shift,
                    r.tile_off.arg(),
                    ntiles,
                    idx_ptr,
                    len as u32,
                    w0,
                    copies,
                    stride,
                    out_base,
                    r.keys[q].arg_mut(),
                    vals_out,
                );
                #[allow(unsafe_code)]
                // SAFETY: entries name points < copies·stride ≤ the bases'
                // length (checked by the caller); reads
                // [0..total) of the inputs and idx[0..len); writes a permutation
                // of [0, total) of keys[q] (≠ the input buffer) and of vals_out:
                // scratch, or entries from *done (the real entries of earlier
                // groups, ≤ w0·len) to at most w1·len ≤ entries.len(), keys of
                // later groups untouched.
                unsafe {
                    s.launch(
                        decl::msm_radix_scatter,
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
            let args = (
                r.keys[q].arg(),
                total,
                sentinel,
                self.counts.arg_mut(),
                r.done.arg_mut(),
            );
            #[allow(unsafe_code)]
            // SAFETY: reads keys[q][0..total), adds to counts[k] for k <
            // sentinel = plan.keys() = counts.len() and to done[0].
            unsafe {
                s.launch(
                    decl::msm_radix_bucket_counts,
                    grid(blocks, 256),
                    args,
                    sizes,
                )?;
            }
            w0 = w1;
        }
        if self.profile {
            let e = s.record()?;
            self.marks.push(("radix sort", e));
        }
        exclusive_scan(
            s,
            &self.counts,
            keys,
            &mut self.tile_sums,
            &mut self.offsets,
            None,
        )?;
        self.mark("bucket offsets")
    }
}
