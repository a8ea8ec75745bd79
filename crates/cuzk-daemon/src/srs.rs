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
//! recently used first, or waits until jobs release theirs. A HOT key idle
//! for `idle` becomes WARM, a WARM one idle for `warm` becomes COLD; a key
//! is never evicted while a job holds a [`SrsLease`] on it. Every transition
//! is logged and counted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Bls12;
use cuzk_filecoin::{ParamsDir, ProofType};
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::ProvingKey;
use parking_lot::{Condvar, Mutex};

use crate::error::SrsError;

/// A key's tier, as the wire's `SRSStatus.Tier` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Hot,
    Warm,
    Cold,
}

impl Tier {
    /// "hot", "warm" or "cold", for logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }

    /// Every tier.
    pub const ALL: [Tier; 3] = [Tier::Hot, Tier::Warm, Tier::Cold];
}

/// The PoRep sector sizes and their circuit ids: `porep-` and the size as
/// Curio abbreviates it.
const POREP_CIRCUITS: [(&str, &str); 5] = [
    ("porep-2k", "StackedDrg2KiBV1_1"),
    ("porep-8m", "StackedDrg8MiBV1_1"),
    ("porep-512m", "StackedDrg512MiBV1_1"),
    ("porep-32g", "StackedDrg32GiBV1_1"),
    ("porep-64g", "StackedDrg64GiBV1_1"),
];

/// The circuit id of a PoRep proof type (every version of one sector size
/// proves the same circuit with the same key).
pub fn circuit_id(proof_type: ProofType) -> &'static str {
    let size = proof_type.sector_size();
    POREP_CIRCUITS
        .iter()
        .find(|(_, name)| ProofType::from_name(name).map(|p| p.sector_size()).ok() == Some(size))
        .map(|(id, _)| *id)
        .expect("every supported proof type has one of the five PoRep sector sizes")
}

fn proof_type_of(id: &str) -> Result<ProofType, SrsError> {
    POREP_CIRCUITS
        .iter()
        .find(|(c, _)| *c == id)
        .map(|(_, name)| ProofType::from_name(name).expect("a registered proof type"))
        .ok_or_else(|| SrsError::UnknownCircuit {
            id: id.into(),
            known: POREP_CIRCUITS
                .iter()
                .map(|(c, _)| *c)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// A key ready to prove with: while a lease lives, its key stays HOT.
pub struct SrsLease {
    manager: Arc<SrsManager>,
    circuit_id: &'static str,
    /// The proving key.
    pub key: Arc<ProvingKey>,
    /// Its prepared verifying key (the engine's per-partition check).
    pub prepared: Arc<PreparedVerifyingKey>,
    /// The verifying key as the Filecoin crates read it (the final check).
    pub filecoin_vk: Arc<bellperson::groth16::VerifyingKey<Bls12>>,
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
    bytes: u64,
}

struct Entry {
    path: PathBuf,
    tier: Tier,
    loaded: Option<Loaded>,
    mapped: Option<memmap2::Mmap>,
    loading: bool,
    refs: u32,
    last_used: Instant,
}

#[derive(Default)]
struct State {
    entries: BTreeMap<&'static str, Entry>,
    /// (from, to) → count.
    transitions: BTreeMap<(Tier, Tier), u64>,
    hot_bytes: u64,
}

/// One key as `GetStatus` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrsStatus {
    pub circuit_id: &'static str,
    pub tier: Tier,
    /// Parsed size when HOT, the file's size otherwise.
    pub size_bytes: u64,
    pub ref_count: u32,
}

/// The manager (see the module docs).
pub struct SrsManager {
    params: ParamsDir,
    /// Each circuit's key file (computing a file name builds the circuit's
    /// public parameters: done once).
    paths: BTreeMap<&'static str, PathBuf>,
    budget: u64,
    idle: Duration,
    warm: Duration,
    state: Mutex<State>,
    changed: Condvar,
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
    /// host memory for HOT keys, HOT → WARM after `idle`, WARM → COLD after `warm`.
    pub fn new(params: ParamsDir, budget: u64, idle: Duration, warm: Duration) -> Arc<Self> {
        let paths = POREP_CIRCUITS
            .iter()
            .filter_map(|(id, name)| {
                let pt = ProofType::from_name(name).ok()?;
                Some((*id, params.params_path(pt).ok()?))
            })
            .collect();
        Arc::new(SrsManager {
            params,
            paths,
            budget,
            idle,
            warm,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        })
    }

    /// The host-memory budget for HOT keys.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Makes the key of `proof_type` HOT (loading it, evicting idle keys to
    /// make room, or waiting for running jobs to release theirs) and holds
    /// it until the lease drops.
    pub fn acquire(self: &Arc<Self>, proof_type: ProofType) -> Result<SrsLease, SrsError> {
        let id = circuit_id(proof_type);
        let key_error = |source| SrsError::Key {
            circuit_id: id.into(),
            source: Box::new(source),
        };
        let path = self.params.params_path(proof_type).map_err(key_error)?;
        let started = Instant::now();
        let mut state = self.state.lock();
        loop {
            let entry = state.entries.entry(id).or_insert_with(|| Entry {
                path: path.clone(),
                tier: Tier::Cold,
                loaded: None,
                mapped: None,
                loading: false,
                refs: 0,
                last_used: Instant::now(),
            });
            if let Some(l) = &entry.loaded {
                entry.refs += 1;
                entry.last_used = Instant::now();
                return Ok(SrsLease {
                    manager: Arc::clone(self),
                    circuit_id: id,
                    key: Arc::clone(&l.key),
                    prepared: Arc::clone(&l.prepared),
                    filecoin_vk: Arc::clone(&l.filecoin_vk),
                    load_time: started.elapsed(),
                });
            }
            if entry.loading {
                self.changed.wait(&mut state);
                continue;
            }
            let needed = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if needed > self.budget {
                return Err(SrsError::TooLarge {
                    circuit_id: id.into(),
                    needed,
                    budget: self.budget,
                });
            }
            if !self.make_room(&mut state, needed) {
                tracing::info!(
                    circuit_id = id,
                    needed,
                    budget = self.budget,
                    hot = state.hot_bytes,
                    "waiting for running jobs to release a key"
                );
                self.changed.wait(&mut state);
                continue;
            }
            state.entries.get_mut(id).expect("inserted above").loading = true;
            drop(state);
            let loaded = self.load(proof_type);
            state = self.state.lock();
            let entry = state
                .entries
                .get_mut(id)
                .expect("entries are never removed");
            entry.loading = false;
            self.changed.notify_all();
            let loaded = loaded.map_err(key_error)?;
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
    }

    /// Evicts idle HOT keys (least recently used first) until `needed` more
    /// bytes fit the budget; `false` if they cannot (keys in use).
    fn make_room(&self, state: &mut State, needed: u64) -> bool {
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

    fn load(&self, proof_type: ProofType) -> Result<Loaded, cuzk_filecoin::Error> {
        self.params.check(proof_type)?;
        let key = self.params.load_proving_key(proof_type)?;
        let filecoin_vk = self.params.load_verifying_key(proof_type)?;
        let prepared = PreparedVerifyingKey::new(&key.vk);
        let bytes = parsed_bytes(&key);
        Ok(Loaded {
            key: Arc::new(key),
            prepared: Arc::new(prepared),
            filecoin_vk: Arc::new(filecoin_vk),
            bytes,
        })
    }

    /// HOT → WARM (or → COLD), or WARM → COLD.
    fn demote(&self, state: &mut State, id: &'static str, to: Tier, why: &str) {
        let entry = state.entries.get_mut(id).expect("a known key");
        let from = entry.tier;
        let mut freed = 0;
        if let Some(l) = entry.loaded.take() {
            freed = l.bytes;
        }
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
        state.hot_bytes -= freed;
        Self::transition(state, id, from, to, why);
    }

    fn transition(state: &mut State, id: &str, from: Tier, to: Tier, why: &str) {
        *state.transitions.entry((from, to)).or_default() += 1;
        tracing::info!(
            circuit_id = id,
            from = from.as_str(),
            to = to.as_str(),
            why,
            "SRS tier transition"
        );
    }

    /// `PreloadSRS`: makes `circuit_id` HOT. Returns (already HOT, time taken).
    pub fn preload(self: &Arc<Self>, circuit_id: &str) -> Result<(bool, Duration), SrsError> {
        let pt = proof_type_of(circuit_id)?;
        let already = self.tier_of(circuit_id) == Some(Tier::Hot);
        let lease = self.acquire(pt)?;
        Ok((already, lease.load_time))
    }

    /// `EvictSRS`: drops `circuit_id` to COLD. Returns (it was HOT, bytes freed).
    pub fn evict(&self, circuit_id: &str) -> Result<(bool, u64), SrsError> {
        proof_type_of(circuit_id)?;
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
        self.changed.notify_all();
        Ok((was_hot, freed))
    }

    /// Idle eviction: HOT keys unused for `idle` become WARM, WARM ones
    /// unused for `warm` become COLD. Called periodically.
    pub fn tick(&self) {
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
        if !state.entries.is_empty() {
            self.changed.notify_all();
        }
    }

    fn tier_of(&self, circuit_id: &str) -> Option<Tier> {
        self.state
            .lock()
            .entries
            .iter()
            .find(|(id, _)| **id == circuit_id)
            .map(|(_, e)| e.tier)
    }

    /// Every PoRep key known or present in the parameter cache.
    pub fn statuses(&self) -> Vec<SrsStatus> {
        let state = self.state.lock();
        let mut out = Vec::new();
        for (id, _) in POREP_CIRCUITS {
            match state.entries.get(id) {
                Some(e) => out.push(SrsStatus {
                    circuit_id: id,
                    tier: e.tier,
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
    pub fn transitions(&self) -> BTreeMap<(Tier, Tier), u64> {
        self.state.lock().transitions.clone()
    }

    /// Bytes of HOT keys.
    pub fn hot_bytes(&self) -> u64 {
        self.state.lock().hot_bytes
    }
}

fn map_file(path: &std::path::Path) -> Option<memmap2::Mmap> {
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
