//! What each part of the demo circuit adds to its shape (constraints,
//! inputs, aux variables, A/B densities), from the gadgets' measured costs:
//! the arithmetic behind `DemoCircuit::shape` without synthesizing.

use super::*;

/// What one part of the circuit adds to its shape, before the ONE input and
/// the appended input constraints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PartCounts {
    pub(super) constraints: usize,
    /// Inputs, ONE excluded.
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) a_aux: usize,
    /// Set B-input density bits, ONE's included.
    pub(super) b_input: usize,
    pub(super) b_aux: usize,
}

impl PartCounts {
    pub(super) fn plus(self, o: Self) -> Self {
        Self {
            constraints: self.constraints + o.constraints,
            inputs: self.inputs + o.inputs,
            aux: self.aux + o.aux,
            a_aux: self.a_aux + o.a_aux,
            b_input: self.b_input + o.b_input,
            b_aux: self.b_aux + o.b_aux,
        }
    }

    pub(super) fn minus(self, o: Self) -> Self {
        Self {
            constraints: self.constraints - o.constraints,
            inputs: self.inputs - o.inputs,
            aux: self.aux - o.aux,
            a_aux: self.a_aux - o.a_aux,
            b_input: self.b_input - o.b_input,
            b_aux: self.b_aux - o.b_aux,
        }
    }

    pub(super) fn times(self, n: usize) -> Self {
        Self {
            constraints: self.constraints * n,
            inputs: self.inputs * n,
            aux: self.aux * n,
            a_aux: self.a_aux * n,
            b_input: self.b_input * n,
            b_aux: self.b_aux * n,
        }
    }
}

/// The multiplication lanes of `len >= 1` steps in all: per lane, `x_0`, the
/// `y_i` and the inner `x_i` are aux (`2 len` in all); each `x_i` (i < len)
/// is in one A, each `y_i` in one B; each lane's last product is an input,
/// only in C.
pub(super) fn chain_counts(len: usize) -> PartCounts {
    PartCounts {
        constraints: len,
        inputs: len.div_ceil(CHAIN_LANE_STEPS),
        aux: 2 * len,
        a_aux: len,
        b_input: 0,
        b_aux: len,
    }
}

/// The number of multiplication steps whose constraints plus appended input
/// constraints (one per lane) are exactly `room >= 2`.
pub(super) fn chain_len_filling(room: usize) -> usize {
    let used = |len: usize| len + len.div_ceil(CHAIN_LANE_STEPS);
    // Every lane but the last holds CHAIN_LANE_STEPS + 1 constraints.
    let mut len = room - room.div_ceil(CHAIN_LANE_STEPS + 1);
    while used(len) > room {
        len -= 1;
    }
    while used(len + 1) <= room {
        len += 1;
    }
    debug_assert_eq!(used(len), room, "a lane of one step always fits");
    len
}

/// The SHA lanes of `blocks` blocks in all, packing included.
pub(super) fn sha_counts(blocks: usize) -> PartCounts {
    let full = blocks / SHA_LANE_BLOCKS;
    let rest = blocks % SHA_LANE_BLOCKS;
    let mut counts = sha_lane_counts(SHA_LANE_BLOCKS)
        .times(full)
        .plus(sha_lane_counts(rest));
    // A lane's only B-input bit is ONE's, which every lane shares.
    counts.b_input = sha_lane_counts(blocks.min(1)).b_input;
    counts
}

/// One SHA lane of `blocks <= SHA_LANE_BLOCKS` blocks, packing included.
///
/// Measured by synthesis for up to 3 blocks, then extrapolated: the first
/// block is cheaper (its state is the constant IV, which the gadgets fold),
/// the last one's outputs feed the packing, and every block in between is
/// identical, so from 2 blocks on each extra block adds exactly what the third
/// did. `demo_shape_for_matches_synthesis` checks this against synthesis.
pub(super) fn sha_lane_counts(blocks: usize) -> PartCounts {
    static MEASURED: OnceLock<[PartCounts; 4]> = OnceLock::new();
    let measured = MEASURED.get_or_init(|| {
        [0, 1, 2, 3].map(|blocks| {
            if blocks == 0 {
                return PartCounts::default();
            }
            let mut cs = crate::ProvingAssignment::new();
            cs.alloc_input(|| "one", || Ok(Fr::ONE))
                .and_then(|_| synthesize_sha_lane(&mut cs, blocks, stream_rng(0, 0)))
                .expect("the SHA gadgets synthesize with supplied values");
            let shape = cs.finish().shape();
            PartCounts {
                constraints: shape.num_constraints - shape.num_inputs,
                inputs: shape.num_inputs - 1,
                aux: shape.num_aux,
                a_aux: shape.a_aux_density,
                b_input: shape.b_input_density,
                b_aux: shape.b_aux_density,
            }
        })
    });
    match blocks {
        0..=3 => measured[blocks],
        _ => measured[2].plus(measured[3].minus(measured[2]).times(blocks - 2)),
    }
}
