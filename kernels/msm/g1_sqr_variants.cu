// The G1 accumulation with every Fq squaring done as a product a·a (the
// build-wide switch CUZK_FIELD_SQR_AS_MUL, this unit only): the baseline the
// benchmark (msm_bench --variants) times against the default, which squares
// with `mont_t::sqr_chain` (kernels/field/mont.cuh). Same launch bounds and
// prefetch as the default (g1.cu's msm_accumulate_g1_unbounded). Listed in
// G1's ACCUMULATE_VARIANTS (crates/cuzk-cuda/src/msm/curve.rs); a benchmark
// unit (kernels/manifest-dev.toml), so a process without it still proves.
#define CUZK_FIELD_SQR_AS_MUL
#include "pippenger.cuh"

CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_sqrmul, cuzk::fq_t, , true)
