//! CPU MSM: cuzk-field's split MSM against blstrs' own `multi_exp`, G1 and G2,
//! 2^16..2^20, on full-width random scalars and on a PoRep-like mix
//! (mostly 0/1 bits, a few full-width values).

mod common;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cuzk_benches::{
    median_time, ms, random_g1, random_g2, random_scalars, report, rng, BenchArgs, Row,
};
use cuzk_field::msm::{msm_g1, msm_g2};
use ff::Field;
use rand::Rng;

fn porep_like(n: usize, seed: u64) -> Vec<Fr> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| match r.gen_range(0..100) {
            0..=44 => Fr::ZERO,
            45..=89 => Fr::ONE,
            90..=94 => Fr::from(r.gen::<u32>() as u64),
            _ => Fr::random(&mut r),
        })
        .collect()
}

/// Times `ours` and `base` (after checking they agree) and appends a row.
fn measure<T: PartialEq + std::fmt::Debug>(
    args: &BenchArgs,
    rows: &mut Vec<Row>,
    case: String,
    k: u32,
    ours: impl Fn() -> T,
    base: impl Fn() -> T,
) {
    if !args.wants(&case) {
        return;
    }
    assert_eq!(ours(), base(), "{case} 2^{k}: results differ");
    let ours = median_time(args.repeats, !args.smoke, || {
        std::hint::black_box(ours());
    });
    let base = median_time(args.repeats, !args.smoke, || {
        std::hint::black_box(base());
    });
    rows.push(Row {
        case,
        size_log2: k,
        ours_ms: ms(ours),
        baseline: "blstrs multi_exp".into(),
        baseline_ms: ms(base),
    });
}

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[10], &[16, 18, 20]);
    let mut rows = Vec::new();
    for &k in &sizes {
        let n = 1usize << k;
        let p1 = random_g1(n, 1);
        let proj1: Vec<G1Projective> = p1.iter().map(G1Projective::from).collect();
        for (mix, s) in [
            ("random", random_scalars(n, 2)),
            ("porep-like", porep_like(n, 3)),
        ] {
            let case = format!("g1 {mix}");
            measure(
                &args,
                &mut rows,
                case,
                k,
                || msm_g1(&p1, &s),
                || G1Projective::multi_exp(&proj1, &s),
            );
        }
        drop((p1, proj1));
        let p2 = random_g2(n, 4);
        let proj2: Vec<G2Projective> = p2.iter().map(G2Projective::from).collect();
        for (mix, s) in [
            ("random", random_scalars(n, 5)),
            ("porep-like", porep_like(n, 6)),
        ] {
            let case = format!("g2 {mix}");
            measure(
                &args,
                &mut rows,
                case,
                k,
                || msm_g2(&p2, &s),
                || G2Projective::multi_exp(&proj2, &s),
            );
        }
    }
    report("cpu_msm", &rows);
}
