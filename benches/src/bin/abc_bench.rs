//! a, b, c on the GPU from a pre-compiled circuit (issue #14): the demo
//! circuit (95% SHA-256, the PoRep-like mix) of 2^k constraints is recorded
//! once (cuzk-synth `precompiled::record`, lanes in parallel), its witness
//! generated natively, then a = A·z, b = B·z, c = C·z are computed on the
//! device (kernels/prover/abc.cu, timed with CUDA events: median of repeats
//! after a warm-up) and on the CPU (`R1csRef::synthesize`, rayon over every
//! core), checked equal bit for bit, and compared with the time the host
//! a, b, c take to upload today. Prints a table last.
//!
//! `abc_bench [--smoke] [--log-sizes 20,24,27]`. Without a CUDA device it
//! says it skipped and exits 0, so CI smoke-runs it.

use std::time::Instant;

use clap::Parser;
use cuzk_cuda::abc::{device_bytes, DeviceR1cs};
use cuzk_cuda::{Gpu, VramBudget};
use cuzk_field::limbs::{fr_as_limbs, limbs_as_fr, FrLimbs};
use cuzk_synth::precompiled::record;
use cuzk_synth::DemoCircuit;

/// The target for a, b, c of a 2^27 partition on the GPU (ms).
const TARGET_2_27_MS: f64 = 100.0;

/// a, b, c on the GPU from recorded matrices, against the CPU product.
#[derive(Parser, Debug)]
#[command(name = "abc_bench")]
struct Args {
    /// A smoke run: 2^10 and 2^12, one repeat.
    #[arg(long, alias = "test")]
    smoke: bool,
    /// Circuit sizes (log2 of the constraint count), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [20u32, 24, 26, 27])]
    log_sizes: Vec<u32>,
    /// Timed repeats per size (after one warm-up).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("abc_bench: {e}");
        std::process::exit(1);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = Args::parse();
    if args.smoke {
        args.log_sizes = vec![10, 12];
        args.repeats = 1;
    }
    let Some(gpu) = Gpu::first_with(VramBudget::Auto)? else {
        println!("abc_bench: skipped: no CUDA device");
        return Ok(());
    };
    let s = gpu.new_stream()?;
    println!(
        "abc_bench on {} (host: {})",
        gpu.info(),
        cuzk_benches::machine()
    );
    let mut rows = Vec::new();
    for &k in &args.log_sizes {
        let t = Instant::now();
        let r1cs = record(DemoCircuit::new(k, 0.95, 1))?;
        let record_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let witness = DemoCircuit::new(k, 0.95, 1).native_witness();
        let witness_s = t.elapsed().as_secs_f64();
        let r = r1cs.as_ref();
        let stats = r.stats();
        let z: Vec<_> = witness
            .input_assignment
            .iter()
            .chain(&witness.aux_assignment)
            .copied()
            .collect();
        let t = Instant::now();
        let cpu = r.synthesize(witness)?;
        let cpu_s = t.elapsed().as_secs_f64();

        let matrices = cuzk_gpu::host_matrices(&r);
        let bytes = device_bytes(r.coeffs.len(), &matrices);
        let t = Instant::now();
        let dev = DeviceR1cs::upload(&s, fr_as_limbs(r.coeffs), matrices)?;
        let dz = s.upload_new(fr_as_limbs(&z))?;
        s.synchronize()?;
        let upload_s = t.elapsed().as_secs_f64();
        let mut classes = s.alloc::<u8>(z.len())?;
        let n = dev.rows();
        let mut outs = [
            s.alloc::<FrLimbs>(n)?,
            s.alloc::<FrLimbs>(n)?,
            s.alloc::<FrLimbs>(n)?,
        ];
        let mut times = Vec::new();
        for i in 0..=args.repeats {
            let start = s.record()?;
            {
                let [a, b, c] = &mut outs;
                dev.evaluate(&s, &dz, &mut classes, [a, b, c])?;
            }
            let end = s.record()?;
            let ms = f64::from(start.elapsed_ms(&end)?);
            if i > 0 || args.repeats == 0 {
                times.push(ms);
            }
        }
        for (name, (d, host)) in ["a", "b", "c"]
            .into_iter()
            .zip(outs.iter().zip([&cpu.a, &cpu.b, &cpu.c]))
        {
            let got = s.download_vec(d)?;
            if limbs_as_fr(&got) != host.as_slice() {
                return Err(format!("2^{k}: GPU {name} differs from the CPU product").into());
            }
        }
        let gpu_ms = median(times);
        // What a, b, c cost to send today: 3·n·32 bytes at the measured
        // 55.4 GB/s pinned rate (docs/cuda.md), staging not counted.
        let pcie_ms = 3.0 * n as f64 * 32.0 / 55.4e9 * 1e3;
        println!(
            "2^{k}: {} rows, {:?} terms, {} coefficients, matrices {:.2} GiB on the device; \
             record {record_s:.2} s, native witness {witness_s:.2} s, CPU a,b,c {:.1} ms, \
             GPU a,b,c {gpu_ms:.2} ms (identical), matrices+z upload {upload_s:.2} s",
            n,
            stats.nonzeros,
            r.coeffs.len(),
            bytes as f64 / (1u64 << 30) as f64,
            cpu_s * 1e3
        );
        rows.push((k, n, gpu_ms, cpu_s * 1e3, pcie_ms, bytes));
    }
    println!("\n| size | rows | GPU a,b,c ms | CPU a,b,c ms (all cores) | host a,b,c over PCIe ms (55.4 GB/s) | matrices GiB |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (k, n, g, c, p, b) in rows {
        let target = if k == 27 {
            format!(" (target ≤ {TARGET_2_27_MS:.0})")
        } else {
            String::new()
        };
        println!(
            "| 2^{k} | {n} | {g:.2}{target} | {c:.1} | {p:.1} | {:.2} |",
            b as f64 / (1u64 << 30) as f64
        );
    }
    Ok(())
}
