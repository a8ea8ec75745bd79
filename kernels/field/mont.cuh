// Montgomery arithmetic over a prime field, generic in the modulus.
//
// `mont_t<P>` holds P::N 32-bit limbs, little-endian, always in Montgomery
// form (R = 2^(32·N)) and always fully reduced (< p). Its bytes are exactly
// the host's little-endian u64 limbs (blst's layout), so device buffers of
// FrLimbs / FqLimbs can be reinterpreted as arrays of `fr_t` / `fq_t`.
//
// P supplies: N (limb count), INV (−p⁻¹ mod 2^32) and constexpr functions
// modulus(i), one(i) (R mod p), r2(i) (R² mod p), p_minus_2(i) (for inversion).
// The multiplication relies on p < 2^(32·N − 1) (true for Fr and Fq): the
// accumulator then never needs an (N+2)-th word.
#pragma once
#include <cstdint>

#include "mont_rr.cuh"
#include "ptx.cuh"
#include "safegcd.cuh"

namespace cuzk {

namespace mont_detail {
/// 2^32 − 1 (= −1 mod 2^32) where ptxas cannot see it: Fr's −r⁻¹ mod 2^32.
/// When ptxas knows m = −(E_0 + O_0) it splits every m·p link of
/// `mul_chain` into IMAD.X + IMAD.HI.U32.X instead of one IMAD.WIDE.U32.X
/// (sm_90, nvcc 13.0: Fr probe 1,184 SASS instructions per 4 products,
/// 984 with the factor read from constant memory).
__constant__ uint32_t opaque_minus_one = 0xffffffffu;
}  // namespace mont_detail

template <class P>
struct alignas(16) mont_t {
    static constexpr int N = P::N;
    uint32_t l[N];

    // ---- constants -------------------------------------------------------
    __device__ __forceinline__ static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = 0;
        return r;
    }
    /// 1 in Montgomery form (R mod p).
    __device__ __forceinline__ static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = P::one(i);
        return r;
    }
    /// The modulus itself (not a field element; for range checks).
    __device__ __forceinline__ static mont_t modulus() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = P::modulus(i);
        return r;
    }

    // ---- predicates ------------------------------------------------------
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= l[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool is_one() const { return *this == one(); }
    __device__ __forceinline__ friend bool operator==(const mont_t& a, const mont_t& b) {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= a.l[i] ^ b.l[i];
        return acc == 0;
    }
    __device__ __forceinline__ friend bool operator!=(const mont_t& a, const mont_t& b) {
        return !(a == b);
    }

    // ---- additive group ----------------------------------------------------
    /// a + b mod p. Inputs reduced; since p < 2^(32N−1) the sum never carries out.
    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t s, t;
        s.l[0] = ptx::add_cc(a.l[0], b.l[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) s.l[i] = ptx::addc_cc(a.l[i], b.l[i]);
        s.l[N - 1] = ptx::addc(a.l[N - 1], b.l[N - 1]);
        return s.reduce_once(t);
    }
    /// a − b mod p.
    __device__ __forceinline__ friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t d, t;
        d.l[0] = ptx::sub_cc(a.l[0], b.l[0]);
#pragma unroll
        for (int i = 1; i < N; i++) d.l[i] = ptx::subc_cc(a.l[i], b.l[i]);
        uint32_t borrow = ptx::subc(0, 0);  // 0xffffffff if a < b
        t.l[0] = ptx::add_cc(d.l[0], P::modulus(0));
#pragma unroll
        for (int i = 1; i < N - 1; i++) t.l[i] = ptx::addc_cc(d.l[i], P::modulus(i));
        t.l[N - 1] = ptx::addc(d.l[N - 1], P::modulus(N - 1));
#pragma unroll
        for (int i = 0; i < N; i++) d.l[i] = borrow ? t.l[i] : d.l[i];
        return d;
    }
    /// −a mod p (0 stays 0).
    __device__ __forceinline__ mont_t operator-() const {
        mont_t r = modulus() - *this;  // p − a ∈ [1, p] for a ∈ [0, p)
        return is_zero() ? zero() : r;
    }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }
    __device__ __forceinline__ mont_t& operator+=(const mont_t& b) { return *this = *this + b; }
    __device__ __forceinline__ mont_t& operator-=(const mont_t& b) { return *this = *this - b; }
    __device__ __forceinline__ mont_t& operator*=(const mont_t& b) { return *this = *this * b; }
    /// Conditionally negate (for signed digits): −a when `neg`, else a.
    __device__ __forceinline__ mont_t cneg(bool neg) const { return neg ? -*this : *this; }

    // ---- multiplication ----------------------------------------------------
    /// Montgomery product a·b·R⁻¹ mod p: `mul_chain`, the carry-chain form.
    /// Alternatives kept for probes and tests: `mul_cios` (the first default,
    /// 32×32→64 multiply-adds in C) and `mul_rr` (reduced radix); on the H200
    /// the chain form compiles to ~2.7× (Fq) / ~1.9× (Fr) fewer SASS
    /// instructions than `mul_cios`. CUZK_FIELD_MUL_RR (for the whole build)
    /// makes the reduced-radix one the `*` instead.
    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b) {
#ifdef CUZK_FIELD_MUL_RR
        return mul_rr(a, b);
#else
        return mul_chain(a, b);
#endif
    }
    /// The reduced-radix product (26-bit limbs in 64-bit accumulators).
    __device__ __forceinline__ static mont_t mul_rr(const mont_t& a, const mont_t& b) {
        mont_t r;
        rr::mont_mul<P>(r.l, a.l, b.l);
        return r;
    }
    /// Montgomery product (CIOS order) as PTX carry chains of `mad.lo`/`madc.hi`
    /// links, which ptxas fuses into one IMAD.WIDE.U32.X per partial product
    /// (no separate adds). A chain can only add a product's lo and hi words at
    /// adjacent positions, so the running sum T is kept as two N+2-word
    /// accumulators, T = E + O (same weights): E receives the products a_j·b_i,
    /// m·p_j with j even (words j, j+1), O those with j odd. Row i:
    ///   E += even(a·b_i); O += odd(a·b_i); m = (E_0 + O_0)·(−p⁻¹) mod 2^32;
    ///   E += even(m·p); O += odd(m·p), with carry-in (E_0 + O_0 ≥ 2^32);
    ///   T /= 2^32 (drop word 0 of both).
    /// O_0 never receives a product (odd positions start at word 1): after the
    /// m·p row E_0 + O_0 ≡ 0 mod 2^32, so it is 0 or exactly 2^32, and the
    /// carry into word 1 is (O_0 != 0), fed into O's chain as its carry-in.
    /// After the shift, O holds the words of even parity for the next row and
    /// E the odd ones, so the two arrays swap roles each row: that keeps every
    /// lo/hi pair in an aligned register pair (no moves; ptxas needs pairs for
    /// the wide multiply-add). Bounds: T < 2p (as in CIOS) and each of E, O
    /// stays below 3·2^(32(N+1)), so word N+1 never overflows. At the end
    /// T = E + O < 2p < 2^(32N): one N-word add and one conditional subtract.
    /// Modelled word by word in Python against a·b·R⁻¹ before use.
    __device__ __forceinline__ static mont_t mul_chain(const mont_t& a, const mont_t& b) {
        uint32_t x[N + 2], y[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) x[i] = y[i] = 0;
        static_assert(N % 2 == 0, "mul_chain: an even number of limbs");
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            chain_row(x, y, a.l, b.l[i]);
            chain_row(y, x, a.l, b.l[i + 1]);
        }
        return sum_reduced(x, y);
    }
    /// The word-wise CIOS product (the default `*` before `mul_chain`).
    __device__ __forceinline__ static mont_t mul_cios(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 1];
#pragma unroll
        for (int i = 0; i <= N; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            // t += a · b_i
            uint32_t carry = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                uint64_t s = (uint64_t)a.l[j] * b.l[i] + t[j] + carry;
                t[j] = (uint32_t)s;
                carry = (uint32_t)(s >> 32);
            }
            t[N] += carry;  // cannot overflow: t < 2p + 2^32·p < 2^(32(N+1))
            // t = (t + m·p) / 2^32 with m making the low word vanish
            uint32_t m = t[0] * P::INV;
            uint64_t s = (uint64_t)m * P::modulus(0) + t[0];
            carry = (uint32_t)(s >> 32);
#pragma unroll
            for (int j = 1; j < N; j++) {
                s = (uint64_t)m * P::modulus(j) + t[j] + carry;
                t[j - 1] = (uint32_t)s;
                carry = (uint32_t)(s >> 32);
            }
            s = (uint64_t)t[N] + carry;
            t[N - 1] = (uint32_t)s;
            t[N] = (uint32_t)(s >> 32);
        }
        mont_t r, tmp;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = t[i];
        return r.reduce_once(tmp);  // t < 2p here
    }
    /// a² (Montgomery): `sqr_chain`, or the product a·a when the build asks
    /// for it (CUZK_FIELD_SQR_AS_MUL: the benchmark's baseline variant, see
    /// kernels/msm/g1_sqr_variants.cu) or uses the reduced-radix product.
    __device__ __forceinline__ mont_t sqr() const {
#if defined(CUZK_FIELD_MUL_RR) || defined(CUZK_FIELD_SQR_AS_MUL)
        return *this * *this;
#else
        return sqr_chain(*this);
#endif
    }
    /// Montgomery square a²·R⁻¹ mod p in `mul_chain`'s carry-chain form,
    /// paying each cross product a_i·a_j (i < j) once instead of twice:
    /// N(N+1)/2 multiply-adds for the square instead of N², the N² of the
    /// reduction unchanged (Fq: 222 wide multiply-adds against 288).
    /// Row i adds a_i·(a_i + 2·Σ_{j>i} a_j·2^(32(j−i))) at absolute word 2i,
    /// i.e. at word i of the running sum after i reduction shifts: word j ≥ i
    /// gets a_i·v_j with v_i = a_i, v_{i+1} = a_{i+1} << 1 and, for j ≥ i + 2,
    /// v_j = word j of 2a (which fits: a < p < 2^(32N − 1)). Every product
    /// landing on absolute word i comes from a row ≤ i/2, so m of reduction
    /// row i sees a complete word, as in CIOS. E/O parity chains and the
    /// reduction rows are `mul_chain`'s; the result is T < 2p as there, one
    /// add and one conditional subtraction. Needs a reduced input. Modelled
    /// word by word in Python (every carry checked, Fq and Fr, edge values
    /// and 24,000 random ones) before use.
    __device__ __forceinline__ static mont_t sqr_chain(const mont_t& a) {
        uint32_t d[N], x[N + 2], y[N + 2];  // d[0], d[1]: never read (j ≥ i + 2 ≥ 2)
#pragma unroll
        for (int j = 2; j < N; j++) d[j] = __funnelshift_l(a.l[j - 1], a.l[j], 1);
#pragma unroll
        for (int i = 0; i < N + 2; i++) x[i] = y[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            sqr_row(x, y, a.l, d, i);
            sqr_row(y, x, a.l, d, i + 1);
        }
        return sum_reduced(x, y);
    }

    // ---- lazy reduction: double-width products -----------------------------
    /// An exact 2N-word integer, little-endian: a product before Montgomery
    /// reduction, or a difference of such products. `redc` turns one below
    /// p·R back into a field element, so Fq2's Karatsuba pays for two
    /// reductions instead of three. (Y3 = a·b − c·d in the curve formulas
    /// with one reduction measured slower on the H200: more spills; see
    /// kernels/msm/README.md, run 7.)
    struct wide_t {
        uint32_t l[2 * N];
    };

    /// a + b without the final reduction: < 2p < 2^(32N) for reduced inputs
    /// (p < 2^(32N − 1)); only for `mul_wide`'s operands.
    __device__ __forceinline__ static mont_t add_nr(const mont_t& a, const mont_t& b) {
        mont_t s;
        s.l[0] = ptx::add_cc(a.l[0], b.l[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) s.l[i] = ptx::addc_cc(a.l[i], b.l[i]);
        s.l[N - 1] = ptx::addc(a.l[N - 1], b.l[N - 1]);
        return s;
    }

    /// a·b exactly, for any a, b < 2^(32N) (reduced or `add_nr` sums).
    /// Row i adds a_j·b_i at words (i + j, i + j + 1); the products with i + j
    /// even go to accumulator x and those with i + j odd to y, so each chain
    /// writes its lo/hi pairs into adjacent words (one IMAD.WIDE.U32.X per
    /// partial product) and x, y keep one fixed pairing of their words. A
    /// chain's carry-out goes into the word above its last pair, which no
    /// earlier chain reached: it holds only such carries (≤ 2) until a later
    /// row's chain covers it, so the one-word add never overflows; the top
    /// row's carry out of word 2N − 1 is zero because x, y ≤ a·b < 2^(64N).
    /// Modelled word by word in Python (all carries checked) before use.
    __device__ __forceinline__ static wide_t mul_wide(const mont_t& a, const mont_t& b) {
        uint32_t x[2 * N], y[2 * N];
#pragma unroll
        for (int k = 0; k < 2 * N; k++) x[k] = y[k] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            wide_chain(x, a.l, b.l[i], i, i & 1);
            wide_chain(y, a.l, b.l[i], i, (i & 1) ^ 1);
        }
        wide_t w;
        w.l[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) w.l[k] = ptx::addc_cc(x[k], y[k]);
        w.l[2 * N - 1] = ptx::addc(x[2 * N - 1], y[2 * N - 1]);
        return w;
    }

    /// T·R⁻¹ mod p, reduced, for 0 ≤ T < p·R. The rows of `mul_chain`
    /// without the a·b_i part run on T's low half (E = T_lo, O = 0) and leave
    /// u = (T_lo + M·p)/R ≤ p; the high half (< p) is added afterwards, so
    /// u + T_hi < 2p needs one conditional subtraction.
    __device__ __forceinline__ static mont_t redc(const wide_t& t) {
        uint32_t x[N + 2], y[N + 2];
#pragma unroll
        for (int k = 0; k < N; k++) {
            x[k] = t.l[k];
            y[k] = 0;
        }
        x[N] = x[N + 1] = y[N] = y[N + 1] = 0;
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            redc_row(x, y);
            redc_row(y, x);
        }
        mont_t u, r, tmp;
        u.l[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
        for (int k = 1; k < N - 1; k++) u.l[k] = ptx::addc_cc(x[k], y[k]);
        u.l[N - 1] = ptx::addc(x[N - 1], y[N - 1]);
        r.l[0] = ptx::add_cc(u.l[0], t.l[N]);
#pragma unroll
        for (int k = 1; k < N - 1; k++) r.l[k] = ptx::addc_cc(u.l[k], t.l[N + k]);
        r.l[N - 1] = ptx::addc(u.l[N - 1], t.l[2 * N - 1]);
        return r.reduce_once(tmp);
    }

    /// a − b over wide values, for a ≥ b (no reduction; see `sub_wide_lazy`
    /// when a < b is possible).
    __device__ __forceinline__ static wide_t sub_wide(const wide_t& a, const wide_t& b) {
        wide_t d;
        d.l[0] = ptx::sub_cc(a.l[0], b.l[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) d.l[k] = ptx::subc_cc(a.l[k], b.l[k]);
        d.l[2 * N - 1] = ptx::subc(a.l[2 * N - 1], b.l[2 * N - 1]);
        return d;
    }
    /// a − b + p·2^S with S = bits(p) + ⌈log2 M⌉: for |a − b| < M·p² the
    /// result is in [0, p·R) (2^S ≥ M·p, and 2^S + M·p ≤ 2^(32N) = R) and
    /// congruent to a − b mod p, ready for `redc`. A constant add instead of
    /// a borrow-dependent one: no mask, no select.
    template <int M>
    __device__ __forceinline__ static wide_t sub_wide_lazy(const wide_t& a, const wide_t& b) {
        constexpr int S = p_bits() + (M == 1 ? 0 : M == 2 ? 1 : 2);
        static_assert(M >= 1 && M <= 4, "sub_wide_lazy: M in 1..4");
        static_assert(S < 32 * N, "sub_wide_lazy: no room for M·p² below p·R");
        constexpr int W = S / 32;
        wide_t d;
        d.l[0] = ptx::sub_cc(a.l[0], b.l[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) d.l[k] = ptx::subc_cc(a.l[k], b.l[k]);
        d.l[2 * N - 1] = ptx::subc(a.l[2 * N - 1], b.l[2 * N - 1]);
        d.l[W] = ptx::add_cc(d.l[W], shifted_modulus_word(S, W));
#pragma unroll
        for (int k = W + 1; k < 2 * N - 1; k++) d.l[k] = ptx::addc_cc(d.l[k], shifted_modulus_word(S, k));
        d.l[2 * N - 1] = ptx::addc(d.l[2 * N - 1], shifted_modulus_word(S, 2 * N - 1));
        return d;
    }

    // ---- conversions -------------------------------------------------------
    /// Canonical integer (limbs < p) to Montgomery form.
    __device__ __forceinline__ mont_t to_mont() const {
        mont_t r2;
#pragma unroll
        for (int i = 0; i < N; i++) r2.l[i] = P::r2(i);
        return *this * r2;
    }
    /// Montgomery form to the canonical integer.
    __device__ __forceinline__ mont_t from_mont() const {
        mont_t u = zero();
        u.l[0] = 1;
        return *this * u;
    }
    /// Small integer v as a field element (Montgomery form).
    __device__ __forceinline__ static mont_t from_u32(uint32_t v) {
        mont_t r = zero();
        r.l[0] = v;
        return r.to_mont();
    }

    // ---- exponentiation ----------------------------------------------------
    /// a^e for e given as N little-endian 32-bit words (square-and-multiply,
    /// not constant time: exponents here are public).
    template <class E>
    __device__ __forceinline__ mont_t pow_words(E word) const {
        mont_t acc = one();
        for (int i = N - 1; i >= 0; i--) {
            uint32_t w = word(i);
            for (int b = 31; b >= 0; b--) {
                acc = acc.sqr();
                if ((w >> b) & 1) acc = acc * *this;
            }
        }
        return acc;
    }
    __device__ __forceinline__ mont_t pow(uint64_t e) const {
        mont_t acc = one(), base = *this;
        while (e) {
            if (e & 1) acc = acc * base;
            base = base.sqr();
            e >>= 1;
        }
        return acc;
    }
    /// Multiplicative inverse; inv(0) = 0. Batched divsteps on the integer
    /// A = a·R (safegcd.cuh) give A⁻¹ = a⁻¹·R⁻¹; the Montgomery product with
    /// R³ = (R²)·(R²)·R⁻¹ turns that into a⁻¹·R. Variable time (inputs here
    /// are public).
    __device__ __noinline__ mont_t inv() const {
        if (is_zero()) return zero();
        mont_t r, r2c;
        safegcd::inverse<P, N>(l, r.l);
#pragma unroll
        for (int i = 0; i < N; i++) r2c.l[i] = P::r2(i);
        return r * (r2c * r2c);
    }
    /// The same inverse by Fermat (a^(p−2)): ~10× the instructions of `inv`;
    /// kept as the probe's and the tests' second opinion.
    __device__ __noinline__ mont_t inv_fermat() const {
        return pow_words([](int i) { return P::p_minus_2(i); });
    }

  private:
    /// acc[j], acc[j+1] += lo, hi of a_j·b for j ≡ PAR (mod 2), one carry
    /// chain, its carry added into acc[N + PAR]. With `carry_in` the chain
    /// starts from the carry flag as set just before.
    template <int PAR>
    __device__ __forceinline__ static void mad_parity(uint32_t* acc, const uint32_t* a, uint32_t b,
                                                      bool carry_in) {
        acc[PAR] = carry_in ? ptx::madc_lo_cc(a[PAR], b, acc[PAR]) : ptx::mad_lo_cc(a[PAR], b, acc[PAR]);
        acc[PAR + 1] = ptx::madc_hi_cc(a[PAR], b, acc[PAR + 1]);
#pragma unroll
        for (int j = PAR + 2; j < N; j += 2) {
            acc[j] = ptx::madc_lo_cc(a[j], b, acc[j]);
            acc[j + 1] = ptx::madc_hi_cc(a[j], b, acc[j + 1]);
        }
        acc[N + PAR] = ptx::addc(acc[N + PAR], 0);
    }
    /// One row of `mul_chain`: E, O as described there (a·b_i, then the
    /// reduction row); shifts both down a word.
    __device__ __forceinline__ static void chain_row(uint32_t* E, uint32_t* O, const uint32_t* a,
                                                     uint32_t bi) {
        mad_parity<0>(E, a, bi, false);
        mad_parity<1>(O, a, bi, false);
        redc_row(E, O);
    }
    /// x + y over N words, then one conditional subtraction: the end of
    /// `mul_chain` and `sqr_chain` (the sum is below 2p < 2^(32N)).
    __device__ __forceinline__ static mont_t sum_reduced(const uint32_t* x, const uint32_t* y) {
        mont_t r, tmp;
        r.l[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.l[i] = ptx::addc_cc(x[i], y[i]);
        r.l[N - 1] = ptx::addc(x[N - 1], y[N - 1]);
        return r.reduce_once(tmp);
    }
    /// The square half of `sqr_chain`'s row i on the words j ≥ i of parity
    /// PAR (one carry chain of a_i·v_j; its carry into acc[N + PAR]); empty
    /// when no such word is left (the last row has only a_{N−1}²).
    template <int PAR>
    __device__ __forceinline__ static void sqr_parity(uint32_t* acc, const uint32_t* a,
                                                      const uint32_t* d, int i) {
        const int j0 = (i & 1) == PAR ? i : i + 1;
        if (j0 >= N) return;
        const uint32_t v0 = j0 == i ? a[i] : a[i + 1] << 1;
        acc[j0] = ptx::mad_lo_cc(v0, a[i], acc[j0]);
        acc[j0 + 1] = ptx::madc_hi_cc(v0, a[i], acc[j0 + 1]);
#pragma unroll
        for (int j = j0 + 2; j < N; j += 2) {
            acc[j] = ptx::madc_lo_cc(d[j], a[i], acc[j]);
            acc[j + 1] = ptx::madc_hi_cc(d[j], a[i], acc[j + 1]);
        }
        acc[N + PAR] = ptx::addc(acc[N + PAR], 0);
    }
    /// One row of `sqr_chain`: its square half, then the reduction row.
    __device__ __forceinline__ static void sqr_row(uint32_t* E, uint32_t* O, const uint32_t* a,
                                                   const uint32_t* d, int i) {
        sqr_parity<0>(E, a, d, i);
        sqr_parity<1>(O, a, d, i);
        redc_row(E, O);
    }
    /// Bit length of p.
    __host__ __device__ static constexpr int p_bits() {
        int top = N - 1, b = 0;
        while (b < 32 && (P::modulus(top) >> b) != 0) b++;
        return 32 * top + b;
    }
    /// Word k of p·2^s (s ≥ 0; words of p beyond N − 1 are zero).
    __host__ __device__ static constexpr uint32_t shifted_modulus_word(int s, int k) {
        const int w = s / 32, b = s % 32;
        const int i = k - w;  // p's word landing at k (shifted by b bits)
        const uint32_t lo = (i >= 0 && i < N) ? P::modulus(i) << b : 0u;
        const uint32_t hi = (b != 0 && i - 1 >= 0 && i - 1 < N) ? P::modulus(i - 1) >> (32 - b) : 0u;
        return lo | hi;
    }
    /// One chain of `mul_wide`'s row i: acc[i + j], acc[i + j + 1] += lo, hi
    /// of a_j·b_i for j = j0, j0 + 2, …; the carry into the word above.
    __device__ __forceinline__ static void wide_chain(uint32_t* acc, const uint32_t* a, uint32_t bi,
                                                      int i, int j0) {
        acc[i + j0] = ptx::mad_lo_cc(a[j0], bi, acc[i + j0]);
        acc[i + j0 + 1] = ptx::madc_hi_cc(a[j0], bi, acc[i + j0 + 1]);
#pragma unroll
        for (int j = j0 + 2; j < N; j += 2) {
            acc[i + j] = ptx::madc_lo_cc(a[j], bi, acc[i + j]);
            acc[i + j + 1] = ptx::madc_hi_cc(a[j], bi, acc[i + j + 1]);
        }
        const int sink = i + j0 + ((N - 1 - j0) / 2) * 2 + 2;
        if (sink < 2 * N) acc[sink] = ptx::addc(acc[sink], 0);
    }
    /// The reduction half of a row (of `mul_chain` and of `redc`): m from
    /// E_0 + O_0, E += even(m·p), O += odd(m·p) with the carry-in trick, then
    /// both shifted down a word.
    __device__ __forceinline__ static void redc_row(uint32_t* E, uint32_t* O) {
        uint32_t p[N];
#pragma unroll
        for (int j = 0; j < N; j++) p[j] = P::modulus(j);
        const uint32_t inv = P::INV == 0xffffffffu ? mont_detail::opaque_minus_one : P::INV;
        const uint32_t m = (E[0] + O[0]) * inv;
        mad_parity<0>(E, p, m, false);
        ptx::set_carry_if_nonzero(O[0]);
        mad_parity<1>(O, p, m, true);
#pragma unroll
        for (int k = 0; k < N + 1; k++) {
            E[k] = E[k + 1];
            O[k] = O[k + 1];
        }
        E[N + 1] = 0;
        O[N + 1] = 0;
    }
    /// Returns this − p if this ≥ p, else this (this < 2p, fits in N words).
    __device__ __forceinline__ mont_t reduce_once(mont_t& t) const {
        t.l[0] = ptx::sub_cc(l[0], P::modulus(0));
#pragma unroll
        for (int i = 1; i < N; i++) t.l[i] = ptx::subc_cc(l[i], P::modulus(i));
        uint32_t borrow = ptx::subc(0, 0);
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = borrow ? l[i] : t.l[i];
        return r;
    }
};

}  // namespace cuzk
