// The witness z expanded on the device from its packed upload (cuzk-cuda
// `packed`): most values of a bit-heavy witness are 0 or 1, so the host
// sends a 2-bit class per value and only the other values in full.
//
// One packed piece of `len` values is a u64 array (the wire format, written
// by cuzk-cuda's `pack_into`):
//   codes:  words [0, cw), cw = ceil(len / 32): value j's class in bits
//           2(j % 32) .. 2(j % 32) + 1 of word j / 32 (0 zero, 1 one,
//           2 other; 3 is never written)
//   before: cw u32 from word cw on (little-endian pairs in u64 words): the
//           number of others in all earlier code words
//   others: the other values in order, 32 bytes each, from word others_at
//           (even, so 16-byte aligned for fr_t)
//
//   prover_expand_z: out[j] = 0, the Montgomery one, or others[rank], rank =
//                    before[w] + the others below j in its word
//
// A compact vector kept on the device for reading in place (a batch
// member's aux values through a streamed key's pass: ~0.1 GB instead of
// 4.2 GB at 32 GiB) holds the same three sections as three arrays: codes,
// before (u32, counted from the vector's first value) and others.
//
//   prover_expand_span: out[i] = value start + i for i < n, 0 for n <= i <
//                       total (a chunk of L's scalars, padded)
//   prover_gather_ranks_compact: prover_gather_ranks (gather.cu) reading
//                       each value from a compact vector (a chunk of A's or
//                       B's scalars)
//
// One thread per value (grid-stride): a warp reads one code word and writes
// 32 consecutive values. Host wrappers: crates/cuzk-cuda/src/packed.rs
// (expand_z, expand_span) and gather.rs (gather_ranks_compact).
#include <cstdint>

#include "../field/fr.cuh"

using cuzk::fr_t;

extern "C" __global__ void prover_expand_z(const uint64_t* __restrict__ packed, uint32_t len,
                                           uint32_t others_at, uint32_t others,
                                           fr_t* __restrict__ out) {
    const uint32_t* __restrict__ before =
        reinterpret_cast<const uint32_t*>(packed + (len + 31) / 32);
    const fr_t* __restrict__ full = reinterpret_cast<const fr_t*>(packed + others_at);
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < len;
         j += gridDim.x * blockDim.x) {
        const uint32_t w = j >> 5, shift = 2 * (j & 31);
        const uint64_t word = packed[w];
        const uint32_t code = uint32_t(word >> shift) & 3;
        fr_t v = fr_t::zero();
        if (code == 1) {
            v = fr_t::one();
        } else if (code >= 2) {
            // The high bit of a 2-bit class marks an other value.
            const uint64_t other_bits = (word >> 1) & 0x5555555555555555ull;
            const uint32_t rank =
                before[w] + __popcll(other_bits & ((1ull << shift) - 1));
            // A rank past the others (a malformed piece) reads nothing.
            if (rank < others) v = full[rank];
        }
        out[j] = v;
    }
}

namespace cuzk_compact {

/// Value j of a compact vector: its class from the code word, an other
/// from `others` by its rank (the others of earlier words, then those
/// below j in its word); a rank past `nothers` reads zero.
__device__ __forceinline__ fr_t value(const uint64_t* __restrict__ codes,
                                      const uint32_t* __restrict__ before,
                                      const fr_t* __restrict__ others, uint32_t nothers,
                                      uint32_t j) {
    const uint32_t w = j >> 5, shift = 2 * (j & 31);
    const uint64_t word = codes[w];
    const uint32_t code = uint32_t(word >> shift) & 3;
    if (code == 0) return fr_t::zero();
    if (code == 1) return fr_t::one();
    const uint64_t other_bits = (word >> 1) & 0x5555555555555555ull;
    const uint32_t rank = before[w] + __popcll(other_bits & ((1ull << shift) - 1));
    return rank < nothers ? others[rank] : fr_t::zero();
}

}  // namespace cuzk_compact

extern "C" __global__ void prover_expand_span(const uint64_t* __restrict__ codes,
                                              const uint32_t* __restrict__ before,
                                              const fr_t* __restrict__ others, uint32_t nothers,
                                              uint32_t start, uint32_t n,
                                              fr_t* __restrict__ out, uint32_t total) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        out[i] = i < n ? cuzk_compact::value(codes, before, others, nothers, start + i)
                       : fr_t::zero();
    }
}

// One warp per bitmap word of [w0, w1], as prover_gather_ranks: set bits
// whose rank lies in [r0, r1) take value 64 w + bit of the compact vector.
extern "C" __global__ void prover_gather_ranks_compact(
    const uint64_t* __restrict__ codes, const uint32_t* __restrict__ before,
    const fr_t* __restrict__ others, uint32_t nothers, const uint64_t* __restrict__ words,
    uint32_t w0, uint32_t w1, uint32_t n, const uint32_t* __restrict__ offsets, uint32_t r0,
    uint32_t r1, fr_t* __restrict__ out) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warps = (gridDim.x * blockDim.x) >> 5;
    for (uint32_t w = w0 + ((blockIdx.x * blockDim.x + threadIdx.x) >> 5); w <= w1; w += warps) {
        uint64_t word = words[w];
        const uint64_t first = uint64_t(w) * 64;
        if (first + 64 > n) {
            const uint32_t keep = n > first ? uint32_t(n - first) : 0;
            word = keep == 0 ? 0 : (word & (~0ull >> (64 - keep)));
        }
        if (word == 0) continue;
        const uint32_t base = offsets[w];
#pragma unroll
        for (uint32_t half = 0; half < 2; ++half) {
            const uint32_t bit = lane + 32 * half;
            if ((word >> bit) & 1) {
                const uint32_t rank = base + __popcll(word & ((1ull << bit) - 1));
                if (rank >= r0 && rank < r1) {
                    out[rank - r0] =
                        cuzk_compact::value(codes, before, others, nothers, w * 64 + bit);
                }
            }
        }
    }
}
