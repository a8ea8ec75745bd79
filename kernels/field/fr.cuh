// Fr: the BLS12-381 scalar field, r = 0x73eda753…00000001 (255 bits),
// 8 × 32-bit limbs, Montgomery form with R = 2^256 (blst_fr's bytes).
// Constants: derived from r by `python3` one-liners (R mod r, R² mod r,
// −r⁻¹ mod 2^32, r − 2); the host test `field_ops` pins them against blstrs.
#pragma once
#include "mont.cuh"

namespace cuzk {

struct fr_params {
    static constexpr int N = 8;
    static constexpr uint32_t INV = 0xffffffffu;  // −r⁻¹ mod 2^32
    __host__ __device__ static constexpr uint32_t modulus(int i) {
        constexpr uint32_t v[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                   0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t one(int i) {  // R mod r
        constexpr uint32_t v[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                   0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t r2(int i) {  // R² mod r
        constexpr uint32_t v[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
                                   0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t p_minus_2(int i) {
        constexpr uint32_t v[8] = {0xffffffff, 0xfffffffe, 0xfffe5bfe, 0x53bda402,
                                   0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return v[i];
    }
};

/// An Fr element (32 bytes, same bytes as the host's FrLimbs).
using fr_t = mont_t<fr_params>;
static_assert(sizeof(fr_t) == 32, "fr_t must match FrLimbs");

}  // namespace cuzk
