# Model of kernels/field/safegcd.cuh: Bernstein–Yang divsteps in batches of 30 on the
# low 32-bit words, matrices applied to f, g (exact /2^30) and to d, e mod p.
# Checks every range the CUDA code relies on; run: python3 notes/models/safegcd.py
import random
q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
M32 = (1 << 32) - 1
def s32(x):
    x &= M32
    return x - (1 << 32) if x >> 31 else x
def divsteps30(delta, f, g):
    # f, g: low 32 bits (uint32); returns delta, matrix (u, v, q, r)
    u, v, qq, r = 1, 0, 0, 1
    for _ in range(30):
        godd = g & 1
        swap = godd and delta > 0
        if swap:
            f, g = g, (-f) & M32
            u, v, qq, r = qq, r, -u, -v
            delta = -delta
        if godd:
            g = (g + f) & M32
            qq += u; r += v
        g >>= 1
        u <<= 1; v <<= 1
        delta += 1
    return delta, (u, v, qq, r)
def inverse(x, p):
    pinv30 = pow(p, -1, 1 << 30)
    f, g, d, e, delta = p, x, 0, 1, 1
    batches = 0
    while g != 0:
        delta, (u, v, qq, r) = divsteps30(delta, f & M32, g & M32)
        assert abs(u) + abs(v) <= 1 << 30 and abs(qq) + abs(r) <= 1 << 30
        fn, gn = u * f + v * g, qq * f + r * g
        assert fn % (1 << 30) == 0 and gn % (1 << 30) == 0
        f, g = fn >> 30, gn >> 30
        cd, ce = u * d + v * e, qq * d + r * e
        md = (-cd * pinv30) % (1 << 30); me = (-ce * pinv30) % (1 << 30)
        d, e = (cd + md * p) >> 30, (ce + me * p) >> 30
        assert -p < d < 2 * p and -p < e < 2 * p, (d, e)
        if d >= p: d -= p
        if e >= p: e -= p
        assert abs(f) < 1 << 382 and abs(g) < 1 << 382
        batches += 1
    assert f in (1, -1)
    inv = (d if f == 1 else -d) % p
    return inv, batches
r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
random.seed(3)
for name, p in (("Fq", q), ("Fr", r)):
    bs = []
    for t in range(2000):
        x = random.randrange(1, p) if t > 3 else [1, 2, p - 1, p - 2][t]
        inv, b = inverse(x, p)
        assert inv * x % p == 1
        bs.append(b)
    print(name, "ok; batches of 30 divsteps min/avg/max", min(bs), sum(bs) / len(bs), max(bs))
