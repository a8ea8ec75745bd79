#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

use std::time::Instant;

use cuzk_cuda::msm::{BatchSum, Classifier, Msm, MsmCurve, G1, G2};
use cuzk_cuda::ntt::{h_step, ntt, NttKind};
use cuzk_cuda::{DeviceBuffer, Gpu, Stream};
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::{Fr, G1Affine};
use cuzk_groth16::prover::{dense_scalars, Backend, MsmSums, ProveError, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;
use parking_lot::Mutex;

/// The GPU backend of the prover: one device, one stream, scratch reused across partitions.
pub struct CudaBackend {
    name: &'static str,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

struct Inner {
    gpu: Gpu,
    stream: Stream,
    /// Reusable scratch, each with the length it was sized for.
    msm_g1: Option<(usize, Msm<G1>)>,
    msm_g2: Option<(usize, Msm<G2>)>,
    classifier: Option<(usize, Classifier)>,
    sum_g1: BatchSum<G1>,
    sum_g2: BatchSum<G2>,
    srs: Option<ResidentSrs>,
}

/// A proving key's points in device memory.
struct ResidentSrs {
    fingerprint: Fingerprint,
    h: DeviceBuffer<G1AffineLimbs>,
    l: DeviceBuffer<G1AffineLimbs>,
    a: DeviceBuffer<G1AffineLimbs>,
    b_g1: DeviceBuffer<G1AffineLimbs>,
    b_g2: DeviceBuffer<G2AffineLimbs>,
}

/// What identifies a key cheaply: every section's length and its first and last points.
#[derive(Clone, PartialEq, Eq)]
struct Fingerprint(Vec<u8>);

impl Fingerprint {
    fn of(key: &ProvingKey) -> Self {
        let mut v = Vec::new();
        let mut g1 = |p: &[G1Affine]| {
            v.extend_from_slice(&(p.len() as u64).to_le_bytes());
            for q in p.first().into_iter().chain(p.last()) {
                v.extend_from_slice(&q.to_compressed());
            }
        };
        g1(&key.h);
        g1(&key.l);
        g1(&key.a);
        g1(&key.b_g1);
        g1(std::slice::from_ref(&key.vk.delta_g1));
        v.extend_from_slice(&(key.b_g2.len() as u64).to_le_bytes());
        for q in key.b_g2.first().into_iter().chain(key.b_g2.last()) {
            v.extend_from_slice(&q.to_compressed());
        }
        Fingerprint(v)
    }
}

fn gpu_err(e: cuzk_cuda::Error) -> ProveError {
    ProveError::Backend {
        backend: "cuda",
        message: e.to_string(),
    }
}

impl CudaBackend {
    /// A backend on `gpu` (the fatbin must be loaded: `Gpu::open` does it).
    pub fn new(gpu: Gpu) -> Result<Self, cuzk_cuda::Error> {
        let stream = gpu.new_stream()?;
        let name: &'static str = Box::leak(format!("cuda:{}", gpu.info().ordinal).into_boxed_str());
        Ok(CudaBackend {
            name,
            inner: Mutex::new(Inner {
                sum_g1: BatchSum::new(&stream)?,
                sum_g2: BatchSum::new(&stream)?,
                gpu,
                stream,
                msm_g1: None,
                msm_g2: None,
                classifier: None,
                srs: None,
            }),
        })
    }

    /// The backend on the first CUDA device; `Ok(None)` when there is none.
    pub fn first() -> Result<Option<Self>, cuzk_cuda::Error> {
        match Gpu::first()? {
            None => Ok(None),
            Some(gpu) => Self::new(gpu).map(Some),
        }
    }

    /// The device's name, for reports.
    pub fn device_name(&self) -> String {
        self.inner.lock().gpu.info().name.clone()
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        self.name
    }

    fn msm_sums(
        &self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> Result<MsmSums, ProveError> {
        let mut inner = self.inner.lock();
        inner.prove(key, w, t).map_err(gpu_err)
    }
}

/// Grows a reusable scratch object when `need` exceeds what it was made for.
fn ensure_capacity<T>(
    slot: &mut Option<(usize, T)>,
    need: usize,
    make: impl FnOnce(usize) -> cuzk_cuda::Result<T>,
) -> cuzk_cuda::Result<()> {
    if slot.as_ref().is_none_or(|(cap, _)| *cap < need) {
        *slot = None; // free the old scratch before making the larger one
        *slot = Some((need, make(need)?));
    }
    Ok(())
}

impl Inner {
    fn prove(
        &mut self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        self.make_resident(key, t)?;
        let n = 1usize << w.domain_log2();
        let biggest = n
            .max(w.aux_assignment.len())
            .max(key.a.len())
            .max(key.b_g1.len());
        self.size_scratch(biggest)?;

        // H polynomial: iNTT, coset NTT, (a·b − c)/Z, coset iNTT, all on the device.
        let start = Instant::now();
        // Zero padding happens on the device: a fresh allocation is zeroed.
        let upload_padded = |v: &[Fr]| -> cuzk_cuda::Result<DeviceBuffer<FrLimbs>> {
            let mut d = s.alloc::<FrLimbs>(n)?;
            s.upload_prefix(fr_as_limbs(v), &mut d)?;
            Ok(d)
        };
        let mut da = upload_padded(&w.a)?;
        let mut db = upload_padded(&w.b)?;
        let mut dc = upload_padded(&w.c)?;
        t.record("upload_abc", start.elapsed());
        let start = Instant::now();
        for d in [&mut da, &mut db, &mut dc] {
            ntt(&s, d, NttKind::Inverse)?;
            ntt(&s, d, NttKind::CosetForward)?;
        }
        h_step(&s, &mut da, &db, &dc)?;
        drop((db, dc));
        ntt(&s, &mut da, NttKind::CosetInverse)?;
        s.synchronize()?;
        t.record("h_poly", start.elapsed());

        let srs = self.srs.as_ref().expect("made resident above");
        let msm_g1 = &mut self.msm_g1.as_mut().expect("sized above").1;
        let msm_g2 = &mut self.msm_g2.as_mut().expect("sized above").1;
        let classifier = &mut self.classifier.as_mut().expect("sized above").1;

        let start = Instant::now();
        msm_g1.enqueue(&srs.h, &da, None, n - 1)?;
        let h = msm_g1.result()?;
        drop(da);
        t.record("msm_h", start.elapsed());

        let start = Instant::now();
        let l = split_msm(
            &s,
            classifier,
            msm_g1,
            &mut self.sum_g1,
            &srs.l,
            &w.aux_assignment,
        )?;
        t.record("msm_l", start.elapsed());

        let start = Instant::now();
        let a_scalars = dense_scalars(
            &w.input_assignment,
            None,
            &w.aux_assignment,
            &w.a_aux_density,
        );
        let b_scalars = dense_scalars(
            &w.input_assignment,
            Some(&w.b_input_density),
            &w.aux_assignment,
            &w.b_aux_density,
        );
        t.record("gather", start.elapsed());

        let start = Instant::now();
        let a = split_msm(&s, classifier, msm_g1, &mut self.sum_g1, &srs.a, &a_scalars)?;
        t.record("msm_a", start.elapsed());

        // B in G1 and G2 share one upload and one classification.
        let start = Instant::now();
        let db = s.upload_new(fr_as_limbs(&b_scalars))?;
        let counts = classifier.classify(&db)?;
        let b_g1 = self
            .sum_g1
            .sum_indices(&srs.b_g1, classifier.ones(), counts.ones)?
            + msm_g1.run_indexed(&srs.b_g1, &db, classifier.others(), counts.others)?;
        t.record("msm_b_g1", start.elapsed());
        let start = Instant::now();
        let b_g2 = self
            .sum_g2
            .sum_indices(&srs.b_g2, classifier.ones(), counts.ones)?
            + msm_g2.run_indexed(&srs.b_g2, &db, classifier.others(), counts.others)?;
        t.record("msm_b_g2", start.elapsed());

        Ok(MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// Uploads the key's points unless this key is already resident.
    fn make_resident(&mut self, key: &ProvingKey, t: &mut StageTimings) -> cuzk_cuda::Result<()> {
        let fp = Fingerprint::of(key);
        if self.srs.as_ref().is_some_and(|r| r.fingerprint == fp) {
            return Ok(());
        }
        let start = Instant::now();
        self.srs = None;
        let s = &self.stream;
        self.srs = Some(ResidentSrs {
            fingerprint: fp,
            h: s.upload_new(g1_as_limbs(&key.h))?,
            l: s.upload_new(g1_as_limbs(&key.l))?,
            a: s.upload_new(g1_as_limbs(&key.a))?,
            b_g1: s.upload_new(g1_as_limbs(&key.b_g1))?,
            b_g2: s.upload_new(g2_as_limbs(&key.b_g2))?,
        });
        s.synchronize()?;
        t.record("srs_upload", start.elapsed());
        Ok(())
    }

    fn size_scratch(&mut self, need: usize) -> cuzk_cuda::Result<()> {
        let s = &self.stream;
        ensure_capacity(&mut self.msm_g1, need, |n| Msm::new(s, n))?;
        ensure_capacity(&mut self.msm_g2, need, |n| Msm::new(s, n))?;
        ensure_capacity(&mut self.classifier, need, |n| Classifier::new(s, n))?;
        Ok(())
    }
}

/// Σ scalars[i]·bases[i] with the scalars classified on the device: ones
/// batch-summed, others through Pippenger, zeros skipped.
fn split_msm<C: MsmCurve>(
    s: &Stream,
    classifier: &mut Classifier,
    msm: &mut Msm<C>,
    sum: &mut BatchSum<C>,
    bases: &DeviceBuffer<C::Affine>,
    scalars: &[Fr],
) -> cuzk_cuda::Result<C::Projective>
where
    C::Projective: std::ops::Add<Output = C::Projective>,
{
    let d = s.upload_new(fr_as_limbs(scalars))?;
    let counts = classifier.classify(&d)?;
    let ones = sum.sum_indices(bases, classifier.ones(), counts.ones)?;
    let rest = msm.run_indexed(bases, &d, classifier.others(), counts.others)?;
    Ok(ones + rest)
}
