//! `cuzk circuit-info`: the shape of a Filecoin circuit of any kind and
//! size (constraints, inputs, aux variables, A/B densities), counted over
//! the crates' blank circuit without a witness or a key.

use anyhow::Result;
use clap::Args;
use cuzk_filecoin::counts::{count_circuit, count_circuit_by_sectors};

use crate::commands::fixtures::circuit_arg;

#[derive(Args, Debug)]
pub(crate) struct CircuitInfoArgs {
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
    #[arg(long, default_value = "2KiB", conflicts_with = "proof_type")]
    sector_size: String,
    /// Which circuits of that size, comma-separated: `porep` (one partition),
    /// `winning-post`, `window-post` (one partition), `update` (one partition).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning-post,window-post,update",
        conflicts_with = "proof_type"
    )]
    kind: Vec<String>,
    /// A registered proof type name instead (StackedDrgWindow32GiBV1_2, ...).
    #[arg(long)]
    proof_type: Option<String>,
    /// Count a WindowPoSt partition whole (minutes at 32 GiB) instead of from
    /// its circuits of 1 and 2 sectors (the same gadget per sector).
    #[arg(long)]
    whole: bool,
}

/// `n` with thousands separators.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn run(args: CircuitInfoArgs) -> Result<()> {
    let circuits = match &args.proof_type {
        Some(name) => vec![(
            circuit_arg(&args.sector_size, "", Some(name))?,
            name.clone(),
        )],
        None => args
            .kind
            .iter()
            .map(|kind| Ok((circuit_arg(&args.sector_size, kind, None)?, kind.clone())))
            .collect::<Result<_>>()?,
    };
    for (circuit, label) in circuits {
        let counted = if args.whole {
            count_circuit(circuit)?
        } else {
            count_circuit_by_sectors(circuit)?
        };
        let s = &counted.shape;
        println!(
            "{} ({label}): {} constraints (domain 2^{}), {} inputs, {} aux; densities: \
             A-aux {}, B-input {}, B-aux {}; counted in {:.1}s{}",
            circuit.name(),
            grouped(s.num_constraints),
            s.domain_log2,
            grouped(s.num_inputs),
            grouped(s.num_aux),
            grouped(s.a_aux_density),
            grouped(s.b_input_density),
            grouped(s.b_aux_density),
            counted.elapsed.as_secs_f64(),
            match counted.by_sectors {
                Some(n) => format!(" (from 1 and 2 sectors, extended to {n}; --whole to count it)"),
                None => String::new(),
            }
        );
    }
    Ok(())
}
