//! The daemon's command line ([`DaemonArgs`], a clap `Args` the `cuzk`
//! binary flattens into `cuzk daemon`): a configuration file and overrides
//! for the keys an operator changes most.

use std::path::PathBuf;

use crate::config::Config;
use crate::error::ConfigError;

/// `cuzk daemon`: serve Curio's `cuzk.v1.ProvingEngine` over gRPC.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DaemonArgs {
    /// The TOML configuration (every key is optional; see --print-default-config).
    /// Without it, the defaults.
    /// Curio's cuzk configuration is read too (its keys mapped; see `cuzk config import`).
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the default configuration, every key documented, and exit.
    #[arg(long)]
    pub print_default_config: bool,
    /// Listen on `unix:PATH` or `HOST:PORT` (repeatable); replaces listen.addresses.
    /// A TCP address that is not loopback exposes the service to the network and is logged.
    #[arg(short = 'l', long = "listen", value_name = "ADDRESS")]
    pub listen: Vec<String>,
    /// The Filecoin parameter cache (v28-*.params and .vk); replaces proving.params_dir.
    #[arg(long, value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
    /// `auto`, `cuda` or `cpu`; replaces proving.backend.
    #[arg(long, value_parser = ["auto", "cuda", "cpu"])]
    pub backend: Option<String>,
    /// `auto`, `precompiled` or `full`; replaces proving.synthesis.
    #[arg(long, value_parser = ["auto", "precompiled", "full"])]
    pub synthesis: Option<String>,
    /// HTTP address for GET /metrics and /status (`""` for none); replaces listen.status_address.
    #[arg(long, value_name = "HOST:PORT")]
    pub status_address: Option<String>,
    /// Where the journal of accepted jobs lives; replaces state.dir.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// A log filter ("info", "debug", "cuzk_daemon=debug,warn"); replaces
    /// log.level and wins over RUST_LOG.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// `text` or `json` (one JSON object per line); replaces log.format.
    #[arg(long, value_parser = ["text", "json"])]
    pub log_format: Option<String>,
    /// The RUST_LOG variable, as the binary read it (the library reads no
    /// environment): between --log-level and log.level.
    #[arg(skip)]
    pub rust_log: Option<String>,
}

impl DaemonArgs {
    /// The configuration file (or the defaults) with the overrides applied, checked.
    pub(crate) fn config(&self) -> Result<Config, ConfigError> {
        let mut config = match &self.config {
            Some(path) => Config::read(path)?,
            None => Config::default(),
        };
        if !self.listen.is_empty() {
            config.listen.addresses = self.listen.clone();
        }
        if let Some(dir) = &self.params_dir {
            config.proving.params_dir = dir.display().to_string();
        }
        if let Some(s) = &self.synthesis {
            config.proving.synthesis = s.clone();
        }
        if let Some(b) = &self.backend {
            config.proving.backend = b.clone();
        }
        if let Some(a) = &self.status_address {
            config.listen.status_address = a.clone();
        }
        if let Some(dir) = &self.state_dir {
            config.state.dir = dir.clone();
        }
        if let Some(level) = self.log_level.as_ref().or(self.rust_log.as_ref()) {
            config.log.level = level.clone();
        }
        if let Some(format) = &self.log_format {
            config.log.format = format.clone();
        }
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: DaemonArgs,
    }

    #[test]
    fn overrides_replace_the_file_and_work_without_one() {
        let cli = Cli::parse_from([
            "cuzk",
            "--listen",
            "127.0.0.1:9820",
            "--listen",
            "unix:/tmp/x.sock",
            "--params-dir",
            "/p",
            "--synthesis",
            "full",
            "--backend",
            "cpu",
        ]);
        let c = cli.args.config().unwrap();
        assert_eq!(c.listen.addresses, ["127.0.0.1:9820", "unix:/tmp/x.sock"]);
        assert_eq!(c.proving.params_dir, "/p");
        assert_eq!(c.proving.backend, "cpu");
        assert_eq!(c.proving.synthesis, "full");
        assert_eq!(c.limits, Config::default().limits);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cuzk.toml");
        std::fs::write(
            &file,
            "[limits]\nmax_queued_jobs = 3\n[proving]\nbackend = \"cuda\"\n",
        )
        .unwrap();
        let cli = Cli::parse_from([
            "cuzk",
            "--config",
            file.to_str().unwrap(),
            "--backend",
            "cpu",
        ]);
        let c = cli.args.config().unwrap();
        assert_eq!(c.limits.max_queued_jobs, 3);
        assert_eq!(c.proving.backend, "cpu");
        assert!(Cli::try_parse_from(["cuzk", "--backend", "opencl"]).is_err());
    }
}
