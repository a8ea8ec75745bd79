//! Elementwise kernels (kernels/tests/field_ec_tests.cu) that apply one field
//! or curve operation per element, so tests can check the device arithmetic
//! against blstrs, and the device tests' stream. Not part of the prover: the
//! `testing` feature (the dev-dependencies of this crate's tests enable it).

use cuzk_field::limbs::{DeviceRepr, Fq2Limbs, FqLimbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};

use crate::decl::{self, TestCurveOp, TestFieldOp};
use crate::device::{grid, DeviceBuffer, Gpu, Stream};
use crate::error::{ensure, Result};
use crate::launch::Kernel;

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
    /// `a + b`.
    Add = 0,
    /// `a - b`.
    Sub = 1,
    /// `a * b` (Montgomery).
    Mul = 2,
    /// `a * a`.
    Sqr = 3,
    /// `-a`.
    Neg = 4,
    /// `a + a`.
    Dbl = 5,
    /// Canonical limbs → Montgomery form.
    ToMont = 6,
    /// Montgomery form → canonical limbs.
    FromMont = 7,
    /// `a^-1` (0 for 0).
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
    /// Every operation, in declaration order.
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
    /// Every operation, in declaration order.
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
    /// The elementwise test kernel for this field.
    const KERNEL: Kernel<TestFieldOp<Self>>;
}
impl TestField for FrLimbs {
    const KERNEL: Kernel<TestFieldOp<Self>> = decl::test_fr_op;
}
impl TestField for FqLimbs {
    const KERNEL: Kernel<TestFieldOp<Self>> = decl::test_fq_op;
}
impl TestField for Fq2Limbs {
    const KERNEL: Kernel<TestFieldOp<Self>> = decl::test_fq2_op;
}

/// An affine point type with a test kernel; `Base` is its coordinate field.
pub trait TestCurve: DeviceRepr + Default {
    /// The field of its coordinates.
    type Base: DeviceRepr + Default;
    /// The elementwise test kernel for this curve.
    const KERNEL: Kernel<TestCurveOp<Self, Self::Base>>;
}
impl TestCurve for G1AffineLimbs {
    type Base = FqLimbs;
    const KERNEL: Kernel<TestCurveOp<Self, Self::Base>> = decl::test_g1_op;
}
impl TestCurve for G2AffineLimbs {
    type Base = Fq2Limbs;
    const KERNEL: Kernel<TestCurveOp<Self, Self::Base>> = decl::test_g2_op;
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
        F::KERNEL.name(),
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
    let args = (op as u32, out.arg_mut(), a.arg(), b.arg(), n as u32);
    #[allow(unsafe_code)]
    // SAFETY: all buffers hold n elements, threads ≥ n return.
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
        P::KERNEL.name(),
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
    let args = (
        op as u32,
        out_affine.arg_mut(),
        out_jacobian.arg_mut(),
        a.arg(),
        b.arg(),
        n as u32,
    );
    #[allow(unsafe_code)]
    // SAFETY: out_jac holds 3n base elements, the rest n; threads ≥ n return.
    unsafe {
        stream.launch(
            P::KERNEL,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}, {op:?}"),
        )
    }
}
