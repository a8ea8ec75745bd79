//! `cuzk window-post`: one WindowPoSt partition from its sectors' vanilla
//! proofs (as `generate_single_window_post_with_vanilla` proves it, a short
//! last partition padded as the crates pad it), verified with
//! filecoin-proofs-api's `verify_window_post` before it is written.

use anyhow::Result;
use clap::Args;
use cuzk_filecoin::PostKind;

use crate::commands::post::{self, PostArgs};

#[derive(Args, Debug)]
pub(crate) struct WindowPostArgs {
    /// The partition's index in the deadline.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    #[command(flatten)]
    post: PostArgs,
}

pub(crate) fn run(args: WindowPostArgs) -> Result<()> {
    post::run(PostKind::Window, args.post, args.partition)
}
