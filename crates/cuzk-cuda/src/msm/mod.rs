//! Multi-scalar multiplication (Pippenger) for G1 and G2, batch summation of
//! the points whose scalar is one, and scalar classification, on the GPU
//! (kernels/msm/).
//!
//! Inputs stay in device memory: bases as [`G1AffineLimbs`] / [`G2AffineLimbs`]
//! (infinity = all-zero limbs, skipped), scalars as [`FrLimbs`] (Montgomery
//! form, converted on the device). Results come back as blstrs projective
//! points.
//!
//! [`G1AffineLimbs`]: cuzk_field::limbs::G1AffineLimbs
//! [`G2AffineLimbs`]: cuzk_field::limbs::G2AffineLimbs
//! [`FrLimbs`]: cuzk_field::limbs::FrLimbs
//!
//! **Pippenger** ([`Msm`]): signed c-bit digits (|d| ≤ 2^(c−1), the point is
//! negated for negative digits), all ⌈256/c⌉ windows at once:
//! 1. a sort of the (bucket, point) pairs by bucket ([`BucketSort`]): for
//!    small MSMs a counting sort (histogram with warp-aggregated atomics,
//!    exclusive scan, scatter through atomic cursors), for large ones an LSD
//!    radix sort over 8-bit digits (no global atomics per pair);
//! 2. bucket accumulation with the sorted pairs cut into equal chunks, one per
//!    thread, however the buckets are sized (PoRep scalars repeat, so some
//!    buckets are huge); runs that straddle chunks are merged level by level;
//! 3. per window Σ_b b·B_b by running sums over segments of buckets, one
//!    thread per segment, then a tree sum per window and Horner over windows.
//!
//! **Kept buckets** ([`KeptBuckets`]): one MSM summed over several calls
//! (a streamed key's H section, chunk by chunk) at the whole section's
//! window, its buckets kept between calls and reduced once
//! ([`Msm::with_kept_window`], [`Msm::enqueue_kept`], [`Msm::finish_kept`];
//! [`choose_kept_window_bits`] picks c under a byte budget).
//!
//! **Shifted bases** ([`ShiftedBases`]): for resident bases, precomputed
//! copies 2^(c·S·k)·P let the W windows share S bucket sets (one reduction
//! per set instead of per window), so a larger c pays; [`Msm::for_shifted`]
//! and [`Msm::enqueue_shifted`] run over them, [`choose_shifted_shape`]
//! picks (c, S) under a byte budget. Same results as the plain MSM.
//!
//! The window size c comes from [`choose_window_bits`]: a cost model
//! (n·⌈256/c⌉ mixed additions for the buckets, ≈3 additions per bucket for the
//! reduction) minimized under the memory budget; an [`Msm::new`] sized for n
//! pairs runs a shorter call under the window chosen for that call's length
//! when its scratch holds the plan. Nothing is synchronized between
//! launches: the sort's total is read on the device.
//!
//! **Batch sums** ([`BatchSum`]): Σ P_i over a bitmap (bit i of word i/64,
//! LSB first) or an index list; each thread accumulates in XYZZ, then a tree.
//!
//! **Classification** ([`Classifier`]): zero / one / other per scalar, with the
//! ones' and others' indices compacted in increasing order, so a prover
//! skips zeros, batch-sums ones and runs Pippenger over the others only
//! ([`Msm::run_indexed`] takes that index list directly).
//!
//! Scratch memory is allocated once per [`Msm`] / [`BatchSum`] /
//! [`Classifier`] and reused by every call.
//!
//! One file per concern: [`curve`] (the [`MsmCurve`] trait, [`G1`], [`G2`]
//! and their kernel-name tables), [`plan`] (window choice, memory and launch
//! shape: arithmetic over sizes), `shifted` ([`ShiftedBases`]), `kept_buckets`
//! ([`KeptBuckets`]), `pippenger` ([`Msm`]: accumulation,
//! reduction and the host Horner), `bucket_sort` (step 1, both sorts),
//! `batch_sum` ([`BatchSum`] and the tree sums), `classify` ([`Classifier`])
//! and [`data`] (benchmark and test inputs made on the device). The prefix
//! sum this module shares with `gather` is `crate::scan`.

mod batch_sum;
mod bucket_sort;
mod classify;
pub mod curve;
pub mod data;
mod kept_buckets;
mod pippenger;
pub mod plan;
mod shifted;

pub use batch_sum::BatchSum;
pub use bucket_sort::BucketSort;
pub use classify::{ClassCounts, Classifier};
pub use curve::{MsmCurve, G1, G2};
pub use kept_buckets::KeptBuckets;
pub use pippenger::{Msm, MsmPhases};
pub use plan::{
    choose_kept_window_bits, choose_shifted_shape, choose_window_bits, copies_for, scratch_bytes,
    shifted_scratch_bytes, windows_for, MsmPlan,
};
pub use shifted::ShiftedBases;

/// Smallest and largest window sizes the kernels support (bucket keys are
/// u32 and digits are extracted 31 bits at a time).
pub const MIN_WINDOW_BITS: u32 = 2;
/// Largest window size the kernels support.
pub const MAX_WINDOW_BITS: u32 = 24;

/// Most pairs one MSM takes: entries carry the point index in 31 bits.
pub const MAX_LEN: usize = 1 << 31;
