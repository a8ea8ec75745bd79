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
// One thread per value (grid-stride): a warp reads one code word and writes
// 32 consecutive values. Host wrapper: crates/cuzk-cuda/src/packed.rs (the
// only caller).
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
