// Fq2 = Fq[u]/(u² + 1): c0 + c1·u, c0 first (blst_fp2's bytes, 96 bytes).
// Same operator API as mont_t so that curve code is generic in the field.
#pragma once
#include "fq.cuh"

namespace cuzk {

/// LAZY picks the product: Karatsuba with lazy reduction (true) or three
/// full Montgomery products (false); see operator*. Everything else is the
/// same; `fq2_base` is the default.
template <bool LAZY>
struct alignas(16) fq2_base {
    fq_t c0, c1;

    __device__ __forceinline__ static fq2_base zero() { return {fq_t::zero(), fq_t::zero()}; }
    __device__ __forceinline__ static fq2_base one() { return {fq_t::one(), fq_t::zero()}; }

    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool is_one() const { return c0.is_one() && c1.is_zero(); }
    __device__ __forceinline__ friend bool operator==(const fq2_base& a, const fq2_base& b) {
        return a.c0 == b.c0 && a.c1 == b.c1;
    }
    __device__ __forceinline__ friend bool operator!=(const fq2_base& a, const fq2_base& b) {
        return !(a == b);
    }

    __device__ __forceinline__ friend fq2_base operator+(const fq2_base& a, const fq2_base& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    __device__ __forceinline__ friend fq2_base operator-(const fq2_base& a, const fq2_base& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    __device__ __forceinline__ fq2_base operator-() const { return {-c0, -c1}; }
    __device__ __forceinline__ fq2_base dbl() const { return {c0.dbl(), c1.dbl()}; }
    __device__ __forceinline__ fq2_base cneg(bool neg) const { return neg ? -*this : *this; }
    __device__ __forceinline__ fq2_base& operator+=(const fq2_base& b) { return *this = *this + b; }
    __device__ __forceinline__ fq2_base& operator-=(const fq2_base& b) { return *this = *this - b; }
    __device__ __forceinline__ fq2_base& operator*=(const fq2_base& b) { return *this = *this * b; }

    /// Karatsuba. Lazy: three exact double-width products and two
    /// reductions (instead of three full products and five reduced
    /// additions); c0 = a0·b0 − a1·b1 ∈ (−p², p²) is made non-negative by
    /// `sub_wide_lazy`; c1 = a0·b1 + a1·b0 = t2 − t0 − t1 ∈ [0, 2p²); both are
    /// below p·R as `redc` needs (2p < R); the sums a0 + a1, b0 + b1 stay
    /// unreduced (< 2p). Eager: t0 = a0·b0, t1 = a1·b1, t2 = (a0 + a1)(b0 +
    /// b1) as reduced products, then t0 − t1 and t2 − t0 − t1.
    __device__ __forceinline__ friend fq2_base operator*(const fq2_base& a, const fq2_base& b) {
        if constexpr (LAZY) {
            using W = fq_t::wide_t;
            const W t0 = fq_t::mul_wide(a.c0, b.c0);
            const W t1 = fq_t::mul_wide(a.c1, b.c1);
            const W t2 = fq_t::mul_wide(fq_t::add_nr(a.c0, a.c1), fq_t::add_nr(b.c0, b.c1));
            return {fq_t::redc(fq_t::sub_wide_lazy<1>(t0, t1)),
                    fq_t::redc(fq_t::sub_wide(fq_t::sub_wide(t2, t0), t1))};
        } else {
            fq_t t0 = a.c0 * b.c0;
            fq_t t1 = a.c1 * b.c1;
            fq_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
            return {t0 - t1, t2 - t0 - t1};
        }
    }
    /// (c0 + c1·u)² = (c0 + c1)(c0 − c1) + 2·c0·c1·u: 2 Fq products.
    __device__ __forceinline__ fq2_base sqr() const {
        fq_t t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }
    /// Multiply by an Fq scalar.
    __device__ __forceinline__ fq2_base mul_fq(const fq_t& s) const { return {c0 * s, c1 * s}; }

    __device__ __forceinline__ fq2_base to_mont() const { return {c0.to_mont(), c1.to_mont()}; }
    __device__ __forceinline__ fq2_base from_mont() const { return {c0.from_mont(), c1.from_mont()}; }

    /// 1/(c0 + c1·u) = (c0 − c1·u)/(c0² + c1²); inv(0) = 0.
    __device__ __forceinline__ fq2_base inv() const {
        fq_t n = (c0.sqr() + c1.sqr()).inv();
        return {c0 * n, -(c1 * n)};
    }
};
using fq2_t = fq2_base<true>;
static_assert(sizeof(fq2_t) == 96, "fq2_t must match Fq2Limbs");

}  // namespace cuzk
