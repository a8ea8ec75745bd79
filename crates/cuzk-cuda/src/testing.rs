//! Elementwise kernels (kernels/tests/field_ec_tests.cu) that apply one field
//! or curve operation per element, so tests can check the device arithmetic
//! against blstrs. Not part of the prover.

use cuzk_field::limbs::{DeviceRepr, Fq2Limbs, FqLimbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};

use crate::device::{grid, DeviceBuffer, Gpu, Stream};
use crate::error::{ensure, Result};
use crate::ffi::KernelArgs;

/// A stream on the first device for a device test, or `None` (after printing
/// "skipped: no CUDA device") where there is none. Panics when a driver is
/// present but the GPU cannot be used: that is a failure, not a skip.
pub fn test_stream() -> Option<Stream> {
    match Gpu::first().expect("a CUDA driver is present but the GPU cannot be used") {
        None => {
            eprintln!("skipped: no CUDA device");
            None
        }
        Some(gpu) => Some(gpu.new_stream().expect("stream")),
    }
}

const THREADS: u32 = 64;

/// A field operation: `out[i] = op(a[i], b[i])` (unary ops ignore b).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FieldOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Sqr = 3,
    Neg = 4,
    Dbl = 5,
    /// Canonical limbs → Montgomery form.
    ToMont = 6,
    /// Montgomery form → canonical limbs.
    FromMont = 7,
    Inv = 8,
    /// One if a == b, else zero.
    Eq = 9,
    /// One if a == 0, else zero.
    IsZero = 10,
    /// The reduced-radix product (`mont_t::mul_rr`; Fq2: Karatsuba over it).
    MulReducedRadix = 11,
    /// The C-level CIOS product (`mont_t::mul_cios`, the default before the
    /// carry-chain form; Fq2: Karatsuba over it).
    MulCios = 12,
    /// The inverse by Fermat's a^(p−2) (`mont_t::inv_fermat`), the second
    /// opinion on `Inv` (batched divsteps).
    InvFermat = 13,
    /// The product with its schoolbook half on the FP64 pipe (`mul_fp64` in
    /// kernels/tests/field_ec_tests.cu, an experiment; Fq2: Karatsuba over it).
    MulFp64 = 14,
}

impl FieldOp {
    pub const ALL: [FieldOp; 15] = [
        FieldOp::Add,
        FieldOp::Sub,
        FieldOp::Mul,
        FieldOp::Sqr,
        FieldOp::Neg,
        FieldOp::Dbl,
        FieldOp::ToMont,
        FieldOp::FromMont,
        FieldOp::Inv,
        FieldOp::Eq,
        FieldOp::IsZero,
        FieldOp::MulReducedRadix,
        FieldOp::MulCios,
        FieldOp::InvFermat,
        FieldOp::MulFp64,
    ];
}

/// A curve operation on affine inputs a, b; the expected result is in the
/// doc of each variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum CurveOp {
    /// a + b (XYZZ + affine).
    AddAffine = 0,
    /// 2a + 2b (XYZZ + XYZZ, both with ZZ ≠ 1).
    Add = 1,
    /// 4a (affine doubling, then XYZZ doubling).
    Dbl = 2,
    /// −(a + b).
    Neg = 3,
    /// 2a + b (XYZZ with ZZ ≠ 1, + affine).
    AddAffineZ = 4,
    /// 4a through `add` of a point to itself.
    AddSelf = 5,
    /// ∞ through `add` of a point and its negation.
    AddNeg = 6,
    /// 2a through `add_affine` of a point to itself.
    AddAffineSelf = 7,
    /// a − b.
    SubAffine = 8,
}

impl CurveOp {
    pub const ALL: [CurveOp; 9] = [
        CurveOp::AddAffine,
        CurveOp::Add,
        CurveOp::Dbl,
        CurveOp::Neg,
        CurveOp::AddAffineZ,
        CurveOp::AddSelf,
        CurveOp::AddNeg,
        CurveOp::AddAffineSelf,
        CurveOp::SubAffine,
    ];
}

/// A field type with a test kernel.
pub trait TestField: DeviceRepr + Default {
    const KERNEL: &'static str;
}
impl TestField for FrLimbs {
    const KERNEL: &'static str = "test_fr_op";
}
impl TestField for FqLimbs {
    const KERNEL: &'static str = "test_fq_op";
}
impl TestField for Fq2Limbs {
    const KERNEL: &'static str = "test_fq2_op";
}

/// An affine point type with a test kernel; `Base` is its coordinate field.
pub trait TestCurve: DeviceRepr + Default {
    type Base: DeviceRepr + Default;
    const KERNEL: &'static str;
}
impl TestCurve for G1AffineLimbs {
    type Base = FqLimbs;
    const KERNEL: &'static str = "test_g1_op";
}
impl TestCurve for G2AffineLimbs {
    type Base = Fq2Limbs;
    const KERNEL: &'static str = "test_g2_op";
}

/// `out[i] = op(a[i], b[i])` on the device.
pub fn field_op<F: TestField>(
    stream: &Stream,
    op: FieldOp,
    out: &mut DeviceBuffer<F>,
    a: &DeviceBuffer<F>,
    b: &DeviceBuffer<F>,
) -> Result<()> {
    let n = out.len();
    ensure(
        F::KERNEL,
        a.len() == n && b.len() == n && n <= u32::MAX as usize,
        || {
            format!(
                "lengths out = {n}, a = {}, b = {} must be equal",
                a.len(),
                b.len()
            )
        },
    )?;
    if n == 0 {
        return Ok(());
    }
    let args = KernelArgs::new()
        .u32(op as u32)
        .device_ptr(out.device_ptr())
        .device_ptr(a.device_ptr())
        .device_ptr(b.device_ptr())
        .u32(n as u32);
    #[allow(unsafe_code)]
    // SAFETY: matches `test_*_op(u32 op, F* out, const F* a, const F* b, u32 n)`
    // for the element type F; all buffers hold n elements, threads ≥ n return.
    unsafe {
        stream.launch(
            F::KERNEL,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}, {op:?}"),
        )
    }
}

/// `out_affine[i]` = `op(a[i], b[i])` in affine form, and `out_jacobian[3i..3i+3]`
/// the same point as blst Jacobian (X, Y, Z).
pub fn curve_op<P: TestCurve>(
    stream: &Stream,
    op: CurveOp,
    out_affine: &mut DeviceBuffer<P>,
    out_jacobian: &mut DeviceBuffer<P::Base>,
    a: &DeviceBuffer<P>,
    b: &DeviceBuffer<P>,
) -> Result<()> {
    let n = out_affine.len();
    ensure(
        P::KERNEL,
        a.len() == n && b.len() == n && out_jacobian.len() == 3 * n && n <= u32::MAX as usize,
        || {
            format!(
                "lengths out = {n}, jacobian = {} (want 3n), a = {}, b = {}",
                out_jacobian.len(),
                a.len(),
                b.len()
            )
        },
    )?;
    if n == 0 {
        return Ok(());
    }
    let args = KernelArgs::new()
        .u32(op as u32)
        .device_ptr(out_affine.device_ptr())
        .device_ptr(out_jacobian.device_ptr())
        .device_ptr(a.device_ptr())
        .device_ptr(b.device_ptr())
        .u32(n as u32);
    #[allow(unsafe_code)]
    // SAFETY: matches `test_g*_op(u32 op, affine* out, base* out_jac, const
    // affine* a, const affine* b, u32 n)`; out_jac holds 3n base elements,
    // the rest n; threads ≥ n return.
    unsafe {
        stream.launch(
            P::KERNEL,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}, {op:?}"),
        )
    }
}

/// Products per thread chain in the multiply-throughput probes
/// (`bench_fr_mul`, `bench_fq_mul`: 4 independent chains per thread).
pub const MUL_PROBE_CHAINS: u64 = 4;

/// Which Montgomery product a throughput probe runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeProduct {
    /// The default `*` (`mont_t::mul_chain`, PTX carry chains).
    Default,
    /// `mont_t::mul_cios` (multiply-adds in C; the default before).
    Cios,
    /// `mont_t::mul_rr` (26-bit limbs in 64-bit accumulators).
    ReducedRadix,
    /// Not a product: `mont_t::inv` (batched divsteps), one inversion per step.
    Inverse,
    /// Not a product: `mont_t::inv_fermat` (a^(p−2)).
    InverseFermat,
    /// The square `mont_t::sqr` (`sqr_chain`), x ← x².
    Square,
    /// Not a product: [`DFMA_PER_STEP`] double-precision fused multiply-adds
    /// per step and nothing else (the FP64 pipe's rate).
    Dfma,
    /// One default product and [`DFMA_PER_STEP`] independent DFMAs per step:
    /// whether the FP64 pipe runs beside the integer multiply-adds.
    DefaultWithDfma,
    /// The product with its schoolbook half on the FP64 pipe (`mul_fp64`).
    Fp64,
    /// Half the chains `mul_chain`, half `mul_fp64`: the two pipes together.
    Mixed,
}

/// Double fused multiply-adds per step of the `Dfma` and `DefaultWithDfma`
/// probes (kernels/tests/field_ec_tests.cu, `DFMA_PER_STEP`).
pub const DFMA_PER_STEP: u64 = 128;

/// A field whose Montgomery product rate can be probed, one kernel per
/// [`ProbeProduct`].
pub trait ProbeField: DeviceRepr {
    const PROBE_KERNEL: &'static str;
    const PROBE_KERNEL_CIOS: &'static str;
    const PROBE_KERNEL_RR: &'static str;
    const PROBE_KERNEL_INV: &'static str;
    const PROBE_KERNEL_INV_FERMAT: &'static str;
    const PROBE_KERNEL_SQR: &'static str;
    const PROBE_KERNEL_DFMA: &'static str;
    const PROBE_KERNEL_MUL_DFMA: &'static str;
    const PROBE_KERNEL_FP64: &'static str;
    const PROBE_KERNEL_MIXED: &'static str;
}
impl ProbeField for FrLimbs {
    const PROBE_KERNEL: &'static str = "bench_fr_mul";
    const PROBE_KERNEL_CIOS: &'static str = "bench_fr_mul_cios";
    const PROBE_KERNEL_RR: &'static str = "bench_fr_mul_rr";
    const PROBE_KERNEL_INV: &'static str = "bench_fr_inv";
    const PROBE_KERNEL_INV_FERMAT: &'static str = "bench_fr_inv_fermat";
    const PROBE_KERNEL_SQR: &'static str = "bench_fr_sqr";
    const PROBE_KERNEL_DFMA: &'static str = "bench_fr_dfma";
    const PROBE_KERNEL_MUL_DFMA: &'static str = "bench_fr_mul_dfma";
    const PROBE_KERNEL_FP64: &'static str = "bench_fr_mul_fp64";
    const PROBE_KERNEL_MIXED: &'static str = "bench_fr_mul_mixed";
}
impl ProbeField for FqLimbs {
    const PROBE_KERNEL: &'static str = "bench_fq_mul";
    const PROBE_KERNEL_CIOS: &'static str = "bench_fq_mul_cios";
    const PROBE_KERNEL_RR: &'static str = "bench_fq_mul_rr";
    const PROBE_KERNEL_INV: &'static str = "bench_fq_inv";
    const PROBE_KERNEL_INV_FERMAT: &'static str = "bench_fq_inv_fermat";
    const PROBE_KERNEL_SQR: &'static str = "bench_fq_sqr";
    const PROBE_KERNEL_DFMA: &'static str = "bench_fq_dfma";
    const PROBE_KERNEL_MUL_DFMA: &'static str = "bench_fq_mul_dfma";
    const PROBE_KERNEL_FP64: &'static str = "bench_fq_mul_fp64";
    const PROBE_KERNEL_MIXED: &'static str = "bench_fq_mul_mixed";
}

/// Queues `data.len() · iters · MUL_PROBE_CHAINS` field products (the result
/// overwrites `data`); time it with events to get the device's product rate.
pub fn mul_throughput_probe<F: ProbeField>(
    stream: &Stream,
    data: &mut DeviceBuffer<F>,
    iters: u32,
    product: ProbeProduct,
) -> Result<()> {
    let n = data.len();
    let kernel = match product {
        ProbeProduct::Default => F::PROBE_KERNEL,
        ProbeProduct::Cios => F::PROBE_KERNEL_CIOS,
        ProbeProduct::ReducedRadix => F::PROBE_KERNEL_RR,
        ProbeProduct::Inverse => F::PROBE_KERNEL_INV,
        ProbeProduct::InverseFermat => F::PROBE_KERNEL_INV_FERMAT,
        ProbeProduct::Square => F::PROBE_KERNEL_SQR,
        ProbeProduct::Dfma => F::PROBE_KERNEL_DFMA,
        ProbeProduct::DefaultWithDfma => F::PROBE_KERNEL_MUL_DFMA,
        ProbeProduct::Fp64 => F::PROBE_KERNEL_FP64,
        ProbeProduct::Mixed => F::PROBE_KERNEL_MIXED,
    };
    ensure(kernel, n > 0 && n <= u32::MAX as usize, || {
        format!("n = {n}")
    })?;
    let threads = 256;
    let args = KernelArgs::new()
        .device_ptr(data.device_ptr())
        .u32(n as u32)
        .u32(iters);
    #[allow(unsafe_code)]
    // SAFETY: matches `bench_f*_mul(F* data, u32 n, u32 iters)`; threads ≥ n
    // return and the rest index data modulo n.
    unsafe {
        stream.launch(
            kernel,
            grid((n as u32).div_ceil(threads), threads),
            args,
            || format!("n = {n}, iters = {iters}"),
        )
    }
}
