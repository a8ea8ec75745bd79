//! The daemon's errors: configuration and start-up ([`ConfigError`],
//! [`DaemonError`]) and the journal ([`JournalError`]), public; inside the
//! crate, the key manager's (`SrsError`) and what a request is answered
//! with (`RequestError`, one gRPC status code each, its message naming the
//! problem).

use std::path::PathBuf;

use cuzk_gpu::human;

/// A configuration file or value the daemon cannot use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading the configuration {}: {source}", path.display())]
    Read {
        /// The configuration file.
        path: PathBuf,
        #[source]
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not the TOML the daemon expects (unknown key, wrong type).
    #[error("configuration {}: {source}", path.display())]
    Parse {
        /// The configuration file.
        path: PathBuf,
        #[source]
        /// The TOML error (it names the line and the key).
        source: toml::de::Error,
    },
    /// Curio's cuzk configuration with a value that cannot be mapped.
    #[error("configuration {} (Curio's cuzk format): {problem}", path.display())]
    Curio {
        /// The configuration file.
        path: PathBuf,
        /// The key and why its value cannot be mapped.
        problem: String,
    },
    /// A value is out of range.
    #[error("configuration key {key}: {problem}")]
    Invalid {
        /// The key, with its table (e.g. "proving.backend").
        key: &'static str,
        /// What is wrong with the value.
        problem: String,
    },
    /// A listen address that is neither `unix:PATH` nor `HOST:PORT`.
    #[error("listen address {address:?}: {problem}")]
    Address {
        /// The address as written.
        address: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The journal of accepted jobs could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// A file operation failed.
    #[error("journal: {context} {}: {source}", path.display())]
    Io {
        /// What was being done with the file.
        context: &'static str,
        /// The file.
        path: PathBuf,
        #[source]
        /// The I/O error.
        source: std::io::Error,
    },
    /// A record could not be encoded.
    #[error("journal: encoding a record: {0}")]
    Encode(#[source] serde_json::Error),
}

/// Why a proving key could not be made ready.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SrsError {
    /// A circuit id this daemon does not know.
    #[error("unknown circuit id {id:?}: this daemon serves {known}")]
    UnknownCircuit {
        /// The id asked for.
        id: String,
        /// The ids this daemon serves, listed.
        known: String,
    },
    /// The key files are absent or broken.
    #[error("{circuit_id}: {source}")]
    Key {
        /// The key's circuit id.
        circuit_id: String,
        #[source]
        /// Why the key could not be read.
        source: Box<cuzk_filecoin::Error>,
    },
    /// The key is larger than what keys may hold of the host.
    #[error("{circuit_id}: the key needs {needed} bytes of host memory but keys may hold at most {budget} bytes (srs.host_budget, and proving.engine_memory_budget less proving.critical_reserve)")]
    TooLarge {
        /// The key's circuit id.
        circuit_id: String,
        /// Host bytes the parsed key needs.
        needed: u64,
        /// Host bytes keys may hold.
        budget: u64,
    },
    /// The key, HOT, and one partition of its circuit do not fit the host
    /// budget together: a job of it could never be admitted.
    #[error("{circuit_id}: a job needs the key's {key_bytes} bytes ({}, HOT keys are lent out of the engine's host budget) plus one partition's {partition_bytes} bytes ({} = witness {witness} + working set {working_set}) = {} bytes ({}) of host memory at once, but {class} partitions may use {budget} bytes ({}) of it (proving.engine_memory_budget, less proving.critical_reserve below its class): it could never be admitted; raise proving.engine_memory_budget by at least {} bytes", human(*.key_bytes), human(*.partition_bytes), *.key_bytes + *.partition_bytes, human(*.key_bytes + *.partition_bytes), human(*.budget), (*.key_bytes + *.partition_bytes).saturating_sub(*.budget))]
    NeverFits {
        /// The key's circuit id.
        circuit_id: String,
        /// Host bytes of the parsed key.
        key_bytes: u64,
        /// Host bytes of one partition (`witness` + `working_set`).
        partition_bytes: u64,
        /// Of the partition: its witness.
        witness: u64,
        /// Of the partition: the prover's working set.
        working_set: u64,
        /// Host bytes the job's class may use.
        budget: u64,
        /// The job's class ("normal", "critical", ...).
        class: &'static str,
    },
    /// Its loader thread failed while this job waited for it.
    #[error("the key could not be loaded: {source}")]
    LoadFailed {
        /// The key's circuit id.
        circuit_id: String,
        #[source]
        /// Why the load failed (shared by every job that waited for it).
        source: std::sync::Arc<SrsError>,
    },
    /// Jobs are proving with it.
    #[error("{circuit_id} is in use by {refs} running job(s) and cannot be evicted now")]
    InUse {
        /// The key's circuit id.
        circuit_id: String,
        /// Jobs proving with it.
        refs: u32,
    },
}

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The journal is unusable.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The engine refused its configuration.
    #[error("starting the proving engine: {0}")]
    Engine(#[from] cuzk_pipeline::StartError),
    /// `backend = "cuda"` without a usable device, or a device that failed to open.
    #[error("proving.backend: {0}")]
    Backend(String),
    /// A listener could not be bound.
    #[error("listening on {address}: {source}")]
    Bind {
        /// The address.
        address: String,
        #[source]
        /// The I/O error.
        source: std::io::Error,
    },
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The gRPC server failed.
    #[error("gRPC server on {address}: {source}")]
    Serve {
        /// The address.
        address: String,
        #[source]
        /// The transport's error.
        source: tonic::transport::Error,
    },
}

/// What a request is answered with when it is not served: a gRPC code and a
/// message naming the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequestError {
    /// The request itself is wrong (a missing field, a C1 for another sector, ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// The queue or its memory is full; the message has the numbers.
    #[error("{0}")]
    ResourceExhausted(String),
    /// No such job (or circuit).
    #[error("{0}")]
    NotFound(String),
    /// The daemon cannot serve it in its present state (missing key files, key in use).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The daemon is shutting down.
    #[error("{0}")]
    Unavailable(String),
    /// Something on the daemon's side failed (the journal could not be written).
    #[error("{0}")]
    Internal(String),
}

impl From<RequestError> for tonic::Status {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::InvalidArgument(m) => tonic::Status::invalid_argument(m),
            RequestError::ResourceExhausted(m) => tonic::Status::resource_exhausted(m),
            RequestError::NotFound(m) => tonic::Status::not_found(m),
            RequestError::FailedPrecondition(m) => tonic::Status::failed_precondition(m),
            RequestError::Unavailable(m) => tonic::Status::unavailable(m),
            RequestError::Internal(m) => tonic::Status::internal(m),
        }
    }
}
