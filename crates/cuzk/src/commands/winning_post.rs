//! `cuzk winning-post`: a WinningPoSt from the challenged sector's vanilla
//! proof (as `generate_winning_post_with_vanilla` proves it), verified
//! with filecoin-proofs-api's `verify_winning_post` before it is written.

use anyhow::Result;
use clap::Args;
use cuzk_filecoin::PostKind;

use crate::commands::post::{self, PostArgs};

#[derive(Args, Debug)]
pub(crate) struct WinningPostArgs {
    #[command(flatten)]
    post: PostArgs,
}

pub(crate) fn run(args: WinningPostArgs) -> Result<()> {
    post::run(PostKind::Winning, args.post, 0)
}
