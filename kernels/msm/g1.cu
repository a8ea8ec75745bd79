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

// Batch-affine accumulation (pippenger.cuh, accumulate_affine): K strands
// per thread share one inversion per step.
CUZK_MSM_AFFINE_KERNEL(msm_accumulate_affine_g1, cuzk::fq_t, 32, )
CUZK_MSM_AFFINE_KERNEL(msm_accumulate_affine_g1_k16, cuzk::fq_t, 16, )

// ---------------------------------------------------------------------------
// Batch-affine accumulation, second form (experiment, G1 only for now): the
// slope's numerator N and denominator D of each strand's next addition are
// computed when the previous one finishes, from a point loaded before that
// addition's products (so its latency hides behind them). The forward pass
// then only streams D; the backward pass never reloads a base. Run starts
// (acc = P), infinities and P + (−P) are settled while advancing, outside
// the batch: only real additions and doublings take a slot.
// ---------------------------------------------------------------------------
namespace cuzk {
namespace msm {

template <class F>
struct slab2 {
    static constexpr uint32_t FW = sizeof(F) / 4;
    static constexpr uint32_t ACC_X = 0, ACC_Y = FW, PREFIX = 2 * FW, D = 3 * FW, N = 4 * FW,
                              NEXT = 5 * FW, KEY = NEXT + 1, RUN_END = NEXT + 2,
                              FLAGS = NEXT + 3, WORDS = NEXT + 4;
    uint32_t* base;
    uint32_t stride;
    __device__ __forceinline__ uint32_t* at(uint32_t s, uint32_t w) const {
        return base + ((size_t)s * WORDS + w) * stride;
    }
    __device__ __forceinline__ uint32_t word(uint32_t s, uint32_t w) const { return *at(s, w); }
    __device__ __forceinline__ void set_word(uint32_t s, uint32_t w, uint32_t v) const {
        *at(s, w) = v;
    }
    __device__ __forceinline__ F field(uint32_t s, uint32_t w) const {
        F v;
        uint32_t* d = reinterpret_cast<uint32_t*>(&v);
        const uint32_t* p = at(s, w);
#pragma unroll
        for (uint32_t k = 0; k < FW; k++) d[k] = p[(size_t)k * stride];
        return v;
    }
    __device__ __forceinline__ void set_field(uint32_t s, uint32_t w, const F& v) const {
        const uint32_t* src = reinterpret_cast<const uint32_t*>(&v);
        uint32_t* p = at(s, w);
#pragma unroll
        for (uint32_t k = 0; k < FW; k++) p[(size_t)k * stride] = src[k];
    }
};

constexpr uint32_t S2_IDLE = 1;        // finished, or never started
constexpr uint32_t S2_DOUBLE = 2;      // the pending addition is acc + acc
constexpr uint32_t S2_RUNS_SHIFT = 2;  // runs flushed so far, saturating at 2

/// One strand's bookkeeping while it advances (registers).
template <class F>
struct strand2_t {
    affine_t<F> acc;
    bool empty;
    uint32_t next, end, key, run_end, runs, v;
};

/// Writes the strand's finished run (acc, or infinity) to its head slot, its
/// tail slot or bucket_sums, as accumulate_runs does.
template <class F>
__device__ __forceinline__ void flush2(strand2_t<F>& s, const uint32_t* __restrict__ offsets,
                                       xyzz_t<F>* __restrict__ bucket_sums,
                                       uint32_t* __restrict__ part_keys,
                                       xyzz_t<F>* __restrict__ part_pts) {
    using X = xyzz_t<F>;
    const X sum = s.empty ? X::infinity() : X{s.acc.x, s.acc.y, F::one(), F::one()};
    const bool last = s.next == s.end;
    if (s.runs == 0) {
        part_keys[2 * s.v] = s.key;
        part_pts[2 * s.v] = sum;
        if (last) {  // the only run went to the head; keep the list sorted
            part_keys[2 * s.v + 1] = s.key;
            part_pts[2 * s.v + 1] = X::infinity();
        }
    } else if (last) {
        part_keys[2 * s.v + 1] = s.key;
        part_pts[2 * s.v + 1] = sum;
    } else {
        bucket_sums[s.key] = sum;
    }
    s.runs = min(s.runs + 1, 2u);
    s.empty = true;
    if (!last) {
        do {
            s.key++;
        } while (offsets[s.key + 1] <= s.next);
        s.run_end = min(offsets[s.key + 1], s.end);
    }
}

/// Consumes points until an addition needs a slope (returns true with D, N
/// and `dbl` set; the point is consumed, its run-end check pending) or the
/// strand ends (false). `pre` is the point at s.next when have_pre.
template <class F>
__device__ __forceinline__ bool advance2(strand2_t<F>& s, affine_t<F> pre, bool have_pre,
                                         const affine_t<F>* __restrict__ bases,
                                         const uint32_t* __restrict__ entries,
                                         const uint32_t* __restrict__ offsets,
                                         xyzz_t<F>* __restrict__ bucket_sums,
                                         uint32_t* __restrict__ part_keys,
                                         xyzz_t<F>* __restrict__ part_pts, F& D, F& N,
                                         bool& dbl) {
#pragma unroll 1
    while (s.next < s.end) {
        const affine_t<F> p = have_pre ? pre : load_signed(bases, entries[s.next]);
        have_pre = false;
        s.next++;
        if (p.is_inf()) {
        } else if (s.empty) {
            s.acc = p;
            s.empty = false;
        } else if (p.x != s.acc.x) {
            D = p.x - s.acc.x;
            N = p.y - s.acc.y;
            dbl = false;
            return true;
        } else if (p.y == s.acc.y) {
            D = s.acc.y.dbl();
            const F xx = s.acc.x.sqr();
            N = xx.dbl() + xx;
            dbl = true;
            return true;
        } else {
            s.empty = true;  // P + (−P)
        }
        if (s.next == s.run_end) {
            flush2(s, offsets, bucket_sums, part_keys, part_pts);
            if (s.next == s.end) return false;
        }
    }
    return false;
}

template <class F, uint32_t K>
__device__ __forceinline__ void accumulate_affine2(const affine_t<F>* __restrict__ bases,
                                                   const uint32_t* __restrict__ entries,
                                                   const uint32_t* __restrict__ offsets,
                                                   uint32_t nkeys, uint32_t nthreads,
                                                   uint32_t* __restrict__ slab_words,
                                                   xyzz_t<F>* __restrict__ bucket_sums,
                                                   uint32_t* __restrict__ part_keys,
                                                   xyzz_t<F>* __restrict__ part_pts) {
    using A = affine_t<F>;
    using S = slab2<F>;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    const uint32_t total = offsets[nkeys];
    const uint64_t strands = (uint64_t)nthreads * K;
    const uint32_t chunk = (uint32_t)(((uint64_t)total + strands - 1) / strands);
    const S slab{slab_words + t, nthreads};
    auto bounds = [&](uint32_t i, uint32_t& start, uint32_t& end) {
        const uint64_t s64 = ((uint64_t)t * K + i) * chunk;
        start = s64 < total ? (uint32_t)s64 : total;
        end = (uint32_t)min((uint64_t)start + chunk, (uint64_t)total);
    };
    auto save = [&](uint32_t i, const strand2_t<F>& s, bool pending, bool dbl, const F& D,
                    const F& N) {
        if (!pending) {
            slab.set_word(i, S::FLAGS, S2_IDLE);
            return;
        }
        slab.set_field(i, S::ACC_X, s.acc.x);
        slab.set_field(i, S::ACC_Y, s.acc.y);
        slab.set_field(i, S::D, D);
        slab.set_field(i, S::N, N);
        slab.set_word(i, S::NEXT, s.next);
        slab.set_word(i, S::KEY, s.key);
        slab.set_word(i, S::RUN_END, s.run_end);
        slab.set_word(i, S::FLAGS, (dbl ? S2_DOUBLE : 0) | (s.runs << S2_RUNS_SHIFT));
    };

    uint32_t live = 0;
#pragma unroll 1
    for (uint32_t i = 0; i < K; i++) {
        strand2_t<F> s;
        s.v = t * K + i;
        uint32_t start;
        bounds(i, start, s.end);
        if (start >= s.end) {
            part_keys[2 * s.v] = KEY_NONE;
            part_keys[2 * s.v + 1] = KEY_NONE;
            slab.set_word(i, S::FLAGS, S2_IDLE);
            continue;
        }
        uint32_t lo = 0, hi = nkeys;  // the last key with offsets[key] ≤ start
        while (hi - lo > 1) {
            const uint32_t mid = (lo + hi) >> 1;
            if (offsets[mid] <= start) lo = mid;
            else hi = mid;
        }
        s.key = lo;
        s.run_end = min(offsets[lo + 1], s.end);
        s.next = start;
        s.runs = 0;
        s.empty = true;
        F D, N;
        bool dbl = false;
        const bool pending = advance2(s, A{}, false, bases, entries, offsets, bucket_sums,
                                      part_keys, part_pts, D, N, dbl);
        save(i, s, pending, dbl, D, N);
        live += pending;
    }

#pragma unroll 1
    while (live > 0) {
        // Forward: prefix products of the pending denominators.
        F running = F::one();
        uint32_t flags_next = slab.word(0, S::FLAGS);
        F d_next = slab.field(0, S::D);
#pragma unroll 1
        for (uint32_t i = 0; i < K; i++) {
            const uint32_t flags = flags_next;
            const F d = d_next;
            if (i + 1 < K) {
                flags_next = slab.word(i + 1, S::FLAGS);
                d_next = slab.field(i + 1, S::D);
            }
            if (flags & S2_IDLE) continue;
            slab.set_field(i, S::PREFIX, running);
            running = running * d;
        }
        F inv = running.inv();

        // Backward: each pending addition, then advance to the next one.
#pragma unroll 1
        for (uint32_t i = K; i-- > 0;) {
            const uint32_t flags = slab.word(i, S::FLAGS);
            if (flags & S2_IDLE) continue;
            strand2_t<F> s;
            s.v = t * K + i;
            uint32_t start;
            bounds(i, start, s.end);
            s.next = slab.word(i, S::NEXT);
            // The next point, loaded now so the products below hide its latency.
            const bool have_pre = s.next < s.end;
            A pre{};
            if (have_pre) pre = load_signed(bases, entries[s.next]);
            const F x1 = slab.field(i, S::ACC_X);
            const F y1 = slab.field(i, S::ACC_Y);
            const F D = slab.field(i, S::D);
            const F inv_d = inv * slab.field(i, S::PREFIX);
            inv = inv * D;
            const F lambda = slab.field(i, S::N) * inv_d;
            // x1 + x2: 2·x1 + D for an addition (D = x2 − x1), 2·x1 for a doubling.
            const F x12 = (flags & S2_DOUBLE) ? x1.dbl() : x1.dbl() + D;
            s.acc.x = lambda.sqr() - x12;
            s.acc.y = lambda * (x1 - s.acc.x) - y1;
            s.empty = false;
            s.key = slab.word(i, S::KEY);
            s.run_end = slab.word(i, S::RUN_END);
            s.runs = flags >> S2_RUNS_SHIFT;
            bool pending = true;
            if (s.next == s.run_end) {
                flush2(s, offsets, bucket_sums, part_keys, part_pts);
                pending = s.next != s.end;
            }
            F Dn, Nn;
            bool dbl = false;
            if (pending)
                pending = advance2(s, pre, have_pre, bases, entries, offsets, bucket_sums,
                                   part_keys, part_pts, Dn, Nn, dbl);
            save(i, s, pending, dbl, Dn, Nn);
            live -= !pending;
        }
    }
}

}  // namespace msm
}  // namespace cuzk

#define CUZK_MSM_AFFINE2_KERNEL(NAME, F, K, BOUNDS)                                             \
    extern "C" __global__ void BOUNDS NAME(                                                      \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* offsets,       \
        uint32_t nkeys, uint32_t nthreads, uint32_t* slab, cuzk::xyzz_t<F>* bucket_sums,          \
        uint32_t* part_keys, cuzk::xyzz_t<F>* part_pts) {                                        \
        cuzk::msm::accumulate_affine2<F, K>(bases, entries, offsets, nkeys, nthreads, slab,      \
                                            bucket_sums, part_keys, part_pts);                   \
    }

CUZK_MSM_AFFINE2_KERNEL(msm_accumulate_affine2_g1, cuzk::fq_t, 32, )
CUZK_MSM_AFFINE2_KERNEL(msm_accumulate_affine2_g1_k64, cuzk::fq_t, 64, )
CUZK_MSM_AFFINE2_KERNEL(msm_accumulate_affine2_g1_6x64, cuzk::fq_t, 32, __launch_bounds__(64, 6))
