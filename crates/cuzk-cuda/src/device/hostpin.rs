//! Host memory page-locked where it already is ([`HostPin`]), so the copy
//! engine reads it at the link's rate with no staging copy on the host: a
//! proving key streamed to a card too small to hold it is pinned once and
//! every chunk of every partition crosses straight from it.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::CudaStream;
use cuzk_field::limbs::{as_bytes, DeviceRepr};

use super::{DeviceBuffer, Event, Gpu, Stream};
use crate::error::{DriverContext, Error, Result};
use crate::ffi::{self, Registered};

/// Ranges of an owner's memory page-locked in place, shared by every
/// [`HostPin`] of the same owner (registration is process-wide in the
/// driver: one owner is registered once, whatever device asks).
struct Pinned {
    /// Per stream that copied from the ranges, an event after its last
    /// copy: waited for before the ranges are unregistered (no device-wide
    /// synchronization: only those copies are waited for).
    copies: Mutex<Vec<(Arc<CudaStream>, Event)>>,
    ranges: Vec<Registered>,
    bytes: u64,
    /// What keeps the ranges allocated and unchanged; dropped last.
    owner: Arc<dyn Any + Send + Sync>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let copies = std::mem::take(&mut *self.copies.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, last) in copies {
            // A copy from the ranges may still be queued on that stream.
            if let Err(e) = last.synchronize() {
                tracing::warn!("waiting for the last copy from pinned host memory: {e}");
            }
        }
        // Then `ranges` unregister, then `owner` may free the memory.
    }
}

/// The owners pinned now (by the address of their `Arc`'s value).
static PINNED: Mutex<Vec<(usize, Weak<Pinned>)>> = Mutex::new(Vec::new());

/// Memory of an owner (e.g. a proving key behind an `Arc`) page-locked in
/// place for as long as any `HostPin` of it lives: copies from it with
/// [`Stream::upload_from_pin`] are asynchronous and need no staging buffer.
/// The pin holds the owner, so the memory can neither be freed nor, behind
/// a shared `Arc`, changed while it is pinned; dropping the last pin of an
/// owner waits for the copies queued from it, then unpins it.
#[derive(Clone)]
pub struct HostPin(Arc<Pinned>);

impl fmt::Debug for HostPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostPin")
            .field("ranges", &self.0.ranges.len())
            .field("bytes", &self.0.bytes)
            .finish()
    }
}

impl HostPin {
    /// Pins `ranges(&owner)` (each a slice of the owner's memory), or joins
    /// the pin of the same owner made before. A slow call (the driver locks
    /// every page: seconds for tens of GB): make it once per owner.
    ///
    /// An error names the bytes, the locked-memory limit of this process
    /// (`ulimit -l`) and how to lift it: page-locking fails when the limit
    /// or the host's free memory is too small.
    pub fn new<O: Send + Sync + 'static>(
        gpu: &Gpu,
        owner: Arc<O>,
        ranges: impl for<'a> FnOnce(&'a O) -> Vec<&'a [u8]>,
    ) -> Result<HostPin> {
        let id = Arc::as_ptr(&owner) as *const u8 as usize;
        let mut pinned = PINNED.lock().unwrap_or_else(|e| e.into_inner());
        pinned.retain(|(_, w)| w.strong_count() > 0);
        if let Some(p) = pinned
            .iter()
            .find(|(k, _)| *k == id)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(HostPin(p));
        }
        let slices: Vec<&[u8]> = ranges(&owner)
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        let bytes: u64 = slices.iter().map(|s| s.len() as u64).sum();
        let pages = whole_pages(&slices);
        let mut registered = Vec::with_capacity(pages.len());
        for &(start, len) in &pages {
            #[allow(unsafe_code)]
            // SAFETY: the pages hold the owner's memory (mapped: each holds
            // part of a live slice), and the owner is held by the `Pinned`
            // made below (or, on an error, the ranges already registered are
            // dropped, unregistering them, before `owner` is); no copy from
            // them was queued yet.
            let r = unsafe { Registered::new(&gpu.inner.ctx, start as *const u8, len) };
            match r {
                Ok(r) => registered.push(r),
                Err(source) => {
                    drop(registered);
                    return Err(Error::HostPin {
                        bytes,
                        limit: locked_memory_limit(),
                        source: Error::Driver {
                            call: "cuMemHostRegister",
                            what: format!("{len} bytes at {start:#x}"),
                            source,
                        }
                        .into(),
                    });
                }
            }
        }
        let p = Arc::new(Pinned {
            copies: Mutex::new(Vec::new()),
            ranges: registered,
            bytes,
            owner,
        });
        pinned.push((id, Arc::downgrade(&p)));
        Ok(HostPin(p))
    }

    /// Bytes pinned.
    pub fn bytes(&self) -> u64 {
        self.0.bytes
    }

    /// Whether `values` lie inside one pinned range.
    pub fn holds<T: DeviceRepr>(&self, values: &[T]) -> bool {
        let b = as_bytes(values);
        self.0.ranges.iter().any(|r| r.holds(b))
    }

    /// Whether this pin is of `owner` (the same `Arc`'s value).
    pub fn is_of<O>(&self, owner: &O) -> bool {
        let id = owner as *const O as *const u8 as usize;
        Arc::as_ptr(&self.0.owner) as *const u8 as usize == id
    }

    /// Keeps `last` (recorded on a stream after a copy from the ranges) as
    /// that stream's last copy.
    fn copied(&self, stream: &Stream, last: Event) {
        let mut copies = self.0.copies.lock().unwrap_or_else(|e| e.into_inner());
        match copies
            .iter_mut()
            .find(|(s, _)| Arc::ptr_eq(s, &stream.inner))
        {
            Some(entry) => entry.1 = last,
            None => copies.push((Arc::clone(&stream.inner), last)),
        }
    }
}

/// The pages that hold `slices`, as (start, length), adjacent or shared
/// ones merged: the driver locks whole pages, and two small slices (heap
/// allocations) may share one, which it would refuse to register twice.
/// The extra bytes are the owner's neighbours in the same pages: locked,
/// never read or copied from.
fn whole_pages(slices: &[&[u8]]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = slices
        .iter()
        .map(|s| {
            let start = s.as_ptr() as usize;
            (start / PAGE * PAGE, (start + s.len()).div_ceil(PAGE) * PAGE)
        })
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
        .into_iter()
        .map(|(start, end)| (start, end - start))
        .collect()
}

/// The page size the ranges are rounded to (x86-64 and most arm64 hosts).
pub(crate) const PAGE: usize = 4096;

/// This process's locked-memory limit in bytes (`Max locked memory` in
/// /proc/self/limits): `None` when unlimited or unknown.
fn locked_memory_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

impl Stream {
    /// `src` (inside `pin`'s memory) into `dst[at..]`, asynchronous, ordered
    /// on this stream: the copy engine reads the pinned memory itself.
    pub fn upload_from_pin<T: DeviceRepr>(
        &self,
        pin: &HostPin,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        let op = "upload_from_pin";
        // Nothing to copy (an empty slice may point anywhere).
        if src.is_empty() {
            return Ok(());
        }
        crate::error::ensure(op, pin.holds(src), || {
            format!("{} values that are not inside the pinned ranges", src.len())
        })?;
        crate::error::ensure(
            op,
            at.checked_add(src.len()).is_some_and(|e| e <= dst.len),
            || format!("{} values at {at} into a buffer of {}", src.len(), dst.len),
        )?;
        let to = dst.ptr + (at * std::mem::size_of::<T>()) as u64;
        let bytes = as_bytes(src);
        #[allow(unsafe_code)]
        // SAFETY: dst's live region holds the bytes from `at` (checked);
        // `src` lies in memory `pin` keeps allocated and unchanged (checked
        // by holds), and the last pin's drop waits for the event recorded
        // below, after this copy, before unpinning it or letting it go.
        unsafe { ffi::copy_htod(&self.inner, to, bytes) }.cuda("cuMemcpyHtoDAsync", || {
            format!("{} pinned-in-place bytes", bytes.len())
        })?;
        pin.copied(self, self.record()?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slices that share a page, touch or overlap are one range of whole
    /// pages; apart, they stay apart; every slice lies inside a range.
    #[test]
    fn slices_become_whole_merged_pages() {
        let buf = vec![0u8; 8 * PAGE];
        let base = (buf.as_ptr() as usize).div_ceil(PAGE) * PAGE - buf.as_ptr() as usize;
        let b = &buf[base..base + 6 * PAGE];
        // Two small slices in page 0, one across pages 1-2, one in page 4.
        let slices: [&[u8]; 4] = [
            &b[10..100],
            &b[200..300],
            &b[PAGE + 5..2 * PAGE + 7],
            &b[4 * PAGE + 1..4 * PAGE + 2],
        ];
        let pages = whole_pages(&slices);
        let at = b.as_ptr() as usize;
        assert_eq!(pages, vec![(at, 3 * PAGE), (at + 4 * PAGE, PAGE)]);
        for s in slices {
            let p = s.as_ptr() as usize;
            assert!(pages
                .iter()
                .any(|&(start, len)| p >= start && p + s.len() <= start + len));
        }
        assert!(whole_pages(&[]).is_empty());
    }
}
