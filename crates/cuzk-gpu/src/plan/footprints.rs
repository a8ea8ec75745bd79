//! Device bytes the kernels' scratch needs: a trait, so the planner's
//! arithmetic is tested on any machine, and cuzk-cuda's own sizes.

use cuzk_cuda::gather::BitmapGather;
use cuzk_cuda::msm::{choose_shifted_shape, copies_for, Classifier, Msm, MsmCurve, G1, G2};

use super::{ShiftedH, G1_BYTES};

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
    /// What a G1 MSM of up to `len` pairs made for kept calls at `window_bits`
    /// (a streamed key's H chunks into kept buckets) takes beyond
    /// [`Footprints::msm_g1`], its kept buckets included.
    fn msm_g1_kept(&self, len: usize, window_bits: u32) -> u64;
    /// The window of H's kept buckets for a section of `h` points in chunks
    /// of `chunk`, the cheapest whose [`Footprints::msm_g1_kept`] fits
    /// `bytes`; `None` when none does or none beats an MSM per chunk.
    fn kept_h_window(&self, h: usize, chunk: usize, bytes: u64) -> Option<u32>;
    /// The zero/one/other classifier for up to `len` scalars.
    fn classifier(&self, len: usize) -> u64;
    /// The density-bitmap gather of A's and B's scalars from up to `len`
    /// aux values.
    fn gather(&self, len: usize) -> u64;
    /// Fixed-size parts: batch sums, NTT tables, result slots.
    fn fixed(&self) -> u64;
    /// Alignment-rounding slack per worker (many small buffers round up).
    fn slack(&self) -> u64 {
        1 << 20
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
    fn msm_g1_kept(&self, len: usize, window_bits: u32) -> u64 {
        Msm::<G1>::kept_bytes_for(len, window_bits)
    }
    fn kept_h_window(&self, h: usize, chunk: usize, bytes: u64) -> Option<u32> {
        Msm::<G1>::choose_kept_window(h, chunk, bytes)
    }
    fn classifier(&self, len: usize) -> u64 {
        Classifier::bytes_for(len)
    }
    fn gather(&self, len: usize) -> u64 {
        BitmapGather::bytes_for(len)
    }
    fn fixed(&self) -> u64 {
        // Batch-sum partials (a few thousand XYZZ points per curve), the NTT
        // twiddle tables (a few MiB) and result slots.
        64 << 20
    }
}
