//! `cuzk-daemon`: the proving daemon on its own (the same as `cuzk daemon`).

use std::io::IsTerminal;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "cuzk-daemon",
    about = "Serve Curio's cuzk.v1.ProvingEngine over gRPC"
)]
struct Cli {
    #[command(flatten)]
    args: cuzk_daemon::DaemonArgs,
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour for a terminal only: under systemd the log goes to the journal.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if let Err(e) = cuzk_daemon::run(Cli::parse().args) {
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
