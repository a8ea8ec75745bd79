//! Partitions that share a streamed key, summed over one pass of it.
//!
//! Streamed one partition at a time, every partition moves the whole key
//! across PCIe (47.4 GB at 32 GiB). L's, A's and B's scalars are 98.7%
//! zeros and ones, so a partition's state for them is small, and one
//! crossing of one of their chunks can be summed for every partition of a
//! batch: their 34.5 GB cross once per batch. H's scalars are full-width
//! (4 GiB a partition at 32 GiB), so an H chunk is shared only by the
//! partitions whose H scalars are on the device together (a heavy group).
//!
//! [`BatchOrder`] is the order of the crossings, the members that sum each
//! one, and when each member's state for a section is first needed and
//! last used; [`run`] drives any [`Crossings`] through it, with the copies
//! running a fixed number of crossings ahead of the sums. It is written
//! once: the device's ring of chunk buffers and the CPU executor of this
//! module's tests are two implementations of the same trait. A batch of
//! one is the interleaved order of one partition (`interleave.rs`).

use std::ops::Range;

use cuzk_field::{G1Projective, G2Projective, Group};

use crate::interleave::{in_turn, interleave};
use crate::kept::kept_bytes;
use crate::plan::{Shape, SrsMode, VramPlan};

/// One chunk crossing PCIe and the batch members that sum it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Crossing {
    /// The key section (0 is H, the heavy one).
    pub(crate) section: usize,
    /// The chunk within the section.
    pub(crate) chunk: usize,
    /// The members (indices into the batch) whose sums read it.
    pub(crate) members: Range<usize>,
}

/// The crossings of a batch and when each member's per-section state is
/// needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BatchOrder {
    crossings: Vec<Crossing>,
    members: usize,
    sections: usize,
    /// For member m and section s, at `m * sections + s`: the first and
    /// the last crossing it sums (`None` for a section of no chunks).
    spans: Vec<Option<(usize, usize)>>,
}

impl BatchOrder {
    /// The order for `members` partitions over sections of `chunks[s]`
    /// chunks each: section 0 (H) crosses once per heavy group (members in
    /// runs of `heavy_group`, in order), the others once for the whole
    /// batch, spread evenly between H's crossings (`interleave`).
    ///
    /// # Panics
    /// With no members or a heavy group of 0: a caller's bug.
    pub(crate) fn new(chunks: &[usize], members: usize, heavy_group: usize) -> Self {
        assert!(
            members > 0 && heavy_group > 0,
            "a batch of {members} in groups of {heavy_group}"
        );
        let heavy = chunks.first().copied().unwrap_or(0);
        let groups = members.div_ceil(heavy_group);
        let mut counts = chunks.to_vec();
        if let Some(h) = counts.first_mut() {
            *h = heavy * groups;
        }
        let crossings = interleave(&counts).into_iter().map(|t| match t.section {
            0 => {
                let g = t.chunk / heavy.max(1);
                Crossing {
                    section: 0,
                    chunk: t.chunk % heavy.max(1),
                    members: g * heavy_group..((g + 1) * heavy_group).min(members),
                }
            }
            s => Crossing {
                section: s,
                chunk: t.chunk,
                members: 0..members,
            },
        });
        Self::of(crossings, members, chunks.len())
    }

    /// One partition's sections one after the other, each in chunk order
    /// (no interleaving: each section's scalars are made in turn).
    pub(crate) fn in_turn(chunks: &[usize]) -> Self {
        Self::of(
            in_turn(chunks).into_iter().map(|t| Crossing {
                section: t.section,
                chunk: t.chunk,
                members: 0..1,
            }),
            1,
            chunks.len(),
        )
    }

    fn of(crossings: impl Iterator<Item = Crossing>, members: usize, sections: usize) -> Self {
        let crossings: Vec<Crossing> = crossings.collect();
        let mut spans = vec![None; members * sections];
        for (i, c) in crossings.iter().enumerate() {
            for m in c.members.clone() {
                let span = &mut spans[m * sections + c.section];
                *span = Some(span.map_or((i, i), |(first, _)| (first, i)));
            }
        }
        BatchOrder {
            crossings,
            members,
            sections,
            spans,
        }
    }

    pub(crate) fn crossings(&self) -> &[Crossing] {
        &self.crossings
    }

    pub(crate) fn members(&self) -> usize {
        self.members
    }

    /// The first and last crossing member `m` sums of section `s`.
    pub(crate) fn span(&self, m: usize, s: usize) -> Option<(usize, usize)> {
        self.spans[m * self.sections + s]
    }

    /// The (member, section) states first needed by crossing `i`.
    fn starting(&self, i: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.each_state()
            .filter(move |&(m, s)| self.span(m, s).is_some_and(|(first, _)| first == i))
    }

    /// The (member, section) states crossing `i` is the last to read.
    fn ending(&self, i: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.each_state()
            .filter(move |&(m, s)| self.span(m, s).is_some_and(|(_, last)| last == i))
    }

    fn each_state(&self) -> impl Iterator<Item = (usize, usize)> {
        let sections = self.sections;
        (0..self.members).flat_map(move |m| (0..sections).map(move |s| (m, s)))
    }
}

/// Device bytes one more member of a batch holds through the key's pass
/// in chunks of `chunk` points: its H scalars (n), its aux values, A's and
/// B's ranked density bitmaps (a word and a word offset per 64 aux values,
/// each), and its light sections' kept points and scalars
/// ([`kept_bytes`]: L, A and B_G1 in G1, B_G2 in G2).
pub(crate) fn member_bytes(shape: &Shape, chunk: usize) -> u64 {
    let fr = 32u64;
    let words = shape.aux.div_ceil(64) as u64;
    (shape.domain as u64 + shape.aux as u64) * fr
        + 2 * (words * 8 + (words + 1) * 4)
        + kept_bytes(chunk, 3, 1)
}

impl VramPlan {
    /// How many partitions of this plan's shape one pass of the key can
    /// serve: 1 unless the key streams with a, b, c on the device (the
    /// interleaved stage: only then do the members' scalars live in VRAM),
    /// and then as many as the budget holds beside the plan's peak, each
    /// member after the first holding [`member_bytes`].
    pub(crate) fn batch_room(&self) -> usize {
        match (self.mode, self.interleaved) {
            (SrsMode::Streamed { chunk }, true) => {
                let member = member_bytes(&self.shape, chunk);
                1 + (self.budget.saturating_sub(self.peak()) / member) as usize
            }
            _ => 1,
        }
    }

    /// Device bytes a batch of `members` needs at its peak: the plan's,
    /// and [`member_bytes`] for each member after the first.
    pub(crate) fn batch_peak(&self, members: usize) -> u64 {
        let member = match self.mode {
            SrsMode::Streamed { chunk } => member_bytes(&self.shape, chunk),
            SrsMode::Resident => 0,
        };
        self.peak() + members.saturating_sub(1) as u64 * member
    }
}

/// A section's sum: a point of the section's group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Sum {
    G1(G1Projective),
    G2(G2Projective),
}

impl Sum {
    /// The sum of no points, in G2 or G1.
    pub(crate) fn zero(in_g2: bool) -> Self {
        match in_g2 {
            true => Sum::G2(G2Projective::identity()),
            false => Sum::G1(G1Projective::identity()),
        }
    }

    pub(crate) fn g1(self) -> G1Projective {
        match self {
            Sum::G1(p) => p,
            Sum::G2(_) => unreachable!("a G1 section"),
        }
    }

    pub(crate) fn g2(self) -> G2Projective {
        match self {
            Sum::G2(p) => p,
            Sum::G1(_) => unreachable!("a G2 section"),
        }
    }
}

impl std::ops::Add for Sum {
    type Output = Sum;

    fn add(self, other: Sum) -> Sum {
        match (self, other) {
            (Sum::G1(a), Sum::G1(b)) => Sum::G1(a + b),
            (Sum::G2(a), Sum::G2(b)) => Sum::G2(a + b),
            _ => unreachable!("the sums of one section share a group"),
        }
    }
}

/// What a batch's crossings are run on: a device's chunk buffers and MSMs,
/// or the host's (this module's tests).
pub(crate) trait Crossings {
    type Error;

    /// Member `m`'s state for section `s` (its scalars), made before the
    /// first crossing it sums.
    fn prepare(&mut self, m: usize, s: usize) -> Result<(), Self::Error>;

    /// Starts crossing `i`'s copy into the buffer of crossing `i − ahead`,
    /// which [`Crossings::done`] has given back.
    fn cross(&mut self, i: usize, c: &Crossing) -> Result<(), Self::Error>;

    /// Queues member `m`'s sums over crossing `i`'s points. The driver
    /// reads them ([`Crossings::result`]) before it queues the next
    /// member's, so one set of MSM scratch serves every member.
    fn enqueue(&mut self, i: usize, c: &Crossing, m: usize) -> Result<(), Self::Error>;

    /// Waits for member `m`'s sums over crossing `i` and returns them.
    fn result(&mut self, i: usize, c: &Crossing, m: usize) -> Result<Sum, Self::Error>;

    /// Every sum over crossing `i`'s points is queued (the last member's
    /// result not yet read): its buffer may be refilled once they have run.
    fn done(&mut self, i: usize, c: &Crossing) -> Result<(), Self::Error>;

    /// Member `m`'s state for section `s` is read by no more sums.
    fn release(&mut self, m: usize, s: usize) -> Result<(), Self::Error>;

    /// Whether section `s`'s points are in G2 (else G1).
    fn in_g2(&self, s: usize) -> bool;
}

/// Runs `order` on `exec`, copies up to `ahead` crossings ahead of the
/// sums: crossing `i + ahead` is started as soon as crossing `i`'s last
/// sums are queued (before the host waits for them), into the buffer
/// crossing `i` gives back. Returns each member's sum of each section, by
/// member.
pub(crate) fn run<E: Crossings>(
    order: &BatchOrder,
    ahead: usize,
    exec: &mut E,
) -> Result<Vec<Vec<Sum>>, E::Error> {
    let ahead = ahead.max(1);
    let crossings = order.crossings();
    let mut sums: Vec<Vec<Sum>> = (0..order.members())
        .map(|_| {
            (0..order.sections)
                .map(|s| Sum::zero(exec.in_g2(s)))
                .collect()
        })
        .collect();
    for (i, c) in crossings.iter().enumerate().take(ahead) {
        exec.cross(i, c)?;
    }
    for (i, c) in crossings.iter().enumerate() {
        for (m, s) in order.starting(i) {
            exec.prepare(m, s)?;
        }
        for m in c.members.clone() {
            exec.enqueue(i, c, m)?;
            if m + 1 == c.members.end {
                exec.done(i, c)?;
                if let Some(next) = crossings.get(i + ahead) {
                    exec.cross(i + ahead, next)?;
                }
            }
            let got = exec.result(i, c, m)?;
            sums[m][c.section] = sums[m][c.section] + got;
        }
        for (m, s) in order.ending(i) {
            exec.release(m, s)?;
        }
    }
    Ok(sums)
}

#[cfg(test)]
mod tests;
