// MSM, batch summation and benchmark-base kernels for G1 (over Fq).
//
// Launch bounds: the accumulation is latency-bound (dependent carry chains),
// so residency beats registers up to a point. H200, 2^26 points, c = 20
// (2026-11-30): no bound (188 regs, 5 blocks of 64/SM) 1055 ms; at most 168
// regs (6 blocks) 770 ms; 128 regs (8 blocks, spills) 846 ms. Bitmap sum
// 2^26: 41 ms / 29 ms (168 regs) / 34 ms (128 regs).
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g1, cuzk::fq_t, __launch_bounds__(64, 6), __launch_bounds__(128, 3))

// Variants the benchmark times against the default (not used otherwise).
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_occ7, cuzk::fq_t, __launch_bounds__(64, 7), true)
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_occ6_np, cuzk::fq_t, __launch_bounds__(64, 6), false)
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_occ7_np, cuzk::fq_t, __launch_bounds__(64, 7), false)
