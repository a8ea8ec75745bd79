//! Which keys a device holds: the bookkeeping behind [`SrsSlot`](crate::SrsSlot),
//! with no CUDA in it (the entries' payload is generic, so the rules are
//! tested on the host).
//!
//! Rules:
//!
//! * A key is identified by its fingerprint; its [`KeyShape`] (section
//!   lengths) is what a partition's shape says about it before the key
//!   itself is seen, so admission pins and counts keys by shape.
//! * An entry is **in use** while a worker holds its payload (the `Arc` has
//!   other owners) or an admitted partition pins its shape; an entry in use
//!   is never evicted.
//! * A slot of one worker alone on its arena (`max_keys == 1`) keeps one key:
//!   making another resident drops the old one first, as does streaming.
//!   A slot shared under [`VramAdmission`](crate::admission::VramAdmission)
//!   keeps every key until admission evicts one for room, least recently
//!   used first, or a caller evicts it by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::plan::{Shape, VramPlan, G1_BYTES, G2_BYTES};

/// A key's section lengths (points of H, L, A, B in G1 and B in G2), and
/// how many copies of H it keeps on the device (1; more when H's MSM runs
/// over shifted bases, `VramPlan::h_shift`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyShape {
    /// Points of H.
    pub h: usize,
    /// Points of L.
    pub l: usize,
    /// Points of A in G1.
    pub a: usize,
    /// Points of B in G1.
    pub b_g1: usize,
    /// Points of B in G2.
    pub b_g2: usize,
    /// Copies of H kept (1, or the shifted copies' count with the original).
    pub h_copies: u32,
}

impl KeyShape {
    /// The key a partition of `shape` proves with, H plain.
    pub fn of(shape: &Shape) -> Self {
        KeyShape {
            h: shape.h,
            l: shape.l,
            a: shape.a,
            b_g1: shape.b_g1,
            b_g2: shape.b_g2,
            h_copies: 1,
        }
    }

    /// The key as `plan` keeps it resident (H's copies included).
    pub fn of_plan(plan: &VramPlan) -> Self {
        KeyShape {
            h_copies: plan.h_shift.map_or(1, |h| h.copies),
            ..Self::of(&plan.shape)
        }
    }

    /// Device bytes of the key's points (H's copies included).
    pub fn bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b_g1) as u64 * G1_BYTES
            + self.b_g2 as u64 * G2_BYTES
            + u64::from(self.h_copies.saturating_sub(1)) * self.h as u64 * G1_BYTES
    }
}

/// One resident key.
pub(crate) struct Entry<T> {
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) shape: KeyShape,
    pub(crate) payload: Arc<T>,
    last_used: u64,
}

/// The keys of one device and the shapes admitted partitions pin.
pub(crate) struct Keys<T> {
    max_keys: usize,
    entries: Vec<Entry<T>>,
    pins: BTreeMap<KeyShape, usize>,
    clock: u64,
    pub(crate) uploads: u64,
    pub(crate) evictions: u64,
}

impl<T> Keys<T> {
    pub(crate) fn new(max_keys: usize) -> Self {
        Keys {
            max_keys: max_keys.max(1),
            entries: Vec::new(),
            pins: BTreeMap::new(),
            clock: 0,
            uploads: 0,
            evictions: 0,
        }
    }

    pub(crate) fn shared(&self) -> bool {
        self.max_keys > 1
    }

    /// The key with this fingerprint, marked used now.
    pub(crate) fn get(&mut self, fingerprint: &[u8]) -> Option<Arc<T>> {
        self.clock += 1;
        let now = self.clock;
        self.entries
            .iter_mut()
            .find(|e| e.fingerprint == fingerprint)
            .map(|e| {
                e.last_used = now;
                Arc::clone(&e.payload)
            })
    }

    pub(crate) fn contains(&self, fingerprint: &[u8]) -> bool {
        self.entries.iter().any(|e| e.fingerprint == fingerprint)
    }

    /// Whether a key of this shape is resident.
    pub(crate) fn has_shape(&self, shape: &KeyShape) -> bool {
        self.entries.iter().any(|e| e.shape == *shape)
    }

    /// Device bytes of every resident key.
    pub(crate) fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.shape.bytes()).sum()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn in_use(&self, e: &Entry<T>) -> bool {
        Arc::strong_count(&e.payload) > 1 || self.pins.get(&e.shape).is_some_and(|&n| n > 0)
    }

    /// Before uploading a key of `shape`: in a one-key slot, drops every key
    /// no worker holds; in a shared slot, drops an unused key of the same
    /// shape (a different key replacing it). Returns how many were dropped.
    pub(crate) fn make_room_for(&mut self, shape: &KeyShape) -> usize {
        let before = self.entries.len();
        let one = !self.shared();
        let keep: Vec<bool> = self
            .entries
            .iter()
            .map(|e| {
                let replaceable = one || e.shape == *shape;
                !replaceable || Arc::strong_count(&e.payload) > 1
            })
            .collect();
        let mut keep = keep.into_iter();
        self.entries.retain(|_| keep.next().unwrap_or(true));
        let dropped = before - self.entries.len();
        self.evictions += dropped as u64;
        dropped
    }

    /// Before a streamed partition in a one-key slot: drops the keys no
    /// worker holds (a shared slot leaves room-keeping to admission).
    pub(crate) fn release_for_streaming(&mut self) {
        if !self.shared() {
            let before = self.entries.len();
            self.entries.retain(|e| Arc::strong_count(&e.payload) > 1);
            self.evictions += (before - self.entries.len()) as u64;
        }
    }

    pub(crate) fn insert(&mut self, fingerprint: Vec<u8>, shape: KeyShape, payload: Arc<T>) {
        self.clock += 1;
        self.uploads += 1;
        self.entries.push(Entry {
            fingerprint,
            shape,
            payload,
            last_used: self.clock,
        });
    }

    /// Drops the least recently used key that is not in use and not of
    /// shape `keep`; returns its bytes, or `None` if every key is in use.
    pub(crate) fn evict_lru(&mut self, keep: Option<&KeyShape>) -> Option<u64> {
        let victim = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| Some(&e.shape) != keep && !self.in_use(e))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(i, _)| i)?;
        let e = self.entries.remove(victim);
        self.evictions += 1;
        Some(e.shape.bytes())
    }

    /// Drops the key with this fingerprint if it is not in use; returns
    /// whether it was resident (and so dropped) or `Err` if it is in use.
    pub(crate) fn evict(&mut self, fingerprint: &[u8]) -> Result<bool, KeyInUse> {
        let Some(i) = self
            .entries
            .iter()
            .position(|e| e.fingerprint == fingerprint)
        else {
            return Ok(false);
        };
        if self.in_use(&self.entries[i]) {
            return Err(KeyInUse);
        }
        self.entries.remove(i);
        self.evictions += 1;
        Ok(true)
    }

    pub(crate) fn pin(&mut self, shape: KeyShape) {
        *self.pins.entry(shape).or_default() += 1;
    }

    pub(crate) fn unpin(&mut self, shape: &KeyShape) {
        if let Some(n) = self.pins.get_mut(shape) {
            *n -= 1;
            if *n == 0 {
                self.pins.remove(shape);
            }
        }
    }
}

/// A key that a running or admitted partition is using cannot be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the key is in use by a running partition")]
pub struct KeyInUse;

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(n: usize) -> KeyShape {
        KeyShape {
            h: n,
            l: n,
            a: n,
            b_g1: n,
            b_g2: n,
            h_copies: 1,
        }
    }

    fn fp(n: u8) -> Vec<u8> {
        vec![n; 4]
    }

    #[test]
    fn a_one_key_slot_keeps_one_key_unless_a_worker_holds_the_old_one() {
        let mut k = Keys::<u32>::new(1);
        k.insert(fp(1), shape(10), Arc::new(1));
        assert_eq!(k.make_room_for(&shape(20)), 1);
        k.insert(fp(2), shape(20), Arc::new(2));
        let held = k.get(&fp(2)).unwrap();
        assert_eq!(k.make_room_for(&shape(30)), 0, "held by a worker");
        drop(held);
        assert_eq!(k.make_room_for(&shape(30)), 1);
        assert_eq!(k.len(), 0);
        assert_eq!((k.uploads, k.evictions), (2, 2));
    }

    #[test]
    fn a_shared_slot_keeps_other_shapes_and_replaces_the_same_shape() {
        let mut k = Keys::<u32>::new(usize::MAX);
        k.insert(fp(1), shape(10), Arc::new(1));
        assert_eq!(k.make_room_for(&shape(20)), 0, "another shape stays");
        k.insert(fp(2), shape(20), Arc::new(2));
        assert_eq!(
            k.make_room_for(&shape(20)),
            1,
            "a new key of shape 20 replaces the old"
        );
        assert!(k.contains(&fp(1)) && !k.contains(&fp(2)));
        k.release_for_streaming();
        assert!(k.contains(&fp(1)), "a shared slot leaves room to admission");
        assert_eq!(k.bytes(), shape(10).bytes());
    }

    #[test]
    fn eviction_takes_the_least_recently_used_key_not_in_use() {
        let mut k = Keys::<u32>::new(usize::MAX);
        for i in 1..=3 {
            k.insert(fp(i), shape(i as usize), Arc::new(u32::from(i)));
        }
        k.get(&fp(1)); // 2 is now the least recently used
        k.pin(shape(2)); // but an admitted partition pins it
        assert_eq!(k.evict_lru(None), Some(shape(3).bytes()));
        assert_eq!(k.evict_lru(Some(&shape(1))), None, "1 is kept, 2 pinned");
        k.unpin(&shape(2));
        assert_eq!(k.evict_lru(Some(&shape(1))), Some(shape(2).bytes()));
        let held = k.get(&fp(1)).unwrap();
        assert_eq!(k.evict(&fp(1)), Err(KeyInUse));
        drop(held);
        assert_eq!(k.evict(&fp(1)), Ok(true));
        assert_eq!(k.evict(&fp(1)), Ok(false), "not resident any more");
        assert_eq!(k.len(), 0);
    }

    #[test]
    fn key_bytes_match_the_plan() {
        let s = Shape {
            domain: 1 << 10,
            h: 1023,
            l: 900,
            a: 950,
            b_g1: 400,
            b_g2: 400,
            aux: 900,
            device_abc: None,
        };
        assert_eq!(KeyShape::of(&s).bytes(), s.srs_bytes());
    }
}
