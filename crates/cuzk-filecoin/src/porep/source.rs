//! A C1's partitions as a job for cuzk's engine: [`PorepSource`] is a
//! `cuzk_pipeline::PartitionSource`, so a scheduler (cuzk-sched's, or any
//! other written against the contract) synthesizes the partitions on its
//! synthesis workers, several at once within its host-memory budget, while
//! its provers prove the ones already synthesized.

use cuzk_field::Fr;
use cuzk_groth16::ProvingKey;
use cuzk_synth::CircuitShape;
use storage_proofs_core::merkle::MerkleTreeTrait;

use crate::job::{CircuitSource, SynthesisOf};
use crate::porep::synthesis::{partition_work, PorepSynthesis};
use crate::proof_type::with_sector_shape;
use crate::{C1Input, Error};

/// One PoRep partition's synthesis, in whichever mode was asked for.
type PartitionSynthesis = SynthesisOf<Error>;

/// The partition circuits of one C1, built as `seal_commit_phase2` builds
/// them (see [`CircuitSource`]).
pub type PorepSource = CircuitSource<Porep>;

/// [`CircuitSource`]'s kind for a PoRep C2.
#[derive(Debug)]
pub enum Porep {}

impl CircuitSource<Porep> {
    /// The partitions of `c1`, to be proved with `key` (the proof type's
    /// key; a key of another circuit is refused when the job is submitted),
    /// each synthesized challenge by challenge in parallel.
    pub fn new(c1: &C1Input, key: &ProvingKey) -> Result<Self, Error> {
        Self::with_synthesis(c1, key, &PorepSynthesis::default())
    }

    /// [`PorepSource::new`], synthesizing as `synthesis` says.
    ///
    /// Pre-compiled, the witnesses are compact, and partition 0's is
    /// computed here (its values other than 0 and 1, with a margin, are
    /// what the engine reserves for each partition: ~1.7 M of 130 M at
    /// 32 GiB, nearly the same in every partition: the margin is 1/256),
    /// then handed to the engine as partition 0.
    pub fn with_synthesis(
        c1: &C1Input,
        key: &ProvingKey,
        synthesis: &PorepSynthesis,
    ) -> Result<Self, Error> {
        let (circuits, inputs, others) =
            with_sector_shape!(c1.proof_type.sector_size(), erased, c1, synthesis)?;
        Ok(CircuitSource::from_parts(
            format!("PoRep C2 {:?} ({})", c1.proof_type, synthesis.mode()),
            key,
            circuits,
            inputs,
            matches!(synthesis, PorepSynthesis::Precompiled(_)),
        )
        .with_compact_others(others))
    }
}

/// The values other than 0 and 1 to reserve for every partition of a
/// proof whose partition 0 has `first`: that count and 1/256 more. The
/// count is the circuit's values that are not bits, less the few that come
/// out 0 or 1 by chance, so it differs a little between partitions (by up
/// to 65 of 1.69 M across a 32 GiB proof's ten, measured 2026-12-06: the
/// engine warned at each partition that its witness outgrew the estimate).
pub(crate) fn others_to_reserve(first: usize) -> usize {
    first + first.div_ceil(256)
}

/// Each partition's synthesis and public inputs, and for compact witnesses
/// the number of values other than 0 and 1 (partition 0's, computed now).
type Erased = (Vec<PartitionSynthesis>, Vec<Vec<Fr>>, Option<usize>);

fn erased<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Input,
    synthesis: &PorepSynthesis,
) -> Result<Erased, Error> {
    let mut others = None;
    let mut circuits = Vec::new();
    let mut inputs = Vec::new();
    for mut work in partition_work::<Tree>(c1, synthesis, None)? {
        inputs.push(std::mem::take(&mut work.public_inputs));
        let how = synthesis.clone();
        let first_compact = circuits.is_empty() && matches!(how, PorepSynthesis::Precompiled(_));
        let synthesize: PartitionSynthesis = if first_compact {
            let witness = work.synthesize(&how, None)?;
            // A witness that fell back to full synthesis is not compact:
            // the engine then reserves plain values.
            others = witness
                .compact_aux
                .as_ref()
                .map(|c| others_to_reserve(c.others().len()));
            Box::new(move |_: &CircuitShape| Ok(witness))
        } else {
            Box::new(move |shape: &CircuitShape| work.synthesize(&how, Some(shape)))
        };
        circuits.push(synthesize);
    }
    Ok((circuits, inputs, others))
}

#[cfg(test)]
mod tests {
    /// The margin covers the spread measured across a 32 GiB proof's
    /// partitions (65 values of 1.69 M) with room to spare, and no more
    /// than a fraction of a percent.
    #[test]
    fn the_reserve_covers_the_measured_spread_between_partitions() {
        let first = 1_690_000;
        let extra = super::others_to_reserve(first) - first;
        assert!(extra >= 10 * 65, "{extra}");
        assert!(extra * 100 <= first, "{extra}");
        assert_eq!(super::others_to_reserve(0), 0);
    }
}
