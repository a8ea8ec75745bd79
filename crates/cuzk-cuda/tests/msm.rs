//! GPU MSM, batch sums and scalar classification against the CPU reference
//! (`cuzk_field::msm`, `cuzk_field::classify`), on fresh random inputs every
//! run (the seed is printed; `CUZK_TEST_SEED=<seed>` repeats a run) plus the
//! edge cases: n = 1, n not a power of two, zero and one scalars, all-equal
//! scalars, r − 1, infinity among the bases, repeated bases, P and −P.
//!
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use cuzk_cuda::msm::{
    copies_for, data, BatchSum, BucketSort, Classifier, Msm, MsmCurve, ShiftedBases, G1, G2,
};
use cuzk_cuda::{DeviceBuffer, Stream};
use cuzk_field::classify::classify;
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::msm::{msm_g1, msm_g2, sum_g1, sum_g2};
use cuzk_field::{
    Curve, Field, Fr, G1Affine, G1Projective, G2Affine, G2Projective, Group, PrimeCurveAffine,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use cuzk_cuda::testing::test_stream as stream;
use cuzk_testkit::test_seed;

fn rng(test: &str) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(test_seed(test))
}

/// The host side of one curve: reference MSM and sum, point making.
trait HostCurve: MsmCurve {
    type Aff: Copy + PartialEq + std::fmt::Debug + Send + Sync;
    fn random_point(rng: &mut ChaCha20Rng) -> Self::Projective;
    /// P_i = p0 + i·step, normalized.
    fn chain(p0: Self::Projective, step: Self::Projective, n: usize) -> Vec<Self::Aff>;
    fn identity_aff() -> Self::Aff;
    fn neg_aff(p: &Self::Aff) -> Self::Aff;
    fn limbs(points: &[Self::Aff]) -> Vec<Self::Affine>;
    fn to_aff(p: &Self::Projective) -> Self::Aff;
    fn msm_ref(bases: &[Self::Aff], scalars: &[Fr]) -> Self::Projective;
    fn sum_ref(bases: &[Self::Aff], idx: &[u32]) -> Self::Projective;
}

/// [`HostCurve`] for a curve of `cuzk_cuda::msm` from its host types
/// (blstrs' affine and projective points, the limb view, the CPU MSM and
/// sum): G1 and G2 are the same code over other types.
macro_rules! host_curve {
    ($curve:ty, $aff:ty, $proj:ty, $limbs:ty, $as_limbs:path, $msm:path, $sum:path) => {
        impl HostCurve for $curve {
            type Aff = $aff;
            fn random_point(rng: &mut ChaCha20Rng) -> $proj {
                <$proj>::generator() * Fr::random(rng)
            }
            fn chain(p0: $proj, step: $proj, n: usize) -> Vec<$aff> {
                let mut proj = Vec::with_capacity(n);
                let mut p = p0;
                for _ in 0..n {
                    proj.push(p);
                    p += step;
                }
                let mut out = vec![<$aff>::identity(); n];
                <$proj>::batch_normalize(&proj, &mut out);
                out
            }
            fn identity_aff() -> $aff {
                <$aff>::identity()
            }
            fn neg_aff(p: &$aff) -> $aff {
                -*p
            }
            fn limbs(points: &[$aff]) -> Vec<$limbs> {
                $as_limbs(points).to_vec()
            }
            fn to_aff(p: &$proj) -> $aff {
                p.to_affine()
            }
            fn msm_ref(bases: &[$aff], scalars: &[Fr]) -> $proj {
                $msm(bases, scalars)
            }
            fn sum_ref(bases: &[$aff], idx: &[u32]) -> $proj {
                $sum(bases, idx)
            }
        }
    };
}

host_curve!(
    G1,
    G1Affine,
    G1Projective,
    G1AffineLimbs,
    g1_as_limbs,
    msm_g1,
    sum_g1
);
host_curve!(
    G2,
    G2Affine,
    G2Projective,
    G2AffineLimbs,
    g2_as_limbs,
    msm_g2,
    sum_g2
);

/// Distinct random-looking bases: a chain from a random start by a random step.
fn bases<C: HostCurve>(rng: &mut ChaCha20Rng, n: usize) -> Vec<C::Aff> {
    let p0 = C::random_point(rng);
    let step = C::random_point(rng);
    C::chain(p0, step, n)
}

fn random_scalars(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

fn upload_bases<C: HostCurve>(s: &Stream, bases: &[C::Aff]) -> DeviceBuffer<C::Affine> {
    s.upload_new(&C::limbs(bases)).expect("upload bases")
}

fn upload_scalars(s: &Stream, scalars: &[Fr]) -> DeviceBuffer<FrLimbs> {
    s.upload_new(fr_as_limbs(scalars)).expect("upload scalars")
}

/// The one MSM check: GPU (window `c`, or the automatic choice) against the
/// CPU reference, run twice on one `Msm` to catch stale scratch.
fn check_msm<C: HostCurve>(
    s: &Stream,
    bases: &[C::Aff],
    scalars: &[Fr],
    c: Option<u32>,
    label: &str,
) {
    let n = scalars.len();
    let b = upload_bases::<C>(s, bases);
    let sc = upload_scalars(s, scalars);
    let mut msm = match c {
        Some(c) => Msm::<C>::with_window_bits(s, n, c),
        None => Msm::<C>::new(s, n),
    }
    .expect("msm plan");
    let expected = C::msm_ref(bases, scalars);
    for round in 0..2 {
        let got = msm.run(&b, &sc).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(
            got,
            expected,
            "{} {label}, n = {n}, plan {:?}, round {round}",
            C::NAME,
            msm.plan()
        );
    }
}

/// Scalars that stress the digit decomposition and the buckets.
fn special_scalars(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    let minus_one = -Fr::ONE;
    let repeated = Fr::random(&mut *rng);
    (0..n)
        .map(|i| match i % 9 {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            2 => minus_one,
            3 => repeated,
            4 => Fr::from(2u64),
            5 => Fr::from(rng.gen::<u64>()),
            6 => -Fr::from(rng.gen::<u32>() as u64),
            7 => Fr::from(1u64 << (i % 64)),
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

/// Zeros (40%), ones (30%) and three repeated random values: PoRep-like skew.
fn skewed_scalars(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    let pool: Vec<Fr> = (0..3).map(|_| Fr::random(&mut *rng)).collect();
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0..=3 => Fr::ZERO,
            4..=6 => Fr::ONE,
            k => pool[k - 7],
        })
        .collect()
}

/// Over `run`, one base repeated with one scalar (bucket additions meet
/// P + P); over `pairs`, pairs (i, i + 1) of P and −P with equal scalars
/// (P + (−P)).
fn plant_repeated_and_opposite<C: HostCurve>(
    b: &mut [C::Aff],
    scalars: &mut [Fr],
    repeated: Fr,
    run: std::ops::Range<usize>,
    pairs: std::ops::Range<usize>,
) {
    for i in run.start + 1..run.end {
        b[i] = b[run.start];
    }
    for sc in &mut scalars[run] {
        *sc = repeated;
    }
    for i in pairs.step_by(2) {
        b[i + 1] = C::neg_aff(&b[i]);
        scalars[i + 1] = scalars[i];
    }
}

fn msm_suite<C: HostCurve>(name: &str, sizes: &[usize], windows: &[u32]) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let max = *sizes.iter().max().unwrap();
    let all = bases::<C>(&mut rng, max);
    for &n in sizes {
        check_msm::<C>(
            &s,
            &all[..n],
            &random_scalars(&mut rng, n),
            None,
            "random scalars",
        );
    }
    let n = 3001.min(max);
    let special = special_scalars(&mut rng, n);
    for &c in windows {
        check_msm::<C>(
            &s,
            &all[..n],
            &special,
            Some(c),
            &format!("special scalars, c = {c}"),
        );
    }
    // All scalars equal: one bucket per window holds every point, spanning
    // every accumulation thread (merge levels).
    let m = 20_000.min(max);
    let same = vec![Fr::random(&mut rng); m];
    check_msm::<C>(&s, &all[..m], &same, None, "all-equal scalars");
    check_msm::<C>(&s, &all[..m], &vec![-Fr::ONE; m], Some(13), "all r - 1");
    check_msm::<C>(&s, &all[..m], &vec![Fr::ZERO; m], None, "all zero");
    // A few repeated values (PoRep-like skew) with zeros and ones mixed in.
    let skew = skewed_scalars(&mut rng, m);
    check_msm::<C>(&s, &all[..m], &skew, None, "skewed scalars");
    check_msm::<C>(&s, &all[..m], &skew, Some(4), "skewed scalars, c = 4");
}

fn bases_edge_suite<C: HostCurve>(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let n = 4099;
    let mut b = bases::<C>(&mut rng, n);
    // Infinity at random places, a run of one repeated point (same scalar, so
    // bucket additions hit P + P), and P next to −P.
    for _ in 0..50 {
        let i = rng.gen_range(0..n);
        b[i] = C::identity_aff();
    }
    let mut scalars = random_scalars(&mut rng, n);
    let repeated = Fr::random(&mut rng);
    plant_repeated_and_opposite::<C>(&mut b, &mut scalars, repeated, 99..400, 1000..1100);
    check_msm::<C>(
        &s,
        &b,
        &scalars,
        None,
        "infinity, repeated and opposite bases",
    );
    check_msm::<C>(
        &s,
        &b,
        &scalars,
        Some(6),
        "infinity, repeated and opposite bases, c = 6",
    );
    let one = [C::identity_aff()];
    check_msm::<C>(&s, &one, &[Fr::random(&mut rng)], None, "n = 1, infinity");
    check_msm::<C>(&s, &b[..1], &[Fr::random(&mut rng)], None, "n = 1");
    check_msm::<C>(&s, &b[..1], &[-Fr::ONE], Some(24), "n = 1, r - 1, c = 24");
}

fn indexed_suite<C: HostCurve>(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let n = 10_007;
    let b = bases::<C>(&mut rng, n);
    let scalars = special_scalars(&mut rng, n);
    let mut idx: Vec<u32> = (0..n as u32).filter(|_| rng.gen_bool(0.3)).collect();
    let sel_b: Vec<C::Aff> = idx.iter().map(|&i| b[i as usize]).collect();
    let sel_s: Vec<Fr> = idx.iter().map(|&i| scalars[i as usize]).collect();
    let expected = C::msm_ref(&sel_b, &sel_s);
    // Out-of-range indices are skipped.
    idx.push(n as u32);
    idx.push(u32::MAX);
    let db = upload_bases::<C>(&s, &b);
    let ds = upload_scalars(&s, &scalars);
    let di = s.upload_new(&idx).unwrap();
    let mut msm = Msm::<C>::new(&s, idx.len()).unwrap();
    let got = msm.run_indexed(&db, &ds, &di, idx.len()).unwrap();
    assert_eq!(got, expected, "{} indexed MSM", C::NAME);
    // A prefix of the list.
    let k = idx.len() / 3;
    let expected = C::msm_ref(&sel_b[..k], &sel_s[..k]);
    assert_eq!(
        msm.run_indexed(&db, &ds, &di, k).unwrap(),
        expected,
        "{} indexed prefix",
        C::NAME
    );
    // A list longer than the MSM was made for: in parts (a last part
    // shorter, and a list of exactly two parts), the same sums; one call
    // alone is refused.
    let mut small = Msm::<C>::new(&s, 1000).unwrap();
    assert_eq!(small.capacity(), 1000);
    let whole = C::msm_ref(&sel_b, &sel_s);
    assert_eq!(
        small
            .run_indexed_in_parts(&db, &ds, &di, idx.len())
            .unwrap(),
        whole,
        "{} indexed in parts",
        C::NAME
    );
    let expected = C::msm_ref(&sel_b[..2000], &sel_s[..2000]);
    assert_eq!(
        small.run_indexed_in_parts(&db, &ds, &di, 2000).unwrap(),
        expected,
        "{} indexed in two parts",
        C::NAME
    );
    assert!(small.run_indexed(&db, &ds, &di, 1001).is_err());
}

fn msm_g1_matches_cpu() {
    msm_suite::<G1>(
        "msm_g1_matches_cpu",
        &[1, 2, 3, 100, 1000, 4097, (1 << 15) + 17],
        &[2, 5, 8, 13, 16, 21],
    );
}

fn msm_g2_matches_cpu() {
    msm_suite::<G2>("msm_g2_matches_cpu", &[1, 2, 257, 5000], &[3, 8, 12, 17]);
}

fn msm_g1_edge_bases() {
    bases_edge_suite::<G1>("msm_g1_edge_bases");
}

fn msm_g2_edge_bases() {
    bases_edge_suite::<G2>("msm_g2_edge_bases");
}

/// An MSM made by `Msm::new` for 2^18 pairs runs shorter calls under the
/// window its cost model picks for their own length (the scratch holds
/// them), and a full-length call under the held plan again: every result
/// equal to the CPU's.
fn per_call_window_suite<C: HostCurve>(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let n = 1 << 18;
    let b = bases::<C>(&mut rng, n);
    let scalars = special_scalars(&mut rng, n);
    let db = upload_bases::<C>(&s, &b);
    let ds = upload_scalars(&s, &scalars);
    let mut msm = Msm::<C>::new(&s, n).unwrap();
    let held = msm.plan().window_bits;
    for len in [1usize, 5, 300, 3000, 40_000, n] {
        let idx: Vec<u32> = (0..len).map(|_| rng.gen_range(0..n as u32)).collect();
        let sel_b: Vec<C::Aff> = idx.iter().map(|&i| b[i as usize]).collect();
        let sel_s: Vec<Fr> = idx.iter().map(|&i| scalars[i as usize]).collect();
        let di = s.upload_new(&idx).unwrap();
        let got = msm.run_indexed(&db, &ds, &di, len).unwrap();
        assert_eq!(got, C::msm_ref(&sel_b, &sel_s), "{} {len} pairs", C::NAME);
        let c = msm.plan().window_bits;
        assert_eq!(
            c,
            Msm::<C>::window_bits_for(len),
            "{} {len} pairs: c",
            C::NAME
        );
        if len <= 3000 {
            assert!(
                c < held,
                "{} {len} pairs ran at c = {c}, held {held}",
                C::NAME
            );
        }
    }
    assert_eq!(
        msm.run(&db, &ds).unwrap(),
        C::msm_ref(&b, &scalars),
        "{} full length again",
        C::NAME
    );
    assert_eq!(msm.plan().window_bits, held);
}

fn msm_g1_picks_the_window_per_call() {
    per_call_window_suite::<G1>("msm_g1_picks_the_window_per_call");
}

fn msm_g2_picks_the_window_per_call() {
    per_call_window_suite::<G2>("msm_g2_picks_the_window_per_call");
}

fn msm_g1_indexed() {
    indexed_suite::<G1>("msm_g1_indexed");
}

fn msm_g2_indexed() {
    indexed_suite::<G2>("msm_g2_indexed");
}

/// Both bucket sorts on one input: the same offsets, and per bucket the same
/// multiset of entries (order inside a bucket is free).
fn compare_sorts(
    s: &Stream,
    msm: &mut Msm<G1>,
    scalars: &DeviceBuffer<FrLimbs>,
    indices: Option<&DeviceBuffer<u32>>,
    len: usize,
    bound: usize,
    label: &str,
) {
    let _ = s;
    let mut got = Vec::new();
    for sort in [BucketSort::Counting, BucketSort::Radix] {
        msm.set_bucket_sort(sort).expect("bucket sort");
        // Twice on one Msm: stale scratch must not leak into the second call.
        let first = msm
            .sorted_buckets(scalars, indices, len, bound)
            .unwrap_or_else(|e| panic!("{label}, {sort:?}: {e}"));
        let again = msm.sorted_buckets(scalars, indices, len, bound).unwrap();
        assert_eq!(
            first.0, again.0,
            "{label}, {sort:?}: offsets differ between calls"
        );
        got.push(first);
    }
    let (off_c, ent_c) = &got[0];
    let (off_r, ent_r) = &got[1];
    assert_eq!(off_c.len(), off_r.len(), "{label}");
    assert!(
        off_c == off_r,
        "{label}: bucket offsets differ (totals {} and {})",
        off_c.last().unwrap(),
        off_r.last().unwrap()
    );
    assert_eq!(ent_c.len(), ent_r.len(), "{label}");
    for k in 0..off_c.len() - 1 {
        let (a, b) = (off_c[k] as usize, off_c[k + 1] as usize);
        let mut x = ent_c[a..b].to_vec();
        let mut y = ent_r[a..b].to_vec();
        x.sort_unstable();
        y.sort_unstable();
        assert!(x == y, "{label}: bucket {k} ({} entries) differs", b - a);
    }
}

/// The radix sort against the counting sort on random, special (zeros, ones,
/// r − 1, repeats), all-equal and all-zero scalars; n not a power of two,
/// n = 1; scalars shorter than the pairs; an index list with out-of-range
/// entries; c = 8 (32 windows, 2 passes), 16, 20 (3 passes), 22 (4 passes);
/// windows sorted all at once and in groups of 1 and 5 (the grouping that
/// n > 2^26 / W gets).
fn radix_sort_matches_counting_sort() {
    let Some(s) = stream() else { return };
    let mut rng = rng("radix_sort_matches_counting_sort");
    let max = 100_003;
    let random = random_scalars(&mut rng, max);
    let special = special_scalars(&mut rng, max);
    let same = vec![Fr::random(&mut rng); max];
    let zero = vec![Fr::ZERO; max];
    let mut idx: Vec<u32> = (0..max as u32).filter(|_| rng.gen_bool(0.4)).collect();
    idx.push(max as u32);
    idx.push(u32::MAX);
    idx.push(7);
    let di = s.upload_new(&idx).unwrap();
    let all_sets: &[(&Vec<Fr>, &str)] = &[
        (&random, "random"),
        (&special, "special"),
        (&same, "all equal"),
        (&zero, "all zero"),
    ];
    for c in [8u32, 16, 20, 22] {
        let mut msm = Msm::<G1>::with_window_bits(&s, max, c).expect("msm plan");
        let groups: &[Option<u32>] = if c == 16 || c == 20 {
            &[None, Some(1), Some(5)]
        } else {
            &[None]
        };
        for &group in groups {
            if let Some(g) = group {
                msm.set_radix_group(g).expect("radix group");
            }
            // The full set once per c; the groupings and the widest keys
            // (c = 22: 2.5e7 buckets to compare) on fewer inputs.
            let (sets, sizes): (&[(&Vec<Fr>, &str)], &[usize]) = match (c, group) {
                (16, None) => (all_sets, &[1, 3, 4097, max]),
                (22, _) | (_, Some(_)) => (&all_sets[..2], &[max]),
                _ => (all_sets, &[3, max]),
            };
            for &(scalars, what) in sets {
                let ds = upload_scalars(&s, scalars);
                for &n in sizes {
                    let label = format!("{what} scalars, n = {n}, c = {c}, group {group:?}");
                    compare_sorts(&s, &mut msm, &ds, None, n, max, &label);
                }
            }
            // Scalars shorter than the pairs: the last 1000 have zero digits.
            let short = upload_scalars(&s, &special[..max - 1000]);
            let label = format!("special scalars, 1000 past the array, c = {c}, group {group:?}");
            compare_sorts(&s, &mut msm, &short, None, max, max, &label);
            let ds = upload_scalars(&s, &special);
            let label = format!("indexed special scalars, c = {c}, group {group:?}");
            compare_sorts(&s, &mut msm, &ds, Some(&di), idx.len(), max, &label);
        }
    }
}

/// Whole MSMs with the radix sort against the CPU, both curves.
fn radix_msm_suite<C: HostCurve>(name: &str, n: usize) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let b = bases::<C>(&mut rng, n);
    let db = upload_bases::<C>(&s, &b);
    let check_grouped = |scalars: &[Fr], k: usize, c: u32, group: Option<u32>, label: &str| {
        let sc = upload_scalars(&s, scalars);
        let mut msm = Msm::<C>::with_window_bits(&s, k, c).expect("msm plan");
        msm.set_bucket_sort(BucketSort::Radix).expect("radix sort");
        if let Some(g) = group {
            msm.set_radix_group(g).expect("radix group");
        }
        let expected = C::msm_ref(&b[..k], &scalars[..k]);
        for round in 0..2 {
            let got = msm
                .enqueue(&db, &sc, None, k)
                .and_then(|()| msm.result())
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(
                got,
                expected,
                "{} radix {label}, n = {k}, c = {c}, group {group:?}, round {round}",
                C::NAME
            );
        }
    };
    let check =
        |scalars: &[Fr], k: usize, c: u32, label: &str| check_grouped(scalars, k, c, None, label);
    let random = random_scalars(&mut rng, n);
    let special = special_scalars(&mut rng, n);
    let same = vec![Fr::random(&mut rng); n];
    let skew = skewed_scalars(&mut rng, n);
    for c in [15u32, 16, 20] {
        check(&random, n, c, "random scalars");
        check(&special, n, c, "special scalars");
    }
    check(&same, n, 16, "all-equal scalars");
    check(&skew, n, 16, "skewed scalars");
    check(&vec![Fr::ZERO; n], n, 16, "all zero");
    check(&random, 1, 16, "n = 1");
    check(&special, 1001, 15, "n = 1001");
    check(&special, 1001, 8, "n = 1001");
    check_grouped(&special, n, 16, Some(3), "special scalars");
    check_grouped(&same, n, 20, Some(2), "all-equal scalars");
    check_grouped(&random, n, 20, Some(1), "random scalars");
}

fn msm_g1_radix_sort_matches_cpu() {
    radix_msm_suite::<G1>("msm_g1_radix_sort_matches_cpu", 40_009);
}

fn msm_g2_radix_sort_matches_cpu() {
    radix_msm_suite::<G2>("msm_g2_radix_sort_matches_cpu", 5003);
}

/// One G1 MSM summed chunk by chunk into kept buckets (a streamed key's H),
/// against the CPU's over the whole: each chunk's points in buffers of their
/// own, one chunk in two index-list calls, a run of one scalar across a
/// chunk boundary, another MSM on the same scratch between the chunks, both
/// sorts, the buckets made twice on one MSM. No call gives the identity;
/// G2 (no kept kernels), a window below the MSM's own and buckets of
/// another MSM's window are refused.
fn kept_buckets_suite(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let chunk = 1usize << 12;
    let n = 3 * chunk + 1001;
    let b = bases::<G1>(&mut rng, n);
    let mut scalars = special_scalars(&mut rng, n);
    let repeated = Fr::random(&mut rng);
    for sc in &mut scalars[chunk - 500..chunk + 3000] {
        *sc = repeated;
    }
    let expected = G1::msm_ref(&b, &scalars);
    let other_b = bases::<G1>(&mut rng, 777);
    let other_s = random_scalars(&mut rng, 777);
    let other_expected = G1::msm_ref(&other_b, &other_s);
    let (db_other, ds_other) = (
        upload_bases::<G1>(&s, &other_b),
        upload_scalars(&s, &other_s),
    );
    let chunks: Vec<_> = (0..n)
        .step_by(chunk)
        .map(|start| {
            let end = (start + chunk).min(n);
            let db = upload_bases::<G1>(&s, &b[start..end]);
            let ds = upload_scalars(&s, &scalars[start..end]);
            (db, ds, end - start)
        })
        .collect();
    // Chunk 1 in two calls: indices i % 3 != 0, then i % 3 == 0.
    let split: Vec<(DeviceBuffer<u32>, usize)> = [false, true]
        .iter()
        .map(|&third| {
            let idx: Vec<u32> = (0..chunk as u32)
                .filter(|i| (i % 3 == 0) == third)
                .collect();
            (s.upload_new(&idx).unwrap(), idx.len())
        })
        .collect();
    for (c, sort) in [
        (16u32, BucketSort::Counting),
        (20, BucketSort::Counting),
        (13, BucketSort::Radix),
        (20, BucketSort::Radix),
    ] {
        let label = format!("c = {c}, {sort:?}");
        let mut msm = Msm::<G1>::with_kept_window(&s, chunk, c).expect("kept msm");
        msm.set_kept_sort(sort).expect("kept sort");
        for round in 0..2 {
            let mut kept = msm.kept_buckets().expect("kept buckets");
            assert_eq!(kept.window_bits(), c);
            for (k, (db, ds, len)) in chunks.iter().enumerate() {
                if k == 1 {
                    for (di, count) in &split {
                        msm.enqueue_kept(&mut kept, db, ds, Some(di), *count)
                            .unwrap_or_else(|e| panic!("{label}: {e}"));
                    }
                } else {
                    msm.enqueue_kept(&mut kept, db, ds, None, *len)
                        .unwrap_or_else(|e| panic!("{label}: {e}"));
                }
                let other = msm.run(&db_other, &ds_other).unwrap();
                assert_eq!(other, other_expected, "{label}: an MSM between kept calls");
            }
            assert_eq!(kept.calls(), chunks.len() + 1);
            msm.finish_kept(&kept).unwrap();
            assert_eq!(msm.result().unwrap(), expected, "{label}, round {round}");
        }
        let none = msm.kept_buckets().unwrap();
        msm.finish_kept(&none).unwrap();
        assert_eq!(
            msm.result().unwrap(),
            G1Projective::identity(),
            "{label}: no call"
        );
    }
    // Buckets of another window are refused, and G2 has no kept kernels.
    let mut a = Msm::<G1>::with_kept_window(&s, chunk, 16).unwrap();
    let mut other = Msm::<G1>::with_kept_window(&s, chunk, 18).unwrap();
    let mut kept = other.kept_buckets().unwrap();
    let (db, ds, len) = &chunks[0];
    let err = a.enqueue_kept(&mut kept, db, ds, None, *len).unwrap_err();
    assert!(err.to_string().contains("buckets for c = 18"), "{err}");
    let own = Msm::<G1>::window_bits_for(chunk);
    let err = Msm::<G1>::with_kept_window(&s, chunk, own - 1).unwrap_err();
    assert!(err.to_string().contains("below the"), "{err}");
    let err = Msm::<G2>::with_kept_window(&s, 100, 16).unwrap_err();
    assert!(
        err.to_string().contains("no kept-bucket kernels for G2"),
        "{err}"
    );
    let err = Msm::<G1>::new(&s, 100).unwrap().kept_buckets().unwrap_err();
    assert!(
        err.to_string().contains("not made for kept buckets"),
        "{err}"
    );
}

fn msm_g1_kept_buckets_match_cpu() {
    kept_buckets_suite("msm_g1_kept_buckets_match_cpu");
}

/// Batch sums by bitmap and by index list against the CPU sum.
fn batch_suite<C: HostCurve>(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let max = 70_001;
    let mut b = bases::<C>(&mut rng, max);
    for _ in 0..20 {
        let i = rng.gen_range(0..max);
        b[i] = C::identity_aff();
    }
    b[7] = b[6]; // a repeated point
    let db = upload_bases::<C>(&s, &b);
    let mut sum = BatchSum::<C>::new(&s).unwrap();
    for &n in &[1usize, 63, 64, 65, 1000, max] {
        for &density in &[0.0, 0.01, 0.5, 1.0] {
            let mut bitmap = vec![0u64; n.div_ceil(64)];
            let mut idx = Vec::new();
            for i in 0..n {
                if rng.gen_bool(density) {
                    bitmap[i / 64] |= 1 << (i % 64);
                    idx.push(i as u32);
                }
            }
            // Bits past n in the last word must be ignored.
            if n % 64 != 0 {
                *bitmap.last_mut().unwrap() |= !0u64 << (n % 64);
            }
            let expected = C::sum_ref(&b, &idx);
            let dm = s.upload_new(&bitmap).unwrap();
            let got = sum.sum_bitmap(&db, &dm, n).unwrap();
            assert_eq!(
                got,
                expected,
                "{} bitmap sum, n = {n}, density {density}",
                C::NAME
            );
            idx.push(u32::MAX); // skipped
            let di = s.upload_new(&idx).unwrap();
            let got = sum.sum_indices(&db, &di, idx.len()).unwrap();
            assert_eq!(
                got,
                expected,
                "{} index sum, n = {n}, density {density}",
                C::NAME
            );
        }
    }
}

fn batch_sum_g1_matches_cpu() {
    batch_suite::<G1>("batch_sum_g1_matches_cpu");
}

fn batch_sum_g2_matches_cpu() {
    batch_suite::<G2>("batch_sum_g2_matches_cpu");
}

/// Every launch-bound variant the benchmark may time (same code, other
/// residency) against the CPU: accumulation on random and special scalars,
/// bitmap sums over bases with infinities and a repeated point.
fn variants_suite<C: HostCurve>(name: &str) {
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let n = 20_011;
    let mut b = bases::<C>(&mut rng, n);
    for _ in 0..10 {
        let i = rng.gen_range(0..n);
        b[i] = C::identity_aff();
    }
    b[11] = b[10];
    let random = random_scalars(&mut rng, n);
    let special = special_scalars(&mut rng, n);
    // Every variant meets P + P and P + (−P) inside one bucket run.
    let mut edge = random_scalars(&mut rng, n);
    let repeated = Fr::random(&mut rng);
    plant_repeated_and_opposite::<C>(&mut b, &mut edge, repeated, 99..300, 1000..1200);
    let same = vec![Fr::random(&mut rng); n];
    let db = upload_bases::<C>(&s, &b);
    for v in 0..C::ACCUMULATE_VARIANTS.len() {
        for (scalars, what) in [
            (&random, "random"),
            (&special, "special"),
            (&edge, "repeated and opposite"),
            (&same, "all-equal"),
        ] {
            let mut msm = Msm::<C>::with_tuning(&s, n, 11, v).expect("msm plan");
            let sc = upload_scalars(&s, scalars);
            let got = msm.run(&db, &sc).unwrap();
            assert_eq!(
                got,
                C::msm_ref(&b, scalars),
                "{} {} on {what} scalars",
                C::NAME,
                C::ACCUMULATE_VARIANTS[v]
            );
        }
    }
    let mut bitmap = vec![0u64; n.div_ceil(64)];
    let mut idx = Vec::new();
    for i in 0..n {
        if rng.gen_bool(0.5) {
            bitmap[i / 64] |= 1 << (i % 64);
            idx.push(i as u32);
        }
    }
    let expected = C::sum_ref(&b, &idx);
    let dm = s.upload_new(&bitmap).unwrap();
    for v in 0..C::BITMAP_VARIANTS.len() {
        let mut sum = BatchSum::<C>::with_variant(&s, v).unwrap();
        for round in 0..2 {
            let got = sum.sum_bitmap(&db, &dm, n).unwrap();
            assert_eq!(
                got,
                expected,
                "{} {} round {round}",
                C::NAME,
                C::BITMAP_VARIANTS[v]
            );
        }
    }
}

fn kernel_variants_g1_match_cpu() {
    variants_suite::<G1>("kernel_variants_g1_match_cpu");
}

fn kernel_variants_g2_match_cpu() {
    variants_suite::<G2>("kernel_variants_g2_match_cpu");
}

/// Classification against the CPU, then the prover's route: ones by batch
/// sum, others by indexed Pippenger, zeros skipped; the total must equal the
/// plain MSM.
fn classify_and_route_matches_cpu() {
    let Some(s) = stream() else { return };
    let mut rng = rng("classify_and_route_matches_cpu");
    for &n in &[1usize, 2047, 2048, 2049, 100_003] {
        let scalars: Vec<Fr> = (0..n)
            .map(|_| match rng.gen_range(0..4) {
                0 => Fr::ZERO,
                1 | 2 => Fr::ONE,
                _ => Fr::random(&mut rng),
            })
            .collect();
        let ds = upload_scalars(&s, &scalars);
        let mut classifier = Classifier::new(&s, n).unwrap();
        let counts = classifier.classify(&ds).unwrap();
        let cpu = classify(&scalars);
        assert_eq!(
            (counts.zeros, counts.ones, counts.others),
            (cpu.zeros, cpu.ones.len(), cpu.others.len()),
            "n = {n}"
        );
        let ones = s.download_vec(classifier.ones()).unwrap();
        let others = s.download_vec(classifier.others()).unwrap();
        assert_eq!(&ones[..counts.ones], &cpu.ones[..], "ones, n = {n}");
        assert_eq!(&others[..counts.others], &cpu.others[..], "others, n = {n}");

        let b = bases::<G1>(&mut rng, n);
        let db = upload_bases::<G1>(&s, &b);
        let ones_sum = BatchSum::<G1>::new(&s)
            .unwrap()
            .sum_indices(&db, classifier.ones(), counts.ones)
            .unwrap();
        let others_sum = Msm::<G1>::new(&s, counts.others.max(1))
            .unwrap()
            .run_indexed(&db, &ds, classifier.others(), counts.others)
            .unwrap();
        assert_eq!(
            ones_sum + others_sum,
            msm_g1(&b, &scalars),
            "routed MSM, n = {n}"
        );
    }
}

/// The benchmark's device-made data: chain bases equal the CPU chain, and
/// random scalars are reduced and not all alike.
fn benchmark_data_is_right() {
    let Some(s) = stream() else { return };
    let mut rng = rng("benchmark_data_is_right");
    fn check_chain<C: HostCurve>(s: &Stream, rng: &mut ChaCha20Rng, n: usize) {
        let p0 = C::random_point(rng);
        let step = C::random_point(rng);
        let expected = C::chain(p0, step, n);
        let mut out: DeviceBuffer<C::Affine> = s.alloc(n).unwrap();
        let lim = C::limbs(&[C::to_aff(&p0), C::to_aff(&step)]);
        data::chain_bases::<C>(s, lim[0], lim[1], &mut out).unwrap();
        let got = s.download_vec(&out).unwrap();
        assert_eq!(got, C::limbs(&expected), "{} chain of {n}", C::NAME);
    }
    check_chain::<G1>(&s, &mut rng, 1000);
    check_chain::<G2>(&s, &mut rng, 333);

    let n = 4096;
    let mut out: DeviceBuffer<FrLimbs> = s.alloc(n).unwrap();
    data::random_scalars(&s, &mut out, rng.gen()).unwrap();
    let got = s.download_vec(&out).unwrap();
    let r = cuzk_field::limbs::FR_MODULUS;
    for l in &got {
        let below_r = (0..4)
            .rev()
            .find(|&k| l.0[k] != r[k])
            .is_some_and(|k| l.0[k] < r[k]);
        assert!(below_r, "scalar {l:?} not reduced");
    }
    let distinct: std::collections::HashSet<_> = got.iter().collect();
    assert_eq!(distinct.len(), n);
}

/// 2^bits · P on the host, by doubling.
fn shifted_ref<C: HostCurve>(p: &C::Aff, bits: u32) -> C::Aff
where
    C::Projective: From<C::Aff>,
{
    let mut q: C::Projective = (*p).into();
    for _ in 0..bits {
        q = C::double(&q);
    }
    C::to_aff(&q)
}

/// MSMs over shifted bases (copies 2^(c·S·k)·P, S bucket sets) against the
/// CPU: the copies themselves at sampled points, then random, special,
/// skewed, all-equal and all-zero scalars, both sorts, an index list and a
/// prefix, for shapes from one set (every window its own copy) to several.
fn shifted_suite<C: HostCurve>(name: &str, n: usize)
where
    C::Projective: From<C::Aff>,
{
    let Some(s) = stream() else { return };
    let mut rng = rng(name);
    let mut b = bases::<C>(&mut rng, n);
    for _ in 0..20 {
        let i = rng.gen_range(0..n);
        b[i] = C::identity_aff();
    }
    let mut special = special_scalars(&mut rng, n);
    let repeated = Fr::random(&mut rng);
    plant_repeated_and_opposite::<C>(&mut b, &mut special, repeated, 50..300, 400..500);
    let random = random_scalars(&mut rng, n);
    let skew = skewed_scalars(&mut rng, n);
    let same = vec![Fr::random(&mut rng); n];
    let zero = vec![Fr::ZERO; n];
    let db = upload_bases::<C>(&s, &b);
    let limbs = C::limbs(&b);
    for (c, sets) in [(8u32, 1u32), (13, 5), (16, 3), (20, 1), (22, 2), (24, 1)] {
        let shifted = ShiftedBases::<C>::build(&s, &db, n, c, sets).expect("shifted bases");
        assert_eq!(shifted.copies(), copies_for(c, sets));
        assert_eq!(shifted.shift_bits(), c * sets);
        // Copy 0 is the bases; copy k at a few points (infinity included) is
        // 2^(k·c·S)·P.
        assert_eq!(
            shifted.download_copy(&s, 0).unwrap(),
            limbs,
            "{} copy 0",
            C::NAME
        );
        let last = shifted.copies() - 1;
        let copy = shifted.download_copy(&s, last).unwrap();
        let picks = [0usize, 1, 77, n / 2, n - 1];
        for &i in picks
            .iter()
            .chain(b.iter().position(|p| *p == C::identity_aff()).iter())
        {
            let want = shifted_ref::<C>(&b[i], last * c * sets);
            assert_eq!(
                copy[i],
                C::limbs(&[want])[0],
                "{} c = {c}, {sets} sets: copy {last} of point {i}",
                C::NAME
            );
        }
        // The radix sort in one group, and in groups of one set each (the
        // groups' runs must not share keys).
        for (sort, one_set_groups) in [
            (BucketSort::Counting, false),
            (BucketSort::Radix, false),
            (BucketSort::Radix, true),
        ] {
            let mut msm = Msm::<C>::for_shifted(&s, n, &shifted).expect("shifted plan");
            msm.set_bucket_sort(sort).expect("sort");
            if one_set_groups {
                msm.set_radix_group(shifted.copies())
                    .expect("groups of one set");
            }
            let how = format!(
                "{sort:?}{}",
                if one_set_groups {
                    ", one set per group"
                } else {
                    ""
                }
            );
            for (scalars, label) in [
                (&random, "random"),
                (&special, "special"),
                (&skew, "skewed"),
                (&same, "all-equal"),
                (&zero, "all zero"),
            ] {
                let ds = upload_scalars(&s, scalars);
                let expected = C::msm_ref(&b, scalars);
                for round in 0..2 {
                    let got = msm
                        .run_shifted(&shifted, &ds)
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(
                        got,
                        expected,
                        "{} shifted c = {c}, {sets} sets, {how}, {label} scalars, round {round}",
                        C::NAME
                    );
                }
                // A prefix of the pairs.
                let k = n / 3;
                msm.enqueue_shifted(&shifted, &ds, None, k).unwrap();
                assert_eq!(
                    msm.result().unwrap(),
                    C::msm_ref(&b[..k], &scalars[..k]),
                    "{} shifted prefix, c = {c}, {sets} sets, {how}, {label}",
                    C::NAME
                );
            }
            // An index list (with out-of-range indices, skipped).
            let mut idx: Vec<u32> = (0..n as u32).filter(|_| rng.gen_bool(0.4)).collect();
            let sel_b: Vec<C::Aff> = idx.iter().map(|&i| b[i as usize]).collect();
            let sel_s: Vec<Fr> = idx.iter().map(|&i| special[i as usize]).collect();
            idx.push(n as u32);
            idx.push(u32::MAX);
            let di = s.upload_new(&idx).unwrap();
            let ds = upload_scalars(&s, &special);
            let mut msm = Msm::<C>::for_shifted(&s, idx.len(), &shifted).expect("plan");
            msm.set_bucket_sort(sort).expect("sort");
            if one_set_groups {
                msm.set_radix_group(shifted.copies())
                    .expect("groups of one set");
            }
            msm.enqueue_shifted(&shifted, &ds, Some(&di), idx.len())
                .unwrap();
            assert_eq!(
                msm.result().unwrap(),
                C::msm_ref(&sel_b, &sel_s),
                "{} shifted indexed, c = {c}, {sets} sets, {how}",
                C::NAME
            );
        }
        // A shifted plan refuses plain bases, and bases shifted for another
        // shape are refused.
        let mut msm = Msm::<C>::for_shifted(&s, n, &shifted).expect("plan");
        let ds = upload_scalars(&s, &random);
        if shifted.copies() > 1 {
            assert!(
                msm.enqueue(&db, &ds, None, n).is_err(),
                "plain bases on a shifted plan"
            );
        }
        let mut other = Msm::<C>::shifted(&s, n, c, sets + 1).expect("plan");
        assert!(
            other.enqueue_shifted(&shifted, &ds, None, n).is_err(),
            "bases shifted by {} bits on a plan for {}",
            c * sets,
            c * (sets + 1)
        );
    }
}

fn msm_g1_shifted_bases_match_cpu() {
    shifted_suite::<G1>("msm_g1_shifted_bases_match_cpu", 20_011);
}

fn msm_g2_shifted_bases_match_cpu() {
    shifted_suite::<G2>("msm_g2_shifted_bases_match_cpu", 3001);
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "msm",
        &cuzk_testkit::gpu_tests![
            msm_g1_matches_cpu,
            msm_g2_matches_cpu,
            msm_g1_edge_bases,
            msm_g2_edge_bases,
            msm_g1_picks_the_window_per_call,
            msm_g2_picks_the_window_per_call,
            msm_g1_indexed,
            msm_g2_indexed,
            radix_sort_matches_counting_sort,
            msm_g1_radix_sort_matches_cpu,
            msm_g2_radix_sort_matches_cpu,
            msm_g1_kept_buckets_match_cpu,
            batch_sum_g1_matches_cpu,
            batch_sum_g2_matches_cpu,
            kernel_variants_g1_match_cpu,
            kernel_variants_g2_match_cpu,
            classify_and_route_matches_cpu,
            benchmark_data_is_right,
            msm_g1_shifted_bases_match_cpu,
            msm_g2_shifted_bases_match_cpu
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
