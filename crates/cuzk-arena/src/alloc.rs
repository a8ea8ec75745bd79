//! Offset sub-allocation of one reservation.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

/// Why an allocation could not be served: the numbers a user needs to size
/// a budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "VRAM arena exhausted: {need} bytes asked for ({}), largest free block {largest_free} bytes; \
     {in_use} of {capacity} bytes in use in {regions} regions",
    human(*need)
)]
pub struct Exhausted {
    /// Bytes asked for.
    pub need: u64,
    /// The largest free block then, bytes.
    pub largest_free: u64,
    /// Bytes in live regions then.
    pub in_use: u64,
    /// The arena's size, bytes.
    pub capacity: u64,
    /// Live regions then.
    pub regions: usize,
}

/// What the arena holds right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The arena's size, bytes.
    pub capacity: u64,
    /// Bytes in live regions, alignment padding included.
    pub in_use: u64,
    /// The most `in_use` has ever been.
    pub peak: u64,
    /// Bytes released but not yet reusable (their fences are pending).
    pub pending: u64,
    /// Times an allocation blocked on a pending release's fence (nothing
    /// else fitted), and the host time it spent blocked, since the arena
    /// was made: GPU work of whatever stream released the region had to
    /// finish first, so waits between workers serialize them.
    pub fence_waits: u64,
    /// See `fence_waits`.
    pub fence_wait: Duration,
    /// The largest free block, bytes: the largest allocation that fits now.
    pub largest_free: u64,
    /// Live regions.
    pub regions: usize,
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in use of {} (peak {}, {} regions, {} pending release)",
            human(self.in_use),
            human(self.capacity),
            human(self.peak),
            self.regions,
            human(self.pending)
        )?;
        if self.fence_waits > 0 {
            write!(
                f,
                "; {} allocation(s) waited {:.3} s for pending releases",
                self.fence_waits,
                self.fence_wait.as_secs_f64()
            )?;
        }
        Ok(())
    }
}

/// Bytes as a short human figure (GiB / MiB / KiB / B).
pub fn human(bytes: u64) -> String {
    const K: f64 = 1024.0;
    let b = bytes as f64;
    if b >= K * K * K {
        format!("{:.2} GiB", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.1} MiB", b / (K * K))
    } else if b >= K {
        format!("{:.1} KiB", b / K)
    } else {
        format!("{bytes} B")
    }
}

/// Best-fit allocator over `[0, capacity)`: every region starts at a multiple
/// of `align` and is a multiple of `align` long; freed neighbours coalesce.
#[derive(Debug)]
pub struct Allocator {
    capacity: u64,
    align: u64,
    /// Free blocks: offset → length, disjoint and never adjacent.
    free: BTreeMap<u64, u64>,
    in_use: u64,
    peak: u64,
    regions: usize,
}

impl Allocator {
    /// An allocator for `capacity` bytes (rounded down to `align`, a power of two).
    pub fn new(capacity: u64, align: u64) -> Self {
        assert!(align.is_power_of_two(), "alignment must be a power of two");
        let capacity = capacity & !(align - 1);
        let mut free = BTreeMap::new();
        if capacity > 0 {
            free.insert(0, capacity);
        }
        Allocator {
            capacity,
            align,
            free,
            in_use: 0,
            peak: 0,
            regions: 0,
        }
    }

    /// The size a request of `bytes` occupies (at least one alignment unit).
    pub fn rounded(&self, bytes: u64) -> u64 {
        bytes.max(1).next_multiple_of(self.align)
    }

    /// A region of at least `bytes`; returns its offset. The region occupies
    /// [`Allocator::rounded`]`(bytes)`: pass the same `bytes` to [`Allocator::free`].
    pub fn alloc(&mut self, bytes: u64) -> Result<u64, Exhausted> {
        let size = self.rounded(bytes);
        let best = self
            .free
            .iter()
            .filter(|(_, &len)| len >= size)
            .min_by_key(|(&off, &len)| (len, off))
            .map(|(&off, &len)| (off, len));
        let Some((off, len)) = best else {
            return Err(self.exhausted(bytes));
        };
        self.free.remove(&off);
        if len > size {
            self.free.insert(off + size, len - size);
        }
        self.in_use += size;
        self.peak = self.peak.max(self.in_use);
        self.regions += 1;
        Ok(off)
    }

    /// Returns the region at `offset` that was allocated for `bytes`.
    ///
    /// # Panics
    /// If the region overlaps free space (a double free or a wrong size): the
    /// arena's bookkeeping would be corrupt, and device memory shared.
    pub fn free(&mut self, offset: u64, bytes: u64) {
        let size = self.rounded(bytes);
        let end = offset + size;
        assert!(end <= self.capacity, "region beyond the arena");
        let before = self
            .free
            .range(..=offset)
            .next_back()
            .map(|(&o, &l)| (o, l));
        let after = self.free.range(offset..).next().map(|(&o, &l)| (o, l));
        if let Some((o, l)) = before {
            assert!(
                o + l <= offset,
                "double free or overlapping region at {offset}"
            );
        }
        if let Some((o, _)) = after {
            assert!(o >= end, "double free or overlapping region at {offset}");
        }
        let (mut start, mut len) = (offset, size);
        if let Some((o, l)) = before.filter(|(o, l)| o + l == offset) {
            self.free.remove(&o);
            start = o;
            len += l;
        }
        if let Some((o, l)) = after.filter(|(o, _)| *o == end) {
            self.free.remove(&o);
            len += l;
        }
        self.free.insert(start, len);
        self.in_use -= size;
        self.regions -= 1;
    }

    /// What the arena holds now (nothing is pending in this allocator).
    pub fn usage(&self) -> Usage {
        Usage {
            capacity: self.capacity,
            in_use: self.in_use,
            peak: self.peak,
            pending: 0,
            fence_waits: 0,
            fence_wait: Duration::ZERO,
            largest_free: self.largest_free(),
            regions: self.regions,
        }
    }

    /// The largest free block, bytes.
    pub fn largest_free(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// The arena's size, bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Forgets the peak (e.g. between benchmark runs).
    pub fn reset_peak(&mut self) {
        self.peak = self.in_use;
    }

    fn exhausted(&self, need: u64) -> Exhausted {
        Exhausted {
            need,
            largest_free: self.largest_free(),
            in_use: self.in_use,
            capacity: self.capacity,
            regions: self.regions,
        }
    }
}

/// A point in GPU work that a released region must wait for before reuse.
pub trait Fence {
    /// Whether the work before the fence has finished (non-blocking).
    fn is_done(&self) -> bool;
    /// Blocks until it has.
    fn wait(&self);
}

/// An [`Allocator`] whose regions are released *stream-ordered*: a region
/// released with a fence becomes reusable once the fence is done, so memory
/// that queued GPU work still reads or writes is never handed out again.
#[derive(Debug)]
pub struct OrderedAllocator<F> {
    inner: Allocator,
    /// Released regions (offset, bytes, fence), oldest first.
    pending: VecDeque<(u64, u64, F)>,
    fence_waits: u64,
    fence_wait: Duration,
}

impl<F: Fence> OrderedAllocator<F> {
    /// An empty arena of `capacity` bytes handing out offsets aligned to `align`.
    pub fn new(capacity: u64, align: u64) -> Self {
        OrderedAllocator {
            inner: Allocator::new(capacity, align),
            pending: VecDeque::new(),
            fence_waits: 0,
            fence_wait: Duration::ZERO,
        }
    }

    /// A region of at least `bytes`. Completed releases are reclaimed first;
    /// when nothing fits, the oldest pending releases are waited for one at a
    /// time (blocking) until the request fits or none are left.
    pub fn alloc(&mut self, bytes: u64) -> Result<u64, Exhausted> {
        self.reclaim_done();
        loop {
            match self.inner.alloc(bytes) {
                Ok(off) => return Ok(off),
                Err(e) => match self.pending.pop_front() {
                    None => return Err(e),
                    Some((off, len, fence)) => {
                        if !fence.is_done() {
                            let start = Instant::now();
                            fence.wait();
                            self.fence_waits += 1;
                            self.fence_wait += start.elapsed();
                        }
                        self.inner.free(off, len);
                    }
                },
            }
        }
    }

    /// Releases a region: at once when `fence` is `None`, else when it is done.
    pub fn release(&mut self, offset: u64, bytes: u64, fence: Option<F>) {
        match fence {
            Some(f) if !f.is_done() => self.pending.push_back((offset, bytes, f)),
            _ => self.inner.free(offset, bytes),
        }
    }

    /// Moves every completed release back to the free space.
    pub fn reclaim_done(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].2.is_done() {
                let (off, len, _) = self.pending.remove(i).expect("index in range");
                self.inner.free(off, len);
            } else {
                i += 1;
            }
        }
    }

    /// Waits for every pending release and reclaims it (tear-down, tests).
    pub fn drain(&mut self) {
        while let Some((off, len, fence)) = self.pending.pop_front() {
            fence.wait();
            self.inner.free(off, len);
        }
    }

    /// What the arena holds now, released regions awaiting their fences included.
    pub fn usage(&self) -> Usage {
        let pending: u64 = self
            .pending
            .iter()
            .map(|(_, len, _)| self.inner.rounded(*len))
            .sum();
        Usage {
            pending,
            fence_waits: self.fence_waits,
            fence_wait: self.fence_wait,
            ..self.inner.usage()
        }
    }

    /// The size a request of `bytes` occupies (at least one alignment unit).
    pub fn rounded(&self, bytes: u64) -> u64 {
        self.inner.rounded(bytes)
    }

    /// Host time allocations have spent blocked on fences so far.
    pub fn fence_wait(&self) -> Duration {
        self.fence_wait
    }

    /// Forgets the peak (e.g. between benchmark runs).
    pub fn reset_peak(&mut self) {
        self.inner.reset_peak();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_short_figures() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(96 << 20), "96.0 MiB");
        assert_eq!(human(3 << 30), "3.00 GiB");
    }
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn aligns_coalesces_and_accounts() {
        let mut a = Allocator::new(4096 + 100, 256);
        assert_eq!(a.capacity(), 4096, "capacity rounds down to the alignment");
        let x = a.alloc(1).unwrap();
        let y = a.alloc(300).unwrap();
        let z = a.alloc(256).unwrap();
        assert_eq!((x % 256, y % 256, z % 256), (0, 0, 0));
        assert_eq!(a.usage().in_use, 256 + 512 + 256);
        assert_eq!(a.usage().regions, 3);
        a.free(y, 300);
        a.free(x, 1);
        a.free(z, 256);
        let u = a.usage();
        assert_eq!((u.in_use, u.regions, u.largest_free), (0, 0, 4096));
        assert_eq!(u.peak, 1024);
    }

    #[test]
    fn exhaustion_names_the_numbers() {
        let mut a = Allocator::new(1 << 20, 256);
        let _keep = a.alloc(600 << 10).unwrap();
        let e = a.alloc(512 << 10).unwrap_err();
        assert_eq!(e.need, 512 << 10);
        assert_eq!(e.largest_free, (1 << 20) - (600 << 10));
        assert_eq!(e.in_use, 600 << 10);
        let msg = e.to_string();
        assert!(msg.contains("524288 bytes asked for"), "{msg}");
        assert!(msg.contains("512.0 KiB"), "{msg}");
    }

    #[test]
    fn best_fit_prefers_the_smallest_hole() {
        let mut a = Allocator::new(10 * 256, 256);
        let r: Vec<u64> = (0..10).map(|_| a.alloc(256).unwrap()).collect();
        a.free(r[1], 256); // hole of 1
        a.free(r[4], 256);
        a.free(r[5], 256); // hole of 2
        assert_eq!(a.alloc(256).unwrap(), r[1]);
        assert_eq!(a.alloc(512).unwrap(), r[4]);
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_panics() {
        let mut a = Allocator::new(4096, 256);
        let x = a.alloc(256).unwrap();
        let _y = a.alloc(256).unwrap();
        a.free(x, 256);
        a.free(x, 256);
    }

    /// A fence that is done when its shared flag says so; counts waits.
    #[derive(Clone)]
    struct TestFence {
        done: Rc<Cell<bool>>,
        waits: Rc<Cell<u32>>,
    }

    impl Fence for TestFence {
        fn is_done(&self) -> bool {
            self.done.get()
        }
        fn wait(&self) {
            self.waits.set(self.waits.get() + 1);
            self.done.set(true);
        }
    }

    #[test]
    fn pending_regions_are_not_reused_before_their_fence() {
        let mut a = OrderedAllocator::new(1024, 256);
        let f = TestFence {
            done: Rc::new(Cell::new(false)),
            waits: Rc::new(Cell::new(0)),
        };
        let x = a.alloc(512).unwrap();
        let _y = a.alloc(512).unwrap();
        a.release(x, 512, Some(f.clone()));
        assert_eq!(a.usage().pending, 512);
        // Nothing else free: the allocator must wait for the fence, then reuse.
        assert_eq!(a.usage().fence_waits, 0);
        assert_eq!(a.alloc(256).unwrap(), x);
        assert_eq!(f.waits.get(), 1);
        assert_eq!(a.usage().fence_waits, 1, "the wait is counted");
        assert!(a.usage().to_string().contains("1 allocation(s) waited"));
        // A completed fence is reclaimed without waiting.
        let g = TestFence {
            done: Rc::new(Cell::new(true)),
            waits: Rc::new(Cell::new(0)),
        };
        let z = a.alloc(256).unwrap();
        a.release(z, 256, Some(g.clone()));
        assert_eq!(a.alloc(256).unwrap(), z);
        assert_eq!(g.waits.get(), 0);
    }

    #[test]
    fn free_space_is_reused_before_waiting() {
        let mut a = OrderedAllocator::new(1024, 256);
        let f = TestFence {
            done: Rc::new(Cell::new(false)),
            waits: Rc::new(Cell::new(0)),
        };
        let x = a.alloc(256).unwrap();
        a.release(x, 256, Some(f.clone()));
        let y = a.alloc(256).unwrap();
        assert_ne!(x, y, "the pending region is not handed out");
        assert_eq!(f.waits.get(), 0);
        assert_eq!(a.usage().pending, 256);
        a.drain();
        assert_eq!(a.usage().pending, 0);
        assert_eq!(a.usage().in_use, 256);
    }

    proptest::proptest! {
        /// Random alloc/free sequences: regions never overlap, stay aligned and
        /// inside the arena, and freeing everything restores one block.
        #[test]
        fn regions_never_overlap(ops in proptest::collection::vec((0u8..3, 1u64..5000), 1..200)) {
            let mut a = Allocator::new(64 * 1024, 256);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (op, size) in ops {
                if op < 2 || live.is_empty() {
                    if let Ok(off) = a.alloc(size) {
                        let end = off + a.rounded(size);
                        proptest::prop_assert!(off % 256 == 0 && end <= 64 * 1024);
                        for &(o, s) in &live {
                            let e = o + a.rounded(s);
                            proptest::prop_assert!(end <= o || off >= e, "overlap");
                        }
                        live.push((off, size));
                    }
                } else {
                    let (o, s) = live.swap_remove(size as usize % live.len());
                    a.free(o, s);
                }
                let used: u64 = live.iter().map(|&(_, s)| a.rounded(s)).sum();
                proptest::prop_assert_eq!(a.usage().in_use, used);
            }
            for (o, s) in live.drain(..) {
                a.free(o, s);
            }
            proptest::prop_assert_eq!(a.largest_free(), 64 * 1024);
        }
    }
}
