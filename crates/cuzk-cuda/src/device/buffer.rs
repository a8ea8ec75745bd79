//! Typed buffers: [`DeviceBuffer`] (a handle to an arena region, never a
//! Rust reference to device memory) and [`PinnedBuffer`] (page-locked host
//! memory for fast copies).

use super::stream::check_len;
use super::*;

/// `len` values of `T` in device memory: a handle, never a Rust reference to
/// device memory. A region of an arena, returned (in order on its stream)
/// when dropped.
pub struct DeviceBuffer<T: DeviceRepr> {
    /// The arena region (released, stream-ordered, on drop).
    pub(crate) _region: Region,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: DeviceRepr> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}] @ {:#x}",
            std::any::type_name::<T>(),
            self.len,
            self.ptr
        )
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Elements it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its size in bytes (`len` times the element's size).
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address, for copies (crate-internal).
    pub(crate) fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The buffer as a `const T*` kernel argument.
    pub(crate) fn arg(&self) -> DevPtr<T> {
        DevPtr::from_raw(self.ptr)
    }

    /// The buffer as a `T*` kernel argument the kernel writes through.
    pub(crate) fn arg_mut(&mut self) -> DevPtrMut<T> {
        DevPtrMut::from_raw(self.ptr)
    }

    /// `&self[offset..]` as a `const T*` kernel argument (`offset` ≤ len).
    pub(crate) fn arg_at(&self, offset: usize) -> DevPtr<T> {
        debug_assert!(offset <= self.len, "offset {offset} of {}", self.len);
        DevPtr::from_raw(self.ptr + (offset * std::mem::size_of::<T>()) as u64)
    }

    /// `&mut self[offset..]` as a `T*` kernel argument (`offset` ≤ len).
    pub(crate) fn arg_mut_at(&mut self, offset: usize) -> DevPtrMut<T> {
        debug_assert!(offset <= self.len, "offset {offset} of {}", self.len);
        DevPtrMut::from_raw(self.ptr + (offset * std::mem::size_of::<T>()) as u64)
    }

    /// The values from `offset` on, as a buffer of their own, without a
    /// copy: `self` is consumed (its first `offset` values are no longer
    /// reachable) and its whole region is released when the returned buffer
    /// drops. The view starts `offset · size_of::<T>()` bytes in, so it keeps
    /// `T`'s alignment (not the arena's 256 bytes).
    pub fn into_suffix(self, offset: usize) -> Result<DeviceBuffer<T>> {
        if offset > self.len {
            return Err(Error::BadArguments {
                kernel: "into_suffix",
                message: format!("offset {offset} past a buffer of {}", self.len),
            });
        }
        Ok(DeviceBuffer {
            ptr: self.ptr + (offset * std::mem::size_of::<T>()) as u64,
            len: self.len - offset,
            _region: self._region,
            _t: PhantomData,
        })
    }

    /// The same device memory as whole values of `U`, as many as its bytes
    /// hold, without a copy: one region serves values of several types in
    /// turn (a ring of key chunks holds G1 points, then G2 points). What the
    /// memory held is not converted; `U` is plain data, as every
    /// [`DeviceRepr`] is. Refused when the address is not aligned for `U`.
    pub fn recast<U: DeviceRepr>(self) -> Result<DeviceBuffer<U>> {
        let align = std::mem::align_of::<U>() as u64;
        if self.ptr % align != 0 {
            return Err(Error::BadArguments {
                kernel: "recast",
                message: format!(
                    "address {:#x} is not aligned for {} ({align} bytes)",
                    self.ptr,
                    std::any::type_name::<U>()
                ),
            });
        }
        Ok(DeviceBuffer {
            ptr: self.ptr,
            len: self.size_bytes() / std::mem::size_of::<U>().max(1),
            _region: self._region,
            _t: PhantomData,
        })
    }
}

/// `len` values of `T` in page-locked host memory the device writes in
/// place (mapped): a kernel's small result (an MSM's window sums, a batch
/// sum, the classifier's counts), read once the writing stream is
/// synchronized, with no copy. A download is a copy-engine operation, and
/// one issued while another stream's uploads are in flight waits behind
/// them: with a streamed key's chunks crossing during the sums, every
/// chunk's downloads would stall the sums.
pub(crate) struct MappedBuffer<T: DeviceRepr> {
    /// Taken from the device's pool; given back on drop.
    bytes: Option<ffi::MappedBytes>,
    pool: Arc<MappedPool>,
    /// The stream whose kernels write it.
    stream: Stream,
    len: usize,
    _t: PhantomData<T>,
}

/// A device's mapped result buffers, by size, each with the event after
/// which its last writer's kernels are done: made once, reused (allocating
/// and freeing page-locked memory per partition would be host-side calls
/// the driver may serialize with the device's work).
type MappedPool = Mutex<HashMap<usize, Vec<(ffi::MappedBytes, Option<Event>)>>>;

impl<T: DeviceRepr + Default> MappedBuffer<T> {
    /// `len` values, mapped for `stream`'s device, written by `stream`'s
    /// kernels.
    pub(crate) fn new(stream: &Stream, len: usize) -> Result<Self> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        let pool = {
            let mut ext = stream.gpu.inner.extensions.lock().expect("extensions lock");
            let any = ext
                .entry("mapped result buffers")
                .or_insert_with(|| Arc::new(MappedPool::default()))
                .clone();
            any.downcast::<MappedPool>().expect("the pool's type")
        };
        let reused = pool
            .lock()
            .expect("mapped pool lock")
            .get_mut(&bytes)
            .and_then(Vec::pop);
        let mapped = match reused {
            Some((b, last)) => {
                if let Some(e) = last {
                    e.synchronize()?;
                }
                b
            }
            None => ffi::MappedBytes::new(&stream.gpu.inner.ctx, bytes)
                .cuda("cuMemHostAlloc (mapped)", || format!("{bytes} bytes"))?,
        };
        Ok(MappedBuffer {
            bytes: Some(mapped),
            pool,
            stream: stream.clone(),
            len,
            _t: PhantomData,
        })
    }

    /// Waits for the stream whose kernels write the buffer, then reads it.
    pub(crate) fn read(&self) -> Result<Vec<T>> {
        self.stream.synchronize()?;
        let mut v = vec![T::default(); self.len];
        self.bytes
            .as_ref()
            .expect("held until drop")
            .read(ffi::as_bytes_mut(&mut v));
        Ok(v)
    }
}

impl<T: DeviceRepr> Drop for MappedBuffer<T> {
    fn drop(&mut self) {
        if let Some(b) = self.bytes.take() {
            // Its next owner waits for this stream's kernels queued so far.
            let last = self.stream.record().ok();
            let size = (self.len * std::mem::size_of::<T>()).max(1);
            if let Ok(mut pool) = self.pool.lock() {
                pool.entry(size).or_default().push((b, last));
            }
        }
    }
}

/// Where a kernel writes its output: device memory or mapped host memory.
pub(crate) trait KernelOut<T: DeviceRepr> {
    /// Values it holds.
    fn out_len(&self) -> usize;
    /// It as a `T*` kernel argument.
    fn out_arg(&mut self) -> DevPtrMut<T>;
}

impl<T: DeviceRepr> KernelOut<T> for DeviceBuffer<T> {
    fn out_len(&self) -> usize {
        self.len
    }
    fn out_arg(&mut self) -> DevPtrMut<T> {
        self.arg_mut()
    }
}

impl<T: DeviceRepr> KernelOut<T> for MappedBuffer<T> {
    fn out_len(&self) -> usize {
        self.len
    }
    fn out_arg(&mut self) -> DevPtrMut<T> {
        DevPtrMut::from_raw(self.bytes.as_ref().expect("held until drop").device_ptr())
    }
}

/// Page-locked host memory for full-rate asynchronous copies. Remembers
/// its last asynchronous copy, and waits for it before the host touches the
/// memory again.
pub struct PinnedBuffer<T: DeviceRepr> {
    pub(crate) bytes: ffi::PinnedBytes,
    pub(crate) len: usize,
    pub(crate) last_use: Mutex<Option<CudaEvent>>,
    pub(crate) _t: PhantomData<T>,
}

impl<T: DeviceRepr> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PinnedBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// Allocates `len` zeroed elements of pinned host memory on `gpu`'s
    /// context (a slow, host-side call: allocate staging once, at start).
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = len * std::mem::size_of::<T>();
        let pinned = ffi::PinnedBytes::new(&gpu.inner.ctx, bytes)
            .cuda("cuMemHostAlloc", || format!("{bytes} bytes"))?;
        Ok(PinnedBuffer {
            bytes: pinned,
            len,
            last_use: Mutex::new(None),
            _t: PhantomData,
        })
    }

    /// Elements it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn mark_used(&self, stream: &Stream) -> Result<()> {
        let e = stream
            .inner
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .cuda("cuEventRecord", || "pinned buffer use".into())?;
        *self.last_use.lock().expect("pinned lock poisoned") = Some(e);
        Ok(())
    }

    /// Waits for the last asynchronous copy that used this buffer.
    pub fn wait_unused(&self) -> Result<()> {
        if let Some(e) = self.last_use.lock().expect("pinned lock poisoned").take() {
            e.synchronize()
                .cuda("cuEventSynchronize", || "pinned buffer".into())?;
        }
        Ok(())
    }

    /// The memory as values, for filling it in place (after pending copies).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait_unused()?;
        let len = self.len;
        let bytes = self.bytes.as_mut_slice();
        Ok(&mut ffi::values_mut::<T>(bytes)[..len])
    }

    /// Fills the buffer from `values` (same length). Waits for pending copies
    /// involving this buffer first.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        check_len("PinnedBuffer::write", values.len(), self.len)?;
        self.as_mut_slice()?.copy_from_slice(values);
        Ok(())
    }

    /// Copies the buffer into `out` (same length), after pending copies finish.
    pub fn read(&self, out: &mut [T]) -> Result<()> {
        check_len("PinnedBuffer::read", out.len(), self.len)?;
        self.wait_unused()?;
        let dst = ffi::as_bytes_mut(out);
        let n = dst.len();
        dst.copy_from_slice(&self.bytes.as_slice()[..n]);
        Ok(())
    }
}

impl PinnedBuffer<u8> {
    /// Staging bytes viewed as values of `T` (as many whole values as fit),
    /// for filling in place; waits for the buffer's last copy first.
    pub fn values_mut<T: DeviceRepr>(&mut self) -> Result<&mut [T]> {
        self.wait_unused()?;
        Ok(ffi::values_mut::<T>(self.bytes.as_mut_slice()))
    }
}

impl<T: DeviceRepr> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let _ = self.wait_unused();
    }
}
