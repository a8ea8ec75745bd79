// MSM, batch summation and benchmark-base kernels for G1 (over Fq).
//
// Launch bounds: the accumulation is latency-bound (dependent carry chains),
// so residency beats registers up to a point. H200, c = 20 (2026-11-30):
// 2^26: no bound (188 regs, 5 blocks of 64/SM) 1055 ms; ≤168 regs (6
// blocks) 770 ms; ≤128 regs (8 blocks, spills) 846 ms. 2^24: ≤168 regs 222
// ms; ≤146 regs (7 blocks) 243 ms; without the next-point prefetch 223 ms
// (6 blocks) / 241 ms (7). Bitmap sum 2^26: 41 ms / 29 ms (≤168 regs) /
// 34 ms (≤128 regs). Variants are made with CUZK_MSM_ACCUMULATE_KERNEL and
// listed in MsmCurve::ACCUMULATE_VARIANTS for the benchmark to time. Since
// the carry-chain product the unbounded variant is the default
// (G1::DEFAULT_ACCUMULATE_VARIANT): H200 17:51Z, 130.3 ms against 133.3 at
// 2^24 and 468.3 against 488.7 at 2^26.
#include "pippenger.cuh"

CUZK_MSM_CURVE_KERNELS(g1, cuzk::fq_t, __launch_bounds__(64, 6), __launch_bounds__(128, 3))

// Residency variants for the benchmark to time again now that the field
// product is the carry-chain form (fewer instructions, different pressure).
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_8x64, cuzk::fq_t, __launch_bounds__(64, 8), true)
CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_g1_unbounded, cuzk::fq_t, , true)
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_4x128, cuzk::fq_t, __launch_bounds__(128, 4))
CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_g1_unbounded, cuzk::fq_t, )


// ---------------------------------------------------------------------------
// Paired products (experiment): Nsight Compute (20:28Z) shows the G1
// accumulation issue-latency-bound (2 warps per scheduler at 178 registers,
// 0.32 eligible, 3.8 of 6.7 cycles per instruction waiting on fixed-latency
// dependencies: the carry chains). Two strands per thread doubled the code
// and thrashed the instruction cache (8.5x slower). Here the mixed
// addition's 10 products run as 5 pairs of independent products, each pair
// one unrolled body whose two carry chains alternate row by row.
// ---------------------------------------------------------------------------
namespace cuzk {
namespace msm {

/// mont_t's private chain pieces, repeated here for the experiment (the
/// same PTX as mad_parity / redc_row / chain_row in kernels/field/mont.cuh).
template <class Fp, int PAR>
__device__ __forceinline__ void x_mad_parity(uint32_t* acc, const uint32_t* a, uint32_t b,
                                             bool carry_in) {
    constexpr int N = Fp::N;
    acc[PAR] = carry_in ? ptx::madc_lo_cc(a[PAR], b, acc[PAR]) : ptx::mad_lo_cc(a[PAR], b, acc[PAR]);
    acc[PAR + 1] = ptx::madc_hi_cc(a[PAR], b, acc[PAR + 1]);
#pragma unroll
    for (int j = PAR + 2; j < N; j += 2) {
        acc[j] = ptx::madc_lo_cc(a[j], b, acc[j]);
        acc[j + 1] = ptx::madc_hi_cc(a[j], b, acc[j + 1]);
    }
    acc[N + PAR] = ptx::addc(acc[N + PAR], 0);
}
template <class P>
__device__ __forceinline__ void x_chain_row(uint32_t* E, uint32_t* O, const uint32_t* a,
                                            uint32_t bi) {
    using Fp = mont_t<P>;
    constexpr int N = Fp::N;
    static_assert(P::INV != 0xffffffffu, "Fq only");
    x_mad_parity<Fp, 0>(E, a, bi, false);
    x_mad_parity<Fp, 1>(O, a, bi, false);
    uint32_t p[N];
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = P::modulus(j);
    const uint32_t m = (E[0] + O[0]) * P::INV;
    x_mad_parity<Fp, 0>(E, p, m, false);
    ptx::set_carry_if_nonzero(O[0]);
    x_mad_parity<Fp, 1>(O, p, m, true);
#pragma unroll
    for (int k = 0; k < N + 1; k++) {
        E[k] = E[k + 1];
        O[k] = O[k + 1];
    }
    E[N + 1] = 0;
    O[N + 1] = 0;
}

/// v − p if v ≥ p, else v (v < 2p), as mont_t::reduce_once.
template <class P>
__device__ __forceinline__ mont_t<P> x_reduce_once(const mont_t<P>& v) {
    constexpr int N = mont_t<P>::N;
    mont_t<P> t, r;
    t.l[0] = ptx::sub_cc(v.l[0], P::modulus(0));
#pragma unroll
    for (int i = 1; i < N; i++) t.l[i] = ptx::subc_cc(v.l[i], P::modulus(i));
    const uint32_t borrow = ptx::subc(0, 0);
#pragma unroll
    for (int i = 0; i < N; i++) r.l[i] = borrow ? v.l[i] : t.l[i];
    return r;
}

/// ab = a·b and cd = c·d (Montgomery), the two products' rows interleaved.
template <class P>
__device__ __forceinline__ void mul2(const mont_t<P>& a, const mont_t<P>& b, const mont_t<P>& c,
                                     const mont_t<P>& d, mont_t<P>& ab, mont_t<P>& cd) {
    using Fp = mont_t<P>;
    constexpr int N = Fp::N;
    uint32_t x[N + 2], y[N + 2], u[N + 2], w[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) x[i] = y[i] = u[i] = w[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        x_chain_row<P>(x, y, a.l, b.l[i]);
        x_chain_row<P>(u, w, c.l, d.l[i]);
        x_chain_row<P>(y, x, a.l, b.l[i + 1]);
        x_chain_row<P>(w, u, c.l, d.l[i + 1]);
    }
    Fp r, q;
    r.l[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) r.l[i] = ptx::addc_cc(x[i], y[i]);
    r.l[N - 1] = ptx::addc(x[N - 1], y[N - 1]);
    q.l[0] = ptx::add_cc(u[0], w[0]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) q.l[i] = ptx::addc_cc(u[i], w[i]);
    q.l[N - 1] = ptx::addc(u[N - 1], w[N - 1]);
    ab = x_reduce_once<P>(r);
    cd = x_reduce_once<P>(q);
}

/// a + q (madd-2008-s, as xyzz_t::add_affine) with the products paired.
template <class F>
__device__ __forceinline__ xyzz_t<F> add_affine_paired(const xyzz_t<F>& a, const affine_t<F>& q) {
    if (q.is_inf()) return a;
    if (a.is_inf()) return xyzz_t<F>::from_affine(q);
    F U2, S2;
    mul2(q.x, a.ZZ, q.y, a.ZZZ, U2, S2);
    const F P = U2 - a.X;
    const F R = S2 - a.Y;
    if (P.is_zero()) {
        if (R.is_zero()) return xyzz_t<F>::dbl_affine(q);
        return xyzz_t<F>::infinity();
    }
    F PP, RR, PPP, Q, ZZ3, ZZZ3, t1, t2;
    mul2(P, P, R, R, PP, RR);
    mul2(P, PP, a.X, PP, PPP, Q);
    mul2(a.ZZ, PP, a.ZZZ, PPP, ZZ3, ZZZ3);
    const F X3 = RR - PPP - Q.dbl();
    mul2(R, Q - X3, a.Y, PPP, t1, t2);
    return {X3, t1 - t2, ZZ3, ZZZ3};
}

/// accumulate_runs (pippenger.cuh) with add_affine_paired (experiment copy).
template <class F, bool PREFETCH = true>
__device__ __forceinline__ void accumulate_runs_paired(const affine_t<F>* __restrict__ bases,
                                                const uint32_t* __restrict__ entries,
                                                const uint32_t* __restrict__ offsets,
                                                uint32_t nkeys, uint32_t nthreads,
                                                xyzz_t<F>* __restrict__ bucket_sums,
                                                uint32_t* __restrict__ part_keys,
                                                xyzz_t<F>* __restrict__ part_pts) {
    using X = xyzz_t<F>;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    const uint32_t total = offsets[nkeys];
    const uint32_t chunk = (uint32_t)(((uint64_t)total + nthreads - 1) / nthreads);
    const uint64_t s64 = (uint64_t)t * chunk;
    const uint32_t start = s64 < total ? (uint32_t)s64 : total;
    const uint32_t end = (uint32_t)min((uint64_t)start + chunk, (uint64_t)total);
    if (start >= end) {
        part_keys[2 * t] = KEY_NONE;
        part_keys[2 * t + 1] = KEY_NONE;
        return;
    }
    // The key whose run holds `start`: the last k with offsets[k] ≤ start.
    uint32_t lo = 0, hi = nkeys;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) >> 1;
        if (offsets[mid] <= start) lo = mid;
        else hi = mid;
    }
    uint32_t key = lo;
    uint32_t run_end = min(offsets[key + 1], end);
    uint32_t runs = 0;

    X acc = X::infinity();
    affine_t<F> next;
    if (PREFETCH) next = load_signed(bases, entries[start]);
    for (uint32_t pos = start; pos < end;) {
        affine_t<F> cur;
        if (PREFETCH) {
            cur = next;
            pos++;
            if (pos < end) next = load_signed(bases, entries[pos]);  // in flight during the add
        } else {
            cur = load_signed(bases, entries[pos]);  // other warps hide the latency
            pos++;
        }
        acc = add_affine_paired(acc, cur);
        if (pos == run_end) {
            if (runs == 0) {
                part_keys[2 * t] = key;
                part_pts[2 * t] = acc;
            } else if (pos == end) {
                part_keys[2 * t + 1] = key;
                part_pts[2 * t + 1] = acc;
            } else {
                bucket_sums[key] = acc;
            }
            runs++;
            if (pos == end) break;
            acc = X::infinity();
            do {
                key++;
            } while (offsets[key + 1] <= pos);
            run_end = min(offsets[key + 1], end);
        }
    }
    if (runs == 1) {  // the only run was written as the head; keep the list sorted
        part_keys[2 * t + 1] = key;
        part_pts[2 * t + 1] = X::infinity();
    }
}

}  // namespace msm
}  // namespace cuzk

extern "C" __global__ void msm_accumulate_paired_g1(
    const cuzk::affine_t<cuzk::fq_t>* bases, const uint32_t* entries, const uint32_t* offsets,
    uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<cuzk::fq_t>* bucket_sums, uint32_t* part_keys,
    cuzk::xyzz_t<cuzk::fq_t>* part_pts) {
    cuzk::msm::accumulate_runs_paired<cuzk::fq_t, true>(bases, entries, offsets, nkeys, nthreads,
                                                        bucket_sums, part_keys, part_pts);
}
extern "C" __global__ void msm_accumulate_paired_g1_noprefetch(
    const cuzk::affine_t<cuzk::fq_t>* bases, const uint32_t* entries, const uint32_t* offsets,
    uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<cuzk::fq_t>* bucket_sums, uint32_t* part_keys,
    cuzk::xyzz_t<cuzk::fq_t>* part_pts) {
    cuzk::msm::accumulate_runs_paired<cuzk::fq_t, false>(bases, entries, offsets, nkeys, nthreads,
                                                         bucket_sums, part_keys, part_pts);
}
