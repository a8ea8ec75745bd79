//! Demo circuits of an exact power-of-two size, built from real bellperson
//! gadgets, for tests and benchmarks.
//!
//! A [`DemoCircuit`] of size `2^k` is a sequence of independent *lanes*:
//!
//! 1. SHA-256 lanes: each a chain of at most [`SHA_LANE_BLOCKS`]
//!    compression blocks
//!    (`bellperson::gadgets::sha256::sha256_compression_function`) over
//!    random 512-bit message blocks allocated as boolean witnesses, starting
//!    from the SHA-256 IV; the lane's final 256-bit state is exposed as two
//!    public inputs with `multipack::pack_into_inputs`. This is the "mostly
//!    bits" witness PoRep produces.
//! 2. multiplication lanes: each a chain `x_{i+1} = x_i * y_i` (one
//!    constraint per step) of at most [`CHAIN_LANE_STEPS`] steps over
//!    full-width random field elements; the lane's last product is a public
//!    input. Their total length fills the circuit to exactly `2^k`
//!    constraints, counting the `input_i * 0 = 0` constraints the prover
//!    appends.
//!
//! The SHA part gets as many whole blocks as fit in `sha_share * 2^k`
//! constraints. A lane's first block costs 26,352 constraints (the constant IV
//! makes it cheaper), each further one 26,704, packing the state 2 more; so
//! below `2^15` (at the default share of 0.95) there is no SHA block and the
//! circuit is only the multiplication chain. At `2^24` and 0.95 it is 597
//! blocks in 38 SHA lanes and 13 multiplication lanes.
//!
//! Lanes share no variable, so a constraint system that is extensible
//! (`ConstraintSystem::is_extensible`, as cuzk's and bellperson's proving
//! assignments are) gets each lane synthesized on its own rayon task and joined
//! in order with `ConstraintSystem::extend`; any other (a key generator)
//! synthesizes them one after the other. Both give the same circuit: that is
//! the contract of `extend`, and `parallel_and_sequential_synthesis_agree`
//! checks it. A circuit with one lane of each kind (up to 16 blocks and 65,536
//! steps, so every size up to `2^18` at the default share) is the single-chain
//! circuit of cuzk's first sessions, bit for bit.
//!
//! Witnesses come from ChaCha20 seeded with `seed`, one stream per lane (SHA
//! lane `l` on stream `2l`, multiplication lane `l` on stream `2l + 1`),
//! drawn while synthesizing, so a circuit object is a few bytes even at
//! `2^27`. Different seeds give different witnesses of the same shape, hence
//! one proving key serves them all. Values are always supplied; the key
//! generator simply ignores them.

use std::sync::OnceLock;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use crate::assignment::{domain_log2, CircuitShape};
use crate::native::sha256;
use crate::precompiled::Witness;

mod counts;
use counts::*;

/// SHA-256 initial hash value (FIPS 180-4, section 5.3.3).
const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Most compression blocks in one SHA-256 lane.
pub const SHA_LANE_BLOCKS: usize = 16;
/// Most steps in one multiplication lane.
pub const CHAIN_LANE_STEPS: usize = 1 << 16;

/// ChaCha20 stream of SHA lane `lane`'s message blocks.
fn sha_stream(lane: usize) -> u64 {
    2 * lane as u64
}

/// ChaCha20 stream of multiplication lane `lane`.
fn chain_stream(lane: usize) -> u64 {
    2 * lane as u64 + 1
}

/// A SHA-256 + multiplication-chain circuit with exactly `2^log_size`
/// constraints; see the [module documentation](self).
#[derive(Debug, Clone, PartialEq)]
pub struct DemoCircuit {
    log_size: u32,
    sha_share: f64,
    seed: u64,
    plan: DemoPlan,
    /// Lanes on rayon tasks when the system is extensible.
    parallel: bool,
}

/// How a [`DemoCircuit`] of a given size and SHA share is made up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoPlan {
    /// SHA-256 compression blocks (0 when none fits), over
    /// `ceil(sha_blocks / SHA_LANE_BLOCKS)` lanes.
    pub sha_blocks: usize,
    /// Multiplication steps, one constraint each (at least 1), over
    /// `ceil(chain_len / CHAIN_LANE_STEPS)` lanes.
    pub chain_len: usize,
}

impl DemoPlan {
    /// SHA-256 lanes.
    pub fn sha_lanes(&self) -> usize {
        self.sha_blocks.div_ceil(SHA_LANE_BLOCKS)
    }

    /// Multiplication lanes.
    pub fn chain_lanes(&self) -> usize {
        self.chain_len.div_ceil(CHAIN_LANE_STEPS)
    }

    /// The lanes in synthesis order: every SHA lane, then every
    /// multiplication lane; all full but the last of each kind.
    fn lanes(&self) -> Vec<Lane> {
        let split = |total: usize, per: usize| {
            (0..total.div_ceil(per)).map(move |l| (l, per.min(total - l * per)))
        };
        split(self.sha_blocks, SHA_LANE_BLOCKS)
            .map(|(lane, blocks)| Lane::Sha { lane, blocks })
            .chain(
                split(self.chain_len, CHAIN_LANE_STEPS)
                    .map(|(lane, steps)| Lane::Chain { lane, steps }),
            )
            .collect()
    }
}

/// One independent piece of a demo circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// `blocks >= 1` compression blocks from the IV, the state packed into
    /// two inputs.
    Sha { lane: usize, blocks: usize },
    /// `steps >= 1` multiplications, the last product an input.
    Chain { lane: usize, steps: usize },
}

impl Lane {
    fn synthesize<CS: ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
        seed: u64,
    ) -> Result<(), SynthesisError> {
        match self {
            Lane::Sha { lane, blocks } => synthesize_sha_lane(
                cs.namespace(|| format!("sha {lane}")),
                blocks,
                stream_rng(seed, sha_stream(lane)),
            ),
            Lane::Chain { lane, steps } => synthesize_mul_lane(
                cs.namespace(|| format!("mul {lane}")),
                steps,
                ChainWitness::new(seed, lane),
            ),
        }
    }
}

impl DemoCircuit {
    /// The share of constraints given to SHA-256 unless told otherwise:
    /// PoRep-like, mostly-bit witnesses.
    pub const DEFAULT_SHA_SHARE: f64 = 0.95;
    /// Smallest supported `log_size`: the ONE input, the chain's output and
    /// one multiplication need 3 constraints.
    pub const MIN_LOG_SIZE: u32 = 2;
    /// Largest supported `log_size`: bellperson's evaluation domain needs
    /// `k < 32`, Fr's two-adicity.
    pub const MAX_LOG_SIZE: u32 = 31;

    /// A circuit of exactly `2^log_size` constraints, giving about
    /// `sha_share` of them to SHA-256, with witnesses drawn from `seed`.
    ///
    /// # Panics
    ///
    /// If `log_size` is outside `MIN_LOG_SIZE..=MAX_LOG_SIZE` or `sha_share`
    /// is not in `[0, 1]`.
    pub fn new(log_size: u32, sha_share: f64, seed: u64) -> Self {
        Self {
            log_size,
            sha_share,
            seed,
            plan: Self::plan_for(log_size, sha_share),
            parallel: true,
        }
    }

    /// The same circuit, whose lanes are synthesized one after the other on
    /// the calling thread even on an extensible system: the cost profile of a
    /// circuit whose synthesis is single-threaded, such as Filecoin's PoRep
    /// (one partition per core). The witness is the same.
    pub fn in_sequence(mut self) -> Self {
        self.parallel = false;
        self
    }

    /// Whether an extensible system synthesizes the lanes in parallel.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// How a circuit of this size and share is made up (cheap: after the
    /// first call, which synthesizes a few SHA blocks once to count them).
    ///
    /// # Panics
    ///
    /// As [`DemoCircuit::new`].
    pub fn plan_for(log_size: u32, sha_share: f64) -> DemoPlan {
        assert!(
            (Self::MIN_LOG_SIZE..=Self::MAX_LOG_SIZE).contains(&log_size),
            "log_size {log_size} outside {}..={}",
            Self::MIN_LOG_SIZE,
            Self::MAX_LOG_SIZE
        );
        assert!(
            (0.0..=1.0).contains(&sha_share),
            "sha_share {sha_share} outside [0, 1]"
        );
        let total = 1usize << log_size;
        // Truncation is the intent: SHA gets at most this many constraints.
        let budget = (sha_share * total as f64) as usize;
        // Constraints outside the multiplication lanes: SHA's, plus one
        // `input_i * 0 = 0` per input (ONE and SHA's).
        let fixed = |sha: PartCounts| sha.constraints + 1 + sha.inputs;
        // The multiplication lanes fill the rest and need at least one step.
        let fits = |blocks: usize| {
            let sha = sha_counts(blocks);
            sha.constraints <= budget && fixed(sha) + 2 <= total
        };
        let mut sha_blocks = 0;
        while fits(sha_blocks + 1) {
            sha_blocks += 1;
        }
        DemoPlan {
            sha_blocks,
            chain_len: chain_len_filling(total - fixed(sha_counts(sha_blocks))),
        }
    }

    /// The shape a circuit of this size and share synthesizes to, without
    /// synthesizing it.
    ///
    /// # Panics
    ///
    /// As [`DemoCircuit::new`].
    pub fn shape_for(log_size: u32, sha_share: f64) -> CircuitShape {
        let plan = Self::plan_for(log_size, sha_share);
        let sha = sha_counts(plan.sha_blocks);
        let chain = chain_counts(plan.chain_len);
        let parts = sha.plus(chain);
        let num_inputs = 1 + parts.inputs;
        let num_constraints = parts.constraints + num_inputs;
        CircuitShape {
            num_constraints,
            num_inputs,
            num_aux: parts.aux,
            a_aux_density: parts.a_aux,
            b_input_density: parts.b_input,
            b_aux_density: parts.b_aux,
            domain_log2: domain_log2(num_constraints),
        }
    }

    /// This circuit's shape; see [`DemoCircuit::shape_for`].
    pub fn shape(&self) -> CircuitShape {
        Self::shape_for(self.log_size, self.sha_share)
    }

    /// `log2` of the number of constraints.
    pub fn log_size(&self) -> u32 {
        self.log_size
    }

    /// The requested share of SHA-256 constraints.
    pub fn sha_share(&self) -> f64 {
        self.sha_share
    }

    /// The witness seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// How this circuit is made up.
    pub fn plan(&self) -> DemoPlan {
        self.plan
    }

    /// The public inputs a verifier needs, ONE excluded, in lane order: the
    /// packed SHA-256 state of every SHA lane (two elements each), then the
    /// last product of every multiplication lane. Computed natively; costs
    /// one field multiplication and one random draw per chain step.
    pub fn public_inputs(&self) -> Vec<Fr> {
        self.plan
            .lanes()
            .par_iter()
            .flat_map_iter(|&lane| match lane {
                Lane::Sha { lane, blocks } => {
                    let state = native_sha_state(blocks, stream_rng(self.seed, sha_stream(lane)));
                    let bytes: Vec<u8> = state.iter().flat_map(|w| w.to_be_bytes()).collect();
                    multipack::compute_multipacking::<Fr>(&multipack::bytes_to_bits(&bytes))
                }
                Lane::Chain { lane, steps } => {
                    let mut chain = ChainWitness::new(self.seed, lane);
                    let mut product = chain.x;
                    for _ in 0..steps {
                        product = chain.step().1;
                    }
                    vec![product]
                }
            })
            .collect()
    }
}

impl DemoCircuit {
    /// The witness (inputs and aux, in allocation order) that synthesizing
    /// this circuit records, computed natively: the SHA-256 lanes through
    /// [`crate::native::sha256`], the multiplication lanes by plain field
    /// multiplication, lanes in parallel on rayon. With the circuit's
    /// recording ([`crate::precompiled::record`]) it gives the full
    /// synthesis's [`crate::Synthesized`], bit for bit, without running a
    /// gadget.
    pub fn native_witness(&self) -> Witness {
        let lanes = self.plan.lanes();
        let seed = self.seed;
        let parts: Vec<Witness> = lanes
            .par_iter()
            .map(|&lane| match lane {
                Lane::Sha { lane, blocks } => {
                    native_sha_lane(blocks, stream_rng(seed, sha_stream(lane)))
                }
                Lane::Chain { lane, steps } => {
                    native_mul_lane(steps, ChainWitness::new(seed, lane))
                }
            })
            .collect();
        let aux_len = parts.iter().map(|p| p.aux_assignment.len()).sum();
        let mut witness = Witness {
            input_assignment: vec![Fr::ONE],
            aux_assignment: Vec::with_capacity(aux_len),
        };
        for part in parts {
            witness
                .input_assignment
                .extend_from_slice(&part.input_assignment);
            witness
                .aux_assignment
                .par_extend(part.aux_assignment.into_par_iter());
        }
        witness
    }
}

/// A SHA lane's witness (inputs without ONE), as [`synthesize_sha_lane`]
/// allocates it: per block the 512 message bits, then the compression's
/// bits; at the end the two packed state inputs.
fn native_sha_lane(blocks: usize, mut rng: ChaCha20Rng) -> Witness {
    if blocks == 0 {
        return Witness::default();
    }
    let mut aux = Vec::with_capacity(sha_lane_counts(blocks).aux);
    let mut state = SHA256_IV.map(sha256::Word::constant);
    for _ in 0..blocks {
        let message: Vec<sha256::Bit> = multipack::bytes_to_bits(&next_message_block(&mut rng))
            .into_iter()
            .map(|bit| sha256::Bit::alloc(bit, &mut aux))
            .collect();
        state = sha256::compression(&message, &state, &mut aux);
    }
    let state_bits: Vec<bool> = state
        .into_iter()
        .flat_map(sha256::Word::into_bits_be)
        .map(sha256::Bit::value)
        .collect();
    Witness {
        input_assignment: multipack::compute_multipacking(&state_bits),
        aux_assignment: aux,
    }
}

/// A multiplication lane's witness (inputs without ONE), as
/// [`synthesize_mul_lane`] allocates it: `x_0`, then per step `y_i` and
/// `x_{i+1}`, the last product an input.
fn native_mul_lane(steps: usize, mut chain: ChainWitness) -> Witness {
    let mut aux = Vec::with_capacity(2 * steps);
    aux.push(chain.x);
    let mut product = chain.x;
    for step in 0..steps {
        let (y, next) = chain.step();
        aux.push(y);
        if step + 1 < steps {
            aux.push(next);
        }
        product = next;
    }
    Witness {
        input_assignment: vec![product],
        aux_assignment: aux,
    }
}

impl Circuit<Fr> for DemoCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let lanes = self.plan.lanes();
        if !self.parallel || !CS::Root::is_extensible() || lanes.len() == 1 {
            for lane in lanes {
                lane.synthesize(cs, self.seed)?;
            }
            return Ok(());
        }
        // Each lane on its own system, in parallel, joined in lane order.
        let seed = self.seed;
        crate::synthesize_in_parallel(cs.get_root(), lanes, |lane, part| {
            lane.synthesize(part, seed)
        })
    }
}

fn stream_rng(seed: u64, stream: u64) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

fn next_message_block(rng: &mut ChaCha20Rng) -> [u8; 64] {
    let mut block = [0u8; 64];
    rng.fill_bytes(&mut block);
    block
}

/// `blocks` compression blocks from the IV with message blocks drawn from
/// `rng`, the state exposed with multipack.
fn synthesize_sha_lane<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    blocks: usize,
    mut rng: ChaCha20Rng,
) -> Result<(), SynthesisError> {
    if blocks == 0 {
        return Ok(());
    }
    let mut state: Vec<UInt32> = SHA256_IV.iter().map(|&w| UInt32::constant(w)).collect();
    for block in 0..blocks {
        let mut cs = cs.namespace(|| format!("block {block}"));
        let message = multipack::bytes_to_bits(&next_message_block(&mut rng));
        let bits = message
            .iter()
            .enumerate()
            .map(|(i, &bit)| {
                AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(bit))
                    .map(Boolean::from)
            })
            .collect::<Result<Vec<_>, _>>()?;
        state = sha256_compression_function(cs.namespace(|| "compress"), &bits, &state)?;
    }
    let state_bits: Vec<Boolean> = state.into_iter().flat_map(UInt32::into_bits_be).collect();
    multipack::pack_into_inputs(cs.namespace(|| "state"), &state_bits)
}

/// The chain's witness stream: `x_0`, then `(y_i, x_{i+1})` per step.
struct ChainWitness {
    rng: ChaCha20Rng,
    x: Fr,
}

impl ChainWitness {
    fn new(seed: u64, lane: usize) -> Self {
        let mut rng = stream_rng(seed, chain_stream(lane));
        let x = Fr::random(&mut rng);
        Self { rng, x }
    }

    fn step(&mut self) -> (Fr, Fr) {
        let y = Fr::random(&mut self.rng);
        self.x *= y;
        (y, self.x)
    }
}

/// `x_{i+1} = x_i * y_i` for `len >= 1` steps; the last product is an input.
fn synthesize_mul_lane<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    len: usize,
    mut witness: ChainWitness,
) -> Result<(), SynthesisError> {
    let mut x = cs.alloc(|| "x 0", || Ok(witness.x))?;
    for step in 0..len {
        let (y_value, product) = witness.step();
        let y = cs.alloc(|| format!("y {step}"), || Ok(y_value))?;
        let next = if step + 1 == len {
            cs.alloc_input(|| "product", || Ok(product))?
        } else {
            cs.alloc(|| format!("x {}", step + 1), || Ok(product))?
        };
        cs.enforce(
            || format!("step {step}"),
            |lc| lc + x,
            |lc| lc + y,
            |lc| lc + next,
        );
        x = next;
    }
    Ok(())
}

fn native_sha_state(blocks: usize, mut rng: ChaCha20Rng) -> [u32; 8] {
    let mut state = SHA256_IV;
    for _ in 0..blocks {
        let message = next_message_block(&mut rng);
        let block = sha2::digest::generic_array::GenericArray::clone_from_slice(&message);
        sha2::compress256(&mut state, &[block]);
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha_blocks_from_the_second_on_cost_the_same() {
        let measure = |blocks| {
            let mut cs = crate::ProvingAssignment::new();
            cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
            synthesize_sha_lane(&mut cs, blocks, stream_rng(7, 0)).unwrap();
            cs.finish().shape()
        };
        let [two, three, four] = [2, 3, 4].map(measure);
        assert_eq!(
            three.num_aux - two.num_aux,
            four.num_aux - three.num_aux,
            "aux"
        );
        assert_eq!(
            three.a_aux_density - two.a_aux_density,
            four.a_aux_density - three.a_aux_density,
            "a_aux"
        );
        assert_eq!(
            three.b_aux_density - two.b_aux_density,
            four.b_aux_density - three.b_aux_density,
            "b_aux"
        );
        assert_eq!(
            three.num_constraints - two.num_constraints,
            four.num_constraints - three.num_constraints,
            "constraints"
        );
        let extrapolated = sha_lane_counts(4);
        assert_eq!(extrapolated.aux, four.num_aux);
        assert_eq!(extrapolated.constraints + 3, four.num_constraints);
    }

    #[test]
    fn native_sha_matches_the_standard_for_one_padded_block() {
        // SHA-256("abc") is one compression of the padded block from the IV.
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        block[3] = 0x80;
        block[63] = 24;
        let mut state = SHA256_IV;
        let array = sha2::digest::generic_array::GenericArray::clone_from_slice(&block);
        sha2::compress256(&mut state, &[array]);
        assert_eq!(state[0], 0xba78_16bf);
        assert_eq!(state[7], 0xf200_15ad);
    }
}
