//! The harness of the GPU test suites (`harness = false` test targets): with
//! a usable device their tests run as libtest would run them; without one
//! every test is reported ignored, so a machine without a GPU never counts a
//! GPU test as passed, and the suite says in one line how many it skipped and
//! why. Whether the device is there is the suite's to say (this crate knows
//! nothing about CUDA): a device that is present but cannot run (stale or
//! missing kernels, a driver error) must be reported present, so that its
//! tests run and fail.

use std::process::ExitCode;

use std::io::Write;

use libtest_mimic::{Arguments, Failed, FormatSetting, Trial};

/// One test of a suite: its name and its body (a function that panics on
/// failure, as a `#[test]` function does).
pub type GpuTest = (&'static str, fn());

/// `[(name, function), ...]` for [`gpu_suite`], each name the function's own.
#[macro_export]
macro_rules! gpu_tests {
    ($($test:ident),+ $(,)?) => {
        [$((stringify!($test), $test as fn())),+]
    };
}

/// Runs `tests` with libtest's command-line arguments (filters, `--exact`,
/// `--skip`, `--list`, `--ignored`, `--include-ignored`, `--test-threads`,
/// `--nocapture`, `--format`...) and libtest's report. `missing` is why the
/// suite cannot run here (`None` where the device is present): then every
/// test is marked ignored, one line names how many of the selected tests
/// that skips and why, and a test run anyway (`--ignored`) fails with the
/// reason rather than passing without having run.
///
/// Test output is not captured: a test's printed lines appear as it runs.
/// Run one at a time, a test's result would then land at the end of its last
/// printed line; the suite repeats `test NAME ... ` before it, so that every
/// result has its own `test NAME ... ok|FAILED` line (the device scripts
/// read those).
pub fn gpu_suite(suite: &str, tests: &[GpuTest], missing: Option<&str>) -> ExitCode {
    let args = Arguments::from_args();
    let trial = |name: &'static str| Trial::test(name, || Ok(()));
    let selected: Vec<&'static str> = tests
        .iter()
        .map(|&(name, _)| name)
        .filter(|&name| !args.is_filtered_out(&trial(name).with_ignored_flag(missing.is_some())))
        .collect();
    if let Some(why) = missing {
        if !args.list {
            let run_anyway = args.ignored || args.include_ignored;
            println!(
                "{}",
                skip_line(suite, selected.len(), tests.len(), why, run_anyway)
            );
        }
    }
    let width = selected
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    let relabel = one_at_a_time(&args);
    let trials = tests
        .iter()
        .map(|&(name, body)| {
            let why = missing.map(str::to_string);
            Trial::test(name, move || {
                if let Some(why) = why {
                    return Err(Failed::from(format!("cannot run here: {why}")));
                }
                if relabel {
                    println!();
                }
                let outcome = std::panic::catch_unwind(body);
                if relabel {
                    print!("test {name:<width$} ... ");
                    let _ = std::io::stdout().flush();
                }
                if let Err(panic) = outcome {
                    std::panic::resume_unwind(panic);
                }
                Ok(())
            })
            .with_ignored_flag(missing.is_some())
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// Whether libtest-mimic runs the tests one at a time on the thread that
/// prints `test NAME ... ` before each (with pretty output).
fn one_at_a_time(args: &Arguments) -> bool {
    let threads = args.test_threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let pretty = !args.quiet && matches!(args.format, None | Some(FormatSetting::Pretty));
    threads == 1 && pretty && !args.list
}

/// The one line a suite without its device prints.
fn skip_line(suite: &str, selected: usize, total: usize, why: &str, run_anyway: bool) -> String {
    let tests = if selected == 1 { "test" } else { "tests" };
    let of = if selected == total {
        String::new()
    } else {
        format!(" (of {total})")
    };
    if run_anyway {
        format!("{suite}: {selected} {tests}{of} asked to run cannot run here (they fail): {why}")
    } else {
        format!("{suite}: {selected} {tests}{of} skipped (reported ignored): {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skip_line_says_how_many_and_why() {
        assert_eq!(
            skip_line("msm", 14, 14, "no CUDA device (no driver)", false),
            "msm: 14 tests skipped (reported ignored): no CUDA device (no driver)"
        );
        assert_eq!(
            skip_line("gpu", 1, 12, "no CUDA device", false),
            "gpu: 1 test (of 12) skipped (reported ignored): no CUDA device"
        );
        assert_eq!(
            skip_line("gpu", 2, 2, "no CUDA device", true),
            "gpu: 2 tests asked to run cannot run here (they fail): no CUDA device"
        );
    }
}
