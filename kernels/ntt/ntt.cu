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
// Sizes up to 2^10 take one pass with nothing to reverse. Three-pass plans
// (a, m, a) can skip that extra pass over memory: the middle pass writes
// column (k_1, j_3)'s outputs to column (j_3, k_1) (SwapCols), and the last
// pass then runs along the top digit like the first, writing each X[k] at k
// (and scaling it there).
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
    F_SCALE_N = 8,    // multiply outputs by n⁻¹ (last pass of an inverse)
    F_COSET_OUT = 16, // multiply output at natural position j by g^(−j) (last pass of an inverse)
    F_FUSE_EDGES = 32, // first two and last DIF levels in registers on the way in and out
    F_STREAM = 64,     // read and write the vector with the evict-first hint
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

// The vector's loads and stores with the evict-first hint (ld/st.global.cs):
// a pass touches each element once, and 4 GiB goes through L2 per pass, so
// the vector should not push the twiddle tables out of it.
__device__ __forceinline__ fr_t load_stream(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 a = __ldcs(q), b = __ldcs(q + 1);
    fr_t x;
    x.l[0] = a.x, x.l[1] = a.y, x.l[2] = a.z, x.l[3] = a.w;
    x.l[4] = b.x, x.l[5] = b.y, x.l[6] = b.z, x.l[7] = b.w;
    return x;
}
__device__ __forceinline__ void store_stream(fr_t* p, const fr_t& x) {
    uint4* q = reinterpret_cast<uint4*>(p);
    __stcs(q, make_uint4(x.l[0], x.l[1], x.l[2], x.l[3]));
    __stcs(q + 1, make_uint4(x.l[4], x.l[5], x.l[6], x.l[7]));
}

__device__ __forceinline__ uint32_t bit_reverse(uint32_t x, uint32_t bits) {
    return bits ? __brev(x) >> (32 - bits) : 0;
}

// Where a pass's columns live: column c (0 ≤ c < 2^log_c) of this block,
// row r. `in` is where row r is read, `out` where output row k is written,
// `twiddle_col` the J of the four-step twiddle ω_m^(J·k).
//
// The plain pass: column id = prefix·S + J (S = 2^log_s), rows at stride S,
// written back where they were read.
struct PlainCols {
    uint32_t b, log_s, col_base;
    __device__ __forceinline__ uint32_t in(uint32_t c, uint32_t r) const {
        uint32_t col = col_base + c;
        return ((col >> log_s) << (log_s + b)) + (r << log_s) + (col & ((1u << log_s) - 1));
    }
    __device__ __forceinline__ uint32_t out(uint32_t c, uint32_t k) const { return in(c, k); }
    __device__ __forceinline__ uint32_t twiddle_col(uint32_t c) const {
        return (col_base + c) & ((1u << log_s) - 1);
    }
};

// The middle pass of a three-pass plan (a, m, a) that also undoes the digit
// reversal. Position = d1·2^(m+a) + d2·2^a + d3; the pass transforms along d2
// the column (x, y) = (d1, d3) = (k_1, j_3) and writes its output k_2 to
// column (y, x): afterwards position (j_3, k_2, k_1) holds what the plain
// pass would have left at (k_1, k_2, j_3), so the last pass (along d1, as
// the first) writes X[k_1 + 2^a·k_2 + 2^(a+m)·k_3] at its natural position.
// In place, so a block's columns must be closed under (x, y) → (y, x). The
// (x, y) plane is cut into 2×2 cells (X, Y) = (x/2, y/2); unit u = X·2^(a−1)
// + Y stands for: for X < Y the four columns (2X, 2Y + q) and their mirrors
// (2Y + q, 2X); for X > Y the four columns (2Y + 1, 2X + q) and mirrors
// (2X + q, 2Y + 1); for X = Y the whole diagonal cell. That covers each
// column once. A block takes 2^g_log consecutive units (same X), C = 4·2^g_log
// columns; local column c = h·2^(g_log+1) + 2·unit + q, h = 0 the unit's
// first two columns (consecutive y across the block's units when X < Y),
// h = 1 their mirrors.
struct SwapCols {
    uint32_t b, a, g_log, unit_base;
    __device__ __forceinline__ void xy(uint32_t c, uint32_t& x, uint32_t& y) const {
        uint32_t h = c >> (g_log + 1);
        uint32_t q = c & 1;
        uint32_t u = unit_base + ((c & ((2u << g_log) - 1)) >> 1);
        uint32_t X = u >> (a - 1), Y = u & ((1u << (a - 1)) - 1);
        if (X == Y) {
            x = 2 * X + h;
            y = 2 * X + q;
            return;
        }
        uint32_t lo = X < Y ? X : Y, hi = X < Y ? Y : X, p = X < Y ? 0 : 1;
        uint32_t u0 = 2 * lo + p, u1 = 2 * hi + q;
        x = h ? u1 : u0;
        y = h ? u0 : u1;
    }
    __device__ __forceinline__ uint32_t in(uint32_t c, uint32_t r) const {
        uint32_t x, y;
        xy(c, x, y);
        return (x << (b + a)) + (r << a) + y;
    }
    __device__ __forceinline__ uint32_t out(uint32_t c, uint32_t k) const {
        uint32_t x, y;
        xy(c, x, y);
        return (y << (b + a)) + (k << a) + x;
    }
    __device__ __forceinline__ uint32_t twiddle_col(uint32_t c) const {
        uint32_t x, y;
        xy(c, x, y);
        return y;  // j_3 of the logical column (k_1, j_3)
    }
};

// Two DIF levels l, l + 1 on x0..x3 at in-column indices i0 + {0, 1, 2, 3}·quarter
// (quarter = h/2, h = 2^(b−1−l) the half-size of level l; k = i0 mod quarter);
// outputs in place. `w(e)` is ω_(2^b)^e.
template <class W>
__device__ __forceinline__ void radix4(fr_t& x0, fr_t& x1, fr_t& x2, fr_t& x3, uint32_t k,
                                       uint32_t quarter, uint32_t l, const W& w) {
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
    x0 = y0 + y1;
    x2 = y2 + y3;
    if (ec) {
        fr_t wc = w(ec);
        z1 = z1 * wc;
        z3 = z3 * wc;
    }
    x1 = z1;
    x3 = z3;
}

// One pass (see the file comment). The block handles 2^log_c columns (where:
// `cols`) of 2^b elements each: a tile of 2^(log_c + b) elements in dynamic
// shared memory (sized by the host). Threads walk the tile 2^cw_log columns
// fastest, then rows, so that consecutive threads touch consecutive
// addresses. With F_FUSE_EDGES (and b ≥ 3) the first two DIF levels are
// done on the values as they are loaded and the last one (two when b is
// even) as they are stored: two fewer trips through shared memory and two
// fewer barriers.
template <class Cols>
__device__ __forceinline__ void pass(fr_t* __restrict__ data, const Cols& cols, uint32_t b,
                                     uint32_t log_s, uint32_t log_c, uint32_t cw_log,
                                     uint32_t flags, const fr_t& n_inv, const Tables& t) {
    extern __shared__ uint4 smem_raw[];
    fr_t* s = reinterpret_cast<fr_t*>(smem_raw);
    const uint32_t C = 1u << log_c;
    const uint32_t cw = 1u << cw_log;
    const bool inverse = flags & F_INVERSE;
    const bool fuse = (flags & F_FUSE_EDGES) && b >= 3;
    const uint32_t blk_mask = (1u << BLK_LOG) - 1;

    // Thread index → (row r < 2^rows_log, local column c).
    auto split = [&](uint32_t idx, uint32_t rows_log, uint32_t& r, uint32_t& c) {
        uint32_t jlo = idx & (cw - 1);
        uint32_t rest = idx >> cw_log;
        r = rest & ((1u << rows_log) - 1);
        c = ((rest >> rows_log) << cw_log) + jlo;
    };
    auto at = [&](uint32_t r, uint32_t c) -> fr_t& { return s[(r << log_c) + c]; };
    // ω_(2^b)^e from the ω10 table (inverse: ω^(−e)).
    auto w = [&](uint32_t e) -> fr_t {
        e <<= BLK_LOG - b;
        if (inverse) e = (0u - e) & blk_mask;
        return t.w_blk[e];
    };
    auto load = [&](uint32_t c, uint32_t r) -> fr_t {
        uint32_t pos = cols.in(c, r);
        fr_t x = (flags & F_STREAM) ? load_stream(data + pos) : data[pos];
        if (flags & F_COSET_IN) x = x * coset_pow(t.g_lo, t.g_hi, pos);
        return x;
    };
    // Output k of column c: four-step twiddle, scaling, write.
    auto store = [&](fr_t x, uint32_t c, uint32_t k) {
        if (flags & F_TWIDDLE) {
            uint32_t J = cols.twiddle_col(c);
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
        uint32_t pos = cols.out(c, k);
        if (flags & F_SCALE_N) x = x * n_inv;
        if (flags & F_COSET_OUT) x = x * coset_pow(t.gi_lo, t.gi_hi, pos);
        if (flags & F_STREAM)
            store_stream(data + pos, x);
        else
            data[pos] = x;
    };

    uint32_t l = 0, l_end = b;
    if (fuse) {
        // Levels 0 and 1 on the way in: rows k + {0, 1, 2, 3}·2^(b−2).
        const uint32_t Q = 1u << (b - 2);
        for (uint32_t idx = threadIdx.x; idx < (C << (b - 2)); idx += blockDim.x) {
            uint32_t k, c;
            split(idx, b - 2, k, c);
            fr_t x0 = load(c, k), x1 = load(c, k + Q), x2 = load(c, k + 2 * Q),
                 x3 = load(c, k + 3 * Q);
            radix4(x0, x1, x2, x3, k, Q, 0, w);
            at(k, c) = x0;
            at(k + Q, c) = x1;
            at(k + 2 * Q, c) = x2;
            at(k + 3 * Q, c) = x3;
        }
        l = 2;
        l_end = (b & 1) ? b - 1 : b - 2;
    } else {
        for (uint32_t idx = threadIdx.x; idx < (C << b); idx += blockDim.x) {
            uint32_t r, c;
            split(idx, b, r, c);
            at(r, c) = load(c, r);
        }
    }
    __syncthreads();

    // Decimation in frequency over each column (natural in, bit-reversed
    // out), two levels per step: each thread takes 4 elements i, i + h/2,
    // i + h, i + 3h/2 through levels l (half-size h) and l + 1. Column
    // fastest, then the 2^l groups of 2h, then k = i mod h/2: k is the same
    // across a warp once there are ≥ 32/C groups, so the warps with k = 0
    // skip three of their four products instead of idling through them
    // beside lanes with k ≠ 0 (half the quads when h = 4, an eighth when h = 16).
    for (; l + 1 < l_end; l += 2) {
        const uint32_t hlog = b - 1 - l;  // h = 2^hlog ≥ 2
        const uint32_t quarter = 1u << (hlog - 1);
        for (uint32_t qa = threadIdx.x; qa < (C << (b - 2)); qa += blockDim.x) {
            uint32_t c = qa & (C - 1);
            uint32_t rest = qa >> log_c;
            uint32_t group = rest & ((1u << l) - 1);
            uint32_t k = rest >> l;
            uint32_t i0 = (group << (hlog + 1)) + k;
            fr_t& p0 = at(i0, c);
            fr_t& p1 = at(i0 + quarter, c);
            fr_t& p2 = at(i0 + 2 * quarter, c);
            fr_t& p3 = at(i0 + 3 * quarter, c);
            fr_t x0 = p0, x1 = p1, x2 = p2, x3 = p3;
            radix4(x0, x1, x2, x3, k, quarter, l, w);
            p0 = x0;
            p1 = x1;
            p2 = x2;
            p3 = x3;
        }
        __syncthreads();
    }
    if (l < l_end) {  // one radix-2 level left (the last, h = 1: twiddle 1)
        for (uint32_t qa = threadIdx.x; qa < (C << (b - 1)); qa += blockDim.x) {
            uint32_t c = qa & (C - 1);
            uint32_t q = qa >> log_c;
            fr_t& pa = at(2 * q, c);
            fr_t& pb = at(2 * q + 1, c);
            fr_t x = pa, y = pb;
            pa = x + y;
            pb = x - y;
        }
        __syncthreads();
    }

    if (!fuse) {
        for (uint32_t idx = threadIdx.x; idx < (C << b); idx += blockDim.x) {
            uint32_t k, c;
            split(idx, b, k, c);
            store(at(bit_reverse(k, b), c), c, k);
        }
    } else if (b & 1) {
        // The last level (h = 1, no twiddle) on the way out: in-column
        // indices r = bitrev(k) and r + 1 hold outputs k and k + 2^(b−1).
        const uint32_t H = 1u << (b - 1);
        for (uint32_t idx = threadIdx.x; idx < (C << (b - 1)); idx += blockDim.x) {
            uint32_t k, c;
            split(idx, b - 1, k, c);
            uint32_t r = bit_reverse(k, b);
            fr_t x = at(r, c), y = at(r + 1, c);
            store(x + y, c, k);
            store(x - y, c, k + H);
        }
    } else {
        // The last two levels (quarter = 1) on the way out: in-column indices
        // r + {0, 1, 2, 3} (r = bitrev(k)) hold outputs k + {0, 2, 1, 3}·2^(b−2).
        const uint32_t Q = 1u << (b - 2);
        for (uint32_t idx = threadIdx.x; idx < (C << (b - 2)); idx += blockDim.x) {
            uint32_t k, c;
            split(idx, b - 2, k, c);
            uint32_t r = bit_reverse(k, b);
            fr_t x0 = at(r, c), x1 = at(r + 1, c), x2 = at(r + 2, c), x3 = at(r + 3, c);
            radix4(x0, x1, x2, x3, 0, 1, b - 2, w);
            store(x0, c, k);
            store(x1, c, k + 2 * Q);
            store(x2, c, k + Q);
            store(x3, c, k + 3 * Q);
        }
    }
}

// The plain pass: `pass` over PlainCols.
__device__ __forceinline__ void plain_pass(fr_t* __restrict__ data, uint32_t b, uint32_t log_s,
                                           uint32_t log_c, uint32_t flags, const fr_t& n_inv,
                                           const Tables& t) {
    PlainCols cols{b, log_s, blockIdx.x << log_c};
    uint32_t cw_log = log_s < log_c ? log_s : log_c;  // contiguous run length (log)
    pass(data, cols, b, log_s, log_c, cw_log, flags, n_inv, t);
}

// The swapping middle pass: `pass` over SwapCols (a = log_s, m = b).
__device__ __forceinline__ void swap_pass(fr_t* __restrict__ data, uint32_t b, uint32_t log_s,
                                          uint32_t log_c, uint32_t flags, const fr_t& n_inv,
                                          const Tables& t) {
    uint32_t g_log = log_c - 2;
    SwapCols cols{b, log_s, g_log, blockIdx.x << g_log};
    pass(data, cols, b, log_s, log_c, log_c, flags, n_inv, t);
}

}  // namespace ntt_unit

using namespace ntt_unit;

/// One NTT pass over `data` (2^log_n elements); grid = 2^(log_n − b − log_c)
/// blocks of 256 or 512 threads, 32·2^(b + log_c) bytes of dynamic shared
/// memory. See the file comment for the parameters. `ntt_swap_pass*` is the
/// middle pass of a three-pass plan (a, b, a) with a = log_s that also undoes
/// the digit reversal (SwapCols; log_c ≥ 2, log_c − 2 ≤ a − 1).
///
/// Each comes in three register budgets, for residency: with the carry-chain
/// product the pass needs 86 registers, so only 2 blocks of 256 threads fit
/// an SM; at ≤80 registers 3 fit, at ≤64 4 (small spills, to the stack).
/// NttConfig::max_regs picks one; the benchmark sweeps them.
#define NTT_PASS_KERNEL(NAME, BOUNDS, BODY)                                                 \
    extern "C" __global__ void BOUNDS NAME(fr_t* __restrict__ data, uint32_t log_n,          \
                                           uint32_t b, uint32_t log_s, uint32_t log_c,       \
                                           uint32_t flags, fr_t n_inv, Tables tables) {      \
        (void)log_n;                                                                        \
        BODY(data, b, log_s, log_c, flags, n_inv, tables);                                  \
    }
NTT_PASS_KERNEL(ntt_pass, __launch_bounds__(MAX_THREADS), plain_pass)
NTT_PASS_KERNEL(ntt_pass_r80, __maxnreg__(80), plain_pass)
NTT_PASS_KERNEL(ntt_pass_r64, __maxnreg__(64), plain_pass)
NTT_PASS_KERNEL(ntt_swap_pass, __launch_bounds__(MAX_THREADS), swap_pass)
NTT_PASS_KERNEL(ntt_swap_pass_r80, __maxnreg__(80), swap_pass)
NTT_PASS_KERNEL(ntt_swap_pass_r64, __maxnreg__(64), swap_pass)
#undef NTT_PASS_KERNEL

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

/// The H step in two halves, for a card that cannot hold a, b and c at once
/// (the lean H polynomial: c is made only after b is freed). First
/// a[i] = a[i]·b[i] ...
extern "C" __global__ void __launch_bounds__(THREADS)
    ntt_h_mul(fr_t* __restrict__ a, const fr_t* __restrict__ b, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = a[i] * b[i];
}

/// ... then a[i] = (a[i] − c[i])·z_inv: the same field operations in the
/// same order as ntt_h_step, so the same values bit for bit.
extern "C" __global__ void __launch_bounds__(THREADS)
    ntt_h_finish(fr_t* __restrict__ a, const fr_t* __restrict__ c, fr_t z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = (a[i] - c[i]) * z_inv;
}
