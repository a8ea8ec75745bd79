// Elementwise kernels that exercise kernels/field and kernels/ec so the host
// tests can compare every operation with blstrs on random inputs. Not used by
// the prover.
//
// Compile time: the curve formulas inline every field product, which makes
// ptxas take minutes on a kernel that instantiates all of them for G1 and G2.
// So the curve tests run the (unchanged) formulas over `nf<F>`, a wrapper
// whose operations forward to non-inlined instances of F's operations: the
// same arithmetic, compiled once each.
#include "../ec/curves.cuh"

using namespace cuzk;

namespace field_ec_tests {

// ---- the non-inlining field wrapper --------------------------------------
template <class F>
__device__ __noinline__ F ni_add(F a, F b) { return a + b; }
template <class F>
__device__ __noinline__ F ni_sub(F a, F b) { return a - b; }
template <class F>
__device__ __noinline__ F ni_mul(F a, F b) { return a * b; }
template <class F>
__device__ __noinline__ F ni_sqr(F a) { return a.sqr(); }
template <class F>
__device__ __noinline__ F ni_neg(F a) { return -a; }
template <class F>
__device__ __noinline__ F ni_dbl(F a) { return a.dbl(); }
template <class F>
__device__ __noinline__ F ni_inv(F a) { return a.inv(); }
template <class F>
__device__ __noinline__ F ni_inv_fermat(F a) { return a.inv_fermat(); }
template <>
__device__ __noinline__ fq2_t ni_inv_fermat(fq2_t a) {
    fq_t n = (a.c0.sqr() + a.c1.sqr()).inv_fermat();
    return {a.c0 * n, -(a.c1 * n)};
}

template <class F>
struct nf {
    F v;
    __device__ static nf zero() { return {F::zero()}; }
    __device__ static nf one() { return {F::one()}; }
    __device__ bool is_zero() const { return v.is_zero(); }
    __device__ friend bool operator==(const nf& a, const nf& b) { return a.v == b.v; }
    __device__ friend nf operator+(const nf& a, const nf& b) { return {ni_add(a.v, b.v)}; }
    __device__ friend nf operator-(const nf& a, const nf& b) { return {ni_sub(a.v, b.v)}; }
    __device__ friend nf operator*(const nf& a, const nf& b) { return {ni_mul(a.v, b.v)}; }
    __device__ nf operator-() const { return {ni_neg(v)}; }
    __device__ nf sqr() const { return {ni_sqr(v)}; }
    __device__ nf dbl() const { return {ni_dbl(v)}; }
    __device__ nf inv() const { return {ni_inv(v)}; }
};

// ---- field operations ----------------------------------------------------
// Operation codes, mirrored by `FieldOp` in crates/cuzk-cuda/src/testing.rs.
enum : uint32_t {
    OP_ADD = 0,
    OP_SUB = 1,
    OP_MUL = 2,
    OP_SQR = 3,
    OP_NEG = 4,
    OP_DBL = 5,
    OP_TO_MONT = 6,
    OP_FROM_MONT = 7,
    OP_INV = 8,
    OP_EQ = 9,        // one if a == b else zero
    OP_IS_ZERO = 10,  // one if a == 0 else zero
    OP_MUL_RR = 11,   // the reduced-radix product (fq2: Karatsuba over it)
    OP_MUL_CIOS = 12, // the C-level CIOS product (fq2: Karatsuba over it)
    OP_INV_FERMAT = 13,  // the inverse by Fermat (inv_fermat; fq2: its norm through it)
    OP_MUL_FP64 = 14,    // the product with its schoolbook half on the FP64 pipe (mul_fp64)
};

template <class F>
__device__ __noinline__ F ni_to_mont(F a) { return a.to_mont(); }
template <class F>
__device__ __noinline__ F ni_mul_rr(F a, F b) { return F::mul_rr(a, b); }
template <>
__device__ __noinline__ fq2_t ni_mul_rr(fq2_t a, fq2_t b) {
    fq_t t0 = fq_t::mul_rr(a.c0, b.c0), t1 = fq_t::mul_rr(a.c1, b.c1);
    fq_t t2 = fq_t::mul_rr(a.c0 + a.c1, b.c0 + b.c1);
    return {t0 - t1, t2 - t0 - t1};
}
template <class F>
__device__ __noinline__ F ni_mul_cios(F a, F b) { return F::mul_cios(a, b); }
template <>
__device__ __noinline__ fq2_t ni_mul_cios(fq2_t a, fq2_t b) {
    fq_t t0 = fq_t::mul_cios(a.c0, b.c0), t1 = fq_t::mul_cios(a.c1, b.c1);
    fq_t t2 = fq_t::mul_cios(a.c0 + a.c1, b.c0 + b.c1);
    return {t0 - t1, t2 - t0 - t1};
}
template <class F>
__device__ __noinline__ F ni_from_mont(F a) { return a.from_mont(); }

// ---- a Montgomery product with its schoolbook half on the FP64 pipe --------
// An experiment (kernels/msm/README.md "What next" 2; the exact split is
// modelled in notes/models/dfma_limbs.py), not used by the prover: the
// operands as L limbs of 48 bits held exactly in doubles; each limb product
// split exactly into ⌊ab/2^48⌋·2^48 + (ab mod 2^48) by h = fma_rz(a, b,
// 2^100), d = h − 2^100, lo = fma(a, b, −d); the column sums (≤ L terms,
// below 2^51) accumulate exactly in doubles, in product-scanning order; one
// conversion per column, the carries in 64-bit integers; then `redc` (the
// integer reduction rows of `mul_chain`). The explicit-rounding intrinsics
// keep the compiler from contracting or reordering any of it.
constexpr uint64_t M48 = (uint64_t(1) << 48) - 1;

/// Words w[0..N) of a little-endian integer as L limbs of 48 bits (words at
/// or past N read as zero), each exactly a double.
template <int N, int L>
__device__ __forceinline__ void limbs48(const uint32_t* w, double* d) {
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int bit = 48 * i, word = bit / 32, off = bit % 32;
        const uint32_t lo = word < N ? w[word] : 0u, hi = word + 1 < N ? w[word + 1] : 0u;
        uint64_t v = ((uint64_t)hi << 32 | lo) >> off;
        if (off == 0) v &= M48;
        d[i] = __ull2double_rn(v);
    }
}

/// a·b·R⁻¹ mod p for reduced a, b (any mont_t): the double-width product on
/// the FP64 pipe, then `redc`.
template <class F>
__device__ __forceinline__ F mul_fp64(const F& a, const F& b) {
    constexpr int N = F::N, L = (32 * N + 47) / 48;
    static_assert(3 * L >= 2 * N, "mul_fp64: the 48-bit digits cover the product");
    double x[L], y[L];
    limbs48<N, L>(a.l, x);
    limbs48<N, L>(b.l, y);
    const double C = 0x1p100;
    uint64_t t[2 * L];
    uint64_t hi_prev = 0;
#pragma unroll
    for (int k = 0; k < 2 * L - 1; k++) {
        double lo_acc = 0.0, hi_acc = 0.0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            const int j = k - i;  // constant bounds, so the loop unrolls and x, y stay in registers
            if (j < 0 || j >= L) continue;
            const double h = __fma_rz(x[i], y[j], C);
            const double d = __dsub_rn(h, C);
            const double lo = __fma_rn(x[i], y[j], -d);
            lo_acc = __dadd_rn(lo_acc, lo);
            hi_acc = __dadd_rn(hi_acc, d);
        }
        t[k] = __double2ull_rn(lo_acc) + hi_prev;  // both below 2^51
        hi_prev = __double2ull_rn(__dmul_rn(hi_acc, 0x1p-48));
    }
    t[2 * L - 1] = hi_prev;
    // 48-bit digits with the carries, packed three words to two digits.
    typename F::wide_t w;
    uint64_t carry = 0, dig[2 * L];
#pragma unroll
    for (int k = 0; k < 2 * L; k++) {
        const uint64_t v = t[k] + carry;
        dig[k] = v & M48;
        carry = v >> 48;
    }
#pragma unroll
    for (int m = 0; m < L; m++) {
        const uint64_t d0 = dig[2 * m], d1 = dig[2 * m + 1];
        const uint32_t words[3] = {(uint32_t)d0, (uint32_t)(d0 >> 32) | (uint32_t)(d1 << 16),
                                   (uint32_t)(d1 >> 16)};
#pragma unroll
        for (int q = 0; q < 3; q++)
            if (3 * m + q < 2 * N) w.l[3 * m + q] = words[q];
    }
    return F::redc(w);
}
template <class F>
__device__ __noinline__ F ni_mul_fp64(F a, F b) { return mul_fp64(a, b); }
template <>
__device__ __noinline__ fq2_t ni_mul_fp64(fq2_t a, fq2_t b) {
    fq_t t0 = mul_fp64(a.c0, b.c0), t1 = mul_fp64(a.c1, b.c1);
    fq_t t2 = mul_fp64(a.c0 + a.c1, b.c0 + b.c1);
    return {t0 - t1, t2 - t0 - t1};
}

template <class F>
__device__ __forceinline__ void field_op(uint32_t op, F* out, const F* a, const F* b, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = a[i], y = b[i], r;
    switch (op) {
        case OP_ADD: r = ni_add(x, y); break;
        case OP_SUB: r = ni_sub(x, y); break;
        case OP_MUL: r = ni_mul(x, y); break;
        case OP_SQR: r = ni_sqr(x); break;
        case OP_NEG: r = ni_neg(x); break;
        case OP_DBL: r = ni_dbl(x); break;
        case OP_TO_MONT: r = ni_to_mont(x); break;
        case OP_FROM_MONT: r = ni_from_mont(x); break;
        case OP_INV: r = ni_inv(x); break;
        case OP_EQ: r = x == y ? F::one() : F::zero(); break;
        case OP_IS_ZERO: r = x.is_zero() ? F::one() : F::zero(); break;
        case OP_MUL_RR: r = ni_mul_rr(x, y); break;
        case OP_MUL_CIOS: r = ni_mul_cios(x, y); break;
        case OP_INV_FERMAT: r = ni_inv_fermat(x); break;
        case OP_MUL_FP64: r = ni_mul_fp64(x, y); break;
        default: r = F::zero(); break;
    }
    out[i] = r;
}

// ---- curve operations ----------------------------------------------------
// Operation codes, mirrored by `CurveOp` in crates/cuzk-cuda/src/testing.rs,
// with the expected result in terms of the affine inputs a and b.
enum : uint32_t {
    EC_ADD_AFFINE = 0,       // a + b      (xyzz(a).add_affine(b))
    EC_ADD = 1,              // 2a + 2b    (dbl(a).add(dbl(b)): ZZ ≠ 1 on both sides)
    EC_DBL = 2,              // 4a         (dbl_affine(a).dbl())
    EC_NEG = 3,              // −(a + b)
    EC_ADD_AFFINE_Z = 4,     // 2a + b     (mixed add with ZZ ≠ 1)
    EC_ADD_SELF = 5,         // 4a         (P.add(P): the doubling case of add)
    EC_ADD_NEG = 6,          // ∞          (P.add(−P))
    EC_ADD_AFFINE_SELF = 7,  // 2a         (xyzz(a).add_affine(a))
    EC_SUB_AFFINE = 8,       // a − b
};

template <class F>
__device__ __forceinline__ void curve_op(uint32_t op, affine_t<F>* out_affine, F* out_jac,
                                         const affine_t<F>* a_in, const affine_t<F>* b_in,
                                         uint32_t n) {
    using W = nf<F>;
    using P = xyzz_t<W>;
    using A = affine_t<W>;
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    A a{{a_in[i].x}, {a_in[i].y}};
    A b{{b_in[i].x}, {b_in[i].y}};
    P pa = P::from_affine(a);
    P r;
    switch (op) {
        case EC_ADD_AFFINE: r = pa.add_affine(b); break;
        case EC_ADD: r = pa.dbl().add(P::from_affine(b).dbl()); break;
        case EC_DBL: r = P::dbl_affine(a).dbl(); break;
        case EC_NEG: r = -pa.add_affine(b); break;
        case EC_ADD_AFFINE_Z: r = pa.dbl().add_affine(b); break;
        case EC_ADD_SELF: {
            P d = pa.dbl();
            r = d.add(d);
            break;
        }
        case EC_ADD_NEG: {
            P d = pa.dbl();
            r = d.add(-d);
            break;
        }
        case EC_ADD_AFFINE_SELF: r = pa.add_affine(a); break;
        case EC_SUB_AFFINE: r = pa.sub_affine(b); break;
        default: r = P::infinity(); break;
    }
    A aff = r.to_affine();
    out_affine[i] = {aff.x.v, aff.y.v};
    W X, Y, Z;
    r.to_jacobian(X, Y, Z);
    out_jac[3 * i] = X.v;
    out_jac[3 * i + 1] = Y.v;
    out_jac[3 * i + 2] = Z.v;
}

}  // namespace field_ec_tests

using namespace field_ec_tests;

extern "C" __global__ void test_fr_op(uint32_t op, fr_t* out, const fr_t* a, const fr_t* b,
                                      uint32_t n) {
    field_op(op, out, a, b, n);
}
extern "C" __global__ void test_fq_op(uint32_t op, fq_t* out, const fq_t* a, const fq_t* b,
                                      uint32_t n) {
    field_op(op, out, a, b, n);
}
extern "C" __global__ void test_fq2_op(uint32_t op, fq2_t* out, const fq2_t* a, const fq2_t* b,
                                       uint32_t n) {
    field_op(op, out, a, b, n);
}
// out_affine[i]: the result in affine form; out_jac[3i..3i+3]: Jacobian X, Y, Z.
extern "C" __global__ void test_g1_op(uint32_t op, g1_affine_t* out_affine, fq_t* out_jac,
                                      const g1_affine_t* a, const g1_affine_t* b, uint32_t n) {
    curve_op(op, out_affine, out_jac, a, b, n);
}
extern "C" __global__ void test_g2_op(uint32_t op, g2_affine_t* out_affine, fq2_t* out_jac,
                                      const g2_affine_t* a, const g2_affine_t* b, uint32_t n) {
    curve_op(op, out_affine, out_jac, a, b, n);
}

// ---- throughput probes (benchmarks' floors) -------------------------------
// Each thread runs CHAINS independent chains of `iters` steps (x_c ← x_c · y,
// or x_c ← x_c⁻¹ + y for the inversion probes), so throughput, not latency,
// limits the rate. Rate = n · iters · CHAINS / time, in operations per second.
namespace field_ec_tests {
constexpr int CHAINS = 4;
/// The operation a probe chains: a product form, a square (x ← x²), an
/// inversion (the inversion probes count inversions, not products), or the
/// FP64 probes: DFMA (a step is DFMA_PER_STEP double fused multiply-adds,
/// nothing else) and CHAIN_DFMA (a step is one `mul_chain` product and
/// DFMA_PER_STEP independent DFMAs: whether the FP64 pipe runs beside the
/// integer multiply-adds, kernels/msm/README.md "What next" 2).
enum Product { CHAIN, CIOS, RR, INV, INV_FERMAT, SQR, DFMA, CHAIN_DFMA, FP64, MIXED };
constexpr int DFMA_ACC = 8, DFMA_ROUNDS = 16;
constexpr int DFMA_PER_STEP = DFMA_ACC * DFMA_ROUNDS;

/// DFMA_PER_STEP fused multiply-adds over DFMA_ACC independent accumulators
/// (each converges towards a / (1 − m) = 1: no overflow, no denormals).
__device__ __forceinline__ void dfma_step(double* d) {
#pragma unroll
    for (int r = 0; r < DFMA_ROUNDS; r++) {
#pragma unroll
        for (int j = 0; j < DFMA_ACC; j++) d[j] = fma(d[j], 0.9999999, 1e-7);
    }
}

template <class F, Product K>
__device__ __forceinline__ void mul_chains(F* data, uint32_t n, uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F y = data[i];
    F x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; c++) x[c] = data[(i + c + 1) % n];
    double d[DFMA_ACC];
#pragma unroll
    for (int j = 0; j < DFMA_ACC; j++) d[j] = 1e-9 * (double)(y.l[j % F::N] >> 8);
    for (uint32_t k = 0; k < iters; k++) {
#pragma unroll
        for (int c = 0; c < CHAINS; c++) {
            if constexpr (K == INV) x[c] = x[c].inv() + y;  // + y keeps the inputs changing
            else if constexpr (K == INV_FERMAT) x[c] = x[c].inv_fermat() + y;
            else if constexpr (K == RR) x[c] = F::mul_rr(x[c], y);
            else if constexpr (K == CIOS) x[c] = F::mul_cios(x[c], y);
            else if constexpr (K == SQR) x[c] = x[c].sqr();
            else if constexpr (K == DFMA) dfma_step(d);
            else if constexpr (K == CHAIN_DFMA) {
                x[c] = F::mul_chain(x[c], y);
                dfma_step(d);
            } else if constexpr (K == FP64) x[c] = mul_fp64(x[c], y);
            else if constexpr (K == MIXED) x[c] = c % 2 ? mul_fp64(x[c], y) : F::mul_chain(x[c], y);
            else x[c] = F::mul_chain(x[c], y);
        }
    }
    F acc = x[0];
#pragma unroll
    for (int c = 1; c < CHAINS; c++) acc = acc + x[c];
    if constexpr (K == DFMA || K == CHAIN_DFMA) {
        // Keep the FP64 work alive: its sum goes into the output.
        double sum = 0;
#pragma unroll
        for (int j = 0; j < DFMA_ACC; j++) sum += d[j];
        acc.l[0] ^= (uint32_t)__double2loint(sum);
    }
    data[i] = acc;
}
}  // namespace field_ec_tests

/// One probe kernel: `NAME(F* data, u32 n, u32 iters)` chaining operation K.
#define CUZK_PROBE_KERNEL(NAME, F, K)                                          \
    extern "C" __global__ void NAME(F* data, uint32_t n, uint32_t iters) {     \
        field_ec_tests::mul_chains<F, field_ec_tests::K>(data, n, iters);      \
    }
CUZK_PROBE_KERNEL(bench_fr_mul, fr_t, CHAIN)
CUZK_PROBE_KERNEL(bench_fq_mul, fq_t, CHAIN)
CUZK_PROBE_KERNEL(bench_fr_mul_cios, fr_t, CIOS)
CUZK_PROBE_KERNEL(bench_fq_mul_cios, fq_t, CIOS)
CUZK_PROBE_KERNEL(bench_fr_mul_rr, fr_t, RR)
CUZK_PROBE_KERNEL(bench_fq_mul_rr, fq_t, RR)
CUZK_PROBE_KERNEL(bench_fr_inv, fr_t, INV)
CUZK_PROBE_KERNEL(bench_fq_inv, fq_t, INV)
CUZK_PROBE_KERNEL(bench_fr_inv_fermat, fr_t, INV_FERMAT)
CUZK_PROBE_KERNEL(bench_fq_inv_fermat, fq_t, INV_FERMAT)
CUZK_PROBE_KERNEL(bench_fr_sqr, fr_t, SQR)
CUZK_PROBE_KERNEL(bench_fq_sqr, fq_t, SQR)
CUZK_PROBE_KERNEL(bench_fr_dfma, fr_t, DFMA)
CUZK_PROBE_KERNEL(bench_fq_dfma, fq_t, DFMA)
CUZK_PROBE_KERNEL(bench_fr_mul_dfma, fr_t, CHAIN_DFMA)
CUZK_PROBE_KERNEL(bench_fq_mul_dfma, fq_t, CHAIN_DFMA)
CUZK_PROBE_KERNEL(bench_fr_mul_fp64, fr_t, FP64)
CUZK_PROBE_KERNEL(bench_fq_mul_fp64, fq_t, FP64)
CUZK_PROBE_KERNEL(bench_fr_mul_mixed, fr_t, MIXED)
CUZK_PROBE_KERNEL(bench_fq_mul_mixed, fq_t, MIXED)
