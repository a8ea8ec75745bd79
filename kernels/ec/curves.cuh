// BLS12-381 G1 (over Fq) and G2 (over Fq2) point types.
#pragma once
#include "xyzz.cuh"

namespace cuzk {

using g1_affine_t = affine_t<fq_t>;  // 96 bytes, host G1AffineLimbs
using g1_xyzz_t = xyzz_t<fq_t>;      // 192 bytes
using g2_affine_t = affine_t<fq2_t>; // 192 bytes, host G2AffineLimbs
using g2_xyzz_t = xyzz_t<fq2_t>;     // 384 bytes

static_assert(sizeof(g1_affine_t) == 96, "g1_affine_t must match G1AffineLimbs");
static_assert(sizeof(g2_affine_t) == 192, "g2_affine_t must match G2AffineLimbs");

}  // namespace cuzk
