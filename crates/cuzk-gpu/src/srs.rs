//! Resident keys: keys' points in device memory, shared by the workers of
//! one device through an [`SrsSlot`], each identified by a cheap
//! [`Fingerprint`] so a worker uploads a key only when it is not already
//! there. Which keys stay, and which are evicted for room, is
//! `resident.rs`.

use std::sync::Arc;
use std::time::Instant;

use cuzk_cuda::msm::{ShiftedBases, G1};
use cuzk_cuda::{DeviceBuffer, Gpu, HostPin};
use cuzk_field::limbs::{as_bytes, g1_as_limbs, g2_as_limbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::G1Affine;
use cuzk_groth16::prover::StageTimings;
use cuzk_groth16::ProvingKey;
use parking_lot::{Mutex, MutexGuard};

use crate::plan::VramPlan;
use crate::resident::{KeyInUse, KeyShape, Keys};
use crate::worker::Worker;

/// H's points on the device: as they are, or with shifted copies for an
/// MSM whose windows share bucket sets (`VramPlan::h_shift`).
pub(crate) enum HPoints {
    Plain(DeviceBuffer<G1AffineLimbs>),
    Shifted(ShiftedBases<G1>),
}

/// A key's points in device memory, shared by the workers of one device.
pub(crate) struct ResidentSrs {
    pub(crate) h: HPoints,
    pub(crate) l: DeviceBuffer<G1AffineLimbs>,
    pub(crate) a: DeviceBuffer<G1AffineLimbs>,
    pub(crate) b_g1: DeviceBuffer<G1AffineLimbs>,
    pub(crate) b_g2: DeviceBuffer<G2AffineLimbs>,
}

/// The keys resident on one device (one arena), shared by its workers.
///
/// `SrsSlot::default()` keeps one key, for a worker alone on its arena: a
/// new key replaces the old. [`SrsSlot::shared`] keeps several under a
/// [`VramAdmission`](crate::admission::VramAdmission), which evicts the
/// least recently used idle key when a partition needs the room, so a small
/// key (a WinningPoSt's) and a 44 GiB PoRep key can both stay resident.
///
/// A key streamed to the device (too large to stay) is instead pinned in
/// host memory ([`SrsSlot::pin_in_host`]) and kept pinned until it is
/// evicted by name like a resident one.
#[derive(Clone)]
pub struct SrsSlot(Arc<Mutex<Keys<ResidentSrs>>>, Arc<Mutex<Vec<HostPin>>>);

impl Default for SrsSlot {
    fn default() -> Self {
        SrsSlot(Arc::new(Mutex::new(Keys::new(1))), Arc::default())
    }
}

impl std::fmt::Debug for SrsSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let k = self.0.lock();
        write!(f, "SrsSlot({} resident, {} bytes)", k.len(), k.bytes())
    }
}

/// What the keys of a slot amount to, for status reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotUsage {
    /// Keys resident now.
    pub keys: usize,
    /// Their device bytes.
    pub bytes: u64,
    /// Keys uploaded since the slot was made.
    pub uploads: u64,
    /// Keys dropped since (replaced, evicted for room or by name).
    pub evictions: u64,
}

impl SrsSlot {
    /// A slot that keeps several keys, evicted by admission for room.
    pub fn shared() -> Self {
        SrsSlot(Arc::new(Mutex::new(Keys::new(usize::MAX))), Arc::default())
    }

    /// Pins `key`'s points in host memory in place (once: a key pinned
    /// before is kept), so streamed chunks cross straight from it; returns
    /// whether it was pinned now. A slow call for a large key (the driver
    /// locks every page); an error names the bytes and the process's
    /// locked-memory limit.
    pub fn pin_in_host(&self, gpu: &Gpu, key: &Arc<ProvingKey>) -> cuzk_cuda::Result<bool> {
        let mut pins = self.1.lock();
        if pins.iter().any(|p| p.is_of(&**key)) {
            return Ok(false);
        }
        let start = Instant::now();
        let pin = HostPin::new(gpu, Arc::clone(key), |k: &ProvingKey| {
            vec![
                as_bytes(g1_as_limbs(&k.h)),
                as_bytes(g1_as_limbs(&k.l)),
                as_bytes(g1_as_limbs(&k.a)),
                as_bytes(g1_as_limbs(&k.b_g1)),
                as_bytes(g2_as_limbs(&k.b_g2)),
            ]
        })?;
        tracing::info!(
            "key pinned in host memory: {} in {:.1} s (its streamed chunks cross without staging)",
            cuzk_arena::human(pin.bytes()),
            start.elapsed().as_secs_f64()
        );
        pins.push(pin);
        Ok(true)
    }

    /// The pin of `key`'s host memory, when it is pinned.
    pub(crate) fn host_pin(&self, key: &ProvingKey) -> Option<HostPin> {
        self.1.lock().iter().find(|p| p.is_of(key)).cloned()
    }

    /// Bytes of host memory pinned for streamed keys.
    pub fn pinned_bytes(&self) -> u64 {
        self.1.lock().iter().map(HostPin::bytes).sum()
    }

    /// Whether `key`'s points are resident in this slot's device memory.
    pub fn holds(&self, key: &ProvingKey) -> bool {
        self.0.lock().contains(&Fingerprint::of(key).0)
    }

    /// Drops `key`'s points from device memory unless a partition is using
    /// them; `Ok(false)` if they were not resident.
    pub fn evict(&self, key: &ProvingKey) -> Result<bool, KeyInUse> {
        // A pinned key is unpinned (a partition streaming it holds its own
        // pin until it is done).
        let unpinned = {
            let mut pins = self.1.lock();
            let before = pins.len();
            pins.retain(|p| !p.is_of(key));
            before != pins.len()
        };
        if unpinned {
            tracing::info!("key unpinned from host memory by request");
        }
        let fp = Fingerprint::of(key);
        let out = self.0.lock().evict(&fp.0);
        if out == Ok(true) {
            tracing::info!("resident key evicted from device memory by request");
        }
        out
    }

    /// The slot's keys and counters now.
    pub fn usage(&self) -> SlotUsage {
        let k = self.0.lock();
        SlotUsage {
            keys: k.len(),
            bytes: k.bytes(),
            uploads: k.uploads,
            evictions: k.evictions,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Keys<ResidentSrs>> {
        self.0.lock()
    }
}

/// What identifies a key cheaply: every section's length and its first and last points.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint(Vec<u8>);

impl Fingerprint {
    pub(crate) fn of(key: &ProvingKey) -> Self {
        let mut v = Vec::new();
        let mut g1 = |p: &[G1Affine]| {
            v.extend_from_slice(&(p.len() as u64).to_le_bytes());
            for q in p.first().into_iter().chain(p.last()) {
                v.extend_from_slice(&q.to_compressed());
            }
        };
        g1(&key.h);
        g1(&key.l);
        g1(&key.a);
        g1(&key.b_g1);
        g1(std::slice::from_ref(&key.vk.delta_g1));
        v.extend_from_slice(&(key.b_g2.len() as u64).to_le_bytes());
        for q in key.b_g2.first().into_iter().chain(key.b_g2.last()) {
            v.extend_from_slice(&q.to_compressed());
        }
        Fingerprint(v)
    }
}

impl Worker {
    /// The key's points on the device: uploaded unless already resident.
    /// The slot stays locked during an upload, so two workers never upload
    /// the same key twice.
    pub(crate) fn make_resident(
        &mut self,
        key: &ProvingKey,
        plan: &VramPlan,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<Arc<ResidentSrs>> {
        let fp = Fingerprint::of(key);
        let slot = self.srs.clone();
        let mut keys = slot.lock();
        if let Some(srs) = keys.get(&fp.0) {
            return Ok(srs);
        }
        let shape = KeyShape::of_plan(plan);
        let dropped = keys.make_room_for(&shape);
        if dropped > 0 {
            tracing::debug!("dropped {dropped} resident key(s) to make room for another");
        }
        let start = Instant::now();
        let s = self.stream.clone();
        let up_g1 = |w: &mut Worker, p: &[G1AffineLimbs]| {
            let mut d = s.alloc(p.len())?;
            w.stage_upload(&s, p, &mut d, 0)?;
            Ok::<_, cuzk_cuda::Error>(d)
        };
        let h = match plan.h_shift {
            None => HPoints::Plain(up_g1(self, g1_as_limbs(&key.h))?),
            Some(hs) => {
                // H goes straight into copy 0 of the shifted points.
                let (c, sets) = (hs.window_bits, hs.sets);
                let mut points = ShiftedBases::<G1>::alloc_points(&s, key.h.len(), c, sets)?;
                self.stage_upload(&s, g1_as_limbs(&key.h), &mut points, 0)?;
                let shifted = ShiftedBases::from_copy0(&s, points, key.h.len(), c, sets)?;
                tracing::info!(
                    "H kept shifted: {} copies for c = {c} over {sets} bucket sets, made in {:.0} ms",
                    shifted.copies(),
                    shifted.build_ms()
                );
                HPoints::Shifted(shifted)
            }
        };
        let l = up_g1(self, g1_as_limbs(&key.l))?;
        let a = up_g1(self, g1_as_limbs(&key.a))?;
        let b_g1 = up_g1(self, g1_as_limbs(&key.b_g1))?;
        let mut b_g2 = s.alloc(key.b_g2.len())?;
        self.stage_upload(&s, g2_as_limbs(&key.b_g2), &mut b_g2, 0)?;
        s.synchronize()?;
        let srs = Arc::new(ResidentSrs {
            h,
            l,
            a,
            b_g1,
            b_g2,
        });
        keys.insert(fp.0, shape, Arc::clone(&srs));
        t.record("srs_upload", start.elapsed());
        tracing::info!(
            "key resident: {} ({} keys, {} on the device)",
            cuzk_arena::human(shape.bytes()),
            keys.len(),
            cuzk_arena::human(keys.bytes())
        );
        Ok(srs)
    }
}
