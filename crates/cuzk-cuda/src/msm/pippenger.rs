//! [`Msm`]: a reusable Pippenger MSM on one stream. Step 1 (the bucket sort)
//! is `bucket_sort`; here are the scratch it owns, step 2 (bucket
//! accumulation and the merge of runs that straddle threads), step 3 (bucket
//! reduction and window sums) and the host Horner over the windows.

use std::fmt;
use std::marker::PhantomData;

use cuzk_field::limbs::FrLimbs;

use super::batch_sum::sum_groups;
use super::bucket_sort::{BucketSort, RadixScratch};
use super::curve::{accumulate_kernel, MsmCurve};
use super::plan::{
    choose_window_bits, radix_group_slots, resident_threads, scratch_bytes, shifted_scratch_bytes,
    windows_for, MsmPlan, ACCUMULATE_THREADS, MERGE_CHUNK, MERGE_THREADS, REDUCE_THREADS,
};
use super::shifted::ShiftedBases;
use super::{MAX_LEN, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::decl;
use crate::decl::{MsmAccumulate, MsmMerge, MsmReduceSegments};
use crate::device::{grid, DeviceBuffer, Event, KernelOut, MappedBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::{DevPtr, DevPtrMut, Kernel};
use crate::scan::SCAN_TILE;

/// Step times of the last profiled MSM: (step, milliseconds) in launch order
/// ("histogram", "scan", "scatter", or "radix digits", "radix sort",
/// "bucket offsets"; then "accumulate", "merge", "reduce", "window sums").
pub type MsmPhases = Vec<(&'static str, f32)>;

/// A reusable Pippenger MSM for curve `C` on one stream, with its scratch.
pub struct Msm<C: MsmCurve> {
    pub(super) stream: Stream,
    pub(super) plan: MsmPlan,
    pub(super) counts: DeviceBuffer<u32>,
    pub(super) offsets: DeviceBuffer<u32>,
    pub(super) cursors: DeviceBuffer<u32>,
    pub(super) tile_sums: DeviceBuffer<u32>,
    pub(super) entries: DeviceBuffer<u32>,
    pub(super) bucket_sums: DeviceBuffer<u64>,
    pub(super) part_keys: [DeviceBuffer<u32>; 2],
    pub(super) part_pts: [DeviceBuffer<u64>; 2],
    pub(super) segment_sums: DeviceBuffer<u64>,
    pub(super) group_sums: DeviceBuffer<u64>,
    /// Written by the last kernel, read by the host in place (mapped).
    pub(super) window_sums: MappedBuffer<u64>,
    /// Present when the plan sorts by radix.
    pub(super) radix: Option<RadixScratch>,
    pub(super) profile: bool,
    /// Profiling marks: an event after each step, labelled by the step.
    pub(super) marks: Vec<(&'static str, Event)>,
    /// The plan the scratch was sized for; `plan` is the one the current
    /// call runs under (see [`Msm::new`]).
    pub(super) held: MsmPlan,
    /// For an MSM made by [`Msm::new`]: the accumulation's and the
    /// reduction's resident threads, to plan shorter calls with.
    pub(super) adaptive: Option<(u32, u32)>,
    /// The plan of calls into kept buckets ([`Msm::with_kept_window`]),
    /// which the scratch was also sized for (the buckets aside).
    pub(super) kept: Option<MsmPlan>,
    pub(super) _curve: PhantomData<C>,
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
    ///
    /// A call with fewer pairs runs under the window the model picks for
    /// its own length when the scratch holds that plan (with the counting
    /// sort): e.g. the 1.7 M "other" scalars of a 2^27 query, whose scratch
    /// was sized for 2^27 pairs at c = 20, run at c = 16 instead of paying
    /// the reduction of 13 × 2^19 buckets.
    pub fn new(stream: &Stream, max_len: usize) -> Result<Self> {
        let mut msm = Self::with_window_bits(stream, max_len, Self::window_bits_for(max_len))?;
        let accumulate = accumulate_kernel::<C>(msm.plan.accumulate_variant)?;
        msm.adaptive = Some((
            resident_threads(stream, accumulate, ACCUMULATE_THREADS)?,
            resident_threads(stream, C::REDUCE_SEGMENTS, REDUCE_THREADS)?,
        ));
        Ok(msm)
    }

    /// The plan a call of `len` pairs runs under: for an MSM made by
    /// [`Msm::new`], the model's window for `len` when every buffer of the
    /// scratch is large enough for it and it sorts by counting (the radix
    /// scratch is sized for the held plan's groups), else the held plan.
    fn fit_plan(&mut self, len: usize) {
        let Some((capacity, reduce_capacity)) = self.adaptive else {
            return;
        };
        let c = Self::window_bits_for(len);
        self.plan = self.held.clone();
        if c == self.held.window_bits {
            return;
        }
        let p = MsmPlan::new(
            len.max(1),
            c,
            capacity,
            reduce_capacity,
            self.held.accumulate_variant,
        );
        if p.sort == BucketSort::Counting && self.holds(&p) {
            self.plan = p;
        }
    }

    /// Whether this MSM's buffers are large enough for plan `p`.
    fn holds(&self, p: &MsmPlan) -> bool {
        let xw = C::XYZZ_WORDS;
        let keys = p.keys();
        let sets = p.sets as usize;
        let parts = 2 * p.accumulate_threads as usize;
        keys <= self.counts.len()
            && keys < self.offsets.len()
            && keys < self.cursors.len()
            && keys.div_ceil(SCAN_TILE) < self.tile_sums.len()
            && p.max_len.saturating_mul(p.slots() as usize) <= self.entries.len()
            && keys * xw <= self.bucket_sums.len()
            && parts <= self.part_keys[0].len()
            && parts * xw <= self.part_pts[0].len()
            && sets * p.segments() as usize * xw <= self.segment_sums.len()
            && sets * p.sum_blocks() as usize * xw <= self.group_sums.len()
            && sets * xw <= self.window_sums.out_len()
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
        Self::with_variant(stream, max_len, window_bits, C::DEFAULT_ACCUMULATE_VARIANT)
    }

    /// As [`Msm::with_window_bits`], with a chosen accumulation kernel variant
    /// (for tuning sweeps; see `MsmCurve::ACCUMULATE_VARIANTS`).
    #[cfg(feature = "tuning")]
    pub fn with_tuning(
        stream: &Stream,
        max_len: usize,
        window_bits: u32,
        variant: usize,
    ) -> Result<Self> {
        Self::with_variant(stream, max_len, window_bits, variant)
    }

    fn with_variant(
        stream: &Stream,
        max_len: usize,
        window_bits: u32,
        variant: usize,
    ) -> Result<Self> {
        let accumulate = accumulate_kernel::<C>(variant)?;
        let kernel = accumulate.name();
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
        let capacity = resident_threads(stream, accumulate, ACCUMULATE_THREADS)?;
        let reduce_capacity = resident_threads(stream, C::REDUCE_SEGMENTS, REDUCE_THREADS)?;
        let plan = MsmPlan::new(max_len, window_bits, capacity, reduce_capacity, variant);
        Self::with_plan(stream, plan)
    }

    /// An MSM for up to `max_len` pairs over `bases`, with the window size
    /// and bucket sets the bases were shifted for.
    pub fn for_shifted(stream: &Stream, max_len: usize, bases: &ShiftedBases<C>) -> Result<Self> {
        Self::shifted(stream, max_len, bases.window_bits(), bases.sets())
    }

    /// An MSM for up to `max_len` pairs with c-bit windows over `sets`
    /// bucket sets (shifted bases of `copies_for(c, sets)` copies shifted by
    /// c·sets bits; sets = W is the plain MSM).
    pub fn shifted(stream: &Stream, max_len: usize, window_bits: u32, sets: u32) -> Result<Self> {
        let kernel = C::ACCUMULATE.name();
        ensure(
            kernel,
            (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&window_bits)
                && (1..=windows_for(window_bits)).contains(&sets),
            || format!("window size {window_bits} with {sets} bucket sets"),
        )?;
        let variant = C::DEFAULT_ACCUMULATE_VARIANT;
        let capacity = resident_threads(stream, C::ACCUMULATE, ACCUMULATE_THREADS)?;
        let reduce_capacity = resident_threads(stream, C::REDUCE_SEGMENTS, REDUCE_THREADS)?;
        let plan = MsmPlan::with_sets(
            max_len,
            window_bits,
            sets,
            capacity,
            reduce_capacity,
            variant,
        );
        ensure(
            kernel,
            max_len.saturating_mul(plan.windows as usize) <= u32::MAX as usize,
            || {
                format!(
                    "{max_len} pairs × {} windows overflow 32-bit entry offsets",
                    plan.windows
                )
            },
        )?;
        Self::with_plan(stream, plan)
    }

    /// Device bytes [`Msm::shifted`]`(max_len, c, sets)` takes from the arena.
    pub fn shifted_bytes_for(max_len: usize, window_bits: u32, sets: u32) -> u64 {
        shifted_scratch_bytes(max_len.max(1), window_bits, sets, C::XYZZ_WORDS * 8) as u64
            + 16 * crate::arena::ALIGN
    }

    /// An MSM with an explicit plan (e.g. from a sweep).
    pub fn with_plan(stream: &Stream, plan: MsmPlan) -> Result<Self> {
        Self::with_plans(stream, plan, None)
    }

    /// An MSM for `plan` whose buffers also hold the calls of `kept` (into
    /// buckets of their own, [`Msm::enqueue_kept`]).
    pub(super) fn with_plans(
        stream: &Stream,
        plan: MsmPlan,
        kept: Option<MsmPlan>,
    ) -> Result<Self> {
        let xw = C::XYZZ_WORDS;
        let mut most = buffer_lens(&plan);
        if let Some(k) = &kept {
            for (m, k) in most.iter_mut().zip(buffer_lens(k)) {
                *m = (*m).max(k);
            }
        }
        let [keys, entries, parts, segments, groups, sets] = most;
        Ok(Msm {
            stream: stream.clone(),
            counts: stream.alloc(keys)?,
            offsets: stream.alloc(keys + 1)?,
            cursors: stream.alloc(keys + 1)?,
            tile_sums: stream.alloc(keys.div_ceil(SCAN_TILE) + 1)?,
            entries: stream.alloc(entries.max(1))?,
            bucket_sums: stream.alloc(plan.keys() * xw)?,
            part_keys: [stream.alloc(parts)?, stream.alloc(parts)?],
            part_pts: [stream.alloc(parts * xw)?, stream.alloc(parts * xw)?],
            segment_sums: stream.alloc(segments * xw)?,
            group_sums: stream.alloc(groups * xw)?,
            // Room for any window size's sums (≤ 128 windows: a few KiB),
            // so that a shorter call can run under a smaller window.
            window_sums: MappedBuffer::new(
                stream,
                sets.max(windows_for(MIN_WINDOW_BITS) as usize) * xw,
            )?,
            radix: match plan.sort {
                BucketSort::Radix => Some(RadixScratch::new(
                    stream,
                    plan.max_len,
                    radix_group_slots(plan.max_len, plan.slots(), plan.copies()),
                )?),
                BucketSort::Counting => None,
            },
            profile: false,
            marks: Vec::new(),
            held: plan.clone(),
            adaptive: None,
            kept,
            plan,
            _curve: PhantomData,
        })
    }

    /// Pairs one call may sum: what the scratch was made for
    /// ([`Msm::run_indexed_in_parts`] takes any number).
    pub fn capacity(&self) -> usize {
        self.held.max_len
    }

    /// The plan (window size, windows, buckets) this MSM was set up with.
    pub fn plan(&self) -> &MsmPlan {
        &self.plan
    }

    /// Switches the bucket sort (allocating the radix scratch if needed); for
    /// tests and benchmarks.
    pub fn set_bucket_sort(&mut self, sort: BucketSort) -> Result<()> {
        // A chosen sort holds for every call: no plan per call any more.
        self.adaptive = None;
        self.plan = self.held.clone();
        if sort == BucketSort::Radix && self.radix.is_none() {
            let group = radix_group_slots(self.plan.max_len, self.plan.slots(), self.plan.copies());
            self.radix = Some(RadixScratch::new(&self.stream, self.plan.max_len, group)?);
        }
        self.plan.sort = sort;
        self.held.sort = sort;
        Ok(())
    }

    /// Sorts by radix with groups of `windows` key slots (1 ..= slots, whole
    /// sets of copies: W windows for a plain MSM; reallocates the scratch):
    /// for tests of the grouping.
    #[doc(hidden)]
    pub fn set_radix_group(&mut self, windows: u32) -> Result<()> {
        let (slots, copies) = (self.held.slots(), self.held.copies());
        ensure(
            decl::msm_radix_scatter.name(),
            (1..=slots).contains(&windows) && windows % copies == 0,
            || format!("groups of {windows} of {slots} slots, {copies} copies per set"),
        )?;
        self.adaptive = None;
        self.plan = self.held.clone();
        self.radix = None;
        self.radix = Some(RadixScratch::new(&self.stream, self.plan.max_len, windows)?);
        self.plan.sort = BucketSort::Radix;
        self.held.sort = BucketSort::Radix;
        Ok(())
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
    pub(super) fn mark(&mut self, step: &'static str) -> Result<()> {
        if self.profile {
            let e = self.stream.record()?;
            self.marks.push((step, e));
        }
        Ok(())
    }

    /// Σ `scalars[i]·bases[i]` for i < scalars.len() (bases may be longer).
    pub fn run(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
    ) -> Result<C::Projective> {
        self.enqueue(bases, scalars, None, scalars.len())?;
        self.result()
    }

    /// Σ `scalars[idx[j]]·bases[idx[j]]` for j < count (e.g. the "others" of a
    /// [`Classifier`](super::Classifier)). Indices beyond either array are skipped.
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

    /// Σ `scalars[idx[j]]·bases[idx[j]]` for j < count, as
    /// [`Msm::run_indexed`], for a list of any length: in calls of at most
    /// the pairs this MSM was made for, each read and added on the host
    /// (for the occasional list longer than the scratch was sized for: a
    /// streamed chunk with more other scalars than its section usually has).
    pub fn run_indexed_in_parts(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: &DeviceBuffer<u32>,
        count: usize,
    ) -> Result<C::Projective> {
        let kernel = decl::msm_digit_histogram.name();
        ensure(kernel, count <= indices.len(), || {
            format!("{count} pairs but {} indices", indices.len())
        })?;
        ensure(kernel, self.held.copies() == 1, || {
            "an MSM over shifted bases takes no index list in parts".to_string()
        })?;
        let part = self.held.max_len.max(1);
        let mut sum: Option<C::Projective> = None;
        for at in (0..count.max(1)).step_by(part) {
            let len = part.min(count.saturating_sub(at));
            self.fit_plan(len);
            self.enqueue_over(bases, bases.len(), scalars, Some((indices, at)), len)?;
            let got = self.result()?;
            sum = Some(match sum {
                Some(s) => C::add(&s, &got),
                None => got,
            });
        }
        Ok(sum.expect("one part at least"))
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
        ensure(
            decl::msm_digit_histogram.name(),
            self.plan.copies() == 1,
            || {
                format!(
                    "a plan over {} shifted base copies needs ShiftedBases (enqueue_shifted)",
                    self.plan.copies()
                )
            },
        )?;
        self.fit_plan(len);
        self.enqueue_over(bases, bases.len(), scalars, indices.map(|i| (i, 0)), len)
    }

    /// As [`Msm::enqueue`] over shifted bases, with a plan made for them
    /// ([`Msm::for_shifted`]): same result, fewer bucket sets.
    pub fn enqueue_shifted(
        &mut self,
        bases: &ShiftedBases<C>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
    ) -> Result<()> {
        let plan = &self.plan;
        ensure(
            decl::msm_digit_histogram.name(),
            bases.shift_bits() == plan.shift_bits() && bases.copies() >= plan.copies(),
            || {
                format!(
                    "{} bases shifted by 2^{} in {} copies, the plan needs 2^{} in {}",
                    C::NAME,
                    bases.shift_bits(),
                    bases.copies(),
                    plan.shift_bits(),
                    plan.copies()
                )
            },
        )?;
        let indices = indices.map(|i| (i, 0));
        self.enqueue_over(bases.points(), bases.len(), scalars, indices, len)
    }

    /// `Σ scalars[i]·P_i` over shifted bases (see [`Msm::run`]).
    pub fn run_shifted(
        &mut self,
        bases: &ShiftedBases<C>,
        scalars: &DeviceBuffer<FrLimbs>,
    ) -> Result<C::Projective> {
        self.enqueue_shifted(bases, scalars, None, scalars.len())?;
        self.result()
    }

    /// The MSM over the first `points` bases of `bases` (copy k of a shifted
    /// set at k·points); with `indices`, over idx[at..at + len).
    fn enqueue_over(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        points: usize,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<(&DeviceBuffer<u32>, usize)>,
        len: usize,
    ) -> Result<()> {
        self.marks.clear();
        self.checked_sort(bases, points, scalars, indices, len)?;
        let accumulate = accumulate_kernel::<C>(self.plan.accumulate_variant)?;
        let buckets = self.bucket_sums.arg_mut();
        self.accumulate_buckets(bases, len, buckets, (accumulate, C::MERGE))?;
        let (buckets, offsets) = (self.bucket_sums.arg(), self.offsets.arg());
        self.reduce_windows(C::REDUCE_SEGMENTS, buckets, offsets)
    }

    /// Step 1 under the current plan, after checking the call against it:
    /// `len` pairs over the first `points` bases (of each copy); with
    /// `indices` (a list and where in it to start), idx[at..at + len).
    pub(super) fn checked_sort(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        points: usize,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<(&DeviceBuffer<u32>, usize)>,
        len: usize,
    ) -> Result<()> {
        let kernel = decl::msm_digit_histogram.name();
        let plan = self.plan.clone();
        ensure(kernel, len <= plan.max_len, || {
            format!("{len} pairs, planned for at most {}", plan.max_len)
        })?;
        match indices {
            Some((idx, at)) => ensure(kernel, at.saturating_add(len) <= idx.len(), || {
                format!("{len} pairs from {at} but {} indices", idx.len())
            })?,
            None => ensure(kernel, len <= points, || {
                format!("{len} scalars but {points} {} bases", C::NAME)
            })?,
        }
        ensure(
            kernel,
            points.saturating_mul(plan.copies() as usize) <= bases.len(),
            || {
                format!(
                    "{} copies of {points} points, {} {} bases",
                    plan.copies(),
                    bases.len(),
                    C::NAME
                )
            },
        )?;
        let bound = points.min(scalars.len()).min(u32::MAX as usize) as u32;
        let stride = points.min(u32::MAX as usize) as u32;
        let idx = indices.map_or(DevPtr::null(), |(i, at)| i.arg_at(at));
        self.sort(scalars, idx, len, bound, stride)
    }

    /// Step 2: every bucket's sum of its points. The sorted entries are cut
    /// into equal chunks, one per thread, whatever the buckets' sizes (PoRep
    /// scalars repeat, so some buckets are huge); a bucket that straddles
    /// chunks leaves partial sums, merged level by level into `buckets`
    /// (the plan's keys × XYZZ words, checked by the caller) with the
    /// accumulation and merge kernels of `kernels`.
    pub(super) fn accumulate_buckets(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        len: usize,
        buckets: DevPtrMut<u64>,
        kernels: (Kernel<MsmAccumulate<C::Affine>>, Kernel<MsmMerge>),
    ) -> Result<()> {
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let t = plan.accumulate_threads;
        let keys = plan.keys() as u32;
        let (accumulate, merge) = kernels;
        let args = (
            bases.arg(),
            self.entries.arg(),
            self.offsets.arg(),
            keys,
            t,
            buckets,
            self.part_keys[0].arg_mut(),
            self.part_pts[0].arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: entries hold point indices < bound ≤ bases.len() (written by
        // the scatter above); thread t writes partial slots 2t, 2t+1 <
        // 2·accumulate_threads; keys < bucket_sums.
        unsafe {
            s.launch(
                accumulate,
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
            // The last level writes the buckets only (null outputs).
            let (out_keys, out_pts) = if last {
                (DevPtrMut::null(), DevPtrMut::null())
            } else {
                (
                    self.part_keys[1 - src].arg_mut(),
                    self.part_pts[1 - src].arg_mut(),
                )
            };
            let args = (
                self.part_keys[src].arg(),
                self.part_pts[src].arg(),
                len_parts,
                chunk,
                threads,
                buckets,
                out_keys,
                out_pts,
            );
            #[allow(unsafe_code)]
            // SAFETY: reads slots < len_parts ≤ 2t, writes out slots <
            // 2·threads < len_parts and keys written by earlier levels (< keys).
            unsafe {
                s.launch(
                    merge,
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
        self.mark("merge")
    }

    /// Step 3: per window Σ_b b·B_b by running sums over segments of buckets
    /// (one thread per segment, one full wave), then the tree sum of each
    /// window's segments into `window_sums`. `buckets` holds the plan's
    /// keys; `reduce` reads a bucket where `offsets` says it is non-empty
    /// (`C::REDUCE_SEGMENTS`), or every bucket (the kept reduction, offsets
    /// null and unread).
    pub(super) fn reduce_windows(
        &mut self,
        reduce: Kernel<MsmReduceSegments>,
        buckets: DevPtr<u64>,
        offsets: DevPtr<u32>,
    ) -> Result<()> {
        let plan = self.plan.clone();
        let s = self.stream.clone();
        let s = &s;
        let segs = plan.segments();
        let nthreads = segs * plan.sets;
        let args = (
            buckets,
            offsets,
            plan.buckets_per_window(),
            plan.segment_len,
            segs,
            plan.sets,
            self.segment_sums.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: reads keys < windows·buckets (bucket sums only where offsets
        // say non-empty, or all of them: set before the first call), writes
        // windows·segments sums.
        unsafe {
            s.launch(
                reduce,
                grid(nthreads.div_ceil(REDUCE_THREADS), REDUCE_THREADS),
                args,
                || {
                    format!(
                        "{} bucket sets × {segs} segments of {}",
                        plan.sets, plan.segment_len
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
            plan.sets,
            blocks,
            &mut self.group_sums,
        )?;
        sum_groups::<C>(
            s,
            &self.group_sums,
            blocks,
            plan.sets,
            1,
            &mut self.window_sums,
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
        let words = self.window_sums.read()?;
        let xw = C::XYZZ_WORDS;
        let c = self.plan.window_bits;
        let windows = self.plan.sets as usize;
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

/// Element counts of an MSM's buffers under plan `p`, the bucket sums
/// aside: keys, entries, partial slots, segment sums, group sums, window
/// sums (in points, not words).
fn buffer_lens(p: &MsmPlan) -> [usize; 6] {
    let sets = p.sets as usize;
    [
        p.keys(),
        p.max_len * p.slots() as usize,
        2 * p.accumulate_threads as usize,
        sets * p.segments() as usize,
        sets * p.sum_blocks() as usize,
        sets,
    ]
}
