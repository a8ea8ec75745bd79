# Word-level model of mont_t::mul_wide / redc / mul_sub and fq2 lazy product (kernels/field/mont.cuh, fq2.cuh).
import random
M32 = (1 << 32) - 1
class CC:
    def __init__(s): s.c = 0
def mad_lo_cc(cc, a, b, c):
    v = ((a * b) & M32) + c; cc.c = v >> 32; return v & M32
def madc_lo_cc(cc, a, b, c):
    v = ((a * b) & M32) + c + cc.c; cc.c = v >> 32; return v & M32
def madc_hi_cc(cc, a, b, c):
    v = ((a * b) >> 32) + c + cc.c; cc.c = v >> 32; return v & M32
def addc(cc, a, b):
    v = a + b + cc.c
    assert v >> 32 == 0, "addc overflow (lost carry)"
    return v & M32
def add_cc(cc, a, b):
    v = a + b; cc.c = v >> 32; return v & M32
def addc_cc(cc, a, b):
    v = a + b + cc.c; cc.c = v >> 32; return v & M32
def sub_cc(cc, a, b):
    v = a - b; cc.c = 1 if v < 0 else 0; return v & M32
def subc_cc(cc, a, b):
    v = a - b - cc.c; cc.c = 1 if v < 0 else 0; return v & M32
def subc(cc, a, b):
    v = a - b - cc.c; return v & M32

def words(x, n): return [(x >> (32 * i)) & M32 for i in range(n)]
def val(w): return sum(x << (32 * i) for i, x in enumerate(w))

def wide_chain(acc, a, bi, i, j0, N):
    cc = CC()
    acc[i + j0] = mad_lo_cc(cc, a[j0], bi, acc[i + j0])
    acc[i + j0 + 1] = madc_hi_cc(cc, a[j0], bi, acc[i + j0 + 1])
    for j in range(j0 + 2, N, 2):
        acc[i + j] = madc_lo_cc(cc, a[j], bi, acc[i + j])
        acc[i + j + 1] = madc_hi_cc(cc, a[j], bi, acc[i + j + 1])
    last = j0 + ((N - 1 - j0) // 2) * 2
    sink = i + last + 2
    if sink < 2 * N:
        acc[sink] = addc(cc, acc[sink], 0)
    else:
        assert cc.c == 0, "dropped top carry"

def mul_wide(a, b, N):
    x = [0] * (2 * N); y = [0] * (2 * N)
    aw, bw = words(a, N), words(b, N)
    for i in range(N):
        wide_chain(x, aw, bw[i], i, i & 1, N)
        wide_chain(y, aw, bw[i], i, (i & 1) ^ 1, N)
    cc = CC(); w = [0] * (2 * N)
    w[0] = add_cc(cc, x[0], y[0])
    for k in range(1, 2 * N - 1): w[k] = addc_cc(cc, x[k], y[k])
    w[2 * N - 1] = addc(cc, x[2 * N - 1], y[2 * N - 1])
    return val(w)

def mad_parity(acc, a, b, par, carry_in, cc, N):
    if carry_in: acc[par] = madc_lo_cc(cc, a[par], b, acc[par])
    else: acc[par] = mad_lo_cc(cc, a[par], b, acc[par])
    acc[par + 1] = madc_hi_cc(cc, a[par], b, acc[par + 1])
    for j in range(par + 2, N, 2):
        acc[j] = madc_lo_cc(cc, a[j], b, acc[j])
        acc[j + 1] = madc_hi_cc(cc, a[j], b, acc[j + 1])
    acc[N + par] = addc(cc, acc[N + par], 0)

def redc_row(E, O, p, inv, N):
    m = ((E[0] + O[0]) * inv) & M32
    cc = CC()
    mad_parity(E, p, m, 0, False, cc, N)
    cc.c = 1 if O[0] != 0 else 0
    mad_parity(O, p, m, 1, True, cc, N)
    for k in range(N + 1):
        E[k] = E[k + 1]; O[k] = O[k + 1]
    E[N + 1] = 0; O[N + 1] = 0

def redc(T, p, N):
    inv = (-pow(p, -1, 1 << 32)) & M32
    pw = words(p, N)
    tw = words(T, 2 * N)
    E = tw[:N] + [0, 0]; O = [0] * (N + 2)
    for i in range(0, N, 2):
        redc_row(E, O, pw, inv, N)
        redc_row(O, E, pw, inv, N)
    assert E[N] == 0 and E[N+1] == 0 and O[N] == 0 and O[N+1] == 0
    u = val(E[:N]) + val(O[:N])
    assert u <= p, "u > p"
    r = u + (T >> (32 * N))
    assert r < 2 * p
    return r - p if r >= p else r

def check(p, N, trials):
    R = 1 << (32 * N); Rinv = pow(R, -1, p)
    edge = [0, 1, 2, p - 1, p - 2, R % p, (p - 1) // 2]
    vals = edge + [random.randrange(p) for _ in range(trials)]
    for t in range(trials):
        a, b, c, d = (random.choice(vals) for _ in range(4))
        # unreduced sums < 2p as mul_wide inputs
        s1, s2 = a + b, c + d
        assert mul_wide(s1, s2, N) == s1 * s2
        assert redc(a * b, p, N) == a * b * Rinv % p
        # mul_sub: a·b − c·d (+ p·R when negative)
        T = a * b - c * d
        if T < 0: T += p * R
        assert redc(T, p, N) == (a * b - c * d) * Rinv % p
        # fq2 lazy product: (a + b u)(c + d u)
        t0, t1, t2 = mul_wide(a, c, N), mul_wide(b, d, N), mul_wide(a + b, c + d, N)
        T0 = t0 - t1
        if T0 < 0: T0 += p * R
        assert 0 <= T0 < p * R
        T1 = t2 - t0 - t1
        assert 0 <= T1 < p * R
        assert redc(T0, p, N) == (a * c - b * d) * Rinv % p
        assert redc(T1, p, N) == (a * d + b * c) * Rinv % p
    print("ok", N)

q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
random.seed(1)
check(q, 12, 3000)
check(r, 8, 3000)
