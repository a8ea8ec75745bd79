// Shared pieces of the MSM kernels: the layout of a sorted bucket entry, the
// signed-digit decomposition of a scalar, and warp-level helpers.
//
// Scalars arrive as Fr in Montgomery form (the host's FrLimbs). For window w
// of width c, digit d_w ∈ [−2^(c−1), 2^(c−1)] with Σ d_w·2^(c·w) = s, found
// LSB-first with a carry: raw = bits [c·w, c·w + c) of s, d = raw + carry;
// d > 2^(c−1) becomes d − 2^c (negative, carry 1). With c·W ≥ 256 the final
// carry is 0 because s < r < 2^255.
//
// A bucket entry is one u32: the point's index in the base array with bit 31
// set when the digit is negative (so n ≤ 2^31). Bucket keys are
// w·M + (|d| − 1) with M = 2^(c−1): zero digits are not emitted.
//
// Shifted bases (precomputed copies, `window_map_t`): copy k of the bases
// holds 2^(c·S·k)·P_i at index k·stride + i, and window w = s + k·S goes to
// bucket set s with its entry pointing into copy k, so the W windows share S
// bucket sets: keys s·M + (|d| − 1). Without copies S = W (every window its
// own set, copy 0).
#pragma once
#include <cstdint>

#include "../field/fr.cuh"

namespace cuzk {
namespace msm {

constexpr uint32_t NEG_BIT = 0x80000000u;
constexpr uint32_t INDEX_MASK = 0x7fffffffu;
/// Marks "no key": a zero digit, a lane past the end, an unused partial slot.
constexpr uint32_t KEY_NONE = 0xffffffffu;
constexpr uint32_t FULL_WARP = 0xffffffffu;

/// The canonical (non-Montgomery) 256-bit value of a scalar, as 8 LE words.
struct scalar_bits_t {
    uint32_t w[8];

    __device__ __forceinline__ static scalar_bits_t load(const fr_t* scalars, uint32_t i) {
        fr_t c = scalars[i].from_mont();
        scalar_bits_t s;
#pragma unroll
        for (int k = 0; k < 8; k++) s.w[k] = c.l[k];
        return s;
    }
    __device__ __forceinline__ static scalar_bits_t zero() {
        scalar_bits_t s;
#pragma unroll
        for (int k = 0; k < 8; k++) s.w[k] = 0;
        return s;
    }
    /// The low c bits, then the whole value shifted right by c (1 ≤ c ≤ 31).
    /// Funnel shifts keep every word index a compile-time constant, so the
    /// words stay in registers.
    __device__ __forceinline__ uint32_t take_low(uint32_t c) {
        uint32_t low = w[0] & ((1u << c) - 1);
#pragma unroll
        for (int k = 0; k < 7; k++) w[k] = __funnelshift_r(w[k], w[k + 1], c);
        w[7] >>= c;
        return low;
    }
};

/// Walks the signed digits of one scalar, window by window.
struct signed_digits_t {
    scalar_bits_t bits;
    uint32_t c, half, carry;

    __device__ __forceinline__ signed_digits_t(const scalar_bits_t& b, uint32_t c_)
        : bits(b), c(c_), half(1u << (c_ - 1)), carry(0) {}

    /// Next digit as (magnitude, negative); magnitude 0 means "skip".
    __device__ __forceinline__ uint32_t next(bool& neg) {
        uint32_t d = bits.take_low(c) + carry;
        if (d > half) {
            carry = 1;
            neg = true;
            return (half << 1) - d;
        }
        carry = 0;
        neg = false;
        return d;
    }
};

/// Window → (bucket set, base copy) as the windows are walked in order (see
/// the header): `set` is w mod S, `offset` the first index of copy w / S.
struct window_map_t {
    uint32_t sets, stride, set, offset;

    __device__ __forceinline__ window_map_t(uint32_t sets_, uint32_t stride_)
        : sets(sets_), stride(stride_), set(0), offset(0) {}

    __device__ __forceinline__ void advance() {
        if (++set == sets) {
            set = 0;
            offset += stride;
        }
    }
};

__device__ __forceinline__ uint32_t lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ uint32_t lanemask_lt() {
    uint32_t m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

/// Inclusive warp scan of u32 (all 32 lanes must be present).
__device__ __forceinline__ uint32_t warp_inclusive_scan(uint32_t v) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        uint32_t o = __shfl_up_sync(FULL_WARP, v, d);
        if (lane_id() >= (uint32_t)d) v += o;
    }
    return v;
}

__device__ __forceinline__ uint32_t warp_sum(uint32_t v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(FULL_WARP, v, d);
    return v;
}

/// Exclusive scan of one value per thread across a block of up to 1024
/// threads (blockDim.x a multiple of 32). Returns the prefix and the total.
/// `shared` holds 33 words. Ends with a barrier, so `shared` may be reused.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* shared,
                                                         uint32_t& total) {
    const uint32_t warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    uint32_t incl = warp_inclusive_scan(v);
    if (lane_id() == 31) shared[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        uint32_t s = lane_id() < nwarps ? shared[lane_id()] : 0;
        uint32_t si = warp_inclusive_scan(s);
        if (lane_id() < nwarps) shared[lane_id()] = si - s;
        if (lane_id() == 31) shared[32] = si;  // lanes ≥ nwarps add 0: si is the total
    }
    __syncthreads();
    uint32_t prefix = shared[warp] + incl - v;
    total = shared[32];
    __syncthreads();
    return prefix;
}

}  // namespace msm
}  // namespace cuzk
