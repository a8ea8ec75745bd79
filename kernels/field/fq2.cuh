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

    /// Karatsuba: 3 Fq products.
    __device__ __forceinline__ friend fq2_t operator*(const fq2_t& a, const fq2_t& b) {
        fq_t t0 = a.c0 * b.c0;
        fq_t t1 = a.c1 * b.c1;
        fq_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
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
