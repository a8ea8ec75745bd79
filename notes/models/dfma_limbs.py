# Model of a schoolbook product of two 384-bit integers on the FP64 pipe (kernels/msm/README.md,
# "What next" 2): 8 limbs of 48 bits held exactly as doubles, each limb product split exactly
# into hi·2^48 + lo by two fused multiply-adds, and the column sums accumulated in doubles
# (exact while they stay below 2^53), converted to integers once per column. Checks, with IEEE
# double arithmetic emulated exactly (Fraction, then rounding to 53 bits), that:
#   h  = fma_rz(a, b, 2^100)           rounds a·b + 2^100 toward zero into [2^100, 2^101), ulp 2^48
#   d  = h − 2^100                     = floor(a·b / 2^48)·2^48, exact
#   lo = fma_rn(a, b, −d)              = a·b mod 2^48, exact
#   acc_lo += lo, acc_hi += d          exact (below 2^51, and multiples of 2^48 below 2^99)
# for every limb product of random and extreme operands, and that the columns rebuild a·b.
# Per limb product: 2 DFMA + 3 DADD on the FP64 pipe (the negation is an operand modifier),
# no integer work until a column ends. (Folding acc_lo into the second fma, fma(a, b,
# acc_lo − d), is not exact: acc_lo − d needs ~96 bits.)
# Run: python3 notes/models/dfma_limbs.py
import random
from fractions import Fraction

W, N = 48, 8


def to_double(x: Fraction, mode: str) -> Fraction:
    """x rounded to a double (53-bit significand, no overflow in this range): rz or rn."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    m = abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    ulp = Fraction(2) ** (e - 52)
    q, r = divmod(m, ulp)
    q = int(q)
    if mode == "rn" and (r > ulp / 2 or (r == ulp / 2 and q % 2 == 1)):
        q += 1
    return sign * q * ulp


def exact(x: Fraction) -> Fraction:
    y = to_double(x, "rn")
    assert y == x, f"not exact: {x}"
    return y


def fma(a, b, c, mode):
    return to_double(Fraction(a) * Fraction(b) + Fraction(c), mode)


C = Fraction(2) ** 100


def product(x: int, y: int) -> int:
    a = [Fraction((x >> (W * i)) & ((1 << W) - 1)) for i in range(N)]
    b = [Fraction((y >> (W * i)) & ((1 << W) - 1)) for i in range(N)]
    acc_lo = [Fraction(0)] * (2 * N)
    acc_hi = [Fraction(0)] * (2 * N)  # multiples of 2^48, weight of column k + 1
    for i in range(N):
        for j in range(N):
            k = i + j
            h = fma(a[i], b[j], C, "rz")
            assert C <= h < 2 * C
            d = exact(h - C)
            assert d == (a[i] * b[j] // 2**W) * 2**W
            lo = fma(a[i], b[j], -d, "rn")
            assert lo == int(a[i] * b[j]) % 2**W, "lo not exact"
            acc_lo[k] = exact(acc_lo[k] + lo)
            acc_hi[k] = exact(acc_hi[k] + d)
            assert acc_lo[k] < 2**53 and acc_hi[k] / 2**W < 2**53
    total = 0
    for k in range(2 * N):
        total += int(acc_lo[k]) << (W * k)
        total += int(acc_hi[k] / 2**W) << (W * (k + 1))
    return total


random.seed(1)
cases = [(0, 0), ((1 << 384) - 1, (1 << 384) - 1), ((1 << 384) - 1, 1), (1 << 383, 1 << 383)]
cases += [(random.getrandbits(384), random.getrandbits(384)) for _ in range(300)]
for x, y in cases:
    assert product(x, y) == x * y
print("ok", len(cases), "products of 384-bit operands, 64 limb products each")
