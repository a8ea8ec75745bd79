//! Host → device copies through two pinned staging buffers: one is filled
//! on the host (in parallel, on the owner's fill pool) while the other's
//! copy runs. [`Staging::upload`] copies values as they are;
//! [`Staging::upload_packed`] sends field elements packed (see
//! [`crate::packed`]) and expands them on the device;
//! [`Staging::upload_classed`] sends a vector that is already in classes
//! (a compact witness) the same way, with no pass over 32-byte values.

use std::time::{Duration, Instant};

use cuzk_field::limbs::{DeviceRepr, FrLimbs};
use rayon::prelude::*;

use crate::device::{DeviceBuffer, Gpu, PinnedBuffer, Stream};
use crate::error::Result;
use crate::packed::{budget_words, expand_on_device, pack_into, Classed};

/// Two pinned buffers of equal size and the threads that fill them.
pub struct Staging {
    buffers: [PinnedBuffer<u8>; 2],
    next: usize,
    fill: Option<rayon::ThreadPool>,
    times: StagingTimes,
}

/// Where a [`Staging::upload`]'s host time went, summed over its pieces:
/// filling the pinned buffers, and waiting for a buffer's previous copy to
/// finish before it could be filled again (the transfers themselves, and
/// anything that holds them back on the device).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingTimes {
    /// Host time spent copying into the pinned buffers.
    pub fill: Duration,
    /// Host time spent waiting for a pinned buffer's previous copy to finish.
    pub wait: Duration,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging")
            .field("bytes", &self.buffers[0].len())
            .field(
                "fill_threads",
                &self.fill.as_ref().map(|p| p.current_num_threads()),
            )
            .finish_non_exhaustive()
    }
}

/// What one [`Staging::upload_packed`] moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackedUpload {
    /// Values uploaded.
    pub values: usize,
    /// Of them, in pieces that went packed.
    pub packed: usize,
    /// Of the packed ones, sent in full (neither 0 nor 1).
    pub others: usize,
    /// Bytes that crossed PCIe.
    pub bytes: u64,
}

impl Staging {
    /// Two pinned buffers of `bytes` each (a slow, host-side call: make
    /// them once), filled on `fill` (or, without one, on the current rayon
    /// pool).
    pub fn new(gpu: &Gpu, bytes: usize, fill: Option<rayon::ThreadPool>) -> Result<Self> {
        Ok(Staging {
            buffers: [
                PinnedBuffer::new(gpu, bytes)?,
                PinnedBuffer::new(gpu, bytes)?,
            ],
            next: 0,
            fill,
            times: StagingTimes::default(),
        })
    }

    /// Bytes of each buffer.
    pub fn bytes(&self) -> usize {
        self.buffers[0].len()
    }

    /// Copies `src` into `dst[at..]` on `stream`, a buffer's worth at a time.
    /// Its host time is added to [`Staging::take_times`].
    pub fn upload<T: DeviceRepr + Sync>(
        &mut self,
        stream: &Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        self.upload_fold(stream, src, dst, at, |s, d| d.copy_from_slice(s), |_, _| ())?;
        Ok(())
    }

    /// [`Staging::upload`] with the fill threads' copy written by `fill`:
    /// `fill(s, d)` writes `d` (as long as `s`, a block of `src` in order)
    /// and returns what it found there, and `join` folds two adjacent
    /// blocks' findings, left then right (checks made in the same pass over
    /// memory as the copy). `None` when `src` is empty.
    pub fn upload_fold<S, T, R>(
        &mut self,
        stream: &Stream,
        src: &[S],
        dst: &mut DeviceBuffer<T>,
        at: usize,
        fill: impl Fn(&[S], &mut [T]) -> R + Sync + Send,
        join: impl Fn(R, R) -> R + Sync + Send,
    ) -> Result<Option<R>>
    where
        S: Sync,
        T: DeviceRepr,
        R: Send,
    {
        let per = (self.bytes() / std::mem::size_of::<T>()).max(1);
        let mut found: Option<R> = None;
        for (i, piece) in src.chunks(per).enumerate() {
            let k = self.next;
            self.next ^= 1;
            let t = Instant::now();
            let view = &mut self.buffers[k].values_mut::<T>()?[..piece.len()];
            self.times.wait += t.elapsed();
            let t = Instant::now();
            let here = on(&self.fill, || {
                view.par_chunks_mut(1 << 14)
                    .zip(piece.par_chunks(1 << 14))
                    .map(|(d, s)| fill(s, d))
                    .reduce_with(&join)
            });
            self.times.fill += t.elapsed();
            stream.upload_staged(&self.buffers[k], piece.len(), dst, at + i * per)?;
            found = match (found, here) {
                (Some(a), Some(b)) => Some(join(a, b)),
                (a, b) => a.or(b),
            };
        }
        Ok(found)
    }

    /// The host time of the uploads since the last call (fill and wait),
    /// and zero again.
    pub fn take_times(&mut self) -> StagingTimes {
        std::mem::take(&mut self.times)
    }

    /// Copies `src` into `dst[at..]` packed: in pieces of one buffer's
    /// words in values (2^23 for 64 MiB buffers, 256 MiB of input), each
    /// packed into a buffer by the fill threads while the other's piece
    /// crosses and is expanded on the device (into one scratch of the
    /// piece's budget, reused in stream order). The host reads each value
    /// once and writes only the packed bytes. A piece past its budget (a
    /// quarter of its plain bytes, [`budget_words`]) goes plainly.
    pub fn upload_packed(
        &mut self,
        stream: &Stream,
        src: &[FrLimbs],
        dst: &mut DeviceBuffer<FrLimbs>,
        at: usize,
    ) -> Result<PackedUpload> {
        let piece_len = self.bytes() / std::mem::size_of::<u64>();
        let mut report = PackedUpload {
            values: src.len(),
            ..PackedUpload::default()
        };
        if src.is_empty() || piece_len == 0 {
            self.upload(stream, src, dst, at)?;
            report.bytes = std::mem::size_of_val(src) as u64;
            return Ok(report);
        }
        let mut scratch = stream.alloc::<u64>(budget_words(src.len().min(piece_len)))?;
        for (i, piece) in src.chunks(piece_len).enumerate() {
            let offset = at + i * piece_len;
            let k = self.next;
            let words = &mut self.buffers[k].values_mut::<u64>()?[..budget_words(piece.len())];
            let layout = on(&self.fill, || pack_into(piece, words));
            match layout {
                Some(layout) => {
                    self.next ^= 1;
                    stream.upload_staged(&self.buffers[k], layout.words(), &mut scratch, 0)?;
                    expand_on_device(stream, &scratch, layout, dst, offset)?;
                    report.packed += piece.len();
                    report.others += layout.others;
                    report.bytes += layout.bytes() as u64;
                }
                None => {
                    self.upload(stream, piece, dst, offset)?;
                    report.bytes += std::mem::size_of_val(piece) as u64;
                }
            }
        }
        Ok(report)
    }
}

impl Staging {
    /// Copies the vector `src` holds in classes (a compact witness's aux
    /// values) into `dst[at..at + src.len]`: checked first
    /// ([`Classed::check`]: nothing is uploaded from sections that
    /// disagree), then in pieces of whole code words that fill one buffer
    /// at most, each laid out by [`Classed::write_piece`] on the fill
    /// threads (codes and others copied, counts rebased) while the other's
    /// piece crosses, and expanded on the device into `dst` (through one
    /// scratch of a buffer's words, reused in stream order).
    pub fn upload_classed(
        &mut self,
        stream: &Stream,
        src: Classed<'_>,
        dst: &mut DeviceBuffer<FrLimbs>,
        at: usize,
    ) -> Result<PackedUpload> {
        src.check()?;
        let kernel = "prover_expand_z";
        crate::error::ensure(
            kernel,
            at.checked_add(src.len).is_some_and(|e| e <= dst.len()),
            || format!("{} values at {at} into a buffer of {}", src.len, dst.len()),
        )?;
        let room = self.bytes() / std::mem::size_of::<u64>();
        let mut report = PackedUpload {
            values: src.len,
            packed: src.len,
            others: src.others.len(),
            bytes: 0,
        };
        if src.len == 0 {
            return Ok(report);
        }
        let whole = src.piece_layout(0, src.codes.len()).words();
        let mut scratch = stream.alloc::<u64>(whole.min(room))?;
        let mut w0 = 0;
        while w0 < src.codes.len() {
            let w1 = src
                .piece_end(w0, room)
                .ok_or_else(|| crate::error::Error::BadArguments {
                    kernel,
                    message: format!("a staging buffer of {room} words holds no code word's piece"),
                })?;
            let k = self.next;
            self.next ^= 1;
            let t = Instant::now();
            let words = self.buffers[k].values_mut::<u64>()?;
            self.times.wait += t.elapsed();
            let t = Instant::now();
            let layout = on(&self.fill, || src.write_piece(w0, w1, words));
            self.times.fill += t.elapsed();
            stream.upload_staged(&self.buffers[k], layout.words(), &mut scratch, 0)?;
            expand_on_device(stream, &scratch, layout, dst, at + 32 * w0)?;
            report.bytes += layout.bytes() as u64;
            w0 = w1;
        }
        Ok(report)
    }
}

/// Runs `f` on `fill`, or on the current rayon pool without one.
fn on<R: Send>(fill: &Option<rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match fill {
        Some(pool) => pool.install(f),
        None => f(),
    }
}
