// The G2 accumulation without the next-point prefetch and with the eager Fq2
// product (three full Montgomery products): a variant no proof runs, timed
// by the benchmark (msm_bench --variants) against g2.cu's default. Listed in
// MsmCurve::ACCUMULATE_VARIANTS (crates/cuzk-cuda/src/msm/curve.rs); a
// benchmark unit (kernels/manifest-dev.toml), so a process without it still
// proves.
#include "pippenger.cuh"

CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g2_noprefetch_eager, cuzk::fq2_base<false>, , false)
