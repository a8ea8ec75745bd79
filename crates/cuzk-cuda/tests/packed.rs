//! The packed z upload (cuzk-cuda `packed`, kernels/prover/expand.cu)
//! against the plain upload of the same values, bit for bit, on fresh
//! random witnesses every run (the seed is printed; `CUZK_TEST_SEED=<seed>`
//! repeats a run): empty, one value, lengths around multiples of 32, all
//! zero, all one, all other, 1 in canonical (non-Montgomery) form, the
//! PoRep mix, at offsets into a buffer whose other values must stay; and
//! the worker's way, in pieces through a pinned staging buffer with the
//! pieces that do not pay sent plainly.
//!
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use cuzk_cuda::packed::{self, budget_words, expand_on_device, MONT_ONE};
use cuzk_cuda::staging::{PackedUpload, Staging};
use cuzk_cuda::{DeviceBuffer, Stream};
use cuzk_field::limbs::FrLimbs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use cuzk_cuda::testing::test_stream as stream;
use cuzk_testkit::test_seed;

/// A value of a witness mix: `other` of them random limbs (below the
/// modulus is not needed to move them), the rest 0 and 1 alike, and some
/// of the "others" 1 in canonical form.
fn mixed(rng: &mut ChaCha20Rng, n: usize, other: f64) -> Vec<FrLimbs> {
    (0..n)
        .map(|_| {
            if rng.gen_bool(other) {
                if rng.gen_bool(0.1) {
                    FrLimbs([1, 0, 0, 0])
                } else {
                    FrLimbs(std::array::from_fn(|_| rng.gen()))
                }
            } else if rng.gen_bool(0.5) {
                MONT_ONE
            } else {
                FrLimbs::default()
            }
        })
        .collect()
}

const PAD: FrLimbs = FrLimbs([7, 7, 7, 7]);

/// A buffer of `at + len + 3` pad values, `values` uploaded plainly at `at`.
fn plain(s: &Stream, values: &[FrLimbs], at: usize) -> DeviceBuffer<FrLimbs> {
    let mut d = s.upload_new(&vec![PAD; at + values.len() + 3]).unwrap();
    s.upload_at(values, &mut d, at).unwrap();
    d
}

fn assert_same(name: &str, got: &[FrLimbs], want: &[FrLimbs]) {
    assert_eq!(got.len(), want.len(), "{name}");
    let first_bad = (0..got.len()).find(|&i| got[i] != want[i]);
    assert_eq!(first_bad, None, "{name}: first differing value");
}

fn packed_upload_is_the_plain_upload() {
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("packed"));
    // (name, values, offset)
    let mut cases: Vec<(String, Vec<FrLimbs>, usize)> = vec![
        ("empty".into(), vec![], 0),
        ("one zero".into(), vec![FrLimbs::default()], 1),
        ("one one".into(), vec![MONT_ONE], 0),
        ("canonical one".into(), vec![FrLimbs([1, 0, 0, 0]); 45], 2),
    ];
    for n in [31, 32, 33, 1000, 100_003] {
        cases.push((format!("{n} zeros"), vec![FrLimbs::default(); n], 5));
        cases.push((format!("{n} ones"), vec![MONT_ONE; n], 0));
        cases.push((format!("{n} others"), mixed(&mut rng, n, 1.0), 3));
        cases.push((format!("{n} mixed"), mixed(&mut rng, n, 0.2), 1));
    }
    cases.push(("PoRep mix".into(), mixed(&mut rng, 1 << 20, 0.013), 9));
    for (name, values, at) in cases {
        let want = s.download_vec(&plain(&s, &values, at)).unwrap();
        let p = packed::pack(&values);
        assert_eq!(
            packed::expand(&p.words, values.len()).as_deref(),
            Some(&values[..]),
            "{name}: CPU round trip"
        );
        let mut d = s.upload_new(&vec![PAD; at + values.len() + 3]).unwrap();
        packed::upload(&s, &p, &mut d, at).unwrap();
        assert_same(&name, &s.download_vec(&d).unwrap(), &want);
    }
}

/// As the GPU worker uploads z (`Staging::upload_packed`, here with
/// buffers of 4096 words, so pieces of 4096 values): pieces packed into
/// pinned staging, expanded at their offsets, the pieces past their budget
/// (more than ~24% others) uploaded plainly; with and without a fill pool.
fn pieces_through_staging_are_the_plain_upload() {
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("packed-pieces"));
    let piece_len = 4096;
    // (fraction of others, packs)
    let pieces = [
        (0.013, true),
        (0.0, true),
        (0.9, false),
        (0.2, true),
        (0.3, false),
        (1.0, false),
        (0.05, true),
    ];
    let mut values = Vec::new();
    let mut want_packed = PackedUpload::default();
    for (other, packs) in pieces {
        let piece = mixed(&mut rng, piece_len, other);
        note(&mut want_packed, &piece, packs);
        values.extend(piece);
    }
    let tail = mixed(&mut rng, 1234, 0.013);
    note(&mut want_packed, &tail, true);
    values.extend(tail);
    want_packed.values = values.len();
    let at = 17;
    let want = s.download_vec(&plain(&s, &values, at)).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for fill in [None, Some(pool)] {
        let mut staging = Staging::new(s.gpu(), piece_len * 8, fill).unwrap();
        let mut d = s.upload_new(&vec![PAD; at + values.len() + 3]).unwrap();
        let report = staging.upload_packed(&s, &values, &mut d, at).unwrap();
        assert_eq!(report, want_packed);
        assert_same("pieces", &s.download_vec(&d).unwrap(), &want);
        // Smaller than one piece, and empty.
        let mut d = s.upload_new(&vec![PAD; at + 100 + 3]).unwrap();
        staging
            .upload_packed(&s, &values[..100], &mut d, at)
            .unwrap();
        staging.upload_packed(&s, &[], &mut d, at).unwrap();
        let want_100 = s.download_vec(&plain(&s, &values[..100], at)).unwrap();
        assert_same("one short piece", &s.download_vec(&d).unwrap(), &want_100);
    }
}

/// Adds what `Staging::upload_packed` moves for `piece` to `report`.
fn note(report: &mut PackedUpload, piece: &[FrLimbs], packs: bool) {
    let p = packed::pack(piece);
    assert_eq!(
        p.layout.words() <= budget_words(piece.len()),
        packs,
        "the test's pieces pack as planned"
    );
    if packs {
        report.packed += piece.len();
        report.others += p.layout.others;
        report.bytes += p.layout.bytes() as u64;
    } else {
        report.bytes += std::mem::size_of_val(piece) as u64;
    }
}

fn a_piece_beyond_its_buffers_is_refused() {
    let Some(s) = stream() else { return };
    let p = packed::pack(&[MONT_ONE, FrLimbs([3, 0, 0, 0])]);
    let words = s.upload_new(&p.words).unwrap();
    let mut out = s.alloc::<FrLimbs>(2).unwrap();
    assert!(expand_on_device(&s, &words, p.layout, &mut out, 1).is_err());
    let short = s.upload_new(&p.words[..p.words.len() - 1]).unwrap();
    assert!(expand_on_device(&s, &short, p.layout, &mut out, 0).is_err());
    expand_on_device(&s, &words, p.layout, &mut out, 0).unwrap();
    assert_eq!(
        s.download_vec(&out).unwrap(),
        vec![MONT_ONE, FrLimbs([3, 0, 0, 0])]
    );
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "packed",
        &cuzk_testkit::gpu_tests![
            packed_upload_is_the_plain_upload,
            pieces_through_staging_are_the_plain_upload,
            a_piece_beyond_its_buffers_is_refused
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
