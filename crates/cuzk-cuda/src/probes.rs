//! Throughput probes of the device arithmetic (kernels/tests/field_ec_tests.cu,
//! `bench_*`): chains of Montgomery products in each form the kernels have
//! tried (the default carry chains, CIOS, reduced radix, FP64), inversions,
//! squares and the FP64 pipe's rate, which `ntt_bench` times for its
//! floors. Research apparatus, not part of the prover: the `tuning` feature.

use cuzk_field::limbs::{FqLimbs, FrLimbs};

use crate::decl::{self, Probe};
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::Kernel;

/// Products per thread chain in the multiply-throughput probes
/// (`bench_fr_mul`, `bench_fq_mul`: 4 independent chains per thread).
pub const MUL_PROBE_CHAINS: u64 = 4;

/// Which Montgomery product a throughput probe runs (the discriminant is
/// the index into [`ProbeField::PROBE_KERNELS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
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

/// A field whose Montgomery product rate can be probed: its probe kernel
/// for each [`ProbeProduct`], in the order of its variants.
pub trait ProbeField: cuzk_field::limbs::DeviceRepr {
    /// One probe kernel per [`ProbeProduct`] variant, in declaration order.
    const PROBE_KERNELS: [Kernel<Probe<Self>>; 10];
}
impl ProbeField for FrLimbs {
    const PROBE_KERNELS: [Kernel<Probe<Self>>; 10] = [
        decl::bench_fr_mul,
        decl::bench_fr_mul_cios,
        decl::bench_fr_mul_rr,
        decl::bench_fr_inv,
        decl::bench_fr_inv_fermat,
        decl::bench_fr_sqr,
        decl::bench_fr_dfma,
        decl::bench_fr_mul_dfma,
        decl::bench_fr_mul_fp64,
        decl::bench_fr_mul_mixed,
    ];
}
impl ProbeField for FqLimbs {
    const PROBE_KERNELS: [Kernel<Probe<Self>>; 10] = [
        decl::bench_fq_mul,
        decl::bench_fq_mul_cios,
        decl::bench_fq_mul_rr,
        decl::bench_fq_inv,
        decl::bench_fq_inv_fermat,
        decl::bench_fq_sqr,
        decl::bench_fq_dfma,
        decl::bench_fq_mul_dfma,
        decl::bench_fq_mul_fp64,
        decl::bench_fq_mul_mixed,
    ];
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
    let kernel = F::PROBE_KERNELS[product as usize];
    ensure(kernel.name(), n > 0 && n <= u32::MAX as usize, || {
        format!("n = {n}")
    })?;
    let threads = 256;
    let args = (data.arg_mut(), n as u32, iters);
    #[allow(unsafe_code)]
    // SAFETY: threads ≥ n return and the rest index data modulo n.
    unsafe {
        stream.launch(
            kernel,
            grid((n as u32).div_ceil(threads), threads),
            args,
            || format!("n = {n}, iters = {iters}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `product as usize` indexes the kernel table: each product's kernel.
    #[test]
    fn each_product_has_its_kernel() {
        let suffixes = [
            (ProbeProduct::Default, "mul"),
            (ProbeProduct::Cios, "mul_cios"),
            (ProbeProduct::ReducedRadix, "mul_rr"),
            (ProbeProduct::Inverse, "inv"),
            (ProbeProduct::InverseFermat, "inv_fermat"),
            (ProbeProduct::Square, "sqr"),
            (ProbeProduct::Dfma, "dfma"),
            (ProbeProduct::DefaultWithDfma, "mul_dfma"),
            (ProbeProduct::Fp64, "mul_fp64"),
            (ProbeProduct::Mixed, "mul_mixed"),
        ];
        for (product, suffix) in suffixes {
            let i = product as usize;
            assert_eq!(
                FrLimbs::PROBE_KERNELS[i].name(),
                format!("bench_fr_{suffix}")
            );
            assert_eq!(
                FqLimbs::PROBE_KERNELS[i].name(),
                format!("bench_fq_{suffix}")
            );
        }
    }
}
