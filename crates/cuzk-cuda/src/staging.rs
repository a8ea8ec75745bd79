//! Host → device copies through two pinned staging buffers: one is filled
//! on the host (in parallel, on the owner's fill pool) while the other's
//! copy runs. [`Staging::upload`] copies values as they are;
//! [`Staging::upload_packed`] sends field elements packed (see
//! [`crate::packed`]) and expands them on the device.

use std::time::{Duration, Instant};

use cuzk_field::limbs::{DeviceRepr, FrLimbs};
use rayon::prelude::*;

use crate::device::{DeviceBuffer, Gpu, PinnedBuffer, Stream};
use crate::error::Result;
use crate::packed::{budget_words, expand_on_device, pack_into};

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
    pub fill: Duration,
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
        let per = (self.bytes() / std::mem::size_of::<T>()).max(1);
        for (i, piece) in src.chunks(per).enumerate() {
            let k = self.next;
            self.next ^= 1;
            let t = Instant::now();
            let view = &mut self.buffers[k].values_mut::<T>()?[..piece.len()];
            self.times.wait += t.elapsed();
            let t = Instant::now();
            on(&self.fill, || {
                view.par_chunks_mut(1 << 14)
                    .zip(piece.par_chunks(1 << 14))
                    .for_each(|(d, s)| d.copy_from_slice(s))
            });
            self.times.fill += t.elapsed();
            stream.upload_staged(&self.buffers[k], piece.len(), dst, at + i * per)?;
        }
        Ok(())
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

/// Runs `f` on `fill`, or on the current rayon pool without one.
fn on<R: Send>(fill: &Option<rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match fill {
        Some(pool) => pool.install(f),
        None => f(),
    }
}
