//! One PoSt circuit's CPU side, phase by phase, without its key: decoding
//! the vanilla proofs, checking them against the challenges (the crates'
//! vanilla verifier), building the circuit, then its synthesis (the crates'
//! own split of the sectors over the cores, joined into cuzk's proving
//! assignment), sized by the counted shape as the key would size it. One
//! line per phase: wall seconds, CPU core-seconds of the whole process
//! (/proc/self/stat), peak RSS during the phase; then the synthesized
//! shape, checked against the counted one.
//!
//! `cargo run --release -p cuzk-benches --bin post_bench -- --proof-type
//! StackedDrgWindow32GiBV1_2 --vanilla DIR --randomness HEX --prover-id
//! f01000 [--partition K] [--threads N] [--no-synthesis] [--r1cs FILE]`
//! (vanilla proofs from `cuzk fixtures synth-post`; `--r1cs`: the circuit's
//! recording from `cuzk precompile`, for the pre-compiled synthesis: the
//! witness alone, a, b, c left to the prover; `--witnesses`: the witness
//! alone from the gadgets and natively, timed and compared; with
//! `--native-only` the native witness alone, `--repeat N` times, with
//! `--pool` each repeat's aux vector handed back for the next to reuse). The
//! witness lines time the witness alone (after the circuit is built): wall,
//! user and system core-seconds, minor page faults. This is what `cuzk
//! window-post` reports as its `circuit` and `synthesis` lines, measurable
//! where the key (60.8 GB at 32 GiB) is not.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use cuzk_benches::{cpu_seconds, peak_rss, reset_peak_rss};
use cuzk_filecoin::counts::count_circuit_by_sectors;
use cuzk_filecoin::{
    post_witness_observed, post_witness_pooled, AuxPool, CircuitSynthesis, PostKind, PostRequest,
    PostSource, PostType, PrecompiledCircuit, SectorIdentity, WitnessSource,
};
use cuzk_pipeline::PartitionSource;
use cuzk_synth::precompiled::Witness;

#[derive(Parser, Debug)]
#[command(about = "A PoSt circuit's decode, vanilla check, circuit build and synthesis, timed")]
struct Args {
    /// The registered PoSt proof, by its filecoin-proofs-api name.
    #[arg(long)]
    proof_type: String,
    /// A directory of `vanilla-<i>.bin` (as `cuzk fixtures synth-post` writes them).
    #[arg(long)]
    vanilla: PathBuf,
    /// The challenge randomness, 64 hex digits.
    #[arg(long)]
    randomness: String,
    /// The miner actor id (f01000 or 1000).
    #[arg(long)]
    prover_id: String,
    /// The WindowPoSt partition index.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Rayon threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Stop after building the circuit.
    #[arg(long)]
    no_synthesis: bool,
    /// Synthesize pre-compiled against this recording (`cuzk precompile`):
    /// the witness alone, as `--synthesis precompiled` does.
    #[arg(long, value_name = "FILE")]
    r1cs: Option<PathBuf>,
    /// Instead of the synthesis, the witness alone twice: from the crates'
    /// gadgets run witness-only, then from cuzk's native replay; the two
    /// are checked equal.
    #[arg(long, conflicts_with_all = ["r1cs", "no_synthesis"])]
    witnesses: bool,
    /// With `--witnesses`: the native witness alone (no gadget run, no
    /// comparison).
    #[arg(long, requires = "witnesses")]
    native_only: bool,
    /// With `--witnesses`: time each witness this many times.
    #[arg(long, default_value_t = 1, requires = "witnesses")]
    repeat: usize,
    /// With `--native-only`: each repeat's aux vector handed back to an
    /// `AuxPool` (limit 5 GiB: one 32 GiB WindowPoSt aux vector, 4.06 GB)
    /// for the next to write over, as a prover proving partitions back to
    /// back would; the first repeat (the pool empty) is labelled `cold`,
    /// the others `pooled`.
    #[arg(long, requires = "native_only")]
    pool: bool,
    /// With `--pool`: one aux vector of the circuit's size faulted in
    /// before the first repeat (`AuxPool::prefill`, what the daemon does at
    /// start when a 32 GiB WindowPoSt key is present), timed on its own
    /// line; every repeat is then `pooled`.
    #[arg(long, requires = "pool")]
    prefill: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(n) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("setting up the rayon pool")?;
    }
    let threads = rayon::current_num_threads();
    let post_type = PostType::from_name(&args.proof_type)?;
    let randomness = hex32(&args.randomness)?;
    let actor = cuzk_filecoin::parse_actor_id(&args.prover_id)
        .with_context(|| format!("--prover-id {:?}", args.prover_id))?;
    let prover_id = SectorIdentity::from_actor(actor, 0).prover_id;

    let mut phase = Phase::start();
    let mut vanilla = Vec::new();
    for i in 0.. {
        let path = args.vanilla.join(format!("vanilla-{i}.bin"));
        if !path.is_file() {
            break;
        }
        vanilla.push(std::fs::read(&path).with_context(|| format!("{}", path.display()))?);
    }
    if vanilla.is_empty() {
        bail!("{}: no vanilla-0.bin", args.vanilla.display());
    }
    let bytes: usize = vanilla.iter().map(Vec::len).sum();
    let count = vanilla.len();
    let request = match post_type.kind() {
        PostKind::Winning => PostRequest::winning(post_type, &randomness, prover_id, vanilla)?,
        PostKind::Window => {
            PostRequest::window(post_type, &randomness, prover_id, vanilla, args.partition)?
        }
    };
    phase.line("read", &format!("{count} vanilla proofs, {bytes} bytes"))?;

    if args.witnesses {
        // Each witness builds its own circuit (timed apart).
        return compare_witnesses(&request, &args, &mut phase);
    }

    let counted = count_circuit_by_sectors(post_type.into())?;
    phase.line("count", "the blank circuit's shape (sizes the synthesis)")?;

    let synthesis = match &args.r1cs {
        None => CircuitSynthesis::Full,
        Some(path) => CircuitSynthesis::Precompiled(Arc::new(PrecompiledCircuit::open(
            path, post_type, None,
        )?)),
    };
    if args.r1cs.is_some() {
        phase.line("recording", "opened and checked")?;
    }
    let source = PostSource::with_shape(&request, counted.shape.clone(), &synthesis)?;
    let prep = source.prep();
    phase.line("circuit", &prep.to_string())?;
    if args.no_synthesis {
        return Ok(());
    }

    let witness = source
        .synthesize(0)
        .map_err(|e| anyhow::anyhow!("synthesis: {}", e.message))?;
    let shape = witness.shape();
    phase.line(
        "synthesis",
        &format!(
            "{} constraints, {} inputs, {} aux, {threads} rayon threads, {}",
            shape.num_constraints,
            shape.num_inputs,
            shape.num_aux,
            synthesis.name()
        ),
    )?;
    if shape != counted.shape {
        bail!(
            "the synthesized shape {shape:?} differs from the counted {:?}",
            counted.shape
        );
    }
    println!("shape as counted: {}", post_type.name());
    Ok(())
}

/// The witness from the gadgets and natively (or natively only), each
/// timed from the built circuit on (the circuit is built again for each:
/// its cost is printed apart), checked equal.
fn compare_witnesses(request: &PostRequest, args: &Args, phase: &mut Phase) -> Result<()> {
    let sources: &[(WitnessSource, &str)] = if args.native_only {
        &[(WitnessSource::Native, "native")]
    } else {
        &[
            (WitnessSource::Gadgets, "gadgets"),
            (WitnessSource::Native, "native"),
        ]
    };
    let mut witnesses = Vec::new();
    let pool = args.pool.then(|| AuxPool::new(5 << 30));
    if let (Some(pool), true) = (&pool, args.prefill) {
        let values = count_circuit_by_sectors(request.post_type().into())?
            .shape
            .num_aux;
        let (clock, usage) = (Instant::now(), Usage::now()?);
        let kept = pool.prefill(values);
        let used = Usage::now()?.since(&usage);
        phase.line(
            "prefill",
            &format!(
                "{values} aux values faulted in (kept: {kept}) in {:.3} s wall, {:.2} core-s \
                 (user {:.2}, system {:.2}), {} minor faults",
                clock.elapsed().as_secs_f64(),
                used.user + used.system,
                used.user,
                used.system,
                used.minor_faults
            ),
        )?;
    }
    for &(source, name) in sources {
        let mut kept: Option<Witness> = None;
        for _ in 0..args.repeat.max(1) {
            // The previous repeat's witness (4 GB at 32 GiB) is freed first,
            // or its aux vector handed back to the pool.
            if let (Some(pool), Some(witness)) = (&pool, kept.take()) {
                pool.give_back(witness.aux_assignment);
            }
            let name = match &pool {
                Some(pool) if pool.held_bytes() > 0 => "pooled",
                Some(_) => "cold",
                None => name,
            };
            *phase = Phase::start();
            let mut at_built = None;
            let mut built = |_: &_| at_built = Some((Instant::now(), Usage::now()));
            let (witness, prep) = match &pool {
                Some(pool) => post_witness_pooled(request, pool, &mut built)?,
                None => post_witness_observed(request, source, &mut built)?,
            };
            let (clock, usage) =
                at_built.context("post_witness_observed never reported the built circuit")?;
            let wall = clock.elapsed().as_secs_f64();
            let used = Usage::now()?.since(&usage?);
            phase.line(
                name,
                &format!(
                    "witness {wall:.3} s wall, {:.2} core-s (user {:.2}, system {:.2}), {} minor \
                     faults ({} inputs, {} aux); building the circuit before it: {prep}",
                    used.user + used.system,
                    used.user,
                    used.system,
                    used.minor_faults,
                    witness.input_assignment.len(),
                    witness.aux_assignment.len()
                ),
            )?;
            kept = Some(witness);
        }
        witnesses.extend(kept);
    }
    if let [gadgets, native] = &witnesses[..] {
        if gadgets != native {
            bail!("the native witness differs from the gadgets'");
        }
        println!("native witness equals the gadgets'");
    }
    Ok(())
}

/// The process's user and system CPU seconds and minor page faults
/// (/proc/self/stat).
struct Usage {
    user: f64,
    system: f64,
    minor_faults: u64,
}

impl Usage {
    fn now() -> Result<Usage> {
        let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
        // The command name (field 2) is in parentheses and may hold spaces;
        // after it come field 3 (state) onwards.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .context("/proc/self/stat has no command field")?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| -> Result<u64> {
            let text = fields
                .get(i - 3)
                .with_context(|| format!("/proc/self/stat has no field {i}"))?;
            text.parse()
                .with_context(|| format!("/proc/self/stat field {i}: {text:?}"))
        };
        // minflt is field 10, utime 14, stime 15 (clock ticks of 1/100 s).
        Ok(Usage {
            user: field(14)? as f64 / 100.0,
            system: field(15)? as f64 / 100.0,
            minor_faults: field(10)?,
        })
    }

    fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user: self.user - earlier.user,
            system: self.system - earlier.system,
            minor_faults: self.minor_faults - earlier.minor_faults,
        }
    }
}

/// One phase's clock: wall, process CPU and the peak RSS since it started.
struct Phase {
    wall: Instant,
    cpu: f64,
}

impl Phase {
    fn start() -> Self {
        reset_peak_rss();
        Phase {
            wall: Instant::now(),
            cpu: cpu_seconds().unwrap_or(0.0),
        }
    }

    /// Prints the phase's line and starts the next phase.
    fn line(&mut self, name: &str, what: &str) -> Result<()> {
        let wall = self.wall.elapsed().as_secs_f64();
        let cpu = cpu_seconds()? - self.cpu;
        let peak = peak_rss().unwrap_or(0) as f64 / (1u64 << 30) as f64;
        println!(
            "{name:<10} {wall:>8.3} s wall {cpu:>8.2} core-s  peak RSS {peak:>6.2} GiB  {what}"
        );
        *self = Phase::start();
        Ok(())
    }
}

fn hex32(text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("--randomness {text:?}: expected 64 hex digits");
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&t[2 * i..2 * i + 2], 16)?;
    }
    Ok(out)
}
