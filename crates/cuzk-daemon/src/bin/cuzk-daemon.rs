//! `cuzk-daemon`: the proving daemon on its own (the same as `cuzk daemon`).

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "cuzk-daemon",
    about = "Serve Curio's cuzk.v1.ProvingEngine over gRPC",
    long_about = "Serve Curio's cuzk.v1.ProvingEngine over gRPC. Logs: RUST_LOG. The CUDA kernels are \
                  read from beside the binary unless proving.kernels_dir or CUZK_FATBIN_DIR names \
                  their folder."
)]
struct Cli {
    #[command(flatten)]
    args: cuzk_daemon::DaemonArgs,
}

fn main() {
    let mut args = Cli::parse().args;
    // Where the CUDA kernels are, when not beside the binary; the
    // configuration's proving.kernels_dir, when set, takes its place.
    if let Some(dir) = std::env::var_os("CUZK_FATBIN_DIR").filter(|d| !d.is_empty()) {
        cuzk_gpu::kernels::use_dir(Some(dir.into()));
    }
    // The library reads no environment: RUST_LOG is handed to it.
    args.rust_log = std::env::var("RUST_LOG").ok();
    let point_filecoin_at =
        |dir: &str| std::env::set_var(cuzk_daemon::PARAMETER_CACHE_VARIABLE, dir);
    if let Err(e) = cuzk_daemon::run(args, point_filecoin_at) {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(&format!(": {s}"));
            source = s.source();
        }
        eprintln!("error: {text}");
        std::process::exit(1);
    }
}
