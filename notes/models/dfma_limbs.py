# Model of a schoolbook product of two 384-bit integers on the FP64 pipe (docs/lab-notes/msm-kernel-results.md,
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
# Run: python3 notes/models/dfma_limbs.py (a few seconds)
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

# The whole data path of `mul_fp64` (kernels/tests/field_ec_tests.cu) on integers, the split
# above taken as proven: 32-bit words → 48-bit limbs, product-scanning columns (lo sums and
# hi sums, each below 2^51), the hi sums moved one column up, the carries in 64 bits, the
# 48-bit digits packed three words to two digits; the result must be a·b in 2N words, for Fq
# (N = 12, 8 limbs) and Fr (N = 8, 6 limbs).
M48=(1<<48)-1; M32=(1<<32)-1
def run(N, a, b):
    L=(32*N+47)//48
    aw=[(a>>(32*i))&M32 for i in range(N)]; bw=[(b>>(32*i))&M32 for i in range(N)]
    def limbs(w):
        d=[]
        for i in range(L):
            bit=48*i; word=bit//32; off=bit%32
            lo=w[word] if word<N else 0; hi=w[word+1] if word+1<N else 0
            v=((hi<<32)|lo)>>off
            if off==0: v&=M48
            d.append(v)
        return d
    x=limbs(aw); y=limbs(bw)
    assert sum(v<<(48*i) for i,v in enumerate(x))==a
    t=[0]*(2*L); hi_prev=0
    for k in range(2*L-1):
        lo_acc=0; hi_acc=0
        for i in range((0 if k<L else k-L+1),(k if k<L else L-1)+1):
            j=k-i; p=x[i]*y[j]; lo_acc+=p&M48; hi_acc+=p>>48
        assert lo_acc<2**51 and hi_acc<2**51
        t[k]=lo_acc+hi_prev; hi_prev=hi_acc
    t[2*L-1]=hi_prev
    carry=0; dig=[]
    for k in range(2*L):
        v=t[k]+carry; assert v<2**64; dig.append(v&M48); carry=v>>48
    assert carry==0
    w=[0]*(2*N)
    for m in range(L):
        d0,d1=dig[2*m],dig[2*m+1]
        words=[d0&M32, ((d0>>32)|(d1<<16))&M32, (d1>>16)&M32]
        for q in range(3):
            if 3*m+q<2*N: w[3*m+q]=words[q]
            else: assert words[q]==0
    assert sum(v<<(32*i) for i,v in enumerate(w))==a*b
q=0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
r=0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
for p,N in ((q,12),(r,8)):
    for a,b in [(p-1,p-1),(0,0),(1,p-1)]+[(random.randrange(p),random.randrange(p)) for _ in range(20000)]:
        run(N,a,b)
    print("ok",N)
