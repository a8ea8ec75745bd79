// MSM, batch summation and benchmark-base kernels for G1 (over Fq).
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g1, cuzk::fq_t)
