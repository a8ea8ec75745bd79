// Number-theoretic transforms over Fr, sizes 2^1 … 2^28, natural order in
// and out, in place, with the conventions of bellperson's EvaluationDomain:
//
//   forward        X[k] = Σ_j x[j]·ω^(jk),           ω = ω_n = ROOT^(2^(32−log n))
//   inverse        x[j] = n⁻¹ Σ_k X[k]·ω^(−jk)
//   coset forward  X[k] = Σ_j (x[j]·g^j)·ω^(jk),      g = 7 (Fr's multiplicative generator)
//   coset inverse  x[j] = g^(−j)·n⁻¹ Σ_k X[k]·ω^(−jk)
//
// Algorithm (a recursive four-step, done in place). Split log n into pass
// sizes b_1 … b_P (each ≤ 10) that read the same forwards and backwards
// (e.g. 9,9,9 for 2^27). Index j = (j_1, …, j_P) in mixed radix, j_1 most
// significant. Pass p takes, for every fixed prefix (k_1 … k_(p−1)) and
// suffix J = (j_(p+1) … j_P), the 2^(b_p) elements along digit p (stride
// S_p = 2^(b_(p+1) + … + b_P)), does a size-2^(b_p) DFT on them in shared
// memory, multiplies output k_p by the four-step twiddle ω_m^(J·k_p) (m =
// 2^(b_p) · S_p, the size of the sub-transform this pass belongs to), and
// writes it back where digit p was. After P passes position (k_1 … k_P)
// holds X[k_1 + 2^(b_1) k_2 + …]: the digit-reversal of the natural order,
// an involution because the sizes are a palindrome, so one more in-place
// pass swaps pairs (and applies the inverse's n⁻¹ and g^(−j) scaling).
// Sizes up to 2^10 take one pass with nothing to reverse.
//
// Twiddles are universal, not per size: every root used is a power of
// ω_(2^28), looked up as w_lo[e mod 2^14] · w_hi[e / 2^14] (or directly in
// w_mid, the powers of ω_(2^20), when the sub-transform has ≤ 2^20 points),
// and the roots inside a pass are powers of ω_(2^10) (w_blk). Coset powers g^j come from
// the same two-level scheme. The host fills these tables once per device.
#include "../field/fr.cuh"

namespace ntt_unit {

using cuzk::fr_t;

constexpr uint32_t MAX_LOG = 28;   // largest supported log n
constexpr uint32_t HALF_LOG = 14;  // two-level tables: 2^14 entries each
constexpr uint32_t BLK_LOG = 10;   // largest pass: 2^10 elements per column
constexpr uint32_t MID_LOG = 20;   // sub-transforms up to 2^20 take their twiddle from w_mid
constexpr uint32_t MAX_THREADS = 512;  // the pass kernel runs 256 or 512 threads
constexpr uint32_t THREADS = 256;      // the other kernels

// Device pointers to the twiddle tables (filled by the host, see ntt.rs).
struct Tables {
    const fr_t* w_lo;   // ω28^i,           i < 2^14   (ω28 = primitive 2^28-th root)
    const fr_t* w_hi;   // ω28^(i·2^14),    i < 2^14
    const fr_t* w_blk;  // ω10^i,           i < 2^10   (ω10 = ω28^(2^18))
    const fr_t* g_lo;   // g^i,             i < 2^14
    const fr_t* g_hi;   // g^(i·2^14),      i < 2^14
    const fr_t* gi_lo;  // g^(−i),          i < 2^14
    const fr_t* gi_hi;  // g^(−i·2^14),     i < 2^14
    const fr_t* w_mid;  // ω20^i,           i < 2^20   (ω20 = ω28^(2^8)): one lookup, no product
};

// Flags of one pass.
enum : uint32_t {
    F_INVERSE = 1,    // use ω⁻¹
    F_COSET_IN = 2,   // multiply input at natural position j by g^j (first pass)
    F_TWIDDLE = 4,    // multiply outputs by the four-step twiddle (all but the last pass)
    F_SCALE_N = 8,    // multiply outputs by n⁻¹ (single-pass inverse)
    F_COSET_OUT = 16, // multiply output at natural position j by g^(−j) (single-pass coset inverse)
};

// ω28^e for 0 ≤ e < 2^28.
__device__ __forceinline__ fr_t root_pow(const Tables& t, uint32_t e) {
    fr_t lo = t.w_lo[e & ((1u << HALF_LOG) - 1)];
    uint32_t hi = e >> HALF_LOG;
    return hi ? lo * t.w_hi[hi] : lo;
}

// g^j (or g^(−j)) for 0 ≤ j < 2^28.
__device__ __forceinline__ fr_t coset_pow(const fr_t* lo_tab, const fr_t* hi_tab, uint32_t j) {
    fr_t lo = lo_tab[j & ((1u << HALF_LOG) - 1)];
    uint32_t hi = j >> HALF_LOG;
    return hi ? lo * hi_tab[hi] : lo;
}

__device__ __forceinline__ uint32_t bit_reverse(uint32_t x, uint32_t bits) {
    return bits ? __brev(x) >> (32 - bits) : 0;
}

// One pass (see the file comment). The block handles 2^log_c consecutive
// columns (column id = prefix·S + J) of 2^b elements each: a tile of
// 2^(log_c + b) elements in dynamic shared memory (sized by the host).
__device__ __forceinline__ void pass(fr_t* __restrict__ data, uint32_t b, uint32_t log_s,
                                     uint32_t log_c, uint32_t flags, const fr_t& n_inv,
                                     const Tables& t) {
    extern __shared__ uint4 smem_raw[];
    fr_t* s = reinterpret_cast<fr_t*>(smem_raw);
    const uint32_t C = 1u << log_c;
    const uint32_t S = 1u << log_s;
    const uint32_t tile = C << b;
    const uint32_t cw_log = log_s < log_c ? log_s : log_c;  // contiguous run length (log)
    const uint32_t cw = 1u << cw_log;
    const uint32_t col_base = blockIdx.x << log_c;
    const bool inverse = flags & F_INVERSE;
    const uint32_t blk_mask = (1u << BLK_LOG) - 1;

    // Global position of (column id, row).
    auto position = [&](uint32_t col, uint32_t row) -> uint32_t {
        return ((col >> log_s) << (log_s + b)) + (row << log_s) + (col & (S - 1));
    };
    // Map a tile index to (row, local column) so that consecutive threads
    // touch consecutive addresses.
    auto split = [&](uint32_t idx, uint32_t& row, uint32_t& col_local) {
        uint32_t jlo = idx & (cw - 1);
        uint32_t rest = idx >> cw_log;
        row = rest & ((1u << b) - 1);
        col_local = ((rest >> b) << cw_log) + jlo;
    };
    // ω_(2^b)^e from the ω10 table (inverse: ω^(−e)).
    auto w = [&](uint32_t e) -> fr_t {
        e <<= BLK_LOG - b;
        if (inverse) e = (0u - e) & blk_mask;
        return t.w_blk[e];
    };

    for (uint32_t idx = threadIdx.x; idx < tile; idx += blockDim.x) {
        uint32_t row, col_local;
        split(idx, row, col_local);
        uint32_t pos = position(col_base + col_local, row);
        fr_t x = data[pos];
        if (flags & F_COSET_IN) x = x * coset_pow(t.g_lo, t.g_hi, pos);
        s[(row << log_c) + col_local] = x;
    }
    __syncthreads();

    // Decimation in frequency over each column (natural in, bit-reversed
    // out), two levels per step where possible: each thread takes 4 elements
    // i, i + h/2, i + h, i + 3h/2 through levels l (half-size h) and l + 1.
    uint32_t l = 0;
    for (; l + 1 < b; l += 2) {
        const uint32_t hlog = b - 1 - l;  // h = 2^hlog ≥ 2
        const uint32_t quads = C << (b - 2);
        for (uint32_t qa = threadIdx.x; qa < quads; qa += blockDim.x) {
            uint32_t col = qa & (C - 1);
            uint32_t q = qa >> log_c;
            uint32_t k = q & ((1u << (hlog - 1)) - 1);
            uint32_t i0 = ((q >> (hlog - 1)) << (hlog + 1)) + k;
            uint32_t quarter = 1u << (hlog - 1);
            fr_t* p0 = &s[(i0 << log_c) + col];
            fr_t* p1 = &s[((i0 + quarter) << log_c) + col];
            fr_t* p2 = &s[((i0 + 2 * quarter) << log_c) + col];
            fr_t* p3 = &s[((i0 + 3 * quarter) << log_c) + col];
            fr_t x0 = *p0, x1 = *p1, x2 = *p2, x3 = *p3;
            // Level l: (x0, x2) and (x1, x3), twiddles ω_(2h)^(i mod h).
            uint32_t ea = k << l;
            uint32_t eb = (k + quarter) << l;
            fr_t y0 = x0 + x2, y2 = x0 - x2;
            fr_t y1 = x1 + x3, y3 = x1 - x3;
            if (ea) y2 = y2 * w(ea);
            y3 = y3 * w(eb);
            // Level l + 1: (y0, y1) and (y2, y3), twiddle ω_h^(i mod h/2).
            uint32_t ec = k << (l + 1);
            fr_t z1 = y0 - y1, z3 = y2 - y3;
            *p0 = y0 + y1;
            *p2 = y2 + y3;
            if (ec) {
                fr_t wc = w(ec);
                z1 = z1 * wc;
                z3 = z3 * wc;
            }
            *p1 = z1;
            *p3 = z3;
        }
        __syncthreads();
    }
    if (l < b) {  // one radix-2 level left (the last, h = 1: twiddle 1)
        const uint32_t butterflies = C << (b - 1);
        for (uint32_t qa = threadIdx.x; qa < butterflies; qa += blockDim.x) {
            uint32_t col = qa & (C - 1);
            uint32_t q = qa >> log_c;
            fr_t* pa = &s[((2 * q) << log_c) + col];
            fr_t* pb = &s[((2 * q + 1) << log_c) + col];
            fr_t x = *pa, y = *pb;
            *pa = x + y;
            *pb = x - y;
        }
        __syncthreads();
    }

    for (uint32_t idx = threadIdx.x; idx < tile; idx += blockDim.x) {
        uint32_t k, col_local;
        split(idx, k, col_local);
        uint32_t col = col_base + col_local;
        uint32_t pos = position(col, k);
        fr_t x = s[(bit_reverse(k, b) << log_c) + col_local];
        if (flags & F_TWIDDLE) {
            uint32_t J = col & (S - 1);
            const uint32_t log_m = b + log_s;  // this pass's sub-transform: 2^log_m points
            if (log_m <= MID_LOG) {
                uint32_t e = (J * k) << (MID_LOG - log_m);  // ω_m = ω20^(2^(20 − log m))
                if (inverse) e = (0u - e) & ((1u << MID_LOG) - 1);
                if (e) x = x * t.w_mid[e];
            } else {
                uint32_t e = (J * k) << (MAX_LOG - log_m);  // ω_m = ω28^(2^(28 − log m))
                if (inverse) e = (0u - e) & ((1u << MAX_LOG) - 1);
                if (e) x = x * root_pow(t, e);
            }
        }
        if (flags & F_SCALE_N) x = x * n_inv;
        if (flags & F_COSET_OUT) x = x * coset_pow(t.gi_lo, t.gi_hi, pos);
        data[pos] = x;
    }
}

}  // namespace ntt_unit

using namespace ntt_unit;

/// One NTT pass over `data` (2^log_n elements); grid = 2^(log_n − b − log_c)
/// blocks of 256 or 512 threads, 32·2^(b + log_c) bytes of dynamic shared
/// memory. See the file comment for the parameters.
extern "C" __global__ void __launch_bounds__(MAX_THREADS)
    ntt_pass(fr_t* __restrict__ data, uint32_t log_n, uint32_t b, uint32_t log_s, uint32_t log_c,
             uint32_t flags, fr_t n_inv, Tables tables) {
    (void)log_n;
    pass(data, b, log_s, log_c, flags, n_inv, tables);
}

/// The same pass with fewer registers per thread, for residency: with the
/// carry-chain product the pass needs 86 registers, so only 2 blocks of 256
/// threads fit an SM; at ≤80 registers 3 fit, at ≤64 4 (small spills, to the
/// stack). NttConfig::max_regs picks one; the benchmark sweeps them.
extern "C" __global__ void __maxnreg__(80)
    ntt_pass_r80(fr_t* __restrict__ data, uint32_t log_n, uint32_t b, uint32_t log_s,
                 uint32_t log_c, uint32_t flags, fr_t n_inv, Tables tables) {
    (void)log_n;
    pass(data, b, log_s, log_c, flags, n_inv, tables);
}
extern "C" __global__ void __maxnreg__(64)
    ntt_pass_r64(fr_t* __restrict__ data, uint32_t log_n, uint32_t b, uint32_t log_s,
                 uint32_t log_c, uint32_t flags, fr_t n_inv, Tables tables) {
    (void)log_n;
    pass(data, b, log_s, log_c, flags, n_inv, tables);
}

/// Undo the digit reversal left by a multi-pass NTT whose pass sizes are
/// (b_out, b_mid, b_out) (b_mid = 0 for two passes): swap each position with
/// its digit-reverse, multiplying the value that lands at natural position j
/// by n⁻¹ (F_SCALE_N) and g^(−j) (F_COSET_OUT).
extern "C" __global__ void __launch_bounds__(THREADS)
    ntt_digit_reverse(fr_t* __restrict__ data, uint32_t log_n, uint32_t b_out, uint32_t b_mid,
                      uint32_t flags, fr_t n_inv, Tables tables) {
    uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >> log_n) return;
    const uint32_t low_mask = (1u << b_out) - 1;
    const uint32_t mid_mask = (1u << b_mid) - 1;
    uint32_t d_hi = s >> (b_out + b_mid);
    uint32_t d_mid = (s >> b_out) & mid_mask;
    uint32_t d_lo = s & low_mask;
    uint32_t r = (d_lo << (b_out + b_mid)) | (d_mid << b_out) | d_hi;
    if (r < s) return;
    auto scale = [&](fr_t x, uint32_t j) {
        if (flags & F_SCALE_N) x = x * n_inv;
        if (flags & F_COSET_OUT) x = x * coset_pow(tables.gi_lo, tables.gi_hi, j);
        return x;
    };
    fr_t x = data[s];
    if (r == s) {
        if (flags & (F_SCALE_N | F_COSET_OUT)) data[s] = scale(x, s);
        return;
    }
    fr_t y = data[r];
    data[r] = scale(x, r);
    data[s] = scale(y, s);
}

/// Tiled form of ntt_digit_reverse (same effect), for b_out ≥ 4: for each
/// middle digit (grid z) the (d_hi, d_lo) plane is a 2^b_out-square matrix
/// (row stride 2^(b_out + b_mid)) to transpose in place; block (x, y) with
/// x ≤ y swaps tile (x, y) with tile (y, x) through shared memory, so reads
/// and writes move 16 consecutive elements (512 bytes) at a time instead of
/// scattering single elements. 256 threads.
constexpr uint32_t RT = 16;  // tile side
extern "C" __global__ void __launch_bounds__(RT * RT)
    ntt_digit_reverse_tiled(fr_t* __restrict__ data, uint32_t log_n, uint32_t b_out,
                            uint32_t b_mid, uint32_t flags, fr_t n_inv, Tables tables) {
    const uint32_t ti = blockIdx.x, tj = blockIdx.y, d2 = blockIdx.z;
    if (ti > tj) return;
    __shared__ fr_t a[RT][RT + 1];  // +1: rows fall on different banks
    __shared__ fr_t b[RT][RT + 1];
    const uint32_t r = threadIdx.x / RT, c = threadIdx.x % RT;
    const uint32_t row_stride_log = b_out + b_mid;
    auto pos = [&](uint32_t d1, uint32_t d3) {
        return (d1 << row_stride_log) + (d2 << b_out) + d3;
    };
    auto scale = [&](fr_t x, uint32_t j) {
        if (flags & F_SCALE_N) x = x * n_inv;
        if (flags & F_COSET_OUT) x = x * coset_pow(tables.gi_lo, tables.gi_hi, j);
        return x;
    };
    const uint32_t pa = pos(ti * RT + r, tj * RT + c);  // tile (ti, tj)
    const uint32_t pb = pos(tj * RT + r, ti * RT + c);  // tile (tj, ti)
    a[r][c] = data[pa];
    if (ti != tj) b[r][c] = data[pb];
    __syncthreads();
    // After the reversal position (d1, d2, d3) holds what was at (d3, d2, d1);
    // each position is its own natural index, which the scaling needs.
    if (ti == tj) {
        data[pa] = scale(a[c][r], pa);
    } else {
        data[pa] = scale(b[c][r], pa);
        data[pb] = scale(a[c][r], pb);
    }
    (void)log_n;
}

/// The H step on the coset: a[i] = (a[i]·b[i] − c[i])·z_inv, where z_inv =
/// 1/(g^n − 1) is the inverse of the vanishing polynomial on the coset.
extern "C" __global__ void __launch_bounds__(THREADS)
    ntt_h_step(fr_t* __restrict__ a, const fr_t* __restrict__ b, const fr_t* __restrict__ c,
               fr_t z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = (a[i] * b[i] - c[i]) * z_inv;
}
