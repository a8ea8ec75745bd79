//! Every kernel's declaration: its unit under `kernels/`, its name and its
//! parameters with their Rust types, in the order of the C signature (see
//! `launch.rs` for what a declaration gives and how it is checked). A
//! `DevPtr<T>` is a `const T*`, a `DevPtrMut<T>` a `T*`; device points are
//! passed as u64 words (`xyzz_t<F>*` as `DevPtrMut<u64>`), bases and
//! affine results as the curve's limb type.
//!
//! Kernels of one shape per curve or field are a `family`: one parameter
//! list (a type alias, generic over what differs) and the kernels that
//! share it, which `MsmCurve`, `KeygenCurve` and the test traits pick from.
//! Tuning variants and probes are declared only with the `tuning` feature,
//! test kernels only with `testing` (the families' aliases always exist).

#[cfg(feature = "testing")]
use cuzk_field::limbs::Fq2Limbs;
#[cfg(any(feature = "testing", feature = "tuning"))]
use cuzk_field::limbs::FqLimbs;
use cuzk_field::limbs::{FrLimbs, G1AffineLimbs, G2AffineLimbs};

use crate::launch::{declare_kernels, DevPtr, DevPtrMut};
use crate::ntt::TablesArg;

declare_kernels! {
    // kernels/ntt/ntt.cu: the passes in three register budgets each.
    family NttPass = (
        data: DevPtrMut<FrLimbs>, log_n: u32, b: u32, log_s: u32, log_c: u32, flags: u32,
        n_inv: FrLimbs, tables: TablesArg,
    ) for {
        "ntt/ntt.cu" ntt_pass,
        "ntt/ntt.cu" ntt_pass_r80,
        "ntt/ntt.cu" ntt_pass_r64,
        "ntt/ntt.cu" ntt_swap_pass,
        "ntt/ntt.cu" ntt_swap_pass_r80,
        "ntt/ntt.cu" ntt_swap_pass_r64,
    };
    family NttDigitReverse = (
        data: DevPtrMut<FrLimbs>, log_n: u32, b_out: u32, b_mid: u32, flags: u32,
        n_inv: FrLimbs, tables: TablesArg,
    ) for {
        "ntt/ntt.cu" ntt_digit_reverse,
        "ntt/ntt.cu" ntt_digit_reverse_tiled,
    };
    kernel "ntt/ntt.cu" ntt_h_step(
        a: DevPtrMut<FrLimbs>, b: DevPtr<FrLimbs>, c: DevPtr<FrLimbs>, z_inv: FrLimbs, n: u32,
    );
    kernel "ntt/ntt.cu" ntt_h_mul(a: DevPtrMut<FrLimbs>, b: DevPtr<FrLimbs>, n: u32);
    kernel "ntt/ntt.cu" ntt_h_finish(a: DevPtrMut<FrLimbs>, c: DevPtr<FrLimbs>, z_inv: FrLimbs, n: u32);

    // kernels/msm/scalars.cu: scans, sorts, classification, test data.
    kernel "msm/scalars.cu" msm_fill_u32(dst: DevPtrMut<u32>, len: u32, value: u32);
    kernel "msm/scalars.cu" msm_gather_pair_u32(a: DevPtr<u32>, b: DevPtr<u32>, out: DevPtrMut<u32>);
    kernel "msm/scalars.cu" msm_digit_histogram(
        scalars: DevPtr<FrLimbs>, idx: DevPtr<u32>, n: u32, bound: u32, c: u32, windows: u32,
        sets: u32, counts: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_digit_scatter(
        scalars: DevPtr<FrLimbs>, idx: DevPtr<u32>, n: u32, bound: u32, c: u32, windows: u32,
        sets: u32, copy_stride: u32, cursors: DevPtrMut<u32>, entries: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_radix_digits(
        scalars: DevPtr<FrLimbs>, idx: DevPtr<u32>, n: u32, bound: u32, c: u32, windows: u32,
        sets: u32, copies: u32, keys_out: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_radix_counts(
        keys_in: DevPtr<u32>, total: u32, shift: u32, tile_hist: DevPtrMut<u32>, ntiles: u32,
    );
    kernel "msm/scalars.cu" msm_radix_scatter(
        keys_in: DevPtr<u32>, vals_in: DevPtr<u32>, total: u32, shift: u32,
        tile_off: DevPtr<u32>, ntiles: u32, idx: DevPtr<u32>, n: u32, w0: u32, copies: u32,
        stride: u32, out_base: DevPtr<u32>, keys_out: DevPtrMut<u32>, vals_out: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_radix_bucket_counts(
        keys: DevPtr<u32>, total: u32, sentinel: u32, counts: DevPtrMut<u32>,
        real_total: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_scan_tile_sums(
        input: DevPtr<u32>, len: u32, tile_sums: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_scan_tile_offsets(
        tile_sums: DevPtrMut<u32>, ntiles: u32, out: DevPtrMut<u32>, out2: DevPtrMut<u32>,
        len: u32,
    );
    kernel "msm/scalars.cu" msm_scan_tiles(
        input: DevPtr<u32>, len: u32, tile_offsets: DevPtr<u32>, out: DevPtrMut<u32>,
        out2: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_classify_count(
        scalars: DevPtr<FrLimbs>, n: u32, ones_per_tile: DevPtrMut<u32>,
        others_per_tile: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_classify_scatter(
        scalars: DevPtr<FrLimbs>, n: u32, ones_offsets: DevPtr<u32>, others_offsets: DevPtr<u32>,
        ones_idx: DevPtrMut<u32>, others_idx: DevPtrMut<u32>,
    );
    kernel "msm/scalars.cu" msm_random_scalars(out: DevPtrMut<FrLimbs>, n: u32, seed: u64);

    // kernels/msm/pippenger.cuh, one set per curve (msm/g1.cu, msm/g2.cu);
    // the accumulation's and the bitmap sum's launch-bound variants are
    // timed by the benchmark (the defaults are the production ones).
    family MsmAccumulate<P> = (
        bases: DevPtr<P>, entries: DevPtr<u32>, offsets: DevPtr<u32>, nkeys: u32, nthreads: u32,
        bucket_sums: DevPtrMut<u64>, part_keys: DevPtrMut<u32>, part_pts: DevPtrMut<u64>,
    ) for {
        "msm/g1.cu" msm_accumulate_g1_unbounded<G1AffineLimbs>,
        "msm/g2.cu" msm_accumulate_g2_noprefetch<G2AffineLimbs>,
        // Into buckets kept across calls (a streamed key's H, G1 only).
        "msm/g1.cu" msm_accumulate_kept_g1<G1AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g1.cu" msm_accumulate_g1<G1AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g1_variants.cu" msm_accumulate_g1_8x64<G1AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g1_sqr_variants.cu" msm_accumulate_g1_sqrmul<G1AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g2.cu" msm_accumulate_g2<G2AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g2_variants.cu" msm_accumulate_g2_noprefetch_eager<G2AffineLimbs>,
    };
    family MsmMerge = (
        in_keys: DevPtr<u32>, in_pts: DevPtr<u64>, len: u32, chunk: u32, nthreads: u32,
        bucket_sums: DevPtrMut<u64>, out_keys: DevPtrMut<u32>, out_pts: DevPtrMut<u64>,
    ) for {
        "msm/g1.cu" msm_merge_g1,
        "msm/g2.cu" msm_merge_g2,
        "msm/g1.cu" msm_merge_kept_g1,
    };
    family MsmReduceSegments = (
        bucket_sums: DevPtr<u64>, offsets: DevPtr<u32>, buckets_per_window: u32, m: u32,
        segments: u32, windows: u32, out: DevPtrMut<u64>,
    ) for {
        "msm/g1.cu" msm_reduce_segments_g1,
        "msm/g2.cu" msm_reduce_segments_g2,
        // Every bucket, offsets unread (kept buckets).
        "msm/g1.cu" msm_reduce_kept_g1,
    };
    family MsmSumGroups = (input: DevPtr<u64>, len: u32, out: DevPtrMut<u64>) for {
        "msm/g1.cu" msm_sum_groups_g1,
        "msm/g2.cu" msm_sum_groups_g2,
    };
    family MsmHorner = (sums: DevPtr<u64>, windows: u32, c: u32, out: DevPtrMut<u64>) for {
        "msm/g1.cu" msm_horner_g1,
        "msm/g2.cu" msm_horner_g2,
    };
    family MsmBitmapSum<P> = (
        bases: DevPtr<P>, bitmap: DevPtr<u64>, n: u32, out: DevPtrMut<u64>,
    ) for {
        "msm/g1.cu" msm_batch_sum_bitmap_g1<G1AffineLimbs>,
        "msm/g2.cu" msm_batch_sum_bitmap_g2<G2AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g1_variants.cu" msm_batch_sum_bitmap_g1_4x128<G1AffineLimbs>,
        #[cfg(feature = "tuning")]
        "msm/g1_variants.cu" msm_batch_sum_bitmap_g1_unbounded<G1AffineLimbs>,
    };
    family MsmIndicesSum<P> = (
        bases: DevPtr<P>, nbases: u32, idx: DevPtr<u32>, len: u32, out: DevPtrMut<u64>,
    ) for {
        "msm/g1.cu" msm_batch_sum_indices_g1<G1AffineLimbs>,
        "msm/g2.cu" msm_batch_sum_indices_g2<G2AffineLimbs>,
    };
    family MsmChainBases<P> = (
        consts: DevPtr<P>, first: u32, n: u32, run: u32, scratch: DevPtrMut<u64>,
        out: DevPtrMut<P>,
    ) for {
        "msm/g1.cu" msm_chain_bases_g1<G1AffineLimbs>,
        "msm/g2.cu" msm_chain_bases_g2<G2AffineLimbs>,
    };
    family MsmShiftBases<P> = (
        input: DevPtr<P>, n: u32, run: u32, doublings: u32, scratch: DevPtrMut<u64>,
        out: DevPtrMut<P>,
    ) for {
        "msm/g1.cu" msm_shift_bases_g1<G1AffineLimbs>,
        "msm/g2.cu" msm_shift_bases_g2<G2AffineLimbs>,
    };

    // kernels/keygen/keygen.cu, one pair per curve.
    family KeygenMul<P> = (
        table: DevPtr<P>, window_bits: u32, windows: u32, scalars: DevPtr<FrLimbs>, n: u32,
        out: DevPtrMut<u64>,
    ) for {
        "keygen/keygen.cu" keygen_fixed_base_mul_g1<G1AffineLimbs>,
        "keygen/keygen.cu" keygen_fixed_base_mul_g2<G2AffineLimbs>,
    };
    family KeygenToAffine<P> = (xyzz: DevPtr<u64>, n: u32, run: u32, out: DevPtrMut<P>) for {
        "keygen/keygen.cu" keygen_to_affine_g1<G1AffineLimbs>,
        "keygen/keygen.cu" keygen_to_affine_g2<G2AffineLimbs>,
    };

    // kernels/prover/: z's classes and a, b, c (abc.cu), the packed z's
    // expansion (expand.cu), the density gather (gather.cu).
    kernel "prover/abc.cu" prover_classify_z(z: DevPtr<FrLimbs>, n: u32, cls: DevPtrMut<u8>);
    family ProverSpmv<I> = (
        row_ptr: DevPtr<u32>, cols: DevPtr<u32>, ids: DevPtr<I>, coeffs: DevPtr<FrLimbs>,
        z: DevPtr<FrLimbs>, cls: DevPtr<u8>, rows: u32, out: DevPtrMut<FrLimbs>,
    ) for {
        "prover/abc.cu" prover_spmv_u16<u16>,
        "prover/abc.cu" prover_spmv_u32<u32>,
    };
    kernel "prover/expand.cu" prover_expand_z(
        packed: DevPtr<u64>, len: u32, others_at: u32, others: u32, out: DevPtrMut<FrLimbs>,
    );
    kernel "prover/expand.cu" prover_expand_span(
        codes: DevPtr<u64>, before: DevPtr<u32>, others: DevPtr<FrLimbs>, nothers: u32,
        start: u32, n: u32, out: DevPtrMut<FrLimbs>, total: u32,
    );
    kernel "prover/expand.cu" prover_gather_ranks_compact(
        codes: DevPtr<u64>, before: DevPtr<u32>, others: DevPtr<FrLimbs>, nothers: u32,
        words: DevPtr<u64>, w0: u32, w1: u32, n: u32, offsets: DevPtr<u32>, r0: u32, r1: u32,
        out: DevPtrMut<FrLimbs>,
    );
    kernel "prover/gather.cu" prover_word_popcounts(
        words: DevPtr<u64>, nwords: u32, n: u32, counts: DevPtrMut<u32>,
    );
    kernel "prover/gather.cu" prover_gather_set_bits(
        values: DevPtr<FrLimbs>, words: DevPtr<u64>, nwords: u32, n: u32, offsets: DevPtr<u32>,
        out: DevPtrMut<FrLimbs>,
    );
    kernel "prover/gather.cu" prover_gather_ranks(
        values: DevPtr<FrLimbs>, words: DevPtr<u64>, w0: u32, w1: u32, n: u32,
        offsets: DevPtr<u32>, r0: u32, r1: u32, out: DevPtrMut<FrLimbs>,
    );
    kernel "prover/gather.cu" prover_copy_pad(
        src: DevPtr<FrLimbs>, n: u32, dst: DevPtrMut<FrLimbs>, total: u32,
    );
    kernel "prover/gather.cu" prover_gather_rows(
        src: DevPtr<u64>, src_len: u32, row: u32, idx: DevPtr<u32>, count: u32,
        dst: DevPtrMut<u64>,
    );

    // kernels/tests/field_ec_tests.cu: one field or curve operation per
    // element (conformance tests), and the arithmetic throughput probes.
    family TestFieldOp<F> = (
        op: u32, out: DevPtrMut<F>, a: DevPtr<F>, b: DevPtr<F>, n: u32,
    ) for {
        #[cfg(feature = "testing")]
        "tests/field_ec_tests.cu" test_fr_op<FrLimbs>,
        #[cfg(feature = "testing")]
        "tests/field_ec_tests.cu" test_fq_op<FqLimbs>,
        #[cfg(feature = "testing")]
        "tests/field_ec_tests.cu" test_fq2_op<Fq2Limbs>,
    };
    family TestCurveOp<P, B> = (
        op: u32, out_affine: DevPtrMut<P>, out_jac: DevPtrMut<B>, a: DevPtr<P>, b: DevPtr<P>,
        n: u32,
    ) for {
        #[cfg(feature = "testing")]
        "tests/field_ec_tests.cu" test_g1_op<G1AffineLimbs, FqLimbs>,
        #[cfg(feature = "testing")]
        "tests/field_ec_tests.cu" test_g2_op<G2AffineLimbs, Fq2Limbs>,
    };
    family Probe<F> = (data: DevPtrMut<F>, n: u32, iters: u32) for {
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul_cios<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul_cios<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul_rr<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul_rr<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_inv<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_inv<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_inv_fermat<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_inv_fermat<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_sqr<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_sqr<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_dfma<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_dfma<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul_dfma<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul_dfma<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul_fp64<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul_fp64<FqLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fr_mul_mixed<FrLimbs>,
        #[cfg(feature = "tuning")]
        "tests/field_ec_tests.cu" bench_fq_mul_mixed<FqLimbs>,
    };
}
