// MSM, batch summation and benchmark-base kernels for G1 (over Fq).
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g1, cuzk::fq_t)

// Occupancy variants of the accumulation (64-thread blocks): at most
// 65536 / (64·k) registers per thread for k resident blocks per SM.
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_occ6, cuzk::fq_t, __launch_bounds__(64, 6))
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_occ8, cuzk::fq_t, __launch_bounds__(64, 8))
// Same for the bitmap batch sum (128-thread blocks).
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_occ3, cuzk::fq_t, __launch_bounds__(128, 3))
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_occ4, cuzk::fq_t, __launch_bounds__(128, 4))
