// MSM, batch summation and benchmark-base kernels for G2 (over Fq2).
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g2, cuzk::fq2_t, , )

// A residency variant the benchmark times against the default.
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g2_occ5, cuzk::fq2_t, __launch_bounds__(64, 5), true)
