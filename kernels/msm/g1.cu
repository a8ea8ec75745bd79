// MSM, batch summation and benchmark-base kernels for G1 (over Fq).
//
// Launch bounds: the accumulation is latency-bound (dependent carry chains),
// so residency beats registers up to a point. H200, c = 20 (2026-11-30):
// 2^26: no bound (188 regs, 5 blocks of 64/SM) 1055 ms; ≤168 regs (6
// blocks) 770 ms; ≤128 regs (8 blocks, spills) 846 ms. 2^24: ≤168 regs 222
// ms; ≤146 regs (7 blocks) 243 ms; without the next-point prefetch 223 ms
// (6 blocks) / 241 ms (7). Bitmap sum 2^26: 41 ms / 29 ms (≤168 regs) /
// 34 ms (≤128 regs). Variants are made with CUZK_MSM_ACCUMULATE_KERNEL and
// listed in MsmCurve::ACCUMULATE_VARIANTS for the benchmark to time. Since
// the carry-chain product the unbounded variant is the default
// (G1::DEFAULT_ACCUMULATE_VARIANT): H200 17:51Z, 130.3 ms against 133.3 at
// 2^24 and 468.3 against 488.7 at 2^26.
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g1, cuzk::fq_t, __launch_bounds__(64, 6), __launch_bounds__(128, 3))

// The accumulation a proof runs (G1::DEFAULT_ACCUMULATE_VARIANT). The other
// residency variants are in g1_variants.cu, a benchmark unit
// (kernels/manifest-dev.toml).
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_unbounded, cuzk::fq_t, , true)

// The kept-bucket accumulation, merge and reduction of a streamed key's H section
// (pippenger.cuh, CUZK_MSM_KEPT_KERNELS): the production accumulation's
// bounds and prefetch.
CUZK_MSM_KEPT_KERNELS(g1, cuzk::fq_t, , true)
