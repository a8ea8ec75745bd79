// Curve-generic MSM device code, instantiated for G1 and G2 by g1.cu / g2.cu.
//
// Pipeline (one MSM, all windows at once; see crates/cuzk-cuda/src/msm.rs):
//  1. scalars.cu buckets every (point, window) pair by key = w·M + |d| − 1
//     (counting sort: histogram, scan → offsets[key], scatter → entries).
//  2. accumulate_runs: the sorted entries are cut into equal chunks, one per
//     thread, whatever the bucket sizes (repeated scalars make huge buckets).
//     Runs of one key that lie wholly inside a chunk go straight to
//     bucket_sums[key]; each chunk's first and last run go to two "partial"
//     slots (key, sum). The partial list is again sorted by key.
//  3. merge_runs: the same cut-into-chunks step on the partial list, level by
//     level, until one thread holds it all and writes every run.
//  4. reduce_segments: Σ_b b·B_b per window by running sums over segments of
//     m buckets, one thread per segment: T = Σ_j (j+1)·B_j, A = Σ_j B_j over
//     the segment, plus (s·m)·A for the segment's offset.
//  5. sum_groups (a tree sum per window), then horner: Σ_w 2^(c·w)·R_w, and
//     the result as Jacobian coordinates for the host.
// Bucket sums of empty keys are never written; readers check offsets.
#pragma once
#include "../ec/curves.cuh"
#include "common.cuh"

namespace cuzk {
namespace msm {

/// Loads base `entry & INDEX_MASK`, negated when the entry's sign bit is set.
/// Infinity (all zero) stays infinity, and add_affine skips it.
template <class F>
__device__ __forceinline__ affine_t<F> load_signed(const affine_t<F>* __restrict__ bases,
                                                   uint32_t entry) {
    affine_t<F> p = bases[entry & INDEX_MASK];
    return p.cneg((entry & NEG_BIT) != 0);
}

// Out-of-line point operations for the kernels off the hot path (merging,
// bucket reduction, tree sums, Horner, benchmark bases): inlining the
// formulas into every kernel multiplies compile time for no measurable gain.
// The hot loops (accumulate_runs, the batch sums) call the inline forms.
template <class F>
__device__ __noinline__ xyzz_t<F> add_ool(const xyzz_t<F>& a, const xyzz_t<F>& b) {
    return a.add(b);
}
template <class F>
__device__ __noinline__ xyzz_t<F> dbl_ool(const xyzz_t<F>& a) {
    return a.dbl();
}
template <class F>
__device__ __noinline__ xyzz_t<F> add_affine_ool(const xyzz_t<F>& a, const affine_t<F>& b) {
    return a.add_affine(b);
}

/// The batch sums' addition: inline for G1; out of line for G2, whose inline
/// form spills anyway and would double the unit's compile time.
template <class F>
__device__ __forceinline__ xyzz_t<F> add_affine_batch(const xyzz_t<F>& a, const affine_t<F>& b) {
    return a.add_affine(b);
}
template <>
__device__ __forceinline__ xyzz_t<fq2_t> add_affine_batch(const xyzz_t<fq2_t>& a,
                                                          const affine_t<fq2_t>& b) {
    return add_affine_ool(a, b);
}

/// Bucket-reduction addition: inline for G1 (throughput-bound: ≈2 additions
/// per bucket), out of line for G2 (its inline form spills and doubles the
/// unit's compile time).
template <class F>
__device__ __forceinline__ xyzz_t<F> add_reduce(const xyzz_t<F>& a, const xyzz_t<F>& b) {
    return a.add(b);
}
template <>
__device__ __forceinline__ xyzz_t<fq2_t> add_reduce(const xyzz_t<fq2_t>& a, const xyzz_t<fq2_t>& b) {
    return add_ool(a, b);
}

/// Shuffles a point's words down the warp.
template <class T>
__device__ __forceinline__ T shfl_down_words(const T& v, uint32_t delta) {
    static_assert(sizeof(T) % 4 == 0, "word-sized");
    T r;
    const uint32_t* src = reinterpret_cast<const uint32_t*>(&v);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 4); i++) dst[i] = __shfl_down_sync(FULL_WARP, src[i], delta);
    return r;
}

/// Reduces each thread's `acc` over the block; thread 0 writes out[blockIdx.x].
template <class F>
__device__ __forceinline__ void block_sum_to(xyzz_t<F> acc, xyzz_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    __shared__ X warp_sums[32];
#pragma unroll 1
    for (uint32_t d = 16; d > 0; d >>= 1) acc = add_ool(acc, shfl_down_words(acc, d));
    if (lane_id() == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        const uint32_t nwarps = blockDim.x >> 5;
        acc = threadIdx.x < nwarps ? warp_sums[threadIdx.x] : X::infinity();
#pragma unroll 1
        for (uint32_t d = 16; d > 0; d >>= 1) acc = add_ool(acc, shfl_down_words(acc, d));
        if (threadIdx.x == 0) out[blockIdx.x] = acc;
    }
}

/// Step 2. Thread t of `nthreads` owns entries [t·chunk, (t+1)·chunk) with
/// chunk = ⌈total / nthreads⌉, total = offsets[nkeys] (read on the device, so
/// the host need not wait for the sort). Writes part_keys/part_pts[2t, 2t+1].
///
/// KEPT: the buckets hold sums from earlier calls (one MSM over several
/// chunks of points, reduced once): a run wholly inside the thread's share
/// starts from its bucket's sum instead of infinity, so keeping costs a
/// load, not an addition. Every key is written once per call (by the
/// thread whose share holds its whole run, or by the merge), so the
/// read-and-write needs no atomics.
template <class F, bool PREFETCH = true, bool KEPT = false>
__device__ __forceinline__ void accumulate_runs(const affine_t<F>* __restrict__ bases,
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
        acc = acc.add_affine(cur);
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
            do {
                key++;
            } while (offsets[key + 1] <= pos);
            run_end = min(offsets[key + 1], end);
            // A run ending before the share's end is written here, whole.
            acc = KEPT && run_end < end ? bucket_sums[key] : X::infinity();
        }
    }
    if (runs == 1) {  // the only run was written as the head; keep the list sorted
        part_keys[2 * t + 1] = key;
        part_pts[2 * t + 1] = X::infinity();
    }
}

/// Step 3. Thread t sums the runs of in[t·chunk, (t+1)·chunk). With
/// `out_keys` null (the last level: one thread, chunk ≥ len) every run is
/// final; otherwise the first and last runs go to out slots 2t and 2t+1.
/// KEY_NONE entries only trail the list and are skipped. KEPT: a final run
/// is added to its bucket's sum from earlier calls (see accumulate_runs).
template <class F, bool KEPT = false>
__device__ __forceinline__ void merge_runs(const uint32_t* __restrict__ in_keys,
                                           const xyzz_t<F>* __restrict__ in_pts, uint32_t len,
                                           uint32_t chunk, uint32_t nthreads,
                                           xyzz_t<F>* __restrict__ bucket_sums,
                                           uint32_t* __restrict__ out_keys,
                                           xyzz_t<F>* __restrict__ out_pts) {
    using X = xyzz_t<F>;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    const bool last_level = out_keys == nullptr;
    const uint64_t s64 = (uint64_t)t * chunk;
    const uint32_t start = s64 < len ? (uint32_t)s64 : len;
    const uint32_t end = (uint32_t)min((uint64_t)start + chunk, (uint64_t)len);
    if (start >= end || in_keys[start] == KEY_NONE) {
        if (!last_level) {
            out_keys[2 * t] = KEY_NONE;
            out_keys[2 * t + 1] = KEY_NONE;
        }
        return;
    }
    uint32_t key = in_keys[start];
    uint32_t runs = 0;
    X acc = X::infinity();
    for (uint32_t pos = start; pos < end; pos++) {
        const uint32_t k = in_keys[pos];
        if (k == KEY_NONE) break;
        if (k != key) {
            if (runs == 0 && !last_level) {
                out_keys[2 * t] = key;
                out_pts[2 * t] = acc;
            } else {
                bucket_sums[key] = KEPT ? add_ool(bucket_sums[key], acc) : acc;
            }
            runs++;
            key = k;
            acc = X::infinity();
        }
        acc = add_ool(acc, in_pts[pos]);
    }
    if (last_level) {
        bucket_sums[key] = KEPT ? add_ool(bucket_sums[key], acc) : acc;
    } else if (runs == 0) {
        out_keys[2 * t] = key;
        out_pts[2 * t] = acc;
        out_keys[2 * t + 1] = key;
        out_pts[2 * t + 1] = X::infinity();
    } else {
        out_keys[2 * t + 1] = key;
        out_pts[2 * t + 1] = acc;
    }
}

/// k·P for a small unsigned k (double-and-add from the top bit).
template <class F>
__device__ __forceinline__ xyzz_t<F> mul_u32(const xyzz_t<F>& p, uint32_t k) {
    xyzz_t<F> acc = xyzz_t<F>::infinity();
    if (k == 0) return acc;
    for (int b = 31 - __clz(k); b >= 0; b--) {
        acc = dbl_ool(acc);
        if ((k >> b) & 1) acc = add_ool(acc, p);
    }
    return acc;
}

/// Step 4. Thread g = w·S + s reduces buckets [s·m, min((s+1)·m, B)) of
/// window w (bucket index j holds digit j+1; B = buckets_per_window) to
/// Σ_j (j+1)·B_j, written to out[g]. A bucket is read where `offsets` says
/// it is non-empty; with ALL, every bucket (kept buckets, set to infinity
/// before their first call; `offsets` unread).
template <class F, bool ALL = false>
__device__ __forceinline__ void reduce_segments(const xyzz_t<F>* __restrict__ bucket_sums,
                                                const uint32_t* __restrict__ offsets,
                                                uint32_t buckets_per_window, uint32_t m,
                                                uint32_t segments, uint32_t windows,
                                                xyzz_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    const uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= windows * segments) return;
    const uint32_t w = g / segments, s = g % segments;
    const uint32_t first = w * buckets_per_window + s * m;
    const uint32_t len = s * m < buckets_per_window ? min(m, buckets_per_window - s * m) : 0;
    X running = X::infinity(), tri = X::infinity();
    for (int j = (int)len - 1; j >= 0; j--) {
        const uint32_t key = first + j;
        if (ALL || offsets[key] != offsets[key + 1]) running = add_reduce(running, bucket_sums[key]);
        tri = add_reduce(tri, running);  // tri = Σ_j (j − s·m + 1)·B_j
    }
    out[g] = add_ool(tri, mul_u32(running, s * m));
}

/// Step 5a. Block (x, y) sums a strided share of group y's `len` points
/// (in[y·len ..]) and writes out[y·gridDim.x + x]. blockDim.x ≤ 1024.
template <class F>
__device__ __forceinline__ void sum_groups(const xyzz_t<F>* __restrict__ in, uint32_t len,
                                           xyzz_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    __shared__ X warp_sums[32];
    const xyzz_t<F>* group = in + (size_t)blockIdx.y * len;
    X acc = X::infinity();
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x)
        acc = add_ool(acc, group[i]);
    block_sum_to(acc, out + (size_t)blockIdx.y * gridDim.x);
}

/// Step 5b. One thread: Σ_w 2^(c·w)·sums[w] (Horner from the top window),
/// written as Jacobian (X, Y, Z) for the host (Z = 0 for infinity).
template <class F>
__device__ __forceinline__ void horner_to_jacobian(const xyzz_t<F>* __restrict__ sums,
                                                   uint32_t windows, uint32_t c,
                                                   F* __restrict__ out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    xyzz_t<F> acc = sums[windows - 1];
    for (int w = (int)windows - 2; w >= 0; w--) {
        // Inline: this chain of c·(W−1) doublings is one thread's latency,
        // and the out-of-line calls measured several times slower here.
        for (uint32_t k = 0; k < c; k++) acc = acc.dbl();
        acc = acc.add(sums[w]);
    }
    acc.to_jacobian(out[0], out[1], out[2]);
}

// ---------------------------------------------------------------------------
// Batch summation Σ P_i of the points selected by a bitmap or an index list
// (the scalars equal to one). Each thread keeps an XYZZ sum; blocks reduce to
// out[blockIdx.x]; sum_groups and horner (one window) finish.
// ---------------------------------------------------------------------------

/// Bit i of the bitmap (word i/64, LSB first) selects base i, for i < n.
/// Each warp takes groups of BITMAP_GROUP_WORDS words; the selected points of
/// a group are dealt to the 32 lanes round by round, so lanes stay busy
/// whatever the pattern (until the density is very low).
constexpr uint32_t BITMAP_GROUP_WORDS = 8;

template <class F>
__device__ __forceinline__ void batch_sum_bitmap(const affine_t<F>* __restrict__ bases,
                                                 const uint64_t* __restrict__ bitmap, uint32_t n,
                                                 xyzz_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    constexpr uint32_t HALVES = 2 * BITMAP_GROUP_WORDS;  // 32-bit halves per group
    X acc = X::infinity();
    const uint32_t nwords = (n + 63) / 64;
    const uint32_t ngroups = (nwords + BITMAP_GROUP_WORDS - 1) / BITMAP_GROUP_WORDS;
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const uint32_t nwarps = (gridDim.x * blockDim.x) >> 5;
    for (uint32_t g = warp; g < ngroups; g += nwarps) {
        // Lane l < HALVES loads half-word l of the group, masked to i < n.
        uint32_t mine = 0;
        if (lane_id() < HALVES) {
            const uint32_t word = g * BITMAP_GROUP_WORDS + lane_id() / 2;
            if (word < nwords) {
                const uint64_t bits = bitmap[word];
                mine = lane_id() & 1 ? (uint32_t)(bits >> 32) : (uint32_t)bits;
                const uint32_t first_bit = g * (64 * BITMAP_GROUP_WORDS) + 32 * lane_id();
                if (first_bit >= n) mine = 0;
                else if (n - first_bit < 32) mine &= (1u << (n - first_bit)) - 1;
            }
        }
        const uint32_t cnt = __popc(mine);
        const uint32_t incl = warp_inclusive_scan(cnt);
        const uint32_t total = __shfl_sync(FULL_WARP, incl, 31);
        uint32_t incl_all[HALVES];  // every lane holds the whole prefix table
#pragma unroll
        for (uint32_t k = 0; k < HALVES; k++) incl_all[k] = __shfl_sync(FULL_WARP, incl, k);
        for (uint32_t r = 0; r < total; r += 32) {
            const uint32_t j = r + lane_id();  // this lane's selected point, by rank
            // The half holding rank j: the first h with incl[h] > j.
            uint32_t h = 0;
#pragma unroll
            for (uint32_t k = 0; k < HALVES; k++) h += incl_all[k] <= j;
            h = min(h, HALVES - 1);
            const uint32_t half_bits = __shfl_sync(FULL_WARP, mine, h);
            const uint32_t half_incl = __shfl_sync(FULL_WARP, incl, h);
            const uint32_t half_cnt = __shfl_sync(FULL_WARP, cnt, h);
            if (j < total) {
                const uint32_t rank = j - (half_incl - half_cnt);
                const uint32_t bit = __fns(half_bits, 0, rank + 1);
                const uint32_t i = g * (64 * BITMAP_GROUP_WORDS) + 32 * h + bit;
                acc = add_affine_batch(acc, bases[i]);
            }
        }
    }
    block_sum_to(acc, out);
}

/// Σ bases[idx[j]] for j < len; indices ≥ nbases are skipped.
template <class F>
__device__ __forceinline__ void batch_sum_indices(const affine_t<F>* __restrict__ bases,
                                                  uint32_t nbases,
                                                  const uint32_t* __restrict__ idx, uint32_t len,
                                                  xyzz_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    X acc = X::infinity();
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < len; j += gridDim.x * blockDim.x) {
        const uint32_t i = idx[j];
        if (i < nbases) acc = add_affine_batch(acc, bases[i]);
    }
    block_sum_to(acc, out);
}

// ---------------------------------------------------------------------------
// Benchmark bases: P_i = p0 + (first + i)·step for i < n, in affine form.
// Thread t makes points [t·L, (t+1)·L): its start by double-and-add, then a
// chain of mixed additions kept in `scratch` (XYZZ), then one field inversion
// for the whole chain (Montgomery's trick; the prefix products live in the
// output's x until each is overwritten). The points are distinct and their
// discrete logs are unrelated to the benchmark's random scalars.
// ---------------------------------------------------------------------------

template <class F>
__device__ __forceinline__ void chain_bases(const affine_t<F>* __restrict__ consts,  // p0, step
                                            uint32_t first, uint32_t n, uint32_t L,
                                            xyzz_t<F>* __restrict__ scratch,
                                            affine_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t s64 = (uint64_t)t * L;
    if (s64 >= n) return;
    const uint32_t start = (uint32_t)s64;
    const uint32_t end = min(start + L, n);
    const affine_t<F> p0 = consts[0], step = consts[1];
    const uint32_t k = first + start;
    X acc = X::infinity();
    if (k != 0) {
        for (int b = 31 - __clz(k); b >= 0; b--) {
            acc = dbl_ool(acc);
            if ((k >> b) & 1) acc = add_affine_ool(acc, step);
        }
    }
    acc = add_affine_ool(acc, p0);
    for (uint32_t i = start; i < end; i++) {
        scratch[i] = acc;
        acc = add_affine_ool(acc, step);
    }
    F prod = F::one();
    for (uint32_t i = start; i < end; i++) {
        out[i].x = prod;  // Π ZZZ before i
        prod = prod * scratch[i].ZZZ;
    }
    F inv = prod.inv();  // Π ZZZ over the chain, inverted
    for (uint32_t i = end; i-- > start;) {
        const X p = scratch[i];
        const F zzz_inv = inv * out[i].x;
        inv = inv * p.ZZZ;
        const F z_inv = zzz_inv * p.ZZ;  // Z⁻³·Z² = Z⁻¹
        const F zz_inv = z_inv.sqr();
        out[i].x = p.X * zz_inv;
        out[i].y = p.Y * zzz_inv;
    }
}

// ---------------------------------------------------------------------------
// Shifted bases (kernels/msm/common.cuh, window_map_t): out[i] = 2^d·in[i]
// for i < n, affine. Thread t takes points [t·L, (t+1)·L): d doublings each
// (the first from affine), kept in `scratch` (XYZZ), then one inversion for
// the run (Montgomery's trick on ZZZ, the prefix products in out[i].x until
// each is overwritten). Infinity stays infinity and is left out of the
// product. Points of the prime-order subgroup never double to infinity.
// ---------------------------------------------------------------------------

template <class F>
__device__ __forceinline__ void shift_bases(const affine_t<F>* __restrict__ in, uint32_t n,
                                            uint32_t L, uint32_t d,
                                            xyzz_t<F>* __restrict__ scratch,
                                            affine_t<F>* __restrict__ out) {
    using X = xyzz_t<F>;
    const uint64_t s64 = (uint64_t)(blockIdx.x * blockDim.x + threadIdx.x) * L;
    if (s64 >= n || d == 0) return;
    const uint32_t start = (uint32_t)s64;
    const uint32_t end = min(start + L, n);
    F prod = F::one();
    for (uint32_t i = start; i < end; i++) {
        const affine_t<F> p = in[i];
        X acc = X::infinity();
        if (!p.is_inf()) {
            acc = X::dbl_affine(p);
            for (uint32_t k = 1; k < d; k++) acc = dbl_ool(acc);
        }
        scratch[i] = acc;
        out[i].x = prod;  // Π ZZZ before i
        if (!acc.is_inf()) prod = prod * acc.ZZZ;
    }
    F inv = prod.inv();
    for (uint32_t i = end; i-- > start;) {
        const X p = scratch[i];
        if (p.is_inf()) {
            out[i] = affine_t<F>::infinity();
            continue;
        }
        const F zzz_inv = inv * out[i].x;
        inv = inv * p.ZZZ;
        const F z_inv = zzz_inv * p.ZZ;  // Z⁻³·Z² = Z⁻¹
        out[i].x = p.X * z_inv.sqr();
        out[i].y = p.Y * zzz_inv;
    }
}

}  // namespace msm
}  // namespace cuzk

/// extern "C" kernels for one curve: SUFFIX is g1 or g2, F its base field.
/// A bucket-accumulation kernel; NAME carries the launch bounds it was
/// compiled with (occupancy variants are timed by the benchmark).
#define CUZK_MSM_ACCUMULATE_KERNEL(NAME, F, BOUNDS, PREFETCH)                                   \
    extern "C" __global__ void BOUNDS NAME(                                                      \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* offsets,       \
        uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<F>* bucket_sums, uint32_t* part_keys,    \
        cuzk::xyzz_t<F>* part_pts) {                                                             \
        cuzk::msm::accumulate_runs<F, PREFETCH>(bases, entries, offsets, nkeys, nthreads,        \
                                                bucket_sums, part_keys, part_pts);               \
    }

/// The kept-bucket accumulation, merge and reduction (see accumulate_runs'
/// KEPT, reduce_segments' ALL): one MSM summed over several calls into
/// buckets that outlive each call, for a streamed key's H section. G1 only
/// (H is a G1 section); the production kernels are left as they were.
#define CUZK_MSM_KEPT_KERNELS(SUFFIX, F, BOUNDS, PREFETCH)                                      \
    extern "C" __global__ void BOUNDS msm_accumulate_kept_##SUFFIX(                              \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* offsets,       \
        uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<F>* bucket_sums, uint32_t* part_keys,    \
        cuzk::xyzz_t<F>* part_pts) {                                                             \
        cuzk::msm::accumulate_runs<F, PREFETCH, true>(bases, entries, offsets, nkeys, nthreads,  \
                                                      bucket_sums, part_keys, part_pts);         \
    }                                                                                            \
    extern "C" __global__ void msm_merge_kept_##SUFFIX(                                          \
        const uint32_t* in_keys, const cuzk::xyzz_t<F>* in_pts, uint32_t len, uint32_t chunk,    \
        uint32_t nthreads, cuzk::xyzz_t<F>* bucket_sums, uint32_t* out_keys,                     \
        cuzk::xyzz_t<F>* out_pts) {                                                              \
        cuzk::msm::merge_runs<F, true>(in_keys, in_pts, len, chunk, nthreads, bucket_sums,       \
                                       out_keys, out_pts);                                       \
    }                                                                                            \
    extern "C" __global__ void msm_reduce_kept_##SUFFIX(                                         \
        const cuzk::xyzz_t<F>* bucket_sums, const uint32_t* offsets,                             \
        uint32_t buckets_per_window, uint32_t m, uint32_t segments, uint32_t windows,            \
        cuzk::xyzz_t<F>* out) {                                                                  \
        cuzk::msm::reduce_segments<F, true>(bucket_sums, offsets, buckets_per_window, m,         \
                                            segments, windows, out);                             \
    }

/// A bitmap batch-sum kernel with the given launch bounds (occupancy variants).
#define CUZK_MSM_BITMAP_KERNEL(NAME, F, BOUNDS)                                                  \
    extern "C" __global__ void BOUNDS NAME(const cuzk::affine_t<F>* bases, const uint64_t* bitmap, \
                                           uint32_t n, cuzk::xyzz_t<F>* out) {                   \
        cuzk::msm::batch_sum_bitmap<F>(bases, bitmap, n, out);                                   \
    }

/// ACC_BOUNDS / SUM_BOUNDS: launch bounds of the accumulation (64-thread
/// blocks) and of the batch sums (128-thread blocks), chosen per curve by the
/// benchmark's variant runs.
#define CUZK_MSM_CURVE_KERNELS(SUFFIX, F, ACC_BOUNDS, SUM_BOUNDS)                                                        \
    CUZK_MSM_ACCUMULATE_KERNEL(msm_accumulate_##SUFFIX, F, ACC_BOUNDS, true)                     \
    extern "C" __global__ void msm_merge_##SUFFIX(                                               \
        const uint32_t* in_keys, const cuzk::xyzz_t<F>* in_pts, uint32_t len, uint32_t chunk,    \
        uint32_t nthreads, cuzk::xyzz_t<F>* bucket_sums, uint32_t* out_keys,                     \
        cuzk::xyzz_t<F>* out_pts) {                                                              \
        cuzk::msm::merge_runs<F>(in_keys, in_pts, len, chunk, nthreads, bucket_sums, out_keys,   \
                                 out_pts);                                                       \
    }                                                                                            \
    extern "C" __global__ void msm_reduce_segments_##SUFFIX(                                     \
        const cuzk::xyzz_t<F>* bucket_sums, const uint32_t* offsets,                             \
        uint32_t buckets_per_window, uint32_t m, uint32_t segments, uint32_t windows,            \
        cuzk::xyzz_t<F>* out) {                                                                  \
        cuzk::msm::reduce_segments<F>(bucket_sums, offsets, buckets_per_window, m, segments,     \
                                      windows, out);                                             \
    }                                                                                            \
    extern "C" __global__ void msm_sum_groups_##SUFFIX(const cuzk::xyzz_t<F>* in, uint32_t len,  \
                                                       cuzk::xyzz_t<F>* out) {                   \
        cuzk::msm::sum_groups<F>(in, len, out);                                                  \
    }                                                                                            \
    extern "C" __global__ void msm_horner_##SUFFIX(const cuzk::xyzz_t<F>* sums, uint32_t windows,\
                                                   uint32_t c, F* out) {                         \
        cuzk::msm::horner_to_jacobian<F>(sums, windows, c, out);                                 \
    }                                                                                            \
    CUZK_MSM_BITMAP_KERNEL(msm_batch_sum_bitmap_##SUFFIX, F, SUM_BOUNDS)                         \
    extern "C" __global__ void SUM_BOUNDS msm_batch_sum_indices_##SUFFIX(                        \
        const cuzk::affine_t<F>* bases, uint32_t nbases, const uint32_t* idx, uint32_t len,      \
        cuzk::xyzz_t<F>* out) {                                                                  \
        cuzk::msm::batch_sum_indices<F>(bases, nbases, idx, len, out);                           \
    }                                                                                            \
    extern "C" __global__ void msm_chain_bases_##SUFFIX(                                         \
        const cuzk::affine_t<F>* consts, uint32_t first, uint32_t n, uint32_t L,                 \
        cuzk::xyzz_t<F>* scratch, cuzk::affine_t<F>* out) {                                      \
        cuzk::msm::chain_bases<F>(consts, first, n, L, scratch, out);                            \
    }                                                                                            \
    extern "C" __global__ void msm_shift_bases_##SUFFIX(                                         \
        const cuzk::affine_t<F>* in, uint32_t n, uint32_t L, uint32_t d,                         \
        cuzk::xyzz_t<F>* scratch, cuzk::affine_t<F>* out) {                                      \
        cuzk::msm::shift_bases<F>(in, n, L, d, scratch, out);                                    \
    }
