//! Key generation's fixed-base step on the GPU: [`GpuFixedBase`] implements
//! `cuzk_groth16::setup::FixedBase` with cuzk-cuda's keygen kernels, so
//! `generate_key_with(circuit, rng, &GpuFixedBase::new(&gpu)?)` gives the
//! same key bytes as the CPU generator (affine points are unique).
//!
//! Per call (one base, several batches of scalars): the window table is built
//! on the host by `WindowTable` (the same table the CPU uses), uploaded once,
//! and every batch goes through `FixedBaseTable::mul_staged` in chunks, through
//! pinned buffers allocated once per `GpuFixedBase`.

use cuzk_cuda::keygen::{FixedBaseTable, KernelTimes, KeygenCurve, Staging, MAX_WINDOW_BITS};
use cuzk_cuda::msm::{G1, G2};
use cuzk_cuda::{Gpu, Stream};
use cuzk_field::limbs::{fr_as_limbs, g1_as_limbs, g1_as_limbs_mut, g2_as_limbs, g2_as_limbs_mut};
use cuzk_field::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, PrimeCurveAffine};
use cuzk_groth16::setup::{windows_for, FixedBase, FixedBaseError, KeyCurve, WindowTable};
use parking_lot::Mutex;
use rayon::prelude::*;

/// Widest table the GPU step uses: 13 windows of 2^19 points (640 MiB in
/// G1, 1.25 GiB in G2), built on the host.
const MAX_GPU_WINDOW: u32 = 20;
/// Relative cost of one table point (built on the host) to one product
/// addition (device): the window minimizes `windows · (n + TABLE_WEIGHT ·
/// 2^(w−1))`. H200 + 16 host cores, 2026-11-30: the host built 6.8 M table
/// points in 2.02 s (3.4 M/s), while the device's floor is ~1.5e9 mixed
/// additions/s (10 Fq products each at 1.47e10/s): a ratio of ~400; 256 keeps
/// 2^24's G1 at 16-bit windows (0.5 M table points) instead of 20.
const TABLE_WEIGHT: u128 = 256;

/// The window for `n` products on the GPU (see `TABLE_WEIGHT`).
pub fn gpu_window_for(n: usize) -> u32 {
    (1..=MAX_GPU_WINDOW.min(MAX_WINDOW_BITS))
        .min_by_key(|&w| windows_for(w) as u128 * (n as u128 + TABLE_WEIGHT * (1u128 << (w - 1))))
        .expect("nonempty range")
}

/// Why [`select_fixed_base`] could not give the step asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    #[error("--backend cuda: no CUDA device on this machine")]
    /// `cuda` was asked for, and the machine has no CUDA device.
    NoDevice,
    #[error("--backend {0}: the GPU cannot be used")]
    /// The GPU that was asked for (or found by `auto`) cannot be used.
    Cuda(crate::BackendChoice, #[source] cuzk_cuda::Error),
}

/// The fixed-base step a key generator's `--backend auto|cuda|cpu` names,
/// resolved as [`resolve`](crate::resolve) resolves a prover's: `cuda` needs
/// a usable GPU; `auto` takes the first GPU, or the CPU when there is none,
/// and then also returns a line that says why (for the caller to print: the
/// fallback is never silent); a GPU that is there but cannot be used is an
/// error for both.
pub fn select_fixed_base(
    backend: crate::BackendChoice,
) -> Result<(Box<dyn FixedBase>, Option<String>), SelectError> {
    use crate::BackendChoice;
    let cpu = || Box::new(cuzk_groth16::setup::CpuFixedBase) as Box<dyn FixedBase>;
    if backend == BackendChoice::Cpu {
        return Ok((cpu(), None));
    }
    let gpu = Gpu::first()
        .and_then(|gpu| gpu.map(|gpu| GpuFixedBase::new(&gpu)).transpose())
        .map_err(|e| SelectError::Cuda(backend, e))?;
    match (gpu, backend) {
        (Some(g), _) => Ok((Box::new(g), None)),
        (None, BackendChoice::Cuda) => Err(SelectError::NoDevice),
        (None, _) => Ok((
            cpu(),
            Some("no CUDA device, fixed-base step on the CPU".into()),
        )),
    }
}

/// The fixed-base step on one CUDA device, on its own stream, with its
/// pinned staging (1 GiB, allocated once).
#[derive(Debug)]
pub struct GpuFixedBase {
    stream: Stream,
    staging: Mutex<Staging>,
}

impl GpuFixedBase {
    /// The fixed-base step on `gpu`.
    pub fn new(gpu: &Gpu) -> cuzk_cuda::Result<Self> {
        Ok(GpuFixedBase {
            stream: gpu.new_stream()?,
            staging: Mutex::new(Staging::new(gpu)?),
        })
    }

    fn fail(&self, e: cuzk_cuda::Error) -> FixedBaseError {
        FixedBaseError::new(self.name(), e)
    }

    fn run<C: KeygenCurve, G: KeyCurve>(
        &self,
        base: G,
        batches: &[&[Fr]],
        as_limbs: fn(&[G::Affine]) -> &[C::Affine],
        as_limbs_mut: fn(&mut [G::Affine]) -> &mut [C::Affine],
    ) -> Result<Vec<Vec<G::Affine>>, FixedBaseError>
    where
        G::Affine: Send + Sync,
    {
        let total: usize = batches.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(batches.iter().map(|_| Vec::new()).collect());
        }
        let w = gpu_window_for(total);
        let start = std::time::Instant::now();
        let host_table = WindowTable::new(base, w);
        let table_time = start.elapsed();
        let table = FixedBaseTable::<C>::upload(
            &self.stream,
            as_limbs(host_table.points()),
            w,
            host_table.windows() as u32,
        )
        .map_err(|e| self.fail(e))?;
        drop(host_table);
        let start = std::time::Instant::now();
        let mut staging = self.staging.lock();
        let (mut fill, mut kernels) = (std::time::Duration::ZERO, KernelTimes::default());
        let out = batches
            .iter()
            .map(|scalars| {
                // Filled in parallel: first touch of gigabytes is not free.
                let t = std::time::Instant::now();
                let mut out = Vec::with_capacity(scalars.len());
                out.par_extend(rayon::iter::repeat_n(G::Affine::identity(), scalars.len()));
                fill += t.elapsed();
                let k = table
                    .mul_staged(
                        &self.stream,
                        &mut staging,
                        fr_as_limbs(scalars),
                        as_limbs_mut(&mut out),
                    )
                    .map_err(|e| self.fail(e))?;
                kernels.mul_ms += k.mul_ms;
                kernels.affine_ms += k.affine_ms;
                Ok(out)
            })
            .collect();
        tracing::info!(
            curve = C::NAME,
            products = total,
            window = w,
            windows = table.windows(),
            table = ?table_time,
            device = ?start.elapsed(),
            output_fill = ?fill,
            mul_kernel_ms = kernels.mul_ms,
            affine_kernel_ms = kernels.affine_ms,
            "keygen: fixed-base products on the GPU (table built on the host; device time includes transfers)"
        );
        out
    }
}

impl FixedBase for GpuFixedBase {
    fn name(&self) -> String {
        format!("cuda: {}", self.stream.gpu().info())
    }

    fn mul_g1(
        &self,
        base: G1Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G1Affine>>, FixedBaseError> {
        self.run::<G1, _>(base, batches, g1_as_limbs, g1_as_limbs_mut)
    }

    fn mul_g2(
        &self,
        base: G2Projective,
        batches: &[&[Fr]],
    ) -> Result<Vec<Vec<G2Affine>>, FixedBaseError> {
        self.run::<G2, _>(base, batches, g2_as_limbs, g2_as_limbs_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_grows_with_the_batch_and_stays_in_range() {
        assert!(gpu_window_for(1) <= 8);
        assert_eq!(gpu_window_for(56_090_520), 16);
        assert!(gpu_window_for(1 << 16) < gpu_window_for(1 << 26));
        assert_eq!(gpu_window_for(1 << 30), MAX_GPU_WINDOW);
        for n in [1usize, 1000, 1 << 20, 60_000_000] {
            let w = gpu_window_for(n);
            assert!(w as usize * windows_for(w) >= 256, "n {n}: w {w}");
        }
    }
}
