// Residency variants of the G1 accumulation and bitmap batch sum that no
// proof runs: the benchmark (msm_bench --variants) times them against the
// defaults in g1.cu, now that the field product is the carry-chain form
// (fewer instructions, different register pressure). Listed in
// MsmCurve::ACCUMULATE_VARIANTS / BITMAP_VARIANTS (crates/cuzk-cuda/src/msm/curve.rs);
// a benchmark unit (kernels/manifest-dev.toml), so a process without it
// still proves.
#include "pippenger.cuh"

CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_8x64, cuzk::fq_t, __launch_bounds__(64, 8), true)
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_4x128, cuzk::fq_t, __launch_bounds__(128, 4))
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_unbounded, cuzk::fq_t, )
