//! Fr arithmetic for the native Poseidon, inline in Rust, on
//! [`cuzk_field::limbs::FrLimbs`]: four little-endian `u64` limbs in
//! Montgomery form with R = 2²⁵⁶, always reduced below r — exactly
//! `blst_fr`'s representation, so an element converts to and from `Fr`
//! without a copy and the values pushed are the very values `blstrs`
//! would compute.
//!
//! Why not `blstrs`' operators: each is a call into blst's assembly, and a
//! sum of products pays a full Montgomery reduction per product. Poseidon's
//! MDS layers are sums of `width` products; [`Acc`] adds the 512-bit
//! products unreduced and reduces once, which halves a 9-term dot product
//! (measured 227 against 433 ns on dev-2c). Its products use BMI2 and ADX
//! where the CPU has them ([`product`]).

/// BLS12-381's scalar field modulus r, little-endian limbs.
const R: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// −r⁻¹ mod 2⁶⁴, the Montgomery reduction's per-limb factor.
const INV: u64 = 0xffff_fffe_ffff_ffff;

pub(super) use cuzk_field::limbs::FrLimbs as Limbs;

/// `acc + a·b + carry` as (low, high) words.
#[inline(always)]
fn mac(acc: u64, a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = acc as u128 + (a as u128) * (b as u128) + carry as u128;
    (t as u64, (t >> 64) as u64)
}

/// `a + b + carry` as (sum, carry).
#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = a as u128 + b as u128 + carry as u128;
    (t as u64, (t >> 64) as u64)
}

/// `a − b − borrow` (borrow all ones or zero) as (difference, borrow).
#[inline(always)]
fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let t = (a as u128).wrapping_sub(b as u128 + (borrow >> 63) as u128);
    (t as u64, (t >> 64) as u64)
}

/// `x − m` where `x ≥ m`, else `x` (N limbs, constant time).
#[inline(always)]
fn sub_if_ge<const N: usize>(x: [u64; N], m: &[u64; N]) -> [u64; N] {
    let mut d = [0u64; N];
    let mut borrow = 0;
    for i in 0..N {
        (d[i], borrow) = sbb(x[i], m[i], borrow);
    }
    // The borrow is all ones exactly when x < m.
    std::array::from_fn(|i| (x[i] & borrow) | (d[i] & !borrow))
}

/// a + b mod r.
#[inline(always)]
pub(super) fn add(a: &Limbs, b: &Limbs) -> Limbs {
    let (a, b) = (&a.0, &b.0);
    let mut s = [0u64; 4];
    let mut carry = 0;
    for i in 0..4 {
        (s[i], carry) = adc(a[i], b[i], carry);
    }
    // r < 2²⁵⁵: the sum of two reduced values needs no fifth limb.
    Limbs(sub_if_ge(s, &R))
}

/// The Montgomery product a·b·R⁻¹ mod r (the field product of the two
/// elements), reduced. Coarsely integrated operand scanning: r's top limb
/// is below 2⁶³ − 1, so the running value fits four limbs and two carries.
#[inline(always)]
pub(super) fn mul(a: &Limbs, b: &Limbs) -> Limbs {
    let (a, b) = (&a.0, &b.0);
    let mut t = [0u64; 4];
    for &bi in b {
        let (t0, mut c1) = mac(t[0], a[0], bi, 0);
        let m = t0.wrapping_mul(INV);
        let (_, mut c2) = mac(t0, m, R[0], 0);
        for j in 1..4 {
            let (tj, c) = mac(t[j], a[j], bi, c1);
            c1 = c;
            let (tj, c) = mac(tj, m, R[j], c2);
            c2 = c;
            t[j - 1] = tj;
        }
        t[3] = c1 + c2;
    }
    Limbs(sub_if_ge(t, &R))
}

/// a·b, the plain 512-bit product, as eight limbs: with BMI2's `mulx` and
/// ADX's two carry chains where the CPU has them (the sums of products of
/// the MDS layers and partial rounds are ~70% of a hash's instructions;
/// this product is ~30% faster than the portable one on dev-2c), else
/// [`product_portable`].
#[inline(always)]
fn product(a: &[u64; 4], b: &[u64; 4]) -> [u64; 8] {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("adx") {
        return product_adx(a, b);
    }
    product_portable(a, b)
}

/// [`product`] in plain Rust (schoolbook, one carry chain).
#[inline(always)]
fn product_portable(a: &[u64; 4], b: &[u64; 4]) -> [u64; 8] {
    let mut p = [0u64; 8];
    for (i, &bi) in b.iter().enumerate() {
        let mut c = 0;
        for j in 0..4 {
            (p[i + j], c) = mac(p[i + j], a[j], bi, c);
        }
        p[i + 4] = c;
    }
    p
}

/// [`product`] with `mulx`, `adcx` and `adox`: row 0 with one carry chain,
/// then each row of b's limb i added at limb i with two chains (CF for the
/// low words, OF for the high ones), both cleared by the row's `xor` and
/// closed into its top limb. No chain carries out of a row's top limb:
/// the rows so far sum to less than 2^(64·(i + 5)).
///
/// Only called where BMI2 and ADX are detected.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn product_adx(a: &[u64; 4], b: &[u64; 4]) -> [u64; 8] {
    let (p0, p1, p2, p3, p4, p5, p6, p7): (u64, u64, u64, u64, u64, u64, u64, u64);
    // SAFETY: the caller has detected BMI2 and ADX (mulx, adcx, adox).
    // The block reads the four limbs of `a` and of `b` (valid, aligned
    // references for its whole duration) and nothing else, writes only
    // its declared outputs and rdx (declared clobbered), and touches no
    // stack; the flags it changes are assumed clobbered (no
    // `preserves_flags`).
    unsafe {
        std::arch::asm!(
            "mov rdx, qword ptr [{b}]",
            "mulx {p1}, {p0}, qword ptr [{a}]",
            "mulx {p2}, {lo}, qword ptr [{a} + 8]",
            "add {p1}, {lo}",
            "mulx {p3}, {lo}, qword ptr [{a} + 16]",
            "adc {p2}, {lo}",
            "mulx {p4}, {lo}, qword ptr [{a} + 24]",
            "adc {p3}, {lo}",
            "adc {p4}, 0",
            "mov rdx, qword ptr [{b} + 8]",
            "xor {p5:e}, {p5:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adcx {p1}, {lo}",
            "adox {p2}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adcx {p2}, {lo}",
            "adox {p3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adcx {p3}, {lo}",
            "adox {p4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adcx {p4}, {lo}",
            "adox {p5}, {hi}",
            "mov {lo:e}, 0",
            "adcx {p5}, {lo}",
            "mov rdx, qword ptr [{b} + 16]",
            "xor {p6:e}, {p6:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adcx {p2}, {lo}",
            "adox {p3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adcx {p3}, {lo}",
            "adox {p4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adcx {p4}, {lo}",
            "adox {p5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adcx {p5}, {lo}",
            "adox {p6}, {hi}",
            "mov {lo:e}, 0",
            "adcx {p6}, {lo}",
            "mov rdx, qword ptr [{b} + 24]",
            "xor {p7:e}, {p7:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adcx {p3}, {lo}",
            "adox {p4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adcx {p4}, {lo}",
            "adox {p5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adcx {p5}, {lo}",
            "adox {p6}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adcx {p6}, {lo}",
            "adox {p7}, {hi}",
            "mov {lo:e}, 0",
            "adcx {p7}, {lo}",
            a = in(reg) a.as_ptr(),
            b = in(reg) b.as_ptr(),
            p0 = out(reg) p0,
            p1 = out(reg) p1,
            p2 = out(reg) p2,
            p3 = out(reg) p3,
            p4 = out(reg) p4,
            p5 = out(reg) p5,
            p6 = out(reg) p6,
            p7 = out(reg) p7,
            lo = out(reg) _,
            hi = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
    }
    [p0, p1, p2, p3, p4, p5, p6, p7]
}

/// k·r as five limbs.
const fn times_r(k: u64) -> [u64; 5] {
    let mut out = [0u64; 5];
    let mut carry: u128 = 0;
    let mut i = 0;
    while i < 4 {
        let t = (R[i] as u128) * (k as u128) + carry;
        out[i] = t as u64;
        carry = t >> 64;
        i += 1;
    }
    out[4] = carry as u64;
    out
}

/// The multiples of r that [`Acc::reduce`] subtracts, largest first.
const R_MULTIPLES: [[u64; 5]; 5] = [times_r(16), times_r(8), times_r(4), times_r(2), times_r(1)];

/// Most products one [`Acc`] may sum: the reduced sum stays below 32·r.
pub(super) const ACC_TERMS: usize = 64;

/// A sum of products of reduced elements, unreduced: nine limbs, as each
/// product is below r² < 2⁵¹⁰.
#[derive(Clone, Copy)]
pub(super) struct Acc {
    limbs: [u64; 9],
    terms: usize,
}

impl Acc {
    #[inline(always)]
    pub(super) fn new() -> Self {
        Acc {
            limbs: [0; 9],
            terms: 0,
        }
    }

    /// Adds a·b (plain 512-bit product).
    #[inline(always)]
    pub(super) fn mul_add(&mut self, a: &Limbs, b: &Limbs) {
        let p = product(&a.0, &b.0);
        let mut c = 0;
        for (t, p) in self.limbs.iter_mut().zip(p) {
            (*t, c) = adc(*t, p, c);
        }
        self.limbs[8] += c;
        self.terms += 1;
    }

    /// Adds a reduced element x (as x·2²⁵⁶, which [`Acc::reduce`] maps to
    /// x); below 2.2·r², it counts as three products.
    #[inline(always)]
    pub(super) fn add(&mut self, x: &Limbs) {
        let mut c = 0;
        for i in 0..4 {
            (self.limbs[4 + i], c) = adc(self.limbs[4 + i], x.0[i], c);
        }
        self.limbs[8] += c;
        self.terms += 3;
    }

    /// Σ aᵢ·bᵢ·R⁻¹ mod r: the field sum of the products, reduced.
    #[inline(always)]
    pub(super) fn reduce(self) -> Limbs {
        debug_assert!(self.terms <= ACC_TERMS);
        let mut t = self.limbs;
        // Montgomery reduction of the nine limbs: four steps clear the low
        // limbs; `high` carries into limb i + 5.
        let mut high = 0;
        for i in 0..4 {
            let m = t[i].wrapping_mul(INV);
            let mut c = 0;
            for j in 0..4 {
                (t[i + j], c) = mac(t[i + j], m, R[j], c);
            }
            (t[i + 4], high) = adc(t[i + 4], c, high);
        }
        t[8] += high;
        // Below n·r²/2²⁵⁶ + r < (0.454·n + 1)·r: under 5.1·r for up to nine
        // terms, under 32·r for up to 64.
        let mut u = [t[4], t[5], t[6], t[7], t[8]];
        let from = if self.terms <= 9 { 2 } else { 0 };
        for m in &R_MULTIPLES[from..] {
            u = sub_if_ge(u, m);
        }
        Limbs([u[0], u[1], u[2], u[3]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar as Fr;
    use ff::Field;
    use rand::SeedableRng;

    fn limbs(x: Fr) -> Limbs {
        Limbs::from(x)
    }

    /// Random elements and the edge ones (0, 1, r − 1, r − 2).
    fn elements() -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(34);
        let mut xs: Vec<Fr> = (0..200).map(|_| Fr::random(&mut rng)).collect();
        xs.extend([Fr::ZERO, Fr::ONE, -Fr::ONE, -Fr::ONE.double()]);
        xs
    }

    #[test]
    fn products_and_sums_are_blstrs() {
        let xs = elements();
        for (i, &a) in xs.iter().enumerate() {
            for &b in &xs[i..] {
                assert_eq!(mul(&limbs(a), &limbs(b)), limbs(a * b), "{a:?}·{b:?}");
                assert_eq!(add(&limbs(a), &limbs(b)), limbs(a + b), "{a:?}+{b:?}");
            }
        }
    }

    /// The products of limbs at the extremes (all ones, all zeros, one
    /// limb set) and random ones, unreduced: every carry path of the rows.
    #[test]
    fn products_are_the_portable_products() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(35);
        let mut xs: Vec<[u64; 4]> = (0..100)
            .map(|_| std::array::from_fn(|_| rand::RngCore::next_u64(&mut rng)))
            .collect();
        xs.extend([
            [u64::MAX; 4],
            [0; 4],
            [u64::MAX, 0, u64::MAX, 0],
            [0, 0, 0, 1],
            R,
        ]);
        for a in &xs {
            for b in &xs {
                let want = {
                    let (a, b) = (Limbs(*a), Limbs(*b));
                    let mut p = [0u64; 8];
                    for i in 0..4 {
                        for j in 0..4 {
                            let t = (a.0[i] as u128) * (b.0[j] as u128);
                            let mut k = i + j;
                            let mut add = t;
                            while add != 0 {
                                let s = p[k] as u128 + (add as u64) as u128;
                                p[k] = s as u64;
                                add = (add >> 64) + (s >> 64);
                                k += 1;
                            }
                        }
                    }
                    p
                };
                assert_eq!(product_portable(a, b), want, "{a:x?}·{b:x?}");
                assert_eq!(product(a, b), want, "{a:x?}·{b:x?}");
            }
        }
    }

    #[test]
    fn sums_of_products_are_blstrs() {
        let xs = elements();
        let worst = -Fr::ONE;
        for terms in [1, 2, 3, 5, 9, 12, 17, 25, 37, ACC_TERMS] {
            // The largest sum (every product (r − 1)²), then random ones.
            let mut acc = Acc::new();
            (0..terms).for_each(|_| acc.mul_add(&limbs(worst), &limbs(worst)));
            let want: Fr = (0..terms).map(|_| worst * worst).sum();
            assert_eq!(acc.reduce(), limbs(want), "{terms} products of r − 1");
            for start in 0..xs.len() {
                let pairs = (0..terms)
                    .map(|k| (xs[(start + k) % xs.len()], xs[(start * 7 + k) % xs.len()]));
                let mut acc = Acc::new();
                pairs
                    .clone()
                    .for_each(|(a, b)| acc.mul_add(&limbs(a), &limbs(b)));
                let want: Fr = pairs.map(|(a, b)| a * b).sum();
                assert_eq!(acc.reduce(), limbs(want), "{terms} products from {start}");
            }
        }
    }
}
