// MSM, batch summation and benchmark-base kernels for G2 (over Fq2).
//
// No launch bounds: the accumulation already uses 255 registers (and
// spills); forcing 5 blocks of 64 per SM made 2^24 slower (1336 ms against
// 866 ms, H200, 2026-11-30). The default accumulation is the variant without
// the next-point prefetch (msm/curve.rs, G2::DEFAULT_ACCUMULATE_VARIANT): H200
// 17:51Z, 2^24: 376 ms against 425 with the prefetch (spills 308/332 B
// against 760/500), 382 with it and the eager Fq2 product.
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g2, cuzk::fq2_t, , )

// Without the next-point prefetch: 48 fewer live registers in a kernel that
// spills; the accumulation a proof runs (G2::DEFAULT_ACCUMULATE_VARIANT). The
// eager-product variant is in g2_variants.cu, a benchmark unit.
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g2_noprefetch, cuzk::fq2_t, , false)
