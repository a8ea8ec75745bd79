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

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal, SealCommitPhase1Output};
use filecoin_proofs_api::SectorId;

const USAGE: &str =
    "usage: anchor-c2 --c1 FILE (--out PROOF | --verify PROOF) --prover-id f0<ACTOR> \
[--sector-id N] [--params-dir DIR] [--runs N] [--verbose]";

/// Prove and write the proof, or only verify a given one (e.g. cuzk's).
enum Mode {
    Prove(PathBuf),
    Verify(PathBuf),
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

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
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
            "--verify" => mode = Some(Mode::Verify(PathBuf::from(value()?))),
            "--prover-id" => {
                let v = value()?;
                let digits = v
                    .strip_prefix("f0")
                    .or_else(|| v.strip_prefix("t0"))
                    .unwrap_or(&v);
                actor = Some(
                    digits
                        .parse()
                        .map_err(|e| format!("--prover-id {v}: {e}"))?,
                );
            }
            "--sector-id" => {
                sector_id = Some(value()?.parse().map_err(|e| format!("--sector-id: {e}"))?)
            }
            "--params-dir" => params_dir = Some(PathBuf::from(value()?)),
            "--runs" => runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--verbose" => verbose = true,
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
        Mode::Verify(path) => {
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
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let sink = RECORDS.get_or_init(|| Records {
        start: Instant::now(),
        verbose: args.verbose,
        list: Mutex::new(Vec::new()),
    });
    log::set_logger(sink).expect("no other logger is installed");
    log::set_max_level(log::LevelFilter::Info);
    if let Err(e) = run(args) {
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
