//! `cuzk`: the command line of the cuzk Groth16 engine.
//!
//! One module per command under `commands/` (`setup`, `prove`, `verify`,
//! `info`, `demo`, `porep-c2`, `fixtures`, `client`); `backend` picks the prover and
//! the key generator's fixed-base step; `output` holds what the commands
//! share for printing and writing.

mod backend;
mod commands;
mod output;
mod run;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cuzk",
    version,
    about = "Pipelined Groth16 prover for BLS12-381 (bellperson-compatible keys and proofs)",
    long_about = "cuzk proves Groth16 circuits over BLS12-381 with keys in bellperson's .params \
                  format and 192-byte proofs. Logs go to stderr; set RUST_LOG=debug for more. \
                  The CUDA kernels are read from beside the binary (<bin>/kernels, \
                  <bin>/../lib/cuzk/kernels) unless CUZK_FATBIN_DIR names their folder."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a proving key for a demo circuit (cuzk's generator: bellperson's bytes).
    Setup(commands::setup::SetupArgs),
    /// Prove partitions of a demo circuit; writes concatenated 192-byte proofs.
    Prove(commands::prove::ProveArgs),
    /// Verify proofs against a key and public inputs; exits non-zero if any is invalid.
    Verify(commands::verify::VerifyArgs),
    /// Describe a key file (counts, sizes) and the available backends.
    Info(commands::info::InfoArgs),
    /// Shape of a Filecoin circuit (constraints, inputs, aux, densities), counted without a key.
    CircuitInfo(commands::circuit_info::CircuitInfoArgs),
    /// Filecoin PoRep commit phase 2: C1 output in, verified proof out (non-interactive: aggregated).
    PorepC2(commands::porep_c2::PorepC2Args),
    /// SnarkPack aggregate of 1-65 sectors' PoRep partition proofs (filecoin-proofs' bytes), verified.
    Aggregate(commands::aggregate::AggregateArgs),
    /// Record a PoRep proof type's partition circuit once for `porep-c2 --synthesis precompiled`.
    Precompile(commands::precompile::PrecompileArgs),
    /// Filecoin WinningPoSt: the challenged sector's vanilla proof in, a verified proof out.
    WinningPost(commands::winning_post::WinningPostArgs),
    /// Filecoin WindowPoSt, one partition: its sectors' vanilla proofs in, a verified proof out.
    WindowPost(commands::window_post::WindowPostArgs),
    /// Filecoin SnapDeals update: the partitions' vanilla proofs and commitments in, a verified proof out.
    SnapProve(commands::snap_prove::SnapProveArgs),
    /// One command end to end: key (cached), a batch of partitions, verification, timings.
    Demo(commands::demo::DemoArgs),
    /// Ready the parameter cache for the daemon: fetch a sector size's keys, record each circuit.
    Params(commands::params::ParamsArgs),
    /// Filecoin test data: test keys, official parameter files, sealed and synthetic C1s.
    #[command(subcommand)]
    Fixtures(commands::fixtures::Fixtures),
    /// The proving daemon: Curio's cuzk.v1.ProvingEngine over gRPC (logs: RUST_LOG=info)
    Daemon(cuzk_daemon::DaemonArgs),
    /// Talk to a running daemon: prove a C1 through it, or print its status.
    #[command(subcommand)]
    Client(commands::client::ClientCommand),
    /// The daemon's configuration: import Curio's cuzk configuration.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// What this box has (GPUs, memory, cores, keys) and the settings the daemon would choose.
    Doctor(commands::doctor::DoctorArgs),
}

/// The environment variable naming the CUDA kernels' folder.
const KERNELS_VARIABLE: &str = "CUZK_FATBIN_DIR";

fn main() {
    // Curio's unit runs `cuzk --config FILE`: the daemon.
    let cli = Cli::parse_from(commands::config::curio_form(std::env::args_os()));
    // Where the CUDA kernels are, when not beside the binary (`--help` says
    // so); the daemon's proving.kernels_dir, when set, takes its place.
    if let Some(dir) = std::env::var_os(KERNELS_VARIABLE).filter(|d| !d.is_empty()) {
        cuzk_gpu::kernels::use_dir(Some(dir.into()));
    }
    // The daemon sets up its own log (log.level, --log-level, JSON).
    if !matches!(cli.command, Command::Daemon(_)) {
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .with_writer(std::io::stderr)
            .init();
    }
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Setup(args) => commands::setup::run(args),
        Command::Prove(args) => commands::prove::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Info(args) => commands::info::run(args),
        Command::CircuitInfo(args) => commands::circuit_info::run(args),
        Command::PorepC2(args) => commands::porep_c2::run(args),
        Command::Aggregate(args) => commands::aggregate::run(args),
        Command::Precompile(args) => commands::precompile::run(args),
        Command::WinningPost(args) => commands::winning_post::run(args),
        Command::WindowPost(args) => commands::window_post::run(args),
        Command::SnapProve(args) => commands::snap_prove::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Params(args) => commands::params::run(args),
        Command::Fixtures(task) => commands::fixtures::run(task),
        Command::Daemon(mut args) => {
            args.rust_log = std::env::var("RUST_LOG").ok();
            Ok(cuzk_daemon::run(args, |dir| {
                std::env::set_var(cuzk_daemon::PARAMETER_CACHE_VARIABLE, dir)
            })?)
        }
        Command::Config(command) => commands::config::run(command),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Client(command) => commands::client::run(command),
    }
}
