// MSM, batch summation and benchmark-base kernels for G2 (over Fq2).
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g2, cuzk::fq2_t)
