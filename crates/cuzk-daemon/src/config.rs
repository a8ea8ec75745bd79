//! The daemon's configuration: a TOML file (`cuzk.example.toml` documents
//! every key and is what `--print-default-config` prints), command-line
//! overrides for the common keys, and the checks that turn it into settings.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ConfigError;
use crate::listen::ListenAddr;

/// The example configuration: every key with its default and what it does.
pub const EXAMPLE: &str = include_str!("../cuzk.example.toml");

/// Everything the daemon is configured by (see [`EXAMPLE`] for each key).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub listen: ListenConfig,
    pub proving: ProvingConfig,
    pub limits: LimitsConfig,
    pub srs: SrsConfig,
    pub retention: RetentionConfig,
    pub state: StateConfig,
    pub shutdown: ShutdownConfig,
}

/// `[listen]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListenConfig {
    pub addresses: Vec<String>,
    pub socket_mode: String,
    pub status_address: String,
    pub max_message_bytes: u64,
}

/// `[proving]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvingConfig {
    pub params_dir: String,
    pub backend: String,
    pub synthesis: String,
    pub vram_budget: String,
    pub synthesis_workers: usize,
    pub gpu_workers: usize,
    pub partitions_in_flight: usize,
    pub engine_memory_budget: u64,
    pub critical_reserve: u64,
    pub reserve_class: String,
    pub bulk_jobs_in_engine: usize,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    pub max_queued_jobs: usize,
    pub max_queued_bytes: u64,
}

/// `[srs]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SrsConfig {
    pub host_budget: u64,
    pub idle_secs: u64,
    pub warm_secs: u64,
    pub preload: Vec<String>,
}

/// `[retention]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    pub max_results: usize,
    pub delivered_secs: u64,
}

/// `[state]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    pub dir: PathBuf,
}

/// `[shutdown]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShutdownConfig {
    pub grace_secs: u64,
}

impl Default for ListenConfig {
    fn default() -> Self {
        ListenConfig {
            // Curio's own default address for its proving daemon.
            addresses: vec!["unix:/run/curio/cuzk.sock".into()],
            socket_mode: "0660".into(),
            status_address: "127.0.0.1:9821".into(),
            // Curio's send and receive limit.
            max_message_bytes: 256 << 20,
        }
    }
}

impl Default for ProvingConfig {
    fn default() -> Self {
        ProvingConfig {
            params_dir: String::new(),
            backend: "auto".into(),
            synthesis: "auto".into(),
            vram_budget: "auto".into(),
            synthesis_workers: 2,
            gpu_workers: 2,
            partitions_in_flight: 4,
            engine_memory_budget: 0,
            critical_reserve: 0,
            reserve_class: "critical".into(),
            bulk_jobs_in_engine: 2,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_queued_jobs: 32,
            max_queued_bytes: 8 << 30,
        }
    }
}

impl Default for SrsConfig {
    fn default() -> Self {
        SrsConfig {
            host_budget: 0,
            idle_secs: 600,
            warm_secs: 1800,
            preload: Vec::new(),
        }
    }
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            max_results: 256,
            delivered_secs: 600,
        }
    }
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            dir: PathBuf::from("/var/lib/cuzk"),
        }
    }
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig { grace_secs: 60 }
    }
}

impl Config {
    /// Parses a configuration file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: origin.to_path_buf(),
            source,
        })
    }

    /// Reads and parses a configuration file.
    pub fn read(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// The listen addresses, parsed.
    pub fn listen_addresses(&self) -> Result<Vec<ListenAddr>, ConfigError> {
        if self.listen.addresses.is_empty() {
            return Err(ConfigError::Invalid {
                key: "listen.addresses",
                problem: "no address to listen on".into(),
            });
        }
        self.listen
            .addresses
            .iter()
            .map(|a| ListenAddr::parse(a))
            .collect()
    }

    /// The unix socket mode, parsed from octal.
    pub fn socket_mode(&self) -> Result<u32, ConfigError> {
        u32::from_str_radix(self.listen.socket_mode.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| ConfigError::Invalid {
                key: "listen.socket_mode",
                problem: format!(
                    "{:?} is not an octal permission mode such as \"0660\"",
                    self.listen.socket_mode
                ),
            })
    }

    /// The least urgent engine class that may use `proving.critical_reserve`.
    pub fn reserve_class(&self) -> Result<cuzk_pipeline::Priority, ConfigError> {
        match self.proving.reserve_class.as_str() {
            "critical" => Ok(cuzk_pipeline::Priority::Critical),
            "high" => Ok(cuzk_pipeline::Priority::High),
            other => Err(ConfigError::Invalid {
                key: "proving.reserve_class",
                problem: format!("{other:?}: expected \"critical\" or \"high\""),
            }),
        }
    }

    /// `proving.synthesis`, parsed.
    pub fn synthesis(&self) -> Result<crate::srs::SynthesisChoice, ConfigError> {
        self.proving
            .synthesis
            .parse()
            .map_err(|problem| ConfigError::Invalid {
                key: "proving.synthesis",
                problem,
            })
    }

    /// Refuses settings the daemon cannot run with, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addresses()?;
        self.socket_mode()?;
        if !self.listen.status_address.is_empty() {
            self.listen
                .status_address
                .parse::<std::net::SocketAddr>()
                .map_err(|e| ConfigError::Invalid {
                    key: "listen.status_address",
                    problem: format!("{:?}: {e}", self.listen.status_address),
                })?;
        }
        if !matches!(self.proving.backend.as_str(), "auto" | "cuda" | "cpu") {
            return Err(ConfigError::Invalid {
                key: "proving.backend",
                problem: format!(
                    "{:?}: expected \"auto\", \"cuda\" or \"cpu\"",
                    self.proving.backend
                ),
            });
        }
        self.reserve_class()?;
        self.synthesis()?;
        cuzk_cuda::VramBudget::parse(&self.proving.vram_budget).map_err(|problem| {
            ConfigError::Invalid {
                key: "proving.vram_budget",
                problem: problem.to_string(),
            }
        })?;
        let positive = [
            ("proving.synthesis_workers", self.proving.synthesis_workers),
            ("proving.gpu_workers", self.proving.gpu_workers),
            (
                "proving.partitions_in_flight",
                self.proving.partitions_in_flight,
            ),
            (
                "proving.bulk_jobs_in_engine",
                self.proving.bulk_jobs_in_engine,
            ),
            ("limits.max_queued_jobs", self.limits.max_queued_jobs),
            ("retention.max_results", self.retention.max_results),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    problem: "must be at least 1".into(),
                });
            }
        }
        if self.listen.max_message_bytes == 0 || self.listen.max_message_bytes > u32::MAX as u64 {
            return Err(ConfigError::Invalid {
                key: "listen.max_message_bytes",
                problem: format!(
                    "{} is outside 1..=4294967295 (gRPC frames carry a 32-bit length)",
                    self.listen.max_message_bytes
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_is_the_default_configuration() {
        let parsed = Config::parse(EXAMPLE, Path::new("cuzk.example.toml")).unwrap();
        assert_eq!(parsed, Config::default());
        parsed.validate().unwrap();
    }

    #[test]
    fn an_empty_file_is_the_default_and_unknown_keys_are_refused() {
        assert_eq!(
            Config::parse("", Path::new("empty.toml")).unwrap(),
            Config::default()
        );
        let err = Config::parse("[listen]\nadress = []\n", Path::new("typo.toml")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("typo.toml") && text.contains("adress"),
            "{text}"
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        let check = |toml: &str, key: &str| {
            let c = Config::parse(toml, Path::new("t.toml")).unwrap();
            let text = c.validate().unwrap_err().to_string();
            assert!(text.contains(key), "{toml}: {text}");
        };
        check("[listen]\nsocket_mode = \"rw\"\n", "listen.socket_mode");
        check("[listen]\naddresses = []\n", "listen.addresses");
        check("[listen]\naddresses = [\"nowhere\"]\n", "nowhere");
        check("[proving]\nbackend = \"opencl\"\n", "proving.backend");
        check(
            "[proving]\nsynthesis_workers = 0\n",
            "proving.synthesis_workers",
        );
        check("[limits]\nmax_queued_jobs = 0\n", "limits.max_queued_jobs");
        check(
            "[proving]\nreserve_class = \"normal\"\n",
            "proving.reserve_class",
        );
        check(
            "[listen]\nstatus_address = \"here\"\n",
            "listen.status_address",
        );
    }
}
