//! `anchor-c2`: Filecoin PoRep commit phase 2 as storage providers run it on a GPU today —
//! filecoin-proofs-api 19.1's `seal_commit_phase2` built with `cuda-supraseal` (bellperson 0.27
//! proving through supraseal-c2) — timed per stage, on the same C1 file and parameter cache that
//! `cuzk porep-c2` reads, so the two can be compared (BENCHMARKS.md, issue #6).
//!
//! The stages are taken from the crates' own log records, stamped as they arrive:
//!
//! * key: from the start of `seal_commit_phase2` to "read parameters into SuprasSeal from cache"
//!   (storage-proofs-core hands the `.params` path to supraseal-c2, which reads the file);
//! * synthesis: bellperson's "synthesis time" record (all partitions, rayon across them), plus
//!   the circuit building before it (from the key record to bellperson's "is being used");
//! * proving: bellperson's "prover time" record (supraseal-c2's NTT, MSMs and assembly);
//! * verification inside `seal_commit_phase2` (its own `verify_seal` sanity check): from
//!   "prover time" to "seal_commit_phase2:finish";
//! * then this program calls `verify_seal` once more and times it.
//!
//! The subcommands `winning-post`, `window-post` and `snap-prove` do the same for a WinningPoSt,
//! one WindowPoSt partition and a SnapDeals (empty sector update) proof, from the very files
//! `cuzk winning-post`, `cuzk window-post` and `cuzk snap-prove` read (see `post.rs`, `snap.rs`).

mod post;
mod snap;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal, SealCommitPhase1Output};
use filecoin_proofs_api::SectorId;

const USAGE: &str =
    "usage: anchor-c2 [c2] --c1 FILE (--out PROOF | --verify PROOF) --prover-id f0<ACTOR> \
[--sector-id N] [--params-dir DIR] [--runs N] [--verbose]";

const HELP: &str = "anchor-c2: Filecoin proofs through filecoin-proofs-api 19.1 with cuda-supraseal \
(bellperson 0.27 proving on supraseal-c2), timed per stage and verified, on the same input files \
as cuzk's commands.

usage:
  anchor-c2 [c2] --c1 FILE (--out PROOF | --verify PROOF) --prover-id f0<ACTOR> [--sector-id N]
            [--params-dir DIR] [--runs N] [--verbose]
      PoRep commit phase 2 (seal_commit_phase2, verify_seal); `c2` may be left out
  anchor-c2 winning-post --proof-type NAME --vanilla DIR|FILE... --randomness HEX --prover-id f0<ACTOR>
            (--out PROOF | --verify PROOF) [--params-dir DIR] [--runs N] [--verbose]
      WinningPoSt (generate_winning_post_with_vanilla, verify_winning_post)
  anchor-c2 window-post --proof-type NAME --vanilla DIR|FILE... --randomness HEX --prover-id f0<ACTOR>
            [--partition K] (--out PROOF | --verify PROOF) [--params-dir DIR] [--runs N] [--verbose]
      one WindowPoSt partition (generate_single_window_post_with_vanilla, verify_window_post)
  anchor-c2 snap-prove (--sector-size SIZE | --update-type NAME) --vanilla DIR|FILE...
            [--comm-r-old HEX --comm-r-new HEX --comm-d-new HEX] (--out PROOF | --verify PROOF)
            [--params-dir DIR] [--runs N] [--verbose]
      SnapDeals (generate_empty_sector_update_proof_with_vanilla, verify_empty_sector_update_proof)

`anchor-c2 SUBCOMMAND --help` tells more. Keys come from FIL_PROOFS_PARAMETER_CACHE (or
--params-dir) under their official names: the .params and the .vk (this build derives neither).";

/// What the command line asks for.
enum Command {
    C2(Args),
    Post(post::PostArgs),
    Snap(snap::SnapArgs),
}

impl Command {
    fn parse() -> Result<Self, String> {
        let mut args: Vec<String> = std::env::args().skip(1).collect();
        let first = args.first().map(String::as_str);
        match first {
            Some("-h" | "--help" | "help") => help_exit(HELP),
            None => Err(HELP.to_string()),
            Some("winning-post") => {
                post::PostArgs::parse(post::Kind::Winning, &args[1..]).map(Command::Post)
            }
            Some("window-post") => {
                post::PostArgs::parse(post::Kind::Window, &args[1..]).map(Command::Post)
            }
            Some("snap-prove") => snap::SnapArgs::parse(&args[1..]).map(Command::Snap),
            Some("c2") => {
                args.remove(0);
                parse_args(args).map(Command::C2)
            }
            _ => parse_args(args).map(Command::C2),
        }
    }

    fn verbose(&self) -> bool {
        match self {
            Command::C2(a) => a.verbose,
            Command::Post(a) => a.common.verbose,
            Command::Snap(a) => a.common.verbose,
        }
    }
}

/// Prints `text` (a help text) and exits successfully.
fn help_exit(text: &str) -> ! {
    println!("{text}");
    std::process::exit(0)
}

/// Prove and write the proof, or only verify a given one (e.g. cuzk's). The subcommands'
/// `Verify` holds the proof's bytes too.
enum Mode<V = ()> {
    Prove(PathBuf),
    Verify(PathBuf, V),
}

struct Args {
    c1: PathBuf,
    mode: Mode,
    actor: u64,
    sector_id: Option<u64>,
    params_dir: Option<PathBuf>,
    runs: usize,
    verbose: bool,
}

fn parse_args(args: Vec<String>) -> Result<Args, String> {
    let mut it = args.into_iter();
    let (mut c1, mut mode, mut actor, mut sector_id, mut params_dir) =
        (None, None, None, None, None);
    let (mut runs, mut verbose) = (1, false);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--c1" => c1 = Some(PathBuf::from(value()?)),
            "--out" => mode = Some(Mode::Prove(PathBuf::from(value()?))),
            "--verify" => mode = Some(Mode::Verify(PathBuf::from(value()?), ())),
            "--prover-id" => actor = Some(parse_actor(&value()?)?),
            "--sector-id" => {
                sector_id = Some(value()?.parse().map_err(|e| format!("--sector-id: {e}"))?)
            }
            "--params-dir" => params_dir = Some(PathBuf::from(value()?)),
            "--runs" => runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--verbose" => verbose = true,
            "-h" | "--help" => help_exit(HELP),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Args {
        c1: c1.ok_or(USAGE)?,
        mode: mode.ok_or(USAGE)?,
        actor: actor.ok_or(USAGE)?,
        sector_id,
        params_dir,
        runs: runs.max(1),
        verbose,
    })
}

/// The actor id of `f01000`, `t01000` or `1000`.
fn parse_actor(text: &str) -> Result<u64, String> {
    let digits = text
        .strip_prefix("f0")
        .or_else(|| text.strip_prefix("t0"))
        .unwrap_or(text);
    digits
        .parse()
        .map_err(|e| format!("--prover-id {text}: {e}"))
}

/// 32 bytes from 64 hex digits (an optional `0x` before them), in the order written.
fn parse_hex32(text: &str, flag: &str) -> Result<[u8; 32], String> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{flag} {text:?}: not 32 bytes in hex (64 hex digits)"
        ));
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).expect("checked hex digits");
    }
    Ok(out)
}

/// The files `--vanilla` names, as cuzk's commands take them: a file as given, a directory as
/// its `vanilla-0.bin`, `vanilla-1.bin`, … up to the first one absent (at least the first).
fn vanilla_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let before = files.len();
            for i in 0.. {
                let file = path.join(format!("vanilla-{i}.bin"));
                if !file.is_file() {
                    break;
                }
                files.push(file);
            }
            if files.len() == before {
                return Err(format!(
                    "--vanilla {}: a directory without vanilla-0.bin",
                    path.display()
                ));
            }
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!(
                "--vanilla {}: no such file or directory",
                path.display()
            ));
        }
    }
    Ok(files)
}

/// Reads the vanilla proof files of `--vanilla`.
fn read_vanilla(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    vanilla_files(paths)?
        .into_iter()
        .map(|file| {
            let bytes = std::fs::read(&file)
                .map_err(|e| format!("reading the vanilla proof {}: {e}", file.display()))?;
            Ok((file, bytes))
        })
        .collect()
}

/// Options every subcommand has.
struct Common {
    out: Option<PathBuf>,
    verify: Option<PathBuf>,
    params_dir: Option<PathBuf>,
    runs: usize,
    verbose: bool,
}

impl Common {
    fn new() -> Self {
        Common {
            out: None,
            verify: None,
            params_dir: None,
            runs: 1,
            verbose: false,
        }
    }

    /// Takes `flag` (with its value from `value`) if it is a common one.
    fn take(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<String, String>,
    ) -> Result<bool, String> {
        match flag {
            "--out" | "-o" => self.out = Some(PathBuf::from(value()?)),
            "--verify" => self.verify = Some(PathBuf::from(value()?)),
            "--params-dir" => self.params_dir = Some(PathBuf::from(value()?)),
            "--runs" => {
                self.runs = value()?
                    .parse::<usize>()
                    .map_err(|e| format!("--runs: {e}"))?
                    .max(1)
            }
            "--verbose" => self.verbose = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Exactly one of `--out` and `--verify`.
    fn check_mode(&self, usage: &str) -> Result<(), String> {
        match (&self.out, &self.verify) {
            (Some(_), None) | (None, Some(_)) => Ok(()),
            (None, None) => Err(format!("--out (or --verify) is needed\n{usage}")),
            (Some(_), Some(_)) => Err(format!("--out and --verify exclude each other\n{usage}")),
        }
    }

    /// `--params-dir` into the environment (read once by storage-proofs-core's settings, on
    /// first use: before any call into the crates), and the mode: prove into `--out` (its folder
    /// checked, so that a bad one fails before minutes of proving) or only verify the proof
    /// `--verify` names (read here).
    fn prepare(&self) -> Result<Mode<Vec<u8>>, String> {
        if let Some(dir) = &self.params_dir {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
        }
        if let Some(path) = &self.verify {
            let proof = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(Mode::Verify(path.clone(), proof));
        }
        let out = self.out.clone().ok_or("--out PROOF is needed")?;
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(format!(
                    "--out {}: {} is not a directory",
                    out.display(),
                    parent.display()
                ));
            }
        }
        Ok(Mode::Prove(out))
    }
}

/// Checks that the key's files are in the parameter cache: supraseal-c2 reads the `.params`
/// itself, the verifier the `.vk`, and this build derives neither (README.md); with `--verify`,
/// only the `.vk` is needed (`params` is `None`).
fn check_key_files(params: Option<PathBuf>, vk: PathBuf, kind: &str) -> Result<(), String> {
    for path in params.into_iter().chain([vk]) {
        if !path.is_file() {
            return Err(format!(
                "{} is missing (FIL_PROOFS_PARAMETER_CACHE or --params-dir; cuzk fixtures keys \
                 --kind {kind} writes both the .params and the .vk)",
                path.display()
            ));
        }
    }
    Ok(())
}

/// `--verify`'s report: the verifier's time and verdict; a rejected proof is an error.
fn report_verify(
    command: &str,
    verifier: &str,
    path: &Path,
    proof: &[u8],
    t: Instant,
    valid: bool,
) -> Result<(), String> {
    println!(
        "{verifier} of {} ({} bytes): {:.3} s",
        path.display(),
        proof.len(),
        t.elapsed().as_secs_f64()
    );
    if !valid {
        return Err(format!("{verifier} rejected {}", path.display()));
    }
    println!(
        "anchor-c2 {command}: proof {} B (given), verify {:.3} s, valid",
        proof.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a reader never sees
/// half a proof.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// This process's peak resident set (VmHWM), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The id address payload of `f0<actor>` (unsigned LEB128), zero-padded to 32 bytes: the prover
/// id Lotus and Curio pass to filecoin-proofs.
fn prover_id(actor: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let mut v = actor;
    for byte in id.iter_mut() {
        *byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            break;
        }
        *byte |= 0x80;
    }
    id
}

/// The C1 output in either form users have: the plain JSON of `SealCommitPhase1Output`, or
/// Curio's `{"SectorNum", "Phase1Out": base64 of that JSON, "SectorSize"}`. Returns it with
/// Curio's sector number when present.
fn parse_c1(bytes: &[u8]) -> Result<(SealCommitPhase1Output, Option<u64>), String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let (plain, sector) = match value.get("Phase1Out") {
        Some(inner) => {
            let text = inner
                .as_str()
                .ok_or("Curio wrapper: Phase1Out is not a string")?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("Curio wrapper: Phase1Out is not base64: {e}"))?;
            let inner = serde_json::from_slice(&decoded)
                .map_err(|e| format!("Curio wrapper: Phase1Out is not JSON: {e}"))?;
            (
                inner,
                value.get("SectorNum").and_then(serde_json::Value::as_u64),
            )
        }
        None => (value, None),
    };
    let output = serde_json::from_value(plain).map_err(|e| format!("not a C1 output: {e}"))?;
    Ok((output, sector))
}

/// A `log` sink that keeps every record at info level or above with its arrival time, and with
/// `--verbose` echoes it to stderr.
struct Records {
    start: Instant,
    verbose: bool,
    list: Mutex<Vec<(Instant, String)>>,
}

static RECORDS: OnceLock<Records> = OnceLock::new();

impl log::Log for Records {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let now = Instant::now();
        let message = record.args().to_string();
        if self.verbose {
            eprintln!(
                "[{:9.3} s] {} {}: {message}",
                (now - self.start).as_secs_f64(),
                record.level(),
                record.target()
            );
        }
        self.list
            .lock()
            .expect("log lock poisoned")
            .push((now, message));
    }

    fn flush(&self) {}
}

fn records() -> &'static Records {
    RECORDS.get().expect("logger installed first")
}

/// The first record after `since` whose message starts with `prefix`: its time and message.
fn first_after(since: Instant, prefix: &str) -> Option<(Instant, String)> {
    let list = records().list.lock().ok()?;
    list.iter()
        .find(|(t, m)| *t >= since && m.starts_with(prefix))
        .cloned()
}

/// Every record from `since` to `until` whose message starts with `prefix`.
fn all_between(since: Instant, until: Instant, prefix: &str) -> Vec<(Instant, String)> {
    let Ok(list) = records().list.lock() else {
        return Vec::new();
    };
    list.iter()
        .filter(|(t, m)| *t >= since && *t <= until && m.starts_with(prefix))
        .cloned()
        .collect()
}

/// The durations that records like "synthesis time: 1.23s" from `since` to `until` carry,
/// summed (bellperson logs one per batch of at most 10 circuits); `None` without any.
fn logged_sum(since: Instant, until: Instant, prefix: &str) -> Option<Duration> {
    let found: Vec<Duration> = all_between(since, until, prefix)
        .iter()
        .filter_map(|(_, m)| parse_debug_duration(&m[prefix.len()..]))
        .collect();
    (!found.is_empty()).then(|| found.iter().sum())
}

/// What one generate call spent where, from the crates' log records (see the module docs):
/// key (to "read parameters into SuprasSeal"; absent when the key was already in memory from an
/// earlier run), circuits (from there, or the start, to bellperson's first "is being used":
/// the vanilla proofs checked and arranged and the circuits built), synthesis and proving
/// (bellperson's records, summed over its batches) and the rest of the call.
struct Stages {
    total: Duration,
    key: Option<Duration>,
    circuits: Option<Duration>,
    synthesis: Option<Duration>,
    proving: Option<Duration>,
}

impl Stages {
    fn of_call(t0: Instant, t1: Instant) -> Self {
        let key_read = all_between(t0, t1, "read parameters into SuprasSeal")
            .first()
            .map(|(t, _)| *t);
        let used = all_between(t0, t1, "Bellperson").first().map(|(t, _)| *t);
        Stages {
            total: t1 - t0,
            key: key_read.map(|t| t - t0),
            circuits: used.map(|u| u - key_read.unwrap_or(t0)),
            synthesis: logged_sum(t0, t1, "synthesis time: "),
            proving: logged_sum(t0, t1, "prover time: "),
        }
    }

    /// "12.345 s = key … + circuits … + synthesis … + proving … + rest …".
    fn line(&self) -> String {
        let known = [self.key, self.circuits, self.synthesis, self.proving];
        let accounted = known.iter().flatten().sum::<Duration>().min(self.total);
        format!(
            "{:.3} s = key {} + circuits {} + synthesis {} + proving {} + rest {}",
            self.total.as_secs_f64(),
            match self.key {
                Some(_) => secs(self.key),
                None => "— (in memory)".into(),
            },
            secs(self.circuits),
            secs(self.synthesis),
            secs(self.proving),
            secs(Some(self.total - accounted)),
        )
    }

    /// "generate 41.2 s (key …, synthesis …, proving …)" for the summary line.
    fn summary(&self) -> String {
        format!(
            "generate {:.3} s (key {}, circuits {}, synthesis {}, proving {})",
            self.total.as_secs_f64(),
            secs(self.key),
            secs(self.circuits),
            secs(self.synthesis),
            secs(self.proving)
        )
    }
}

/// A `Debug`-printed `Duration` as bellperson logs it ("1.234567s", "850.1ms", "12µs").
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("µs") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix("ns") {
        (n, 1e-9)
    } else {
        (text.strip_suffix('s')?, 1.0)
    };
    number
        .parse::<f64>()
        .ok()
        .map(|v| Duration::from_secs_f64(v * scale))
}

/// The duration a record like "synthesis time: 1.23s" carries.
fn logged_duration(since: Instant, prefix: &str) -> Option<Duration> {
    first_after(since, prefix).and_then(|(_, m)| parse_debug_duration(&m[prefix.len()..]))
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(|| "—".into(), |d| format!("{:.3} s", d.as_secs_f64()))
}

fn run(args: Args) -> Result<(), String> {
    if let Some(dir) = &args.params_dir {
        // Read once by storage-proofs-core's settings, on first use: set it before any call.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let wall = Instant::now();
    let t = Instant::now();
    let bytes = std::fs::read(&args.c1).map_err(|e| format!("{}: {e}", args.c1.display()))?;
    let (c1, curio_sector) = parse_c1(&bytes).map_err(|e| format!("{}: {e}", args.c1.display()))?;
    let parse = t.elapsed();
    let sector = args
        .sector_id
        .or(curio_sector)
        .ok_or("--sector-id is needed (the C1 is not in Curio's wrapper)")?;
    let prover = prover_id(args.actor);
    let proof_type = c1.registered_proof;
    println!(
        "anchor-c2: {proof_type:?}, sector {sector} of f0{}, parse {:.3} s",
        args.actor,
        parse.as_secs_f64()
    );

    let verify = |proof: &[u8]| {
        verify_seal(
            proof_type,
            c1.comm_r,
            c1.comm_d,
            prover,
            SectorId::from(sector),
            c1.ticket,
            c1.seed,
            proof,
        )
        .map_err(|e| format!("verify_seal: {e:#}"))
    };
    let out = match &args.mode {
        Mode::Prove(out) => out,
        Mode::Verify(path, ()) => {
            let proof = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let t = Instant::now();
            let valid = verify(&proof)?;
            println!(
                "verify_seal of {} ({} bytes): {:.3} s",
                path.display(),
                proof.len(),
                t.elapsed().as_secs_f64()
            );
            println!("{}", if valid { "valid" } else { "INVALID" });
            return if valid {
                Ok(())
            } else {
                Err("verify_seal rejected the proof".into())
            };
        }
    };
    let mut proof = Vec::new();
    for run in 1..=args.runs {
        let t0 = Instant::now();
        let out = seal_commit_phase2(c1.clone(), prover, SectorId::from(sector))
            .map_err(|e| format!("seal_commit_phase2: {e:#}"))?;
        let c2 = t0.elapsed();
        proof = out.proof;

        let key_read = first_after(t0, "read parameters into SuprasSeal").map(|(t, _)| t);
        let used = first_after(t0, "Bellperson").map(|(t, _)| t);
        let proved = first_after(t0, "prover time").map(|(t, _)| t);
        let finished = first_after(t0, "seal_commit_phase2:finish").map(|(t, _)| t);
        let key = key_read.map(|t| t - t0);
        let circuits = key_read.zip(used).map(|(a, b)| b - a);
        let synthesis = logged_duration(t0, "synthesis time: ");
        let proving = logged_duration(t0, "prover time: ");
        let inner_verify = proved.zip(finished).map(|(a, b)| b - a);

        let t = Instant::now();
        let valid = verify(&proof)?;
        let verified_in = t.elapsed();
        if !valid {
            return Err(format!("run {run}: verify_seal rejected the proof"));
        }
        println!(
            "run {run}: seal_commit_phase2 {:.3} s = key {} + circuits {} + synthesis {} + proving {} + inner verify_seal {}; verify_seal {:.3} s: valid",
            c2.as_secs_f64(),
            secs(key),
            secs(circuits),
            secs(synthesis),
            secs(proving),
            secs(inner_verify),
            verified_in.as_secs_f64()
        );
    }
    std::fs::write(out, &proof).map_err(|e| format!("{}: {e}", out.display()))?;
    println!(
        "wrote {} ({} bytes); wall {:.3} s",
        out.display(),
        proof.len(),
        wall.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() {
    let command = match Command::parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let sink = RECORDS.get_or_init(|| Records {
        start: Instant::now(),
        verbose: command.verbose(),
        list: Mutex::new(Vec::new()),
    });
    log::set_logger(sink).expect("no other logger is installed");
    log::set_max_level(log::LevelFilter::Info);
    let result = match command {
        Command::C2(args) => run(args),
        Command::Post(args) => post::run(args),
        Command::Snap(args) => snap::run(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128() {
        assert_eq!(&prover_id(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(&prover_id(5)[..2], &[5, 0]);
    }

    #[test]
    fn hex32() {
        let text = format!("{}1f", "5a".repeat(31));
        let bytes = parse_hex32(&text, "--randomness").unwrap();
        assert_eq!((bytes[0], bytes[30], bytes[31]), (0x5a, 0x5a, 0x1f));
        assert_eq!(parse_hex32(&format!("0x{text}"), "x").unwrap(), bytes);
        assert!(parse_hex32("5a5a", "x").is_err());
        assert!(parse_hex32(&"zz".repeat(32), "x").is_err());
    }

    #[test]
    fn actors() {
        assert_eq!(parse_actor("f01000"), Ok(1000));
        assert_eq!(parse_actor("t01000"), Ok(1000));
        assert_eq!(parse_actor("1000"), Ok(1000));
        assert!(parse_actor("f1abc").is_err());
    }

    #[test]
    fn debug_durations() {
        let check = |s: &str, v: f64| {
            let d = parse_debug_duration(s).expect(s).as_secs_f64();
            assert!((d - v).abs() < 1e-9, "{s}: {d}");
        };
        check("1.5s", 1.5);
        check("850.25ms", 0.85025);
        check("12µs", 12e-6);
    }
}
