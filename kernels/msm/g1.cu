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
// Staged prefetch (experiment): Nsight Compute (20:28Z) shows the G1
// accumulation issue-latency-bound at 2 warps per scheduler (178 registers;
// each SM sub-partition's 16K registers hold 2 warps of ≥171). The register
// prefetch of the next point holds 24 of them; without it (168 registers, 3
// warps) the load latency shows instead (132 ms against 130). Here the next
// point travels global → shared by cp.async, so the prefetch costs no
// registers while in flight.
// ---------------------------------------------------------------------------
namespace cuzk {
namespace msm {

constexpr uint32_t STAGE_THREADS = 64;  // = ACCUMULATE_THREADS in msm.rs

/// Starts the copy of one affine point (16-byte chunks) into shared memory.
template <class F>
__device__ __forceinline__ void stage_point(affine_t<F>* dst, const affine_t<F>* src) {
    static_assert(sizeof(affine_t<F>) % 16 == 0, "16-byte chunks");
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    const char* s = reinterpret_cast<const char*>(src);
#pragma unroll
    for (uint32_t k = 0; k < sizeof(affine_t<F>) / 16; k++)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d + 16 * k), "l"(s + 16 * k)
                     : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void async_wait_all() {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}

/// accumulate_runs (pippenger.cuh) with the staged prefetch (experiment copy).
template <class F>
__device__ __forceinline__ void accumulate_runs_staged(const affine_t<F>* __restrict__ bases,
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
    // The next point is copied global → shared by cp.async (no registers
    // held while it is in flight); this thread's slot is read only by it.
    __shared__ affine_t<F> stage[2][STAGE_THREADS];
    uint32_t buf = 0;
    uint32_t e_next = entries[start];
    stage_point(&stage[0][threadIdx.x], bases + (e_next & INDEX_MASK));
    for (uint32_t pos = start; pos < end;) {
        const uint32_t e = e_next;
        async_wait_all();
        affine_t<F> cur = stage[buf][threadIdx.x];
        cur = cur.cneg((e & NEG_BIT) != 0);
        pos++;
        if (pos < end) {
            e_next = entries[pos];
            stage_point(&stage[buf ^ 1][threadIdx.x], bases + (e_next & INDEX_MASK));
        }
        buf ^= 1;
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

extern "C" __global__ void msm_accumulate_staged_g1(
    const cuzk::affine_t<cuzk::fq_t>* bases, const uint32_t* entries, const uint32_t* offsets,
    uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<cuzk::fq_t>* bucket_sums, uint32_t* part_keys,
    cuzk::xyzz_t<cuzk::fq_t>* part_pts) {
    cuzk::msm::accumulate_runs_staged<cuzk::fq_t>(bases, entries, offsets, nkeys, nthreads,
                                                  bucket_sums, part_keys, part_pts);
}
extern "C" __global__ void __launch_bounds__(64, 6) msm_accumulate_staged_g1_6x64(
    const cuzk::affine_t<cuzk::fq_t>* bases, const uint32_t* entries, const uint32_t* offsets,
    uint32_t nkeys, uint32_t nthreads, cuzk::xyzz_t<cuzk::fq_t>* bucket_sums, uint32_t* part_keys,
    cuzk::xyzz_t<cuzk::fq_t>* part_pts) {
    cuzk::msm::accumulate_runs_staged<cuzk::fq_t>(bases, entries, offsets, nkeys, nthreads,
                                                  bucket_sums, part_keys, part_pts);
}
