//! Benchmark and test data made on the device: random scalars and chains of
//! distinct bases, so a large MSM needs no host-side generation or upload.

use cuzk_field::limbs::FrLimbs;

use super::curve::{MsmCurve, K_CHAIN};
use super::MAX_LEN;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::ffi::KernelArgs;

/// Points per thread of the benchmark-base chain, and points per launch.
const CHAIN_LEN: u32 = 64;
const CHAIN_SLICE: usize = 1 << 22;

/// Fills `out` with uniformly random field elements (Montgomery limbs)
/// from a counter-based hash of (`seed`, index).
pub fn random_scalars(stream: &Stream, out: &DeviceBuffer<FrLimbs>, seed: u64) -> Result<()> {
    let n = out.len();
    ensure("msm_random_scalars", n < MAX_LEN, || format!("{n} scalars"))?;
    if n == 0 {
        return Ok(());
    }
    let args = KernelArgs::new()
        .device_ptr(out.device_ptr())
        .u32(n as u32)
        .u64(seed);
    #[allow(unsafe_code)]
    // SAFETY: msm_random_scalars(out, n, seed) writes out[0..n).
    unsafe {
        stream.launch(
            "msm_random_scalars",
            grid((n as u32).div_ceil(256), 256),
            args,
            || format!("{n} scalars"),
        )
    }
}

/// Fills `out` with P_i = p0 + i·step (affine): distinct points whose
/// discrete logs have nothing to do with random scalars. One field
/// inversion per 64 points (Montgomery's trick).
pub fn chain_bases<C: MsmCurve>(
    stream: &Stream,
    p0: C::Affine,
    step: C::Affine,
    out: &DeviceBuffer<C::Affine>,
) -> Result<()> {
    let kernel = C::KERNELS[K_CHAIN];
    let n = out.len();
    ensure(kernel, n < MAX_LEN, || format!("{n} points"))?;
    let consts = stream.upload_new(&[p0, step])?;
    let slice = n.min(CHAIN_SLICE);
    let scratch: DeviceBuffer<u64> = stream.alloc(slice.max(1) * C::XYZZ_WORDS)?;
    let point_bytes = std::mem::size_of::<C::Affine>() as u64;
    let mut first = 0;
    while first < n {
        let len = (n - first).min(CHAIN_SLICE) as u32;
        let args = KernelArgs::new()
            .device_ptr(consts.device_ptr())
            .u32(first as u32)
            .u32(len)
            .u32(CHAIN_LEN)
            .device_ptr(scratch.device_ptr())
            .device_ptr(out.device_ptr() + first as u64 * point_bytes);
        let threads = len.div_ceil(CHAIN_LEN);
        #[allow(unsafe_code)]
        // SAFETY: msm_chain_bases_*(consts, first, n, L, scratch, out): reads
        // consts[0..2), writes scratch[0..len) (len ≤ slice) and out[first..first + len).
        unsafe {
            stream.launch(kernel, grid(threads.div_ceil(64), 64), args, || {
                format!("points {first}..+{len}")
            })?;
        }
        first += len as usize;
    }
    // Keep `consts` and `scratch` alive until the kernels have run.
    stream.synchronize()
}
