// Fq: the BLS12-381 base field, q = 0x1a0111ea…ffffaaab (381 bits),
// 12 × 32-bit limbs, Montgomery form with R = 2^384 (blst_fp's bytes).
// Constants derived from q as for Fr (see fr.cuh); pinned by host tests.
#pragma once
#include "mont.cuh"

namespace cuzk {

struct fq_params {
    static constexpr int N = 12;
    static constexpr uint32_t INV = 0xfffcfffdu;  // −q⁻¹ mod 2^32
    __host__ __device__ static constexpr uint32_t modulus(int i) {
        constexpr uint32_t v[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                    0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                    0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t one(int i) {  // R mod q
        constexpr uint32_t v[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                                    0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                                    0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t r2(int i) {  // R² mod q
        constexpr uint32_t v[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
                                    0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
                                    0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
        return v[i];
    }
    __host__ __device__ static constexpr uint32_t p_minus_2(int i) {
        constexpr uint32_t v[12] = {0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                    0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                    0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return v[i];
    }
};

/// An Fq element (48 bytes, same bytes as the host's FqLimbs).
using fq_t = mont_t<fq_params>;
static_assert(sizeof(fq_t) == 48, "fq_t must match FqLimbs");

}  // namespace cuzk
