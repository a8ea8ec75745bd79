//! [`KeptBuckets`]: one Pippenger MSM summed over several calls, its
//! buckets kept on the device between them and reduced once. A streamed
//! key's H section crosses PCIe in chunks of points; summing each chunk as
//! an MSM of its own pays a bucket reduction per chunk and runs at the
//! chunk's (smaller) window. Kept buckets give every chunk the window of
//! the whole section and one reduction: each call sorts its pairs into the
//! section's buckets and adds them in (a run wholly inside one thread's
//! share starts from its bucket's sum, so keeping costs a load, not an
//! addition: kernels/msm/pippenger.cuh, `accumulate_runs`' KEPT), and
//! [`Msm::finish_kept`] reduces the buckets as the last call's MSM would.
//!
//! The buckets are the kept state; the MSM's own scratch (sort, partial
//! sums, window sums) serves other calls between the kept ones (a light
//! section's chunk among H's), sized by [`Msm::with_kept_window`] for both.

use std::marker::PhantomData;

use cuzk_field::limbs::FrLimbs;

use super::bucket_sort::{BucketSort, RadixScratch};
use super::curve::{accumulate_kernel, KeptKernels, MsmCurve};
use super::plan::{
    choose_kept_window_bits, kept_extra_bytes, radix_group_slots, resident_threads, windows_for,
    MsmPlan, ACCUMULATE_THREADS, REDUCE_THREADS,
};
use super::{Msm, MAX_LEN, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::device::{DeviceBuffer, Stream};
use crate::error::{ensure, Error, Result};
use crate::launch::DevPtr;
use crate::scan::fill_u32;

/// Alignment slack [`Msm::kept_bytes_for`] counts beyond the buffers' bytes.
const KEPT_SLACK: u64 = 4 * crate::arena::ALIGN;

/// The buckets of one MSM summed over several [`Msm::enqueue_kept`] calls
/// (made by [`Msm::kept_buckets`], set to infinity).
pub struct KeptBuckets<C: MsmCurve> {
    buckets: DeviceBuffer<u64>,
    plan: MsmPlan,
    calls: usize,
    _curve: PhantomData<C>,
}

impl<C: MsmCurve> std::fmt::Debug for KeptBuckets<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptBuckets")
            .field("curve", &C::NAME)
            .field("window_bits", &self.plan.window_bits)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl<C: MsmCurve> KeptBuckets<C> {
    /// The window size c of every call summed into these buckets.
    pub fn window_bits(&self) -> u32 {
        self.plan.window_bits
    }

    /// Calls summed in so far.
    pub fn calls(&self) -> usize {
        self.calls
    }
}

/// The kept-bucket kernels of curve `C`, or the error naming why it has
/// none.
fn kept_kernels<C: MsmCurve>() -> Result<KeptKernels<C::Affine>> {
    C::KEPT.ok_or_else(|| Error::BadArguments {
        kernel: C::ACCUMULATE.name(),
        message: format!("no kept-bucket kernels for {} in this build", C::NAME),
    })
}

impl<C: MsmCurve> Msm<C> {
    /// An MSM as [`Msm::new`]`(max_len)` (its own calls at the window the
    /// model picks for their length) whose scratch also holds calls of up to
    /// `max_len` pairs at `window_bits` into [`KeptBuckets`]: a streamed
    /// section's chunks summed as one MSM at the section's window
    /// ([`choose_kept_window_bits`](super::plan::choose_kept_window_bits)).
    pub fn with_kept_window(stream: &Stream, max_len: usize, window_bits: u32) -> Result<Self> {
        let kept_accumulate = kept_kernels::<C>()?.accumulate;
        let kernel = kept_accumulate.name();
        ensure(
            kernel,
            (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&window_bits),
            || format!("window size {window_bits} outside {MIN_WINDOW_BITS}..={MAX_WINDOW_BITS}"),
        )?;
        let held_bits = Self::window_bits_for(max_len);
        // At least the MSM's own window: no more windows (entries, radix
        // groups) than its own calls, so one scratch holds both.
        ensure(kernel, window_bits >= held_bits, || {
            format!("kept window {window_bits} below the {held_bits} bits {max_len} pairs run at")
        })?;
        ensure(kernel, max_len < MAX_LEN, || {
            format!("{max_len} pairs: at most 2^31 − 1")
        })?;
        for c in [held_bits, window_bits] {
            ensure(
                kernel,
                max_len.saturating_mul(windows_for(c) as usize) <= u32::MAX as usize,
                || {
                    format!(
                        "{max_len} pairs × {} windows overflow 32-bit entry offsets",
                        windows_for(c)
                    )
                },
            )?;
        }
        let bucket_words = Self::kept_bucket_words(window_bits);
        ensure(kernel, bucket_words * 2 <= u32::MAX as usize, || {
            format!("{bucket_words} words of kept buckets at c = {window_bits}: too many to clear")
        })?;
        let variant = C::DEFAULT_ACCUMULATE_VARIANT;
        let accumulate = accumulate_kernel::<C>(variant)?;
        let capacity = resident_threads(stream, accumulate, ACCUMULATE_THREADS)?;
        let kept_capacity = resident_threads(stream, kept_accumulate, ACCUMULATE_THREADS)?;
        let reduce_capacity = resident_threads(stream, C::REDUCE_SEGMENTS, REDUCE_THREADS)?;
        let plan = MsmPlan::new(max_len, held_bits, capacity, reduce_capacity, variant);
        let kept = MsmPlan::new(
            max_len,
            window_bits,
            kept_capacity,
            reduce_capacity,
            variant,
        );
        let mut msm = Self::with_plans(stream, plan, Some(kept))?;
        msm.adaptive = Some((capacity, reduce_capacity));
        Ok(msm)
    }

    /// The window of the kept calls this MSM holds ([`Msm::with_kept_window`]),
    /// `None` for an MSM made otherwise.
    pub fn kept_window(&self) -> Option<u32> {
        self.kept.as_ref().map(|p| p.window_bits)
    }

    /// Device bytes [`Msm::with_kept_window`]`(max_len, c)` takes beyond
    /// [`Msm::bytes_for`]`(max_len)`, its [`KeptBuckets`] included.
    pub fn kept_bytes_for(max_len: usize, window_bits: u32) -> u64 {
        let xyzz = C::XYZZ_WORDS * 8;
        kept_extra_bytes(
            max_len.max(1),
            Self::window_bits_for(max_len),
            window_bits,
            xyzz,
        ) as u64
            + KEPT_SLACK
    }

    /// The window for kept buckets over a section of `total` pairs summed
    /// in calls of up to `chunk` ([`choose_kept_window_bits`](super::plan::choose_kept_window_bits))
    /// whose [`Msm::kept_bytes_for`] fits `bytes`.
    pub fn choose_kept_window(total: usize, chunk: usize, bytes: u64) -> Option<u32> {
        let room = bytes.saturating_sub(KEPT_SLACK) as usize;
        choose_kept_window_bits(total, chunk, C::XYZZ_WORDS * 8, room)
    }

    fn kept_bucket_words(window_bits: u32) -> usize {
        ((windows_for(window_bits) as usize) << (window_bits - 1)) * C::XYZZ_WORDS
    }

    /// Sorts the kept calls by `sort` (allocating the radix scratch for
    /// the MSM's own plan if it had none): for tests of both sorts under
    /// kept buckets (a 2^22-point chunk at c = 20 sorts by radix).
    #[doc(hidden)]
    pub fn set_kept_sort(&mut self, sort: BucketSort) -> Result<()> {
        let kept = self.kept_plan()?;
        if sort == BucketSort::Radix && self.radix.is_none() {
            let group = radix_group_slots(kept.max_len, kept.slots(), kept.copies());
            self.radix = Some(RadixScratch::new(&self.stream, kept.max_len, group)?);
        }
        if let Some(k) = self.kept.as_mut() {
            k.sort = sort;
        }
        Ok(())
    }

    /// The plan of the kept calls this MSM was made for, or the error
    /// saying it was made otherwise.
    fn kept_plan(&self) -> Result<MsmPlan> {
        let kernel = kept_kernels::<C>()?.accumulate.name();
        self.kept.clone().ok_or_else(|| Error::BadArguments {
            kernel,
            message: "this MSM was not made for kept buckets (Msm::with_kept_window)".into(),
        })
    }

    /// Buckets for the kept calls this MSM was made for
    /// ([`Msm::with_kept_window`]), every one infinity (set by a kernel on
    /// the stream: no copy-engine memset queues behind copies in flight).
    pub fn kept_buckets(&mut self) -> Result<KeptBuckets<C>> {
        let plan = self.kept_plan()?;
        let words = Self::kept_bucket_words(plan.window_bits);
        let buckets = self.stream.alloc::<u64>(words)?;
        let mut halves = buckets.recast::<u32>()?;
        let len = halves.len() as u32;
        fill_u32(&self.stream, &mut halves, 0, len)?;
        Ok(KeptBuckets {
            buckets: halves.recast()?,
            plan,
            calls: 0,
            _curve: PhantomData,
        })
    }

    /// Queues Σ `scalars[i]·bases[i]` over the pairs (idx[0..len) with
    /// `indices`, else 0..len) into `kept`'s buckets: nothing is reduced
    /// until [`Msm::finish_kept`]. The bases may differ from call to call
    /// (the chunks of one section); the result is the sum over all calls.
    pub fn enqueue_kept(
        &mut self,
        kept: &mut KeptBuckets<C>,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        indices: Option<&DeviceBuffer<u32>>,
        len: usize,
    ) -> Result<()> {
        let kernels = self.check_kept(kept)?;
        self.plan = kept.plan.clone();
        self.marks.clear();
        self.checked_sort(bases, bases.len(), scalars, indices.map(|i| (i, 0)), len)?;
        let buckets = kept.buckets.arg_mut();
        self.accumulate_buckets(bases, len, buckets, (kernels.accumulate, kernels.merge))?;
        kept.calls += 1;
        Ok(())
    }

    /// Queues the reduction of `kept`'s buckets: [`Msm::result`] then
    /// returns the sum over every [`Msm::enqueue_kept`] call (the identity
    /// when there was none). The buckets may be dropped once it is read.
    pub fn finish_kept(&mut self, kept: &KeptBuckets<C>) -> Result<()> {
        let kernels = self.check_kept(kept)?;
        self.plan = kept.plan.clone();
        self.marks.clear();
        self.reduce_windows(kernels.reduce, kept.buckets.arg(), DevPtr::null())
    }

    /// The kept kernels, after checking that `kept` is this MSM's kind.
    fn check_kept(&self, kept: &KeptBuckets<C>) -> Result<KeptKernels<C::Affine>> {
        let kernels = kept_kernels::<C>()?;
        ensure(
            kernels.accumulate.name(),
            self.kept.as_ref() == Some(&kept.plan)
                && kept.buckets.len() >= kept.plan.keys() * C::XYZZ_WORDS,
            || {
                format!(
                    "buckets for c = {} but this MSM holds kept calls at {:?}",
                    kept.plan.window_bits,
                    self.kept.as_ref().map(|p| p.window_bits)
                )
            },
        )?;
        Ok(kernels)
    }
}
