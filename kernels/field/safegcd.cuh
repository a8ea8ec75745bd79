// Modular inversion by batched divsteps (Bernstein–Yang "safegcd", variable
// time: the inputs here are public), for any odd modulus P with N 32-bit
// words. About ten times fewer instructions than Fermat's a^(p−2) for Fq.
//
// State: f = p, g = a, d = 0, e = 1 and δ = 1, with the invariants
// f ≡ d·a and g ≡ e·a (mod p). A divstep is
//   δ > 0 and g odd:  (δ, f, g) ← (1 − δ, g, (g − f)/2)
//   g odd:            (δ, f, g) ← (1 + δ, f, (g + f)/2)
//   g even:           (δ, f, g) ← (1 + δ, f, g/2)
// and g reaches 0 with f = ±1, so a⁻¹ = ±d. Thirty divsteps depend only on δ
// and the low 32 bits of f and g: they run on one word each and leave a
// matrix M = [u v; q r] (entries ≤ 2^30 in size) with
// 2^30·(f', g') = M·(f, g). The matrix is then applied to the full f, g
// (exact division by 2^30) and to d, e modulo p (a multiple of p is added so
// the division by 2^30 is exact, then d, e are brought back into (−p, p)).
//
// Numbers are signed, radix 2^30: L limbs, limbs 0 … L−2 in [0, 2^30), the
// top limb signed, so a 30-bit shift drops a limb and products fit 64 bits.
// Random 381-bit inputs take 26–28 batches of 30 divsteps (Python model,
// notes/models/safegcd.py, which also checks every bound used here).
#pragma once
#include <cstdint>

namespace cuzk {
namespace safegcd {

constexpr uint32_t M30 = (1u << 30) - 1;

/// Limbs of 30 bits for an N-word modulus plus sign and growth room.
template <int N>
__host__ __device__ constexpr int limbs() {
    return (32 * N + 2 + 29) / 30;
}

/// The N-word little-endian integer w as L radix-2^30 limbs (w < 2^(32N) ≤ 2^(30(L−1)) · 2^30).
template <int N, int L>
__device__ __forceinline__ void to_limbs30(const uint32_t* w, int32_t* out) {
#pragma unroll
    for (int k = 0; k < L; k++) {
        const int bit = 30 * k, i = bit / 32, s = bit % 32;
        uint32_t x = i < N ? w[i] >> s : 0u;
        if (s > 2 && i + 1 < N) x |= w[i + 1] << (32 - s);
        out[k] = (int32_t)(x & M30);
    }
}

/// Thirty divsteps on the low words of f and g: updates δ, returns M.
__device__ __forceinline__ void divsteps_30(int32_t& delta, uint32_t f, uint32_t g, int32_t& u,
                                            int32_t& v, int32_t& q, int32_t& r) {
    u = 1, v = 0, q = 0, r = 1;
#pragma unroll 6
    for (int i = 0; i < 30; i++) {
        const uint32_t odd = 0u - (g & 1);                     // all ones if g is odd
        const uint32_t swap = odd & (uint32_t)((-delta) >> 31);  // and δ > 0
        // (f, g, u, v, q, r, δ) ← (g, −f, q, r, −u, −v, −δ) where swap.
        uint32_t t = (f ^ g) & swap;
        f ^= t;
        g ^= t;
        g = (g ^ swap) - swap;
        int32_t tu = (u ^ q) & (int32_t)swap, tv = (v ^ r) & (int32_t)swap;
        u ^= tu, q ^= tu, v ^= tv, r ^= tv;
        q = (q ^ (int32_t)swap) - (int32_t)swap;
        r = (r ^ (int32_t)swap) - (int32_t)swap;
        delta = (delta ^ (int32_t)swap) - (int32_t)swap;
        // g odd: g += f, (q, r) += (u, v); then halve g, double (u, v).
        g += f & odd;
        q += u & (int32_t)odd;
        r += v & (int32_t)odd;
        g >>= 1;
        u += u;
        v += v;
        delta += 1;
    }
}

/// (f, g) ← M·(f, g) / 2^30 (exact).
template <int L>
__device__ __forceinline__ void update_fg(int32_t* f, int32_t* g, int32_t u, int32_t v, int32_t q,
                                          int32_t r) {
    int64_t cf = (int64_t)u * f[0] + (int64_t)v * g[0];
    int64_t cg = (int64_t)q * f[0] + (int64_t)r * g[0];
    cf >>= 30;
    cg >>= 30;
#pragma unroll
    for (int k = 1; k < L; k++) {
        cf += (int64_t)u * f[k] + (int64_t)v * g[k];
        cg += (int64_t)q * f[k] + (int64_t)r * g[k];
        f[k - 1] = (int32_t)((uint32_t)cf & M30);
        g[k - 1] = (int32_t)((uint32_t)cg & M30);
        cf >>= 30;
        cg >>= 30;
    }
    f[L - 1] = (int32_t)cf;
    g[L - 1] = (int32_t)cg;
}

/// x ← (u·d + v·e + m·p) / 2^30 with m chosen so the division is exact, then
/// x − p if x ≥ p: x ∈ (−p, p) again for d, e ∈ (−p, p).
template <class P, int L>
__device__ __forceinline__ void update_one(int32_t* x, const int32_t* d, const int32_t* e,
                                           int32_t u, int32_t v, const int32_t* p30) {
    int64_t c = (int64_t)u * d[0] + (int64_t)v * e[0];
    // −p⁻¹ mod 2^32 (P::INV) reduced mod 2^30 is −p⁻¹ mod 2^30.
    const int32_t m = (int32_t)(((uint32_t)c * P::INV) & M30);
    c += (int64_t)m * p30[0];
    c >>= 30;
    int32_t out[L];
#pragma unroll
    for (int k = 1; k < L; k++) {
        c += (int64_t)u * d[k] + (int64_t)v * e[k] + (int64_t)m * p30[k];
        out[k - 1] = (int32_t)((uint32_t)c & M30);
        c >>= 30;
    }
    out[L - 1] = (int32_t)c;
    // t = out − p; keep it when non-negative.
    int32_t t[L];
    int32_t borrow = 0;
#pragma unroll
    for (int k = 0; k < L - 1; k++) {
        const int32_t s = out[k] - p30[k] + borrow;
        t[k] = s & (int32_t)M30;
        borrow = s >> 30;
    }
    t[L - 1] = out[L - 1] - p30[L - 1] + borrow;
    const bool ge = t[L - 1] >= 0;
#pragma unroll
    for (int k = 0; k < L; k++) x[k] = ge ? t[k] : out[k];
}

/// The canonical integer a⁻¹ mod p for 0 < a < p, both N little-endian words.
template <class P, int N>
__device__ __forceinline__ void inverse(const uint32_t* a, uint32_t* out) {
    constexpr int L = limbs<N>();
    uint32_t p_words[N];
#pragma unroll
    for (int i = 0; i < N; i++) p_words[i] = P::modulus(i);
    int32_t p30[L], f[L], g[L], d[L], e[L];
    to_limbs30<N, L>(p_words, p30);
    to_limbs30<N, L>(a, g);
#pragma unroll
    for (int k = 0; k < L; k++) {
        f[k] = p30[k];
        d[k] = 0;
        e[k] = 0;
    }
    e[0] = 1;
    int32_t delta = 1;
    // At most ⌈(49·bits + 57)/17 / 30⌉ batches (Bernstein–Yang's bound);
    // random inputs stop after 26–28 for Fq.
    constexpr int MAX_BATCHES = ((49 * 32 * N + 57) / 17 + 29) / 30;
    for (int batch = 0; batch < MAX_BATCHES; batch++) {
        uint32_t any = 0;
#pragma unroll
        for (int k = 0; k < L; k++) any |= (uint32_t)g[k];
        if (any == 0) break;
        int32_t u, v, q, r;
        const uint32_t f_lo = (uint32_t)f[0] | ((uint32_t)f[1] << 30);
        const uint32_t g_lo = (uint32_t)g[0] | ((uint32_t)g[1] << 30);
        divsteps_30(delta, f_lo, g_lo, u, v, q, r);
        update_fg<L>(f, g, u, v, q, r);
        int32_t nd[L], ne[L];
        update_one<P, L>(nd, d, e, u, v, p30);
        update_one<P, L>(ne, d, e, q, r, p30);
#pragma unroll
        for (int k = 0; k < L; k++) {
            d[k] = nd[k];
            e[k] = ne[k];
        }
    }
    // f = ±1: a⁻¹ = ±d with d ∈ (−p, p); bring it into [0, p).
    const bool negate = f[L - 1] < 0;
    int32_t carry = 0;
    int32_t x[L];
#pragma unroll
    for (int k = 0; k < L; k++) {  // x = ±d
        const int32_t s = (negate ? -d[k] : d[k]) + carry;
        x[k] = k < L - 1 ? (s & (int32_t)M30) : s;
        carry = s >> 30;
    }
    const bool neg = x[L - 1] < 0;
    carry = 0;
#pragma unroll
    for (int k = 0; k < L; k++) {  // + p where negative
        const int32_t s = x[k] + (neg ? p30[k] : 0) + carry;
        x[k] = k < L - 1 ? (s & (int32_t)M30) : s;
        carry = s >> 30;
    }
    // Radix 2^30 → 32-bit words.
#pragma unroll
    for (int i = 0; i < N; i++) {
        const int bit = 32 * i, k = bit / 30, s = bit % 30;
        // s = 2i mod 30 ≤ 28, so limbs k and k + 1 cover the word's 32 bits.
        uint32_t w = (uint32_t)x[k] >> s;
        if (k + 1 < L) w |= (uint32_t)x[k + 1] << (30 - s);
        out[i] = w;
    }
}

}  // namespace safegcd
}  // namespace cuzk
