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
