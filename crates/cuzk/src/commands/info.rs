//! `cuzk info`: the machine's backends and, with `--key`, a key file's
//! section counts and offsets (read from the counts; no point is decoded).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_groth16::params::KeySummary;

use crate::backend::gpu_status;

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// A proving key to summarize (read from its section counts; no point is decoded).
    #[arg(long, short)]
    key: Option<PathBuf>,
}

pub(crate) fn run(args: InfoArgs) -> Result<()> {
    println!("cuzk {}", env!("CARGO_PKG_VERSION"));
    println!(
        "cpu backend: {} rayon threads",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("gpu backend: {}", gpu_status());
    if let Some(path) = &args.key {
        let summary =
            KeySummary::from_path(path).with_context(|| format!("reading {}", path.display()))?;
        println!("{}:", path.display());
        println!("{summary}");
    }
    Ok(())
}
