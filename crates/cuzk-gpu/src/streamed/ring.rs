//! The ring of chunk buffers a streamed key's chunks cross into, the
//! chunk's scalars, and what has crossed.

use cuzk_cuda::{DeviceBuffer, Event, Stream};
use cuzk_field::limbs::{DeviceRepr, FrLimbs, G1AffineLimbs};

use super::RING;
use crate::breakdown::Trace;

/// The ring of chunk buffers, one chunk of scalars, and what has crossed.
pub(crate) struct Ring {
    /// `chunk` G1 points' bytes each; taken out while recast for a chunk,
    /// and not yet made while the ring is open ahead of its stage
    /// ([`Ring::complete`]).
    pub(super) slots: Vec<Option<DeviceBuffer<G1AffineLimbs>>>,
    /// The copy that filled each slot.
    pub(super) uploaded: Vec<Option<Event>>,
    /// The sums that last read each slot (its next copy waits for them).
    pub(super) used: Vec<Option<Event>>,
    /// Made with the ring's other buffers when its stage starts.
    pub(super) scalars: Option<DeviceBuffer<FrLimbs>>,
    /// The crossings started before the first stage that uses the ring,
    /// in its order: (section, chunk) of crossing 0, 1, …
    pub(super) ahead: Vec<(usize, usize)>,
    pub(super) chunk: usize,
    /// Key bytes copied in so far.
    pub(super) crossed: u64,
    pub(super) chunks: usize,
    /// The current stage's events, for its breakdown.
    pub(super) trace: Trace,
}

impl Ring {
    /// A ring of `slots` chunk buffers (at least [`RING`]), of which the
    /// first `ahead` are made now and zeroed on the copy stream, so copies
    /// into them need not wait for the compute stream's queue (the H
    /// polynomial); the rest, and the scalars, when its stage starts.
    pub(super) fn new(
        s: &Stream,
        copy: &Stream,
        chunk: usize,
        slots: usize,
        ahead: usize,
    ) -> cuzk_cuda::Result<Ring> {
        let n = slots.max(RING);
        let mut slots = Vec::with_capacity(n);
        for _ in 0..ahead.min(n) {
            let mut b = s.alloc_uninit::<G1AffineLimbs>(chunk)?;
            copy.zero_range(&mut b, 0, chunk)?;
            slots.push(Some(b));
        }
        slots.resize_with(n, || None);
        Ok(Ring {
            slots,
            uploaded: (0..n).map(|_| None).collect(),
            used: (0..n).map(|_| None).collect(),
            scalars: None,
            ahead: Vec::new(),
            chunk,
            crossed: 0,
            chunks: 0,
            trace: Trace::default(),
        })
    }

    /// The buffers not made yet, and the scalars: when the stage starts.
    pub(super) fn complete(&mut self, s: &Stream, copy: &Stream) -> cuzk_cuda::Result<()> {
        if self.scalars.is_some() {
            return Ok(());
        }
        for slot in self.slots.iter_mut().filter(|b| b.is_none()) {
            *slot = Some(s.alloc::<G1AffineLimbs>(self.chunk)?);
        }
        self.scalars = Some(s.alloc::<FrLimbs>(self.chunk)?);
        // The copy stream writes into buffers zeroed on the compute stream.
        copy.wait(&s.record()?)?;
        Ok(())
    }

    /// The chunk's scalars' buffer (made by [`Ring::complete`]).
    pub(super) fn scalars(&self) -> &DeviceBuffer<FrLimbs> {
        self.scalars
            .as_ref()
            .expect("the ring completed before its stage")
    }

    pub(super) fn scalars_mut(&mut self) -> &mut DeviceBuffer<FrLimbs> {
        self.scalars
            .as_mut()
            .expect("the ring completed before its stage")
    }

    /// Runs `f` on slot `i`'s buffer as points of type `T` (taken out of
    /// the ring meanwhile, so `f` may read the rest of it) and puts the
    /// buffer back whatever `f` returned.
    pub(super) fn with_slot<T: DeviceRepr, R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut DeviceBuffer<T>, &Ring) -> cuzk_cuda::Result<R>,
    ) -> cuzk_cuda::Result<R> {
        let mut b = self.slots[i].take().expect("a slot is put back").recast()?;
        let r = f(&mut b, self);
        self.slots[i] = Some(b.recast()?);
        r
    }
}
