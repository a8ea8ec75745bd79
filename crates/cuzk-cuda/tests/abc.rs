//! a, b, c on the device (kernels/prover/abc.cu) against the plain host sum
//! Σ coeff[id]·z[col] per row, on fresh random matrices and witnesses every
//! run (the seed is printed; `CUZK_TEST_SEED=<seed>` repeats a run): witness
//! values mostly 0 and 1 with some random, coefficients mostly ±1 with some
//! random, rows of 0 to 300 terms (empty rows and rows where ±1 ones cancel
//! included), u16 and u32 ids; the same products with the matrices streamed
//! from the host in chunks (one row per chunk up to all rows in one), bit
//! for bit; and bad matrices refused before any kernel.
//!
//! Without a CUDA device the suite reports its tests ignored and says why in
//! one line (`cuzk_testkit::gpu_suite`); with one, an unusable device fails.

use cuzk_cuda::abc::{
    ChunkedR1cs, DeviceR1cs, HostIds, HostMatrix, PinnedR1cs, StreamedR1cs, Streaming,
};
use cuzk_cuda::staging::Staging;
use cuzk_field::limbs::{fr_as_limbs, limbs_as_fr, FrLimbs};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::Arc;

use blstrs::Scalar as Fr;
use cuzk_cuda::testing::test_stream as stream;
use cuzk_testkit::test_seed;

struct Csr {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    ids: Vec<u32>,
}

fn random_csr(rng: &mut impl Rng, rows: usize, width: usize, table: usize) -> Csr {
    let mut row_ptr = vec![0u32];
    let (mut cols, mut ids) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let terms = match r % 97 {
            0 => 0,
            1 => rng.gen_range(100..300),
            2 => 6, // three +1 and three -1 terms on ones: cancel
            _ => rng.gen_range(1..5),
        };
        for t in 0..terms {
            let id = if r % 97 == 2 {
                (t % 2) as u32
            } else if rng.gen_bool(0.8) {
                rng.gen_range(0..2)
            } else {
                rng.gen_range(0..table as u32)
            };
            let col = if r % 97 == 2 {
                0
            } else {
                rng.gen_range(0..width as u32)
            };
            cols.push(col);
            ids.push(id);
        }
        row_ptr.push(cols.len() as u32);
    }
    Csr { row_ptr, cols, ids }
}

fn host_product(m: &Csr, coeffs: &[Fr], z: &[Fr]) -> Vec<Fr> {
    m.row_ptr
        .windows(2)
        .map(|w| {
            (w[0] as usize..w[1] as usize).fold(Fr::ZERO, |acc, t| {
                acc + coeffs[m.ids[t] as usize] * z[m.cols[t] as usize]
            })
        })
        .collect()
}

fn abc_matches_the_host_sum() {
    let Some(s) = stream() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(test_seed("abc"));
    for (rows, width, table, wide) in [
        (1usize, 1usize, 2usize, false),
        (1000, 700, 40, false),
        (70_001, 90_000, 300, false),
        (5000, 4000, 70_000, true),
    ] {
        let mut coeffs = vec![Fr::ONE, -Fr::ONE];
        coeffs.extend((2..table).map(|_| Fr::random(&mut rng)));
        let mut z: Vec<Fr> = (0..width)
            .map(|_| match rng.gen_range(0..10) {
                0..=3 => Fr::ZERO,
                4..=7 => Fr::ONE,
                _ => Fr::random(&mut rng),
            })
            .collect();
        z[0] = Fr::ONE; // ONE, as every witness starts
        let m: Vec<Csr> = (0..3)
            .map(|_| random_csr(&mut rng, rows, width, table))
            .collect();
        let ids16: Vec<Vec<u16>> = m
            .iter()
            .map(|c| c.ids.iter().map(|&i| i as u16).collect())
            .collect();
        let host = |i: usize| HostMatrix {
            row_ptr: &m[i].row_ptr,
            cols: &m[i].cols,
            ids: if wide {
                HostIds::U32(&m[i].ids)
            } else {
                HostIds::U16(&ids16[i])
            },
        };
        let r1cs =
            DeviceR1cs::upload(&s, fr_as_limbs(&coeffs), [host(0), host(1), host(2)]).unwrap();
        let dz = s.upload_new(fr_as_limbs(&z)).unwrap();
        let mut classes = s.alloc::<u8>(width).unwrap();
        // Outputs one longer than the rows: the padding must stay untouched.
        let pad = fr_as_limbs(&[Fr::from(7u64)])[0];
        let mut outs: Vec<_> = (0..3)
            .map(|_| s.upload_new(&vec![pad; rows + 1]).unwrap())
            .collect();
        {
            let [a, b, c] = &mut outs[..] else {
                unreachable!()
            };
            r1cs.evaluate(&s, &dz, &mut classes, [a, b, c]).unwrap();
        }
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            let got = s.download_vec(&outs[i]).unwrap();
            let want = host_product(&m[i], &coeffs, &z);
            let got_fr = limbs_as_fr(&got[..rows]);
            let first_bad = (0..rows).find(|&r| got_fr[r] != want[r]);
            assert_eq!(
                first_bad, None,
                "{name}: row {first_bad:?} differs ({rows} rows, table {table})"
            );
            assert_eq!(got[rows], pad, "{name}: the padding row was written");
        }
        // Streamed: chunk sizes from the longest row (one row per chunk at
        // the long rows) to everything at once, against the resident run;
        // staging buffers of 4 KiB, so a chunk crosses in several pieces.
        let streamed =
            StreamedR1cs::new(&s, fr_as_limbs(&coeffs), [host(0), host(1), host(2)]).unwrap();
        let copy = s.gpu().new_stream().unwrap();
        let mut staging = Staging::new(s.gpu(), 4096, None).unwrap();
        let total = m.iter().map(|c| c.cols.len()).max().unwrap();
        for chunk in [streamed.longest_row().max(1), 1000, total.max(1)] {
            let mut chunked: Vec<_> = (0..3)
                .map(|_| s.upload_new(&vec![pad; rows + 1]).unwrap())
                .collect();
            {
                let [a, b, c] = &mut chunked[..] else {
                    unreachable!()
                };
                let mut io = Streaming {
                    compute: &s,
                    copy: &copy,
                    staging: &mut staging,
                };
                streamed
                    .evaluate(&mut io, &dz, &mut classes, [a, b, c], chunk)
                    .unwrap();
            }
            for i in 0..3 {
                assert_eq!(
                    s.download_vec(&chunked[i]).unwrap(),
                    s.download_vec(&outs[i]).unwrap(),
                    "matrix {i}: streamed in chunks of {chunk} terms ({rows} rows)"
                );
            }
            // The same chunks laid out once and pinned in host memory:
            // they cross straight from it, with the same outputs.
            let layout = ChunkedR1cs::new([host(0), host(1), host(2)], table, chunk).unwrap();
            let pinned = PinnedR1cs::new(s.gpu(), Arc::new(layout)).unwrap();
            let from_pin = StreamedR1cs::new(&s, fr_as_limbs(&coeffs), [host(0), host(1), host(2)])
                .unwrap()
                .with_pinned(&pinned)
                .unwrap();
            let mut pinned_out: Vec<_> = (0..3)
                .map(|_| s.upload_new(&vec![pad; rows + 1]).unwrap())
                .collect();
            {
                let [a, b, c] = &mut pinned_out[..] else {
                    unreachable!()
                };
                let mut io = Streaming {
                    compute: &s,
                    copy: &copy,
                    staging: &mut staging,
                };
                from_pin
                    .evaluate(&mut io, &dz, &mut classes, [a, b, c], chunk)
                    .unwrap();
                // One matrix at a time, out of order (the copies queued
                // ahead are dropped and start again): the same outputs.
                for which in [2, 0, 1, 1] {
                    let mut again = s.upload_new(&vec![pad; rows + 1]).unwrap();
                    from_pin
                        .evaluate_classified(&mut io, &dz, &classes, which, &mut again, chunk)
                        .unwrap();
                    assert_eq!(
                        s.download_vec(&again).unwrap(),
                        s.download_vec(&outs[which]).unwrap(),
                        "matrix {which} alone, pinned, in chunks of {chunk} terms"
                    );
                }
                // Another chunk size than the layout's is refused.
                let err = from_pin
                    .evaluate(&mut io, &dz, &mut classes, [a, b, c], chunk + 1)
                    .unwrap_err();
                assert!(err.to_string().contains("layout pinned in chunks"), "{err}");
            }
            // With the layout pinned, the recording's own arrays (heap
            // neighbours of the layout's) still copy as ordinary memory.
            DeviceR1cs::upload(&s, fr_as_limbs(&coeffs), [host(0), host(1), host(2)]).unwrap();
            for i in 0..3 {
                assert_eq!(
                    s.download_vec(&pinned_out[i]).unwrap(),
                    s.download_vec(&outs[i]).unwrap(),
                    "matrix {i}: pinned, in chunks of {chunk} terms ({rows} rows)"
                );
            }
        }
    }
}

fn bad_matrices_are_refused_before_any_kernel() {
    let Some(s) = stream() else { return };
    let coeffs = fr_as_limbs(&[Fr::ONE, -Fr::ONE]).to_vec();
    let good = HostMatrix {
        row_ptr: &[0, 1],
        cols: &[0],
        ids: HostIds::U32(&[0]),
    };
    let unordered = HostMatrix {
        row_ptr: &[0, 2],
        cols: &[0],
        ids: HostIds::U32(&[0]),
    };
    let err = DeviceR1cs::upload(&s, &coeffs, [good, unordered, good]).unwrap_err();
    assert!(err.to_string().contains("B's row offsets"), "{err}");
    let bad_id = HostMatrix {
        row_ptr: &[0, 1],
        cols: &[0],
        ids: HostIds::U32(&[5]),
    };
    let err = DeviceR1cs::upload(&s, &coeffs, [good, good, bad_id]).unwrap_err();
    assert!(err.to_string().contains("coefficient"), "{err}");
    let wide = HostMatrix {
        row_ptr: &[0, 1],
        cols: &[9],
        ids: HostIds::U32(&[0]),
    };
    let r1cs = DeviceR1cs::upload(&s, &coeffs, [wide, good, good]).unwrap();
    let z = s.upload_new(fr_as_limbs(&[Fr::ONE; 4])).unwrap();
    let mut classes = s.alloc::<u8>(4).unwrap();
    let mut o: Vec<_> = (0..3).map(|_| s.alloc::<FrLimbs>(1).unwrap()).collect();
    let [a, b, c] = &mut o[..] else {
        unreachable!()
    };
    let err = r1cs.evaluate(&s, &z, &mut classes, [a, b, c]).unwrap_err();
    assert!(err.to_string().contains("z has 4 values"), "{err}");
    // Streamed: the offsets' ends checked up front; order, columns and ids
    // chunk by chunk as they cross, before the chunk's kernel; no chunk
    // smaller than its longest row.
    let err = StreamedR1cs::new(&s, &coeffs, [good, unordered, good]).unwrap_err();
    assert!(err.to_string().contains("B's row offsets"), "{err}");
    let copy = s.gpu().new_stream().unwrap();
    let mut staging = Staging::new(s.gpu(), 4096, None).unwrap();
    let two = HostMatrix {
        row_ptr: &[0, 2],
        cols: &[0, 1],
        ids: HostIds::U32(&[0, 1]),
    };
    let disordered = HostMatrix {
        row_ptr: &[0, 2, 1, 2],
        cols: &[0, 1],
        ids: HostIds::U32(&[0, 1]),
    };
    let three = |m: HostMatrix<'static>| {
        let pad = HostMatrix {
            row_ptr: &[0, 0, 0, 0],
            cols: &[],
            ids: HostIds::U32(&[]),
        };
        [m, pad, pad]
    };
    let cases: [([HostMatrix<'static>; 3], usize, &str); 5] = [
        (
            [two, good, good],
            1,
            "chunks of 1 terms for A's row 0 of 2 terms",
        ),
        (
            [good, good, bad_id],
            4,
            "C's rows 0..1 name coefficient Some(5)",
        ),
        (
            [good, wide, good],
            4,
            "B's rows 0..1 name column 9 and z has 4 values",
        ),
        (
            three(disordered),
            4,
            "A's row offsets 0..=3 are not a CSR index",
        ),
        ([two, good, good], 4, ""),
    ];
    for (matrices, chunk, want) in cases {
        let streamed = StreamedR1cs::new(&s, &coeffs, matrices).unwrap();
        let rows = streamed.rows();
        let mut o: Vec<_> = (0..3)
            .map(|_| s.alloc::<FrLimbs>(rows.max(1)).unwrap())
            .collect();
        let [a, b, c] = &mut o[..] else {
            unreachable!()
        };
        let mut io = Streaming {
            compute: &s,
            copy: &copy,
            staging: &mut staging,
        };
        let got = streamed.evaluate(&mut io, &z, &mut classes, [a, b, c], chunk);
        match want {
            "" => got.unwrap(),
            _ => {
                let err = got.unwrap_err().to_string();
                assert!(err.contains(want), "{err}");
            }
        }
    }
    assert_eq!(
        StreamedR1cs::new(&s, &coeffs, [two, good, good])
            .unwrap()
            .longest_row(),
        2
    );
}

// ---- the suite (`harness = false`: cuzk_testkit::gpu_suite) -----------------

fn main() -> std::process::ExitCode {
    cuzk_testkit::gpu_suite(
        "abc",
        &cuzk_testkit::gpu_tests![
            abc_matches_the_host_sum,
            bad_matrices_are_refused_before_any_kernel
        ],
        cuzk_cuda::no_device().as_deref(),
    )
}
