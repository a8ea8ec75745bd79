//! The order in which a pinned recording's chunks cross ([`Prefetch`]):
//! the copy stream fills a ring of chunk sets as far ahead of the SpMV as
//! the sets allow, across matrices, so the next matrix's first chunks cross
//! while the compute stream runs what comes between (the H polynomial's
//! NTTs) instead of after it. Pure bookkeeping, tested on the CPU; the
//! streams and events are `streamed.rs`'s.

use std::collections::VecDeque;

/// One chunk's place: matrix `which` (A, B, C), its chunk `k`, in set `set`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) which: usize,
    pub(crate) k: usize,
    pub(crate) set: usize,
}

/// The chunks queued to cross, in order, and the next to queue.
#[derive(Debug)]
pub(crate) struct Prefetch {
    chunks: [usize; 3],
    sets: usize,
    queued: VecDeque<Slot>,
    next: Option<(usize, usize)>,
    /// Sets handed out so far: the next copy goes to `fill % sets`.
    fill: usize,
}

impl Prefetch {
    /// A queue over matrices of `chunks` chunks each and a ring of `sets`
    /// sets (at least one), starting at A's first chunk.
    pub(crate) fn new(chunks: [usize; 3], sets: usize) -> Self {
        let mut p = Prefetch {
            chunks,
            sets: sets.max(1),
            queued: VecDeque::new(),
            next: None,
            fill: 0,
        };
        p.next = p.first_from(0);
        p
    }

    /// The first chunk of matrix `which` or, if it has none, of the next
    /// one that has.
    fn first_from(&self, which: usize) -> Option<(usize, usize)> {
        (which..3).find(|&w| self.chunks[w] > 0).map(|w| (w, 0))
    }

    /// Matrix `which` is about to be evaluated: unless the queue starts
    /// with its first chunk, what was queued is forgotten (nothing reads
    /// it; its copies stay ordered before any later copy into the same
    /// sets) and the copies start again from that chunk.
    pub(crate) fn start(&mut self, which: usize) {
        let first = self.first_from(which).filter(|&(w, _)| w == which);
        let head = self.queued.front().map(|s| (s.which, s.k));
        if first.is_some() && head == first {
            return;
        }
        self.queued.clear();
        self.next = self.first_from(which);
    }

    /// The next chunk to copy, when a set is free and a chunk is left: the
    /// caller waits for the set's last reader, copies, and records the copy.
    pub(crate) fn next_copy(&mut self) -> Option<Slot> {
        if self.queued.len() >= self.sets {
            return None;
        }
        let (which, k) = self.next?;
        let slot = Slot {
            which,
            k,
            set: self.fill % self.sets,
        };
        self.fill += 1;
        self.queued.push_back(slot);
        self.next = if k + 1 < self.chunks[which] {
            Some((which, k + 1))
        } else {
            self.first_from(which + 1)
        };
        Some(slot)
    }

    /// Chunk `k` of matrix `which`, to evaluate now: the queue's front, or
    /// `None` when the queue does not hold it there (a caller's error).
    pub(crate) fn take(&mut self, which: usize, k: usize) -> Option<Slot> {
        match self.queued.front() {
            Some(s) if (s.which, s.k) == (which, k) => self.queued.pop_front(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The streams as the CPU sees them: each set's content (the chunk its
    /// last copy wrote).
    /// Evaluations in order A, B, C (and, now and then, out of order or
    /// repeated), the copies topped up before every chunk and after each
    /// matrix as `streamed.rs` does: every chunk evaluated is the one its
    /// set holds, no copy overwrites a chunk still queued, each matrix's
    /// chunks are evaluated in order exactly once per evaluation, and the
    /// copies never run more than `sets` chunks ahead.
    #[test]
    fn every_chunk_is_read_from_the_set_its_copy_wrote() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(25);
        for _ in 0..2_000 {
            let chunks = [
                rng.gen_range(0..6),
                rng.gen_range(0..6),
                rng.gen_range(0..6),
            ];
            let sets = rng.gen_range(1..9);
            let mut p = Prefetch::new(chunks, sets);
            let mut content: Vec<Option<(usize, usize)>> = vec![None; sets];
            let order: Vec<usize> = match rng.gen_range(0..4) {
                0 => (0..4).map(|_| rng.gen_range(0..3)).collect(),
                _ => vec![0, 1, 2],
            };
            let top_up = |p: &mut Prefetch, content: &mut Vec<Option<(usize, usize)>>| {
                while let Some(s) = p.next_copy() {
                    // No two chunks queued in one set: a copy never
                    // overwrites a chunk still to be read.
                    let mut held: Vec<usize> = p.queued.iter().map(|q| q.set).collect();
                    held.sort_unstable();
                    held.dedup();
                    assert_eq!(held.len(), p.queued.len(), "{chunks:?}/{sets}");
                    assert!(p.queued.len() <= sets);
                    content[s.set] = Some((s.which, s.k));
                }
            };
            for &which in &order {
                p.start(which);
                for k in 0..chunks[which] {
                    top_up(&mut p, &mut content);
                    let s = p.take(which, k).expect("the chunk at the queue's front");
                    assert_eq!(content[s.set], Some((which, k)), "{chunks:?}/{sets}");
                }
                top_up(&mut p, &mut content);
            }
        }
    }

    /// The queue starts at the first matrix with chunks, skips empty ones,
    /// runs ahead into the next matrix, and starts again when evaluated out
    /// of order.
    #[test]
    fn copies_run_ahead_across_matrices() {
        let mut p = Prefetch::new([2, 0, 3], 4);
        let got: Vec<(usize, usize, usize)> = std::iter::from_fn(|| p.next_copy())
            .map(|s| (s.which, s.k, s.set))
            .collect();
        assert_eq!(got, [(0, 0, 0), (0, 1, 1), (2, 0, 2), (2, 1, 3)]);
        assert_eq!(p.take(0, 0).map(|s| s.set), Some(0));
        assert_eq!(
            p.next_copy().map(|s| (s.which, s.k, s.set)),
            Some((2, 2, 0))
        );
        assert_eq!(p.next_copy(), None);
        // C out of order: A's second chunk is forgotten, C's come first.
        p.start(2);
        assert_eq!(p.next_copy().map(|s| (s.which, s.k)), Some((2, 0)));
        assert_eq!(p.take(0, 1), None);
        assert_eq!(p.take(2, 0).map(|s| s.which), Some(2));
    }
}
