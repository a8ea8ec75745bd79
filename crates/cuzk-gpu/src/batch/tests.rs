//! The batch order's properties, and a host implementation of
//! [`Crossings`] that checks the order's promises as it runs (a chunk
//! buffer is never refilled before its sums are done, a member's state is
//! made before its first sum and dropped after its last, at most a heavy
//! group's H scalars live at once) and gives the same sums and proof bytes
//! as proving each partition alone.

use std::path::PathBuf;

use cuzk_field::msm::{msm_g1, msm_g2};
use cuzk_field::{
    Curve, Field, Fr, G1Affine, G1Projective, G2Affine, G2Projective, Group, PrimeCurveAffine,
};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::prover::{
    dense_ab_scalars, finish, prove_with, quotient_of_padded, CpuBackend, MsmSums,
};
use cuzk_groth16::ProvingKey;
use cuzk_synth::{synthesize, DemoCircuit, Synthesized};

use super::*;
use crate::interleave::interleave;

/// Every (member, section, chunk) summed exactly once, each member's
/// chunks of a section in order; section 0 crossed once per heavy group,
/// the others once.
fn check_complete(order: &BatchOrder, chunks: &[usize], heavy_group: usize) {
    let members = order.members();
    for m in 0..members {
        for (s, &n) in chunks.iter().enumerate() {
            let seen: Vec<usize> = order
                .crossings()
                .iter()
                .filter(|c| c.section == s && c.members.contains(&m))
                .map(|c| c.chunk)
                .collect();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "member {m}, section {s}");
        }
    }
    let heavy = order.crossings().iter().filter(|c| c.section == 0).count();
    assert_eq!(heavy, chunks[0] * members.div_ceil(heavy_group));
    let light = order.crossings().len() - heavy;
    assert_eq!(light, chunks[1..].iter().sum::<usize>());
}

#[test]
fn a_batch_of_one_is_the_interleaved_order() {
    let chunks = [16, 16, 16, 4, 8];
    let order = BatchOrder::new(&chunks, 1, 1);
    check_complete(&order, &chunks, 1);
    let tasks: Vec<(usize, usize)> = order
        .crossings()
        .iter()
        .map(|c| (c.section, c.chunk))
        .collect();
    let want: Vec<(usize, usize)> = interleave(&chunks)
        .iter()
        .map(|t| (t.section, t.chunk))
        .collect();
    assert_eq!(tasks, want);
    assert!(order.crossings().iter().all(|c| c.members == (0..1)));
    assert_eq!(order.crossings().len(), 60);
}

#[test]
fn light_chunks_cross_once_for_the_batch_and_h_once_per_group() {
    // Eight partitions at 32 GiB, H's scalars on the device two at a time:
    // 4 × 16 H crossings and one pass of L, A, B (44 chunks).
    let chunks = [16, 16, 16, 4, 8];
    let order = BatchOrder::new(&chunks, 8, 2);
    check_complete(&order, &chunks, 2);
    assert_eq!(order.crossings().len(), 64 + 44);

    for c in order.crossings() {
        match c.section {
            0 => assert_eq!(c.members.len(), 2, "{c:?}"),
            _ => assert_eq!(c.members, 0..8, "{c:?}"),
        }
    }
    // H's groups one after the other: group g's crossings all come before
    // group g + 1's, so its H scalars can go before the next are made.
    for m in 0..8 {
        let (first, last) = order.span(m, 0).unwrap();
        if m + 2 < 8 {
            let (next_first, _) = order.span(m + 2, 0).unwrap();
            assert!(
                last < next_first,
                "member {m}: H until {last}, next group from {next_first}"
            );
        }
        assert!(first <= last);
        // Every member's light sections span the light crossings.
        assert_eq!(order.span(m, 1), order.span(0, 1));
    }
    // A last group smaller than the others.
    let order = BatchOrder::new(&chunks, 5, 2);
    check_complete(&order, &chunks, 2);
    let last_h = order.crossings().iter().rfind(|c| c.section == 0).unwrap();
    assert_eq!(last_h.members, 4..5);
}

#[test]
fn a_section_without_chunks_has_no_span() {
    let order = BatchOrder::new(&[3, 0, 2], 2, 2);
    check_complete(&order, &[3, 0, 2], 2);
    assert_eq!(order.span(1, 1), None);
    assert!(order.span(1, 2).is_some());
}

/// A key section's points on the host.
#[derive(Clone, Copy)]
enum Points<'a> {
    G1(&'a [G1Affine]),
    G2(&'a [G2Affine]),
}

/// A chunk's copy.
enum Copied {
    G1(Vec<G1Affine>),
    G2(Vec<G2Affine>),
}

/// The host executor: the key's sections, each member's scalars per
/// section, a ring of `ahead` chunk copies, and the states alive.
struct Host<'a> {
    sections: Vec<(Points<'a>, usize)>,
    /// Points per chunk (G2 chunks: half as many, as on the device).
    chunk: usize,
    scalars: Vec<Vec<&'a [Fr]>>,
    ring: Vec<Option<(usize, Copied)>>,
    live: Vec<Vec<bool>>,
    ever: Vec<Vec<bool>>,
    live_h_peak: usize,
    crossed: usize,
    /// Sums queued and not yet read: (crossing, member, sum).
    pending: Option<(usize, usize, Sum)>,
}

impl<'a> Host<'a> {
    fn new(
        sections: Vec<(Points<'a>, usize)>,
        chunk: usize,
        scalars: Vec<Vec<&'a [Fr]>>,
        ahead: usize,
    ) -> Self {
        let (m, s) = (scalars.len(), sections.len());
        Host {
            sections,
            chunk,
            scalars,
            ring: (0..ahead).map(|_| None).collect(),
            live: vec![vec![false; s]; m],
            ever: vec![vec![false; s]; m],
            live_h_peak: 0,
            crossed: 0,
            pending: None,
        }
    }

    fn points(&self, s: usize) -> usize {
        match self.sections[s].0 {
            Points::G1(_) => self.chunk,
            Points::G2(_) => (self.chunk / 2).max(1),
        }
    }

    fn chunks(&self) -> Vec<usize> {
        (0..self.sections.len())
            .map(|s| self.sections[s].1.div_ceil(self.points(s)))
            .collect()
    }

    fn range(&self, s: usize, k: usize) -> Range<usize> {
        let p = self.points(s);
        k * p..((k + 1) * p).min(self.sections[s].1)
    }
}

impl Crossings for Host<'_> {
    type Error = String;

    fn prepare(&mut self, m: usize, s: usize) -> Result<(), String> {
        if self.ever[m][s] {
            return Err(format!("member {m}'s section {s} prepared twice"));
        }
        self.live[m][s] = true;
        self.ever[m][s] = true;
        let h = self.live.iter().filter(|x| x[0]).count();
        self.live_h_peak = self.live_h_peak.max(h);
        Ok(())
    }

    fn cross(&mut self, i: usize, c: &Crossing) -> Result<(), String> {
        let n = self.ring.len();
        if let Some((j, _)) = &self.ring[i % n] {
            return Err(format!(
                "crossing {i} would overwrite crossing {j} before it is done"
            ));
        }
        let r = self.range(c.section, c.chunk);
        let copied = match self.sections[c.section].0 {
            Points::G1(p) => Copied::G1(p[r].to_vec()),
            Points::G2(p) => Copied::G2(p[r].to_vec()),
        };
        self.ring[i % n] = Some((i, copied));
        self.crossed += 1;
        Ok(())
    }

    fn enqueue(&mut self, i: usize, c: &Crossing, m: usize) -> Result<(), String> {
        if !self.live[m][c.section] {
            return Err(format!(
                "member {m} sums crossing {i} without its section {} state",
                c.section
            ));
        }
        if self.pending.is_some() {
            return Err(format!(
                "member {m}'s sums queued before the last ones were read"
            ));
        }
        let r = self.range(c.section, c.chunk);
        let scalars = &self.scalars[m][c.section][r];
        let sum = match &self.ring[i % self.ring.len()] {
            Some((j, Copied::G1(p))) if *j == i => Sum::G1(msm_g1(p, scalars)),
            Some((j, Copied::G2(p))) if *j == i => Sum::G2(msm_g2(p, scalars)),
            _ => {
                return Err(format!(
                    "crossing {i} summed before it crossed or after it was done"
                ))
            }
        };
        self.pending = Some((i, m, sum));
        Ok(())
    }

    fn result(&mut self, i: usize, _: &Crossing, m: usize) -> Result<Sum, String> {
        match self.pending.take() {
            Some((j, k, sum)) if (j, k) == (i, m) => Ok(sum),
            other => Err(format!(
                "member {m}'s sums of crossing {i} read, {other:?} pending"
            )),
        }
    }

    fn done(&mut self, i: usize, _: &Crossing) -> Result<(), String> {
        let n = self.ring.len();
        match self.ring[i % n].take() {
            Some((j, _)) if j == i => Ok(()),
            _ => Err(format!("crossing {i} given back but not in its buffer")),
        }
    }

    fn release(&mut self, m: usize, s: usize) -> Result<(), String> {
        match std::mem::take(&mut self.live[m][s]) {
            true => Ok(()),
            false => Err(format!("member {m}'s section {s} released but not alive")),
        }
    }

    fn in_g2(&self, s: usize) -> bool {
        matches!(self.sections[s].0, Points::G2(_))
    }
}

/// One partition's five scalar vectors: H's quotient coefficients, L's
/// aux values, A's and B's dense scalars.
fn partition_scalars(w: &Synthesized) -> Vec<Vec<Fr>> {
    let h = quotient_of_padded(w.padded_abc(1 << w.domain_log2())).unwrap();
    let (a, b) = dense_ab_scalars(w);
    vec![h, w.aux_values().into_owned(), a, b.clone(), b]
}

fn fixture_key() -> ProvingKey {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-k10-sha95.params");
    ProvingKey::read_from_path(&path, PointCheck::OnCurve).unwrap()
}

/// Runs a batch of `witnesses` over `key` in `chunk`-point chunks, H's in
/// groups of `heavy_group`, copies `ahead` crossings ahead; each member's
/// sums, and the host executor's peak of live H states.
fn batched_sums(
    key: &ProvingKey,
    witnesses: &[Synthesized],
    chunk: usize,
    heavy_group: usize,
    ahead: usize,
) -> (Vec<MsmSums>, usize, usize) {
    let scalars: Vec<Vec<Vec<Fr>>> = witnesses.iter().map(partition_scalars).collect();
    let sections = vec![
        (Points::G1(&key.h), key.h.len().min(scalars[0][0].len())),
        (Points::G1(&key.l), key.l.len()),
        (Points::G1(&key.a), key.a.len()),
        (Points::G1(&key.b_g1), key.b_g1.len()),
        (Points::G2(&key.b_g2), key.b_g2.len()),
    ];
    let by_member: Vec<Vec<&[Fr]>> = scalars
        .iter()
        .map(|x| x.iter().map(Vec::as_slice).collect())
        .collect();
    let mut host = Host::new(sections, chunk, by_member, ahead);
    let order = BatchOrder::new(&host.chunks(), witnesses.len(), heavy_group);
    let sums = run(&order, ahead, &mut host).unwrap();
    assert!(
        host.live.iter().flatten().all(|x| !x),
        "every state released"
    );
    assert!(
        host.ring.iter().all(Option::is_none),
        "every buffer given back"
    );
    let g1 = |s: Sum| match s {
        Sum::G1(p) => p,
        Sum::G2(_) => unreachable!(),
    };
    let out = sums
        .into_iter()
        .map(|v| MsmSums {
            h: g1(v[0]),
            l: g1(v[1]),
            a: g1(v[2]),
            b_g1: g1(v[3]),
            b_g2: match v[4] {
                Sum::G2(p) => p,
                Sum::G1(_) => unreachable!(),
            },
        })
        .collect();
    (out, host.live_h_peak, host.crossed)
}

#[test]
fn a_batch_gives_each_partition_its_own_sums_and_proof() {
    let key = fixture_key();
    let witnesses: Vec<Synthesized> = (0..3)
        .map(|seed| synthesize(DemoCircuit::new(10, 0.95, 100 + seed)).unwrap())
        .collect();
    let mut rng = cuzk_testkit::test_rng("a_batch_gives_each_partition_its_own_sums_and_proof");
    let cpu = CpuBackend;
    // 2^10 constraints in chunks of 100 points (G2: 50), copies three
    // crossings ahead; H's scalars two members at a time.
    let (sums, live_h, crossed) = batched_sums(&key, &witnesses, 100, 2, 3);
    assert_eq!(live_h, 2, "at most a heavy group's H scalars alive");
    let chunks_alone = {
        let one = batched_sums(&key, &witnesses[..1], 100, 1, 3);
        one.2
    };
    // H crosses once per group (2 groups), L, A, B once for the batch.
    let h_chunks = key.h.len().min(1 << 10).div_ceil(100);
    assert_eq!(crossed, chunks_alone + h_chunks);
    for (w, got) in witnesses.iter().zip(&sums) {
        let mut t = Default::default();
        let want = cuzk_groth16::prover::Backend::msm_sums(&cpu, &key, w, &mut t).unwrap();
        assert_eq!(got, &want);
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let alone = prove_with(&cpu, &key, w, r, s).unwrap().proof.to_bytes();
        assert_eq!(finish(&key, got, r, s).unwrap().to_bytes(), alone);
    }
}

/// n distinct points: a random start plus, at each step, one of eight
/// random steps (additions, not scalar multiplications: 2^16 of them take
/// milliseconds).
fn points<P: Curve<AffineRepr: Copy>>(
    n: usize,
    rng: &mut impl rand::RngCore,
) -> Vec<P::AffineRepr> {
    let steps: Vec<P> = (0..8).map(|_| P::random(&mut *rng)).collect();
    let mut acc = P::random(&mut *rng);
    let v: Vec<P> = (0..n)
        .map(|_| {
            acc += steps[rng.next_u32() as usize % 8];
            acc
        })
        .collect();
    let mut out = vec![P::identity().to_affine(); n];
    P::batch_normalize(&v, &mut out);
    out
}

/// Scalars as a PoRep partition's light sections have them: mostly 0 and
/// 1, a few full-width (`full`: every one full-width, as H's).
fn scalars(n: usize, full: bool, rng: &mut impl rand::RngCore) -> Vec<Fr> {
    (0..n)
        .map(|_| match (full, rng.next_u32() % 100) {
            (true, _) | (false, 98..) => Fr::random(&mut *rng),
            (false, 0..=50) => Fr::ZERO,
            (false, _) => Fr::ONE,
        })
        .collect()
}

#[test]
fn batched_sums_at_2_16_equal_each_members_whole_msm() {
    let mut rng = cuzk_testkit::test_rng("batched_sums_at_2_16_equal_each_members_whole_msm");
    let n = 1 << 16;
    let (h, l, b2) = (
        points::<G1Projective>(n, &mut rng),
        points::<G1Projective>(n, &mut rng),
        points::<G2Projective>(n / 4, &mut rng),
    );
    let members: Vec<[Vec<Fr>; 3]> = (0..3)
        .map(|_| {
            [
                scalars(n, true, &mut rng),
                scalars(n, false, &mut rng),
                scalars(n / 4, false, &mut rng),
            ]
        })
        .collect();
    let by_member: Vec<Vec<&[Fr]>> = members
        .iter()
        .map(|x| x.iter().map(Vec::as_slice).collect())
        .collect();
    // A ring of 8 buffers (`VramPlan::ring_slots` where the MSM stages
    // leave room) as well as the 4 of every plan and fewer.
    for (heavy_group, ahead) in [(1, 4), (2, 2), (3, 1), (1, 8)] {
        let sections = vec![
            (Points::G1(&h), n),
            (Points::G1(&l), n),
            (Points::G2(&b2), n / 4),
        ];
        let mut host = Host::new(sections, 1 << 12, by_member.clone(), ahead);
        let order = BatchOrder::new(&host.chunks(), 3, heavy_group);
        let sums = run(&order, ahead, &mut host).unwrap();
        assert_eq!(host.live_h_peak, heavy_group);
        // H: 16 chunks per group; L: 16; B in G2: 2^14 points in chunks of 2^11.
        assert_eq!(host.crossed, 16 * 3usize.div_ceil(heavy_group) + 16 + 8);
        for (m, x) in members.iter().enumerate() {
            assert_eq!(
                sums[m][0],
                Sum::G1(msm_g1(&h, &x[0])),
                "member {m} H, groups of {heavy_group}"
            );
            assert_eq!(sums[m][1], Sum::G1(msm_g1(&l, &x[1])), "member {m} L");
            assert_eq!(
                sums[m][2],
                Sum::G2(msm_g2(&b2, &x[2])),
                "member {m} B in G2"
            );
        }
    }
}

#[test]
fn a_host_executor_refuses_an_order_that_breaks_its_promises() {
    // A buffer refilled before its sums: crossing 1 into crossing 0's slot.
    let h = [G1Affine::generator(); 4];
    let ones = [Fr::ONE; 4];
    let mut host = Host::new(vec![(Points::G1(&h), 4)], 2, vec![vec![&ones[..]]], 1);
    let order = BatchOrder::new(&[2], 1, 1);
    let c = order.crossings();
    host.cross(0, &c[0]).unwrap();
    assert!(host
        .cross(1, &c[1])
        .unwrap_err()
        .contains("before it is done"));
    // A sum without the member's state.
    let without = host.enqueue(0, &c[0], 0).unwrap_err();
    assert!(without.contains("without its section 0 state"), "{without}");
    host.prepare(0, 0).unwrap();
    host.enqueue(0, &c[0], 0).unwrap();
    let twice = host.enqueue(0, &c[0], 0).unwrap_err();
    assert!(twice.contains("before the last ones were read"), "{twice}");
    let two_g = Sum::G1(G1Projective::generator().double());
    assert_eq!(host.result(0, &c[0], 0).unwrap(), two_g);
    // After its buffer is given back, a crossing is not summed again.
    host.done(0, &c[0]).unwrap();
    let after = host.enqueue(0, &c[0], 0).unwrap_err();
    assert!(after.contains("after it was done"), "{after}");
    assert!(host.prepare(0, 0).unwrap_err().contains("twice"));
}
