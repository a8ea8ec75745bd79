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
//! When a witness leaves a, b, c to the prover (a pre-compiled circuit,
//! cuzk-synth `DeferredAbc`), the recording's matrices are resident beside
//! the key ([`DeviceAbc`]) and a, b, c are computed on the device from z:
//! only z is uploaded, and its aux values stay for L, A and B. A plan that
//! cannot hold the matrices beside a resident key streams them from the host
//! through one chunk's staging (the `abc` stage holds it); one that cannot
//! hold even that evaluates a, b, c on the host instead (and says so).
//!
//! The worker's scratch (the G1 and G2 Pippenger scratch, the classifier, the
//! batch sums and the NTT tables) is sized once for the longest MSM it runs:
//! the longest section when the key is resident, one chunk when streamed.
//! The kernels' footprints come in through [`Footprints`] ([`CudaFootprints`]
//! asks cuzk-cuda's bindings), so the plan's arithmetic is tested on any
//! machine. It lives here, beside the allocations it describes (`worker.rs`,
//! `streamed.rs`), so a change to one is seen next to the other.

use std::fmt;

use cuzk_arena::human;
use cuzk_cuda::abc::streamed_bytes;
use cuzk_cuda::gather::BitmapGather;
use cuzk_cuda::msm::{choose_shifted_shape, copies_for, Classifier, Msm, MsmCurve, G1, G2};
use cuzk_synth::CircuitShape;

/// Bytes of one Fr scalar, one affine G1 point and one affine G2 point.
pub const SCALAR_BYTES: u64 = 32;
pub const G1_BYTES: u64 = 96;
pub const G2_BYTES: u64 = 192;

/// The smallest streaming chunk the planner will consider.
pub const MIN_CHUNK: usize = 1 << 16;

/// What a partition and its key look like, in counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// The evaluation domain's size n (a power of two).
    pub domain: usize,
    /// Points per key section.
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
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

/// Terms per chunk when the matrices are streamed (fewer when the largest
/// matrix has fewer): 16 Mi terms, 192 MiB of staging (offsets, columns,
/// ids), a few dozen chunks per 2^27 partition.
pub const STREAM_TERMS: usize = 1 << 24;

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

/// Device bytes the kernels' scratch needs, as the kernel bindings size it.
pub trait Footprints {
    /// A G1 Pippenger MSM of up to `len` pairs.
    fn msm_g1(&self, len: usize) -> u64;
    /// A G2 Pippenger MSM of up to `len` pairs.
    fn msm_g2(&self, len: usize) -> u64;
    /// A G1 MSM of up to `len` pairs over shifted bases of shape `h`.
    fn msm_g1_shifted(&self, len: usize, h: ShiftedH) -> u64;
    /// The shape of H's MSM over shifted bases that is cheapest among those
    /// whose extra copies and scratch (less the plain MSM's, which it
    /// replaces) fit `bytes`; `None` when none beats the plain MSM.
    fn shifted_h_shape(&self, len: usize, bytes: u64) -> Option<ShiftedH>;
    /// The zero/one/other classifier for up to `len` scalars.
    fn classifier(&self, len: usize) -> u64;
    /// Fixed-size parts: batch sums, NTT tables, result slots.
    fn fixed(&self) -> u64;
    /// Alignment-rounding slack per worker (many small buffers round up).
    fn slack(&self) -> u64 {
        1 << 20
    }
}

/// Where the proving key's points live during proving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrsMode {
    /// Uploaded once, kept in device memory, shared by every partition.
    Resident,
    /// Copied in per partition, `chunk` points at a time, through two staging
    /// buffers, while the previous chunk's MSM runs.
    Streamed { chunk: usize },
}

impl fmt::Display for SrsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SrsMode::Resident => write!(f, "resident SRS"),
            SrsMode::Streamed { chunk } => write!(f, "streamed SRS ({chunk} points per chunk)"),
        }
    }
}

/// H's MSM over shifted bases (cuzk-cuda `ShiftedBases`): H's points kept
/// with `copies − 1` shifted copies beside the key (made on the device when
/// it goes resident), c-bit windows sharing `sets` bucket sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShiftedH {
    pub window_bits: u32,
    pub sets: u32,
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
    pub name: &'static str,
    pub bytes: u64,
}

/// The plan for one shape under one budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VramPlan {
    pub budget: u64,
    pub shape: Shape,
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
}

/// Why no plan fits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "VRAM budget too small: one partition of domain 2^{log_n} needs at least {} \
     (streaming the {} SRS in chunks of {MIN_CHUNK} points: scratch {}, largest stage {} ({stage}), \
     margin {}), the budget has {}",
    human(*need), human(*srs_bytes), human(*scratch_bytes), human(*stage_bytes), human(*margin), human(*budget)
)]
pub struct PlanError {
    pub need: u64,
    pub budget: u64,
    pub log_n: u32,
    pub srs_bytes: u64,
    pub scratch_bytes: u64,
    pub stage: &'static str,
    pub stage_bytes: u64,
    pub margin: u64,
}

impl VramPlan {
    /// The plan for `shape` under `budget` bytes: the key resident when it
    /// fits beside one partition, else streamed in the largest power-of-two
    /// chunk that fits; an error with the numbers when not even the smallest
    /// chunk fits.
    /// H's points plain ([`VramPlan::new_with`] may shift them).
    pub fn new(shape: Shape, budget: u64, fp: &dyn Footprints) -> Result<VramPlan, PlanError> {
        Self::new_with(shape, budget, fp, false)
    }

    /// [`VramPlan::new`], with H's MSM over shifted bases when `shifted_h`
    /// and [`VramPlan::with_shifted_h`] finds room.
    pub fn new_with(
        shape: Shape,
        budget: u64,
        fp: &dyn Footprints,
        shifted_h: bool,
    ) -> Result<VramPlan, PlanError> {
        let plan = Self::plain(shape, budget, fp)?;
        Ok(if shifted_h {
            plan.with_shifted_h(fp)
        } else {
            plan
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

    /// The plan without shifted bases.
    fn plain(shape: Shape, budget: u64, fp: &dyn Footprints) -> Result<VramPlan, PlanError> {
        if let Some(d) = shape.device_abc {
            // The matrices resident beside the key, else streamed through a
            // chunk's staging, else a, b, c from the host.
            for stream_terms in [None, Some(STREAM_TERMS.min(d.terms.max(1)))] {
                let shape = Shape {
                    device_abc: Some(DeviceAbc { stream_terms, ..d }),
                    ..shape
                };
                let on_device = Self::with_mode(shape, budget, SrsMode::Resident, fp);
                if on_device.fits() {
                    return Ok(on_device);
                }
            }
        }
        // a, b, c from the host: the matrices are not counted.
        let shape = Shape {
            device_abc: None,
            ..shape
        };
        let resident = Self::with_mode(shape, budget, SrsMode::Resident, fp);
        if resident.peak() <= budget {
            return Ok(resident);
        }
        let longest = shape.longest_msm().max(MIN_CHUNK).next_power_of_two();
        let mut chunk = longest;
        while chunk >= MIN_CHUNK {
            let plan = Self::with_mode(shape, budget, SrsMode::Streamed { chunk }, fp);
            if plan.peak() <= budget {
                return Ok(plan);
            }
            chunk /= 2;
        }
        let smallest = Self::with_mode(shape, budget, SrsMode::Streamed { chunk: MIN_CHUNK }, fp);
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

    /// The plan in a given mode, whether or not it fits (see [`VramPlan::fits`]).
    /// a, b, c are evaluated on the device only with a resident key.
    pub fn with_mode(shape: Shape, budget: u64, mode: SrsMode, fp: &dyn Footprints) -> VramPlan {
        let shape = match mode {
            SrsMode::Resident => shape,
            SrsMode::Streamed { .. } => Shape {
                device_abc: None,
                ..shape
            },
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
        let scratch_bytes = fp.msm_g1(msm_len)
            + fp.msm_g2(msm_len.min(shape.b_g2.max(1)))
            + fp.classifier(msm_len)
            + fp.fixed()
            + fp.slack();
        // Resident: the aux values stay on the device through A and B, whose
        // dense scalars are gathered from them there; when a, b, c are
        // evaluated on the device they are z's tail, and z's region (the
        // inputs' few values with them) is what stays.
        let aux = match (mode, shape.device_abc) {
            (SrsMode::Resident, Some(d)) => d.z as u64 * s,
            _ => shape.aux as u64 * s,
        };
        let (l, a, b) = match mode {
            SrsMode::Resident => (
                aux,
                aux + shape.a as u64 * s,
                aux + shape.b_g1.max(shape.b_g2) as u64 * s,
            ),
            SrsMode::Streamed { .. } => (chunk_bufs, chunk_bufs, chunk_bufs),
        };
        // a, b, c on the device: z and its classes beside the three n-long
        // outputs; z's aux values (its tail, no copy) stay for L, A and B.
        // z's packed upload holds a scratch of one word per aux value (at
        // most 64 MiB) beside z alone, freed before the outputs are made:
        // 40 bytes per value at most, below this stage's 33 per value of z
        // and 96 per row (n ≥ inputs).
        let (abc, kept) = match shape.device_abc {
            Some(d) => {
                let staging = d
                    .stream_terms
                    .map_or(0, |terms| streamed_bytes(d.coeffs, terms));
                (3 * n * s + d.z as u64 * (s + 1) + staging, aux)
            }
            None => (0, 0),
        };
        let mut stages = vec![
            StageBytes {
                name: "h_poly",
                bytes: 3 * n * s + kept,
            },
            StageBytes {
                name: "msm_h",
                bytes: n * s + chunk_bufs + kept,
            },
            StageBytes {
                name: "msm_l",
                bytes: l,
            },
            StageBytes {
                name: "msm_a",
                bytes: a,
            },
            StageBytes {
                name: "msm_b",
                bytes: b,
            },
        ];
        if shape.device_abc.is_some() {
            stages.insert(
                0,
                StageBytes {
                    name: "abc",
                    bytes: abc,
                },
            );
        }
        let partition_peak = stages.iter().map(|s| s.bytes).max().unwrap_or(0);
        VramPlan {
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
        }
    }

    /// Device bytes at the plan's peak, with the margin.
    pub fn peak(&self) -> u64 {
        self.srs_device_bytes + self.matrix_bytes + self.worker_bytes() + self.margin
    }

    /// Whether a, b, c are evaluated on the device under this plan.
    pub fn abc_on_device(&self) -> bool {
        self.shape.device_abc.is_some()
    }

    /// `Some(terms)` when a, b, c are evaluated on the device from matrices
    /// streamed in chunks of `terms`; `None` when resident or on the host.
    pub fn matrices_streamed(&self) -> Option<usize> {
        self.shape.device_abc.and_then(|d| d.stream_terms)
    }

    /// One worker's bytes besides a resident key: scratch plus its largest stage.
    pub fn worker_bytes(&self) -> u64 {
        self.scratch_bytes + self.partition_peak
    }

    pub fn fits(&self) -> bool {
        self.peak() <= self.budget
    }

    /// How many workers (each with its own scratch and one partition in
    /// flight) fit the budget together, sharing a resident key; 1 or 0 when
    /// streamed (each streaming worker needs its own staging).
    pub fn workers_that_fit(&self) -> usize {
        let shared = match self.mode {
            SrsMode::Resident => self.srs_device_bytes + self.matrix_bytes,
            SrsMode::Streamed { .. } => 0,
        };
        let per = match self.mode {
            SrsMode::Resident => self.worker_bytes(),
            SrsMode::Streamed { .. } => self.worker_bytes() + self.srs_device_bytes,
        };
        let avail = self.budget.saturating_sub(shared + self.margin);
        (avail / per.max(1)) as usize
    }

    /// The stage with the most transient bytes.
    pub fn largest_stage(&self) -> StageBytes {
        *self
            .stages
            .iter()
            .max_by_key(|s| s.bytes)
            .expect("five or six stages")
    }
}

impl fmt::Display for VramPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let big = self.largest_stage();
        write!(
            f,
            "{} under a {} budget: key {} on the device ({} total), scratch {} for {} pairs, \
             largest stage {} {}, peak {}",
            self.mode,
            human(self.budget),
            human(self.srs_device_bytes),
            human(self.srs_bytes),
            human(self.scratch_bytes),
            self.msm_len,
            big.name,
            human(big.bytes),
            human(self.peak())
        )?;
        if let Some(h) = self.h_shift {
            write!(
                f,
                "; H over shifted bases (c = {}, {} sets, {} copies)",
                h.window_bits, h.sets, h.copies
            )?;
        }
        match (self.abc_on_device(), self.matrices_streamed()) {
            (true, None) => write!(
                f,
                "; a, b, c on the device (matrices {} resident)",
                human(self.matrix_bytes)
            )?,
            (true, Some(terms)) => write!(
                f,
                "; a, b, c on the device (matrices streamed from the host, {terms} terms a chunk)"
            )?,
            (false, _) => {}
        }
        Ok(())
    }
}

/// The kernels' device-memory footprints, as cuzk-cuda sizes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaFootprints;

impl Footprints for CudaFootprints {
    fn msm_g1(&self, len: usize) -> u64 {
        Msm::<G1>::bytes_for(len)
    }
    fn msm_g2(&self, len: usize) -> u64 {
        Msm::<G2>::bytes_for(len)
    }
    fn msm_g1_shifted(&self, len: usize, h: ShiftedH) -> u64 {
        Msm::<G1>::shifted_bytes_for(len, h.window_bits, h.sets)
    }
    fn shifted_h_shape(&self, len: usize, bytes: u64) -> Option<ShiftedH> {
        let xyzz = G1::XYZZ_WORDS * 8;
        choose_shifted_shape(len, xyzz, G1_BYTES as usize, bytes as usize).map(|(c, sets)| {
            ShiftedH {
                window_bits: c,
                sets,
                copies: copies_for(c, sets),
            }
        })
    }
    fn classifier(&self, len: usize) -> u64 {
        Classifier::bytes_for(len) + BitmapGather::bytes_for(len)
    }
    fn fixed(&self) -> u64 {
        // Batch-sum partials (a few thousand XYZZ points per curve), the NTT
        // twiddle tables (a few MiB) and result slots.
        64 << 20
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::resident::KeyShape;

    /// One 32 GiB PoRep partition, the real circuit's counts (as issue
    /// #13's H200 run synthesized it; docs/facts.md).
    pub(crate) fn porep_32gib() -> CircuitShape {
        CircuitShape {
            num_constraints: 130_278_869,
            num_inputs: 328,
            num_aux: 130_169_893,
            a_aux_density: 129_753_292,
            b_input_density: 1,
            b_aux_density: 33_112_281,
            domain_log2: 27,
        }
    }

    /// Footprints shaped like the real kernels': linear in the length.
    struct Linear;

    impl Footprints for Linear {
        fn msm_g1(&self, len: usize) -> u64 {
            len as u64 * 60 + (200 << 20)
        }
        fn msm_g2(&self, len: usize) -> u64 {
            len as u64 * 80 + (400 << 20)
        }
        fn msm_g1_shifted(&self, len: usize, h: ShiftedH) -> u64 {
            len as u64 * 70 + (u64::from(h.sets) << 20)
        }
        fn shifted_h_shape(&self, len: usize, bytes: u64) -> Option<ShiftedH> {
            // Two copies, if they fit.
            let h = ShiftedH {
                window_bits: 22,
                sets: 6,
                copies: 2,
            };
            (h.extra_bytes(len) + self.msm_g1_shifted(len, h) <= bytes).then_some(h)
        }
        fn classifier(&self, len: usize) -> u64 {
            len as u64 * 8
        }
        fn fixed(&self) -> u64 {
            8 << 20
        }
    }

    fn demo_shape(log_n: u32) -> Shape {
        let n = 1usize << log_n;
        Shape {
            domain: n,
            h: n - 1,
            l: n - 40,
            a: n - 100,
            b_g1: n / 4,
            b_g2: n / 4,
            aux: n - 40,
            device_abc: None,
        }
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_large_budget_keeps_the_key_resident() {
        let plan = VramPlan::new(demo_shape(24), 140 * GIB, &Linear).unwrap();
        assert_eq!(plan.mode, SrsMode::Resident);
        assert_eq!(plan.srs_device_bytes, demo_shape(24).srs_bytes());
        assert!(plan.fits());
        assert_eq!(plan.largest_stage().name, "h_poly");
        assert_eq!(plan.partition_peak, 3 * (1 << 24) * 32);
        assert!(plan.workers_that_fit() >= 2, "{plan}");
    }

    /// a, b, c on the device: the matrices count as resident bytes, the
    /// `abc` stage holds z, its classes and the three outputs, and z (whose
    /// tail is the aux values) stays through H; without room for the matrices
    /// beside the key the plan evaluates a, b, c on the host.
    #[test]
    fn device_abc_counts_the_matrices_and_z() {
        let n: u64 = 1 << 24;
        let base = demo_shape(24);
        let z = base.aux + 41;
        let shape = Shape {
            device_abc: Some(DeviceAbc {
                matrix_bytes: 3 * GIB,
                z,
                coeffs: 2466,
                terms: 1 << 30,
                stream_terms: None,
            }),
            ..base
        };
        let plan = VramPlan::new(shape, 140 * GIB, &Linear).unwrap();
        assert!(plan.abc_on_device(), "{plan}");
        assert_eq!(plan.matrix_bytes, 3 * GIB);
        let kept = z as u64 * 32;
        let stage = |name| plan.stages.iter().find(|s| s.name == name).unwrap().bytes;
        assert_eq!(stage("abc"), 3 * n * 32 + z as u64 * 33);
        assert_eq!(stage("h_poly"), 3 * n * 32 + kept);
        assert_eq!(stage("msm_h"), n * 32 + kept);
        assert_eq!(stage("msm_l"), kept);
        assert_eq!(plan.largest_stage().name, "abc");
        let host = VramPlan::new(base, 140 * GIB, &Linear).unwrap();
        assert_eq!(
            plan.peak(),
            host.peak() + 3 * GIB + stage("abc") - 3 * n * 32
        );
        assert!(plan.to_string().contains("a, b, c on the device"), "{plan}");

        // Room for the key and the abc stage with a chunk's staging, not for
        // the matrices: streamed, nothing counted as resident. A plan fits a
        // budget b when its bytes + b/64 + 64 MiB (the margin) <= b.
        let fit_at = |p: &VramPlan| ((p.peak() - p.margin + (64 << 20)) * 64).div_ceil(63);
        let staging = cuzk_cuda::abc::streamed_bytes(2466, STREAM_TERMS);
        let mut streamed_shape = shape;
        streamed_shape.device_abc.as_mut().unwrap().stream_terms = Some(STREAM_TERMS);
        let streamed_min = fit_at(&VramPlan::with_mode(
            streamed_shape,
            140 * GIB,
            SrsMode::Resident,
            &Linear,
        ));
        assert!(streamed_min < fit_at(&plan));
        let plan = VramPlan::new(shape, streamed_min, &Linear).unwrap();
        assert!(plan.abc_on_device(), "{plan}");
        assert_eq!(plan.matrices_streamed(), Some(STREAM_TERMS), "{plan}");
        assert_eq!(plan.matrix_bytes, 0);
        let streamed_abc = plan.stages.iter().find(|s| s.name == "abc").unwrap().bytes;
        assert_eq!(streamed_abc, stage("abc") + staging);
        assert!(
            plan.to_string().contains("streamed from the host"),
            "{plan}"
        );

        // Room for the key and a host-abc partition, not for the streamed
        // abc stage.
        let tight = streamed_min - 1024;
        let plan = VramPlan::new(shape, tight, &Linear).unwrap();
        assert!(!plan.abc_on_device(), "{plan}");
        assert_eq!(plan.mode, SrsMode::Resident);
        assert_eq!(plan.matrix_bytes, 0);
        assert_eq!(plan, host_plan_under(base, tight));
        // Streamed plans never evaluate on the device.
        let streamed = VramPlan::with_mode(
            shape,
            140 * GIB,
            SrsMode::Streamed { chunk: 1 << 20 },
            &Linear,
        );
        assert!(!streamed.abc_on_device());
    }

    fn host_plan_under(shape: Shape, budget: u64) -> VramPlan {
        VramPlan::new(shape, budget, &Linear).unwrap()
    }

    /// A 32 GiB PoRep partition (the real circuit's counts, as issue #13's
    /// H200 run synthesized it) with the kernels' own footprints, under the
    /// arena the H200 gave that run (135.05 GiB): the key stays resident and
    /// one worker fits beside it with room for a second.
    #[test]
    fn a_32_gib_porep_partition_plans_resident_on_an_h200() {
        let shape = Shape::of_circuit(&porep_32gib());
        let arena = 145_006_595_840; // 135.05 GiB
        let plan = VramPlan::new(shape, arena, &CudaFootprints).unwrap();
        println!("{plan}");
        assert_eq!(plan.mode, SrsMode::Resident, "{plan}");
        // 130.2 M + 129.8 M + 33.1 M G1 points, 33.1 M G2 points, 2^27 - 1 for H.
        assert_eq!(plan.srs_device_bytes, shape.srs_bytes());
        assert!(plan.fits() && plan.workers_that_fit() >= 2, "{plan}");
        assert_eq!(plan.largest_stage().name, "h_poly", "{plan}");
    }

    /// H over shifted bases on the same H200 arena, a, b, c on the device
    /// from resident matrices as the pre-compiled PoRep runs: room for
    /// two copies of H beside the key, the matrices and two workers, and no
    /// worker fewer than without them.
    #[test]
    fn a_32_gib_porep_partition_keeps_h_shifted_beside_two_workers() {
        let circuit = porep_32gib();
        // The recording's device bytes and table as the H200 run logged
        // them (5.51 GiB of matrices).
        let shape = Shape::of_circuit(&circuit).with_device_abc(
            &circuit,
            5_916_000_000,
            1_526,
            309_405_051,
        );
        let arena = 145_006_595_840; // 135.05 GiB
        let plain = VramPlan::new_with(shape, arena, &CudaFootprints, false).unwrap();
        let shifted = VramPlan::new_with(shape, arena, &CudaFootprints, true).unwrap();
        println!("{plain}\n{shifted}");
        assert_eq!(plain.h_shift, None);
        let h = shifted.h_shift.expect("room for H's copies");
        assert!(h.copies >= 2 && h.sets < 13, "{shifted}");
        assert!(
            shifted.fits() && shifted.workers_that_fit() >= 2,
            "{shifted}"
        );
        assert!(plain.workers_that_fit() >= 2, "{plain}");
        assert_eq!(
            shifted.srs_device_bytes,
            plain.srs_device_bytes + h.extra_bytes(shape.h)
        );
        assert!(
            shifted.to_string().contains("H over shifted bases"),
            "{shifted}"
        );
        assert_eq!(
            KeyShape::of_plan(&shifted).bytes(),
            shifted.srs_device_bytes,
            "admission counts the copies"
        );
    }

    /// Without room for a copy beside the partitions that fit, H stays
    /// plain; a streamed plan never keeps H shifted.
    #[test]
    fn h_stays_plain_without_room() {
        let shape = demo_shape(24);
        let plain = VramPlan::new_with(shape, 140 * GIB, &Linear, false).unwrap();
        let roomy = VramPlan::new_with(shape, 140 * GIB, &Linear, true).unwrap();
        assert!(roomy.h_shift.is_some(), "{roomy}");
        assert!(roomy.workers_that_fit() >= SHIFTED_H_WORKERS, "{roomy}");
        // Just enough for one plain partition: no copy fits.
        let fit_at = |p: &VramPlan| ((p.peak() - p.margin + (64 << 20)) * 64).div_ceil(63);
        let tight = fit_at(&plain);
        let p = VramPlan::new_with(shape, tight, &Linear, true).unwrap();
        assert_eq!(p.mode, SrsMode::Resident, "{p}");
        assert_eq!(p.h_shift, None, "{p}");
        let streamed = VramPlan::new_with(demo_shape(26), 16 * GIB, &Linear, true).unwrap();
        assert!(matches!(streamed.mode, SrsMode::Streamed { .. }));
        assert_eq!(streamed.h_shift, None);
    }

    #[test]
    fn a_small_budget_streams_in_the_largest_chunk_that_fits() {
        let shape = demo_shape(26);
        assert!(shape.srs_bytes() > 16 * GIB, "the key alone exceeds 16 GiB");
        let plan = VramPlan::new(shape, 16 * GIB, &Linear).unwrap();
        let SrsMode::Streamed { chunk } = plan.mode else {
            panic!("expected streaming: {plan}");
        };
        assert!(plan.fits());
        assert!(chunk.is_power_of_two() && chunk >= MIN_CHUNK);
        // Twice the chunk would not have fit.
        let bigger = VramPlan::with_mode(
            shape,
            16 * GIB,
            SrsMode::Streamed { chunk: chunk * 2 },
            &Linear,
        );
        assert!(chunk * 2 > shape.longest_msm() || !bigger.fits());
        assert_eq!(plan.workers_that_fit(), 1);
    }

    #[test]
    fn too_small_a_budget_names_both_numbers() {
        let err = VramPlan::new(demo_shape(26), GIB, &Linear).unwrap_err();
        assert_eq!(err.budget, GIB);
        assert!(err.need > GIB);
        assert_eq!(err.stage, "h_poly");
        let msg = err.to_string();
        assert!(msg.contains("needs at least"), "{msg}");
        assert!(msg.contains("the budget has 1.00 GiB"), "{msg}");
        assert!(msg.contains("2^26"), "{msg}");
    }

    #[test]
    fn peak_adds_up() {
        let plan = VramPlan::with_mode(demo_shape(20), 8 * GIB, SrsMode::Resident, &Linear);
        assert_eq!(
            plan.peak(),
            plan.srs_device_bytes + plan.scratch_bytes + plan.partition_peak + plan.margin
        );
        let n = 1u64 << 20;
        let expect_scratch = Linear.msm_g1(plan.msm_len)
            + Linear.msm_g2(plan.shape.b_g2)
            + Linear.classifier(plan.msm_len)
            + Linear.fixed()
            + Linear.slack();
        assert_eq!(plan.scratch_bytes, expect_scratch);
        assert_eq!(plan.stages[1].bytes, n * 32);
    }
}
