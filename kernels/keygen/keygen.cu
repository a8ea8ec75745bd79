// Fixed-base batch scalar multiplication and batch conversion to affine, for
// proving-key generation (crates/cuzk-cuda/src/keygen.rs wraps these).
//
// Fixed base, signed windows. For a window of w bits the scalar (Fr,
// Montgomery form in memory, canonical after from_mont) is recoded into
// `windows` digits d_j in [-2^(w-1), 2^(w-1)], least significant first: the
// raw w-bit digit plus the carry, minus 2^w with a carry out when it exceeds
// 2^(w-1). The table holds d · 2^(w·j) · G for every window j and
// d = 1..2^(w-1) (row j, column d − 1), affine, built by the host, so one
// product is one mixed addition (or subtraction) per nonzero digit and no
// doubling. The host picks windows with w·windows ≥ 256, so the top digit
// never carries out (Fr < 2^255).
//
// To affine. Each thread converts a run of consecutive points with one
// inversion: Montgomery's trick on u = ZZ·ZZZ (= Z^5 for the point's Z), the
// prefix products parked in the output's x until each is overwritten; then
// 1/ZZ = ZZZ/u and 1/ZZZ = ZZ/u. Points at infinity (ZZ = 0) become the
// all-zero affine infinity and are left out of the product.
#include "../ec/curves.cuh"

namespace cuzk {
namespace keygen_unit {

/// Bits [bit, bit + w) of the canonical scalar s (w ≤ 24, bit < 256).
__device__ __forceinline__ uint32_t window_bits(const fr_t& s, uint32_t bit, uint32_t w) {
    const uint32_t limb = bit / 32, shift = bit % 32;
    uint32_t v = s.l[limb] >> shift;
    // shift > 0 whenever the window spills into the next limb (w ≤ 32).
    if (shift + w > 32 && limb + 1 < 8) v |= s.l[limb + 1] << (32 - shift);
    return v & ((1u << w) - 1);
}

template <class F>
__device__ __forceinline__ void fixed_base_mul(const affine_t<F>* __restrict__ table,
                                               uint32_t w, uint32_t windows,
                                               const fr_t* __restrict__ scalars, uint32_t n,
                                               xyzz_t<F>* __restrict__ out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t s = scalars[i].from_mont();
    const uint32_t half = 1u << (w - 1);
    xyzz_t<F> acc = xyzz_t<F>::infinity();
    uint32_t carry = 0;
#pragma unroll 1
    for (uint32_t j = 0; j < windows; j++) {
        const uint32_t raw = window_bits(s, j * w, w) + carry;
        const bool neg = raw > half;
        carry = neg;
        const uint32_t d = neg ? (1u << w) - raw : raw;
        if (d != 0) {
            const affine_t<F> q = table[(size_t)j * half + d - 1];
            acc = neg ? acc.sub_affine(q) : acc.add_affine(q);
        }
    }
    out[i] = acc;
}

template <class F>
__device__ __forceinline__ void batch_to_affine(const xyzz_t<F>* __restrict__ in, uint32_t n,
                                                uint32_t run, affine_t<F>* __restrict__ out) {
    const uint64_t start64 = (uint64_t)(blockIdx.x * blockDim.x + threadIdx.x) * run;
    if (start64 >= n) return;
    const uint32_t start = (uint32_t)start64;
    const uint32_t end = min(start + run, n);
    F prod = F::one();
    for (uint32_t i = start; i < end; i++) {
        const xyzz_t<F> p = in[i];
        out[i].x = prod;  // Π u before i
        if (!p.is_inf()) prod = prod * (p.ZZ * p.ZZZ);
    }
    F inv = prod.inv();  // never zero: a product of nonzero u (or one)
    for (uint32_t i = end; i-- > start;) {
        const xyzz_t<F> p = in[i];
        if (p.is_inf()) {
            out[i] = affine_t<F>::infinity();
            continue;
        }
        const F u = p.ZZ * p.ZZZ;
        const F u_inv = inv * out[i].x;
        inv = inv * u;
        out[i] = {p.X * (u_inv * p.ZZZ), p.Y * (u_inv * p.ZZ)};
    }
}

}  // namespace keygen_unit
}  // namespace cuzk

#define CUZK_KEYGEN_KERNELS(SUFFIX, F)                                                          \
    extern "C" __global__ void keygen_fixed_base_mul_##SUFFIX(                                  \
        const cuzk::affine_t<F>* table, uint32_t w, uint32_t windows,                           \
        const cuzk::fr_t* scalars, uint32_t n, cuzk::xyzz_t<F>* out) {                          \
        cuzk::keygen_unit::fixed_base_mul<F>(table, w, windows, scalars, n, out);               \
    }                                                                                           \
    extern "C" __global__ void keygen_to_affine_##SUFFIX(const cuzk::xyzz_t<F>* in, uint32_t n, \
                                                         uint32_t run, cuzk::affine_t<F>* out) { \
        cuzk::keygen_unit::batch_to_affine<F>(in, n, run, out);                                 \
    }

CUZK_KEYGEN_KERNELS(g1, cuzk::fq_t)
CUZK_KEYGEN_KERNELS(g2, cuzk::fq2_t)
