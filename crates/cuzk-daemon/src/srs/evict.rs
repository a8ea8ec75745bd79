//! Leaving HOT: room for a key being loaded (least recently used idle keys
//! first), idle eviction, `EvictSRS`, and the transitions' log and counts.

use std::sync::Arc;
use std::time::Instant;

use super::load::map_file;
use super::{circuit_of, SrsManager, State, Tier};
use crate::error::SrsError;

impl SrsManager {
    /// Evicts idle HOT keys (least recently used first) until `needed` more
    /// bytes fit the budget; `false` if they cannot (keys in use).
    pub(super) fn make_room(&self, state: &mut State, needed: u64) -> bool {
        while state.hot_bytes + needed > self.budget {
            let victim = state
                .entries
                .iter()
                .filter(|(_, e)| e.tier == Tier::Hot && e.refs == 0 && !e.loading)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| *id);
            match victim {
                Some(id) => self.demote(state, id, Tier::Warm, "evicted for room"),
                None => return false,
            }
        }
        true
    }

    /// HOT → WARM (or → COLD), or WARM → COLD.
    pub(super) fn demote(&self, state: &mut State, id: &'static str, to: Tier, why: &str) {
        let entry = state.entries.get_mut(id).expect("a known key");
        let from = entry.tier;
        let left = entry.loaded.take();
        entry.mapped = match to {
            Tier::Warm => map_file(&entry.path),
            _ => None,
        };
        entry.tier = if to == Tier::Warm && entry.mapped.is_none() {
            Tier::Cold
        } else {
            to
        };
        let to = entry.tier;
        if let Some(l) = left {
            state.hot_bytes -= l.bytes;
            state.leaving.push((id, Arc::clone(&l.key)));
        }
        Self::transition(state, id, from, to, why);
    }

    pub(super) fn transition(state: &mut State, id: &str, from: Tier, to: Tier, why: &str) {
        *state.transitions.entry((from, to)).or_default() += 1;
        tracing::info!(
            circuit_id = id,
            from = from.as_str(),
            to = to.as_str(),
            why,
            "SRS tier transition"
        );
    }
    /// `EvictSRS`: drops `circuit_id` to COLD. Returns (it was HOT, bytes freed).
    pub(crate) fn evict(&self, circuit_id: &str) -> Result<(bool, u64), SrsError> {
        circuit_of(circuit_id)?;
        let mut state = self.state.lock();
        let Some((&id, entry)) = state.entries.iter().find(|(id, _)| **id == circuit_id) else {
            return Ok((false, 0));
        };
        if entry.refs > 0 || entry.loading {
            return Err(SrsError::InUse {
                circuit_id: id.into(),
                refs: entry.refs.max(1),
            });
        }
        let was_hot = entry.tier == Tier::Hot;
        let freed = entry.loaded.as_ref().map_or(0, |l| l.bytes);
        if entry.tier != Tier::Cold {
            self.demote(&mut state, id, Tier::Cold, "EvictSRS");
        }
        drop(state);
        self.release_from_devices();
        self.changed.notify_all();
        Ok((was_hot, freed))
    }

    /// Idle eviction: HOT keys unused for `idle` become WARM, WARM ones
    /// unused for `warm` become COLD. Called periodically.
    pub(crate) fn tick(&self) {
        let mut state = self.state.lock();
        let now = Instant::now();
        let due: Vec<(&'static str, Tier)> = state
            .entries
            .iter()
            .filter(|(_, e)| e.refs == 0 && !e.loading)
            .filter_map(|(id, e)| {
                let idle = now.duration_since(e.last_used);
                match e.tier {
                    Tier::Hot if idle >= self.idle => Some((*id, Tier::Warm)),
                    Tier::Warm if idle >= self.idle + self.warm => Some((*id, Tier::Cold)),
                    _ => None,
                }
            })
            .collect();
        for (id, to) in due {
            self.demote(&mut state, id, to, "idle");
        }
        let any = !state.entries.is_empty();
        drop(state);
        self.release_from_devices();
        if any {
            self.changed.notify_all();
        }
    }
}
