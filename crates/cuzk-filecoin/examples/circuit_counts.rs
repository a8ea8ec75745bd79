//! Constraint and public-input counts of the PoSt and update circuits at a
//! sector size, from the crates' blank circuits in bellperson's counting
//! constraint system (nothing is stored, so 32 GiB fits in a small box):
//! `cargo run --release -p cuzk-filecoin --example circuit_counts -- 32GiB`.
//! The aux count and densities need a witness; the 2 KiB end-to-end tests
//! print them for the small sizes.

use bellperson::util_cs::bench_cs::BenchCS;
use bellperson::Circuit;
use blstrs::Scalar as Fr;
use cuzk_filecoin::{parse_sector_size, PostType, ProofType, UpdateType};
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::SectorShape32GiB;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCompound};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCompound, PublicParams};

fn count(name: &str, circuit: impl Circuit<Fr>) {
    let start = std::time::Instant::now();
    let mut cs = BenchCS::<Fr>::new();
    circuit
        .synthesize(&mut cs)
        .expect("a blank circuit synthesizes");
    println!(
        "{name}: {} constraints, {} public inputs (with ONE) [{:.1?}]",
        cs.num_constraints(),
        cs.num_inputs(),
        start.elapsed()
    );
}

fn main() {
    let size = std::env::args()
        .nth(1)
        .and_then(|s| parse_sector_size(&s))
        .unwrap_or(32 << 30);
    assert_eq!(size, 32 << 30, "this counts the 32 GiB shapes");
    type Tree = SectorShape32GiB;
    let seal = ProofType::ALL
        .into_iter()
        .filter_map(|p| ProofType::new(p).ok())
        .find(|p| p.sector_size() == size)
        .expect("a PoRep type of this size");
    let which: Vec<String> = std::env::args().skip(2).collect();
    let wants = |k: &str| which.is_empty() || which.iter().any(|w| w == k);
    if wants("winning") {
        let pt = PostType::winning_for(seal);
        let pp = winning_post_public_params::<Tree>(&pt.config()).unwrap();
        count(
            &pt.name(),
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(
                &pp,
            ),
        );
    }
    if wants("window") {
        let pt = PostType::window_for(seal);
        let pp = window_post_public_params::<Tree>(&pt.config()).unwrap();
        count(
            &pt.name(),
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(
                &pp,
            ),
        );
    }
    if wants("update") {
        let ut = UpdateType::for_seal(seal);
        let pp = PublicParams::from_sector_size(size);
        count(
            &format!("update {} (one of {} partitions)", ut.name(), ut.partitions()),
            <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::blank_circuit(&pp),
        );
    }
}
