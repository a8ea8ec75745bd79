# Word-level model of mont_t::sqr_chain (kernels/field/mont.cuh): the Montgomery square with
# each cross product paid once, in mul_chain's E/O carry-chain form. Checks the result against
# a²·R⁻¹ mod p and that no chain's final carry add overflows, for Fq (12 words) and Fr (8), on
# edge values and random ones. Run: python3 notes/models/sqr_chain.py
import random
M32 = (1 << 32) - 1
def run(p, N, a_int):
    R = 1 << (32 * N)
    inv = (-pow(p, -1, 1 << 32)) % (1 << 32)
    a = [(a_int >> (32 * k)) & M32 for k in range(N)]
    pw = [(p >> (32 * k)) & M32 for k in range(N)]
    D = [(x << 1) & M32 for x in a]
    A2 = [((a[k] << 1) | (a[k - 1] >> 31 if k else 0)) & M32 for k in range(N)]
    assert a[N - 1] >> 31 == 0
    x = [0] * (N + 2); y = [0] * (N + 2)
    cf = [0]
    def mad_lo(av, bv, c, carry_in):
        s = ((av * bv) & M32) + c + (cf[0] if carry_in else 0)
        cf[0] = s >> 32; return s & M32
    def mad_hi(av, bv, c):
        s = ((av * bv) >> 32) + c + cf[0]
        cf[0] = s >> 32; return s & M32
    def addc(c, v):
        s = c + v + cf[0]
        assert s >> 32 == 0, "addc overflow"
        return s & M32
    def mult(i, j):
        return a[i] if j == i else D[i + 1] if j == i + 1 else A2[j]
    def sqr_parity(acc, i, par):
        j0 = i if (i % 2) == par else i + 1
        if j0 >= N: return
        first = True
        for j in range(j0, N, 2):
            acc[j] = mad_lo(mult(i, j), a[i], acc[j], not first)
            acc[j + 1] = mad_hi(mult(i, j), a[i], acc[j + 1])
            first = False
        acc[N + par] = addc(acc[N + par], 0)
    def mad_parity_p(acc, m, par, carry_in):
        for idx, j in enumerate(range(par, N, 2)):
            acc[j] = mad_lo(pw[j], m, acc[j], carry_in or idx > 0)
            acc[j + 1] = mad_hi(pw[j], m, acc[j + 1])
        acc[N + par] = addc(acc[N + par], 0)
    def redc_row(E, O):
        m = ((E[0] + O[0]) * inv) & M32
        mad_parity_p(E, m, 0, False)
        cf[0] = 1 if O[0] != 0 else 0
        mad_parity_p(O, m, 1, True)
        for k in range(N + 1):
            E[k] = E[k + 1]; O[k] = O[k + 1]
        E[N + 1] = 0; O[N + 1] = 0
    # relative parity: row i's products start at relative word i.
    # In mul_chain, rows alternate (x,y),(y,x); E receives even relative positions.
    for i in range(N):
        E, O = (x, y) if i % 2 == 0 else (y, x)
        # after i shifts E holds the even words of the running sum, O the odd ones
        sqr_parity(E, i, 0)
        sqr_parity(O, i, 1)
        redc_row(E, O)
    t = sum(x[k] << (32 * k) for k in range(N + 2)) + sum(y[k] << (32 * k) for k in range(N + 2))
    assert t < 2 * p, "t >= 2p"
    r = t - p if t >= p else t
    want = a_int * a_int * pow(R, -1, p) % p
    assert r == want, (hex(r), hex(want))
    # the final N-word add x + y must not carry out of word N-1
    lo = sum(x[k] << (32 * k) for k in range(N)) + sum(y[k] << (32 * k) for k in range(N))
    assert lo == t and lo < R
q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
for p, N in ((q, 12), (r, 8)):
    cases = [0, 1, 2, p - 1, p - 2, (1 << (32 * N - 4)) % p, p // 2, p // 2 + 1]
    cases += [random.randrange(p) for _ in range(20000)]
    cases += [p - random.randrange(1 << 64) for _ in range(2000)] + [random.randrange(1 << 64) for _ in range(2000)]
    for c in cases: run(p, N, c)
    print("ok", N, len(cases))
