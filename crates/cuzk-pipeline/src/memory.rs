//! How much host memory a partition needs, estimated from its
//! [`CircuitShape`] before it is synthesized.
//!
//! A partition reserves its whole [`PartitionFootprint`] before synthesis
//! starts (so once admitted it can always finish: nothing it does later waits
//! for memory) and gives it back in steps ([`crate::Reservation::release`]):
//! the over-estimate right after synthesis, the prover's working set after
//! the MSMs, the witness after the epilogue (or after the MSMs when nothing
//! will verify the proof).
//!
//! Reserving the prover's working set from the start costs memory while a
//! partition waits for a prover; the alternative (reserve it at the prover)
//! needs headroom kept back per prover worker to be deadlock-free. The working
//! set is the engine's backends' own figure
//! ([`cuzk_groth16::prover::Backend::host_working_set`]): the CPU's padded
//! a, b, c, or next to nothing for a GPU, whose working set lives in VRAM
//! under the arena's admission. At a 32 GiB PoRep partition (domain 2^27) the
//! CPU's is 12 GiB beside a 15.6 GiB witness: reserving it for a GPU engine
//! would admit one partition where three fit.

/// Bytes as a short figure for messages (cuzk-arena's, the one formatter).
pub use cuzk_arena::human;
use std::fmt;
use std::sync::Arc;

use cuzk_groth16::prover::Backend;
use cuzk_synth::{CircuitShape, Synthesized};

use crate::config::EngineConfig;

/// Bytes of one `Fr` in a `Vec<Fr>` (four 64-bit limbs, Montgomery form).
const FR_BYTES: u64 = 32;

/// A partition's host-memory needs, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionFootprint {
    /// The synthesized witness: a, b, c, the assignments, the densities.
    pub witness: u64,
    /// What proving it needs on top, at its peak.
    pub working_set: u64,
}

impl PartitionFootprint {
    /// The footprint on the CPU backend (`cuzk_groth16::CpuBackend`).
    ///
    /// * witness: a, b and c, one `Fr` per constraint each; one `Fr` per input
    ///   and per aux variable; three density bitmaps (A-aux and B-aux: one bit
    ///   per aux variable; B-input: one per input), rounded up to words.
    /// * working set: [`cuzk_groth16::prover::cpu_host_working_set`] (the
    ///   quotient's padded a, b, c, or the gathered A and B scalars).
    pub fn cpu(shape: &CircuitShape) -> Self {
        PartitionFootprint::with_working_set(
            shape,
            cuzk_groth16::prover::cpu_host_working_set(shape),
        )
    }

    /// The witness of `shape` (as [`PartitionFootprint::cpu`] counts it) and
    /// a prover's `working_set` beside it.
    pub fn with_working_set(shape: &CircuitShape, working_set: u64) -> Self {
        Self::of_witness(shape, true, working_set)
    }

    /// The witness of `shape`, with a, b, c in it (`abc_on_host`) or left to
    /// the prover (a pre-compiled circuit's deferred witness: the
    /// assignments and densities alone), and `working_set` beside it.
    pub fn of_witness(shape: &CircuitShape, abc_on_host: bool, working_set: u64) -> Self {
        let constraints = if abc_on_host {
            shape.num_constraints as u64
        } else {
            0
        };
        let inputs = shape.num_inputs as u64;
        let aux = shape.num_aux as u64;
        let words = |bits: u64| bits.div_ceil(64) * 8;
        let witness = (3 * constraints + inputs + aux) * FR_BYTES + 2 * words(aux) + words(inputs);
        PartitionFootprint {
            witness,
            working_set,
        }
    }

    /// [`PartitionFootprint::of_witness`] for a deferred witness whose aux
    /// values are held compact (a 2-bit class per value and about `others`
    /// values in full: `cuzk_synth::precompiled::CompactAux`), for a source
    /// that knows its share of values other than 0 and 1.
    pub fn of_compact_witness(shape: &CircuitShape, others: usize, working_set: u64) -> Self {
        let inputs = shape.num_inputs as u64;
        let aux = shape.num_aux as u64;
        let words = |bits: u64| bits.div_ceil(64) * 8;
        let compact = cuzk_synth::precompiled::CompactAux::bytes_for(shape.num_aux, others) as u64;
        PartitionFootprint {
            witness: inputs * FR_BYTES + compact + 2 * words(aux) + words(inputs),
            working_set,
        }
    }

    /// Everything: what a partition reserves before synthesis.
    pub fn total(&self) -> u64 {
        self.witness + self.working_set
    }
}

/// The prover backends of an engine's devices, which size what a partition
/// reserves beside its witness, and the devices' admissions, which say
/// whether a partition can fit on them at all.
#[derive(Clone)]
pub struct Provers(
    Vec<Arc<dyn Backend>>,
    Vec<(String, Arc<dyn crate::Admission>)>,
);

impl Provers {
    /// Every backend of every device of `config`.
    pub fn of(config: &EngineConfig) -> Self {
        Provers(
            config
                .devices
                .iter()
                .flat_map(|d| d.backends.iter().cloned())
                .collect(),
            config
                .devices
                .iter()
                .map(|d| (d.name.clone(), Arc::clone(&d.admission)))
                .collect(),
        )
    }

    /// What a partition of `shape` reserves: its witness and the largest
    /// working set among the provers (the CPU's for a CPU device; nothing for
    /// a GPU, which computes in VRAM). A partition moved to the fallback asks
    /// for the fallback's working set then ([`crate::Reservation::grow`]).
    pub fn footprint(&self, shape: &CircuitShape) -> PartitionFootprint {
        self.footprint_of(shape, false)
    }

    /// [`Provers::footprint`] of a source whose witnesses leave a, b, c to
    /// the prover when `defers_abc` (the working set is the same: a CPU
    /// prover evaluates them into its padded vectors, a GPU in VRAM).
    pub fn footprint_of(&self, shape: &CircuitShape, defers_abc: bool) -> PartitionFootprint {
        PartitionFootprint::of_witness(shape, !defers_abc, self.working_set(shape))
    }

    /// [`Provers::footprint`] of a source whose witnesses defer a, b, c and
    /// hold their aux values compact with about `others` values other than
    /// 0 and 1 ([`crate::PartitionSource::compact_others`]).
    pub fn footprint_compact(&self, shape: &CircuitShape, others: usize) -> PartitionFootprint {
        PartitionFootprint::of_compact_witness(shape, others, self.working_set(shape))
    }

    /// The largest working set among the provers for `shape`.
    fn working_set(&self, shape: &CircuitShape) -> u64 {
        self.0
            .iter()
            .map(|b| b.host_working_set(shape))
            .max()
            .unwrap_or_else(|| cuzk_groth16::prover::cpu_host_working_set(shape))
    }

    /// The first device on which a partition of `shape` can never fit,
    /// with its admission's reason.
    pub fn device_too_small(
        &self,
        shape: &CircuitShape,
    ) -> Option<(String, crate::AdmissionError)> {
        self.1
            .iter()
            .find_map(|(name, a)| a.check(shape).err().map(|e| (name.clone(), e)))
    }
}

impl fmt::Debug for Provers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|b| b.name()))
            .finish()
    }
}

/// The bytes a synthesized witness actually holds (vector capacities, not
/// lengths: that is what the allocator gave out), compact aux values
/// included. A partition's reservation comes down to this right after
/// synthesis, so a compact witness (a 32 GiB PoRep partition's: ~0.09 GB
/// instead of 4.2) holds only that while it waits for a prover.
pub fn witness_bytes(w: &Synthesized) -> u64 {
    let frs = w.a.capacity()
        + w.b.capacity()
        + w.c.capacity()
        + w.input_assignment.capacity()
        + w.aux_assignment.capacity();
    let bits = |d: &cuzk_synth::Density| (d.as_words().len() * 8) as u64;
    let compact = w
        .compact_aux
        .as_ref()
        .map_or(0, |c| c.capacity_bytes() as u64);
    frs as u64 * FR_BYTES
        + compact
        + bits(&w.a_aux_density)
        + bits(&w.b_aux_density)
        + bits(&w.b_input_density)
}

/// Host memory outside the partitions that something else borrows from the
/// engine's budget without waiting (cuzk-sched's `HostLender` is one): a GPU
/// backend's recording pinned for streaming, counted where the partitions
/// are.
pub trait HostBudget: Send + Sync {
    /// A loan of `bytes`, held for as long as the returned value lives, or
    /// `None` when the budget has no room for it now. Never waits (it is
    /// asked from a prover thread, beside that thread's own partition).
    fn try_borrow(&self, bytes: u64) -> Option<Box<dyn Send + Sync>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_synth::{synthesize_with_capacity, DemoCircuit};

    #[test]
    fn the_estimate_covers_a_presized_witness_exactly() {
        for k in [4, 10] {
            let circuit = DemoCircuit::new(k, 0.95, 1);
            let shape = circuit.shape();
            let w = synthesize_with_capacity(circuit, &shape).unwrap();
            let estimate = PartitionFootprint::cpu(&shape);
            // Density bitmaps may round up to a word more than the estimate
            // when their capacity was reserved in whole words already.
            let actual = witness_bytes(&w);
            assert!(
                actual <= estimate.witness + 24,
                "k={k}: {actual} > {}",
                estimate.witness
            );
            assert!(actual + 64 >= estimate.witness, "k={k}: estimate too high");
            assert_eq!(estimate.working_set, 3 * (1 << k) * 32);
        }
    }

    #[test]
    fn a_compact_witness_holds_its_compact_bytes() {
        use cuzk_synth::precompiled::{record, witness, CompactWitness, DeferredAbc};
        // 2^15: one SHA-256 block (bits) and a chain.
        let circuit = DemoCircuit::new(15, 0.95, 3);
        let shape = circuit.shape();
        let r1cs = record(circuit.clone()).unwrap();
        let deferred = DeferredAbc::new(r1cs.content_id(), Arc::new(r1cs));
        let plain = witness(circuit).unwrap();
        let compact = CompactWitness::from_witness(&plain);
        let others = compact.aux.others().len();
        let mut w = deferred.synthesized_compact(compact).unwrap();
        w.input_assignment.shrink_to_fit();
        let estimate = PartitionFootprint::of_compact_witness(&shape, others, 0);
        let actual = witness_bytes(&w);
        assert!(
            actual <= estimate.witness + 24 && actual + 64 >= estimate.witness,
            "{actual} against {}",
            estimate.witness
        );
        let full = PartitionFootprint::of_witness(&shape, false, 0).witness;
        // 2^15: one SHA-256 block's bits and a multiplication chain's
        // values (others): a third of the plain bytes.
        assert!(
            actual * 2 < full,
            "a demo witness (mostly SHA-256 bits) held compact: {actual} of {full} bytes"
        );
    }

    #[test]
    fn a_deferred_witness_is_estimated_without_a_b_c() {
        use cuzk_synth::precompiled::{record, witness, DeferredAbc};
        let circuit = DemoCircuit::new(10, 0.95, 2);
        let shape = circuit.shape();
        let r1cs = record(circuit.clone()).unwrap();
        let deferred = DeferredAbc::new(r1cs.content_id(), Arc::new(r1cs));
        let mut w = deferred.synthesized(witness(circuit).unwrap()).unwrap();
        // Exactly sized, as a pre-sized witness is (this one grew by doubling).
        w.input_assignment.shrink_to_fit();
        w.aux_assignment.shrink_to_fit();
        let estimate = PartitionFootprint::of_witness(&shape, false, 0);
        let actual = witness_bytes(&w);
        assert!(
            actual <= estimate.witness + 24,
            "{actual} > {}",
            estimate.witness
        );
        assert!(actual + 64 >= estimate.witness, "estimate too high");
        let host = PartitionFootprint::cpu(&shape).witness;
        assert_eq!(
            host - estimate.witness,
            3 * shape.num_constraints as u64 * 32
        );
    }
}
