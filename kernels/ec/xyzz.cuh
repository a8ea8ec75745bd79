// Short-Weierstrass points (y² = x³ + b, a = 0) over a field F (fq_t for G1,
// fq2_t for G2), generic over F's operator API (kernels/field/mont.cuh).
//
// * affine_t<F>: (x, y), 2·sizeof(F) bytes, the host's G1AffineLimbs /
//   G2AffineLimbs bytes; the point at infinity is all-zero (blst's
//   convention; (0, 0) is not on either curve since b ≠ 0).
// * xyzz_t<F>: extended Jacobian (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ,
//   ZZ³ = ZZZ²; infinity is ZZ = 0 (then ZZZ = 0 too). Formulas: the
//   "xyzz" family of the Explicit-Formulas Database (add-2008-s,
//   madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the exceptional cases
//   (either input infinity, P = Q, P = −Q) handled so results are always right.
#pragma once
#include "../field/field.cuh"

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;

    __device__ __forceinline__ static affine_t infinity() { return {F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    __device__ __forceinline__ affine_t operator-() const {
        return is_inf() ? *this : affine_t{x, -y};
    }
    __device__ __forceinline__ affine_t cneg(bool neg) const { return neg ? -*this : *this; }
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t infinity() {
        return {F::zero(), F::zero(), F::zero(), F::zero()};
    }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }

    /// Lift an affine point (infinity maps to infinity).
    __device__ __forceinline__ static xyzz_t from_affine(const affine_t<F>& p) {
        if (p.is_inf()) return infinity();
        return {p.x, p.y, F::one(), F::one()};
    }

    __device__ __forceinline__ xyzz_t operator-() const { return {X, -Y, ZZ, ZZZ}; }
    __device__ __forceinline__ xyzz_t cneg(bool neg) const { return neg ? -*this : *this; }

    /// 2·P (dbl-2008-s-1, a = 0): 6 products + 4 squarings.
    __device__ __forceinline__ xyzz_t dbl() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F X2 = X.sqr();
        F M = X2.dbl() + X2;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * Y;
        return {X3, Y3, V * ZZ, W * ZZZ};
    }

    /// 2·Q for affine Q (mdbl-2008-s-1).
    __device__ __forceinline__ static xyzz_t dbl_affine(const affine_t<F>& q) {
        if (q.is_inf()) return infinity();
        F U = q.y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = q.x * V;
        F X2 = q.x.sqr();
        F M = X2.dbl() + X2;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * q.y;
        return {X3, Y3, V, W};
    }

    /// P + Q for affine Q (madd-2008-s).
    __device__ __forceinline__ xyzz_t add_affine(const affine_t<F>& q) const {
        if (q.is_inf()) return *this;
        if (is_inf()) return from_affine(q);
        F U2 = q.x * ZZ;
        F S2 = q.y * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl_affine(q);  // P = Q
            return infinity();                      // P = −Q
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - Y * PPP;
        return {X3, Y3, ZZ * PP, ZZZ * PPP};
    }

    /// P − Q for affine Q.
    __device__ __forceinline__ xyzz_t sub_affine(const affine_t<F>& q) const {
        return add_affine(-q);
    }

    /// P + Q, both XYZZ (add-2008-s).
    __device__ __forceinline__ xyzz_t add(const xyzz_t& q) const {
        if (q.is_inf()) return *this;
        if (is_inf()) return q;
        F U1 = X * q.ZZ;
        F U2 = q.X * ZZ;
        F S1 = Y * q.ZZZ;
        F S2 = q.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl();  // P = Q
            return infinity();              // P = −Q
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - S1 * PPP;
        return {X3, Y3, ZZ * q.ZZ * PP, ZZZ * q.ZZZ * PPP};
    }

    /// Affine form (one field inversion; infinity gives the all-zero point).
    __device__ __forceinline__ affine_t<F> to_affine() const {
        if (is_inf()) return affine_t<F>::infinity();
        F zzz_inv = ZZZ.inv();         // Z⁻³
        F z_inv = zzz_inv * ZZ;        // Z⁻¹
        F zz_inv = z_inv.sqr();        // Z⁻²
        return {X * zz_inv, Y * zzz_inv};
    }

    /// Jacobian (X', Y', Z') with x = X'/Z'², y = Y'/Z'³ (blst_p1 / blst_p2
    /// layout, blstrs' G1Projective::from_raw_unchecked), no inversion:
    /// Z' = ZZ·ZZZ, X' = X·ZZ⁴ = X·ZZ·ZZZ², Y' = Y·ZZZ⁴ (using ZZ³ = ZZZ²).
    /// Infinity gives Z' = 0.
    __device__ __forceinline__ void to_jacobian(F& Xj, F& Yj, F& Zj) const {
        F zzz2 = ZZZ.sqr();
        Zj = ZZ * ZZZ;
        Xj = X * ZZ * zzz2;      // X·ZZ·ZZZ²  = X·ZZ⁴
        Yj = Y * zzz2 * zzz2;    // Y·ZZZ⁴
    }
};

}  // namespace cuzk
