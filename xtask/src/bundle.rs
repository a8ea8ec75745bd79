//! `cargo xtask bundle`: everything a GPU machine without cargo needs to run
//! cuzk-cuda's device tests and benchmarks, in `bundle/`:
//!
//! * `bin/`: every test target of cuzk-cuda and cuzk-gpu, every benchmark in
//!   [`BENCH_BINS`] (binaries of cuzk-benches), the `cuzk` binary and cuzk-benches' `sweep`, release builds, stripped;
//! * `kernels/`: every unit's fatbin with its stamp and ptxas resource report,
//!   once: the executables read them from `../kernels` beside their `bin/`
//!   when they open a device (`cuzk_cuda::kernels`);
//! * `run.sh`: unpacks the tools (carried xz-compressed: `cuzk` and `sweep`
//!   are two thirds of the executables' bytes), runs the tests, then the
//!   benchmarks, and prints a table last.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Kernel benchmarks that go into the bundle: binaries of cuzk-benches
/// (benches/src/bin/), in the order run.sh runs them.
const BENCH_BINS: &[&str] = &["ntt_bench", "msm_bench", "abc_bench", "copy_overlap"];

pub(crate) fn build(root: &Path, opts: &crate::kernels::Options) -> Result<()> {
    // Build from a snapshot of kernels/, and point cuzk-cuda's build script at
    // that snapshot and its fatbin: edits to kernels/ during the (long) build
    // then cannot leave the bundle without kernels.
    let work = crate::target_dir(root).join("bundle-kernels");
    let snapshot = work.join("src");
    if snapshot.exists() {
        std::fs::remove_dir_all(&snapshot)?;
    }
    copy_tree(&root.join("kernels"), &snapshot)?;
    for dir in &opts.exclude {
        exclude_from_snapshot(&snapshot, dir)?;
    }
    // Units already built for the same sources and archs by `cargo xtask
    // kernels` are copied rather than compiled again.
    let built = crate::target_dir(root).join("kernels");
    let fatbins = crate::kernels::build_from(&snapshot, &work, opts, root, Some(&built))?;
    // The executables record the snapshot's unit hashes, against which
    // they check the fatbins they load.
    let cargo_env = [("CUZK_KERNELS_DIR", snapshot.clone())];
    let bundle = root.join("bundle");
    let bin = bundle.join("bin");
    if bundle.exists() {
        std::fs::remove_dir_all(&bundle)
            .with_context(|| format!("clearing {}", bundle.display()))?;
    }
    std::fs::create_dir_all(&bin)?;
    std::fs::create_dir_all(bundle.join("kernels"))?;

    let mut tests = cargo_executables(
        root,
        &[
            "test",
            "--release",
            "--no-run",
            "-p",
            "cuzk-cuda",
            "-p",
            "cuzk-gpu",
        ],
        "test",
        &cargo_env,
    )?;
    tests.sort();
    let mut bench_args = vec!["build", "--release", "-p", "cuzk-benches"];
    for b in BENCH_BINS {
        bench_args.extend(["--bin", b]);
    }
    let mut benches = cargo_executables(root, &bench_args, "bin", &cargo_env)?;
    benches.sort_by_key(|(name, _)| BENCH_BINS.iter().position(|b| b == name));

    // The CLI, so the device can make keys (`cuzk setup`) and prove end to end.
    let mut tools = cargo_executables(
        root,
        &["build", "--release", "-p", "cuzk"],
        "bin",
        &cargo_env,
    )?;
    // The pipeline sweep, for the CUDA backend's scheduler runs
    // (benches/device/gpu-prover.sh pipeline).
    tools.extend(cargo_executables(
        root,
        &["build", "--release", "-p", "cuzk-benches", "--bin", "sweep"],
        "bin",
        &cargo_env,
    )?);

    let mut binaries = 0u64;
    let tool_names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    for (name, exe) in tests.iter().chain(&benches).chain(&tools) {
        let dst = bin.join(name);
        std::fs::copy(exe, &dst).with_context(|| format!("copying {}", exe.display()))?;
        let status = Command::new("strip")
            .arg("--strip-all")
            .arg(&dst)
            .status()
            .context("running strip")?;
        if !status.success() {
            bail!("strip {} failed", dst.display());
        }
        // The tools (the CLI and the sweep, two thirds of the executables'
        // bytes) travel xz-compressed; run.sh unpacks them on first use.
        let dst = if tool_names.contains(&name.as_str()) {
            xz(&dst)?
        } else {
            dst
        };
        let size = std::fs::metadata(&dst)?.len();
        binaries += size;
        println!(
            "bundle/bin/{}: {:.1} MiB",
            dst.file_name().unwrap_or_default().to_string_lossy(),
            size as f64 / (1 << 20) as f64
        );
    }
    let units =
        crate::kernels::source_hash::read_manifest(&snapshot).map_err(anyhow::Error::msg)?;
    let mut kernels = 0u64;
    for unit in &units {
        let stem = crate::kernels::source_hash::unit_stem(unit);
        for f in [
            format!("{stem}.fatbin"),
            format!("{stem}.fatbin.sha256"),
            format!("{stem}.resource-usage.txt"),
        ] {
            let dst = bundle.join("kernels").join(&f);
            std::fs::copy(fatbins.join(&f), &dst)
                .with_context(|| format!("copying {}", fatbins.join(&f).display()))?;
            kernels += std::fs::metadata(&dst)?.len();
        }
    }
    let total = binaries + kernels;

    let test_names: Vec<&str> = tests.iter().map(|(n, _)| n.as_str()).collect();
    let bench_names: Vec<&str> = benches.iter().map(|(n, _)| n.as_str()).collect();
    std::fs::write(bundle.join("run.sh"), run_script(&test_names, &bench_names))?;
    println!(
        "bundle/: {} test target(s), {} bench(es), {:.1} MiB in all",
        tests.len(),
        benches.len(),
        mib(total)
    );
    println!(
        "bundle/: executables {:.1} MiB, kernels {:.1} MiB (archs {})",
        mib(binaries),
        mib(kernels),
        archs_label(opts)
    );
    if total > LIMIT {
        // Suggest only what would help: fewer architectures shrink the
        // fatbins, nothing here shrinks the executables.
        let hint = if opts.archs.len() > 1 && kernels > total - LIMIT {
            "; try --arch sm_90 (one architecture's fatbins)".to_string()
        } else {
            format!(
                "; the executables alone are {:.1} MiB: leave some out (TESTS/BENCHES pick at run time, not here)",
                mib(binaries)
            )
        };
        bail!(
            "bundle is {:.1} MiB, over the {:.0} MiB a device run carries{hint}",
            mib(total),
            mib(LIMIT)
        );
    }
    Ok(())
}

/// The most a bundle may weigh: a device run carries 64 MiB in all, and the
/// repository's own files travel with it.
const LIMIT: u64 = 60 << 20;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn archs_label(opts: &crate::kernels::Options) -> String {
    format!(
        "{}{}",
        opts.archs.join(","),
        if opts.ptx { "+ptx" } else { "" }
    )
}

/// Runs cargo with `--message-format=json` and returns (target name,
/// executable) for every artifact whose target kind is `kind`.
fn cargo_executables(
    root: &Path,
    args: &[&str],
    kind: &str,
    env: &[(&str, PathBuf)],
) -> Result<Vec<(String, PathBuf)>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!("cargo {}", args.join(" "));
    let output = Command::new(cargo)
        .current_dir(root)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .args(args)
        .arg("--message-format=json")
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !output.status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    let want_kind = format!("\"kind\":[\"{kind}\"]");
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if !line.contains("\"reason\":\"compiler-artifact\"") || !line.contains(&want_kind) {
            continue;
        }
        let (Some(name), Some(exe)) = (
            json_string(line, "\"target\":{", "name"),
            json_string(line, "", "executable"),
        ) else {
            continue;
        };
        out.push((name, PathBuf::from(exe)));
    }
    if out.is_empty() {
        bail!("cargo {} produced no {kind} executables", args.join(" "));
    }
    Ok(out)
}

/// Drops `kernels/<dir>` from the snapshot and its sub-manifest from the
/// manifest's `include` list (a quick iteration bundle without, say, the
/// slow-to-compile MSM kernels; their tests then fail to find their kernels).
fn exclude_from_snapshot(snapshot: &Path, dir: &str) -> Result<()> {
    let dir = dir.trim_matches('/');
    let path = snapshot.join(dir);
    if !path.is_dir() {
        bail!("--exclude {dir}: kernels/{dir} is not a folder");
    }
    std::fs::remove_dir_all(&path)?;
    let prefix = format!("\"{dir}/");
    for name in crate::kernels::source_hash::MANIFESTS {
        let manifest = snapshot.join(name);
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        let kept: Vec<&str> = text.lines().filter(|l| !l.contains(&prefix)).collect();
        std::fs::write(&manifest, kept.join("\n") + "\n")?;
    }
    println!("bundle: kernels/{dir} left out of this bundle's fatbin");
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let dst = to.join(path.file_name().expect("entries have names"));
        if path.is_dir() {
            copy_tree(&path, &dst)?;
        } else {
            std::fs::copy(&path, &dst).with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

/// The string value of `"key":"…"` found after `after` in a JSON line (the
/// values we read hold no escaped quotes: target names and paths).
fn json_string(line: &str, after: &str, key: &str) -> Option<String> {
    let start = line.find(after)? + after.len();
    let pat = format!("\"{key}\":\"");
    let at = line[start..].find(&pat)? + start + pat.len();
    let end = line[at..].find('"')? + at;
    Some(line[at..end].to_string())
}

/// Compresses `path` to `path.xz` (removing `path`) and returns the new path.
fn xz(path: &Path) -> Result<PathBuf> {
    let status = Command::new("xz")
        .args(["-T2", "-6", "-f"])
        .arg(path)
        .status()
        .context("running xz (Debian's xz-utils)")?;
    if !status.success() {
        bail!("xz {} failed", path.display());
    }
    let mut out = path.as_os_str().to_owned();
    out.push(".xz");
    Ok(PathBuf::from(out))
}

fn run_script(tests: &[&str], benches: &[&str]) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Generated by `cargo xtask bundle`: runs cuzk-cuda's device tests, then its
# benchmarks, and prints a table last. Builds nothing. Logs go to $OUT (when
# set) or bundle/logs.
#   bash bundle/run.sh [tests|benches|all] [extra bench args...]
# Environment: TESTS / BENCHES (space-separated names) pick a subset;
# TEST_TIMEOUT / BENCH_TIMEOUT (seconds, default 300) bound each binary;
# TEST_ARGS are passed to every test binary (e.g. --nocapture, so each
# test's lines, a skipped size among them, are in the log).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
logs="${{OUT:-$here/logs}}"
mkdir -p "$logs"
what="${{1:-all}}"; shift || true
export CUZK_BENCH_OUT="$logs"
rm -f "$logs/summary.txt"
tests="${{TESTS:-{tests}}}"
benches="${{BENCHES:-{benches}}}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
date -u +"date: %Y-%m-%dT%H:%M:%SZ"
rows=()
# The tools travel xz-compressed (cargo xtask bundle): unpack them once.
for f in "$here"/bin/*.xz; do
  [ -e "$f" ] || continue
  [ -x "${{f%.xz}}" ] || {{ xz -dc "$f" > "${{f%.xz}}" && chmod +x "${{f%.xz}}"; }}
done
# Demo-circuit keys for cuzk-gpu's tests, made here with bellperson's generator
# (KEY_SIZES, default "16 18"; the 2^10 key is in fixtures/).
keys="${{KEYS_DIR:-/tmp/cuzk-keys}}"; mkdir -p "$keys"
export CUZK_TEST_KEYS="$keys" CUZK_TEST_SIZES="${{KEY_SIZES-16 18}}" CUZK_FIXTURES="$here/../fixtures"
if [ "$what" != benches ] && [ -x "$here/bin/cuzk" ]; then
  for k in $CUZK_TEST_SIZES; do
    [ -f "$keys/demo-$k-95.params" ] && continue
    start=$(date +%s)
    "$here/bin/cuzk" setup --log-size "$k" --out "$keys/demo-$k-95.params" --setup-seed "$k" >/dev/null 2>&1
    rows+=("$(printf '%-8s %-46s %s' setup "2^$k key ($(( $(date +%s) - start )) s)" "$([ -f "$keys/demo-$k-95.params" ] && echo ok || echo FAILED)")")
  done
fi
if [ "$what" = all ] || [ "$what" = tests ]; then
  for t in $tests; do
    start=$(date +%s)
    timeout "${{TEST_TIMEOUT:-300}}" "$here/bin/$t" --test-threads=1 ${{TEST_ARGS:-}} 2>&1 | tee "$logs/test-$t.log"
    rc=${{PIPESTATUS[0]}}
    secs=$(( $(date +%s) - start ))
    while read -r name result; do
      rows+=("$(printf '%-8s %-46s %s' "$t" "$name" "$result")")
    done < <(sed -n 's/^test \(.*\) \.\.\. \(ok\|FAILED\|ignored\)$/\1 \2/p' "$logs/test-$t.log")
    rows+=("$(printf '%-8s %-46s %s' "$t" "(exit $rc, ${{secs}} s)" "$([ $rc = 0 ] && echo PASS || echo FAIL)")")
  done
fi
if [ "$what" = all ] || [ "$what" = benches ]; then
  for b in $benches; do
    start=$(date +%s)
    timeout "${{BENCH_TIMEOUT:-300}}" "$here/bin/$b" "$@" 2>&1 | tee "$logs/bench-$b.log"
    rc=${{PIPESTATUS[0]}}
    rows+=("$(printf '%-8s %-46s %s' bench "$b (exit $rc, $(( $(date +%s) - start )) s)" "$([ $rc = 0 ] && echo ok || echo FAILED)")")
  done
fi
echo
echo "================ summary ================"
[ -f "$logs/summary.txt" ] && cat "$logs/summary.txt"
printf '%s\n' "${{rows[@]}}"
"#,
        tests = tests.join(" "),
        benches = benches.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargo_json_artifacts() {
        let line = r#"{"reason":"compiler-artifact","package_id":"x","target":{"kind":["test"],"crate_types":["bin"],"name":"gpu","src_path":"/a/tests/gpu.rs"},"profile":{},"executable":"/t/release/deps/gpu-123","fresh":true}"#;
        assert_eq!(
            json_string(line, "\"target\":{", "name").as_deref(),
            Some("gpu")
        );
        assert_eq!(
            json_string(line, "", "executable").as_deref(),
            Some("/t/release/deps/gpu-123")
        );
    }
}
