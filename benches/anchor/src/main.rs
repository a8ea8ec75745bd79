//! `anchor`: proves cuzk's demo circuit with bellperson 0.27 built with `cuda-supraseal`
//! (supraseal-c2 over sppark), verifies every proof with bellperson's verifier and prints the
//! times. It is the comparison point for cuzk's own prover; see README.md.
//!
//! Timing: bellperson's supraseal prover synthesizes the whole batch (one circuit per rayon
//! task), logs `starting proof timer`, hands the assignments to supraseal-c2 and logs
//! `prover time`. A `log` sink here stamps those two messages, so the batch's wall time splits
//! into "synthesis" and "after synthesis" (supraseal-c2's NTT, MSMs and proof assembly, with its
//! CPU-side preprocessing) without changing what bellperson runs.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use bellperson::groth16::{
    create_random_proof_batch, prepare_verifying_key, verify_proof, Proof, SuprasealParameters,
    VerifyingKey,
};
use blstrs::{Bls12, Scalar as Fr};
use cuzk_synth::DemoCircuit;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const USAGE: &str = "usage: anchor --key PATH --log-size K [--sha-share X (0.95)] \
[--partitions N (3)] [--seed S (1)] [--runs R (1)] [--verbose]";

#[derive(Debug)]
struct Args {
    key: PathBuf,
    log_size: u32,
    sha_share: f64,
    partitions: usize,
    seed: u64,
    runs: usize,
    verbose: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut key = None;
    let mut log_size = None;
    let mut sha_share = DemoCircuit::DEFAULT_SHA_SHARE;
    let mut partitions = 3usize;
    let mut seed = 1u64;
    let mut runs = 1usize;
    let mut verbose = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--verbose" || flag == "-v" {
            verbose = true;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--key" => key = Some(PathBuf::from(&value)),
            "--log-size" => log_size = Some(value.parse::<u32>().map_err(|e| bad(&e))?),
            "--sha-share" => sha_share = value.parse::<f64>().map_err(|e| bad(&e))?,
            "--partitions" => partitions = value.parse::<usize>().map_err(|e| bad(&e))?,
            "--seed" => seed = value.parse::<u64>().map_err(|e| bad(&e))?,
            "--runs" => runs = value.parse::<usize>().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let key = key.ok_or("--key is required")?;
    let log_size = log_size.ok_or("--log-size is required")?;
    if !(DemoCircuit::MIN_LOG_SIZE..=DemoCircuit::MAX_LOG_SIZE).contains(&log_size) {
        return Err(format!(
            "--log-size must be in {}..={}",
            DemoCircuit::MIN_LOG_SIZE,
            DemoCircuit::MAX_LOG_SIZE
        ));
    }
    if !(0.0..=1.0).contains(&sha_share) {
        return Err("--sha-share must be in [0, 1]".into());
    }
    if partitions == 0 || runs == 0 {
        return Err("--partitions and --runs must be at least 1".into());
    }
    Ok(Args {
        key,
        log_size,
        sha_share,
        partitions,
        seed,
        runs,
        verbose,
    })
}

/// A `log` sink that stamps bellperson's "proof timer started" message (the end of synthesis)
/// and, with `--verbose`, echoes every record at info level or above with the time since start.
struct Stamps {
    start: Instant,
    verbose: bool,
    proof_timer_started: Mutex<Vec<Instant>>,
}

static STAMPS: OnceLock<Stamps> = OnceLock::new();

impl log::Log for Stamps {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let now = Instant::now();
        let message = record.args().to_string();
        if record.target().starts_with("bellperson") && message == "starting proof timer" {
            self.proof_timer_started
                .lock()
                .expect("stamp lock poisoned")
                .push(now);
        }
        if self.verbose {
            eprintln!(
                "[{:9.3} s] {} {}: {}",
                (now - self.start).as_secs_f64(),
                record.level(),
                record.target(),
                message
            );
        }
    }

    fn flush(&self) {}
}

fn install_logger(verbose: bool) {
    let stamps = STAMPS.get_or_init(|| Stamps {
        start: Instant::now(),
        verbose,
        proof_timer_started: Mutex::new(Vec::new()),
    });
    log::set_logger(stamps).expect("no other logger is installed");
    log::set_max_level(log::LevelFilter::Info);
}

/// The last "proof timer started" stamp taken after `since`, if bellperson logged one.
fn synthesis_end_after(since: Instant) -> Option<Instant> {
    let stamps = STAMPS.get()?;
    let list = stamps.proof_timer_started.lock().ok()?;
    list.iter().copied().rev().find(|t| *t >= since)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn run(args: &Args) -> Result<(), String> {
    let k = args.log_size;
    let n = args.partitions;
    let shape = DemoCircuit::plan_for(k, args.sha_share);
    println!(
        "anchor: bellperson 0.27 + cuda-supraseal (supraseal-c2 0.1), demo circuit 2^{k}, \
         sha share {}, {} SHA blocks + {} chain steps, {n} circuits per batch, {} rayon threads",
        args.sha_share,
        shape.sha_blocks,
        shape.chain_len,
        rayon::current_num_threads()
    );

    let t = Instant::now();
    let vk: VerifyingKey<Bls12> = {
        let file =
            File::open(&args.key).map_err(|e| format!("open {}: {e}", args.key.display()))?;
        VerifyingKey::read(BufReader::new(file))
            .map_err(|e| format!("read verifying key from {}: {e}", args.key.display()))?
    };
    let pvk = prepare_verifying_key(&vk);
    println!(
        "anchor: verifying key read ({} ic points) in {:.3} s",
        vk.ic.len(),
        secs(t.elapsed())
    );

    let t = Instant::now();
    let params = SuprasealParameters::<Bls12>::new(args.key.clone())
        .map_err(|e| format!("supraseal SRS from {}: {e}", args.key.display()))?;
    println!(
        "anchor: supraseal-c2 SRS loaded in {:.3} s",
        secs(t.elapsed())
    );

    let mut all_ok = true;
    for run_index in 0..args.runs {
        let seeds: Vec<u64> = (0..n as u64).map(|i| args.seed + i).collect();
        let circuits: Vec<DemoCircuit> = seeds
            .iter()
            .map(|&s| DemoCircuit::new(k, args.sha_share, s))
            .collect();
        let inputs: Vec<Vec<Fr>> = circuits.iter().map(DemoCircuit::public_inputs).collect();
        let mut rng = ChaCha20Rng::seed_from_u64(args.seed ^ ((run_index as u64) << 32));

        let t0 = Instant::now();
        let proofs: Vec<Proof<Bls12>> = create_random_proof_batch(circuits, &params, &mut rng)
            .map_err(|e| format!("proving: {e}"))?;
        let total = t0.elapsed();
        let synth_end = synthesis_end_after(t0);

        for (i, (proof, public)) in proofs.iter().zip(&inputs).enumerate() {
            let ok = verify_proof(&pvk, proof, public).map_err(|e| format!("verify: {e}"))?;
            all_ok &= ok;
            let mut bytes = Vec::with_capacity(192);
            proof
                .write(&mut bytes)
                .map_err(|e| format!("serialize proof: {e}"))?;
            println!(
                "proof {i}: seed {} inputs {} verified {} bytes {} head {}",
                seeds[i],
                public.len(),
                if ok { "OK" } else { "FAILED" },
                bytes.len(),
                hex8(&bytes)
            );
        }

        let split = match synth_end {
            Some(end) => format!(
                ", synthesis {:.3} s, after synthesis {:.3} s ({:.3} s per proof)",
                secs(end - t0),
                secs(t0 + total - end),
                secs(t0 + total - end) / n as f64
            ),
            None => ", synthesis not separable (bellperson logged no proof-timer start)".into(),
        };
        println!(
            "anchor: 2^{k} share {}: {n} proofs, total {:.3} s, {:.3} s per proof{split}{}",
            args.sha_share,
            secs(total),
            secs(total) / n as f64,
            if args.runs > 1 {
                format!(" [run {}/{}]", run_index + 1, args.runs)
            } else {
                String::new()
            }
        );
    }
    if all_ok {
        Ok(())
    } else {
        Err("some proofs did not verify".into())
    }
}

fn hex8(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("anchor: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    install_logger(args.verbose);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("anchor: error: {e}");
            ExitCode::FAILURE
        }
    }
}
