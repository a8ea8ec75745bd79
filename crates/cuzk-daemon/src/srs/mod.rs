//! The SRS manager: proving keys found in the parameter cache by circuit id
//! (`porep-2k`, `porep-32g`, … as Curio names them), in three tiers:
//!
//! * **HOT**: parsed in host memory (`ProvingKey`, with its prepared
//!   verifying key), what the engine proves from; a CUDA device uploads it
//!   once into its resident slot on first use (cuzk-gpu's `SrsSlot`).
//! * **WARM**: the file mapped (and advised into the page cache), not parsed.
//! * **COLD**: on disk only.
//!
//! Keys become HOT when a job needs one or on `PreloadSRS`, within a
//! host-memory budget: a key that does not fit evicts idle HOT keys, least
//! recently used first, or waits until jobs release theirs. A key is read in
//! on a loader thread of its own ([`SrsManager::try_acquire`] starts it and
//! returns at once), so the daemon's dispatcher never waits for a disk: jobs
//! of that circuit stay queued while it is LOADING, other circuits' jobs go
//! on. A failed load fails the jobs that were waiting for it (their
//! `try_acquire` returns the error) and is tried again for the next job. A HOT key idle
//! for `idle` becomes WARM, a WARM one idle for `warm` becomes COLD; a key
//! is never evicted while a job holds a [`SrsLease`] on it. Every transition
//! is logged and counted.
//!
//! The module is split by concern: `circuits` (the circuit ids), `load`
//! (the loader threads), `evict` (room, demotion, idle eviction,
//! `EvictSRS`); the tiers, leases and status are here.

mod circuits;
mod device;
mod evict;
pub(crate) mod fit;
mod load;
mod synthesis;
#[cfg(test)]
mod tests;

use circuits::circuit_of;
pub(crate) use circuits::{circuit_id, circuits};
pub(crate) use device::DeviceKeys;
pub(crate) use fit::EngineShare;
pub(crate) use synthesis::{KeySynthesis, SynthesisChoice};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Bls12;
use cuzk_filecoin::{Circuit, ParamsDir};
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::ProvingKey;
use parking_lot::{Condvar, Mutex};

use cuzk_pipeline::HostLoan;

use crate::error::SrsError;

/// A key's tier, as the wire's `SRSStatus.Tier` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Tier {
    /// Parsed in host memory (and resident on the GPUs): ready to prove.
    Hot,
    /// Its file mapped, not parsed.
    Warm,
    /// On disk only.
    Cold,
}

impl Tier {
    /// "hot", "warm" or "cold", for logs and metric labels.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }

    /// Every tier.
    pub(crate) const ALL: [Tier; 3] = [Tier::Hot, Tier::Warm, Tier::Cold];
}

/// A key ready to prove with: while a lease lives, its key stays HOT.
pub(crate) struct SrsLease {
    manager: Arc<SrsManager>,
    circuit_id: &'static str,
    /// The proving key.
    pub key: Arc<ProvingKey>,
    /// Its prepared verifying key (the engine's per-partition check).
    pub prepared: Arc<PreparedVerifyingKey>,
    /// The verifying key as the Filecoin crates read it (the final check).
    pub filecoin_vk: Arc<bellperson::groth16::VerifyingKey<Bls12>>,
    /// How the key's jobs synthesize (chosen when it was loaded).
    pub synthesis: KeySynthesis,
    /// How long this acquisition waited for the key to become HOT.
    pub load_time: Duration,
}

impl std::fmt::Debug for SrsLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrsLease")
            .field("circuit_id", &self.circuit_id)
            .field("load_time", &self.load_time)
            .finish_non_exhaustive()
    }
}

impl Drop for SrsLease {
    fn drop(&mut self) {
        let mut state = self.manager.state.lock();
        if let Some(e) = state.entries.get_mut(self.circuit_id) {
            e.refs -= 1;
            e.last_used = Instant::now();
        }
        self.manager.changed.notify_all();
    }
}

struct Loaded {
    key: Arc<ProvingKey>,
    prepared: Arc<PreparedVerifyingKey>,
    filecoin_vk: Arc<bellperson::groth16::VerifyingKey<Bls12>>,
    synthesis: KeySynthesis,
    bytes: u64,
    /// The key's bytes taken out of the engine's host budget (given back
    /// when the key leaves HOT).
    _loan: Option<HostLoan>,
}

struct Entry {
    path: PathBuf,
    tier: Tier,
    loaded: Option<Loaded>,
    mapped: Option<memmap2::Mmap>,
    loading: bool,
    /// The last load's failure (when it ended, what it said), for the jobs
    /// that were waiting for it.
    failed: Option<(Instant, Arc<SrsError>)>,
    refs: u32,
    last_used: Instant,
}

/// Called after each load ends (the daemon wakes its dispatcher).
type OnLoadEnd = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    entries: BTreeMap<&'static str, Entry>,
    /// (from, to) → count.
    transitions: BTreeMap<(Tier, Tier), u64>,
    hot_bytes: u64,
    /// Keys that left HOT, to drop from the devices once the lock is
    /// released (`device`).
    leaving: Vec<(&'static str, Arc<ProvingKey>)>,
}

/// One key as `GetStatus` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SrsStatus {
    /// The key's circuit id.
    pub circuit_id: &'static str,
    /// Its tier.
    pub tier: Tier,
    /// Being read in by a loader thread.
    pub loading: bool,
    /// Parsed size when HOT, the file's size otherwise.
    pub size_bytes: u64,
    /// Jobs proving with it now.
    pub ref_count: u32,
}

/// The manager (see the module docs).
pub(crate) struct SrsManager {
    params: ParamsDir,
    /// Each circuit's key file (computing a file name builds the circuit's
    /// public parameters: done once).
    paths: BTreeMap<&'static str, PathBuf>,
    budget: u64,
    /// The engine whose partitions share the host with the keys: a HOT key's
    /// bytes are lent out of its budget, so partitions get what keys do not
    /// hold right now.
    engine: Option<EngineShare>,
    idle: Duration,
    warm: Duration,
    state: Mutex<State>,
    changed: Condvar,
    on_load_end: Mutex<Option<OnLoadEnd>>,
    /// The devices' resident keys (none on the CPU backend).
    devices: Mutex<Vec<DeviceKeys>>,
    /// `proving.synthesis`, applied to each key as it is loaded.
    synthesis: Mutex<SynthesisChoice>,
}

impl std::fmt::Debug for SrsManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrsManager")
            .field("params", &self.params)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl SrsManager {
    /// A manager over the parameter cache `params`, with `budget` bytes of
    /// host memory for HOT keys, HOT → WARM after `idle`, WARM → COLD after
    /// `warm`; HOT keys borrow their bytes from `engine` if given.
    pub(crate) fn new(
        params: ParamsDir,
        budget: u64,
        engine: Option<EngineShare>,
        idle: Duration,
        warm: Duration,
    ) -> Arc<Self> {
        let paths = circuits()
            .iter()
            .filter_map(|(id, c)| Some((*id, params.params_path(*c).ok()?)))
            .collect();
        Arc::new(SrsManager {
            params,
            paths,
            budget,
            engine,
            idle,
            warm,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            on_load_end: Mutex::new(None),
            devices: Mutex::new(Vec::new()),
            synthesis: Mutex::new(SynthesisChoice::default()),
        })
    }

    /// Calls `notify` whenever a load ends, loaded or failed.
    pub(crate) fn on_load_end(&self, notify: impl Fn() + Send + Sync + 'static) {
        *self.on_load_end.lock() = Some(Box::new(notify));
    }

    /// How keys loaded from now on synthesize their jobs (default
    /// [`SynthesisChoice::Auto`]).
    pub(crate) fn use_synthesis(&self, choice: SynthesisChoice) {
        tracing::info!(%choice, "proving.synthesis");
        *self.synthesis.lock() = choice;
    }

    /// The host-memory budget for HOT keys.
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// Makes the key of `circuit` HOT and holds it until the lease drops,
    /// waiting for its loader thread (for `PreloadSRS`; the dispatcher uses
    /// [`SrsManager::try_acquire`], which never waits).
    pub(crate) fn acquire(self: &Arc<Self>, circuit: Circuit) -> Result<SrsLease, SrsError> {
        let asked = Instant::now();
        loop {
            if let Some(lease) = self.try_acquire(circuit, asked)? {
                return Ok(lease);
            }
            let mut state = self.state.lock();
            // Timed: the load may have ended between the two locks.
            self.changed
                .wait_for(&mut state, Duration::from_millis(100));
        }
    }

    /// The key of `circuit` if it is HOT (leased until the lease drops;
    /// its `load_time` counts from `asked`, when the job first asked);
    /// `None` while it loads, starting its loader thread if none runs. A
    /// load that failed after `asked` is this job's error; one that failed
    /// before is tried again.
    pub(crate) fn try_acquire(
        self: &Arc<Self>,
        circuit: Circuit,
        asked: Instant,
    ) -> Result<Option<SrsLease>, SrsError> {
        let id = circuit_id(circuit);
        let path = self
            .params
            .params_path(circuit)
            .map_err(|source| SrsError::Key {
                circuit_id: id.into(),
                source: Box::new(source),
            })?;
        let mut state = self.state.lock();
        let entry = state.entries.entry(id).or_insert_with(|| Entry {
            path: path.clone(),
            tier: Tier::Cold,
            loaded: None,
            mapped: None,
            loading: false,
            failed: None,
            refs: 0,
            last_used: Instant::now(),
        });
        if let Some(l) = &entry.loaded {
            entry.refs += 1;
            entry.last_used = Instant::now();
            return Ok(Some(SrsLease {
                manager: Arc::clone(self),
                circuit_id: id,
                key: Arc::clone(&l.key),
                prepared: Arc::clone(&l.prepared),
                filecoin_vk: Arc::clone(&l.filecoin_vk),
                synthesis: l.synthesis.clone(),
                load_time: asked.elapsed(),
            }));
        }
        if entry.loading {
            return Ok(None);
        }
        if let Some((at, e)) = &entry.failed {
            if *at >= asked {
                return Err(SrsError::LoadFailed {
                    circuit_id: id.into(),
                    source: Arc::clone(e),
                });
            }
        }
        let needed = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let budget = self.keys_at_most();
        if needed > budget {
            return Err(SrsError::TooLarge {
                circuit_id: id.into(),
                needed,
                budget,
            });
        }
        entry.loading = true;
        entry.failed = None;
        drop(state);
        let manager = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("srs-load-{id}"))
            .spawn(move || manager.load_in_background(circuit, id, needed))
            .expect("spawning a key loader");
        Ok(None)
    }

    /// `PreloadSRS`: makes `circuit_id` HOT. Returns (already HOT, time taken).
    pub(crate) fn preload(
        self: &Arc<Self>,
        circuit_id: &str,
    ) -> Result<(bool, Duration), SrsError> {
        let circuit = circuit_of(circuit_id)?;
        self.check_id_fits(circuit_id)?;
        let already = self.tier_of(circuit_id) == Some(Tier::Hot);
        let lease = self.acquire(circuit)?;
        Ok((already, lease.load_time))
    }

    fn tier_of(&self, circuit_id: &str) -> Option<Tier> {
        self.state
            .lock()
            .entries
            .iter()
            .find(|(id, _)| **id == circuit_id)
            .map(|(_, e)| e.tier)
    }

    /// Every key known or present in the parameter cache.
    pub(crate) fn statuses(&self) -> Vec<SrsStatus> {
        let state = self.state.lock();
        let mut out = Vec::new();
        for &(id, _) in circuits() {
            match state.entries.get(id) {
                Some(e) => out.push(SrsStatus {
                    circuit_id: id,
                    tier: e.tier,
                    loading: e.loading,
                    size_bytes: e.loaded.as_ref().map_or_else(
                        || std::fs::metadata(&e.path).map_or(0, |m| m.len()),
                        |l| l.bytes,
                    ),
                    ref_count: e.refs,
                }),
                None => {
                    if let Some(size) = self
                        .paths
                        .get(id)
                        .and_then(|p| std::fs::metadata(p).ok())
                        .map(|m| m.len())
                    {
                        out.push(SrsStatus {
                            circuit_id: id,
                            tier: Tier::Cold,
                            loading: false,
                            size_bytes: size,
                            ref_count: 0,
                        });
                    }
                }
            }
        }
        out
    }

    /// Transition counts, (from, to) → n.
    pub(crate) fn transitions(&self) -> BTreeMap<(Tier, Tier), u64> {
        self.state.lock().transitions.clone()
    }

    /// Bytes of HOT keys.
    pub(crate) fn hot_bytes(&self) -> u64 {
        self.state.lock().hot_bytes
    }
}
