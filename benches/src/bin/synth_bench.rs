//! One PoRep partition's synthesis, mode against mode, in one process:
//! `sequential` (the whole circuit on one thread, bellperson's order),
//! `parallel` (challenges on rayon, joined past the shared preamble) and
//! `precompiled` (the witness challenge by challenge, a, b, c by mat-vec
//! over the recorded circuit). One line per mode: wall seconds, CPU
//! core-seconds (user + system of the whole process, as getrusage(SELF)
//! counts them, read from /proc/self/stat), peak RSS during the mode (the
//! high-water mark is reset before each mode through /proc/self/clear_refs),
//! constraints, and a checksum of a, b, c and the assignments (equal
//! checksums: the same `Synthesized`). Precompiled leaves a, b, c to the
//! prover (the GPU evaluates them from resident matrices); here they are
//! evaluated on the host inside the mode's figures, and the witness alone
//! (what the host pays when a GPU proves) is printed beside them.
//!
//! Then the witness alone from its sources, side by side (unless
//! `--no-witness`; `--witness SOURCE` picks them, default all three): the
//! crates' gadgets run witness-only (the reference), cuzk's native replay
//! expanded to 32 bytes a value (what pre-compiled synthesis uses), and the
//! native replay left compact (a 2-bit class per value, the others in full:
//! what it holds, and what expanding it costs, on their own lines); the run
//! fails if their values differ. `--witness-only` skips the modes. The
//! C1's parse (JSON to vanilla proofs) is its own line, first.
//!
//! `cargo run --release -p cuzk-benches --bin synth_bench -- --c1 FILE
//! [--partition K] [--mode sequential --mode parallel --mode precompiled]
//! [--witness gadgets --witness native --witness compact] [--witness-only]
//! [--cache FILE] [--threads N]`. Without `--cache`, precompiled records the
//! circuit into a temporary file first (timed on its own line, not in the
//! mode's figures); the cache file's load (open, checksums) is its own line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use cuzk_benches::{cpu_seconds, peak_rss, reset_peak_rss};
use cuzk_filecoin::precompile::{precompile, PrecompiledCircuit};
use cuzk_filecoin::{
    parse_c1, partition_compact_witness, partition_witness, synthesize_partition, C1Input,
    PorepSynthesis, SynthesisMode, WitnessSource,
};
use cuzk_synth::precompiled::CompactWitness;
use cuzk_synth::Synthesized;
use ff::PrimeField;
use rayon::prelude::*;

/// One PoRep partition's synthesis in each mode: wall, CPU core-seconds, peak RSS.
#[derive(Parser, Debug)]
struct Args {
    /// The C1 output (filecoin-proofs-api JSON or Curio's wrapper).
    #[arg(long)]
    c1: PathBuf,
    /// Which partition.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Modes to run, in order (repeat the flag); default all three.
    #[arg(long)]
    mode: Vec<SynthesisMode>,
    /// The pre-compiled circuit (from `cuzk precompile`); recorded into a
    /// temporary file when absent.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Rayon threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Skip the side-by-side of the witness's sources.
    #[arg(long)]
    no_witness: bool,
    /// The witness's sources to run, in order (repeat the flag): gadgets,
    /// native, compact; default all three.
    #[arg(long)]
    witness: Vec<Source>,
    /// Run the witness's sources alone, no synthesis mode.
    #[arg(long)]
    witness_only: bool,
}

/// Where the witness alone comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Source {
    /// The crates' gadgets, witness-only.
    Gadgets,
    /// The native replay, expanded.
    Native,
    /// The native replay, compact.
    Compact,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("synth_bench: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    pool.install(|| bench(&args))
}

fn bench(args: &Args) -> Result<()> {
    let bytes = std::fs::read(&args.c1).with_context(|| format!("{}", args.c1.display()))?;
    reset_peak_rss();
    let cpu = cpu_seconds()?;
    let start = Instant::now();
    let c1 = parse_c1(&bytes)?;
    let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds()? - cpu);
    println!(
        "{:<16} wall {wall:>8.2} s  cpu {cpu:>8.2} core-s  peak RSS {:>6.2} GiB  {} bytes of C1",
        "parse",
        peak_rss().unwrap_or(0) as f64 / (1u64 << 30) as f64,
        bytes.len()
    );
    drop(bytes);
    let modes = if args.witness_only {
        Vec::new()
    } else if args.mode.is_empty() {
        SynthesisMode::ALL.to_vec()
    } else {
        args.mode.clone()
    };
    println!(
        "synth_bench: {} partition {} of {}, {} rayon threads, {}",
        c1.proof_type.name(),
        args.partition,
        c1.proof_type.partitions(),
        rayon::current_num_threads(),
        cuzk_benches::machine()
    );
    let mut first: Option<(SynthesisMode, u64)> = None;
    for mode in modes {
        let synthesis = prepare(mode, &c1, args)?;
        reset_peak_rss();
        let cpu = cpu_seconds()?;
        let start = Instant::now();
        let mut synthesized = synthesize_partition(&c1, args.partition, &synthesis)?;
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let witness_alone = (!synthesized.abc_on_host()).then(|| {
            let (wall, cpu_s) = (start.elapsed().as_secs_f64(), cpu_seconds());
            let peak = peak_rss().unwrap_or(0);
            synthesized.evaluate_abc();
            cpu_s.map(|c| {
                format!(
                    "  (witness alone: wall {wall:.2} s, cpu {:.2} core-s, peak RSS {:.2} GiB; \
                     a GPU evaluates a, b, c)",
                    c - cpu,
                    gib(peak)
                )
            })
        });
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds()? - cpu;
        let peak = peak_rss().unwrap_or(0);
        let sum = checksum(&synthesized);
        println!(
            "{:<12} wall {wall:>8.2} s  cpu {cpu:>8.2} core-s ({:.1} cores)  peak RSS {:>6.2} GiB  \
             {} constraints  checksum {sum:016x}{}",
            mode.name(),
            cpu / wall.max(1e-9),
            gib(peak),
            synthesized.num_constraints(),
            witness_alone.transpose()?.unwrap_or_default()
        );
        drop(synthesized);
        match first {
            None => first = Some((mode, sum)),
            Some((m, s)) if s != sum => bail!("{mode} gave another Synthesized than {m}"),
            Some(_) => {}
        }
    }
    if !args.no_witness {
        let sources = if args.witness.is_empty() {
            vec![Source::Gadgets, Source::Native, Source::Compact]
        } else {
            args.witness.clone()
        };
        witness_sources(&c1, args.partition, &sources)?;
    }
    Ok(())
}

/// The witness alone from each of `sources`: one line each (the compact
/// one with what it holds, and its expansion on a line of its own), and
/// the check that all give the same values (each kept compact for it, so
/// that one source's figures do not include another's witness).
fn witness_sources(c1: &C1Input, k: usize, sources: &[Source]) -> Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut witnesses: Vec<(Source, CompactWitness)> = Vec::new();
    for &source in sources {
        reset_peak_rss();
        let cpu = cpu_seconds()?;
        let start = Instant::now();
        let (compact, full) = match source {
            Source::Gadgets => (
                None,
                Some(partition_witness(c1, k, WitnessSource::Gadgets)?),
            ),
            Source::Native => (None, Some(partition_witness(c1, k, WitnessSource::Native)?)),
            Source::Compact => (Some(partition_compact_witness(c1, k)?), None),
        };
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds()? - cpu;
        let peak = gib(peak_rss().unwrap_or(0));
        let name = format!("witness {source:?}").to_lowercase();
        let compact = match (compact, full) {
            (Some(compact), _) => {
                let counts = compact.aux.counts();
                println!(
                    "{name:<16} wall {wall:>8.2} s  cpu {cpu:>8.2} core-s ({:.1} cores)  peak RSS \
                     {peak:>6.2} GiB  {} inputs, {} aux ({} zeros, {} ones, {} others): {:.1} MB held",
                    cpu / wall.max(1e-9),
                    compact.input_assignment.len(),
                    compact.aux.len(),
                    counts.zeros,
                    counts.ones,
                    counts.others,
                    compact.bytes() as f64 / 1e6
                );
                reset_peak_rss();
                let cpu = cpu_seconds()?;
                let start = Instant::now();
                let expanded = compact.expand();
                let wall = start.elapsed().as_secs_f64();
                let cpu = cpu_seconds()? - cpu;
                println!(
                    "{:<16} wall {wall:>8.2} s  cpu {cpu:>8.2} core-s ({:.1} cores)  peak RSS \
                     {:>6.2} GiB  {} aux values in full",
                    "  expanded",
                    cpu / wall.max(1e-9),
                    gib(peak_rss().unwrap_or(0)),
                    expanded.aux_assignment.len()
                );
                compact
            }
            (None, Some(full)) => {
                println!(
                    "{name:<16} wall {wall:>8.2} s  cpu {cpu:>8.2} core-s ({:.1} cores)  peak RSS \
                     {peak:>6.2} GiB  {} inputs, {} aux",
                    cpu / wall.max(1e-9),
                    full.input_assignment.len(),
                    full.aux_assignment.len()
                );
                CompactWitness::from_witness(&full)
            }
            (None, None) => unreachable!("every source gives a witness"),
        };
        witnesses.push((source, compact));
    }
    if let Some(((first, w), rest)) = witnesses.split_first() {
        for (source, other) in rest {
            if other != w {
                bail!("the {source:?} witness differs from the {first:?} one");
            }
            println!("witness {source:?} == {first:?}: identical");
        }
    }
    Ok(())
}

/// The mode's synthesis, with the recording opened (timed) for precompiled.
fn prepare(mode: SynthesisMode, c1: &C1Input, args: &Args) -> Result<PorepSynthesis> {
    Ok(match mode {
        SynthesisMode::Sequential => PorepSynthesis::Sequential,
        SynthesisMode::Parallel => PorepSynthesis::Parallel,
        SynthesisMode::Precompiled => {
            let mut _tmp = None;
            let path = match &args.cache {
                Some(p) => p.clone(),
                None => {
                    let dir = tempfile::tempdir()?;
                    let path = dir.path().join("porep.r1cs");
                    let made = precompile(c1.proof_type, &path)?;
                    println!(
                        "record       {:>8.2} s  write {:.2} s  {} bytes, {} distinct coefficients",
                        made.record_secs,
                        made.write_secs,
                        made.file_bytes,
                        made.stats.distinct_coeffs
                    );
                    _tmp = Some(dir);
                    path
                }
            };
            let start = Instant::now();
            let pre = PrecompiledCircuit::open(&path, c1.proof_type, None)?;
            println!(
                "load         {:>8.2} s  {} ({} bytes)",
                start.elapsed().as_secs_f64(),
                path.display(),
                pre.file_bytes()
            );
            // The mapping outlives the temporary directory's entry.
            PorepSynthesis::Precompiled(Arc::new(pre))
        }
    })
}

/// A position-dependent 64-bit digest of a, b, c, the assignments and the
/// densities (not cryptographic: it tells the modes' results apart).
fn checksum(s: &Synthesized) -> u64 {
    fn vector(tag: u64, v: &[blstrs::Scalar]) -> u64 {
        v.par_iter()
            .enumerate()
            .map(|(i, x)| {
                let repr = x.to_repr();
                let word = u64::from_le_bytes(repr.as_ref()[..8].try_into().expect("8 bytes"))
                    ^ u64::from_le_bytes(repr.as_ref()[24..32].try_into().expect("8 bytes"));
                mix(word ^ mix(i as u64 ^ tag))
            })
            .reduce(|| 0, u64::wrapping_add)
    }
    let words = |tag: u64, d: &cuzk_synth::Density| {
        d.as_words().iter().enumerate().fold(0u64, |acc, (i, &w)| {
            acc.wrapping_add(mix(w ^ mix(i as u64 ^ tag)))
        })
    };
    [
        vector(1, &s.a),
        vector(2, &s.b),
        vector(3, &s.c),
        vector(4, &s.input_assignment),
        vector(5, &s.aux_values()),
        words(6, &s.a_aux_density),
        words(7, &s.b_input_density),
        words(8, &s.b_aux_density),
    ]
    .into_iter()
    .fold(0, |acc, x| mix(acc ^ x))
}

/// splitmix64's finalizer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
