//! One worker's proving of a partition on its device: its scratch (sized
//! for the longest MSM it runs: kept with a resident key, made for the MSM
//! stage alone with a streamed one), the stage clock (CUDA events), the H
//! polynomial and the five MSMs with the key resident. The streamed-key MSMs
//! are `streamed.rs`; the resident key's upload is `srs.rs`; a, b, c
//! evaluated on the device from resident matrices are `matrices.rs`.

use std::sync::Arc;

use cuzk_cuda::gather::BitmapGather;
use cuzk_cuda::msm::{BatchSum, Classifier, Msm, G1, G2};
use cuzk_cuda::ntt::{h_finish, h_mul, h_step, ntt, NttKind};
use cuzk_cuda::packed::Classed;
use cuzk_cuda::staging::Staging;
use cuzk_cuda::{Arena, DeviceBuffer, Gpu, HostPin, Stream};
use cuzk_field::limbs::{fr_as_limbs, DeviceRepr, FrLimbs, G1AffineLimbs};
use cuzk_field::Fr;
use cuzk_groth16::prover::{MsmSums, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::precompiled::CompactAux;
use cuzk_synth::Synthesized;

use crate::matrices::{AbcMatrices, MatrixSlot};
use crate::plan::{HPoly, SrsMode, VramPlan};
use crate::srs::{HPoints, ResidentSrs, SrsSlot};

pub(crate) struct Scratch {
    pub(crate) len: usize,
    pub(crate) g2_len: usize,
    /// Aux values the gather is sized for.
    pub(crate) gather_len: usize,
    /// The window of H's kept buckets the G1 MSM holds (the plan's
    /// `h_kept`; a streamed key's).
    pub(crate) h_kept: Option<u32>,
    /// The plain G1 MSM; `None` while a shifted H MSM has its room.
    pub(crate) g1: Option<Msm<G1>>,
    pub(crate) g2: Msm<G2>,
    pub(crate) classifier: Classifier,
    pub(crate) gather: BitmapGather,
}

pub(crate) struct Worker {
    pub(crate) gpu: Gpu,
    pub(crate) arena: Arena,
    pub(crate) stream: Stream,
    pub(crate) copy: Stream,
    /// Two pinned buffers of `STAGE_BYTES` and the worker's own fill
    /// threads (without them, the global rayon pool fills, slower beside
    /// other work).
    pub(crate) staging: Staging,
    /// The streamed key's pin in host memory, during its MSMs.
    pub(crate) pin: Option<HostPin>,
    pub(crate) scratch: Option<Scratch>,
    pub(crate) sum_g1: BatchSum<G1>,
    pub(crate) sum_g2: BatchSum<G2>,
    pub(crate) srs: SrsSlot,
    /// The pre-compiled circuit whose matrices are resident (shared by the
    /// device's workers).
    pub(crate) matrices: MatrixSlot,
    /// Give the MSM scratch back to the arena after each partition (when the
    /// arena is shared by several workers and admission counts it per partition).
    pub(crate) release_scratch: bool,
    /// How a deferred witness's aux values go up.
    pub(crate) z_upload: crate::ZUpload,
    /// What the last z upload moved.
    pub(crate) last_z: Option<crate::ZUploadReport>,
    /// Key bytes the last partition copied in (0 with the key resident);
    /// after a batch, each member's share.
    pub(crate) last_key_bytes: u64,
    /// Pinned host buffers for parked H coefficients, one per member of
    /// the largest parked batch so far (made once, kept), shared by the
    /// device's workers (one parked batch runs at a time: its admission
    /// holds the device's room).
    pub(crate) parked: crate::streamed::ParkedPool,
    /// After a parked batch: its size and the H coefficients' bytes each
    /// member moved each way (0 otherwise).
    pub(crate) last_parked: (usize, u64),
    /// The other bytes the last partition moved (its aux values up, the
    /// matrices streamed, a parked member's compact aux values); after a
    /// batch, each member's share.
    pub(crate) last_moved: u64,
}

pub(crate) use crate::clock::Clock;

mod bytes;

/// A query's scalar mix (`RUST_LOG=cuzk_gpu=debug`): how many of its
/// scalars the batch sums take (ones), Pippenger takes (others) and none
/// (zeros).
fn log_mix(query: &str, c: cuzk_cuda::msm::ClassCounts) {
    tracing::debug!(
        "{query} scalars: {} zero, {} one, {} other",
        c.zeros,
        c.ones,
        c.others
    );
}

/// Where a streamed MSM's scalars come from.
#[derive(Clone, Copy)]
pub(crate) enum Scalars<'a> {
    Device(&'a DeviceBuffer<FrLimbs>),
    Host(&'a [Fr]),
    /// Gathered a chunk at a time from aux values in VRAM.
    Dense(&'a crate::dense::DenseScalars<'a>),
    /// Expanded a chunk at a time from a compact vector in VRAM (a parked
    /// batch member's aux values, L's scalars).
    Compact(&'a cuzk_cuda::compact::CompactOnDevice),
    /// Parked in pinned host memory, a chunk copied back ahead of its sums
    /// (a parked batch member's H coefficients).
    Parked(&'a cuzk_cuda::PinnedBuffer<FrLimbs>),
}

/// The H polynomial with a, b, c all on the device: three NTT pairs, the H
/// step, the coset iNTT; returns the coefficients (in a's buffer).
fn full_h(s: &Stream, abc: [DeviceBuffer<FrLimbs>; 3]) -> cuzk_cuda::Result<DeviceBuffer<FrLimbs>> {
    let [mut da, mut db, mut dc] = abc;
    for d in [&mut da, &mut db, &mut dc] {
        ntt(s, d, NttKind::Inverse)?;
        ntt(s, d, NttKind::CosetForward)?;
    }
    h_step(s, &mut da, &db, &dc)?;
    drop((db, dc));
    ntt(s, &mut da, NttKind::CosetInverse)?;
    Ok(da)
}

impl Worker {
    pub(crate) fn prove(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let waited = cuzk_cuda::fence_wait_on_this_thread();
        let out = self.prove_partition(plan, key, w, t);
        let waited = cuzk_cuda::fence_wait_on_this_thread() - waited;
        if !waited.is_zero() {
            tracing::info!(
                "the partition waited {:.3} s for device memory that queued GPU work still held \
                 (arena: {})",
                waited.as_secs_f64(),
                self.arena.usage()
            );
        }
        out
    }

    /// The key and the matrices in place, then the stages.
    fn prove_partition(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let resident = match plan.mode {
            SrsMode::Resident => Some(self.make_resident(key, plan, t)?),
            // Alone on its arena, a worker frees its resident key before
            // streaming; under admission the key stays (admission made room).
            SrsMode::Streamed { .. } => {
                self.srs.lock().release_for_streaming();
                None
            }
        };
        let matrices = self.abc_matrices(plan, w, t)?;
        self.prove_stages(plan, key, w, resident, matrices.as_ref(), t)
    }

    /// Where `w`'s a, b, c come from on the device under `plan`: its
    /// recording's matrices made resident, or streamed from the host;
    /// `None` when the host evaluates them.
    pub(crate) fn abc_matrices<'w>(
        &mut self,
        plan: &VramPlan,
        w: &'w Synthesized,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<Option<AbcMatrices<'w>>> {
        Ok(
            match (&w.deferred, plan.abc_on_device(), plan.matrices_streamed()) {
                (Some(d), true, None) => {
                    Some(AbcMatrices::Resident(self.make_matrices_resident(d, t)?))
                }
                (Some(d), true, Some(terms)) => {
                    let pinned = self.pinned_matrices(d, terms, t);
                    tracing::info!(
                        "a, b, c on the device, matrices streamed from the host ({}): {plan}",
                        match pinned {
                            Some(_) => "pinned",
                            None => "through the staging buffers",
                        }
                    );
                    Some(AbcMatrices::Streamed(Box::new(d.r1cs()), terms, pinned))
                }
                _ => None,
            },
        )
    }

    /// One partition's stages, with the key resident (`resident`) or
    /// streamed, a, b, c from `matrices` on the device or from the host.
    fn prove_stages(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        w: &Synthesized,
        resident: Option<Arc<ResidentSrs>>,
        matrices: Option<&AbcMatrices<'_>>,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = plan.shape.domain;
        // A streamed key's scratch is made when its MSMs start (after the H
        // polynomial's vectors are given back): the plan counts it there.
        if !plan.scratch_in_msm_stages() {
            self.size_for(plan)?;
        }
        let mut clock = Clock::new();
        self.forget_last_run();

        // H polynomial: a, b, c in zeroed n-long buffers (the padding stays
        // zero), evaluated on the device from z, or uploaded through the
        // pinned pool; then iNTT, coset NTT, (a·b − c)/Z, coset iNTT, all on
        // the device: the three at once, or (lean) two at a time.
        let (da, aux_on_device) = match (matrices, plan.h_poly) {
            (Some(m), h_poly) => {
                let (h, aux) = self.device_h(m, w, n, h_poly, &mut clock)?;
                (h, Some(aux))
            }
            (None, layout) => {
                let host;
                let vectors: [&[Fr]; 3] = if w.abc_on_host() {
                    [&w.a, &w.b, &w.c]
                } else {
                    tracing::info!("a, b, c evaluated on the host: {plan}");
                    host = w.padded_abc(n);
                    [&host[0], &host[1], &host[2]]
                };
                let h = match layout {
                    HPoly::Full => {
                        clock.start(&s, "upload_abc")?;
                        let mut abc = [s.alloc::<FrLimbs>(n)?, s.alloc(n)?, s.alloc(n)?];
                        for (v, d) in vectors.into_iter().zip(&mut abc) {
                            self.stage_upload(&s, fr_as_limbs(v), d, 0)?;
                            self.last_moved += std::mem::size_of_val(v) as u64;
                        }
                        clock.stop(&s)?;
                        clock.start(&s, "h_poly")?;
                        let h = full_h(&s, abc)?;
                        clock.stop(&s)?;
                        h
                    }
                    HPoly::Lean => {
                        // Each upload inside H: the stage holds both.
                        clock.start(&s, "h_poly")?;
                        let h = self.lean_h(n, |worker, which, out| {
                            let stream = worker.stream.clone();
                            worker.last_moved += std::mem::size_of_val(vectors[which]) as u64;
                            worker.stage_upload(&stream, fr_as_limbs(vectors[which]), out, 0)
                        })?;
                        clock.stop(&s)?;
                        h
                    }
                };
                (h, None)
            }
        };

        let sums = match (plan.mode, resident) {
            (SrsMode::Resident, Some(srs)) => {
                self.resident_msms(&srs, w, da, aux_on_device, &mut clock)?
            }
            (SrsMode::Streamed { .. }, _) => {
                // The ring's first buffers and crossings while the H
                // polynomial runs, before the scratch waits for its vectors.
                let interleaved = aux_on_device.is_some();
                let ring = self.open_ring_ahead(plan, key, n, w.num_aux(), interleaved)?;
                // A's and B's rank indexes too (host work the device would
                // otherwise idle for after the H polynomial).
                let aux_on_device =
                    aux_on_device.map(|aux| (aux, crate::streamed::dense_indexes(w)));
                self.size_for(plan)?;
                let sums = self.streamed_msms(ring, key, w, da, aux_on_device, &mut clock, t);
                // Both only for the MSM stage (the plan counts them there).
                self.pin = None;
                self.scratch = None;
                sums?
            }
            (SrsMode::Resident, None) => unreachable!("a resident plan made its key resident"),
        };
        if self.release_scratch {
            self.scratch = None;
        }
        s.synchronize()?;
        clock.report(t)?;
        Ok(sums)
    }

    /// a, b, c evaluated on the device from `matrices`, then the H
    /// polynomial (the three at once, or lean): H's coefficients and the
    /// aux values (z's tail, for L, A and B).
    pub(crate) fn device_h(
        &mut self,
        matrices: &AbcMatrices<'_>,
        w: &Synthesized,
        n: usize,
        h_poly: HPoly,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<(DeviceBuffer<FrLimbs>, DeviceBuffer<FrLimbs>)> {
        match h_poly {
            HPoly::Full => {
                let s = self.stream.clone();
                let (abc, aux) = self.device_abc(matrices, w, n, clock)?;
                clock.start(&s, "h_poly")?;
                let h = full_h(&s, abc)?;
                clock.stop(&s)?;
                Ok((h, aux))
            }
            HPoly::Lean => self.device_abc_lean(matrices, w, n, clock),
        }
    }

    /// The worker's scratch sized for `plan`'s MSMs and gathers.
    pub(crate) fn size_for(&mut self, plan: &VramPlan) -> cuzk_cuda::Result<()> {
        self.size_scratch(
            plan.msm_len,
            crate::plan::g2_msm_len(plan.mode, plan.msm_len, &plan.shape),
            plan.gather_len,
            plan.h_kept,
        )
    }

    fn resident_msms(
        &mut self,
        srs: &ResidentSrs,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        aux_on_device: Option<DeviceBuffer<FrLimbs>>,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<MsmSums> {
        let s = self.stream.clone();
        let n = dh.len();

        clock.start(&s, "msm_h")?;
        let scratch = self.scratch.as_mut().expect("sized above");
        let h = match &srs.h {
            HPoints::Plain(h) => {
                let g1 = scratch.g1.as_mut().expect("made with the scratch");
                g1.enqueue(h, &dh, None, n - 1)?;
                g1.result()?
            }
            HPoints::Shifted(hs) => {
                // The plain MSM's scratch makes room for the shifted one's
                // (the plan counts the larger), and comes back after it.
                scratch.g1 = None;
                let mut msm = Msm::<G1>::for_shifted(&s, n - 1, hs)?;
                msm.enqueue_shifted(hs, &dh, None, n - 1)?;
                let h = msm.result()?;
                drop(msm);
                scratch.g1 = Some(Msm::new(&s, scratch.len)?);
                h
            }
        };
        drop(dh);
        clock.stop(&s)?;

        // The aux values go up once (unless z brought them for a, b, c): L's
        // scalars, and the source of A's and B's dense scalars, gathered on
        // the device by density bitmap.
        clock.start(&s, "msm_l")?;
        let aux = w.num_aux();
        let dl = match aux_on_device {
            Some(dl) => dl,
            None => {
                let mut dl = s.alloc::<FrLimbs>(aux)?;
                match &w.compact_aux {
                    Some(c) => {
                        self.last_moved += classed_bytes(&classed(c));
                        self.staging.upload_classed(&s, classed(c), &mut dl, 0)?;
                    }
                    None => {
                        self.last_moved += std::mem::size_of_val(&w.aux_assignment[..]) as u64;
                        self.stage_upload(&s, fr_as_limbs(&w.aux_assignment), &mut dl, 0)?
                    }
                }
                dl
            }
        };
        let l = self.split_g1("L", &srs.l, &dl)?;
        clock.stop(&s)?;

        clock.start(&s, "msm_a")?;
        let da = self.dense_scalars(&dl, w, srs.a.len(), Dense::A)?;
        let a = self.split_g1("A", &srs.a, &da)?;
        drop(da);
        clock.stop(&s)?;

        // B in G1 and G2 share one upload and one classification.
        clock.start(&s, "msm_b_g1")?;
        let db = self.dense_scalars(&dl, w, srs.b_g1.len(), Dense::B)?;
        drop(dl);
        let scratch = self.scratch.as_mut().expect("sized above");
        let counts = scratch.classifier.classify(&db)?;
        log_mix("B", counts);
        let b_g1 = self
            .sum_g1
            .sum_indices(&srs.b_g1, scratch.classifier.ones(), counts.ones)?
            + scratch
                .g1
                .as_mut()
                .expect("made with the scratch")
                .run_indexed(&srs.b_g1, &db, scratch.classifier.others(), counts.others)?;
        clock.stop(&s)?;
        clock.start(&s, "msm_b_g2")?;
        let b_g2 = self
            .sum_g2
            .sum_indices(&srs.b_g2, scratch.classifier.ones(), counts.ones)?
            + scratch
                .g2
                .run_indexed(&srs.b_g2, &db, scratch.classifier.others(), counts.others)?;
        clock.stop(&s)?;
        Ok(MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// Fills `out[head..]` with the aux values at the set bits of `density`
    /// (on the device) and checks that this completes `out` exactly.
    pub(crate) fn gather_aux(
        &mut self,
        aux: &DeviceBuffer<FrLimbs>,
        density: &[u64],
        out: &mut DeviceBuffer<FrLimbs>,
        head: usize,
        n: usize,
    ) -> cuzk_cuda::Result<()> {
        let scratch = self.scratch.as_mut().expect("sized above");
        let count = scratch.gather.gather(aux, n, density, out, head)?;
        if head + count != out.len() {
            return Err(cuzk_cuda::Error::BadArguments {
                kernel: "prover_gather_set_bits",
                message: format!(
                    "{head} inputs + {count} aux values by density, but the key section has {} points",
                    out.len()
                ),
            });
        }
        Ok(())
    }

    /// Σ scalars[i]·bases[i] with the scalars classified on the device: ones
    /// batch-summed, others through Pippenger, zeros skipped.
    fn split_g1(
        &mut self,
        query: &str,
        bases: &DeviceBuffer<G1AffineLimbs>,
        scalars: &DeviceBuffer<FrLimbs>,
    ) -> cuzk_cuda::Result<cuzk_field::G1Projective> {
        let scratch = self.scratch.as_mut().expect("sized above");
        let counts = scratch.classifier.classify(scalars)?;
        log_mix(query, counts);
        let ones = self
            .sum_g1
            .sum_indices(bases, scratch.classifier.ones(), counts.ones)?;
        let rest = scratch
            .g1
            .as_mut()
            .expect("made with the scratch")
            .run_indexed(bases, scalars, scratch.classifier.others(), counts.others)?;
        Ok(ones + rest)
    }

    /// Scratch for G1 MSMs of up to `len` pairs, G2 MSMs of up to `g2_len`
    /// and gathers from up to `gather_len` aux values.
    fn size_scratch(
        &mut self,
        len: usize,
        g2_len: usize,
        gather_len: usize,
        h_kept: Option<u32>,
    ) -> cuzk_cuda::Result<()> {
        // (A partition that failed inside a shifted msm_h leaves no plain G1
        // scratch: that one is made again.)
        if self.scratch.as_ref().is_some_and(|sc| {
            (sc.len, sc.g2_len, sc.gather_len, sc.h_kept) == (len, g2_len, gather_len, h_kept)
                && sc.g1.is_some()
        }) {
            return Ok(());
        }
        self.scratch = None; // free the old scratch before making the new one
        let s = &self.stream;
        let g1 = match h_kept {
            Some(c) => Msm::with_kept_window(s, len, c)?,
            None => Msm::new(s, len)?,
        };
        self.scratch = Some(Scratch {
            len,
            g2_len,
            gather_len,
            h_kept,
            g1: Some(g1),
            g2: Msm::new(s, g2_len)?,
            classifier: Classifier::new(s, len)?,
            gather: BitmapGather::new(s, gather_len)?,
        });
        Ok(())
    }

    /// The H polynomial two n-long vectors at a time: `fill(worker, k, v)`
    /// writes a (k = 0), b (1) or c (2) into a zeroed buffer; a's NTTs,
    /// then b's and a ← a·b (b freed), then c's and a ← (a − c)/Z (c freed),
    /// then the coset iNTT. The same values as [`full_h`], bit for bit.
    pub(crate) fn lean_h(
        &mut self,
        n: usize,
        mut fill: impl FnMut(&mut Worker, usize, &mut DeviceBuffer<FrLimbs>) -> cuzk_cuda::Result<()>,
    ) -> cuzk_cuda::Result<DeviceBuffer<FrLimbs>> {
        let s = self.stream.clone();
        let mut coset = |worker: &mut Worker, which: usize| {
            let mut v = s.alloc::<FrLimbs>(n)?;
            fill(worker, which, &mut v)?;
            ntt(&s, &mut v, NttKind::Inverse)?;
            ntt(&s, &mut v, NttKind::CosetForward)?;
            Ok::<_, cuzk_cuda::Error>(v)
        };
        let mut a = coset(self, 0)?;
        let b = coset(self, 1)?;
        h_mul(&s, &mut a, &b)?;
        drop(b);
        let c = coset(self, 2)?;
        h_finish(&s, &mut a, &c)?;
        drop(c);
        ntt(&s, &mut a, NttKind::CosetInverse)?;
        Ok(a)
    }

    /// A's (`Dense::A`) or B's dense scalars on the device, `len` of them:
    /// the inputs of the section's density, then its aux values gathered
    /// from `dl` (in VRAM). B's serve G1 and G2.
    pub(crate) fn dense_scalars(
        &mut self,
        dl: &DeviceBuffer<FrLimbs>,
        w: &Synthesized,
        len: usize,
        which: Dense,
    ) -> cuzk_cuda::Result<DeviceBuffer<FrLimbs>> {
        let (inputs, density) = self.dense_parts(w, which);
        let mut d = self.stream.alloc::<FrLimbs>(len)?;
        self.stream.upload_at(fr_as_limbs(&inputs), &mut d, 0)?;
        self.gather_aux(dl, density, &mut d, inputs.len(), w.num_aux())?;
        Ok(d)
    }

    /// A's or B's input values (all inputs for A, B's by its input
    /// density) and its aux density bitmap.
    pub(crate) fn dense_parts<'w>(&self, w: &'w Synthesized, which: Dense) -> (Vec<Fr>, &'w [u64]) {
        match which {
            Dense::A => (w.input_assignment.clone(), w.a_aux_density.as_words()),
            Dense::B => (
                w.b_input_density
                    .iter_ones()
                    .map(|i| w.input_assignment[i])
                    .collect(),
                w.b_aux_density.as_words(),
            ),
        }
    }

    /// Copies `src` into `dst[at..]` on `stream` through the two pinned
    /// staging buffers: one is filled (in parallel) while the other's copy runs.
    pub(crate) fn stage_upload<T: DeviceRepr + Sync>(
        &mut self,
        stream: &Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> cuzk_cuda::Result<()> {
        self.staging.upload(stream, src, dst, at)
    }
}

/// Which section's dense scalars ([`Worker::dense_scalars`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dense {
    A,
    B,
}

/// The bytes of `c`'s sections (what its upload moves).
pub(crate) fn classed_bytes(c: &Classed<'_>) -> u64 {
    (std::mem::size_of_val(c.codes)
        + std::mem::size_of_val(c.before)
        + std::mem::size_of_val(c.others)) as u64
}

/// A compact witness's aux values as cuzk-cuda's [`Classed`] sections: the
/// two crates' layouts are the same (cuzk-synth `precompiled::compact`,
/// cuzk-cuda `packed`; `tests::compact_aux_is_packed_s_layout` pins it),
/// so the z upload sends them as they are.
pub(crate) fn classed(c: &CompactAux) -> Classed<'_> {
    Classed {
        len: c.len(),
        codes: c.codes(),
        before: c.before(),
        others: fr_as_limbs(c.others()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_cuda::packed::expand;

    /// A compact witness's sections, laid out in pieces by cuzk-cuda, expand
    /// (through the device kernel's CPU reference) to the witness's values:
    /// the two crates' layouts agree, 0 and the Montgomery one included.
    #[test]
    fn compact_aux_is_packed_s_layout() {
        let values: Vec<Fr> = (0..5000u64)
            .map(|i| match i % 7 {
                0 | 3 => Fr::from(1u64),
                1 => Fr::from(i),
                5 => -Fr::from(1u64),
                _ => Fr::from(0u64),
            })
            .collect();
        let compact = CompactAux::from_values(&values);
        let sections = classed(&compact);
        sections.check().unwrap();
        for room in [130, 1000, 1 << 16] {
            let mut out = vec![0u64; room];
            let (mut w0, mut expanded) = (0, Vec::new());
            while w0 < compact.codes().len() {
                let w1 = sections.piece_end(w0, room).unwrap();
                let layout = sections.write_piece(w0, w1, &mut out);
                expanded.extend(expand(&out[..layout.words()], layout.len).unwrap());
                w0 = w1;
            }
            assert_eq!(expanded, fr_as_limbs(&values), "room {room}");
        }
    }
}
