//! The daemon's configuration: a TOML file (`cuzk.example.toml` documents
//! every key and is what `--print-default-config` prints), command-line
//! overrides for the common keys, and the checks that turn it into settings.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::listen::ListenAddr;

/// The example configuration: every key with its default and what it does.
pub const EXAMPLE: &str = include_str!("../cuzk.example.toml");

/// Everything the daemon is configured by (see [`EXAMPLE`] for each key).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[listen]`: where the gRPC service and the status server listen.
    pub listen: ListenConfig,
    /// `[proving]`: the backend, the devices and the engine's workers and memory.
    pub proving: ProvingConfig,
    /// `[limits]`: how much work and memory the daemon accepts at once.
    pub limits: LimitsConfig,
    /// `[srs]`: the proving keys' host budget, tiers and preloads.
    pub srs: SrsConfig,
    /// `[retention]`: how long finished jobs' results are kept.
    pub retention: RetentionConfig,
    /// `[state]`: the journal's folder and its files' permissions.
    pub state: StateConfig,
    /// `[shutdown]`: the grace given to running jobs on SIGTERM.
    pub shutdown: ShutdownConfig,
    /// `[log]`: the log filter and format.
    pub log: LogConfig,
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A `tracing` filter: "info", "warn", "cuzk_daemon=debug,info".
    pub level: String,
    /// "text" or "json" (one JSON object per line).
    pub format: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            level: "info".into(),
            format: "text".into(),
        }
    }
}

/// `[listen]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListenConfig {
    /// gRPC addresses: `unix:PATH` or `HOST:PORT`.
    pub addresses: Vec<String>,
    /// The unix socket's permissions, octal (e.g. "0660").
    pub socket_mode: String,
    /// The unix socket's group ("" keeps the daemon's own).
    pub socket_group: String,
    /// The HTTP address of GET /metrics and GET /status ("" turns it off).
    pub status_address: String,
    #[serde(deserialize_with = "size::de")]
    /// Largest gRPC message accepted or sent, bytes.
    pub max_message_bytes: u64,
}

/// `[proving]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvingConfig {
    /// The Filecoin parameter cache ("": `FIL_PROOFS_PARAMETER_CACHE`, else /var/tmp/filecoin-proof-parameters).
    pub params_dir: String,
    /// "auto", "cuda" or "cpu".
    pub backend: String,
    /// The CUDA kernels' folder ("": found beside the executable, then the build's).
    pub kernels_dir: String,
    /// "auto", "precompiled" or "full": how jobs synthesize their circuits.
    pub synthesis: String,
    /// Each GPU arena's device memory: "auto" or a size.
    pub vram_budget: String,
    /// The CUDA devices to prove on, by ordinal (empty: every one).
    pub gpus: Vec<u32>,
    /// Partitions synthesized at once (0: chosen for the box).
    pub synthesis_workers: usize,
    /// Prover workers per GPU.
    pub gpu_workers: usize,
    /// Partitions admitted into the engine at once (0: chosen for the box).
    pub partitions_in_flight: usize,
    #[serde(deserialize_with = "size::de")]
    /// Host memory shared by the partitions in flight and the HOT keys, bytes (0: 3/4 of the memory).
    pub engine_memory_budget: u64,
    #[serde(deserialize_with = "size::de")]
    /// Bytes of the engine's budget only `reserve_class` and more urgent partitions may use.
    pub critical_reserve: u64,
    /// The least urgent class that may use `critical_reserve` ("critical" or "high").
    pub reserve_class: String,
    /// NORMAL and LOW jobs handed to the engine at once.
    pub bulk_jobs_in_engine: usize,
    /// Host memory kept for native PoSt witnesses' aux vectors between
    /// partitions: "auto", "off" or a size (carved out of `engine_memory_budget`).
    pub post_aux_pool: String,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Jobs accepted and not finished; beyond it submissions are refused.
    pub max_queued_jobs: usize,
    #[serde(deserialize_with = "size::de")]
    /// Vanilla-proof bytes held for those jobs; beyond it submissions are refused.
    pub max_queued_bytes: u64,
    /// Jobs beyond `max_queued_jobs` that only HIGH and CRITICAL jobs may take.
    pub urgent_reserved_jobs: usize,
    #[serde(deserialize_with = "size::de")]
    /// Bytes beyond `max_queued_bytes` that only HIGH and CRITICAL jobs may take.
    pub urgent_reserved_bytes: u64,
    #[serde(deserialize_with = "size::de")]
    /// Memory for requests being checked, bytes (0: 1/8 of the memory, at least 8 GiB).
    pub request_memory: u64,
    /// Client connections served at once.
    pub max_connections: usize,
    /// Calls in progress on one connection.
    pub max_streams_per_connection: usize,
    /// Folders cuzk's own RPCs may read C1 and vanilla-proof files from
    /// (empty: every file refused).
    pub vanilla_file_dirs: Vec<PathBuf>,
}

/// `[srs]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SrsConfig {
    #[serde(deserialize_with = "size::de")]
    /// Host memory HOT keys may hold, bytes (0: 1/2 of the memory).
    pub host_budget: u64,
    /// Seconds a HOT key stays unused before it goes WARM.
    pub idle_secs: u64,
    /// Seconds a WARM key stays unused before it goes COLD.
    pub warm_secs: u64,
    /// Circuit ids made HOT at start.
    pub preload: Vec<String>,
}

/// `[retention]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Finished jobs kept for AwaitProof.
    pub max_results: usize,
    /// Seconds a result stays after its first delivery.
    pub delivered_secs: u64,
}

/// `[state]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// The journal's folder.
    pub dir: PathBuf,
    /// Mode of the journal's files, octal (e.g. "0600").
    pub file_mode: String,
    /// Group of the journal's files ("" keeps the daemon's own).
    pub group: String,
}

/// `[shutdown]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShutdownConfig {
    /// Seconds running jobs get to finish after SIGTERM or SIGINT.
    pub grace_secs: u64,
}

impl Default for ListenConfig {
    fn default() -> Self {
        ListenConfig {
            // Curio's own default address for its proving daemon.
            addresses: vec!["unix:/run/curio/cuzk.sock".into()],
            socket_mode: "0660".into(),
            socket_group: String::new(),
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
            kernels_dir: String::new(),
            synthesis: "auto".into(),
            vram_budget: "auto".into(),
            gpus: Vec::new(),
            synthesis_workers: 0,
            gpu_workers: cuzk_gpu::DEFAULT_GPU_WORKERS,
            partitions_in_flight: 0,
            engine_memory_budget: 0,
            critical_reserve: 0,
            reserve_class: "critical".into(),
            bulk_jobs_in_engine: 2,
            post_aux_pool: "auto".into(),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_queued_jobs: 32,
            max_queued_bytes: 8 << 30,
            urgent_reserved_jobs: 16,
            urgent_reserved_bytes: 2 << 30,
            request_memory: 0,
            max_connections: 64,
            max_streams_per_connection: 32,
            vanilla_file_dirs: Vec::new(),
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
            file_mode: "0600".into(),
            group: String::new(),
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
    /// Curio's cuzk configuration (its `[daemon]`, `[memory]`, `[gpus]`,
    /// `[pipeline]`... sections) is read too, mapped onto this one
    /// ([`crate::curio`]; each mapping is logged).
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        let parse_error = |source| ConfigError::Parse {
            path: origin.to_path_buf(),
            source,
        };
        let table: toml::Table = toml::from_str(text).map_err(parse_error)?;
        if crate::curio::is_curio(&table) {
            let (config, notes) =
                crate::curio::import(&table).map_err(|problem| ConfigError::Curio {
                    path: origin.to_path_buf(),
                    problem,
                })?;
            for note in notes {
                tracing::info!(file = %origin.display(), "Curio's cuzk configuration: {note}");
            }
            return Ok(config);
        }
        toml::from_str(text).map_err(parse_error)
    }

    /// Reads and parses a configuration file.
    pub(crate) fn read(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// The listen addresses, parsed.
    pub(crate) fn listen_addresses(&self) -> Result<Vec<ListenAddr>, ConfigError> {
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
    pub(crate) fn socket_mode(&self) -> Result<u32, ConfigError> {
        octal_mode("listen.socket_mode", &self.listen.socket_mode)
    }

    /// The state files' mode, parsed from octal.
    pub(crate) fn state_file_mode(&self) -> Result<u32, ConfigError> {
        octal_mode("state.file_mode", &self.state.file_mode)
    }

    /// `listen.socket_group`, as a group id (`None`: the process's group).
    pub(crate) fn socket_group(&self) -> Result<Option<u32>, ConfigError> {
        group_id("listen.socket_group", &self.listen.socket_group)
    }

    /// `state.group`, as a group id (`None`: the process's group).
    pub(crate) fn state_group(&self) -> Result<Option<u32>, ConfigError> {
        group_id("state.group", &self.state.group)
    }

    /// The least urgent engine class that may use `proving.critical_reserve`.
    pub(crate) fn reserve_class(&self) -> Result<cuzk_pipeline::Priority, ConfigError> {
        match self.proving.reserve_class.as_str() {
            "critical" => Ok(cuzk_pipeline::Priority::Critical),
            "high" => Ok(cuzk_pipeline::Priority::High),
            other => Err(ConfigError::Invalid {
                key: "proving.reserve_class",
                problem: format!("{other:?}: expected \"critical\" or \"high\""),
            }),
        }
    }

    /// `proving.post_aux_pool`, parsed: `None` for "auto", `Some(0)` for
    /// "off", else the bytes.
    pub(crate) fn post_aux_pool(&self) -> Result<Option<u64>, ConfigError> {
        match self.proving.post_aux_pool.trim() {
            "auto" => Ok(None),
            "off" => Ok(Some(0)),
            text => size::parse(text)
                .map(Some)
                .map_err(|problem| ConfigError::Invalid {
                    key: "proving.post_aux_pool",
                    problem: format!("{problem} (expected \"auto\", \"off\" or a size)"),
                }),
        }
    }

    /// `proving.synthesis`, parsed.
    pub(crate) fn synthesis(&self) -> Result<crate::srs::SynthesisChoice, ConfigError> {
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
        self.state_file_mode()?;
        self.socket_group()?;
        self.state_group()?;
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
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(ConfigError::Invalid {
                key: "log.format",
                problem: format!("{:?}: expected \"text\" or \"json\"", self.log.format),
            });
        }
        if self.proving.partitions_in_flight != 0
            && self.proving.synthesis_workers >= self.proving.partitions_in_flight
        {
            return Err(ConfigError::Invalid {
                key: "proving.synthesis_workers",
                problem: format!(
                    "{} synthesis workers with {} partitions in flight: at least one partition must be free to prove (set partitions_in_flight to the workers plus one)",
                    self.proving.synthesis_workers, self.proving.partitions_in_flight
                ),
            });
        }
        cuzk_gpu::VramBudget::parse(&self.proving.vram_budget).map_err(|problem| {
            ConfigError::Invalid {
                key: "proving.vram_budget",
                problem: problem.to_string(),
            }
        })?;
        self.post_aux_pool()?;
        let positive = [
            ("proving.gpu_workers", self.proving.gpu_workers),
            (
                "proving.bulk_jobs_in_engine",
                self.proving.bulk_jobs_in_engine,
            ),
            ("limits.max_queued_jobs", self.limits.max_queued_jobs),
            ("limits.max_connections", self.limits.max_connections),
            (
                "limits.max_streams_per_connection",
                self.limits.max_streams_per_connection,
            ),
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

fn octal_mode(key: &'static str, text: &str) -> Result<u32, ConfigError> {
    u32::from_str_radix(text.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| ConfigError::Invalid {
            key,
            problem: format!("{text:?} is not an octal permission mode such as \"0660\""),
        })
}

/// A group name (looked up in /etc/group) or a numeric id; "" for none.
fn group_id(key: &'static str, text: &str) -> Result<Option<u32>, ConfigError> {
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(gid) = text.parse::<u32>() {
        return Ok(Some(gid));
    }
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    groups
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            Some((f.next()?, f.nth(1)?))
        })
        .find(|(name, _)| *name == text)
        .and_then(|(_, gid)| gid.parse().ok())
        .map(Some)
        .ok_or_else(|| ConfigError::Invalid {
            key,
            problem: format!(
                "no group {text:?} in /etc/group (give the numeric group id if it comes from a directory service)"
            ),
        })
}

/// Sizes in the configuration: a number of bytes or a string such as
/// `"64GiB"`, `"512MiB"`, `"1.5TiB"` (G, GB and GiB all mean 2^30).
pub(crate) mod size {
    use serde::{Deserialize, Deserializer};

    /// Parses `"64GiB"`, `"0"` or `"1073741824"`.
    pub(crate) fn parse(text: &str) -> Result<u64, String> {
        if text.trim() == "0" {
            return Ok(0);
        }
        match cuzk_gpu::VramBudget::parse(text) {
            Ok(cuzk_gpu::VramBudget::Bytes(n)) => Ok(n),
            Ok(cuzk_gpu::VramBudget::Auto) => {
                Err(format!("{text:?} is not a size here (0 takes the default)"))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// serde's `deserialize_with` for a size.
    pub(crate) fn de<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(n),
            Raw::Text(t) => parse(&t).map_err(serde::de::Error::custom),
        }
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
            "[proving]\nsynthesis_workers = 4\npartitions_in_flight = 4\n",
            "proving.synthesis_workers",
        );
        check("[log]\nformat = \"xml\"\n", "log.format");
        check("[limits]\nmax_queued_jobs = 0\n", "limits.max_queued_jobs");
        check(
            "[proving]\nreserve_class = \"normal\"\n",
            "proving.reserve_class",
        );
        check(
            "[listen]\nstatus_address = \"here\"\n",
            "listen.status_address",
        );
        check("[state]\nfile_mode = \"0999\"\n", "state.file_mode");
        check(
            "[listen]\nsocket_group = \"no-such-group-here\"\n",
            "listen.socket_group",
        );
        check("[limits]\nmax_connections = 0\n", "limits.max_connections");
        check(
            "[proving]\npost_aux_pool = \"lots\"\n",
            "proving.post_aux_pool",
        );
    }

    #[test]
    fn the_post_aux_pool_is_auto_off_or_a_size() {
        let pool = |v: &str| {
            Config::parse(
                &format!("[proving]\npost_aux_pool = \"{v}\"\n"),
                Path::new("t.toml"),
            )
            .unwrap()
            .post_aux_pool()
            .unwrap()
        };
        assert_eq!(pool("auto"), None);
        assert_eq!(pool("off"), Some(0));
        assert_eq!(pool("0"), Some(0));
        assert_eq!(pool("8GiB"), Some(8 << 30));
    }

    #[test]
    fn sizes_are_numbers_or_strings_with_units() {
        let c = Config::parse(
            "[proving]\nengine_memory_budget = \"96GiB\"\ncritical_reserve = \"1.5G\"\n[srs]\nhost_budget = 1024\n[limits]\nmax_queued_bytes = \"512MiB\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        assert_eq!(c.proving.engine_memory_budget, 96 << 30);
        assert_eq!(c.proving.critical_reserve, 3 << 29);
        assert_eq!(c.srs.host_budget, 1024);
        assert_eq!(c.limits.max_queued_bytes, 512 << 20);
        let e = Config::parse("[srs]\nhost_budget = \"lots\"\n", Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lots") && e.contains("host_budget"), "{e}");
    }

    #[test]
    fn groups_are_names_or_ids() {
        assert_eq!(group_id("k", "").unwrap(), None);
        assert_eq!(group_id("k", "1234").unwrap(), Some(1234));
        // Group 0 is "root" on every Linux.
        assert_eq!(group_id("k", "root").unwrap(), Some(0));
    }

    #[test]
    fn by_default_nothing_listens_beyond_this_machine() {
        let c = Config::default();
        for a in c.listen_addresses().unwrap() {
            assert!(a.is_local(), "{a}");
        }
        let status: std::net::SocketAddr = c.listen.status_address.parse().unwrap();
        assert!(status.ip().is_loopback());
        assert_eq!(c.socket_mode().unwrap(), 0o660);
        assert_eq!(c.state_file_mode().unwrap(), 0o600);
    }
}
