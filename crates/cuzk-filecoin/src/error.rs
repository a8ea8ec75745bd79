//! The ways a proof (PoRep C2, PoSt, sector update) can fail, each naming
//! what is wrong and, where a user can act, what to do about it.

use std::path::PathBuf;

/// Why a C1 output could not be proved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not JSON at all.
    #[error("the C1 file is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but neither a C1 output nor Curio's wrapper of one.
    #[error("the C1 file is JSON but not a commit phase 1 output: {0}")]
    NotC1(String),
    /// Curio's wrapper with a `Phase1Out` that is not base64.
    #[error("Curio C1 wrapper: Phase1Out is not base64")]
    Base64(#[source] base64::DecodeError),
    /// The sector size stated somewhere disagrees with the proof type.
    #[error(
        "wrong sector size for {proof_type}: it proves {expected}-byte sectors, but {place} says {found} bytes"
    )]
    SectorSize {
        /// The proof type, by name.
        proof_type: String,
        /// The sector size it proves, bytes.
        expected: u64,
        /// The size stated, bytes.
        found: u64,
        /// Where it is stated (e.g. "Curio's SectorSize").
        place: &'static str,
    },
    /// A proof type this crate cannot produce a C2 for.
    #[error("{proof_type} is not supported: {why}")]
    Unsupported {
        /// The proof type, by name.
        proof_type: String,
        /// Why it cannot be proved here.
        why: String,
    },
    /// The C1 output contradicts itself: a commitment, the seed or the
    /// replica id does not match its vanilla proofs.
    #[error("the C1 output is inconsistent: {0}")]
    Tampered(String),
    /// The C1 output is fine, but not for the sector it was given as.
    #[error("the C1 output belongs to another sector: {0}")]
    OtherSector(String),
    /// A key file is absent, truncated or unreadable.
    #[error("{what} {path}: {problem}\n  looked for it in {dir} (FIL_PROOFS_PARAMETER_CACHE or --params-dir)\n  to get it: {hint}", path = path.display(), dir = dir.display())]
    KeyFile {
        /// Which file ("proving key", "verifying key").
        what: &'static str,
        /// The file's path.
        path: PathBuf,
        /// The parameter cache it was looked for in.
        dir: PathBuf,
        /// What is wrong with it (absent, truncated, unreadable).
        problem: String,
        /// How to get the file (the command that fetches or generates it).
        hint: String,
    },
    /// The engine refused the job (the key does not fit the circuit, the
    /// budget is too small) or a partition failed.
    #[error("proving through the engine")]
    Engine(#[from] cuzk_sched_serial::ProveOneError),
    /// The proving key does not fit the circuit, or proving failed.
    #[error("proving partition {partition}: {source}")]
    Prove {
        /// The partition, from 0.
        partition: usize,
        #[source]
        /// The prover's error.
        source: cuzk_groth16::prover::ProveError,
    },
    /// Synthesis of a partition circuit failed (the witness does not satisfy it).
    #[error("synthesizing partition {partition}: {source}")]
    Synthesis {
        /// The partition, from 0.
        partition: usize,
        #[source]
        /// The circuit's error.
        source: bellperson::SynthesisError,
    },
    /// A partition synthesized challenge by challenge could not be joined
    /// (its challenges did not share the preamble).
    #[error("synthesizing partition {partition} challenge by challenge: {source}")]
    Pieces {
        /// The partition, from 0.
        partition: usize,
        #[source]
        /// The piece synthesizer's error.
        source: cuzk_synth::PieceError,
    },
    /// A pre-compiled circuit that cannot be used, naming its file.
    #[error(transparent)]
    Precompiled(#[from] crate::precompile::PrecompiledError),
    /// The synthesized circuit's public inputs are not the ones Filecoin's
    /// verifier derives: the circuit was not built as `seal_commit_phase2` builds it.
    #[error("partition {partition}: synthesized public inputs differ from the ones the verifier derives")]
    InputsMismatch {
        /// The partition, from 0.
        partition: usize,
    },
    /// The finished proof did not verify: never returned as output.
    #[error("the proof does not verify ({0}); nothing was written")]
    InvalidProof(&'static str),
    /// An aggregate that does not decode, does not fit the sectors given,
    /// or does not verify.
    #[error("the aggregate is not valid for these sectors ({0}); nothing was written")]
    InvalidAggregate(String),
    /// A PoSt or update request that is not what its kind expects: the
    /// vanilla proofs, the randomness, the proof type or the partition.
    #[error("{kind} request refused: {problem}")]
    BadRequest {
        /// The request's kind ("WinningPoSt", "SnapDeals", ...).
        kind: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// Proofs that cannot be aggregated together (proof types, counts,
    /// lengths), or an aggregate that does not fit the sectors given.
    #[error("aggregation refused: {0}")]
    Aggregate(String),
    /// The SnarkPack SRS is absent, truncated, malformed or too small.
    #[error("SnarkPack SRS {path}: {problem}\n  looked for it in {dir} (FIL_PROOFS_PARAMETER_CACHE or --params-dir)\n  to get it: {hint}", path = path.display(), dir = dir.display())]
    Srs {
        /// The SRS file's path.
        path: PathBuf,
        /// The parameter cache it was looked for in.
        dir: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// How to get the file.
        hint: String,
    },
    /// An error from the Filecoin crates, with what was being done.
    #[error("{context}: {message}")]
    Filecoin {
        /// What was being done.
        context: &'static str,
        /// The Filecoin crates' error, as text (their errors are `anyhow`).
        message: String,
    },
    /// A file could not be read or written.
    #[error("{context} {path}", path = path.display())]
    Io {
        /// What was being done with the file.
        context: &'static str,
        /// The file.
        path: PathBuf,
        #[source]
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an error of the Filecoin crates (they return `anyhow` errors).
    pub(crate) fn filecoin(context: &'static str, e: impl std::fmt::Display) -> Self {
        Error::Filecoin {
            context,
            message: format!("{e:#}"),
        }
    }
}
