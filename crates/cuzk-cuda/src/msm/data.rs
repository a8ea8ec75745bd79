//! Benchmark and test data made on the device: random scalars and chains of
//! distinct bases, so a large MSM needs no host-side generation or upload.

use cuzk_field::limbs::FrLimbs;

use super::curve::MsmCurve;
use super::MAX_LEN;
use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};

/// Points per thread of the benchmark-base chain, and points per launch.
const CHAIN_LEN: u32 = 64;
const CHAIN_SLICE: usize = 1 << 22;

/// Fills `out` with uniformly random field elements (Montgomery limbs)
/// from a counter-based hash of (`seed`, index).
pub fn random_scalars(stream: &Stream, out: &mut DeviceBuffer<FrLimbs>, seed: u64) -> Result<()> {
    let n = out.len();
    ensure(decl::msm_random_scalars.name(), n < MAX_LEN, || {
        format!("{n} scalars")
    })?;
    if n == 0 {
        return Ok(());
    }
    let args = (out.arg_mut(), n as u32, seed);
    #[allow(unsafe_code)]
    // SAFETY: writes out[0..n).
    unsafe {
        stream.launch(
            decl::msm_random_scalars,
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
    out: &mut DeviceBuffer<C::Affine>,
) -> Result<()> {
    let kernel = C::CHAIN_BASES.name();
    let n = out.len();
    ensure(kernel, n < MAX_LEN, || format!("{n} points"))?;
    let consts = stream.upload_new(&[p0, step])?;
    let slice = n.min(CHAIN_SLICE);
    let mut scratch: DeviceBuffer<u64> = stream.alloc(slice.max(1) * C::XYZZ_WORDS)?;
    let mut first = 0;
    while first < n {
        let len = (n - first).min(CHAIN_SLICE) as u32;
        let args = (
            consts.arg(),
            first as u32,
            len,
            CHAIN_LEN,
            scratch.arg_mut(),
            out.arg_mut_at(first),
        );
        let threads = len.div_ceil(CHAIN_LEN);
        #[allow(unsafe_code)]
        // SAFETY: reads consts[0..2), writes scratch[0..len) (len ≤ slice) and out[first..first + len).
        unsafe {
            stream.launch(C::CHAIN_BASES, grid(threads.div_ceil(64), 64), args, || {
                format!("points {first}..+{len}")
            })?;
        }
        first += len as usize;
    }
    // Keep `consts` and `scratch` alive until the kernels have run.
    stream.synchronize()
}
