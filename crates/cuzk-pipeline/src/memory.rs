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
//! needs headroom kept back per prover worker to be deadlock-free. For the GPU
//! the working set lives in VRAM and the arena's admission accounts for it.

/// Bytes as a short figure for messages (cuzk-arena's, the one formatter).
pub use cuzk_arena::human;
use cuzk_synth::{CircuitShape, Synthesized};

/// Bytes of one `Fr` in a `Vec<Fr>` (four 64-bit limbs, Montgomery form).
const FR_BYTES: u64 = 32;

/// A partition's host-memory needs, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// * working set: the H polynomial needs a, b, c padded to the domain
    ///   size n at once (3n `Fr`; afterwards only h, n − 1 `Fr`, is kept); the
    ///   density-gathered scalars of A and B come after h is freed. The peak
    ///   is the larger of the two. blst's Pippenger scratch (a few MiB) is
    ///   not counted.
    pub fn cpu(shape: &CircuitShape) -> Self {
        let constraints = shape.num_constraints as u64;
        let inputs = shape.num_inputs as u64;
        let aux = shape.num_aux as u64;
        let words = |bits: u64| bits.div_ceil(64) * 8;
        let witness = (3 * constraints + inputs + aux) * FR_BYTES + 2 * words(aux) + words(inputs);
        let n = 1u64 << shape.domain_log2;
        let gathered = (inputs + shape.a_aux_density as u64)
            + (shape.b_input_density + shape.b_aux_density) as u64;
        let working_set = (3 * n).max(gathered) * FR_BYTES;
        PartitionFootprint {
            witness,
            working_set,
        }
    }

    /// Everything: what a partition reserves before synthesis.
    pub fn total(&self) -> u64 {
        self.witness + self.working_set
    }
}

/// The bytes a synthesized witness actually holds (vector capacities, not
/// lengths: that is what the allocator gave out).
pub fn witness_bytes(w: &Synthesized) -> u64 {
    let frs = w.a.capacity()
        + w.b.capacity()
        + w.c.capacity()
        + w.input_assignment.capacity()
        + w.aux_assignment.capacity();
    let bits = |d: &cuzk_synth::Density| (d.as_words().len() * 8) as u64;
    frs as u64 * FR_BYTES
        + bits(&w.a_aux_density)
        + bits(&w.b_aux_density)
        + bits(&w.b_input_density)
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
}
