//! CPU NTT: cuzk-field's `Domain::ntt` against bellperson 0.27's
//! `EvaluationDomain::fft` (ec-gpu-gen's CPU FFT), 2^16..2^22, random data.

mod common;

use bellperson::domain::EvaluationDomain;
use cuzk_benches::{median_time, ms, random_scalars, report, BenchArgs, Row};
use cuzk_field::ntt::Domain;
use ec_gpu_gen::threadpool::Worker;

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[10], &[16, 18, 20, 22]);
    let worker = Worker::new();
    let mut rows = Vec::new();
    for &k in &sizes {
        let data = random_scalars(1 << k, k as u64);
        let domain = Domain::new(k);
        // Same answer first.
        let mut ours_v = data.clone();
        domain.ntt(&mut ours_v);
        let mut theirs = EvaluationDomain::from_coeffs(data.clone()).unwrap();
        theirs.fft(&worker, &mut None).unwrap();
        assert_eq!(
            ours_v,
            theirs.as_ref(),
            "NTT 2^{k} disagrees with bellperson"
        );

        let mut v = data.clone();
        let ours = median_time(args.repeats, !args.smoke, || domain.ntt(&mut v));
        let mut d = EvaluationDomain::from_coeffs(data.clone()).unwrap();
        let base = median_time(args.repeats, !args.smoke, || {
            d.fft(&worker, &mut None).unwrap()
        });
        rows.push(Row {
            case: "ntt forward".into(),
            size_log2: k,
            ours_ms: ms(ours),
            baseline: "bellperson fft".into(),
            baseline_ms: ms(base),
        });
    }
    report("cpu_ntt", &rows);
}
