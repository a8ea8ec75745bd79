//! Device tests for the field, curve and NTT kernels: every result is
//! compared with the CPU (blstrs, cuzk-field's NTT) on fresh random inputs
//! (the seed is printed; set CUZK_TEST_SEED to replay), plus edge cases.
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cuzk_cuda::ntt::{h_finish, h_mul, h_step, ntt, ntt_with, NttConfig, NttKind};
use cuzk_cuda::testing::{curve_op, field_op, CurveOp, FieldOp, TestCurve, TestField};
use cuzk_cuda::{DeviceBuffer, Gpu, Stream};
use cuzk_field::limbs::{
    fr_as_limbs, limbs_as_fr, DeviceRepr, Fq2Limbs, FqLimbs, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::ntt::Domain;
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand::Rng;
use rand_chacha::ChaCha20Rng;

// ---- harness ---------------------------------------------------------------

/// The device and a stream, or None (after printing why) when there is no GPU.
fn device(test: &str) -> Option<(Gpu, Stream)> {
    match Gpu::first() {
        Ok(Some(gpu)) => {
            let stream = gpu.new_stream().expect("stream");
            Some((gpu, stream))
        }
        Ok(None) => {
            println!("{test}: skipped: no CUDA device");
            None
        }
        Err(e) => panic!("{test}: CUDA device present but unusable: {e}"),
    }
}

fn rng(test: &str) -> ChaCha20Rng {
    cuzk_testkit::test_rng(test)
}

/// Limb types that can be filled with a poison pattern (0xA5 bytes), so that
/// an element a kernel fails to write cannot pass as zero.
trait Poison: DeviceRepr + Default + Copy {
    fn poison() -> Self;
}
const POISON: u64 = 0xA5A5_A5A5_A5A5_A5A5;
impl Poison for FrLimbs {
    fn poison() -> Self {
        FrLimbs([POISON; 4])
    }
}
impl Poison for FqLimbs {
    fn poison() -> Self {
        FqLimbs([POISON; 6])
    }
}
impl Poison for Fq2Limbs {
    fn poison() -> Self {
        Fq2Limbs {
            c0: FqLimbs::poison(),
            c1: FqLimbs::poison(),
        }
    }
}
impl Poison for G1AffineLimbs {
    fn poison() -> Self {
        G1AffineLimbs {
            x: FqLimbs::poison(),
            y: FqLimbs::poison(),
        }
    }
}
impl Poison for G2AffineLimbs {
    fn poison() -> Self {
        G2AffineLimbs {
            x: Fq2Limbs::poison(),
            y: Fq2Limbs::poison(),
        }
    }
}

fn poisoned<T: Poison>(stream: &Stream, len: usize) -> DeviceBuffer<T> {
    stream
        .upload_new(&vec![T::poison(); len])
        .expect("upload poison")
}

// ---- limb conversions without unsafe ---------------------------------------

fn fq_limbs(x: Fp) -> FqLimbs {
    G1AffineLimbs::from(G1Affine::from_raw_unchecked(x, Fp::ZERO, false)).x
}
fn fq_from(l: FqLimbs) -> Fp {
    Fp::from_raw_unchecked(l.0)
}
fn fq2_limbs(x: Fp2) -> Fq2Limbs {
    G2AffineLimbs::from(G2Affine::from_raw_unchecked(x, Fp2::ZERO, false)).x
}
fn fq2_from(l: Fq2Limbs) -> Fp2 {
    Fp2::new(fq_from(l.c0), fq_from(l.c1))
}
fn le_u64s<const N: usize>(bytes: &[u8]) -> [u64; N] {
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
}

// ---- fields ----------------------------------------------------------------

/// The host side of a field under test: arithmetic and conversions.
trait HostField: Field {
    type Limbs: TestField + Poison + PartialEq + std::fmt::Debug;
    fn limbs(self) -> Self::Limbs;
    fn from_limbs(l: Self::Limbs) -> Self;
    /// The canonical (non-Montgomery) integer's limbs.
    fn canonical(self) -> Self::Limbs;
}

impl HostField for Fr {
    type Limbs = FrLimbs;
    fn limbs(self) -> FrLimbs {
        FrLimbs::from(self)
    }
    fn from_limbs(l: FrLimbs) -> Self {
        Fr::from(l)
    }
    fn canonical(self) -> FrLimbs {
        FrLimbs(le_u64s(self.to_repr().as_ref()))
    }
}
impl HostField for Fp {
    type Limbs = FqLimbs;
    fn limbs(self) -> FqLimbs {
        fq_limbs(self)
    }
    fn from_limbs(l: FqLimbs) -> Self {
        fq_from(l)
    }
    fn canonical(self) -> FqLimbs {
        FqLimbs(le_u64s(&self.to_bytes_le()))
    }
}
impl HostField for Fp2 {
    type Limbs = Fq2Limbs;
    fn limbs(self) -> Fq2Limbs {
        fq2_limbs(self)
    }
    fn from_limbs(l: Fq2Limbs) -> Self {
        fq2_from(l)
    }
    fn canonical(self) -> Fq2Limbs {
        Fq2Limbs {
            c0: self.c0().canonical(),
            c1: self.c1().canonical(),
        }
    }
}

fn edge_values<F: HostField>() -> Vec<F> {
    vec![
        F::ZERO,
        F::ONE,
        -F::ONE,
        F::ONE.double(),
        -F::ONE.double(),
        F::ZERO,
    ]
}

fn check_field<F: HostField>(name: &str, n_random: usize) {
    let test = format!("field_ops_{name}");
    let Some((_gpu, stream)) = device(&test) else {
        return;
    };
    let mut rng = rng(&test);
    // a: edge cases, then random; b: edge cases crossed with a, then random.
    let edges = edge_values::<F>();
    let mut a: Vec<F> = Vec::new();
    let mut b: Vec<F> = Vec::new();
    for x in &edges {
        for y in &edges {
            a.push(*x);
            b.push(*y);
        }
    }
    for i in 0..n_random {
        let x = F::random(&mut rng);
        a.push(x);
        // Every 7th pair is equal (for Eq), every 11th b is zero.
        b.push(if i % 7 == 0 {
            x
        } else if i % 11 == 0 {
            F::ZERO
        } else {
            F::random(&mut rng)
        });
    }
    let n = a.len();
    let a_limbs: Vec<F::Limbs> = a.iter().map(|x| x.limbs()).collect();
    let b_limbs: Vec<F::Limbs> = b.iter().map(|x| x.limbs()).collect();
    let a_canon: Vec<F::Limbs> = a.iter().map(|x| x.canonical()).collect();
    let da = stream.upload_new(&a_limbs).unwrap();
    let db = stream.upload_new(&b_limbs).unwrap();
    let da_canon = stream.upload_new(&a_canon).unwrap();

    for op in FieldOp::ALL {
        let mut out = poisoned::<F::Limbs>(&stream, n);
        let input = if op == FieldOp::ToMont {
            &da_canon
        } else {
            &da
        };
        field_op(&stream, op, &mut out, input, &db).unwrap();
        let got = stream.download_vec(&out).unwrap();
        let mut bad = 0;
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let bool_field = |c: bool| if c { F::ONE } else { F::ZERO };
            let want: F::Limbs = match op {
                FieldOp::Add => (x + y).limbs(),
                FieldOp::Sub => (x - y).limbs(),
                FieldOp::Mul => (x * y).limbs(),
                FieldOp::Sqr => x.square().limbs(),
                FieldOp::Neg => (-x).limbs(),
                FieldOp::Dbl => x.double().limbs(),
                FieldOp::ToMont => x.limbs(),
                FieldOp::FromMont => x.canonical(),
                FieldOp::Inv | FieldOp::InvFermat => x.invert().unwrap_or(F::ZERO).limbs(),
                FieldOp::Eq => bool_field(x == y).limbs(),
                FieldOp::IsZero => bool_field(bool::from(x.is_zero())).limbs(),
                FieldOp::MulReducedRadix | FieldOp::MulCios | FieldOp::MulFp64 => (x * y).limbs(),
            };
            if got[i] != want {
                if bad < 3 {
                    eprintln!(
                        "{test}: {op:?} element {i}: got {:?}, want {want:?}",
                        got[i]
                    );
                }
                bad += 1;
            }
        }
        assert_eq!(bad, 0, "{test}: {op:?}: {bad} of {n} wrong");
        println!("{test}: {op:?}: {n} ok");
    }
    // Round trip through from_limbs keeps the test honest about the helpers.
    assert_eq!(F::from_limbs(a[n - 1].limbs()), a[n - 1]);
}

fn field_ops_fr() {
    check_field::<Fr>("fr", 4096);
}

fn field_ops_fq() {
    check_field::<Fp>("fq", 4096);
}

fn field_ops_fq2() {
    check_field::<Fp2>("fq2", 2048);
}

// ---- curves ----------------------------------------------------------------

trait HostCurve: Group + Curve<AffineRepr = Self::Affine> + std::fmt::Debug {
    type Affine: Copy + PartialEq + std::fmt::Debug + Into<Self::Limbs>;
    type Base: Poison;
    type Limbs: TestCurve<Base = Self::Base> + Poison + PartialEq + std::fmt::Debug;
    fn from_jacobian(x: Self::Base, y: Self::Base, z: Self::Base) -> Self;
}

impl HostCurve for G1Projective {
    type Affine = G1Affine;
    type Base = FqLimbs;
    type Limbs = G1AffineLimbs;
    fn from_jacobian(x: FqLimbs, y: FqLimbs, z: FqLimbs) -> Self {
        G1Projective::from_raw_unchecked(fq_from(x), fq_from(y), fq_from(z))
    }
}
impl HostCurve for G2Projective {
    type Affine = G2Affine;
    type Base = Fq2Limbs;
    type Limbs = G2AffineLimbs;
    fn from_jacobian(x: Fq2Limbs, y: Fq2Limbs, z: Fq2Limbs) -> Self {
        G2Projective::from_raw_unchecked(fq2_from(x), fq2_from(y), fq2_from(z))
    }
}

fn check_curve<G: HostCurve>(name: &str, n_random: usize) {
    let test = format!("curve_ops_{name}");
    let Some((_gpu, stream)) = device(&test) else {
        return;
    };
    let mut rng = rng(&test);
    let mut a: Vec<G> = Vec::new();
    let mut b: Vec<G> = Vec::new();
    let p = G::random(&mut rng);
    let q = G::random(&mut rng);
    // Edge cases: infinity on either side or both, P = Q, P = −Q, generator.
    for (x, y) in [
        (G::identity(), q),
        (p, G::identity()),
        (G::identity(), G::identity()),
        (p, p),
        (p, -p),
        (G::generator(), G::generator().double()),
    ] {
        a.push(x);
        b.push(y);
    }
    for _ in 0..n_random {
        a.push(G::random(&mut rng));
        b.push(G::random(&mut rng));
    }
    let n = a.len();
    let a_aff: Vec<G::Limbs> = a.iter().map(|x| x.to_affine().into()).collect();
    let b_aff: Vec<G::Limbs> = b.iter().map(|x| x.to_affine().into()).collect();
    let da = stream.upload_new(&a_aff).unwrap();
    let db = stream.upload_new(&b_aff).unwrap();
    for op in CurveOp::ALL {
        let mut out = poisoned::<G::Limbs>(&stream, n);
        let mut jac = poisoned::<G::Base>(&stream, 3 * n);
        curve_op(&stream, op, &mut out, &mut jac, &da, &db).unwrap();
        let got = stream.download_vec(&out).unwrap();
        let got_jac = stream.download_vec(&jac).unwrap();
        let mut bad = 0;
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let want = match op {
                CurveOp::AddAffine => x + y,
                CurveOp::Add => x.double() + y.double(),
                CurveOp::Dbl | CurveOp::AddSelf => x.double().double(),
                CurveOp::Neg => -(x + y),
                CurveOp::AddAffineZ => x.double() + y,
                CurveOp::AddNeg => G::identity(),
                CurveOp::AddAffineSelf => x.double(),
                CurveOp::SubAffine => x - y,
            };
            let want_aff: G::Limbs = want.to_affine().into();
            let jac = G::from_jacobian(got_jac[3 * i], got_jac[3 * i + 1], got_jac[3 * i + 2]);
            if got[i] != want_aff || jac != want {
                if bad < 3 {
                    eprintln!(
                        "{test}: {op:?} element {i}: affine ok = {}, jacobian ok = {}",
                        got[i] == want_aff,
                        jac == want
                    );
                }
                bad += 1;
            }
        }
        assert_eq!(bad, 0, "{test}: {op:?}: {bad} of {n} wrong");
        println!("{test}: {op:?}: {n} ok");
    }
}

fn curve_ops_g1() {
    check_curve::<G1Projective>("g1", 1024);
}

fn curve_ops_g2() {
    check_curve::<G2Projective>("g2", 512);
}

// ---- NTT -------------------------------------------------------------------

fn cpu_ntt(domain: &Domain, kind: NttKind, v: &mut [Fr]) {
    match kind {
        NttKind::Forward => domain.ntt(v),
        NttKind::Inverse => domain.intt(v),
        NttKind::CosetForward => domain.coset_ntt(v),
        NttKind::CosetInverse => domain.coset_intt(v),
    }
}

fn random_fr(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

/// Uniform random limbs below 2^254 < r (valid reduced Montgomery values),
/// much faster than `Fr::random` for the 2^27 case.
fn random_fr_fast(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    (0..n)
        .map(|_| {
            let mut l: [u64; 4] = rng.gen();
            l[3] &= (1 << 62) - 1;
            Fr::from(FrLimbs(l))
        })
        .collect()
}

fn gpu_ntt(stream: &Stream, kind: NttKind, v: &[Fr]) -> Vec<Fr> {
    let mut buf = stream.upload_new(fr_as_limbs(v)).unwrap();
    ntt(stream, &mut buf, kind).unwrap();
    let out = stream.download_vec(&buf).unwrap();
    limbs_as_fr(&out).to_vec()
}

fn ntt_matches_cpu_every_kind() {
    let test = "ntt_matches_cpu_every_kind";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut rng = rng(test);
    // Sizes that cover every pass plan shape: one pass (1..=10), two equal
    // passes (12, 14, 16, 18, 20), three passes (11, 13, 15, 17, 19, 21).
    for log_n in (0..=18).chain([19, 20, 21]) {
        let domain = Domain::new(log_n);
        let n = 1usize << log_n;
        for kind in NttKind::ALL {
            let mut input = random_fr(&mut rng, n);
            if log_n == 3 {
                // Edge values among the inputs: zero, one, r − 1.
                input[0] = Fr::ZERO;
                input[1] = Fr::ONE;
                input[2] = -Fr::ONE;
            }
            let mut want = input.clone();
            cpu_ntt(&domain, kind, &mut want);
            let got = gpu_ntt(&stream, kind, &input);
            let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
            assert_eq!(bad, 0, "{test}: 2^{log_n} {kind:?}: {bad} of {n} wrong");
        }
        println!("{test}: 2^{log_n}: all four kinds match the CPU");
    }
}

fn ntt_every_launch_shape_matches_cpu() {
    let test = "ntt_launch_shapes";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut rng = rng(test);
    for log_n in [4u32, 11, 13, 16, 19, 20] {
        let domain = Domain::new(log_n);
        let n = 1usize << log_n;
        for config in NttConfig::all() {
            for kind in NttKind::ALL {
                let input = random_fr(&mut rng, n);
                let mut want = input.clone();
                cpu_ntt(&domain, kind, &mut want);
                let mut buf = stream.upload_new(fr_as_limbs(&input)).unwrap();
                ntt_with(&stream, &mut buf, kind, config).unwrap();
                let got = stream.download_vec(&buf).unwrap();
                assert!(
                    limbs_as_fr(&got) == &want[..],
                    "{test}: 2^{log_n} {kind:?} {config:?}"
                );
            }
        }
        println!("{test}: 2^{log_n}: every tile size and thread count matches the CPU");
    }
}

/// The fused passes (levels fused into the loads and stores, the digit
/// reversal done by the middle pass) against the plain passes on the GPU,
/// at sizes the CPU reference would take too long for: the same input, the
/// same shape, each fusion off.
fn ntt_fused_passes_match_unfused() {
    let test = "ntt_fused";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut rng = rng(test);
    let cases: [(u32, &[NttKind]); 6] = [
        (19, &NttKind::ALL),
        (21, &NttKind::ALL),
        (22, &NttKind::ALL),
        (23, &NttKind::ALL),
        (25, &NttKind::ALL),
        (27, &[NttKind::Forward, NttKind::CosetInverse]),
    ];
    for (log_n, kinds) in cases {
        let n = 1usize << log_n;
        let input = stream
            .upload_new(fr_as_limbs(&random_fr_fast(&mut rng, n)))
            .unwrap();
        let fused = NttConfig::for_log_n(log_n);
        assert!(fused.fuse_edges && fused.fuse_reversal, "{test}: {fused:?}");
        let plain = NttConfig {
            fuse_edges: false,
            fuse_reversal: false,
            stream_hint: false,
            ..fused
        };
        let mut buf: DeviceBuffer<FrLimbs> = stream.alloc(n).unwrap();
        for &kind in kinds {
            let mut outputs = Vec::new();
            for config in [plain, fused] {
                stream.copy(&input, &mut buf).unwrap();
                ntt_with(&stream, &mut buf, kind, config).unwrap();
                outputs.push(stream.download_vec(&buf).unwrap());
            }
            let bad = outputs[0]
                .iter()
                .zip(&outputs[1])
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(bad, 0, "{test}: 2^{log_n} {kind:?}: {bad} of {n} differ");
        }
        println!("{test}: 2^{log_n}: fused passes match the plain ones ({kinds:?})");
    }
}

fn ntt_round_trips_and_spot_checks_at_large_sizes() {
    let test = "ntt_large";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut rng = rng(test);
    for log_n in [22u32, 24, 27] {
        let n = 1usize << log_n;
        let input = random_fr_fast(&mut rng, n);
        // ω of the domain, without building the CPU domain's 2^26-entry tables.
        let omega = Fr::ROOT_OF_UNITY.pow_vartime([1u64 << (Fr::S - log_n)]);
        let g = Domain::coset_generator();
        let mut buf = stream.upload_new(fr_as_limbs(&input)).unwrap();
        // Forward, spot-check two evaluations by Horner, then inverse back.
        ntt(&stream, &mut buf, NttKind::CosetForward).unwrap();
        let evals = stream.download_vec(&buf).unwrap();
        if log_n <= 24 {
            for _ in 0..2 {
                let k = rng.gen_range(0..n);
                let x = g * omega.pow_vartime([k as u64]);
                let want = input.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c);
                assert_eq!(
                    Fr::from(evals[k]),
                    want,
                    "{test}: 2^{log_n} coset evaluation {k}"
                );
            }
        }
        ntt(&stream, &mut buf, NttKind::CosetInverse).unwrap();
        let back = stream.download_vec(&buf).unwrap();
        assert!(
            limbs_as_fr(&back) == &input[..],
            "{test}: 2^{log_n} coset round trip"
        );
        ntt(&stream, &mut buf, NttKind::Forward).unwrap();
        ntt(&stream, &mut buf, NttKind::Inverse).unwrap();
        let back = stream.download_vec(&buf).unwrap();
        assert!(
            limbs_as_fr(&back) == &input[..],
            "{test}: 2^{log_n} round trip"
        );
        println!("{test}: 2^{log_n}: round trips exact, spot checks ok");
    }
}

fn h_step_and_h_pipeline_match_cpu() {
    let test = "h_pipeline";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut rng = rng(test);
    for log_n in [1u32, 5, 12, 17] {
        let n = 1usize << log_n;
        let domain = Domain::new(log_n);
        let (a, b, c) = (
            random_fr(&mut rng, n),
            random_fr(&mut rng, n),
            random_fr(&mut rng, n),
        );
        // CPU: bellperson's sequence.
        let z_inv = domain.z_on_coset().invert().unwrap();
        let mut ca = a.clone();
        let (mut cb, mut cc) = (b.clone(), c.clone());
        for v in [&mut ca, &mut cb, &mut cc] {
            domain.intt(v);
            domain.coset_ntt(v);
        }
        let step: Vec<Fr> = (0..n).map(|i| (ca[i] * cb[i] - cc[i]) * z_inv).collect();
        let mut want = step.clone();
        domain.coset_intt(&mut want);
        // GPU.
        let mut da = stream.upload_new(fr_as_limbs(&a)).unwrap();
        let mut db = stream.upload_new(fr_as_limbs(&b)).unwrap();
        let mut dc = stream.upload_new(fr_as_limbs(&c)).unwrap();
        for d in [&mut da, &mut db, &mut dc] {
            ntt(&stream, d, NttKind::Inverse).unwrap();
            ntt(&stream, d, NttKind::CosetForward).unwrap();
        }
        // The lean H step (two halves) on copies first: the same values.
        let mut lean = stream.alloc::<FrLimbs>(n).unwrap();
        stream.copy_range(&da, 0, &mut lean, 0, n).unwrap();
        h_mul(&stream, &mut lean, &db).unwrap();
        h_finish(&stream, &mut lean, &dc).unwrap();
        let got_lean = stream.download_vec(&lean).unwrap();
        assert!(
            limbs_as_fr(&got_lean) == &step[..],
            "{test}: 2^{log_n} lean h step (h_mul, h_finish)"
        );
        h_step(&stream, &mut da, &db, &dc).unwrap();
        let got_step = stream.download_vec(&da).unwrap();
        assert!(
            limbs_as_fr(&got_step) == &step[..],
            "{test}: 2^{log_n} h step"
        );
        ntt(&stream, &mut da, NttKind::CosetInverse).unwrap();
        let got = stream.download_vec(&da).unwrap();
        assert!(
            limbs_as_fr(&got) == &want[..],
            "{test}: 2^{log_n} h polynomial"
        );
        println!("{test}: 2^{log_n}: h step and h polynomial match");
    }
}

fn wrappers_reject_bad_sizes() {
    let test = "bad_sizes";
    let Some((_gpu, stream)) = device(test) else {
        return;
    };
    let mut three = stream.alloc::<FrLimbs>(3).unwrap();
    let err = ntt(&stream, &mut three, NttKind::Forward).unwrap_err();
    assert!(err.to_string().contains("ntt_pass"), "{err}");
    let mut a = stream.alloc::<FrLimbs>(4).unwrap();
    let b = stream.alloc::<FrLimbs>(8).unwrap();
    let err = h_step(&stream, &mut a, &b, &b).unwrap_err();
    assert!(err.to_string().contains("ntt_h_step"), "{err}");
    let err = h_mul(&stream, &mut a, &b).unwrap_err();
    assert!(err.to_string().contains("ntt_h_mul"), "{err}");
    let err = h_finish(&stream, &mut a, &b).unwrap_err();
    assert!(err.to_string().contains("ntt_h_finish"), "{err}");
    println!("{test}: ok");
}

// ---- buffer suffixes ---------------------------------------------------------

/// `DeviceBuffer::into_suffix` reads the tail of a buffer in place (no
/// copy), refuses an offset past the end, and the whole region goes back to
/// the arena when the suffix drops.
fn a_suffix_reads_the_tail_in_place() {
    const MIB: u64 = 1 << 20;
    let Some((gpu, _)) = device("a_suffix_reads_the_tail_in_place") else {
        return;
    };
    // A 16 MiB arena of its own, so the counts below are exact.
    let s = gpu.budgeted_stream(16 * MIB).expect("16 MiB arena");
    let arena = s.arena().clone();
    let mut rng = rng("suffix");
    let values: Vec<u32> = (0..(1 << 20)).map(|_| rng.gen()).collect();
    let a = s.upload_new(&values).expect("4 MiB");
    assert_eq!(arena.usage().in_use, 4 * MIB);
    let tail = a.into_suffix(328).expect("suffix");
    assert_eq!(tail.len(), values.len() - 328);
    assert_eq!(s.download_vec(&tail).unwrap(), values[328..]);
    let whole = s.upload_new(&values[..8]).unwrap().into_suffix(8).unwrap();
    assert!(whole.is_empty());
    assert!(s.upload_new(&values[..8]).unwrap().into_suffix(9).is_err());
    drop((tail, whole));
    s.synchronize().unwrap();
    // Everything came back: the whole arena in one piece, without waiting.
    let all = s.alloc::<u8>(16 << 20).expect("the whole arena again");
    assert_eq!(all.len(), 16 << 20);
    assert_eq!(arena.usage().fence_waits, 0, "{}", arena.usage());
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "gpu",
        &cuzk_testkit::gpu_tests![
            field_ops_fr,
            field_ops_fq,
            field_ops_fq2,
            curve_ops_g1,
            curve_ops_g2,
            ntt_matches_cpu_every_kind,
            ntt_every_launch_shape_matches_cpu,
            ntt_fused_passes_match_unfused,
            ntt_round_trips_and_spot_checks_at_large_sizes,
            h_step_and_h_pipeline_match_cpu,
            wrappers_reject_bad_sizes,
            a_suffix_reads_the_tail_in_place
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
