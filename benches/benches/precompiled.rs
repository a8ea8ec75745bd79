//! Pre-compiled synthesis against full synthesis on the demo circuit
//! (default SHA share), 2^16..2^22: the circuit is recorded once, then per
//! witness either the gadgets run witness-only or the native witness
//! generator runs, and a, b, c come from the matrices. Every path's
//! `Synthesized` is checked equal to full synthesis's before timing.
//! All on every rayon thread, then the end-to-end paths on one thread (the
//! cost in core-seconds, as when one core synthesizes one partition).
//!
//! `cargo bench -p cuzk-benches --bench precompiled [-- 2^20 --repeats 3]`

mod common;

use cuzk_benches::{median_time, ms, report, BenchArgs, Row};
use cuzk_synth::precompiled::{cache, witness, CircuitId, MappedR1cs, Witness};
use cuzk_synth::synthesize;

fn main() {
    let args = BenchArgs::from_env();
    let sizes = common::sizes(&args, &[15], &[16, 18, 20, 22]);
    let threads = rayon::current_num_threads();
    let one = common::one_thread_pool();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut rows = Vec::new();
    for &k in &sizes {
        let name = format!("2^{k}");
        if !args.wants(&name) {
            continue;
        }
        let (circuit, r1cs, record_time) = common::recorded_demo(k);
        let stats = r1cs.as_ref().stats();
        let path = dir.path().join(format!("demo-{k}.r1cs"));
        let id = CircuitId::from_name(&format!("demo-{k}-sha95"));
        cache::write(&path, &id, &r1cs).expect("writes the cache file");
        let open_time = median_time(args.repeats, !args.smoke, || {
            drop(MappedR1cs::open(&path, &id).expect("opens"))
        });
        let mapped = MappedR1cs::open(&path, &id).expect("opens");
        println!(
            "{name}: nonzeros A/B/C {:?}, {} distinct coefficients, {}-byte ids, \
             {:.2} bytes per nonzero with row offsets, cache file {} bytes",
            stats.nonzeros,
            stats.distinct_coeffs,
            stats.coeff_id_bytes,
            stats.bytes_per_nonzero,
            mapped.file_bytes()
        );

        // Same result on every path first.
        let full = synthesize(circuit.clone()).expect("synthesizes");
        let gadget_witness = witness(circuit.clone()).expect("witness");
        let native = circuit.native_witness();
        assert!(native == gadget_witness, "{name}: native witness differs");
        let view = mapped.as_ref();
        assert!(
            view.synthesize(native.clone()).expect("fits") == full,
            "{name}: pre-compiled synthesis differs"
        );
        drop(full);

        let base = median_time(args.repeats, !args.smoke, || {
            drop(synthesize(circuit.clone()).expect("synthesizes"))
        });
        let gadgets_abc = median_time(args.repeats, !args.smoke, || {
            let w = witness(circuit.clone()).expect("witness");
            drop(view.synthesize(w).expect("fits"))
        });
        let native_abc = median_time(args.repeats, !args.smoke, || {
            drop(view.synthesize(circuit.native_witness()).expect("fits"))
        });
        let gadgets_only = median_time(args.repeats, !args.smoke, || {
            drop(witness(circuit.clone()).expect("witness"))
        });
        let native_only = median_time(args.repeats, !args.smoke, || drop(circuit.native_witness()));
        let mut pool: Vec<Witness> = (0..=args.repeats).map(|_| native.clone()).collect();
        let abc_only = median_time(args.repeats, !args.smoke, || {
            drop(
                view.synthesize(pool.pop().expect("one per run"))
                    .expect("fits"),
            )
        });
        drop(pool);

        let one_base = median_time(args.repeats, false, || {
            drop(
                one.install(|| synthesize(circuit.clone()))
                    .expect("synthesizes"),
            )
        });
        let one_native_abc = median_time(args.repeats, false, || {
            one.install(|| drop(view.synthesize(circuit.native_witness()).expect("fits")))
        });

        let full_row = |case: &str, ours| Row {
            case: format!("{case}, {threads} thr"),
            size_log2: k,
            ours_ms: ms(ours),
            baseline: "full synthesis".into(),
            baseline_ms: ms(base),
        };
        rows.push(full_row("gadget witness + a,b,c", gadgets_abc));
        rows.push(full_row("native witness + a,b,c", native_abc));
        rows.push(full_row("a,b,c from matrices", abc_only));
        rows.push(full_row("native witness only", native_only));
        rows.push(Row {
            case: format!("native witness, {threads} thr"),
            size_log2: k,
            ours_ms: ms(native_only),
            baseline: "gadget witness-only".into(),
            baseline_ms: ms(gadgets_only),
        });
        rows.push(full_row("record (once)", record_time));
        rows.push(full_row("open cache (checked)", open_time));
        rows.push(Row {
            case: "native witness + a,b,c, 1 thr".into(),
            size_log2: k,
            ours_ms: ms(one_native_abc),
            baseline: "full synthesis, 1 thr".into(),
            baseline_ms: ms(one_base),
        });
    }
    report("precompiled", &rows);
}
