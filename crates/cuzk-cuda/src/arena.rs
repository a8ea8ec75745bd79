//! The VRAM arena: the ONE place in cuzk that reserves or releases device
//! memory, or asks the device how much it has (docs/facts.md, "Device memory": those calls are
//! device-global and serialize every stream). `tests/device_global_calls.rs`
//! fails if such a call appears anywhere else in the source tree.
//!
//! When a [`Gpu`](crate::Gpu) is opened, its arena reserves one block (the
//! configured budget, or what the device has free less a margin, asked once).
//! Every [`DeviceBuffer`](crate::DeviceBuffer) afterwards is a region of it,
//! handed out by `cuzk_arena::OrderedAllocator`: a dropped buffer's region is
//! released behind an event recorded on its stream, and reused only once the
//! work queued before the drop has finished. [`Arena::sub`] carves a smaller
//! arena out of a larger one, so a large card can behave as a small one
//! without another device allocation.
//!
//! An allocation that finds no room waits for pending releases, oldest
//! first, whichever stream released them: a worker can so end up waiting for
//! another worker's GPU work. That host time is counted per thread
//! ([`fence_wait_on_this_thread`]) and per arena ([`Usage::fence_wait`]).

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use cuzk_arena::{Fence, OrderedAllocator, Usage};

use crate::error::{DriverContext, Error, Result};
use crate::ffi;

/// Every region starts on a 256-byte boundary (what the kernels' vector loads need).
pub const ALIGN: u64 = 256;

/// How much device memory a device's arena reserves at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VramBudget {
    /// What the device has free when it is opened, less a margin (1 GiB or
    /// 3 %, whichever is larger) for the driver and other processes.
    Auto,
    /// This many bytes of the device in all (a large card behaving as a
    /// small one): the arena reserves the budget less what the device
    /// already has in use (the CUDA context, other processes), so that
    /// nvidia-smi's figure stays within it.
    Bytes(u64),
}

/// Why a string is not a VRAM budget; each variant quotes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    #[error("`{0}`: expected `auto` or a size like 16GiB")]
    /// Neither `auto` nor a number with a unit.
    NotASize(String),
    #[error("`{input}`: unknown unit `{unit}` (use GiB, MiB, …)")]
    /// A number with a unit other than B, K/KiB/KB, M, G or T (binary: KB is 1,024 bytes).
    UnknownUnit {
        /// The budget as written.
        input: String,
        /// The unit that was not recognised.
        unit: String,
    },
    #[error("`{0}`: a budget must be more than 0 bytes")]
    /// A budget of zero bytes.
    Zero(String),
}

impl VramBudget {
    /// `auto`, or a size such as `16GiB`, `16G`, `512MiB`, `1073741824`.
    pub fn parse(s: &str) -> std::result::Result<Self, BudgetError> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(VramBudget::Auto);
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| BudgetError::NotASize(s.to_string()))?;
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" | "kb" => 1 << 10,
            "m" | "mib" | "mb" => 1 << 20,
            "g" | "gib" | "gb" => 1 << 30,
            "t" | "tib" | "tb" => 1 << 40,
            other => {
                return Err(BudgetError::UnknownUnit {
                    input: s.to_string(),
                    unit: other.to_string(),
                })
            }
        };
        let bytes = (value * scale as f64) as u64;
        if bytes == 0 {
            return Err(BudgetError::Zero(s.to_string()));
        }
        Ok(VramBudget::Bytes(bytes))
    }
}

impl fmt::Display for VramBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VramBudget::Auto => write!(f, "auto"),
            VramBudget::Bytes(b) => write!(f, "{}", cuzk_arena::human(*b)),
        }
    }
}

/// A completion fence for a released region: an event on the region's stream.
struct EventFence(CudaEvent);

impl Fence for EventFence {
    fn is_done(&self) -> bool {
        self.0.is_complete()
    }
    fn wait(&self) {
        // A failed wait means the context is broken; every later call reports
        // that, so the region is simply considered free.
        let _ = self.0.synchronize();
    }
}

/// Where an arena's bytes come from.
enum Backing {
    /// The device reservation itself, released when the arena goes.
    Reservation { ctx: Arc<CudaContext>, ptr: u64 },
    /// A region of a parent arena (kept alive by holding it).
    Carved(#[allow(dead_code)] Region),
}

pub(crate) struct ArenaInner {
    base: u64,
    capacity: u64,
    budget: VramBudget,
    ctx: Arc<CudaContext>,
    alloc: Mutex<OrderedAllocator<EventFence>>,
    backing: Backing,
}

thread_local! {
    /// Host time this thread's allocations spent blocked on pending releases.
    static FENCE_WAIT: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// Host time this thread's allocations (from any arena) have spent blocked
/// on pending releases since the thread started: read it before and after
/// a partition to see how long it waited for device memory that queued GPU
/// work (its own or another worker's) still held.
pub fn fence_wait_on_this_thread() -> Duration {
    FENCE_WAIT.with(Cell::get)
}

impl Drop for ArenaInner {
    fn drop(&mut self) {
        // Every region holds the arena, so none is live; wait for the pending
        // releases' work before handing the memory back.
        if let Ok(mut a) = self.alloc.lock() {
            a.drain();
        }
        if let Backing::Reservation { ctx, ptr } = &self.backing {
            // Tear-down: the one place device memory is freed.
            ctx.record_err(ctx.bind_to_thread());
            #[allow(unsafe_code)]
            // SAFETY: `ptr` came from malloc_sync in `reserve` and is freed once;
            // no region (and so no queued work) refers to it any more.
            let r = unsafe { cudarc::driver::result::free_sync(*ptr) };
            ctx.record_err(r);
        }
    }
}

/// A VRAM arena: one block of device memory, sub-allocated. Clones share it.
#[derive(Clone)]
pub struct Arena {
    inner: Arc<ArenaInner>,
}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Arena({})", self.usage())
    }
}

/// The arena a budget reserves on a device with `free` of `total` bytes
/// free: `auto`, what is free less a margin; a budget of bytes, the budget
/// less what the device already has in use (this process's CUDA context and
/// any other process's memory) and `later`, what the driver will still take
/// beside the arena (local memory at the first launch that needs it), so
/// that the device's whole use, as nvidia-smi shows it, stays within the
/// budget. Rounded down to [`ALIGN`]; the reason when nothing or not enough
/// is left.
fn arena_bytes(
    budget: VramBudget,
    free: u64,
    total: u64,
    later: u64,
) -> std::result::Result<u64, String> {
    let in_use = total.saturating_sub(free) + later;
    let bytes = match budget {
        VramBudget::Auto => free.saturating_sub((1u64 << 30).max(total / 33)),
        VramBudget::Bytes(b) if b > total => {
            return Err(format!(
                "the device has only {} in all",
                cuzk_arena::human(total)
            ))
        }
        VramBudget::Bytes(b) if b <= in_use => {
            return Err(format!(
                "{} of it is in use on the device or will be (the CUDA context, its local \
                 memory, other processes)",
                cuzk_arena::human(in_use)
            ))
        }
        VramBudget::Bytes(b) => b - in_use,
    } & !(ALIGN - 1);
    if bytes == 0 {
        return Err("nothing is left for a VRAM arena".to_string());
    }
    Ok(bytes)
}

/// What the driver will still take on the device after the arena is
/// reserved: local memory, reserved at the first launch that needs it, and
/// the printf and malloc heaps. Local memory is counted as every thread the
/// device can hold at once with the stack limit's bytes, plus the most any
/// one kernel's own local bytes take at its occupancy (a thread's local
/// bytes × the threads its registers let a multiprocessor hold). On an H100
/// that is 264 MiB of stack and 55 MiB for a G2 kernel's 1.7 KB frame at 256
/// threads: the run of 2026-12-06 read nvidia-smi ~0.3 GiB above the arena
/// and the context once the kernels had run (counting every kernel's frame
/// for every thread, 0.7 GiB, left 0.5 GiB of a 24 GiB budget unused). The
/// stack's local memory is asked for now (setting the stack limit to its own
/// value): what that took is in use already and not counted again.
pub(crate) fn driver_later<'f>(
    ctx: &Arc<CudaContext>,
    functions: impl Iterator<Item = &'f cudarc::driver::CudaFunction>,
) -> Result<u64> {
    use cudarc::driver::sys::{CUdevice_attribute as A, CUfunction_attribute as F, CUlimit as L};
    let free = || {
        ctx.mem_get_info()
            .cuda("cuMemGetInfo", || "local memory".into())
    };
    let (before, _) = free()?;
    let stack = ctx
        .get_limit(L::CU_LIMIT_STACK_SIZE)
        .cuda("cuCtxGetLimit", || "stack size".into())? as u64;
    ctx.set_limit(L::CU_LIMIT_STACK_SIZE, stack as usize)
        .cuda("cuCtxSetLimit", || format!("stack size {stack}"))?;
    let (after, _) = free()?;
    let attr = |a| {
        ctx.attribute(a)
            .cuda("cuDeviceGetAttribute", || format!("{a:?}"))
            .map(|v| v.max(0) as u64)
    };
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let threads = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
    let registers = attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?;
    let mut local = 0;
    for f in functions {
        let get = |a| {
            f.get_attribute(a)
                .cuda("cuFuncGetAttribute", || format!("{a:?}"))
                .map(|v| v.max(0) as u64)
        };
        let resident = threads.min(registers / get(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?.max(1));
        local = local.max(get(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)? * resident);
    }
    let mut heaps = 0;
    for limit in [L::CU_LIMIT_PRINTF_FIFO_SIZE, L::CU_LIMIT_MALLOC_HEAP_SIZE] {
        heaps += ctx
            .get_limit(limit)
            .cuda("cuCtxGetLimit", || format!("{limit:?}"))? as u64;
    }
    let need = sms * (stack * threads + local) + heaps;
    let taken = (before as u64).saturating_sub(after as u64);
    Ok(need.saturating_sub(taken))
}

/// Device memory the driver's page tables take to map `pinned` bytes of
/// page-locked host memory into the device's address space, where copies
/// read it: 8 bytes a 4 KiB page, 1/512 of what is pinned. Measured on an
/// H100 (2026-12-06, a 16 GiB budget): nvidia-smi rose 228 MiB while the
/// process pinned 114 GiB (the key, its matrices, a parked pool), 2.0 MiB a
/// GiB, in steps as each buffer was pinned and before any kernel ran.
pub fn host_mappings(pinned: u64) -> u64 {
    pinned.div_ceil(512)
}

impl Arena {
    /// Start-up: asks the device what it has free (once) and reserves the
    /// budget in one allocation ([`arena_bytes`]), `later` bytes left for
    /// what the driver will still take ([`driver_later`]) and `mappings`
    /// for the page tables of host memory the process will pin
    /// ([`host_mappings`]).
    pub(crate) fn reserve(
        ctx: &Arc<CudaContext>,
        budget: VramBudget,
        (later, mappings): (u64, u64),
        what: &str,
    ) -> Result<Arena> {
        ctx.bind_to_thread()
            .cuda("cuCtxSetCurrent", || what.to_string())?;
        let (free, total) = ctx
            .mem_get_info()
            .cuda("cuMemGetInfo", || what.to_string())?;
        let (free, total) = (free as u64, total as u64);
        let bytes = arena_bytes(budget, free, total, later + mappings).map_err(|why| {
            Error::OutOfMemory(format!(
                "VRAM budget {budget} asked for on {what}, but {why} (the device has {} free of {})",
                cuzk_arena::human(free),
                cuzk_arena::human(total)
            ))
        })?;
        if let VramBudget::Bytes(b) = budget {
            tracing::info!(
                "VRAM budget {} on {what}: {} of the device already in use (this process's CUDA \
                 context, any other process), {} left for the local memory the driver takes \
                 at the first launches and {} for the page tables of the host memory the \
                 process will pin, so the arena reserves {} and the device's use as \
                 nvidia-smi counts it stays within the budget",
                cuzk_arena::human(b),
                cuzk_arena::human(total - free),
                cuzk_arena::human(later),
                cuzk_arena::human(mappings),
                cuzk_arena::human(bytes)
            );
        }
        #[allow(unsafe_code)]
        // SAFETY: a plain device allocation; freed exactly once in ArenaInner::drop.
        let ptr = unsafe { cudarc::driver::result::malloc_sync(bytes as usize) }.cuda(
            "cuMemAlloc",
            || {
                format!(
                    "reserving the {} VRAM arena on {what}",
                    cuzk_arena::human(bytes)
                )
            },
        )?;
        tracing::debug!(
            budget = %budget,
            bytes,
            free,
            "reserved the VRAM arena on {what}"
        );
        Ok(Arena {
            inner: Arc::new(ArenaInner {
                base: ptr,
                capacity: bytes,
                budget,
                ctx: ctx.clone(),
                alloc: Mutex::new(OrderedAllocator::new(bytes, ALIGN)),
                backing: Backing::Reservation {
                    ctx: ctx.clone(),
                    ptr,
                },
            }),
        })
    }

    /// A smaller arena carved out of this one: `bytes` of it, sub-allocated
    /// on its own (e.g. a 16 GiB budget on a 141 GB card). No device call.
    pub fn sub(&self, bytes: u64, stream: &Stream) -> Result<Arena> {
        let region = self.region(bytes, stream)?;
        Ok(Arena {
            inner: Arc::new(ArenaInner {
                base: region.ptr,
                capacity: region.bytes,
                budget: VramBudget::Bytes(bytes),
                ctx: self.inner.ctx.clone(),
                alloc: Mutex::new(OrderedAllocator::new(region.bytes, ALIGN)),
                backing: Backing::Carved(region),
            }),
        })
    }

    /// What is in use, the peak, the largest free block.
    pub fn usage(&self) -> Usage {
        self.inner
            .alloc
            .lock()
            .expect("arena lock poisoned")
            .usage()
    }

    /// The arena's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.inner.capacity
    }

    /// The budget it was made with.
    pub fn budget(&self) -> VramBudget {
        self.inner.budget
    }

    /// Forgets the peak (between benchmark runs).
    pub fn reset_peak(&self) {
        self.inner
            .alloc
            .lock()
            .expect("arena lock poisoned")
            .reset_peak();
    }

    /// A region of `bytes`, released (stream-ordered on `stream`) when dropped.
    pub(crate) fn region(&self, bytes: u64, stream: &Stream) -> Result<Region> {
        let got = {
            let mut a = self.inner.alloc.lock().expect("arena lock poisoned");
            let before = a.fence_wait();
            let got = a.alloc(bytes);
            let waited = a.fence_wait() - before;
            if !waited.is_zero() {
                FENCE_WAIT.with(|w| w.set(w.get() + waited));
            }
            got
        };
        let offset = got.map_err(|e| Error::OutOfMemory(e.to_string()))?;
        Ok(Region {
            arena: self.inner.clone(),
            offset,
            bytes,
            ptr: self.inner.base + offset,
            stream: stream.cu().clone(),
        })
    }
}

use crate::device::Stream;

/// A live region of an arena. Dropping it records an event on its stream and
/// releases the bytes behind that event.
pub(crate) struct Region {
    arena: Arc<ArenaInner>,
    offset: u64,
    bytes: u64,
    pub(crate) ptr: u64,
    stream: Arc<CudaStream>,
}

impl Drop for Region {
    fn drop(&mut self) {
        let fence = self
            .stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .ok()
            .map(EventFence);
        if fence.is_none() {
            // Could not record: wait for the stream instead, so reuse is safe.
            let _ = self.stream.synchronize();
        }
        if let Ok(mut a) = self.arena.alloc.lock() {
            a.release(self.offset, self.bytes, fence);
        }
    }
}

/// Zeroes `bytes` at `ptr` on `stream` (fresh regions start as zeros).
pub(crate) fn zero(stream: &Arc<CudaStream>, ptr: u64, bytes: u64) -> Result<()> {
    ffi::memset_zero(stream, ptr, bytes as usize).cuda("cuMemsetD8Async", || {
        format!("zeroing a fresh {bytes}-byte region")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A budget of bytes is the device's whole use: the arena is the budget
    /// less what is already in use; auto keeps its margin below what is
    /// free; budgets the device cannot give are refused with the numbers.
    #[test]
    fn a_budget_counts_what_the_device_already_uses() {
        let (total, free) = (80 * GIB, 80 * GIB - 800 * (1 << 20));
        let arena = arena_bytes(VramBudget::Bytes(24 * GIB), free, total, 0).unwrap();
        assert_eq!(arena, 24 * GIB - 800 * (1 << 20));
        assert_eq!(arena % ALIGN, 0);
        let odd = arena_bytes(VramBudget::Bytes(24 * GIB + 100), free, total, 0).unwrap();
        assert_eq!(odd, arena);
        let auto = arena_bytes(VramBudget::Auto, free, total, 0).unwrap();
        assert_eq!(auto, (free - total / 33) & !(ALIGN - 1));
        let over = arena_bytes(VramBudget::Bytes(81 * GIB), free, total, 0).unwrap_err();
        assert!(over.contains("80.00 GiB in all"), "{over}");
        let used = arena_bytes(VramBudget::Bytes(512 << 20), free, total, 0).unwrap_err();
        assert!(used.contains("800.0 MiB of it is in use"), "{used}");
        let none = arena_bytes(VramBudget::Auto, GIB / 2, total, 0).unwrap_err();
        assert!(none.contains("nothing is left"), "{none}");
        // What the driver takes later (the H100's 132 SMs × 2048 threads ×
        // 1 KiB of stack, and 9 MiB of heaps) comes off a budget of bytes.
        let later = 132 * 2048 * 1024 + (9 << 20);
        let less = arena_bytes(VramBudget::Bytes(24 * GIB), free, total, later).unwrap();
        assert_eq!(less, (arena - later) & !(ALIGN - 1));
        let auto_less = arena_bytes(VramBudget::Auto, free, total, later).unwrap();
        assert_eq!(auto_less, auto, "auto's margin covers it");
        let tight = arena_bytes(VramBudget::Bytes(1 << 30), free, total, later).unwrap_err();
        assert!(tight.contains("1.05 GiB of it is in use"), "{tight}");
        // A parked pool's 40 GiB, mapped 8 bytes a 4 KiB page, comes off as
        // well: 80 MiB.
        let pool = host_mappings(40 * GIB);
        assert_eq!(pool, 80 << 20);
        let mapped = arena_bytes(VramBudget::Bytes(24 * GIB), free, total, later + pool).unwrap();
        assert_eq!(mapped, (arena - later - pool) & !(ALIGN - 1));
        assert_eq!(host_mappings(0), 0);
    }
}
