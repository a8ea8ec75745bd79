//! [`Stream`]: launches, copies and allocations in order on one CUDA stream,
//! and [`Event`]s that order and time work across streams.

use super::*;

/// A CUDA stream on one device. Work on one stream runs in order; order work
/// across streams with [`Event`]s. Buffers allocated on a stream come from its
/// arena and return to it in order on that stream: drop a buffer only after
/// work on other streams that uses it has been waited for.
#[derive(Clone)]
pub struct Stream {
    pub(crate) gpu: Gpu,
    pub(crate) inner: Arc<CudaStream>,
    pub(crate) arena: Arena,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.gpu.inner.info.ordinal)
            .finish_non_exhaustive()
    }
}

impl Stream {
    /// The device this stream runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The arena this stream's buffers come from.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    pub(crate) fn cu(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// `len` zeroed elements of device memory: a region of this stream's
    /// arena (no device allocation), zeroed on the stream.
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let buf = self.alloc_uninit(len)?;
        arena::zero(&self.inner, buf.ptr, buf.size_bytes().max(1) as u64)?;
        Ok(buf)
    }

    /// `len` elements of device memory that nothing has been queued to
    /// write: a region of this stream's arena, released on this stream like
    /// any buffer, but **not zeroed**. For a buffer that copies overwrite
    /// whole before any kernel reads it, when the zeroing (a kernel on this
    /// stream) would make those copies wait: e.g. a witness uploaded on a
    /// copy stream while this stream's queue is still behind another
    /// worker's kernels. Reading it before it is written reads stale bytes.
    pub fn alloc_uninit<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::BadArguments {
                    kernel: "alloc",
                    message: format!("{len} elements overflow"),
                })?;
        let region = self.arena.region(bytes as u64, self).map_err(|e| match e {
            Error::OutOfMemory(m) => Error::OutOfMemory(format!(
                "{m} (allocating {len} × {})",
                std::any::type_name::<T>()
            )),
            e => e,
        })?;
        Ok(DeviceBuffer {
            ptr: region.ptr,
            _region: region,
            len,
            _t: PhantomData,
        })
    }

    /// Allocates and uploads `host`.
    pub fn upload_new<T: DeviceRepr>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(host.len())?;
        self.upload(host, &mut buf)?;
        Ok(buf)
    }

    /// Copies `host` into `dst` (same length). From pageable memory the copy
    /// is staged by the driver before this returns; use [`PinnedBuffer`] for
    /// full-rate asynchronous copies.
    pub fn upload<T: DeviceRepr>(&self, host: &[T], dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("upload", host.len(), dst.len)?;
        self.upload_prefix(host, dst)
    }

    /// Copies `host` into the first `host.len()` elements of `dst` and leaves
    /// the rest as it is (e.g. the zeros of a fresh [`Stream::alloc`]), so a
    /// short vector can be padded on the device instead of on the host.
    pub fn upload_prefix<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.upload_at(host, dst, 0)
    }

    /// Copies `host` into `dst[offset..offset + host.len()]`.
    pub fn upload_at<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        if offset
            .checked_add(host.len())
            .is_none_or(|end| end > dst.len)
        {
            return Err(Error::BadArguments {
                kernel: "upload_at",
                message: format!(
                    "{} elements at offset {offset} into a buffer of {}",
                    host.len(),
                    dst.len
                ),
            });
        }
        let bytes = as_bytes(host);
        if bytes.is_empty() {
            return Ok(());
        }
        let at = dst.ptr + (offset * std::mem::size_of::<T>()) as u64;
        #[allow(unsafe_code)]
        // SAFETY: `at..at+bytes` lies inside dst's live region (checked above);
        // `host` is pageable, so the driver stages it before returning.
        unsafe { ffi::copy_htod(&self.inner, at, bytes) }
            .cuda("cuMemcpyHtoDAsync", || format!("{} bytes", bytes.len()))
    }

    /// Copies `src` into `host` (same length) and waits for the copy.
    ///
    /// Waits for the stream's earlier work first, then copies: a copy queued
    /// behind kernels holds the copy engine it was given until they finish,
    /// and other streams' uploads queue behind it (H200: a 1 GiB staged
    /// upload beside another stream's NTTs with a download queued after
    /// them took 756 ms, 61 ms with the download issued after them;
    /// `copy_overlap` measures both ways; two GPU workers on a 32 GiB PoRep
    /// went from 1.50 to 1.40 s per partition).
    pub fn download<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        self.synchronize()?;
        self.copy_to_host(src, host)
    }

    /// [`Stream::download`] with the copy queued behind the stream's earlier
    /// work, the old way (for `copy_overlap`'s comparison; `tuning` feature).
    #[cfg(feature = "tuning")]
    pub fn download_queued<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        self.copy_to_host(src, host)
    }

    /// Queues the copy of `src` into `host` and waits for it.
    fn copy_to_host<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        check_len("download", host.len(), src.len)?;
        let bytes = std::mem::size_of_val(host);
        if bytes > 0 {
            let dst = ffi::as_bytes_mut(host);
            #[allow(unsafe_code)]
            // SAFETY: src's region holds `bytes`; we wait for the copy below
            // before `host` can be touched again.
            unsafe { ffi::copy_dtoh(&self.inner, dst, src.ptr) }
                .cuda("cuMemcpyDtoHAsync", || format!("{bytes} bytes"))?;
        }
        self.synchronize()
    }

    /// Downloads into a new vector.
    pub fn download_vec<T: DeviceRepr + Default>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::default(); src.len];
        self.download(src, &mut v)?;
        Ok(v)
    }

    /// Pinned host → device, asynchronous (ordered on this stream): the first
    /// `count` elements of `host` into `dst[offset..]`. The pinned buffer must
    /// not be written again before the copy has run: [`PinnedBuffer::write`]
    /// waits for it.
    pub fn upload_pinned_at<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        self.copy_pinned("upload_pinned_at", host, count, dst, offset)
    }

    /// Pinned staging bytes → device: the first `count` values of type `T`
    /// held in `host` (see [`PinnedBuffer::values_mut`]) into `dst[offset..]`,
    /// asynchronous (ordered on this stream).
    pub fn upload_staged<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<u8>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        self.copy_pinned("upload_staged", host, count, dst, offset)
    }

    /// The first `count` values of type `T` held in pinned `host` (of any
    /// element type) into `dst[offset..]`, asynchronous; both ranges checked.
    fn copy_pinned<U: DeviceRepr, T: DeviceRepr>(
        &self,
        op: &'static str,
        host: &PinnedBuffer<U>,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        let bytes = count * std::mem::size_of::<T>();
        let host_bytes = host.len * std::mem::size_of::<U>();
        if bytes > host_bytes || offset.checked_add(count).is_none_or(|e| e > dst.len) {
            return Err(Error::BadArguments {
                kernel: op,
                message: format!(
                    "{count} values ({bytes} bytes) from {host_bytes} pinned bytes at offset {offset} into a buffer of {}",
                    dst.len
                ),
            });
        }
        if bytes == 0 {
            return Ok(());
        }
        let at = dst.ptr + (offset * std::mem::size_of::<T>()) as u64;
        #[allow(unsafe_code)]
        // SAFETY: `bytes` fit both `host` and dst's live region from `offset`
        // (checked above); the pinned memory stays alive (owned by
        // `host`) and `host` records the copy's completion below, so it is not
        // rewritten before the copy ran.
        unsafe { ffi::copy_htod(&self.inner, at, &host.bytes.as_slice()[..bytes]) }
            .cuda("cuMemcpyHtoDAsync", || format!("{bytes} pinned bytes"))?;
        host.mark_used(self)
    }

    /// Pinned host → device, asynchronous (ordered on this stream):
    /// `host[from..from + count]` into `dst[offset..]` (a chunk of values
    /// parked in host memory back to the device).
    pub fn upload_pinned_range<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        from: usize,
        count: usize,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if from.checked_add(count).is_none_or(|e| e > host.len)
            || offset.checked_add(count).is_none_or(|e| e > dst.len)
        {
            return Err(Error::BadArguments {
                kernel: "upload_pinned_range",
                message: format!(
                    "{count} values from {from} of {} pinned at offset {offset} into a buffer of {}",
                    host.len, dst.len
                ),
            });
        }
        if count == 0 {
            return Ok(());
        }
        let at = dst.ptr + (offset * size) as u64;
        let src = &host.bytes.as_slice()[from * size..(from + count) * size];
        #[allow(unsafe_code)]
        // SAFETY: the range lies in `host` and in dst's live region from
        // `offset` (checked above); the pinned memory stays alive (owned by
        // `host`), which records the copy's completion below, so it is not
        // rewritten before the copy ran.
        unsafe { ffi::copy_htod(&self.inner, at, src) }.cuda("cuMemcpyHtoDAsync", || {
            format!("{} pinned bytes", count * size)
        })?;
        host.mark_used(self)
    }

    /// Pinned host → device, asynchronous (ordered on this stream).
    pub fn upload_pinned<T: DeviceRepr>(
        &self,
        host: &PinnedBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("upload_pinned", host.len, dst.len)?;
        self.upload_pinned_at(host, host.len, dst, 0)
    }

    /// Device → pinned host, asynchronous (ordered on this stream).
    pub fn download_pinned<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        host: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        check_len("download_pinned", host.len, src.len)?;
        let bytes = host.len * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        host.wait_unused()?;
        #[allow(unsafe_code)]
        // SAFETY: src's region holds `bytes`; host's reads wait for the event
        // recorded below before touching the memory.
        unsafe {
            ffi::copy_dtoh(
                &self.inner,
                &mut host.bytes.as_mut_slice()[..bytes],
                src.ptr,
            )
        }
        .cuda("cuMemcpyDtoHAsync", || format!("{bytes} pinned bytes"))?;
        host.mark_used(self)
    }

    /// Device → device copy of equal-length buffers.
    pub fn copy<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("copy", src.len, dst.len)?;
        self.copy_range(src, 0, dst, 0, src.len)
    }

    /// Copies `src[src_at..src_at + count]` to `dst[dst_at..]`.
    pub fn copy_range<T: DeviceRepr>(
        &self,
        src: &DeviceBuffer<T>,
        src_at: usize,
        dst: &mut DeviceBuffer<T>,
        dst_at: usize,
        count: usize,
    ) -> Result<()> {
        let fits = |at: usize, len: usize| at.checked_add(count).is_some_and(|e| e <= len);
        if !fits(src_at, src.len) || !fits(dst_at, dst.len) {
            return Err(Error::BadArguments {
                kernel: "copy_range",
                message: format!(
                    "{count} elements from {src_at} of {} to {dst_at} of {}",
                    src.len, dst.len
                ),
            });
        }
        let size = std::mem::size_of::<T>();
        let bytes = count * size;
        if bytes == 0 {
            return Ok(());
        }
        #[allow(unsafe_code)]
        // SAFETY: both ranges lie inside live regions (checked above).
        unsafe {
            ffi::copy_dtod(
                &self.inner,
                dst.ptr + (dst_at * size) as u64,
                src.ptr + (src_at * size) as u64,
                bytes,
            )
        }
        .cuda("cuMemcpyDtoDAsync", || format!("{bytes} bytes"))
    }

    /// Sets `dst[at..at + count]` to zero bytes.
    pub fn zero_range<T: DeviceRepr>(
        &self,
        dst: &mut DeviceBuffer<T>,
        at: usize,
        count: usize,
    ) -> Result<()> {
        if at.checked_add(count).is_none_or(|e| e > dst.len) {
            return Err(Error::BadArguments {
                kernel: "zero_range",
                message: format!("{count} elements from {at} of {}", dst.len),
            });
        }
        let size = std::mem::size_of::<T>();
        if count == 0 {
            return Ok(());
        }
        arena::zero(
            &self.inner,
            dst.ptr + (at * size) as u64,
            (count * size) as u64,
        )
    }

    /// Waits until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .cuda("cuStreamSynchronize", || self.gpu.inner.info.to_string())
    }

    /// Records a timing-capable event at this point of the stream.
    pub fn record(&self) -> Result<Event> {
        let e = self
            .inner
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .cuda("cuEventRecord", || "timing event".into())?;
        Ok(Event { inner: e })
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .cuda("cuStreamWaitEvent", || "cross-stream order".into())
    }

    /// Launches the declared `kernel` (`src/decl.rs`) with `args`, its
    /// argument tuple, over `cfg`; `sizes` describes the work for an error
    /// message. The one place a kernel is launched.
    ///
    /// # Safety
    /// The declaration matches the kernel's C signature (checked when the
    /// device was opened, `check_params`, and by the source test of
    /// `launch.rs`), so the argument list is the kernel's; the caller
    /// guarantees the kernel's own contract for these arguments and this
    /// grid: every device pointer points into a live allocation large
    /// enough for every access the kernel makes with them (and stays alive
    /// until the kernel has run, which stream order gives buffers released
    /// on this stream), outputs do not alias inputs unless the kernel allows
    /// it, and the dynamic shared memory covers what the kernel uses.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch<A: Args>(
        &self,
        kernel: Kernel<A>,
        cfg: LaunchConfig,
        args: A,
        sizes: impl FnOnce() -> String,
    ) -> Result<()> {
        let f = self.gpu.function(kernel)?;
        let mut bytes = KernelArgs::new();
        args.push_all(&mut bytes);
        // SAFETY: forwarded to the caller.
        unsafe { bytes.launch(&self.inner, &f, cfg) }.cuda("cuLaunchKernel", || {
            format!(
                "kernel {}, grid {:?} x block {:?}, {}",
                kernel.name(),
                cfg.grid_dim,
                cfg.block_dim,
                sizes()
            )
        })
    }
}

pub(crate) fn check_len(op: &'static str, a: usize, b: usize) -> Result<()> {
    crate::error::ensure(op, a == b, || {
        format!("length mismatch: {a} vs {b} elements")
    })
}

/// A point in a stream's work, for ordering and timing.
#[derive(Debug)]
pub struct Event {
    pub(crate) inner: CudaEvent,
}

impl Event {
    /// Milliseconds between `self` and a later event `end` (both completed).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        end.inner
            .synchronize()
            .cuda("cuEventSynchronize", || "timing".into())?;
        self.inner
            .elapsed_ms(&end.inner)
            .cuda("cuEventElapsedTime", || "timing".into())
    }

    /// Waits until everything queued on this stream has finished; a failed kernel's error comes back here.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .cuda("cuEventSynchronize", || "event".into())
    }
}
