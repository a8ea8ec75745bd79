// Carry-chain primitives over 32-bit words, as single PTX instructions.
//
// Each helper is one `asm volatile` statement so that the compiler keeps the
// order of a chain; the carry flag (CC) links consecutive statements. Only use
// them in straight-line chains that start with a `*_cc` (flag-setting, no
// carry-in) form and never call anything else between links of a chain.
#pragma once
#include <cstdint>

namespace cuzk {
namespace ptx {

__device__ __forceinline__ uint32_t add_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t addc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t sub_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t subc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

// Multiply-add links: lo/hi halves of a·b added to c (and the carry flag for
// the `madc` forms). ptxas fuses a `lo` and `hi` pair with the same operands
// and adjacent destinations into one IMAD.WIDE.U32.X (checked with
// cuobjdump on sm_90), so a chain of them costs one instruction per 32×32
// partial product.
__device__ __forceinline__ uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
__device__ __forceinline__ uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
__device__ __forceinline__ uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
/// Sets the carry flag to (a != 0) and nothing else (a + (2^32 − 1) carries
/// out exactly when a ≥ 1); starts a chain with a carry-in.
__device__ __forceinline__ void set_carry_if_nonzero(uint32_t a) {
    uint32_t r;
    asm volatile("add.cc.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(a));
}

}  // namespace ptx
}  // namespace cuzk
