//! What the PoRep examples share: their command line, the machine line,
//! and the partition circuit they measure (partition 0 of a C1 given with
//! `--c1 FILE`, else the blank circuit of `--sector-size SIZE`, 2KiB by
//! default).

// Each example uses part of this module.
#![allow(dead_code)]

use bellperson::Circuit;
use blstrs::Scalar as Fr;
use cuzk_filecoin::{parse_c1, parse_sector_size, partition_circuits, ProofType};
use filecoin_proofs::{
    parameters::public_params, DefaultPieceHasher, MerkleTreeTrait, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

pub(crate) type ExampleResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The command line: flags and `--flag VALUE` pairs.
pub(crate) struct Args(Vec<String>);

impl Args {
    pub(crate) fn from_env() -> Self {
        Args(std::env::args().skip(1).collect())
    }

    /// The value after `flag`.
    pub(crate) fn value(&self, flag: &str) -> Option<String> {
        self.0
            .iter()
            .position(|a| a == flag)
            .and_then(|i| self.0.get(i + 1).cloned())
    }

    /// Whether `flag` is given.
    pub(crate) fn has(&self, flag: &str) -> bool {
        self.0.iter().any(|a| a == flag)
    }
}

/// Prints the cores, the rayon threads the example runs on, and the
/// architecture.
pub(crate) fn print_machine(threads: usize) {
    println!(
        "machine: {} cores (rayon {threads}), {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::consts::ARCH
    );
}

/// What an example does with the partition circuit that `make` builds
/// (anew on each call): `witnessed` when it comes from a C1 (else it is
/// the blank circuit, without values).
pub(crate) trait Measure {
    fn measure<C: Circuit<Fr> + Send>(&self, label: &str, make: &dyn Fn() -> C, witnessed: bool);
}

/// The blank PoRep partition circuit of `pt` (sector shape `Tree`).
fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    pt: ProofType,
) -> Result<impl Circuit<Fr> + Send, cuzk_filecoin::Error> {
    let vanilla =
        public_params::<Tree>(&pt.config()).map_err(|e| cuzk_filecoin::Error::Unsupported {
            proof_type: pt.name(),
            why: format!("{e:#}"),
        })?;
    Ok(
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&vanilla),
    )
}

/// Runs `m` on the partition circuit the command line names.
pub(crate) fn measure_partition(args: &Args, m: &impl Measure) -> ExampleResult {
    if let Some(path) = args.value("--c1") {
        let c1 = parse_c1(&std::fs::read(&path)?)?;
        let label = format!("{} partition 0 of {path}", c1.proof_type.name());
        macro_rules! real {
            ($tree:ty) => {
                m.measure(
                    &label,
                    &|| {
                        partition_circuits::<$tree>(&c1)
                            .expect("partition circuits")
                            .swap_remove(0)
                            .circuit
                    },
                    true,
                )
            };
        }
        match c1.proof_type.sector_size() {
            s if s == 2 << 10 => real!(SectorShape2KiB),
            s if s == 8 << 20 => real!(SectorShape8MiB),
            s if s == 512 << 20 => real!(SectorShape512MiB),
            s if s == 32 << 30 => real!(SectorShape32GiB),
            _ => real!(SectorShape64GiB),
        }
        return Ok(());
    }
    let size_text = args.value("--sector-size").unwrap_or_else(|| "2KiB".into());
    let size = parse_sector_size(&size_text).ok_or("bad --sector-size")?;
    let proof = ProofType::ALL
        .into_iter()
        .find(|p| u64::from(p.sector_size()) == size && format!("{p:?}").ends_with("V1_1"))
        .ok_or("no PoRep proof type of that sector size")?;
    let pt = ProofType::new(proof)?;
    let label = format!("{} blank partition", pt.name());
    macro_rules! blank {
        ($tree:ty) => {{
            blank_circuit::<$tree>(pt)?;
            m.measure(
                &label,
                &|| blank_circuit::<$tree>(pt).expect("blank circuit"),
                false,
            )
        }};
    }
    match size {
        s if s == 2 << 10 => blank!(SectorShape2KiB),
        s if s == 8 << 20 => blank!(SectorShape8MiB),
        s if s == 512 << 20 => blank!(SectorShape512MiB),
        s if s == 32 << 30 => blank!(SectorShape32GiB),
        _ => blank!(SectorShape64GiB),
    }
    Ok(())
}
