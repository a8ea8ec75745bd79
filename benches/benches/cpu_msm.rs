//! CPU MSM: cuzk-field's split MSM against blstrs' own `multi_exp`, G1 and G2,
//! 2^16..2^20, on full-width random scalars and on a PoRep-like mix
//! (mostly 0/1 bits, a few full-width values).

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

fn main() {
    let args = BenchArgs::from_env();
    let sizes: Vec<u32> = if args.smoke {
        vec![10]
    } else {
        vec![16, 18, 20]
    };
    let mut rows = Vec::new();
    for &k in &sizes {
        let n = 1usize << k;
        let p1 = random_g1(n, 1);
        let proj1: Vec<G1Projective> = p1.iter().map(G1Projective::from).collect();
        for (mix, scalars) in [
            ("random", random_scalars(n, 2)),
            ("porep-like", porep_like(n, 3)),
        ] {
            let case = format!("g1 {mix}");
            if !args.wants(&case) {
                continue;
            }
            assert_eq!(
                msm_g1(&p1, &scalars),
                G1Projective::multi_exp(&proj1, &scalars)
            );
            let ours = median_time(args.repeats, !args.smoke, || {
                std::hint::black_box(msm_g1(&p1, &scalars));
            });
            let base = median_time(args.repeats, !args.smoke, || {
                std::hint::black_box(G1Projective::multi_exp(&proj1, &scalars));
            });
            rows.push(Row {
                case,
                size_log2: k,
                ours_ms: ms(ours),
                baseline: "blstrs multi_exp".into(),
                baseline_ms: ms(base),
            });
        }
        drop((p1, proj1));
        if k <= 20 {
            let p2 = random_g2(n, 4);
            let proj2: Vec<G2Projective> = p2.iter().map(G2Projective::from).collect();
            for (mix, scalars) in [
                ("random", random_scalars(n, 5)),
                ("porep-like", porep_like(n, 6)),
            ] {
                let case = format!("g2 {mix}");
                if !args.wants(&case) {
                    continue;
                }
                assert_eq!(
                    msm_g2(&p2, &scalars),
                    G2Projective::multi_exp(&proj2, &scalars)
                );
                let ours = median_time(args.repeats, !args.smoke, || {
                    std::hint::black_box(msm_g2(&p2, &scalars));
                });
                let base = median_time(args.repeats, !args.smoke, || {
                    std::hint::black_box(G2Projective::multi_exp(&proj2, &scalars));
                });
                rows.push(Row {
                    case,
                    size_log2: k,
                    ours_ms: ms(ours),
                    baseline: "blstrs multi_exp".into(),
                    baseline_ms: ms(base),
                });
            }
        }
    }
    report("cpu_msm", &rows);
}
