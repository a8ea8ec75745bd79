// a = A·z, b = B·z, c = C·z on the device, from a pre-compiled circuit's
// matrices (cuzk-synth `precompiled`: CSR rows over z = (inputs, aux), u32
// row offsets and columns, u16 or u32 ids into a coefficient table whose
// ids 0 and 1 are +1 and -1) and the witness z already in device memory.
//
//   prover_classify_z:  cls[j] = 0 (z_j = 0), 1 (z_j = 1) or 2 (other), one
//                       byte per column, so most terms of a bit-heavy
//                       witness read one byte instead of 32
//   prover_spmv_u16 / prover_spmv_u32:
//                       out[r] = sum over the row's terms of coeff[id] * z[col]:
//                       a zero value is skipped, a one adds the coefficient,
//                       a +-1 coefficient adds or subtracts the value, the
//                       rest multiply (Montgomery); field arithmetic is
//                       exact, so every path gives the plain product's bits
//
// One thread per row (grid-stride): PoRep rows hold ~2-3 terms, so the
// row offsets and the outputs are read and written coalesced.
// Host wrapper: crates/cuzk-cuda/src/abc.rs (the only caller).
#include <cstdint>

#include "../field/fr.cuh"

using cuzk::fr_t;

extern "C" __global__ void prover_classify_z(const fr_t* __restrict__ z, uint32_t n,
                                             uint8_t* __restrict__ cls) {
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += gridDim.x * blockDim.x) {
        const fr_t v = z[j];
        cls[j] = v.is_zero() ? 0 : (v.is_one() ? 1 : 2);
    }
}

namespace cuzk_abc {

template <typename Id>
__device__ __forceinline__ void spmv(const uint32_t* __restrict__ row_ptr,
                                     const uint32_t* __restrict__ cols,
                                     const Id* __restrict__ ids,
                                     const fr_t* __restrict__ coeffs,
                                     const fr_t* __restrict__ z,
                                     const uint8_t* __restrict__ cls, uint32_t rows,
                                     fr_t* __restrict__ out) {
    for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += gridDim.x * blockDim.x) {
        fr_t acc = fr_t::zero();
        // +1 terms on a one value, counted and added as one coefficient.
        uint32_t plus = 0, minus = 0;
        const uint32_t end = row_ptr[r + 1];
        for (uint32_t t = row_ptr[r]; t < end; ++t) {
            const uint32_t col = cols[t];
            const uint8_t k = cls[col];
            if (k == 0) continue;
            const uint32_t id = ids[t];
            if (k == 1) {
                if (id == 0) {
                    ++plus;
                } else if (id == 1) {
                    ++minus;
                } else {
                    acc += coeffs[id];
                }
                continue;
            }
            const fr_t v = z[col];
            if (id == 0) {
                acc += v;
            } else if (id == 1) {
                acc -= v;
            } else {
                acc += coeffs[id] * v;
            }
        }
        if (plus != minus) {
            // (plus - minus) * 1 as a field element, by doubling and adding.
            const bool neg = minus > plus;
            uint32_t m = neg ? minus - plus : plus - minus;
            fr_t sum = fr_t::zero(), base = fr_t::one();
            while (m) {
                if (m & 1) sum += base;
                base += base;
                m >>= 1;
            }
            acc = neg ? acc - sum : acc + sum;
        }
        out[r] = acc;
    }
}

}  // namespace cuzk_abc

extern "C" __global__ void prover_spmv_u16(const uint32_t* __restrict__ row_ptr,
                                           const uint32_t* __restrict__ cols,
                                           const uint16_t* __restrict__ ids,
                                           const fr_t* __restrict__ coeffs,
                                           const fr_t* __restrict__ z,
                                           const uint8_t* __restrict__ cls, uint32_t rows,
                                           fr_t* __restrict__ out) {
    cuzk_abc::spmv(row_ptr, cols, ids, coeffs, z, cls, rows, out);
}

extern "C" __global__ void prover_spmv_u32(const uint32_t* __restrict__ row_ptr,
                                           const uint32_t* __restrict__ cols,
                                           const uint32_t* __restrict__ ids,
                                           const fr_t* __restrict__ coeffs,
                                           const fr_t* __restrict__ z,
                                           const uint8_t* __restrict__ cls, uint32_t rows,
                                           fr_t* __restrict__ out) {
    cuzk_abc::spmv(row_ptr, cols, ids, coeffs, z, cls, rows, out);
}
