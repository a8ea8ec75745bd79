//! The five MSMs with the key streamed from host memory: each section is
//! copied in `chunk` points at a time while the previous chunk's MSM runs,
//! straight from the key's memory when it is pinned in place (the device's
//! `SrsSlot::pin_in_host`), else through the worker's two pinned staging
//! buffers, filled by its own threads; the chunks' sums are added on the
//! host.

use std::ops::Add;
use std::time::Instant;

use cuzk_cuda::msm::{BatchSum, Classifier, Msm, MsmCurve, G1, G2};
use cuzk_cuda::{DeviceBuffer, Event};
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::Group;
use cuzk_groth16::prover::{dense_ab_scalars_of, MsmSums, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;

use crate::worker::{add_opt, Clock, Dense, Scalars, Worker};

impl Worker {
    /// The five MSMs with the key streamed. `aux_on_device`: the aux values
    /// already in VRAM (z's tail, when a, b, c were evaluated there): L
    /// reads them in place and A's and B's scalars are gathered from them on
    /// the device, so no scalar crosses PCIe; without it every scalar
    /// streams from the host beside its bases (A's and B's gathered on the
    /// host first).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn streamed_msms(
        &mut self,
        chunk: usize,
        key: &ProvingKey,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        aux_on_device: Option<DeviceBuffer<FrLimbs>>,
        clock: &mut Clock,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = dh.len();
        self.pin = self.srs.host_pin(key);
        if self.pin.is_none() {
            tracing::info!(
                "the streamed key is not pinned in host memory: its chunks cross through \
                 the staging buffers"
            );
        }
        clock.start(&s, "msm_h")?;
        let h = self.stream_g1(chunk, g1_as_limbs(&key.h), Scalars::Device(&dh), n - 1)?;
        drop(dh);
        clock.stop(&s)?;

        let aux = w.num_aux();
        let (l, a, b_g1, b_g2) = match aux_on_device {
            Some(dl) => {
                clock.start(&s, "msm_l")?;
                let l = self.stream_g1(chunk, g1_as_limbs(&key.l), Scalars::Device(&dl), aux)?;
                clock.stop(&s)?;
                clock.start(&s, "msm_a")?;
                let da = self.dense_scalars(&dl, w, key.a.len(), Dense::A)?;
                let a =
                    self.stream_g1(chunk, g1_as_limbs(&key.a), Scalars::Device(&da), da.len())?;
                drop(da);
                clock.stop(&s)?;
                clock.start(&s, "msm_b_g1")?;
                let db = self.dense_scalars(&dl, w, key.b_g1.len(), Dense::B)?;
                drop(dl);
                let len = db.len();
                let b_g1 =
                    self.stream_g1(chunk, g1_as_limbs(&key.b_g1), Scalars::Device(&db), len)?;
                clock.stop(&s)?;
                clock.start(&s, "msm_b_g2")?;
                let b_g2 =
                    self.stream_g2(chunk, g2_as_limbs(&key.b_g2), Scalars::Device(&db), len)?;
                clock.stop(&s)?;
                (l, a, b_g1, b_g2)
            }
            None => {
                clock.start(&s, "msm_l")?;
                // A compact witness's values are expanded on the host: these
                // MSMs read host scalars.
                let values = w.aux_values();
                let l = self.stream_g1(chunk, g1_as_limbs(&key.l), Scalars::Host(&values), aux)?;
                clock.stop(&s)?;

                let start = Instant::now();
                let (a_scalars, b_scalars) = dense_ab_scalars_of(w, &values);
                drop(values);
                t.record("gather", start.elapsed());

                clock.start(&s, "msm_a")?;
                let a = self.stream_g1(
                    chunk,
                    g1_as_limbs(&key.a),
                    Scalars::Host(&a_scalars),
                    a_scalars.len(),
                )?;
                clock.stop(&s)?;
                clock.start(&s, "msm_b_g1")?;
                let b_g1 = self.stream_g1(
                    chunk,
                    g1_as_limbs(&key.b_g1),
                    Scalars::Host(&b_scalars),
                    b_scalars.len(),
                )?;
                clock.stop(&s)?;
                clock.start(&s, "msm_b_g2")?;
                let b_g2 = self.stream_g2(
                    chunk,
                    g2_as_limbs(&key.b_g2),
                    Scalars::Host(&b_scalars),
                    b_scalars.len(),
                )?;
                clock.stop(&s)?;
                (l, a, b_g1, b_g2)
            }
        };
        Ok(MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    fn stream_g1(
        &mut self,
        chunk: usize,
        bases: &[G1AffineLimbs],
        scalars: Scalars<'_>,
        count: usize,
    ) -> cuzk_cuda::Result<cuzk_field::G1Projective> {
        let r = self.stream_section::<G1>(chunk, bases, scalars, count, |w| {
            let sc = w.scratch.as_mut().expect("sized");
            let g1 = sc.g1.as_mut().expect("made with the scratch");
            (&mut sc.classifier, g1, &mut w.sum_g1)
        })?;
        Ok(r.unwrap_or_else(Group::identity))
    }

    fn stream_g2(
        &mut self,
        chunk: usize,
        bases: &[G2AffineLimbs],
        scalars: Scalars<'_>,
        count: usize,
    ) -> cuzk_cuda::Result<cuzk_field::G2Projective> {
        let r = self.stream_section::<G2>(chunk, bases, scalars, count, |w| {
            let sc = w.scratch.as_mut().expect("sized");
            (&mut sc.classifier, &mut sc.g2, &mut w.sum_g2)
        })?;
        Ok(r.unwrap_or_else(Group::identity))
    }

    /// Σ scalars[i]·bases[i] for i < count with the bases streamed from host
    /// memory `chunk` points at a time: chunk k+1 is copied in (copy stream,
    /// through the pinned pool) while chunk k's sums run (compute stream).
    fn stream_section<C: MsmCurve>(
        &mut self,
        chunk: usize,
        bases: &[C::Affine],
        scalars: Scalars<'_>,
        count: usize,
        parts: impl Fn(&mut Worker) -> (&mut Classifier, &mut Msm<C>, &mut BatchSum<C>),
    ) -> cuzk_cuda::Result<Option<C::Projective>>
    where
        C::Affine: Sync,
        C::Projective: Add<Output = C::Projective>,
    {
        if count == 0 {
            return Ok(None);
        }
        let s = self.stream.clone();
        let copy = self.copy.clone();
        let mut dbases = [s.alloc::<C::Affine>(chunk)?, s.alloc::<C::Affine>(chunk)?];
        let mut dscalars = s.alloc::<FrLimbs>(chunk)?;
        // The copy stream writes into buffers zeroed on the compute stream.
        copy.wait(&s.record()?)?;
        let chunks = count.div_ceil(chunk);
        let range = |k: usize| (k * chunk, ((k + 1) * chunk).min(count));
        let mut uploaded: [Option<Event>; 2] = [None, None];
        let mut used: [Option<Event>; 2] = [None, None];
        let (s0, e0) = range(0);
        self.chunk_upload(&copy, &bases[s0..e0], &mut dbases[0])?;
        uploaded[0] = Some(copy.record()?);
        let mut total = None;
        for k in 0..chunks {
            let slot = k % 2;
            let (start, end) = range(k);
            let len = end - start;
            s.wait(uploaded[slot].as_ref().expect("uploaded before use"))?;
            match scalars {
                Scalars::Device(d) => s.copy_range(d, start, &mut dscalars, 0, len)?,
                Scalars::Host(h) => {
                    self.stage_upload(&s, fr_as_limbs(&h[start..end]), &mut dscalars, 0)?
                }
            }
            if len < chunk {
                s.zero_range(&mut dscalars, len, chunk - len)?;
            }
            {
                let (classifier, msm, sum) = parts(self);
                let counts = classifier.classify(&dscalars)?;
                sum.enqueue_indices(&dbases[slot], classifier.ones(), counts.ones)?;
                msm.enqueue(
                    &dbases[slot],
                    &dscalars,
                    Some(classifier.others()),
                    counts.others,
                )?;
            }
            used[slot] = Some(s.record()?);
            // Copy the next chunk in while this one's sums run.
            if k + 1 < chunks {
                let next = (k + 1) % 2;
                if let Some(e) = &used[next] {
                    copy.wait(e)?;
                }
                let (ns, ne) = range(k + 1);
                self.chunk_upload(&copy, &bases[ns..ne], &mut dbases[next])?;
                uploaded[next] = Some(copy.record()?);
            }
            let (_, msm, sum) = parts(self);
            let part = sum.result()? + msm.result()?;
            total = add_opt(total, part);
        }
        Ok(total)
    }

    /// One chunk of a section's points into `dst`: straight from the key's
    /// memory when it is pinned in place, else through the staging buffers.
    fn chunk_upload<T: cuzk_field::limbs::DeviceRepr + Sync>(
        &mut self,
        copy: &cuzk_cuda::Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> cuzk_cuda::Result<()> {
        match &self.pin {
            Some(pin) if pin.holds(src) => copy.upload_from_pin(pin, src, dst, 0),
            _ => self.stage_upload(copy, src, dst, 0),
        }
    }
}
