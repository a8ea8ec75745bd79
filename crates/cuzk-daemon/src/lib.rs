#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

pub(crate) mod aggregate;
pub mod cli;
pub mod client;
pub mod config;
pub mod curio;
pub(crate) mod daemon;
pub mod defaults;
pub mod doctor;
pub mod error;
pub(crate) mod health;
pub(crate) mod journal;
pub(crate) mod kinds;
pub(crate) mod listen;
pub(crate) mod logging;
pub(crate) mod metrics;
pub(crate) mod porep;
pub mod proto;
pub mod resources;
mod server;
pub(crate) mod service;
pub(crate) mod srs;

pub use cli::DaemonArgs;
pub use config::Config;
pub use error::{ConfigError, DaemonError, JournalError};

/// Runs `cuzk daemon`: prints the default configuration if asked, else
/// serves until SIGTERM or SIGINT, drains, and returns `Ok` (exit 0).
///
/// `point_filecoin_at` is called with the configured parameter cache before
/// anything touches the Filecoin crates, which read it once, from the
/// environment (`FIL_PROOFS_PARAMETER_CACHE`): setting the environment is
/// the binary's business, so the binary passes the setter in.
pub fn run(args: DaemonArgs, point_filecoin_at: impl FnOnce(&str)) -> Result<(), DaemonError> {
    if args.print_default_config {
        print!("{}", config::EXAMPLE);
        return Ok(());
    }
    let config = args.config()?;
    logging::init(&config.log)?;
    if !config.proving.params_dir.is_empty() {
        point_filecoin_at(&config.proving.params_dir);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cuzk-daemon-io")
        .build()
        .map_err(DaemonError::Runtime)?;
    runtime.block_on(server::serve(config))
}

/// The environment variable through which a binary points the Filecoin
/// crates at the parameter cache (they read it once, on first use).
pub const PARAMETER_CACHE_VARIABLE: &str = "FIL_PROOFS_PARAMETER_CACHE";
