// Fq2 = Fq[u]/(u² + 1): c0 + c1·u, c0 first (blst_fp2's bytes, 96 bytes).
// Same operator API as mont_t so that curve code is generic in the field.
#pragma once
#include "fq.cuh"

namespace cuzk {

struct alignas(16) fq2_t {
    fq_t c0, c1;

    __device__ __forceinline__ static fq2_t zero() { return {fq_t::zero(), fq_t::zero()}; }
    __device__ __forceinline__ static fq2_t one() { return {fq_t::one(), fq_t::zero()}; }

    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool is_one() const { return c0.is_one() && c1.is_zero(); }
    __device__ __forceinline__ friend bool operator==(const fq2_t& a, const fq2_t& b) {
        return a.c0 == b.c0 && a.c1 == b.c1;
    }
    __device__ __forceinline__ friend bool operator!=(const fq2_t& a, const fq2_t& b) {
        return !(a == b);
    }

    __device__ __forceinline__ friend fq2_t operator+(const fq2_t& a, const fq2_t& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    __device__ __forceinline__ friend fq2_t operator-(const fq2_t& a, const fq2_t& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    __device__ __forceinline__ fq2_t operator-() const { return {-c0, -c1}; }
    __device__ __forceinline__ fq2_t dbl() const { return {c0.dbl(), c1.dbl()}; }
    __device__ __forceinline__ fq2_t cneg(bool neg) const { return neg ? -*this : *this; }
    __device__ __forceinline__ fq2_t& operator+=(const fq2_t& b) { return *this = *this + b; }
    __device__ __forceinline__ fq2_t& operator-=(const fq2_t& b) { return *this = *this - b; }
    __device__ __forceinline__ fq2_t& operator*=(const fq2_t& b) { return *this = *this * b; }

    /// Karatsuba with lazy reduction: three exact double-width products and
    /// two reductions (instead of three full products and five reduced
    /// additions). c0 = a0·b0 − a1·b1 ∈ (−p², p²) is made non-negative by
    /// `sub_wide_lazy`; c1 = a0·b1 + a1·b0 = t2 − t0 − t1 ∈ [0, 2p²); both are
    /// below p·R as `redc` needs (2p < R). The sums a0 + a1, b0 + b1 stay
    /// unreduced (< 2p).
    __device__ __forceinline__ friend fq2_t operator*(const fq2_t& a, const fq2_t& b) {
        using W = fq_t::wide_t;
        const W t0 = fq_t::mul_wide(a.c0, b.c0);
        const W t1 = fq_t::mul_wide(a.c1, b.c1);
        const W t2 = fq_t::mul_wide(fq_t::add_nr(a.c0, a.c1), fq_t::add_nr(b.c0, b.c1));
        return {fq_t::redc(fq_t::sub_wide_lazy<1>(t0, t1)),
                fq_t::redc(fq_t::sub_wide(fq_t::sub_wide(t2, t0), t1))};
    }
    /// a·b − c·d with two reductions in all (Karatsuba for both products):
    /// c0 = (a0·b0 + c1·d1) − (a1·b1 + c0·d0) and c1 = (a0·b1 + a1·b0) −
    /// (c0·d1 + c1·d0), each side below 2p² < p·R.
    __device__ __forceinline__ static fq2_t mul_sub(const fq2_t& a, const fq2_t& b,
                                                    const fq2_t& c, const fq2_t& d) {
        using W = fq_t::wide_t;
        const W ab0 = fq_t::mul_wide(a.c0, b.c0), cd1 = fq_t::mul_wide(c.c1, d.c1);
        const W ab1 = fq_t::mul_wide(a.c1, b.c1), cd0 = fq_t::mul_wide(c.c0, d.c0);
        const fq_t r0 = fq_t::redc(
            fq_t::sub_wide_lazy<2>(fq_t::add_wide(ab0, cd1), fq_t::add_wide(ab1, cd0)));
        const W ab_sum = fq_t::add_wide(ab0, ab1), cd_sum = fq_t::add_wide(cd0, cd1);
        const W ab_cross = fq_t::sub_wide(
            fq_t::mul_wide(fq_t::add_nr(a.c0, a.c1), fq_t::add_nr(b.c0, b.c1)), ab_sum);
        const W cd_cross = fq_t::sub_wide(
            fq_t::mul_wide(fq_t::add_nr(c.c0, c.c1), fq_t::add_nr(d.c0, d.c1)), cd_sum);
        return {r0, fq_t::redc(fq_t::sub_wide_lazy<2>(ab_cross, cd_cross))};
    }
    /// (c0 + c1·u)² = (c0 + c1)(c0 − c1) + 2·c0·c1·u: 2 Fq products.
    __device__ __forceinline__ fq2_t sqr() const {
        fq_t t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }
    /// Multiply by an Fq scalar.
    __device__ __forceinline__ fq2_t mul_fq(const fq_t& s) const { return {c0 * s, c1 * s}; }

    __device__ __forceinline__ fq2_t to_mont() const { return {c0.to_mont(), c1.to_mont()}; }
    __device__ __forceinline__ fq2_t from_mont() const { return {c0.from_mont(), c1.from_mont()}; }

    /// 1/(c0 + c1·u) = (c0 − c1·u)/(c0² + c1²); inv(0) = 0.
    __device__ __forceinline__ fq2_t inv() const {
        fq_t n = (c0.sqr() + c1.sqr()).inv();
        return {c0 * n, -(c1 * n)};
    }
};
static_assert(sizeof(fq2_t) == 96, "fq2_t must match Fq2Limbs");

}  // namespace cuzk
