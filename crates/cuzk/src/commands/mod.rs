//! One module per `cuzk` subcommand: its arguments (clap) and its `run`;
//! `proving` holds what the proving commands share.

pub(crate) mod aggregate;
pub(crate) mod circuit_info;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod fixtures;
pub(crate) mod info;
pub(crate) mod params;
pub(crate) mod porep_c2;
pub(crate) mod post;
pub(crate) mod precompile;
pub(crate) mod prove;
pub(crate) mod proving;
pub(crate) mod setup;
pub(crate) mod snap_prove;
pub(crate) mod verify;
pub(crate) mod window_post;
pub(crate) mod winning_post;
