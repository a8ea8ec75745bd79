//! `cuzk doctor`: what this box has and what the daemon would choose on
//! it (`cuzk_daemon::doctor`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// `cuzk doctor`.
#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// The Filecoin parameter cache to look in (default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters).
    #[arg(long, value_name = "DIR")]
    params_dir: Option<PathBuf>,
    /// Print the budget tables of docs/operators.md (128/256/512 GiB boxes,
    /// 16 to 141 GB cards) from the same rules, and nothing else.
    #[arg(long)]
    budget_table: bool,
}

pub(crate) fn run(args: DoctorArgs) -> Result<()> {
    if args.budget_table {
        print!("{}", cuzk_daemon::defaults::budget_tables());
        return Ok(());
    }
    let params = match args.params_dir {
        Some(dir) => cuzk_filecoin::ParamsDir::new(dir),
        None => cuzk_filecoin::ParamsDir::filecoin(),
    };
    let facts = cuzk_daemon::defaults::BoxFacts::here();
    let gpus = cuzk_daemon::doctor::gpus_here();
    let driver = cuzk_daemon::doctor::driver_here();
    print!(
        "{}",
        cuzk_daemon::doctor::report(
            facts,
            cuzk_daemon::resources::memory_source(),
            &gpus,
            driver.as_deref(),
            &cuzk_daemon::doctor::cuda_here(),
            &params,
        )
    );
    Ok(())
}
