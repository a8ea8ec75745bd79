//! The five MSMs with the key streamed from host memory. Every section's
//! points cross PCIe in chunks into a ring of [`RING`] chunk buffers (G1
//! chunks; a G2 chunk of half as many points takes the same bytes) while
//! earlier chunks' sums run, straight from the key's memory when it is
//! pinned in place (the device's `SrsSlot::pin_in_host`), else through the
//! worker's pinned staging buffers. H's chunks are compute-bound, L's, A's
//! and B's copy-bound: the plan's [`BesideH`] sections cross among H's
//! (`interleave.rs`), the others after. Each chunk's sums are added on the
//! host.

use std::time::Instant;

use cuzk_cuda::msm::{BatchSum, Classifier, KeptBuckets, Msm, MsmCurve, G1, G2};
use cuzk_cuda::{DeviceBuffer, Event, Stream};
use cuzk_field::limbs::{
    fr_as_limbs, g1_as_limbs, g2_as_limbs, DeviceRepr, FrLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::G1Affine;
use cuzk_groth16::prover::{dense_ab_scalars_of, MsmSums, StageTimings};
use cuzk_groth16::ProvingKey;
use cuzk_synth::Synthesized;

use crate::batch::{self, BatchOrder, Sum};
use crate::breakdown::Breakdown;
use crate::dense::{AuxValues, DenseIndex, DenseScalars};
use crate::kept::Kept;
use crate::plan::{SrsMode, VramPlan};
use crate::worker::{Clock, Dense, Scalars, Worker};

/// Chunk buffers in flight at least: the copy engine runs up to three
/// chunks ahead of the sums. Four G1 chunks are the bytes of the two G2
/// staging buffers the plan counts; the plan may give more
/// (`VramPlan::ring_slots`).
pub(crate) const RING: usize = 4;

/// A section's points in host memory.
#[derive(Clone, Copy)]
enum Bases<'a> {
    G1(&'a [G1AffineLimbs]),
    G2(&'a [G2AffineLimbs]),
}

/// One MSM of a streamed key: its points, its scalars, how many pairs.
struct Section<'a> {
    /// The key section's name in reports ("H", "L", "A", "B_G1", "B_G2").
    name: &'static str,
    bases: Bases<'a>,
    scalars: Scalars<'a>,
    count: usize,
    /// Mostly zeros and ones (L, A, B): each member keeps its chunks'
    /// other scalars for one MSM later (kept.rs); H's are all others.
    light: bool,
}

impl<'a> Section<'a> {
    /// A light section in G1 (L, A, B_G1).
    fn g1(name: &'static str, bases: &'a [G1Affine], scalars: Scalars<'a>, count: usize) -> Self {
        Section {
            name,
            bases: Bases::G1(g1_as_limbs(bases)),
            scalars,
            count,
            light: true,
        }
    }

    /// H: full-width scalars, each chunk summed by its own MSM or into the
    /// section's kept buckets.
    fn h(key: &'a ProvingKey, scalars: Scalars<'a>, count: usize) -> Self {
        Section {
            light: false,
            ..Section::g1("H", &key.h, scalars, count)
        }
    }

    /// B's two sections, in G1 and G2, over one set of scalars.
    fn b(key: &'a ProvingKey, scalars: Scalars<'a>, count: usize) -> [Self; 2] {
        [
            Section::g1("B_G1", &key.b_g1, scalars, count),
            Section {
                name: "B_G2",
                bases: Bases::G2(g2_as_limbs(&key.b_g2)),
                scalars,
                count,
                light: true,
            },
        ]
    }

    /// Points per chunk: G2 points are twice G1's bytes.
    fn points(&self, chunk: usize) -> usize {
        match self.bases {
            Bases::G1(_) => chunk,
            Bases::G2(_) => (chunk / 2).max(1),
        }
    }

    fn chunks(&self, chunk: usize) -> usize {
        self.count.div_ceil(self.points(chunk))
    }

    fn range(&self, chunk: usize, k: usize) -> (usize, usize) {
        let p = self.points(chunk);
        (k * p, ((k + 1) * p).min(self.count))
    }
}

/// What a member of a streamed pass brings to it: its H scalars and aux
/// values in VRAM, and A's and B's rank indexes ([`dense_indexes`]).
pub(crate) struct Member {
    pub(crate) h: DeviceBuffer<FrLimbs>,
    pub(crate) aux: DeviceBuffer<FrLimbs>,
    pub(crate) dense: [DenseIndex; 2],
}

/// A's and B's rank indexes over `w`'s density bitmaps: host work over
/// ~2 M words each at 32 GiB, made while the partition's H polynomial runs
/// (after it, before the MSM stage's first kernels, the device would idle).
pub(crate) fn dense_indexes(w: &Synthesized) -> [DenseIndex; 2] {
    [&w.a_aux_density, &w.b_aux_density].map(|d| DenseIndex::new(d.as_words(), w.num_aux()))
}

/// A partition's sections when L's, A's and B's chunks cross among H's:
/// H, L, A, B_G1, B_G2 over `scalars` (H's, the aux values, A's and B's),
/// `n` the domain, `aux` the aux values' count.
fn interleaved_sections<'a>(
    key: &'a ProvingKey,
    n: usize,
    aux: usize,
    scalars: [Scalars<'a>; 4],
) -> Vec<Section<'a>> {
    let [h, l, a, b] = scalars;
    let mut v = vec![
        Section::h(key, h, n - 1),
        Section::g1("L", &key.l, l, aux),
        Section::g1("A", &key.a, a, key.a.len()),
    ];
    v.extend(Section::b(key, b, key.b_g1.len()));
    v
}

/// A member's five sums in [`interleaved_sections`]' order.
fn member_sums(v: Vec<Sum>) -> MsmSums {
    MsmSums {
        h: v[0].g1(),
        l: v[1].g1(),
        a: v[2].g1(),
        b_g1: v[3].g1(),
        b_g2: v[4].g2(),
    }
}

/// The order a stage crosses its members' sections in (`chunk`-point
/// chunks): interleaved (`mixed`: the first section's chunks with the
/// others spread between them), or in turn.
fn stage_order(members: &[Vec<Section<'_>>], chunk: usize, mixed: bool) -> BatchOrder {
    let chunks: Vec<usize> = members[0].iter().map(|x| x.chunks(chunk)).collect();
    match mixed {
        true => BatchOrder::new(&chunks, members.len(), members.len()),
        false => BatchOrder::in_turn(&chunks),
    }
}

/// Where a chunk's other scalars (neither zero nor one) are summed.
enum Others<'k, C: MsmCurve> {
    /// Through Pippenger now, an MSM of the chunk's own (left queued).
    Own,
    /// Kept with their points for one MSM later (a light section's, kept.rs).
    Kept(&'k mut Kept),
    /// Into the section's kept buckets (H's, at the plan's window): one MSM
    /// over every chunk, reduced after the last.
    Buckets(&'k mut KeptBuckets<C>),
}

/// The worker's G1 or G2 classifier, MSM and batch sum.
type Parts<'w, C> = (&'w mut Classifier, &'w mut Msm<C>, &'w mut BatchSum<C>);

fn g1_parts(w: &mut Worker) -> Parts<'_, G1> {
    let sc = w.scratch.as_mut().expect("sized");
    let g1 = sc.g1.as_mut().expect("made with the scratch");
    (&mut sc.classifier, g1, &mut w.sum_g1)
}

fn g2_parts(w: &mut Worker) -> Parts<'_, G2> {
    let sc = w.scratch.as_mut().expect("sized");
    (&mut sc.classifier, &mut sc.g2, &mut w.sum_g2)
}

impl Worker {
    /// The five MSMs with the key streamed in `chunk`-point chunks.
    /// `aux_on_device`: the aux values already in VRAM (z's tail, when a, b,
    /// c were evaluated there): L reads them in place and A's and B's
    /// scalars are gathered from them on the device a chunk at a time, so
    /// no scalar crosses PCIe, and L's, A's and B's chunks cross among H's
    /// (a batch of one, [`Worker::streamed_batch`]); without it every scalar
    /// streams from the host beside its bases (A's and B's gathered on the
    /// host first) and the sections run in turn.
    /// `ring`: the partition's ring ([`Worker::open_ring_ahead`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn streamed_msms(
        &mut self,
        mut ring: Ring,
        key: &ProvingKey,
        w: &Synthesized,
        dh: DeviceBuffer<FrLimbs>,
        aux_on_device: Option<(DeviceBuffer<FrLimbs>, [DenseIndex; 2])>,
        clock: &mut Clock,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<MsmSums> {
        if let Some((aux, dense)) = aux_on_device {
            let member = Member { h: dh, aux, dense };
            let mut sums = self.streamed_batch(ring, key, &[w], vec![member], clock)?;
            return Ok(sums.pop().expect("one member"));
        }
        let n = dh.len();
        let aux = w.num_aux();
        let h = Section::h(key, Scalars::Device(&dh), n - 1);
        let h = self.phase(&mut ring, "msm_h", &[vec![h]], false, clock)?[0][0].g1();
        drop(dh);
        // A compact witness's values are expanded on the host: these
        // MSMs read host scalars.
        let values = w.aux_values();
        let l = Section::g1("L", &key.l, Scalars::Host(&values), aux);
        let l = self.phase(&mut ring, "msm_l", &[vec![l]], false, clock)?[0][0].g1();
        let start = Instant::now();
        let (a_scalars, b_scalars) = dense_ab_scalars_of(w, &values);
        drop(values);
        t.record("gather", start.elapsed());
        let a = Section::g1("A", &key.a, Scalars::Host(&a_scalars), a_scalars.len());
        let a = self.phase(&mut ring, "msm_a", &[vec![a]], false, clock)?[0][0].g1();
        let b = Vec::from(Section::b(key, Scalars::Host(&b_scalars), b_scalars.len()));
        let b = self.phase(&mut ring, "msm_b", &[b], false, clock)?;
        self.close_ring(ring);
        Ok(MsmSums {
            h,
            l,
            a,
            b_g1: b[0][0].g1(),
            b_g2: b[0][1].g2(),
        })
    }

    /// The five MSMs of several partitions of one circuit over one pass of
    /// the streamed key (batch.rs): `held[m]` is member m's H scalars and
    /// aux values in VRAM (a, b, c were evaluated there). Every L, A and B
    /// chunk crosses once and is summed for every member (L reads each
    /// member's aux values in place, A's and B's scalars are gathered from
    /// them a chunk at a time); H's chunks cross once too, each summed for
    /// every member, since all the members' H scalars are on the device.
    pub(crate) fn streamed_batch(
        &mut self,
        mut ring: Ring,
        key: &ProvingKey,
        ws: &[&Synthesized],
        held: Vec<Member>,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<Vec<MsmSums>> {
        let (scalars, dense): (Vec<_>, Vec<_>) =
            held.into_iter().map(|m| ((m.h, m.aux), m.dense)).unzip();
        let mut sections = Vec::with_capacity(ws.len());
        for ((w, (_, dl)), [ia, ib]) in ws.iter().zip(&scalars).zip(dense) {
            let a = self.dense_section(AuxValues::Full(dl), w, Dense::A, key.a.len(), ia)?;
            let b = self.dense_section(AuxValues::Full(dl), w, Dense::B, key.b_g1.len(), ib)?;
            sections.push((a, b));
        }
        let members: Vec<Vec<Section<'_>>> = ws
            .iter()
            .zip(&scalars)
            .zip(&sections)
            .map(|((w, (dh, dl)), (a, b))| {
                let scalars = [
                    Scalars::Device(dh),
                    Scalars::Device(dl),
                    Scalars::Dense(a),
                    Scalars::Dense(b),
                ];
                interleaved_sections(key, dh.len(), w.num_aux(), scalars)
            })
            .collect();
        let got = self.phase(&mut ring, "msm_h_l_a_b", &members, true, clock)?;
        self.close_ring(ring);
        Ok(got.into_iter().map(member_sums).collect())
    }

    /// Several partitions of one circuit over one pass of the streamed
    /// key (`plan`: streamed, a, b, c on the device, interleaved): each
    /// member's a, b, c and H polynomial on the device in turn, its H
    /// scalars and aux values kept, then one pass of the key's chunks that
    /// every member sums ([`Worker::streamed_batch`]). `t[m]` gets member
    /// m's own stages and `msm_batch_share`, its share (1 / members) of the
    /// shared stage's device time.
    pub(crate) fn prove_batch(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        ws: &[&Synthesized],
        t: &mut [StageTimings],
    ) -> cuzk_cuda::Result<Vec<MsmSums>> {
        let SrsMode::Streamed { chunk } = plan.mode else {
            unreachable!("the backend batches only a streamed key")
        };
        self.srs.lock().release_for_streaming();
        let matrices = self
            .abc_matrices(plan, ws[0], &mut t[0])?
            .expect("a, b, c on the device: checked by the backend");
        let s = self.stream.clone();
        let n = plan.shape.domain;
        self.forget_last_run();
        let mut held = Vec::with_capacity(ws.len());
        for (w, t) in ws.iter().zip(t.iter_mut()) {
            let mut clock = Clock::new();
            let (h, aux) = self.device_h(&matrices, w, n, plan.h_poly, &mut clock)?;
            let dense = dense_indexes(w);
            s.synchronize()?;
            clock.report(t)?;
            held.push(Member { h, aux, dense });
        }
        // The scratch for the MSM stage alone (the plan counts it there).
        self.size_for(plan)?;
        let mut clock = Clock::new();
        let sums = self
            .open_ring(chunk, key, plan.ring_slots(), 0)
            .and_then(|ring| self.streamed_batch(ring, key, ws, held, &mut clock));
        self.pin = None;
        self.scratch = None;
        let sums = sums?;
        // Each member's share of the key's pass and of the other bytes.
        self.share_last_run(ws.len());
        s.synchronize()?;
        let mut shared = StageTimings::default();
        clock.report(&mut shared)?;
        let share = shared.total() / ws.len() as u32;
        for t in t.iter_mut() {
            t.record("msm_batch_share", share);
        }
        Ok(sums)
    }

    /// The ring of `slots` chunk buffers, `ahead` of them made now
    /// ([`Ring::new`]), and the key's pin in host memory when there is one
    /// (else the chunks cross through the staging buffers).
    fn open_ring(
        &mut self,
        chunk: usize,
        key: &ProvingKey,
        slots: usize,
        ahead: usize,
    ) -> cuzk_cuda::Result<Ring> {
        self.pin = self.srs.host_pin(key);
        if self.pin.is_none() {
            tracing::info!(
                "the streamed key is not pinned in host memory: its chunks cross through \
                 the staging buffers"
            );
        }
        Ring::new(&self.stream, &self.copy, chunk, slots, ahead)
    }

    /// A partition's ring under `plan` (streamed), opened while its H
    /// polynomial runs (queued, not finished): the plan's
    /// [`VramPlan::ring_ahead`] buffers made from what the stages before
    /// the MSMs leave free (the plan keeps them within the partition's
    /// peak) and the first crossings of the MSM stage started into them on
    /// the copy stream, in the order that stage crosses them: H's and the
    /// light sections' interleaved when the aux values are on the device
    /// (`interleaved`), else H's alone. The rest of the ring is made when
    /// the stage starts. `n`: the domain; `aux`: the witness's aux values.
    pub(crate) fn open_ring_ahead(
        &mut self,
        plan: &VramPlan,
        key: &ProvingKey,
        n: usize,
        aux: usize,
        interleaved: bool,
    ) -> cuzk_cuda::Result<Ring> {
        let SrsMode::Streamed { chunk } = plan.mode else {
            unreachable!("a ring only for a streamed key")
        };
        let mut ring = self.open_ring(chunk, key, plan.ring_slots(), plan.ring_ahead)?;
        if plan.ring_ahead == 0 {
            return Ok(ring);
        }
        // A crossing reads only its section's points: no scalars here.
        let none = || Scalars::Host(&[]);
        let sections = match interleaved {
            true => interleaved_sections(key, n, aux, [none(), none(), none(), none()]),
            false => vec![Section::h(key, none(), n - 1)],
        };
        let order = stage_order(std::slice::from_ref(&sections), chunk, interleaved);
        for (i, c) in order.crossings().iter().enumerate().take(plan.ring_ahead) {
            self.upload_task(&mut ring, i, &sections[c.section], c.chunk)?;
            ring.ahead.push((c.section, c.chunk));
        }
        Ok(ring)
    }

    fn close_ring(&mut self, ring: Ring) {
        tracing::info!(
            "streamed key: {:.2} GB crossed in {} chunks of up to {} points",
            ring.crossed as f64 / 1e9,
            ring.chunks,
            ring.chunk
        );
        self.last_key_bytes = ring.crossed;
    }

    /// One stage of the streamed MSMs: each member's `sections` (the same
    /// key sections, its own scalars) summed, their chunks in the
    /// interleaved order (`mixed`: the first section's chunks with the
    /// others spread between them) or, for one member, in turn.
    fn phase(
        &mut self,
        ring: &mut Ring,
        name: &'static str,
        members: &[Vec<Section<'_>>],
        mixed: bool,
        clock: &mut Clock,
    ) -> cuzk_cuda::Result<Vec<Vec<Sum>>> {
        Ok(self.phase_with(ring, name, members, mixed, clock, None)?.0)
    }

    /// [`Worker::phase`] with `parked` chunk buffers for members' parked
    /// scalars (a parked batch); returns the sums and the parked bytes that
    /// crossed.
    fn phase_with(
        &mut self,
        ring: &mut Ring,
        name: &'static str,
        members: &[Vec<Section<'_>>],
        mixed: bool,
        clock: &mut Clock,
        parked: Option<parked::ParkedChunks>,
    ) -> cuzk_cuda::Result<(Vec<Vec<Sum>>, u64)> {
        let s = self.stream.clone();
        ring.complete(&s, &self.copy)?;
        clock.start(&s, name)?;
        let order = stage_order(members, ring.chunk, mixed);
        let ahead = ring.slots.len();
        let started = std::mem::take(&mut ring.ahead);
        let mut device = on_device::OnDevice {
            worker: self,
            ring: &mut *ring,
            members,
            order: &order,
            kept: (0..members.len() * members[0].len())
                .map(|_| None)
                .collect(),
            h_buckets: None,
            carry: None,
            queued: false,
            waited: None,
            ahead: started,
            parked,
        };
        let sums = batch::run(&order, ahead, &mut device)?;
        let parked_bytes = device.parked.as_ref().map_or(0, |p| p.bytes);
        clock.stop(&s)?;
        let names: Vec<&'static str> = members[0].iter().map(|x| x.name).collect();
        let trace = std::mem::take(&mut ring.trace);
        tracing::info!("{}", Breakdown::of(name, &names, &trace)?);
        Ok((sums, parked_bytes))
    }

    /// A's (`Dense::A`) or B's scalars to be gathered a chunk at a time
    /// from `dl`, checked to number the key section's `points`: its inputs
    /// and its bitmap (with the set bits before each word, `index`, made
    /// from the same bitmap by [`dense_indexes`]) go up now, before any
    /// chunk is in flight.
    fn dense_section<'a>(
        &mut self,
        dl: AuxValues<'a>,
        w: &'a Synthesized,
        which: Dense,
        points: usize,
        index: DenseIndex,
    ) -> cuzk_cuda::Result<DenseScalars<'a>> {
        let (inputs, density) = self.dense_parts(w, which);
        if inputs.len() + index.ones() != points {
            return Err(cuzk_cuda::Error::BadArguments {
                kernel: "prover_gather_ranks",
                message: format!(
                    "{} inputs + {} aux values by density, but the key section has {points} points",
                    inputs.len(),
                    index.ones()
                ),
            });
        }
        let s = self.stream.clone();
        let mut d_inputs = s.alloc::<FrLimbs>(inputs.len().max(1))?;
        s.upload_at(fr_as_limbs(&inputs), &mut d_inputs, 0)?;
        let scratch = self.scratch.as_mut().expect("sized above");
        let ranked = scratch.gather.rank(density, w.num_aux())?;
        Ok(DenseScalars {
            aux: dl,
            inputs: d_inputs,
            num_inputs: inputs.len(),
            index,
            ranked,
        })
    }

    /// Copies `task`'s points into ring slot `slot` on the copy stream,
    /// after the sums that last read it.
    fn upload_task(
        &mut self,
        ring: &mut Ring,
        slot: usize,
        section: &Section<'_>,
        chunk: usize,
    ) -> cuzk_cuda::Result<()> {
        let copy = self.copy.clone();
        if let Some(e) = &ring.used[slot] {
            copy.wait(e)?;
        }
        let started = copy.record()?;
        let (start, end) = section.range(ring.chunk, chunk);
        let bytes = match section.bases {
            Bases::G1(b) => {
                ring.with_slot(slot, |d, _| self.chunk_upload(&copy, &b[start..end], d))?;
                std::mem::size_of_val(&b[start..end])
            }
            Bases::G2(b) => {
                ring.with_slot(slot, |d, _| self.chunk_upload(&copy, &b[start..end], d))?;
                std::mem::size_of_val(&b[start..end])
            }
        };
        ring.uploaded[slot] = Some(copy.record()?);
        ring.trace
            .copies
            .push((started, copy.record()?, bytes as u64));
        ring.crossed += bytes as u64;
        ring.chunks += 1;
        Ok(())
    }

    /// Queues one chunk's sums: scalars classified, the ones batch-summed,
    /// the zeros skipped, the others as `to` says. Returns the kept others'
    /// sum when it was read now, whether an MSM is left queued for the
    /// chunk's result (`on_device::chunk_result`), and an event after the
    /// classification (for the stage's breakdown).
    fn enqueue_chunk<C: MsmCurve>(
        &mut self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: &DeviceBuffer<FrLimbs>,
        to: Others<'_, C>,
        last: bool,
        parts: fn(&mut Worker) -> Parts<'_, C>,
    ) -> cuzk_cuda::Result<(Option<C::Projective>, bool, Event)> {
        let s = self.stream.clone();
        let (classifier, msm, sum) = parts(self);
        let counts = classifier.classify(scalars)?;
        let classified = s.record()?;
        sum.enqueue_indices(bases, classifier.ones(), counts.ones)?;
        let others = classifier.others();
        let (carry, queued) = match to {
            Others::Kept(k) => k.sum(&s, msm, bases, scalars, others, counts.others, last)?,
            Others::Own => {
                msm.enqueue(bases, scalars, Some(others), counts.others)?;
                (None, true)
            }
            Others::Buckets(b) => {
                msm.enqueue_kept(b, bases, scalars, Some(others), counts.others)?;
                if last {
                    msm.finish_kept(b)?;
                }
                (None, last)
            }
        };
        Ok((carry, queued, classified))
    }

    /// One chunk of a section's points into `dst`: straight from the key's
    /// memory when it is pinned in place, else through the staging buffers.
    fn chunk_upload<T: DeviceRepr + Sync>(
        &mut self,
        copy: &Stream,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> cuzk_cuda::Result<()> {
        match &self.pin {
            Some(pin) if pin.holds(src) => copy.upload_from_pin(pin, src, dst, 0),
            _ => self.stage_upload(copy, src, dst, 0),
        }
    }
}

mod on_device;
mod parked;
mod ring;

pub(crate) use parked::{warm_parked, ParkedPool};
pub(crate) use ring::Ring;
