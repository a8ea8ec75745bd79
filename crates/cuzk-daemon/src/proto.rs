//! The `cuzk.v1` messages and the `ProvingEngine` server trait, generated at
//! build time from `proto/cuzk/v1/proving.proto` (see `build.rs`).

#![allow(missing_docs, missing_debug_implementations, clippy::all)]

tonic::include_proto!("cuzk.v1");
