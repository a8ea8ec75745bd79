//! The resident key: a key's points in device memory, shared by the workers
//! of one device through an [`SrsSlot`], identified by a cheap
//! [`Fingerprint`] so a worker uploads a key only when it is not already
//! there.

use std::sync::Arc;
use std::time::Instant;

use cuzk_cuda::DeviceBuffer;
use cuzk_field::limbs::{g1_as_limbs, g2_as_limbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::G1Affine;
use cuzk_groth16::prover::StageTimings;
use cuzk_groth16::ProvingKey;
use parking_lot::Mutex;

use crate::worker::Worker;

/// A key's points in device memory, shared by the workers of one device.
pub(crate) struct ResidentSrs {
    pub(crate) fingerprint: Fingerprint,
    pub(crate) h: DeviceBuffer<G1AffineLimbs>,
    pub(crate) l: DeviceBuffer<G1AffineLimbs>,
    pub(crate) a: DeviceBuffer<G1AffineLimbs>,
    pub(crate) b_g1: DeviceBuffer<G1AffineLimbs>,
    pub(crate) b_g2: DeviceBuffer<G2AffineLimbs>,
}

/// Where a device's workers keep the resident key (one per device arena).
#[derive(Clone, Default)]
pub struct SrsSlot(pub(crate) Arc<Mutex<Option<Arc<ResidentSrs>>>>);

impl std::fmt::Debug for SrsSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.lock().is_some();
        write!(f, "SrsSlot(resident: {held})")
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
    /// Uploads the key's points unless this key is already resident.
    pub(crate) fn make_resident(
        &mut self,
        key: &ProvingKey,
        t: &mut StageTimings,
    ) -> cuzk_cuda::Result<()> {
        let fp = Fingerprint::of(key);
        let slot = self.srs.clone();
        let mut held = slot.0.lock();
        if held.as_ref().is_some_and(|r| r.fingerprint == fp) {
            return Ok(());
        }
        let start = Instant::now();
        *held = None;
        let s = self.stream.clone();
        let up_g1 = |w: &mut Worker, p: &[G1AffineLimbs]| {
            let mut d = s.alloc(p.len())?;
            w.stage_upload(&s, p, &mut d, 0)?;
            Ok::<_, cuzk_cuda::Error>(d)
        };
        let h = up_g1(self, g1_as_limbs(&key.h))?;
        let l = up_g1(self, g1_as_limbs(&key.l))?;
        let a = up_g1(self, g1_as_limbs(&key.a))?;
        let b_g1 = up_g1(self, g1_as_limbs(&key.b_g1))?;
        let mut b_g2 = s.alloc(key.b_g2.len())?;
        self.stage_upload(&s, g2_as_limbs(&key.b_g2), &mut b_g2, 0)?;
        s.synchronize()?;
        *held = Some(Arc::new(ResidentSrs {
            fingerprint: fp,
            h,
            l,
            a,
            b_g1,
            b_g2,
        }));
        t.record("srs_upload", start.elapsed());
        Ok(())
    }
}
