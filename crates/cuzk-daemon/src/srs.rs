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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use blstrs::Bls12;
use cuzk_filecoin::{Circuit, ParamsDir, PostKind, PostType, ProofType, UpdateType};
use cuzk_groth16::verifier::PreparedVerifyingKey;
use cuzk_groth16::ProvingKey;
use parking_lot::{Condvar, Mutex};

use cuzk_pipeline::HostLoan;
use cuzk_sched::HostLender;

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

/// The sector sizes as Curio abbreviates them in circuit ids, with the
/// name of a PoRep proof type of that size.
const SIZES: [(&str, &str); 5] = [
    ("2k", "StackedDrg2KiBV1_1"),
    ("8m", "StackedDrg8MiBV1_1"),
    ("512m", "StackedDrg512MiBV1_1"),
    ("32g", "StackedDrg32GiBV1_1"),
    ("64g", "StackedDrg64GiBV1_1"),
];

/// Every circuit the daemon proves, by circuit id as Curio names them:
/// `porep-32g`, `winning-32g`, `wpost-32g` (the V1_2 WindowPoSt circuit),
/// `snap-32g`, for each sector size.
fn circuits() -> &'static [(&'static str, Circuit)] {
    static ALL: OnceLock<Vec<(&'static str, Circuit)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        for (prefix, of) in [
            ("porep", Circuit::Porep as fn(ProofType) -> Circuit),
            ("winning", |s| Circuit::Post(PostType::winning_for(s))),
            ("wpost", |s| Circuit::Post(PostType::window_for(s))),
            ("snap", |s| Circuit::Update(UpdateType::for_seal(s))),
        ] {
            for (size, name) in SIZES {
                let seal = ProofType::from_name(name).expect("a supported PoRep proof type");
                let id: &'static str = Box::leak(format!("{prefix}-{size}").into_boxed_str());
                out.push((id, of(seal)));
            }
        }
        out
    })
}

/// The kind of a circuit, ignoring its sector size and version.
fn kind_of(c: Circuit) -> u8 {
    match c {
        Circuit::Porep(_) => 0,
        Circuit::Post(p) if p.kind() == PostKind::Winning => 1,
        Circuit::Post(_) => 2,
        Circuit::Update(_) => 3,
    }
}

/// The circuit id of a circuit (every version of one kind and sector size
/// proves the same circuit with the same key).
pub fn circuit_id(circuit: Circuit) -> &'static str {
    circuits()
        .iter()
        .find(|(_, c)| kind_of(*c) == kind_of(circuit) && c.sector_size() == circuit.sector_size())
        .map(|(id, _)| *id)
        .expect("every supported circuit has one of the five sector sizes")
}

fn circuit_of(id: &str) -> Result<Circuit, SrsError> {
    circuits()
        .iter()
        .find(|(c, _)| *c == id)
        .map(|(_, c)| *c)
        .ok_or_else(|| SrsError::UnknownCircuit {
            id: id.into(),
            known: circuits()
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
}

/// One key as `GetStatus` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrsStatus {
    pub circuit_id: &'static str,
    pub tier: Tier,
    /// Being read in by a loader thread.
    pub loading: bool,
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
    /// The engine whose partitions share the host with the keys: a HOT key's
    /// bytes are lent out of its budget, so partitions get what keys do not
    /// hold right now.
    lender: Option<HostLender>,
    idle: Duration,
    warm: Duration,
    state: Mutex<State>,
    changed: Condvar,
    on_load_end: Mutex<Option<OnLoadEnd>>,
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
    /// `warm`; HOT keys borrow their bytes from `lender`'s engine if given.
    pub fn new(
        params: ParamsDir,
        budget: u64,
        lender: Option<HostLender>,
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
            lender,
            idle,
            warm,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            on_load_end: Mutex::new(None),
        })
    }

    /// Calls `notify` whenever a load ends, loaded or failed.
    pub fn on_load_end(&self, notify: impl Fn() + Send + Sync + 'static) {
        *self.on_load_end.lock() = Some(Box::new(notify));
    }

    /// The host-memory budget for HOT keys.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Makes the key of `circuit` HOT and holds it until the lease drops,
    /// waiting for its loader thread (for `PreloadSRS`; the dispatcher uses
    /// [`SrsManager::try_acquire`], which never waits).
    pub fn acquire(self: &Arc<Self>, circuit: Circuit) -> Result<SrsLease, SrsError> {
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
    pub fn try_acquire(
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
        let budget = self
            .lender
            .as_ref()
            .map_or(self.budget, |l| self.budget.min(l.lendable()));
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

    /// A loader thread: waits for room, reads the key, records the outcome.
    fn load_in_background(&self, circuit: Circuit, id: &'static str, needed: u64) {
        let started = Instant::now();
        let mut state = self.state.lock();
        while !self.make_room(&mut state, needed) {
            tracing::info!(
                circuit_id = id,
                needed,
                budget = self.budget,
                hot = state.hot_bytes,
                "waiting for running jobs to release a key"
            );
            self.changed.wait(&mut state);
        }
        drop(state);
        // The file's length bounds the parsed key (points are stored
        // uncompressed, as blstrs holds them); the loan shrinks to the
        // parsed size once it is known.
        let loan = match &self.lender {
            Some(lender) => {
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
        let loaded = self.load(circuit).map(|mut l| {
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

    fn load(&self, circuit: Circuit) -> Result<Loaded, cuzk_filecoin::Error> {
        self.params.check(circuit)?;
        let key = self.params.load_proving_key(circuit)?;
        let filecoin_vk = self.params.load_verifying_key(circuit)?;
        let prepared = PreparedVerifyingKey::new(&key.vk);
        let bytes = parsed_bytes(&key);
        Ok(Loaded {
            key: Arc::new(key),
            prepared: Arc::new(prepared),
            filecoin_vk: Arc::new(filecoin_vk),
            bytes,
            _loan: None,
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
        let circuit = circuit_of(circuit_id)?;
        let already = self.tier_of(circuit_id) == Some(Tier::Hot);
        let lease = self.acquire(circuit)?;
        Ok((already, lease.load_time))
    }

    /// `EvictSRS`: drops `circuit_id` to COLD. Returns (it was HOT, bytes freed).
    pub fn evict(&self, circuit_id: &str) -> Result<(bool, u64), SrsError> {
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

    /// Every key known or present in the parameter cache.
    pub fn statuses(&self) -> Vec<SrsStatus> {
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

#[cfg(test)]
mod tests {
    //! Loading in the background, made deterministic with FIFOs as key
    //! files: a loader thread opening one blocks until the test writes to it,
    //! so the test sees the key LOADING for as long as it likes, and what it
    //! writes (not a key) makes the load fail.

    use super::*;
    use std::io::Write;

    const EIGHT_MIB: &str = "StackedDrg8MiBV1_1";
    const HALF_GIB: &str = "StackedDrg512MiBV1_1";

    fn fifo_key(params: &ParamsDir, name: &str) -> (Circuit, PathBuf) {
        let pt = Circuit::Porep(ProofType::from_name(name).unwrap());
        let path = params.params_path(pt).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
        (pt, path)
    }

    /// Blocks until the loader opens the FIFO, then writes what is not a
    /// key (the reader may already have given up on its zero length: a
    /// broken pipe is fine).
    fn feed_garbage(path: &std::path::Path) {
        let mut w = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        let _ = w.write_all(b"not a key");
    }

    fn loading(m: &SrsManager, id: &str) -> bool {
        m.statuses().iter().any(|s| s.circuit_id == id && s.loading)
    }

    fn wait_failed(m: &Arc<SrsManager>, pt: Circuit, asked: Instant) -> SrsError {
        loop {
            match m.try_acquire(pt, asked) {
                Err(e) => return e,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Ok(Some(_)) => panic!("garbage loaded as a key"),
            }
        }
    }

    #[test]
    fn circuit_ids_are_curios_names_for_every_kind_and_size() {
        let name = |id: &str| circuit_of(id).unwrap().name();
        assert_eq!(name("porep-32g"), "StackedDrg32GiBV1_1");
        assert_eq!(name("winning-2k"), "StackedDrgWinning2KiBV1");
        assert_eq!(name("wpost-32g"), "StackedDrgWindow32GiBV1_2");
        assert_eq!(name("snap-64g"), "StackedDrg64GiBV1");
        assert_eq!(circuits().len(), 20);
        for &(id, c) in circuits() {
            assert_eq!(circuit_id(c), id);
        }
        // Every version of one kind and size shares the id (and the key).
        let v1 = Circuit::Porep(ProofType::from_name("StackedDrg2KiBV1").unwrap());
        assert_eq!(circuit_id(v1), "porep-2k");
        let e = circuit_of("winning-3k").unwrap_err().to_string();
        assert!(e.contains("winning-3k") && e.contains("snap-32g"), "{e}");
    }

    #[test]
    fn loads_run_in_the_background_per_circuit_and_fail_only_their_waiters() {
        let dir = tempfile::tempdir().unwrap();
        let params = ParamsDir::new(dir.path());
        let (eight, eight_path) = fifo_key(&params, EIGHT_MIB);
        let (half, half_path) = fifo_key(&params, HALF_GIB);
        let m = SrsManager::new(
            params,
            1 << 30,
            None,
            Duration::from_secs(600),
            Duration::from_secs(600),
        );
        let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let w = Arc::clone(&woken);
        m.on_load_end(move || {
            w.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });

        // Neither call waits for its (blocked) loader; both keys show LOADING.
        let asked = Instant::now();
        assert!(m.try_acquire(eight, asked).unwrap().is_none());
        assert!(m.try_acquire(half, asked).unwrap().is_none());
        assert!(loading(&m, "porep-8m") && loading(&m, "porep-512m"));

        // The 512 MiB load fails while the 8 MiB one still loads.
        feed_garbage(&half_path);
        let e = wait_failed(&m, half, asked).to_string();
        for part in [
            half_path.to_str().unwrap(),
            "fixtures keys",
            "fixtures fetch",
        ] {
            assert!(e.contains(part), "{part:?} not in: {e}");
        }
        assert!(loading(&m, "porep-8m") && !loading(&m, "porep-512m"));
        assert!(m.try_acquire(eight, asked).unwrap().is_none());
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);

        // A job that asks after the failure tries again (a new loader).
        assert!(m.try_acquire(half, Instant::now()).unwrap().is_none());
        assert!(loading(&m, "porep-512m"));
        feed_garbage(&half_path);
        feed_garbage(&eight_path);
        assert!(matches!(
            wait_failed(&m, eight, asked),
            SrsError::LoadFailed { .. }
        ));
        assert!(m.statuses().iter().all(|s| s.tier == Tier::Cold));
        assert_eq!(m.hot_bytes(), 0);
    }
}
