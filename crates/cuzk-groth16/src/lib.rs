#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

pub mod encoding;
pub mod file;
pub mod params;
pub mod proof;
pub mod prover;
pub mod setup;
pub mod verifier;

pub use params::{KeyError, ProvingKey, VerifyingKey};
pub use proof::Proof;
pub use prover::{
    draw_randomness, prove_batch, prove_with, Backend, CpuBackend, MsmSums, ProveError, Proved,
    StageTimings,
};
