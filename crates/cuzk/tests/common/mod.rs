//! What the CLI's integration tests share: the `cuzk` binary run with
//! arguments, its output read as a success or as a refusal, and the hex
//! and path spellings the commands take.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// `cuzk args…`, without `FIL_PROOFS_PARAMETER_CACHE` (the commands are
/// given `--params-dir`, or the caller sets the variable again).
pub(crate) fn command<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    cmd.args(args).env_remove("FIL_PROOFS_PARAMETER_CACHE");
    cmd
}

/// Runs [`command`]`(args)` to its end.
pub(crate) fn cuzk<S: AsRef<OsStr>>(args: &[S]) -> Output {
    command(args).output().unwrap()
}

/// The stdout of a command that succeeded (`what` names it in the failure,
/// with stdout and stderr).
pub(crate) fn succeeded(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what}: stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The timing lines of `winning-post`, `window-post` and `snap-prove`.
pub(crate) const PROVE_STAGES: [&str; 6] = [
    "parse",
    "check",
    "key",
    "synthesis",
    "proving",
    "verification",
];

/// Every one of `stages` starts a (timing) line of `stdout`.
pub(crate) fn has_timing_lines(stdout: &str, stages: &[&str]) {
    for stage in stages {
        assert!(
            stdout.lines().any(|l| l.starts_with(stage)),
            "no {stage} timing line:\n{stdout}"
        );
    }
}

/// The command `name` failed, named every one of `wants` on stderr, and
/// wrote nothing at `out`.
pub(crate) fn refused(name: &str, output: &Output, out: &Path, wants: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "{name}: succeeded; stderr:\n{stderr}"
    );
    for want in wants {
        assert!(
            stderr.contains(want),
            "{name}: stderr lacks {want:?}:\n{stderr}"
        );
    }
    assert!(!out.exists(), "{name}: wrote {}", out.display());
}

/// `bytes` in lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 hex digits as 32 bytes.
pub(crate) fn unhex32(hex: &str) -> [u8; 32] {
    let bytes: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}

/// A path as the `&str` argument lists take.
pub(crate) fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Any string or path as an argument.
pub(crate) fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}
