//! What a partition and its key look like, in counts: the planner's input.

use cuzk_cuda::abc::PINNED_SETS;
use cuzk_synth::CircuitShape;

use super::{G1_BYTES, G2_BYTES};

/// What a partition and its key look like, in counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// The evaluation domain's size n (a power of two).
    pub domain: usize,
    /// Points per key section.
    pub h: usize,
    /// Points of L (one per private variable).
    pub l: usize,
    /// Points of A in G1.
    pub a: usize,
    /// Points of B in G1.
    pub b_g1: usize,
    /// Points of B in G2.
    pub b_g2: usize,
    /// Aux variables of the witness (the L MSM's length).
    pub aux: usize,
    /// `Some`: a, b, c are evaluated on the device from resident matrices.
    pub device_abc: Option<DeviceAbc>,
}

/// a, b, c computed on the device: the matrices' bytes, the witness's
/// length, and whether the matrices are resident or streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAbc {
    /// Device bytes of the recording's matrices and coefficient table
    /// (cuzk-cuda `abc::device_bytes`).
    pub matrix_bytes: u64,
    /// Length of z = (inputs, aux).
    pub z: usize,
    /// Entries of the coefficient table.
    pub coeffs: usize,
    /// Terms of the largest of A, B and C (a streamed chunk never needs
    /// more).
    pub terms: usize,
    /// `Some(terms)`: the matrices stay on the host and cross PCIe in chunks
    /// of up to this many terms (the plan's choice when they do not fit
    /// beside the key); `None`: resident.
    pub stream_terms: Option<usize>,
}

/// Terms per chunk when the matrices are streamed (fewer for small
/// matrices: [`DeviceAbc::chunk_terms`]): 16 Mi terms, 192 MiB of device
/// buffers per chunk (offsets, columns, ids) and two chunks' worth, a few
/// dozen chunks per 2^27 partition.
pub const STREAM_TERMS: usize = 1 << 24;

impl DeviceAbc {
    /// Terms per chunk when these matrices stream: [`STREAM_TERMS`], or a
    /// sixteenth of the longest matrix when that is less. Up to
    /// [`PINNED_SETS`] chunks' buffers are made (the copies run that far
    /// ahead of the SpMV), 12 bytes a term each: at half the longest
    /// matrix's terms they stay below the matrices' own bytes (≥ 6 bytes a
    /// term in each of three matrices), so streaming never asks for more
    /// than keeping them resident would.
    pub fn chunk_terms(&self) -> usize {
        STREAM_TERMS
            .min(self.terms.div_ceil(2 * PINNED_SETS))
            .max(1)
    }
}

impl Shape {
    /// The key counts and witness length a circuit of this shape has: the one
    /// place that derives a plan's shape (from a synthesized witness's
    /// `Synthesized::shape`, or a circuit's before synthesis). H has n − 1
    /// points; A one per input and per aux variable in A's density; B₁ and B₂
    /// one per input and aux variable in B's density; L one per aux variable.
    pub fn of_circuit(c: &CircuitShape) -> Shape {
        let n = 1usize << c.domain_log2;
        let b = c.b_input_density + c.b_aux_density;
        Shape {
            domain: n,
            h: n - 1,
            l: c.num_aux,
            a: c.num_inputs + c.a_aux_density,
            b_g1: b,
            b_g2: b,
            aux: c.num_aux,
            device_abc: None,
        }
    }

    /// The shape of the partitions `key` proves, from its sections' lengths
    /// alone (a, b, c from the host): what decides whether a device keeps
    /// the key resident or streams it, before any witness is there.
    pub fn of_key(key: &cuzk_groth16::ProvingKey) -> Shape {
        Shape {
            domain: (key.h.len() + 1).next_power_of_two(),
            h: key.h.len(),
            l: key.l.len(),
            a: key.a.len(),
            b_g1: key.b_g1.len(),
            b_g2: key.b_g2.len(),
            aux: key.l.len(),
            device_abc: None,
        }
    }

    /// This shape with a, b, c evaluated on the device from resident
    /// matrices of `matrix_bytes` with a table of `coeffs` (z is the
    /// circuit's inputs and aux).
    pub fn with_device_abc(
        self,
        c: &CircuitShape,
        matrix_bytes: u64,
        coeffs: usize,
        terms: usize,
    ) -> Shape {
        Shape {
            device_abc: Some(DeviceAbc {
                matrix_bytes,
                z: c.num_inputs + c.num_aux,
                coeffs,
                terms,
                stream_terms: None,
            }),
            ..self
        }
    }

    /// Bytes of the key's points (the SRS).
    pub fn srs_bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b_g1) as u64 * G1_BYTES + self.b_g2 as u64 * G2_BYTES
    }

    /// The longest MSM of a partition.
    pub fn longest_msm(&self) -> usize {
        [self.h, self.l, self.a, self.b_g1, self.b_g2, self.aux]
            .into_iter()
            .max()
            .unwrap_or(0)
    }
}
