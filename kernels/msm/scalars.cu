// Curve-independent MSM kernels: bucketing scalars by signed digit (a
// counting sort: histogram, exclusive scan, scatter), the u32 exclusive scan
// they use, scalar classification (zero / one / other) with ordered index
// compaction, and a random-scalar generator for benchmarks.
//
// Host wrappers: crates/cuzk-cuda/src/msm.rs (the only caller; it knows these
// argument lists).
//
// Everything but the extern "C" kernels lives in cuzk::msm: all units are
// compiled as one translation unit (see kernels/manifest.toml).
#include "common.cuh"

namespace cuzk {
namespace msm {

constexpr uint32_t SCAN_THREADS = 256;
constexpr uint32_t SCAN_ITEMS = 16;
constexpr uint32_t SCAN_TILE = SCAN_THREADS * SCAN_ITEMS;

/// Windows whose scatter atomics are issued together.
constexpr uint32_t SCATTER_BATCH = 8;

constexpr uint32_t CLASSIFY_THREADS = 256;
constexpr uint32_t CLASSIFY_ROUNDS = 8;
constexpr uint32_t CLASSIFY_TILE = CLASSIFY_THREADS * CLASSIFY_ROUNDS;

/// 0: zero, 1: one (R mod r, Montgomery), 2: other.
__device__ __forceinline__ uint32_t classify(const fr_t* scalars, uint32_t i) {
    const fr_t s = scalars[i];
    if (s.is_zero()) return 0;
    return s.is_one() ? 1 : 2;
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace msm
}  // namespace cuzk

#define CUZK_MSM_USING \
    using namespace cuzk; \
    using namespace cuzk::msm

/// dst[i] = value for i < len (resetting the histogram between MSMs).
extern "C" __global__ void msm_fill_u32(uint32_t* __restrict__ dst, uint32_t len, uint32_t value) {
    CUZK_MSM_USING;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x)
        dst[i] = value;
}

/// out[0] = *a, out[1] = *b: two device-side totals in one small download.
extern "C" __global__ void msm_gather_pair_u32(const uint32_t* __restrict__ a,
                                               const uint32_t* __restrict__ b,
                                               uint32_t* __restrict__ out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = *a;
        out[1] = *b;
    }
}

// ---------------------------------------------------------------------------
// Counting sort of (bucket key, point) pairs.
//
// Both passes walk the scalars warp by warp with every lane in the loop (the
// loop bound is warp-uniform), so lanes holding the same key can be found
// with __match_any_sync and served by one atomic: PoRep scalars repeat, and
// without this all-equal scalars would serialize on one counter.
// ---------------------------------------------------------------------------

/// counts[key] += number of (point, window) pairs with that key.
/// `idx` (may be null) selects which scalars take part: scalar idx[j] for
/// j < n; an index ≥ `bound` (the shorter of the scalar and base arrays) is
/// skipped, so a bad list cannot read out of bounds.
extern "C" __global__ void msm_digit_histogram(const cuzk::fr_t* __restrict__ scalars,
                                               const uint32_t* __restrict__ idx, uint32_t n,
                                               uint32_t bound,
                                               uint32_t c, uint32_t windows, uint32_t sets,
                                               uint32_t* __restrict__ counts) {
    CUZK_MSM_USING;
    const uint32_t M = 1u << (c - 1);
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t base = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n;
         base += stride) {
        const uint32_t j = base + lane_id();
        const bool valid = j < n;
        scalar_bits_t bits = scalar_bits_t::zero();
        const uint32_t point = valid ? (idx ? idx[j] : j) : 0;
        if (valid && point < bound) bits = scalar_bits_t::load(scalars, point);
        signed_digits_t digits(bits, c);
        window_map_t map(sets, 0);
        for (uint32_t w = 0; w < windows; w++, map.advance()) {
            bool neg;
            uint32_t mag = digits.next(neg);
            uint32_t key = mag ? map.set * M + (mag - 1) : KEY_NONE;
            uint32_t peers = __match_any_sync(FULL_WARP, key);
            if (key != KEY_NONE && lane_id() == (uint32_t)(__ffs(peers) - 1))
                atomicAdd(&counts[key], __popc(peers));
        }
    }
}

/// entries[cursor[key]++] = point index (in its window's copy) | sign, for
/// every nonzero digit. `cursors` starts as the exclusive scan of the
/// histogram; `sets` and `copy_stride` as in window_map_t.
extern "C" __global__ void msm_digit_scatter(const cuzk::fr_t* __restrict__ scalars,
                                             const uint32_t* __restrict__ idx, uint32_t n,
                                             uint32_t bound,
                                             uint32_t c, uint32_t windows, uint32_t sets,
                                             uint32_t copy_stride,
                                             uint32_t* __restrict__ cursors,
                                             uint32_t* __restrict__ entries) {
    CUZK_MSM_USING;
    const uint32_t M = 1u << (c - 1);
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t base = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n;
         base += stride) {
        const uint32_t j = base + lane_id();
        const bool valid = j < n;
        const uint32_t point = valid ? (idx ? idx[j] : j) : 0;
        scalar_bits_t bits = scalar_bits_t::zero();
        if (valid && point < bound) bits = scalar_bits_t::load(scalars, point);
        signed_digits_t digits(bits, c);
        window_map_t map(sets, copy_stride);
        // Windows in batches of SCATTER_BATCH: the batch's atomics are all in
        // flight before the first result is used (one at a time, the kernel
        // is bound by the atomics' round-trip latency).
        for (uint32_t w0 = 0; w0 < windows; w0 += SCATTER_BATCH) {
            uint32_t key[SCATTER_BATCH], peers[SCATTER_BATCH], pos[SCATTER_BATCH];
            uint32_t copy[SCATTER_BATCH];
            bool neg[SCATTER_BATCH];
#pragma unroll
            for (uint32_t k = 0; k < SCATTER_BATCH; k++) {
                const uint32_t w = w0 + k;
                key[k] = KEY_NONE;
                neg[k] = false;
                copy[k] = map.offset;
                if (w < windows) {  // warp-uniform
                    uint32_t mag = digits.next(neg[k]);
                    if (mag) key[k] = map.set * M + (mag - 1);
                    map.advance();
                }
                peers[k] = __match_any_sync(FULL_WARP, key[k]);
                pos[k] = 0;
                if (key[k] != KEY_NONE && lane_id() == (uint32_t)(__ffs(peers[k]) - 1))
                    pos[k] = atomicAdd(&cursors[key[k]], __popc(peers[k]));
            }
#pragma unroll
            for (uint32_t k = 0; k < SCATTER_BATCH; k++) {
                const uint32_t p = __shfl_sync(FULL_WARP, pos[k], __ffs(peers[k]) - 1);
                if (key[k] != KEY_NONE)
                    entries[p + __popc(peers[k] & lanemask_lt())] =
                        (point + copy[k]) | (neg[k] ? NEG_BIT : 0u);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// LSD radix sort of the same (bucket key, entry) pairs: the alternative to the
// histogram + atomic scatter above for large MSMs. Zero digits get the key
// `sentinel` = W·2^(c−1) (above every bucket key), so they sort to the end of
// their group and are never summed.
//
// 1. msm_radix_digits writes every pair's key (bit 31: the digit's sign) into
//    `entries`, window-major: entries[w·n + j]. Scalars are read once.
// 2. The windows are sorted in groups of G (the host picks G so that a
//    group's G·n pairs fit its scratch), each group by ⌈bits(sentinel)/8⌉
//    passes over 8-bit digits, low digit first. Every pass is
//    reduce-then-scan over tiles of RADIX_TILE items: msm_radix_counts writes
//    the tile's 256-bin histogram to tile_hist[bin·ntiles + tile], the
//    exclusive scan of that array gives every (bin, tile) its output offset,
//    msm_radix_scatter ranks the tile in shared memory (stable: warp by warp,
//    in item order, per-warp counters; __match_any_sync lets one lane of
//    equal bins update the counter, so equal keys cost nothing extra), stages
//    it in sorted order and writes each bin's run with consecutive threads.
//    The first pass reads the group's keys from `entries` and makes the
//    entry (point index | sign) from the position; the last writes the
//    entries to entries[*out_base ...]: the group's sorted entries follow
//    those of the groups before (they only ever overwrite keys already read).
// 3. msm_radix_bucket_counts adds each key's run length in the group's
//    sorted keys to counts[key] and the group's number of real entries to
//    *out_base; after the last group the scan of counts gives the offsets.
// No global atomics per pair.
// ---------------------------------------------------------------------------

namespace cuzk {
namespace msm {

constexpr uint32_t RADIX_THREADS = 256;
constexpr uint32_t RADIX_WARPS = RADIX_THREADS / 32;
constexpr uint32_t RADIX_BINS = 256;
/// Items per thread and per tile.
constexpr uint32_t RADIX_ITEMS = 16;
constexpr uint32_t RADIX_TILE = RADIX_THREADS * RADIX_ITEMS;

static_assert(RADIX_THREADS == RADIX_BINS, "one thread per bin in the tile scan");

/// The bin of `key` in this pass, or RADIX_BINS for a lane with no item.
__device__ __forceinline__ uint32_t radix_bin(uint32_t key, uint32_t shift, bool valid) {
    return valid ? (key >> shift) & (RADIX_BINS - 1) : RADIX_BINS;
}

}  // namespace msm
}  // namespace cuzk

/// keys_out[p·n + j] = key of digit w of scalar idx[j] (or j) | sign bit, in
/// slot p = (w mod sets)·copies + w / sets (set-major: a set's windows, one
/// per copy, side by side; copies = ⌈windows / sets⌉, so slot = window for a
/// plain MSM), key = (w mod sets)·2^(c−1) + |d| − 1, or `sets`·2^(c−1) for a
/// zero digit (also for an index ≥ bound, and in the slots past the last
/// window: sets whose last copy has no window).
extern "C" __global__ void msm_radix_digits(const cuzk::fr_t* __restrict__ scalars,
                                            const uint32_t* __restrict__ idx, uint32_t n,
                                            uint32_t bound, uint32_t c, uint32_t windows,
                                            uint32_t sets, uint32_t copies,
                                            uint32_t* __restrict__ keys_out) {
    CUZK_MSM_USING;
    const uint32_t M = 1u << (c - 1), sentinel = sets * M;
    const uint32_t stride = gridDim.x * blockDim.x;
    // Sets from `full` on have no window in the last copy.
    const uint32_t full = windows - (copies - 1) * sets;
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        const uint32_t point = idx ? idx[j] : j;
        scalar_bits_t bits = scalar_bits_t::zero();
        if (point < bound) bits = scalar_bits_t::load(scalars, point);
        signed_digits_t digits(bits, c);
        window_map_t map(sets, 0);
        uint32_t copy = 0;
        for (uint32_t w = 0; w < windows; w++) {
            bool neg;
            const uint32_t mag = digits.next(neg);
            keys_out[(size_t)(map.set * copies + copy) * n + j] =
                mag ? (map.set * M + (mag - 1)) | (neg ? NEG_BIT : 0u) : sentinel;
            map.advance();
            if (map.set == 0) copy++;
        }
        for (uint32_t s = full; s < sets; s++) keys_out[(size_t)(s * copies + copies - 1) * n + j] = sentinel;
    }
}

/// Counts of one pass: tile = RADIX_TILE consecutive items of keys_in[0..total)
/// (bit 31 ignored); tile_hist[bin·ntiles + tile].
extern "C" __global__ void __launch_bounds__(cuzk::msm::RADIX_THREADS)
    msm_radix_counts(const uint32_t* __restrict__ keys_in, uint32_t total, uint32_t shift,
                     uint32_t* __restrict__ tile_hist, uint32_t ntiles) {
    CUZK_MSM_USING;
    __shared__ uint32_t cnt[RADIX_BINS];
    cnt[threadIdx.x] = 0;
    __syncthreads();
    const uint32_t base = blockIdx.x * RADIX_TILE + threadIdx.x;
    uint32_t key[RADIX_ITEMS];
#pragma unroll
    for (uint32_t k = 0; k < RADIX_ITEMS; k++) {
        const uint32_t i = base + k * RADIX_THREADS;
        key[k] = i < total ? keys_in[i] & INDEX_MASK : 0;
    }
#pragma unroll
    for (uint32_t k = 0; k < RADIX_ITEMS; k++) {
        const bool valid = base + k * RADIX_THREADS < total;
        const uint32_t bin = radix_bin(key[k], shift, valid);
        const uint32_t peers = __match_any_sync(FULL_WARP, bin);
        if (valid && lane_id() == (uint32_t)(__ffs(peers) - 1)) atomicAdd(&cnt[bin], __popc(peers));
    }
    __syncthreads();
    tile_hist[(size_t)threadIdx.x * ntiles + blockIdx.x] = cnt[threadIdx.x];
}

/// Stable scatter of one pass by bits [shift, shift + 8) of the key;
/// tile_off is the exclusive scan of tile_hist. With vals_in null (first
/// pass) the keys carry the sign in bit 31 and item i (of slot p = w0 +
/// i / n, see msm_radix_digits) has the entry (idx ? idx[i mod n] : i mod n)
/// + (p mod copies)·stride | sign (its point in its window's copy);
/// keys_out gets the key without the sign. vals_out is written at
/// *out_base + position when out_base is not null.
extern "C" __global__ void __launch_bounds__(cuzk::msm::RADIX_THREADS)
    msm_radix_scatter(const uint32_t* __restrict__ keys_in, const uint32_t* __restrict__ vals_in,
                      uint32_t total, uint32_t shift, const uint32_t* __restrict__ tile_off,
                      uint32_t ntiles, const uint32_t* __restrict__ idx, uint32_t n,
                      uint32_t w0, uint32_t copies, uint32_t stride,
                      const uint32_t* __restrict__ out_base, uint32_t* __restrict__ keys_out,
                      uint32_t* __restrict__ vals_out) {
    CUZK_MSM_USING;
    __shared__ uint32_t skey[RADIX_TILE], sval[RADIX_TILE];
    __shared__ uint32_t wcnt[RADIX_WARPS][RADIX_BINS];
    __shared__ uint32_t gbase[RADIX_BINS];
    __shared__ uint32_t scan_tmp[33];
    const uint32_t warp = threadIdx.x >> 5;
    // Warp `warp` owns items [first, first + 32·ITEMS) of the tile, 32 at a time.
    const uint32_t first = blockIdx.x * RADIX_TILE + warp * 32 * RADIX_ITEMS + lane_id();
    uint32_t key[RADIX_ITEMS], val[RADIX_ITEMS], rank[RADIX_ITEMS];
#pragma unroll
    for (uint32_t k = 0; k < RADIX_ITEMS; k++) {
        const uint32_t i = first + k * 32;
        const uint32_t raw = i < total ? keys_in[i] : 0;
        key[k] = raw & INDEX_MASK;
        if (vals_in) {
            val[k] = i < total ? vals_in[i] : 0;
        } else {
            const uint32_t j = i % n, copy = (w0 + i / n) % copies;
            val[k] = (i < total ? (idx ? idx[j] : j) + copy * stride : 0) | (raw & NEG_BIT);
        }
    }
    for (uint32_t i = threadIdx.x; i < RADIX_WARPS * RADIX_BINS; i += RADIX_THREADS)
        wcnt[i / RADIX_BINS][i % RADIX_BINS] = 0;
    __syncthreads();
    // Rank: the warp's earlier items of the same bin, counted in item order.
#pragma unroll
    for (uint32_t k = 0; k < RADIX_ITEMS; k++) {
        const bool valid = first + k * 32 < total;
        const uint32_t bin = radix_bin(key[k], shift, valid);
        const uint32_t peers = __match_any_sync(FULL_WARP, bin);
        const uint32_t before = valid ? wcnt[warp][bin] : 0;
        __syncwarp();
        if (valid && lane_id() == (uint32_t)(__ffs(peers) - 1)) wcnt[warp][bin] = before + __popc(peers);
        __syncwarp();
        rank[k] = before + __popc(peers & lanemask_lt());
    }
    __syncthreads();
    // Per bin (thread b): warps' counts → the warps' starts within the bin's
    // run; the runs' starts in the tile by a block scan; the global offset.
    {
        const uint32_t b = threadIdx.x;
        uint32_t run = 0;
#pragma unroll
        for (uint32_t wp = 0; wp < RADIX_WARPS; wp++) {
            const uint32_t t = wcnt[wp][b];
            wcnt[wp][b] = run;
            run += t;
        }
        uint32_t tile_total;
        const uint32_t start = block_exclusive_scan(run, scan_tmp, tile_total);
#pragma unroll
        for (uint32_t wp = 0; wp < RADIX_WARPS; wp++) wcnt[wp][b] += start;
        gbase[b] = tile_off[(size_t)b * ntiles + blockIdx.x] - start;
    }
    __syncthreads();
#pragma unroll
    for (uint32_t k = 0; k < RADIX_ITEMS; k++) {
        if (first + k * 32 < total) {
            const uint32_t pos = wcnt[warp][(key[k] >> shift) & (RADIX_BINS - 1)] + rank[k];
            skey[pos] = key[k];
            sval[pos] = val[k];
        }
    }
    __syncthreads();
    // Item i of the sorted tile goes to gbase[bin] + i: each bin's run is
    // written by consecutive threads.
    const uint32_t items = min(total - blockIdx.x * RADIX_TILE, RADIX_TILE);
    uint32_t* vals = vals_out + (out_base ? *out_base : 0u);
    for (uint32_t i = threadIdx.x; i < items; i += RADIX_THREADS) {
        const uint32_t k = skey[i];
        const uint32_t g = gbase[(k >> shift) & (RADIX_BINS - 1)] + i;
        keys_out[g] = k;
        vals[g] = sval[i];
    }
}

/// counts[k] += length of key k's run in the sorted keys[0..total) (keys ≥
/// sentinel, the zero digits, are left out) and *real_total += the number of
/// keys below the sentinel.
extern "C" __global__ void msm_radix_bucket_counts(const uint32_t* __restrict__ keys,
                                                   uint32_t total, uint32_t sentinel,
                                                   uint32_t* __restrict__ counts,
                                                   uint32_t* __restrict__ real_total) {
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const uint32_t k = keys[i];
        if (k >= sentinel) continue;
        const bool last = i + 1 == total || keys[i + 1] != k;
        // Run [s, e): the start subtracts s, the end adds e (mod 2^32).
        if (i == 0 || keys[i - 1] != k) atomicSub(&counts[k], i);
        if (last) atomicAdd(&counts[k], i + 1);
        if (last && (i + 1 == total || keys[i + 1] >= sentinel)) atomicAdd(real_total, i + 1);
    }
}

// ---------------------------------------------------------------------------
// Exclusive scan of u32: out[i] = Σ_{k<i} in[k] for i ≤ len (out[len] is the
// total), in three launches: per-tile sums, a one-block scan of the tile
// sums, then each tile scanned from its offset. `out2` (may be null) gets a
// second copy (the scatter's cursors).
// ---------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(cuzk::msm::SCAN_THREADS)
    msm_scan_tile_sums(const uint32_t* __restrict__ in, uint32_t len,
                       uint32_t* __restrict__ tile_sums) {
    CUZK_MSM_USING;
    __shared__ uint32_t shared[33];
    const uint32_t tile = blockIdx.x * SCAN_TILE;
    uint32_t s = 0;
#pragma unroll
    for (uint32_t k = 0; k < SCAN_ITEMS; k++) {
        uint32_t i = tile + k * SCAN_THREADS + threadIdx.x;
        if (i < len) s += in[i];
    }
    uint32_t total;
    block_exclusive_scan(s, shared, total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

/// One block of 1024 threads: tile_sums[0..ntiles) becomes its exclusive scan;
/// the total goes to tile_sums[ntiles], out[len] and out2[len].
extern "C" __global__ void __launch_bounds__(1024)
    msm_scan_tile_offsets(uint32_t* __restrict__ tile_sums, uint32_t ntiles,
                          uint32_t* __restrict__ out, uint32_t* __restrict__ out2, uint32_t len) {
    CUZK_MSM_USING;
    __shared__ uint32_t shared[33];
    uint32_t carry = 0;
    for (uint32_t base = 0; base < ntiles; base += blockDim.x) {
        uint32_t i = base + threadIdx.x;
        uint32_t v = i < ntiles ? tile_sums[i] : 0;
        uint32_t total;
        uint32_t prefix = block_exclusive_scan(v, shared, total);
        if (i < ntiles) tile_sums[i] = carry + prefix;
        carry += total;
    }
    if (threadIdx.x == 0) {
        tile_sums[ntiles] = carry;
        out[len] = carry;
        if (out2) out2[len] = carry;
    }
}

extern "C" __global__ void __launch_bounds__(cuzk::msm::SCAN_THREADS)
    msm_scan_tiles(const uint32_t* __restrict__ in, uint32_t len,
                   const uint32_t* __restrict__ tile_offsets, uint32_t* __restrict__ out,
                   uint32_t* __restrict__ out2) {
    CUZK_MSM_USING;
    __shared__ uint32_t shared[33];
    // Blocked: thread t owns items [t·ITEMS, (t+1)·ITEMS) of the tile.
    const uint32_t first = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    uint32_t v[SCAN_ITEMS];
    uint32_t s = 0;
#pragma unroll
    for (uint32_t k = 0; k < SCAN_ITEMS; k++) {
        v[k] = first + k < len ? in[first + k] : 0;
        s += v[k];
    }
    uint32_t total;
    uint32_t run = tile_offsets[blockIdx.x] + block_exclusive_scan(s, shared, total);
#pragma unroll
    for (uint32_t k = 0; k < SCAN_ITEMS; k++) {
        if (first + k < len) {
            out[first + k] = run;
            if (out2) out2[first + k] = run;
        }
        run += v[k];
    }
}

// ---------------------------------------------------------------------------
// Scalar classification: zero, one (Montgomery R mod r) or other. Each block
// owns a tile of CLASSIFY_TILE scalars visited in rounds of blockDim.x
// consecutive scalars, so index lists come out in ascending order.
// ---------------------------------------------------------------------------

/// Per tile: how many ones and others it holds.
extern "C" __global__ void __launch_bounds__(cuzk::msm::CLASSIFY_THREADS)
    msm_classify_count(const cuzk::fr_t* __restrict__ scalars, uint32_t n,
                       uint32_t* __restrict__ ones_per_tile,
                       uint32_t* __restrict__ others_per_tile) {
    CUZK_MSM_USING;
    __shared__ uint32_t shared[33];
    uint32_t ones = 0, others = 0;
    for (uint32_t r = 0; r < CLASSIFY_ROUNDS; r++) {
        uint32_t i = blockIdx.x * CLASSIFY_TILE + r * CLASSIFY_THREADS + threadIdx.x;
        if (i < n) {
            uint32_t k = classify(scalars, i);
            ones += k == 1;
            others += k == 2;
        }
    }
    uint32_t t1, t2;
    block_exclusive_scan(ones, shared, t1);
    block_exclusive_scan(others, shared, t2);
    if (threadIdx.x == 0) {
        ones_per_tile[blockIdx.x] = t1;
        others_per_tile[blockIdx.x] = t2;
    }
}

/// Writes the indices of ones and of others, ascending, from each tile's offsets.
extern "C" __global__ void __launch_bounds__(cuzk::msm::CLASSIFY_THREADS)
    msm_classify_scatter(const cuzk::fr_t* __restrict__ scalars, uint32_t n,
                         const uint32_t* __restrict__ ones_offsets,
                         const uint32_t* __restrict__ others_offsets,
                         uint32_t* __restrict__ ones_idx, uint32_t* __restrict__ others_idx) {
    CUZK_MSM_USING;
    __shared__ uint32_t shared[33];
    uint32_t ones_base = ones_offsets[blockIdx.x];
    uint32_t others_base = others_offsets[blockIdx.x];
    for (uint32_t r = 0; r < CLASSIFY_ROUNDS; r++) {
        uint32_t i = blockIdx.x * CLASSIFY_TILE + r * CLASSIFY_THREADS + threadIdx.x;
        uint32_t k = i < n ? classify(scalars, i) : 0;
        uint32_t t1, t2;
        uint32_t p1 = block_exclusive_scan(k == 1, shared, t1);
        uint32_t p2 = block_exclusive_scan(k == 2, shared, t2);
        if (k == 1) ones_idx[ones_base + p1] = i;
        if (k == 2) others_idx[others_base + p2] = i;
        ones_base += t1;
        others_base += t2;
    }
}

// ---------------------------------------------------------------------------
// Benchmark data: uniformly distributed field elements (as Montgomery limbs;
// a uniform element is uniform in either form), from a counter-based hash so
// any slice can be regenerated. Never zero in practice.
// ---------------------------------------------------------------------------

extern "C" __global__ void msm_random_scalars(cuzk::fr_t* __restrict__ out, uint32_t n, uint64_t seed) {
    CUZK_MSM_USING;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t h = splitmix64(seed ^ ((uint64_t)i << 2));
    fr_t v;
    for (int k = 0; k < 4; k++) {
        h = splitmix64(h + k);
        v.l[2 * k] = (uint32_t)h;
        v.l[2 * k + 1] = (uint32_t)(h >> 32);
    }
    v.l[7] &= 0x7fffffffu;  // < 2^255 < 2r: one conditional subtraction reduces
    fr_t r = fr_t::modulus();
    uint32_t t[8];
    t[0] = ptx::sub_cc(v.l[0], r.l[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) t[k] = ptx::subc_cc(v.l[k], r.l[k]);
    uint32_t borrow = ptx::subc(0, 0);
    if (!borrow) {
#pragma unroll
        for (int k = 0; k < 8; k++) v.l[k] = t[k];
    }
    out[i] = v;
}
