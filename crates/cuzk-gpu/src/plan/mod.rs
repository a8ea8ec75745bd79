//! `VramPlan`: how much device memory one partition needs, stage by stage,
//! and whether the proving key fits beside it.
//!
//! The plan mirrors what `cuzk-gpu` allocates, in this order:
//!
//! | stage        | transient buffers (besides the worker's scratch)              |
//! | ------------ | ------------------------------------------------------------- |
//! | `abc`        | (a, b, c evaluated on the device) z = (inputs, aux), its class bytes, 3 × n scalars |
//! | `h_poly`     | a, b, c: 3 × n scalars (+ z, whose tail is the aux scalars, when `abc` ran) |
//! | `msm_h`      | the H coefficients: n scalars (+ chunk buffers when streamed) |
//! | `msm_l`      | aux scalars (a chunk when streamed)                           |
//! | `msm_a`      | aux + A's dense scalars, gathered on the device (a chunk when streamed) |
//! | `msm_b`      | aux + B's dense scalars, shared by G1 and G2 (a chunk when streamed) |
//!
//! With the key streamed and a, b, c on the device, L, A and B have no
//! stages of their own: their chunks cross PCIe among H's (copy-bound
//! sections beside a compute-bound one, `interleave.rs`) inside `msm_h`,
//! their scalars z's tail (L) or gathered from it a chunk at a time (A, B):
//! [`VramPlan::interleaved`].
//!
//! When a witness leaves a, b, c to the prover (a pre-compiled circuit,
//! cuzk-synth `DeferredAbc`), the recording's matrices are resident beside
//! the key ([`DeviceAbc`]) and a, b, c are computed on the device from z:
//! only z is uploaded, and its aux values stay for L, A and B (with a
//! streamed key too: A's and B's scalars are gathered there, a chunk at a
//! time, so no aux value crosses PCIe twice). A plan that cannot hold the matrices streams
//! them from the host through one chunk's staging (the `abc` stage holds
//! it); one that cannot hold even that evaluates a, b, c on the host
//! instead (and says so).
//!
//! The H polynomial holds a, b and c at once ([`HPoly::Full`]: 3n scalars,
//! 12 GiB at 2^27) unless that does not fit: then [`HPoly::Lean`] folds b
//! into a before c is made (2n scalars), so a 32 GiB partition's H fits a
//! 16 GiB card beside z.
//!
//! Plans are tried in order of speed, the first that fits wins: key
//! resident (matrices resident, then streamed; full H, then lean; a, b, c
//! on the host last), then key streamed in the largest power-of-two chunk
//! down to [`PREFERRED_MIN_CHUNK`] (a, b, c on the device from resident
//! matrices, then from streamed ones, then on the host; for each, the
//! largest chunk first, the full H before the lean one), then smaller
//! chunks down to [`MIN_CHUNK`]. Resident matrices come before the chunk:
//! a smaller chunk costs less than streaming them.
//!
//! The worker's scratch (the G1 and G2 Pippenger scratch, the classifier, the
//! batch sums and the NTT tables) is sized for the longest MSM it runs: the
//! longest section when the key is resident (made once, kept beside every
//! stage), one chunk when streamed. A streamed key's scratch and its ring of
//! chunk buffers are made when the MSMs start and given back when they end,
//! so the plan counts both inside the MSM stages only: the H polynomial (the
//! largest stage on a small card) never has them beside it.
//! The kernels' footprints come in through [`Footprints`] ([`CudaFootprints`]
//! asks cuzk-cuda's bindings), so the plan's arithmetic is tested on any
//! machine. It lives here, beside the allocations it describes (`worker.rs`,
//! `streamed.rs`), so a change to one is seen next to the other.

use std::fmt;

use cuzk_arena::human;
use cuzk_cuda::abc::streamed_bytes;
use cuzk_cuda::gather::RankedBitmap;

use crate::kept::kept_bytes;

/// Bytes of one Fr scalar, one affine G1 point and one affine G2 point.
pub const SCALAR_BYTES: u64 = 32;
/// Bytes of one affine G1 point (uncompressed, Montgomery limbs).
pub const G1_BYTES: u64 = 96;
/// Bytes of one affine G2 point.
pub const G2_BYTES: u64 = 192;

/// The smallest streaming chunk the planner will consider.
pub const MIN_CHUNK: usize = 1 << 16;

/// Chunks below this are tried only when nothing fits with larger ones:
/// every chunk ends in a host round trip for its window sums, so a 2^27
/// section in 2^16-point chunks would wait on the host 2,000 times.
pub const PREFERRED_MIN_CHUNK: usize = 1 << 20;

/// Chunk buffers a streamed key's ring may take beyond its four, where the
/// MSM stages leave room ([`VramPlan::ring_slots`]).
pub(crate) const EXTRA_RING_SLOTS: usize = 4;

/// How the H polynomial's a, b, c share the device (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HPoly {
    /// a, b and c at once: three NTT pairs, then one H step.
    #[default]
    Full,
    /// a's NTTs, then b's and a ← a·b (b freed), then c's and
    /// a ← (a − c)/Z: two n-long vectors at a time instead of three, the
    /// same values bit for bit.
    Lean,
}

impl HPoly {
    /// n-long vectors the layout holds at its peak.
    pub fn vectors(self) -> u64 {
        match self {
            HPoly::Full => 3,
            HPoly::Lean => 2,
        }
    }
}

/// Where the proving key's points live during proving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrsMode {
    /// Uploaded once, kept in device memory, shared by every partition.
    Resident,
    /// Copied in per partition, `chunk` points at a time, into a ring of
    /// four G1 chunks (two of G2: the bytes of two G2 staging buffers) while
    /// earlier chunks' MSMs run.
    Streamed {
        /// Points per chunk.
        chunk: usize,
    },
}

impl fmt::Display for SrsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SrsMode::Resident => write!(f, "resident SRS"),
            SrsMode::Streamed { chunk } => write!(f, "streamed SRS ({chunk} points per chunk)"),
        }
    }
}

/// Where a, b, c's matrices live when the device evaluates them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatrixLayout {
    /// Uploaded once, kept in the device's `MatrixSlot`, shared by every
    /// partition of the circuit.
    Resident,
    /// Left on the host and copied in per partition, a chunk of rows at a
    /// time (`STREAM_TERMS` terms).
    Streamed,
}

/// H's MSM over shifted bases (cuzk-cuda `ShiftedBases`): H's points kept
/// with `copies − 1` shifted copies beside the key (made on the device when
/// it goes resident), c-bit windows sharing `sets` bucket sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShiftedH {
    /// The MSM's window width c, bits.
    pub window_bits: u32,
    /// Bucket sets the windows share (one set summed at a time).
    pub sets: u32,
    /// Copies of H's points kept, the original included.
    pub copies: u32,
}

impl ShiftedH {
    /// Device bytes of the copies beyond H's own points.
    pub fn extra_bytes(&self, h: usize) -> u64 {
        u64::from(self.copies.saturating_sub(1)) * h as u64 * G1_BYTES
    }
}

/// Workers a plan keeps room for beside H's shifted copies: the default
/// count of GPU workers per device (two partitions in flight: one's upload
/// and H polynomial beside the other's MSMs).
pub const SHIFTED_H_WORKERS: usize = crate::DEFAULT_GPU_WORKERS;

/// One stage's transient device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageBytes {
    /// The stage (e.g. "h_poly", "msm_l").
    pub name: &'static str,
    /// Its device bytes at its peak.
    pub bytes: u64,
}

/// The plan for one shape under one budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VramPlan {
    /// The VRAM budget planned under, bytes.
    pub budget: u64,
    /// The partition and key shape planned for.
    pub shape: Shape,
    /// Where the key's points live: resident on the device or streamed in chunks.
    pub mode: SrsMode,
    /// The key's points, all of them.
    pub srs_bytes: u64,
    /// Device bytes for the key under this plan: all of it when resident, the
    /// two staging buffers when streamed.
    pub srs_device_bytes: u64,
    /// Device bytes of the resident matrices when a, b, c are evaluated on
    /// the device (`shape.device_abc`), else 0.
    pub matrix_bytes: u64,
    /// Pairs per MSM call the worker's scratch is sized for.
    pub msm_len: usize,
    /// The worker's scratch (MSMs, classifier, sums, tables, slack).
    pub scratch_bytes: u64,
    /// Transient bytes per stage.
    pub stages: Vec<StageBytes>,
    /// The largest stage.
    pub partition_peak: u64,
    /// Kept free against fragmentation.
    pub margin: u64,
    /// `Some`: H's MSM runs over shifted bases of this shape (their copies
    /// counted in `srs_device_bytes`, the larger of the two MSMs' scratch in
    /// `scratch_bytes`: they take turns).
    pub h_shift: Option<ShiftedH>,
    /// `Some(c)`: a streamed key's H chunks are summed into buckets kept
    /// across the chunks, one MSM at c-bit windows reduced once (cuzk-cuda
    /// `KeptBuckets`; counted in `scratch_bytes`, so in the MSM stages),
    /// instead of an MSM per chunk at the chunk's own window.
    pub h_kept: Option<u32>,
    /// How a, b and c share the device in the H polynomial.
    pub h_poly: HPoly,
    /// Aux values the worker's gather scratch is sized for (A's and B's
    /// scalars gathered on the device from the aux values in VRAM).
    pub gather_len: usize,
    /// With the key streamed and the aux values in VRAM (a, b, c evaluated
    /// on the device): L's, A's and B's chunks cross among H's in one stage
    /// (`msm_h`), A's and B's scalars gathered a chunk at a time.
    pub interleaved: bool,
    /// Chunk buffers in a streamed key's ring (0 with the key resident):
    /// four, counted in `srs_device_bytes`, and up to four more of a G1
    /// chunk each, counted in the MSM stages.
    pub ring: usize,
    /// Of the ring's buffers, how many a partition proved alone makes
    /// while its H polynomial runs, their chunks crossing then instead of
    /// after it (the first H chunk's copy hidden behind the NTTs): as many
    /// as fit below the partition's largest stage beside the stages before
    /// the MSMs, at most [`RING_AHEAD`]; 0 with the key resident
    /// ([`VramPlan::with_ring_ahead`]).
    pub ring_ahead: usize,
}

/// The most ring buffers made, and filled, during the H polynomial: the
/// first chunk's copy is what the sums wait for (~30 ms at 2^24 points on
/// PCIe gen5, H100 2026-12-06); the second keeps the copy engine busy
/// while the first chunk's sums start.
pub const RING_AHEAD: usize = 2;

/// Why no plan fits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "VRAM budget too small: one partition of domain 2^{log_n} needs at least {} \
     (streaming the {} SRS in chunks of {MIN_CHUNK} points: scratch {}, largest stage {} ({stage}), \
     margin {}), the budget has {}",
    human(*need), human(*srs_bytes), human(*scratch_bytes), human(*stage_bytes), human(*margin), human(*budget)
)]
#[non_exhaustive]
pub struct PlanError {
    /// Bytes the smallest plan (streaming the key) needs.
    pub need: u64,
    /// Bytes the budget has.
    pub budget: u64,
    /// log2 of the partition's evaluation domain.
    pub log_n: u32,
    /// The key's points, bytes.
    pub srs_bytes: u64,
    /// One worker's scratch in that plan, bytes.
    pub scratch_bytes: u64,
    /// The stage with the largest transient memory.
    pub stage: &'static str,
    /// That stage's bytes.
    pub stage_bytes: u64,
    /// The safety margin kept free, bytes.
    pub margin: u64,
}

/// Pairs the worker's G2 scratch is sized for: B_G2's whole section with
/// the key resident; with it streamed, a light section's kept buffer of G2
/// points (`kept_points` of a G2 chunk, itself half a G1 chunk's points),
/// the most a streamed G2 MSM sums in one call (a chunk with more others
/// sums them in parts: `Kept::sum`).
pub(crate) fn g2_msm_len(mode: SrsMode, msm_len: usize, shape: &Shape) -> usize {
    let len = match mode {
        SrsMode::Resident => msm_len,
        SrsMode::Streamed { chunk } => crate::kept::kept_points((chunk / 2).max(1)),
    };
    len.min(shape.b_g2.max(1))
}

impl VramPlan {
    /// The plan for `shape` under `budget` bytes: the key resident when it
    /// fits beside one partition, else streamed in the largest power-of-two
    /// chunk that fits; an error with the numbers when not even the smallest
    /// chunk fits.
    /// The default [`PlanOptions`]: H's points plain, a streamed H into
    /// kept buckets where there is room.
    pub fn new(shape: Shape, budget: u64, fp: &dyn Footprints) -> Result<VramPlan, PlanError> {
        Self::new_with(shape, budget, fp, PlanOptions::default())
    }

    /// [`VramPlan::new`] under `options`: H's MSM over shifted bases when
    /// `shifted_h` and [`VramPlan::with_shifted_h`] finds room; a streamed
    /// H's kept buckets only when `kept_h`.
    pub fn new_with(
        shape: Shape,
        budget: u64,
        fp: &dyn Footprints,
        options: PlanOptions,
    ) -> Result<VramPlan, PlanError> {
        let plan = Self::plain(shape, budget, fp, options.kept_h)?;
        let plan = match options.shifted_h {
            true => plan.with_shifted_h(fp),
            false => plan,
        };
        Ok(match options.ring_ahead {
            true => plan.with_ring_ahead(),
            false => plan,
        })
    }

    /// This resident plan with H's MSM over shifted bases, when the copies
    /// and the larger scratch leave room for as many workers as before, up
    /// to [`SHIFTED_H_WORKERS`] (at least one); else this plan.
    pub fn with_shifted_h(self, fp: &dyn Footprints) -> VramPlan {
        if self.mode != SrsMode::Resident || self.shape.h == 0 {
            return self;
        }
        let workers = self.workers_that_fit().clamp(1, SHIFTED_H_WORKERS) as u64;
        let plain_g1 = fp.msm_g1(self.msm_len);
        // The room left beside `workers` partitions; the copies take it
        // once, the shifted MSM's scratch beyond the plain one's once per
        // worker. The cheapest shape for the room (as if one worker), then
        // smaller rooms until the exact check passes.
        let mut room = self
            .budget
            .saturating_sub(self.peak() + (workers - 1) * self.worker_bytes());
        for _ in 0..8 {
            let Some(h) = fp.shifted_h_shape(self.shape.h, room + plain_g1) else {
                break;
            };
            let shifted = fp.msm_g1_shifted(self.shape.h, h);
            let plan = VramPlan {
                srs_device_bytes: self.srs_device_bytes + h.extra_bytes(self.shape.h),
                scratch_bytes: self.scratch_bytes - plain_g1 + plain_g1.max(shifted),
                h_shift: Some(h),
                ..self.clone()
            };
            if plan.fits() && plan.workers_that_fit() as u64 >= workers {
                return plan;
            }
            room = room / 4 * 3;
        }
        self
    }

    /// The plan without shifted bases: the first candidate that fits, in
    /// the module docs' order (a streamed one with H's kept buckets where
    /// there is room, when `kept_h`).
    fn plain(
        shape: Shape,
        budget: u64,
        fp: &dyn Footprints,
        kept_h: bool,
    ) -> Result<VramPlan, PlanError> {
        // a, b, c: on the device from resident matrices, from streamed
        // matrices, or on the host (the matrices not counted).
        let on_host = Shape {
            device_abc: None,
            ..shape
        };
        let streamed_matrices = shape.device_abc.map(|d| Shape {
            device_abc: Some(DeviceAbc {
                stream_terms: Some(d.chunk_terms()),
                ..d
            }),
            ..shape
        });
        let resident_matrices = shape.device_abc.map(|d| Shape {
            device_abc: Some(DeviceAbc {
                stream_terms: None,
                ..d
            }),
            ..shape
        });
        let fits = |p: VramPlan| p.fits().then_some(p);
        let resident = [
            (resident_matrices, HPoly::Full),
            (streamed_matrices, HPoly::Full),
            (streamed_matrices, HPoly::Lean),
            (Some(on_host), HPoly::Full),
            (Some(on_host), HPoly::Lean),
        ];
        for (shape, h_poly) in resident {
            let Some(shape) = shape else { continue };
            let plan = Self::with_layout(shape, budget, SrsMode::Resident, h_poly, fp);
            if let Some(plan) = fits(plan) {
                return Ok(plan);
            }
        }
        // With the key streamed: resident matrices first (streaming them
        // costs more than a smaller chunk or the lean H, docs/small-cards.md),
        // then the largest chunk, then the full H before the lean one (the
        // same work in a different order).
        let longest = shape.longest_msm().max(MIN_CHUNK).next_power_of_two();
        let chunks = |from: usize, down_to: usize| {
            std::iter::successors(Some(from), |c| Some(c / 2)).take_while(move |&c| c >= down_to)
        };
        let preferred = PREFERRED_MIN_CHUNK.min(longest);
        for (low, high) in [(preferred, longest), (MIN_CHUNK, preferred / 2)] {
            let layouts = [
                (resident_matrices, MatrixLayout::Resident),
                (streamed_matrices, MatrixLayout::Streamed),
                (Some(on_host), MatrixLayout::Resident),
            ];
            for (shape, matrices) in layouts {
                let Some(shape) = shape else { continue };
                for chunk in chunks(high, low) {
                    let mode = SrsMode::Streamed { chunk };
                    for h_poly in [HPoly::Full, HPoly::Lean] {
                        let plan = Self::with_matrices(shape, budget, mode, h_poly, matrices, fp);
                        if let Some(plan) = fits(plan) {
                            let plan = if kept_h { plan.with_kept_h(fp) } else { plan };
                            return Ok(plan.with_ring_room());
                        }
                    }
                }
            }
        }
        let smallest = Self::with_layout(
            on_host,
            budget,
            SrsMode::Streamed { chunk: MIN_CHUNK },
            HPoly::Lean,
            fp,
        );
        let worst = smallest.largest_stage();
        Err(PlanError {
            need: smallest.peak(),
            budget,
            log_n: shape.domain.max(1).trailing_zeros(),
            srs_bytes: smallest.srs_bytes,
            scratch_bytes: smallest.scratch_bytes,
            stage: worst.name,
            stage_bytes: worst.bytes,
            margin: smallest.margin,
        })
    }

    /// The plan in a given mode with a, b, c held at once, whether or not it
    /// fits (see [`VramPlan::fits`]).
    pub fn with_mode(shape: Shape, budget: u64, mode: SrsMode, fp: &dyn Footprints) -> VramPlan {
        Self::with_layout(shape, budget, mode, HPoly::Full, fp)
    }

    /// The plan in a given mode and H layout, whether or not it fits. With a
    /// streamed key, a, b, c evaluated on the device read streamed matrices
    /// (`shape`'s `stream_terms` is set if it was not); with a resident one,
    /// the matrices are as `shape` says.
    pub fn with_layout(
        shape: Shape,
        budget: u64,
        mode: SrsMode,
        h_poly: HPoly,
        fp: &dyn Footprints,
    ) -> VramPlan {
        let matrices = match (mode, shape.device_abc) {
            (SrsMode::Streamed { .. }, _) => MatrixLayout::Streamed,
            (SrsMode::Resident, Some(d)) if d.stream_terms.is_some() => MatrixLayout::Streamed,
            (SrsMode::Resident, _) => MatrixLayout::Resident,
        };
        Self::with_matrices(shape, budget, mode, h_poly, matrices, fp)
    }

    /// The plan in a given mode, H layout and (when a, b, c are evaluated on
    /// the device) matrix layout, whether or not it fits.
    pub fn with_matrices(
        shape: Shape,
        budget: u64,
        mode: SrsMode,
        h_poly: HPoly,
        matrices: MatrixLayout,
        fp: &dyn Footprints,
    ) -> VramPlan {
        let shape = Shape {
            device_abc: shape.device_abc.map(|d| DeviceAbc {
                stream_terms: match matrices {
                    MatrixLayout::Resident => None,
                    MatrixLayout::Streamed => Some(d.stream_terms.unwrap_or(d.chunk_terms())),
                },
                ..d
            }),
            ..shape
        };
        let n = shape.domain as u64;
        let s = SCALAR_BYTES;
        let (msm_len, srs_device_bytes, chunk_bufs) = match mode {
            SrsMode::Resident => (shape.longest_msm(), shape.srs_bytes(), 0),
            SrsMode::Streamed { chunk } => {
                let c = chunk as u64;
                // Two staging buffers of the widest point, one scalar chunk.
                (chunk, 2 * c * G2_BYTES, c * s)
            }
        };
        // The aux values in VRAM through L, A and B: z's region (its tail
        // is the aux values, the inputs' few values with them) when a, b, c
        // are evaluated on the device; with the key resident and a, b, c
        // from the host, the aux values uploaded for L; none when both the
        // key and the aux values stream in chunks.
        let kept_z = shape.device_abc.map_or(0, |d| d.z as u64 * s);
        let aux = match (mode, shape.device_abc) {
            (_, Some(d)) => d.z as u64 * s,
            (SrsMode::Resident, None) => shape.aux as u64 * s,
            (SrsMode::Streamed { .. }, None) => 0,
        };
        // A's and B's scalars are gathered on the device whenever the aux
        // values are there; the gather's scratch is sized for all of them.
        let gather_len = match (mode, shape.device_abc) {
            (SrsMode::Streamed { .. }, Some(_)) => shape.aux,
            _ => msm_len,
        };
        let scratch_bytes = fp.msm_g1(msm_len)
            + fp.msm_g2(g2_msm_len(mode, msm_len, &shape))
            + fp.classifier(msm_len)
            + fp.gather(gather_len)
            + fp.fixed()
            + fp.slack();
        // A streamed light section keeps its chunks' few other scalars and
        // their points for one MSM later: L and A one G1 buffer, B one of
        // each group; interleaved, all four at once.
        let kept = |g1, g2| match mode {
            SrsMode::Streamed { chunk } => kept_bytes(chunk, g1, g2),
            SrsMode::Resident => 0,
        };
        let (l, a, b) = match (mode, aux) {
            (SrsMode::Streamed { .. }, 0) => (
                chunk_bufs + kept(1, 0),
                chunk_bufs + kept(1, 0),
                chunk_bufs + kept(1, 1),
            ),
            _ => (
                aux + chunk_bufs + kept(1, 0),
                aux + shape.a as u64 * s + chunk_bufs + kept(1, 0),
                aux + shape.b_g1.max(shape.b_g2) as u64 * s + chunk_bufs + kept(1, 1),
            ),
        };
        let vectors = h_poly.vectors() * n * s;
        // a, b, c on the device: z and its class bytes beside the outputs
        // (and a chunk's staging when the matrices stream); z's aux values
        // (its tail, no copy) stay for L, A and B. Full: an `abc` stage
        // holds all three outputs before H; lean: b and c are made inside
        // H, z's classes held until c is. z's packed upload holds a scratch
        // of one word per aux value (at most 64 MiB) beside z alone, freed
        // before the outputs are made: 40 bytes per value at most, below
        // these stages' 33 per value of z and 64 per row (n ≥ inputs).
        let (abc, h) = match shape.device_abc {
            Some(d) => {
                let staging = d
                    .stream_terms
                    .map_or(0, |terms| streamed_bytes(d.coeffs, terms));
                let z_and_classes = d.z as u64 * (s + 1);
                match h_poly {
                    HPoly::Full => (Some(vectors + z_and_classes + staging), vectors + kept_z),
                    HPoly::Lean => (None, vectors + z_and_classes + staging),
                }
            }
            None => (None, vectors),
        };
        // L's, A's and B's chunks among H's: their scalars are z's tail
        // (held through H anyway) and one chunk's gathered at a time.
        let interleaved = matches!(mode, SrsMode::Streamed { .. }) && shape.device_abc.is_some();
        // A's and B's bitmaps on the device with their word offsets, and
        // their inputs, for the gathers by rank.
        let ranked = match interleaved {
            true => ranked_bytes(&shape),
            false => 0,
        };
        let mut stages = Vec::with_capacity(6);
        if let Some(bytes) = abc {
            stages.push(("abc", bytes));
        }
        stages.push(("h_poly", h));
        let beside = if interleaved { kept(3, 1) } else { 0 };
        stages.push(("msm_h", n * s + chunk_bufs + kept_z + ranked + beside));
        // Interleaved, L, A and B run inside H's stage.
        if !interleaved {
            stages.extend([("msm_l", l), ("msm_a", a), ("msm_b", b)]);
        }
        // A streamed key's ring and the worker's scratch live only while
        // the MSMs run (made after the H polynomial, given back after the
        // sums): counted in the MSM stages, not beside the largest stage.
        let in_msm = match mode {
            SrsMode::Streamed { .. } => srs_device_bytes + scratch_bytes,
            SrsMode::Resident => 0,
        };
        let stages: Vec<StageBytes> = stages
            .into_iter()
            .map(|(name, bytes)| StageBytes {
                name,
                bytes: bytes + if name.starts_with("msm") { in_msm } else { 0 },
            })
            .collect();
        let partition_peak = stages.iter().map(|s| s.bytes).max().unwrap_or(0);
        let plan = VramPlan {
            budget,
            shape,
            mode,
            srs_bytes: shape.srs_bytes(),
            srs_device_bytes,
            matrix_bytes: shape
                .device_abc
                .filter(|d| d.stream_terms.is_none())
                .map_or(0, |d| d.matrix_bytes),
            msm_len,
            scratch_bytes,
            stages,
            partition_peak,
            margin: budget / 64 + (64 << 20),
            h_shift: None,
            h_kept: None,
            h_poly,
            gather_len,
            interleaved,
            ring: 0,
            ring_ahead: 0,
        };
        // A streamed key's ring: four buffers, and more where the MSM
        // stages leave room below the partition's largest stage.
        let below = match mode {
            SrsMode::Streamed { chunk } => {
                let msm = plan.msm_stage_peak();
                (partition_peak.saturating_sub(msm) / (chunk as u64 * G1_BYTES)) as usize
            }
            SrsMode::Resident => 0,
        };
        plan.with_extra_ring(below)
    }
}

/// A's and B's bitmaps on the device with their word offsets, and their
/// inputs, for the gathers by rank (a, b, c evaluated on the device: z's
/// inputs are A's; B's are as many at most).
pub(crate) fn ranked_bytes(shape: &Shape) -> u64 {
    let inputs = shape.device_abc.map_or(0, |d| d.z - shape.aux);
    2 * (RankedBitmap::bytes_for(shape.aux) + inputs.max(1) as u64 * SCALAR_BYTES)
}

mod display;
mod footprints;
mod options;
mod parked;
mod room;
mod shape;

pub use footprints::{CudaFootprints, Footprints};
pub use options::PlanOptions;
pub use parked::{ParkedBatch, PARKED_CHUNK_GAIN};
pub(crate) use room::BATCH_COUNTED;
pub use shape::{DeviceAbc, Shape, STREAM_TERMS};

#[cfg(test)]
pub(crate) mod tests;
