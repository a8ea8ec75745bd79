//! Fixed-base scalar multiplication: `[s]·g` for millions of scalars `s` and
//! one base `g`, the step that dominates key generation.
//!
//! [`FixedBase`] is the pluggable step: [`CpuFixedBase`] here (rayon), a GPU
//! implementation in `cuzk-gpu`. Both return affine points, so two
//! implementations agree byte for byte (affine coordinates are unique).
//!
//! The CPU method is a signed-digit window table ([`WindowTable`]): for a
//! window of `w` bits the scalar is recoded into `windows_for(w)` digits in
//! `[-2^(w-1), 2^(w-1)]`, and the table holds `d · 2^(w·j) · g` for every
//! window `j` and `d` in `1..=2^(w-1)`, so a product costs one addition per
//! nonzero digit and no doubling at all. [`CpuFixedBase`] runs a few thousand
//! products side by side in affine coordinates ([`WindowTable::mul_batch`]),
//! sharing one field inversion per window across them.

use std::error::Error;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::prime::{PrimeCurve, PrimeCurveAffine};
use rayon::prelude::*;

/// Points per rayon task when multiplying (one field inversion per window) or
/// normalizing (one inversion).
const CHUNK: usize = 1 << 12;

/// Largest window the CPU table uses: 16 windows of 2^15 points, 48 MiB in
/// G1 and 96 MiB in G2. Wider tables stop fitting any cache and cost more
/// to build than they save below ~10^8 scalars.
const MAX_CPU_WINDOW: u32 = 16;

/// Why a fixed-base multiplication failed (a device error, for instance).
#[derive(Debug, thiserror::Error)]
#[error("fixed-base multiplication on {backend} failed")]
#[non_exhaustive]
pub struct FixedBaseError {
    /// The implementation that failed.
    pub backend: String,
    /// What went wrong.
    #[source]
    pub source: Box<dyn Error + Send + Sync>,
}

impl FixedBaseError {
    /// The failure of `backend` (an implementation's name), caused by
    /// `source`.
    pub fn new(
        backend: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        FixedBaseError {
            backend: backend.into(),
            source: source.into(),
        }
    }
}

/// Batch fixed-base multiplication of the key generator's two bases.
///
/// Each call gets one base and several batches of scalars (the key sections
/// using that base) and returns, per batch, `[s]·base` for every scalar in
/// order, as affine points; a zero scalar gives the point at infinity.
pub trait FixedBase: Sync {
    /// What runs the multiplications, for reports ("cpu", "cuda: NVIDIA H200").
    fn name(&self) -> String;

    /// `[s]·base` in G1 for every scalar of every batch.
    fn mul_g1(
        &self,
        base: G1Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G1Affine>>, FixedBaseError>;

    /// `[s]·base` in G2 for every scalar of every batch.
    fn mul_g2(
        &self,
        base: G2Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G2Affine>>, FixedBaseError>;
}

/// The CPU implementation: one [`WindowTable`] per call, scalars split into
/// chunks across rayon's pool, each chunk multiplied by
/// [`WindowTable::mul_batch`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuFixedBase;

impl FixedBase for CpuFixedBase {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn mul_g1(
        &self,
        base: G1Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G1Affine>>, FixedBaseError> {
        Ok(cpu_mul(base, batches))
    }

    fn mul_g2(
        &self,
        base: G2Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G2Affine>>, FixedBaseError> {
        Ok(cpu_mul(base, batches))
    }
}

fn cpu_mul<G: KeyCurve>(base: G, batches: &[&[Fr]]) -> Vec<Vec<G::Affine>> {
    let total: usize = batches.iter().map(|b| b.len()).sum();
    if total == 0 {
        return batches.iter().map(|_| Vec::new()).collect();
    }
    let table = WindowTable::new(base, cpu_window_for(total));
    batches
        .iter()
        .map(|scalars| {
            let mut out = vec![G::Affine::identity(); scalars.len()];
            scalars
                .par_chunks(CHUNK)
                .zip(out.par_chunks_mut(CHUNK))
                .for_each(|(s, o)| table.mul_batch(s, o));
            out
        })
        .collect()
}

/// The window width minimizing table construction plus multiplication
/// additions for `n` scalars on the CPU: `windows · (2^(w-1) + n)`.
pub fn cpu_window_for(n: usize) -> u32 {
    (1..=MAX_CPU_WINDOW)
        .min_by_key(|&w| windows_for(w) as u128 * ((1u128 << (w - 1)) + n as u128))
        .expect("nonempty range")
}

/// Signed digits per scalar for a window of `window` bits: enough that the
/// top window has a spare bit, so its digit never carries out (Fr < 2^255).
pub const fn windows_for(window: u32) -> usize {
    (Fr::NUM_BITS / window + 1) as usize
}

/// The signed base-2^`window` digits of `scalar`, least significant first:
/// `scalar = Σ d_j · 2^(window·j)` with every `d_j` in
/// `[-2^(window-1), 2^(window-1)]`. A digit above half the radix is replaced
/// by `d − 2^window` and carries one into the next window.
///
/// # Panics
/// If `window` is not in `1..=30`.
pub fn signed_digits(scalar: &Fr, window: u32) -> Vec<i32> {
    assert!((1..=30).contains(&window), "window {window} out of 1..=30");
    let bytes = scalar.to_bytes_le();
    let limbs: [u64; 4] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()));
    let radix = 1i64 << window;
    let half = radix / 2;
    let mut carry = 0i64;
    let digits = (0..windows_for(window))
        .map(|j| {
            let d = bits(&limbs, j * window as usize, window) as i64 + carry;
            carry = i64::from(d > half);
            (d - carry * radix) as i32
        })
        .collect();
    debug_assert_eq!(carry, 0, "top window carried out");
    digits
}

/// `width` bits of `limbs` starting at bit `offset` (which is below 256).
fn bits(limbs: &[u64; 4], offset: usize, width: u32) -> u64 {
    let (i, shift) = (offset / 64, offset % 64);
    let mut v = limbs[i] >> shift;
    if shift + width as usize > 64 && i + 1 < 4 {
        v |= limbs[i + 1] << (64 - shift);
    }
    v & ((1u64 << width) - 1)
}

/// The precomputed multiples of one base for signed-digit fixed-base
/// multiplication.
///
/// Layout (also what a GPU implementation uploads): `points()[j·half + d − 1]
/// = d · 2^(window·j) · base` for window `j < windows()` and `d` in
/// `1..=half`, `half = 2^(window−1)`; all affine, none at infinity for a base
/// of prime order.
#[derive(Clone, Debug)]
pub struct WindowTable<G: KeyCurve> {
    window: u32,
    points: Vec<G::Affine>,
}

impl<G: KeyCurve> WindowTable<G> {
    /// The table of `base` for windows of `window` bits, built in parallel
    /// (one window per task), normalized in batches.
    ///
    /// # Panics
    /// If `window` is not in `1..=24`.
    pub fn new(base: G, window: u32) -> Self {
        assert!((1..=24).contains(&window), "window {window} out of 1..=24");
        let half = 1usize << (window - 1);
        let windows = windows_for(window);
        let mut window_bases = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            window_bases.push(b);
            for _ in 0..window {
                b = b.double();
            }
        }
        let mut proj = vec![G::identity(); windows * half];
        proj.par_chunks_mut(half)
            .zip(window_bases.par_iter())
            .for_each(|(row, b)| {
                let b_affine = b.to_affine();
                let mut acc = *b;
                for p in row {
                    *p = acc;
                    acc += &b_affine;
                }
            });
        let mut points = vec![G::Affine::identity(); proj.len()];
        proj.par_chunks(CHUNK)
            .zip(points.par_chunks_mut(CHUNK))
            .for_each(|(p, o)| batch_to_affine(p, o));
        WindowTable { window, points }
    }

    /// Bits per window.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// Number of windows (digits per scalar).
    pub fn windows(&self) -> usize {
        windows_for(self.window)
    }

    /// The multiples, in the layout described on the type.
    pub fn points(&self) -> &[G::Affine] {
        &self.points
    }

    /// `[scalar]·base`: one mixed addition or subtraction per nonzero digit.
    pub fn mul(&self, scalar: &Fr) -> G {
        let half = 1usize << (self.window - 1);
        let mut acc = G::identity();
        for (j, d) in signed_digits(scalar, self.window).into_iter().enumerate() {
            if d > 0 {
                acc += &self.points[j * half + d as usize - 1];
            } else if d < 0 {
                acc -= &self.points[j * half + d.unsigned_abs() as usize - 1];
            }
        }
        acc
    }

    /// `out[i] = [scalars[i]]·base` for a batch, in affine coordinates
    /// throughout: window by window, every accumulator that gets a nonzero
    /// digit takes one affine addition, and the batch shares one field
    /// inversion per window (Montgomery's trick over the x differences). An
    /// affine addition is ≈ 6 products against ≈ 11 for a mixed Jacobian one,
    /// and the result needs no normalization. The rare addition of a point to
    /// itself or to its negation is done exactly in projective form.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn mul_batch(&self, scalars: &[Fr], out: &mut [G::Affine]) {
        assert_eq!(scalars.len(), out.len(), "mul_batch: length mismatch");
        let half = 1usize << (self.window - 1);
        let windows = self.windows();
        let digits: Vec<i32> = scalars
            .iter()
            .flat_map(|s| signed_digits(s, self.window))
            .collect();
        // None is the point at infinity.
        let mut acc: Vec<Option<(G::Coord, G::Coord)>> = vec![None; scalars.len()];
        // (index, q.x, q.y) of the accumulators that need a general addition.
        let mut adds: Vec<(usize, G::Coord, G::Coord)> = Vec::with_capacity(scalars.len());
        let mut dx: Vec<G::Coord> = Vec::with_capacity(scalars.len());
        for j in 0..windows {
            adds.clear();
            dx.clear();
            for (i, a) in acc.iter_mut().enumerate() {
                let d = digits[i * windows + j];
                if d == 0 {
                    continue;
                }
                let q = &self.points[j * half + d.unsigned_abs() as usize - 1];
                let (qx, qy) = G::affine_coords(q);
                let qy = if d < 0 { -qy } else { qy };
                match *a {
                    None => *a = Some((qx, qy)),
                    Some((ax, ay)) if ax == qx => {
                        // P + P doubles; P + (−P) is infinity.
                        *a = (ay == qy).then(|| {
                            let p = G::affine_unchecked(qx, qy).to_curve().double();
                            G::affine_coords(&p.to_affine())
                        });
                    }
                    Some((ax, _)) => {
                        adds.push((i, qx, qy));
                        dx.push(qx - ax);
                    }
                }
            }
            invert_all::<G::Coord>(&mut dx);
            for (&(i, qx, qy), inv) in adds.iter().zip(&dx) {
                let (ax, ay) = acc[i].expect("only accumulators that hold a point are added to");
                let lambda = (qy - ay) * inv;
                let x = lambda.square() - ax - qx;
                let y = lambda * (ax - x) - ay;
                acc[i] = Some((x, y));
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = match a {
                None => G::Affine::identity(),
                Some((x, y)) => G::affine_unchecked(x, y),
            };
        }
    }
}

/// Replaces every element of `values` (all nonzero) by its inverse with one
/// field inversion (Montgomery's trick).
fn invert_all<F: Field>(values: &mut [F]) {
    let mut prefix = Vec::with_capacity(values.len());
    let mut acc = F::ONE;
    for v in values.iter() {
        prefix.push(acc);
        acc *= v;
    }
    let mut inv = acc.invert().expect("the values are nonzero");
    for (v, before) in values.iter_mut().zip(prefix).rev() {
        let v_inv = inv * before;
        inv *= *v;
        *v = v_inv;
    }
}

/// The two curves of a key, with the coordinate access batch normalization
/// needs. blst's projective points are Jacobian: `x = X/Z²`, `y = Y/Z³`, and
/// `Z = 0` is the point at infinity.
pub trait KeyCurve: PrimeCurve<Scalar = Fr> + Send + Sync
where
    Self::Affine: Send + Sync,
{
    /// The coordinate field (Fp for G1, Fp2 for G2).
    type Coord: Field;

    /// (X, Y, Z) in Jacobian form.
    fn jacobian(&self) -> (Self::Coord, Self::Coord, Self::Coord);

    /// The affine point (x, y), which must be on the curve.
    fn affine_unchecked(x: Self::Coord, y: Self::Coord) -> Self::Affine;

    /// (x, y) of an affine point (meaningless for the point at infinity).
    fn affine_coords(p: &Self::Affine) -> (Self::Coord, Self::Coord);
}

impl KeyCurve for G1Projective {
    type Coord = Fp;

    fn jacobian(&self) -> (Fp, Fp, Fp) {
        (self.x(), self.y(), self.z())
    }

    fn affine_unchecked(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }

    fn affine_coords(p: &G1Affine) -> (Fp, Fp) {
        (p.x(), p.y())
    }
}

impl KeyCurve for G2Projective {
    type Coord = Fp2;

    fn jacobian(&self) -> (Fp2, Fp2, Fp2) {
        (self.x(), self.y(), self.z())
    }

    fn affine_unchecked(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }

    fn affine_coords(p: &G2Affine) -> (Fp2, Fp2) {
        (p.x(), p.y())
    }
}

/// Converts `points` to affine with one field inversion for the whole slice
/// (Montgomery's trick: prefix products of the Z coordinates, one inverse,
/// then the inverses peeled off backwards). Points at infinity map to the
/// affine identity. (blstrs' `batch_normalize` inverts every point.)
///
/// # Panics
/// If the slices differ in length.
pub fn batch_to_affine<G: KeyCurve>(points: &[G], out: &mut [G::Affine]) {
    assert_eq!(points.len(), out.len(), "batch_to_affine: length mismatch");
    let mut prefix = Vec::with_capacity(points.len());
    let mut acc = G::Coord::ONE;
    for p in points {
        prefix.push(acc);
        let (_, _, z) = p.jacobian();
        if !bool::from(z.is_zero()) {
            acc *= z;
        }
    }
    // A product of nonzero elements is nonzero.
    let mut inv = acc.invert().unwrap();
    for ((p, o), before) in points.iter().zip(out.iter_mut()).zip(prefix).rev() {
        let (x, y, z) = p.jacobian();
        if bool::from(z.is_zero()) {
            *o = G::Affine::identity();
            continue;
        }
        let z_inv = inv * before;
        inv *= z;
        let z_inv2 = z_inv.square();
        *o = G::affine_unchecked(x * z_inv2, y * z_inv2 * z_inv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::{Curve, Group};
    use rand_chacha::ChaCha20Rng;

    fn rng() -> ChaCha20Rng {
        cuzk_testkit::test_rng("fixed_base")
    }

    fn edge_scalars(rng: &mut ChaCha20Rng) -> Vec<Fr> {
        let mut s = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64), -Fr::from(2u64)];
        // Digits at the radix boundaries of common windows.
        for w in [8u32, 13, 16] {
            let half = Fr::from(1u64 << (w - 1));
            s.extend([half, half + Fr::ONE, half - Fr::ONE, -half]);
        }
        s.extend((0..40).map(|_| Fr::random(&mut *rng)));
        s
    }

    #[test]
    fn signed_digits_recompose() {
        let mut rng = rng();
        for w in 1..=24 {
            for s in edge_scalars(&mut rng) {
                let digits = signed_digits(&s, w);
                let half = 1i64 << (w - 1);
                let mut acc = Fr::ZERO;
                let radix = Fr::from(1u64 << w);
                for &d in digits.iter().rev() {
                    assert!((-half..=half).contains(&(d as i64)), "w {w}: digit {d}");
                    let d_abs = Fr::from(d.unsigned_abs() as u64);
                    acc = acc * radix + if d < 0 { -d_abs } else { d_abs };
                }
                assert_eq!(acc, s, "w {w}");
            }
        }
    }

    fn check_table<G: KeyCurve>(base: G, rng: &mut ChaCha20Rng) {
        for w in [1u32, 2, 5, 8, 11] {
            let table = WindowTable::new(base, w);
            assert_eq!(table.points().len(), table.windows() << (w - 1));
            for s in edge_scalars(rng) {
                assert_eq!(table.mul(&s), base * s, "window {w}");
            }
        }
    }

    fn check_batch_mul<G: KeyCurve>(base: G, rng: &mut ChaCha20Rng) {
        for w in [1u32, 4, 8, 13, 16] {
            let table = WindowTable::new(base, w);
            let mut scalars = edge_scalars(rng);
            // Top digits only, and top digit plus one.
            let top = Fr::from(2u64).pow_vartime([(w as u64) * (windows_for(w) as u64 - 1)]);
            for d in [1u64, 2, 3, 7] {
                scalars.push(top * Fr::from(2 * d));
                scalars.push(top * Fr::from(d) + Fr::ONE);
            }
            // Repeats: equal accumulators in one batch.
            let r = Fr::random(&mut *rng);
            scalars.extend([r, r, -r]);
            let mut out = vec![G::Affine::identity(); scalars.len()];
            table.mul_batch(&scalars, &mut out);
            for (s, o) in scalars.iter().zip(&out) {
                assert_eq!(*o, (base * s).to_affine(), "window {w}, scalar {s:?}");
            }
        }
    }

    #[test]
    fn batch_multiplication_matches_scalar_multiplication() {
        let mut rng = rng();
        check_batch_mul(G1Projective::random(&mut rng), &mut rng);
        check_batch_mul(G2Projective::random(&mut rng), &mut rng);
    }

    /// The doubling branch of `mul_batch`: with the top window's point
    /// c = d·2^(w·top)·base and a scalar s = 2c mod r, the lower digits of s
    /// can sum to c − r ≡ c, so the accumulator equals the point added to it.
    /// A search over w ≤ 16 and all top digits found d = 7 for these widths.
    /// (The P − P branch would need s ≡ 0, whose digits are all zero: it is
    /// there for exactness only.)
    #[test]
    fn batch_multiplication_doubles_when_the_accumulator_meets_the_table() {
        let mut rng = rng();
        let base = G1Projective::random(&mut rng);
        for w in [4u32, 6, 7, 9, 12, 14] {
            let top = windows_for(w) - 1;
            let radix = |k: usize| Fr::from(2u64).pow_vartime([w as u64 * k as u64]);
            let c = radix(top) * Fr::from(7u64);
            let s = c + c;
            let digits = signed_digits(&s, w);
            assert_eq!(digits[top], 7, "w {w}");
            let lower: Fr = digits[..top]
                .iter()
                .enumerate()
                .map(|(k, &d)| {
                    let v = radix(k) * Fr::from(d.unsigned_abs() as u64);
                    if d < 0 {
                        -v
                    } else {
                        v
                    }
                })
                .sum();
            assert_eq!(lower, c, "w {w}: no collision, the branch is not exercised");
            let table = WindowTable::new(base, w);
            let mut out = [G1Affine::identity(); 2];
            table.mul_batch(&[s, Fr::random(&mut rng)], &mut out);
            assert_eq!(out[0], (base * s).to_affine(), "w {w}");
        }
    }

    #[test]
    fn window_table_matches_scalar_multiplication() {
        let mut rng = rng();
        check_table(G1Projective::random(&mut rng), &mut rng);
        check_table(G2Projective::random(&mut rng), &mut rng);
    }

    fn check_batch<G: KeyCurve>(rng: &mut ChaCha20Rng) {
        let mut points: Vec<G> = (0..37).map(|_| G::random(&mut *rng)).collect();
        points[0] = G::identity();
        points[17] = G::identity();
        points[36] = G::identity();
        let mut out = vec![G::Affine::identity(); points.len()];
        batch_to_affine(&points, &mut out);
        for (p, o) in points.iter().zip(&out) {
            assert_eq!(p.to_affine(), *o);
        }
        let all_identity = vec![G::identity(); 3];
        let mut out = vec![G::generator().to_affine(); 3];
        batch_to_affine(&all_identity, &mut out);
        assert!(out.iter().all(|o| bool::from(o.is_identity())));
    }

    #[test]
    fn batch_to_affine_matches_to_affine() {
        let mut rng = rng();
        check_batch::<G1Projective>(&mut rng);
        check_batch::<G2Projective>(&mut rng);
    }

    #[test]
    fn cpu_fixed_base_batches() {
        let mut rng = rng();
        let g1 = G1Projective::random(&mut rng);
        let g2 = G2Projective::random(&mut rng);
        let a = edge_scalars(&mut rng);
        let b: Vec<Fr> = (0..CHUNK + 3).map(|_| Fr::random(&mut rng)).collect();
        let batches: [&[Fr]; 3] = [&a, &[], &b];
        let out1 = CpuFixedBase.mul_g1(g1, &batches).unwrap();
        let out2 = CpuFixedBase.mul_g2(g2, &batches).unwrap();
        for (i, scalars) in batches.iter().enumerate() {
            assert_eq!(out1[i].len(), scalars.len());
            for (s, (p1, p2)) in scalars.iter().zip(out1[i].iter().zip(&out2[i])) {
                assert_eq!(*p1, (g1 * s).to_affine());
                assert_eq!(*p2, (g2 * s).to_affine());
            }
        }
    }

    #[test]
    fn cpu_window_grows_with_the_batch() {
        assert!(cpu_window_for(1) <= 3);
        assert!(cpu_window_for(1 << 10) < cpu_window_for(1 << 20));
        assert_eq!(cpu_window_for(1 << 27), MAX_CPU_WINDOW);
    }
}
