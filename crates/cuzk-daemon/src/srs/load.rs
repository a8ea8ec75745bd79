//! The loader threads: wait for room, borrow the key's bytes from the
//! engine, read and parse the key, record the outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_filecoin::Circuit;
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::ProvingKey;

use super::{EngineShare, KeySynthesis, Loaded, SrsManager, Tier};
use crate::error::SrsError;

/// How often a wait for room is logged again.
pub(super) const WAIT_LOG_EVERY: Duration = Duration::from_secs(30);

impl SrsManager {
    /// A loader thread: waits for room, reads the key, records the outcome.
    pub(super) fn load_in_background(&self, circuit: Circuit, id: &'static str, needed: u64) {
        let started = Instant::now();
        let mut state = self.state.lock();
        let mut said = None::<Instant>;
        while !self.make_room(&mut state, needed) {
            if said.is_none_or(|at| at.elapsed() >= WAIT_LOG_EVERY) {
                said = Some(Instant::now());
                let held: Vec<String> = state
                    .entries
                    .iter()
                    .filter(|(_, e)| e.loaded.is_some())
                    .map(|(id, e)| format!("{id} ({} job(s))", e.refs))
                    .collect();
                tracing::info!(
                    circuit_id = id,
                    needed,
                    budget = self.budget,
                    hot = state.hot_bytes,
                    held_by = held.join(", "),
                    "waiting for running jobs to release a HOT key (srs.host_budget)"
                );
            }
            self.changed.wait_for(&mut state, WAIT_LOG_EVERY);
        }
        drop(state);
        // Keys evicted for room leave the devices too.
        self.release_from_devices();
        // The file's length bounds the parsed key (points are stored
        // uncompressed, as blstrs holds them); the loan shrinks to the
        // parsed size once it is known.
        let loan = match &self.engine {
            Some(EngineShare { lender, .. }) => {
                tracing::info!(
                    circuit_id = id,
                    needed,
                    "borrowing the key's host memory from the engine"
                );
                lender.lend(needed)
            }
            None => None,
        };
        tracing::info!(circuit_id = id, "loading a key");
        let loaded = self.load(circuit, id).map(|mut l| {
            l._loan = loan.map(|mut loan| {
                loan.shrink_to(l.bytes);
                loan
            });
            l
        });
        let mut state = self.state.lock();
        let entry = state
            .entries
            .get_mut(id)
            .expect("entries are never removed");
        entry.loading = false;
        match loaded {
            Ok(loaded) => {
                let from = entry.tier;
                let bytes = loaded.bytes;
                entry.loaded = Some(loaded);
                entry.mapped = None;
                entry.tier = Tier::Hot;
                state.hot_bytes += bytes;
                Self::transition(&mut state, id, from, Tier::Hot, "loaded");
                tracing::info!(
                    circuit_id = id,
                    bytes,
                    ms = started.elapsed().as_millis() as u64,
                    "key loaded"
                );
            }
            Err(source) => {
                let error = SrsError::Key {
                    circuit_id: id.into(),
                    source: Box::new(source),
                };
                tracing::error!(circuit_id = id, error = %error,
                    "loading a key failed; the jobs waiting for it fail");
                entry.failed = Some((Instant::now(), Arc::new(error)));
            }
        }
        drop(state);
        self.changed.notify_all();
        if let Some(notify) = &*self.on_load_end.lock() {
            notify();
        }
    }

    /// Reads and parses the key and its verifying keys, and chooses how
    /// its jobs synthesize (opening its recording when pre-compiled: the
    /// file is mapped, its pages in the page cache, not in the budget).
    fn load(&self, circuit: Circuit, id: &str) -> Result<Loaded, cuzk_filecoin::Error> {
        self.params.check(circuit)?;
        let key = self.params.load_proving_key(circuit)?;
        let filecoin_vk = self.params.load_verifying_key(circuit)?;
        let prepared = PreparedVerifyingKey::new(&key.vk);
        let bytes = parsed_bytes(&key);
        let choice = *self.synthesis.lock();
        let synthesis = KeySynthesis::choose(choice, circuit, &self.params, &key, id);
        Ok(Loaded {
            key: Arc::new(key),
            prepared: Arc::new(prepared),
            filecoin_vk: Arc::new(filecoin_vk),
            synthesis,
            bytes,
            _loan: None,
        })
    }
}

pub(super) fn map_file(path: &std::path::Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the parameter cache's files are replaced by rename, never
    // written in place, so the mapping's contents do not change under it;
    // it is only advised into the page cache, never read through here.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let _ = map.advise(memmap2::Advice::WillNeed);
    Some(map)
}

/// Host bytes of a parsed key: its points as stored in memory.
fn parsed_bytes(key: &ProvingKey) -> u64 {
    let g1 = std::mem::size_of::<blstrs::G1Affine>() as u64;
    let g2 = std::mem::size_of::<blstrs::G2Affine>() as u64;
    let g1_points = key.h.len() + key.l.len() + key.a.len() + key.b_g1.len() + key.vk.ic.len();
    g1_points as u64 * g1 + key.b_g2.len() as u64 * g2
}
