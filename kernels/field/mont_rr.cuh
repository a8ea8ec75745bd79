// Montgomery product in a reduced radix (26-bit limbs in 64-bit
// accumulators), for the multiply-add unit's wide form.
//
// Why: a 32×32→64 multiply-add into a 64-bit accumulator (IMAD.WIDE) runs
// ~1.7× the rate of the carry-flag chain (GPU-NOTES.md), but with full
// 32-bit limbs every product needs its carries propagated at once. With
// 26-bit limbs a product is < 2^52, so a column can take every product of a
// row pass and the reduction's m·p terms (≤ 2W of them, < 2^57 in all)
// without overflow, and carries are propagated once per row, by a shift.
//
// Interface: the same values as mont_t's product: inputs and output are N
// little-endian 32-bit words in Montgomery form with R = 2^(32N), fully
// reduced. Inside: a and b are split into W = ⌈32N/26⌉ limbs; W operand-
// scanning rows each add a·b_i and one reduction step, 26 bits each but the
// last, which takes the remaining 32N − 26(W−1) bits (22 for Fr, 20 for Fq)
// so that the total division is by exactly R. The result (< 2p) is
// extracted from the 26-bit limbs at that bit offset and reduced once.
//
// Bounds: limbs < 2^26; each row adds to a column at most a_j·b_i + m·p_j <
// 2^53; a column lives through at most W rows (W ≤ 15): < 2^57 with the
// carries. Host-callable (plain integer C++) so it can be checked on a CPU.
#pragma once
#include <cstdint>

namespace cuzk {
namespace rr {

constexpr int LIMB_BITS = 26;
constexpr uint64_t LIMB_MASK = (1ull << LIMB_BITS) - 1;

template <class P>
struct shape {
    static constexpr int N = P::N;                                       // 32-bit words
    static constexpr int W = (32 * N + LIMB_BITS - 1) / LIMB_BITS;       // 26-bit limbs
    static constexpr int LAST = 32 * N - LIMB_BITS * (W - 1);            // bits of the last step
    static_assert(LAST > 0 && LAST <= LIMB_BITS, "last reduction step must fit a limb");
};

/// a·b + c with a 64-bit accumulator: one IMAD.WIDE.U32 on the GPU (written
/// in PTX: from plain C++ the compiler widens to 64-bit multiplies).
__host__ __device__ __forceinline__ uint64_t mad_wide(uint32_t a, uint32_t b, uint64_t c) {
#ifdef __CUDA_ARCH__
    uint64_t r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
    return r;
#else
    return (uint64_t)a * b + c;
#endif
}

/// Bits [26j, 26j + 26) of an N-word little-endian number.
template <int N>
__host__ __device__ __forceinline__ constexpr uint32_t limb_of(const uint32_t* w, int j) {
    int s = LIMB_BITS * j, k = s / 32, o = s % 32;
    uint64_t lo = k < N ? w[k] : 0;
    uint64_t hi = k + 1 < N ? w[k + 1] : 0;
    return (uint32_t)(((hi << 32 | lo) >> o) & LIMB_MASK);
}

/// Limb j of the modulus (a compile-time constant once unrolled).
template <class P>
__host__ __device__ __forceinline__ constexpr uint32_t modulus_limb(int j) {
    int s = LIMB_BITS * j, k = s / 32, o = s % 32;
    uint64_t lo = k < P::N ? P::modulus(k) : 0;
    uint64_t hi = k + 1 < P::N ? P::modulus(k + 1) : 0;
    return (uint32_t)(((hi << 32 | lo) >> o) & LIMB_MASK);
}

/// r = a·b·2^(−32N) mod p, fully reduced; a, b < p (N words each).
template <class P>
__host__ __device__ __forceinline__ void mont_mul(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    using S = shape<P>;
    constexpr int N = S::N, W = S::W, LAST = S::LAST;
    uint32_t al[W], bl[W];
#pragma unroll
    for (int j = 0; j < W; j++) {
        al[j] = limb_of<N>(a, j);
        bl[j] = limb_of<N>(b, j);
    }
    uint64_t t[W];
#pragma unroll
    for (int j = 0; j < W; j++) t[j] = 0;

#pragma unroll
    for (int i = 0; i < W; i++) {
        const bool last = i == W - 1;
        const uint32_t mask = last ? (uint32_t)((1ull << LAST) - 1) : (uint32_t)LIMB_MASK;
        t[0] = mad_wide(al[0], bl[i], t[0]);
        // m makes the low `step` bits of column 0 vanish: −p⁻¹ mod 2^32 is
        // also −p⁻¹ modulo any smaller power of two.
        uint32_t m = ((uint32_t)t[0] * P::INV) & mask;
        t[0] = mad_wide(m, modulus_limb<P>(0), t[0]);
#pragma unroll
        for (int j = 1; j < W; j++) t[j] = mad_wide(m, modulus_limb<P>(j), mad_wide(al[j], bl[i], t[j]));
        if (!last) {
            // Column 0 is now a multiple of 2^26: carry it and shift down a limb.
            uint64_t carry = t[0] >> LIMB_BITS;
#pragma unroll
            for (int j = 0; j < W - 1; j++) t[j] = t[j + 1];
            t[W - 1] = 0;
            t[0] += carry;
        }
    }
    // Normalize to 26-bit limbs (the top limb keeps whatever is left).
#pragma unroll
    for (int j = 0; j < W - 1; j++) {
        t[j + 1] += t[j] >> LIMB_BITS;
        t[j] &= LIMB_MASK;
    }
    // The value is (Σ t_j 2^(26j)) / 2^LAST: extract 32-bit words from bit LAST on.
    uint32_t v[N];
#pragma unroll
    for (int w = 0; w < N; w++) {
        const int s = LAST + 32 * w, k = s / LIMB_BITS, o = s % LIMB_BITS;
        uint64_t x = t[k] >> o;
        if (k + 1 < W) x |= t[k + 1] << (LIMB_BITS - o);
        if (k + 2 < W && 2 * LIMB_BITS - o < 32) x |= t[k + 2] << (2 * LIMB_BITS - o);
        v[w] = (uint32_t)x;
    }
    // v < 2p: subtract p once if v ≥ p.
    uint32_t d[N];
    int64_t borrow = 0;
#pragma unroll
    for (int w = 0; w < N; w++) {
        int64_t x = (int64_t)v[w] - (int64_t)P::modulus(w) + borrow;
        d[w] = (uint32_t)x;
        borrow = x >> 32;  // 0 or −1
    }
    const bool keep = borrow != 0;  // v < p
#pragma unroll
    for (int w = 0; w < N; w++) r[w] = keep ? v[w] : d[w];
}

}  // namespace rr
}  // namespace cuzk
