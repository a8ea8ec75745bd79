// Density gather on the device: the dense scalars of a density-indexed query
// (A or B) are the witness values at the set bits of a bitmap, in order.
// Done here instead of on the host, the aux values are read once from device
// memory (they are already there for the L MSM) and nothing crosses PCIe.
//
//   prover_word_popcounts: counts[w] = set bits of word w (bits >= n masked)
//   (the u32 exclusive scan of kernels/msm/scalars.cu turns them into offsets)
//   prover_gather_set_bits: out[offsets[w] + rank] = values[64 w + bit]
//   prover_gather_ranks: the same over words [w0, w1] of a bitmap whose
//     offsets cover all of it, only the set bits of rank r0 <= r < r1, to
//     out[r - r0]: a chunk of a long gather with nothing uploaded per chunk
//   prover_copy_pad: dst[i] = src[i] for i < n, 0 for n <= i < total (a
//     chunk's scalars into its buffer as a kernel, not a copy-engine copy or
//     memset: those queue behind another stream's uploads)
//   prover_gather_rows: dst[j] = src[idx[j]] for j < count, rows of any
//     multiple of 16 bytes (a streamed chunk's few points and scalars whose
//     scalars are neither 0 nor 1, kept past the chunk for one MSM later)
//
// Host wrapper: crates/cuzk-cuda/src/gather.rs (the only caller).
#include <cstdint>

namespace cuzk_gather {

/// Word `w` of the bitmap with the bits at positions >= n cleared.
__device__ __forceinline__ uint64_t masked_word(const uint64_t* words, uint32_t w, uint32_t n) {
    uint64_t word = words[w];
    const uint64_t first = uint64_t(w) * 64;
    if (first + 64 > n) {
        const uint32_t keep = n > first ? uint32_t(n - first) : 0;
        word = keep == 0 ? 0 : (word & (~0ull >> (64 - keep)));
    }
    return word;
}

}  // namespace cuzk_gather

extern "C" __global__ void prover_word_popcounts(const uint64_t* __restrict__ words,
                                                 uint32_t nwords, uint32_t n,
                                                 uint32_t* __restrict__ counts) {
    for (uint32_t w = blockIdx.x * blockDim.x + threadIdx.x; w < nwords;
         w += gridDim.x * blockDim.x) {
        counts[w] = __popcll(cuzk_gather::masked_word(words, w, n));
    }
}

// One warp per bitmap word: lane l moves the values of bits l and l + 32.
// Values are 32-byte field elements moved as two 16-byte halves.
extern "C" __global__ void prover_gather_set_bits(const uint4* __restrict__ values,
                                                  const uint64_t* __restrict__ words,
                                                  uint32_t nwords, uint32_t n,
                                                  const uint32_t* __restrict__ offsets,
                                                  uint4* __restrict__ out) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warps = (gridDim.x * blockDim.x) >> 5;
    for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < nwords; w += warps) {
        const uint64_t word = cuzk_gather::masked_word(words, w, n);
        if (word == 0) continue;
        const uint32_t base = offsets[w];
#pragma unroll
        for (uint32_t half = 0; half < 2; ++half) {
            const uint32_t bit = lane + 32 * half;
            if ((word >> bit) & 1) {
                const uint32_t rank = __popcll(word & ((1ull << bit) - 1));
                const uint64_t src = (uint64_t(w) * 64 + bit) * 2;
                const uint64_t dst = uint64_t(base + rank) * 2;
                out[dst] = values[src];
                out[dst + 1] = values[src + 1];
            }
        }
    }
}

// One warp per bitmap word of [w0, w1]: set bits whose rank (offsets[w] plus
// the set bits below them in the word) lies in [r0, r1) move to out[rank - r0].
extern "C" __global__ void prover_gather_ranks(const uint4* __restrict__ values,
                                               const uint64_t* __restrict__ words,
                                               uint32_t w0, uint32_t w1, uint32_t n,
                                               const uint32_t* __restrict__ offsets,
                                               uint32_t r0, uint32_t r1,
                                               uint4* __restrict__ out) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warps = (gridDim.x * blockDim.x) >> 5;
    for (uint32_t w = w0 + ((blockIdx.x * blockDim.x + threadIdx.x) >> 5); w <= w1; w += warps) {
        const uint64_t word = cuzk_gather::masked_word(words, w, n);
        if (word == 0) continue;
        const uint32_t base = offsets[w];
#pragma unroll
        for (uint32_t half = 0; half < 2; ++half) {
            const uint32_t bit = lane + 32 * half;
            if ((word >> bit) & 1) {
                const uint32_t rank = base + __popcll(word & ((1ull << bit) - 1));
                if (rank >= r0 && rank < r1) {
                    const uint64_t src = (uint64_t(w) * 64 + bit) * 2;
                    const uint64_t dst = uint64_t(rank - r0) * 2;
                    out[dst] = values[src];
                    out[dst + 1] = values[src + 1];
                }
            }
        }
    }
}

// dst[i] = i < n ? src[i] : 0 for i < total; values are 32 bytes (two uint4).
extern "C" __global__ void prover_copy_pad(const uint4* __restrict__ src, uint32_t n,
                                           uint4* __restrict__ dst, uint32_t total) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
        if (i < n) {
            lo = src[uint64_t(i) * 2];
            hi = src[uint64_t(i) * 2 + 1];
        }
        dst[uint64_t(i) * 2] = lo;
        dst[uint64_t(i) * 2 + 1] = hi;
    }
}

// dst[j] = src[idx[j]] for j < count, each row `row` 16-byte words (a G1
// point 6, a G2 point 12, a scalar 2); an index >= src_len gives a row of
// zeros. Consecutive threads move consecutive words of a row.
extern "C" __global__ void prover_gather_rows(const uint4* __restrict__ src, uint32_t src_len,
                                              uint32_t row, const uint32_t* __restrict__ idx,
                                              uint32_t count, uint4* __restrict__ dst) {
    const uint64_t total = uint64_t(count) * row;
    const uint64_t step = uint64_t(gridDim.x) * blockDim.x;
    for (uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
        const uint64_t j = t / row;
        const uint32_t i = idx[j];
        dst[t] = i < src_len ? src[uint64_t(i) * row + (t - j * row)] : make_uint4(0, 0, 0, 0);
    }
}
