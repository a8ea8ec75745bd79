//! Device admission: the hook that decides when a partition may start on a
//! device.
//!
//! A prover worker asks its device's [`Admission`] before it starts a
//! partition and holds the returned [`AdmissionTicket`] while the backend
//! works; dropping the ticket gives the room back. The CPU needs nothing
//! ([`AlwaysAdmit`]); [`CountingAdmission`] caps concurrent partitions. The
//! GPU's admission will come from the VRAM arena: `admit` reserves the
//! partition's VRAM plan (from its shape) in the device's arena, blocks while
//! it does not fit, refuses a shape that can never fit, and the ticket
//! returns the regions. It never calls a device-global CUDA API (docs/facts.md,
//! "Device memory").

use std::any::Any;
use std::sync::Arc;

use cuzk_synth::CircuitShape;
use parking_lot::{Condvar, Mutex};

/// Why a device refused a partition outright (it can never fit); the
/// device's own reason, with the numbers, is the source.
#[derive(Debug, thiserror::Error)]
#[error("a partition of this shape can never fit on the device")]
#[non_exhaustive]
pub struct AdmissionError {
    #[source]
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl AdmissionError {
    /// A refusal because of `source` (e.g. the device's memory plan error).
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        AdmissionError {
            source: source.into(),
        }
    }
}

/// Room on a device, held while a partition runs there, and the plan the
/// room was reserved for: the backend runs that plan
/// ([`cuzk_groth16::prover::Backend::msm_sums_admitted`]) rather than making
/// another one.
pub struct AdmissionTicket {
    release: Option<Box<dyn FnOnce() + Send>>,
    plan: Option<Box<dyn Any + Send + Sync>>,
}

impl AdmissionTicket {
    /// A ticket that runs `release` when dropped.
    pub fn new(release: impl FnOnce() + Send + 'static) -> Self {
        AdmissionTicket {
            release: Some(Box::new(release)),
            plan: None,
        }
    }

    /// A ticket that holds nothing.
    pub fn free() -> Self {
        AdmissionTicket {
            release: None,
            plan: None,
        }
    }

    /// This ticket, carrying the plan its room was reserved for (the device's
    /// own type: a GPU's VRAM plan).
    pub fn with_plan(mut self, plan: impl Any + Send + Sync) -> Self {
        self.plan = Some(Box::new(plan));
        self
    }

    /// The plan the room was reserved for, if the admission made one.
    pub fn plan(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.plan.as_deref()
    }
}

impl Drop for AdmissionTicket {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

impl std::fmt::Debug for AdmissionTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionTicket")
            .field("holds", &self.release.is_some())
            .field("plan", &self.plan.is_some())
            .finish()
    }
}

/// Decides when a partition of a given shape may start on one device.
pub trait Admission: Send + Sync {
    /// Blocks until a partition of `shape` fits on the device and returns
    /// the ticket that holds its room; `Err` if it can never fit.
    fn admit(&self, shape: &CircuitShape) -> Result<AdmissionTicket, AdmissionError>;

    /// [`Admission::admit`] for this synthesized `witness` of `shape`: an
    /// admission whose plan depends on more than the shape (a GPU that
    /// evaluates a deferred witness's a, b, c from resident matrices)
    /// overrides it.
    fn admit_witness(
        &self,
        shape: &CircuitShape,
        witness: &cuzk_synth::Synthesized,
    ) -> Result<AdmissionTicket, AdmissionError> {
        let _ = witness;
        self.admit(shape)
    }

    /// Room for `members` partitions of `witness`'s shape proved together,
    /// in one backend call ([`cuzk_groth16::prover::Backend::msm_sums_batch`]):
    /// one ticket for the batch's peak, blocking as [`Admission::admit`]
    /// does. `None` where the device holds no batch of that many (the
    /// default): its partitions are then proved one by one.
    fn admit_batch(
        &self,
        shape: &CircuitShape,
        witness: &cuzk_synth::Synthesized,
        members: usize,
    ) -> Option<Result<AdmissionTicket, AdmissionError>> {
        let _ = (shape, witness, members);
        None
    }

    /// Whether a partition of `shape` can ever fit on the device: checked
    /// when a job is submitted, so that a device too small for it refuses
    /// the job before any synthesis (naming what it needs and what it has)
    /// rather than failing each partition after. The default: it can.
    fn check(&self, shape: &CircuitShape) -> Result<(), AdmissionError> {
        let _ = shape;
        Ok(())
    }

    /// (in use, capacity) in this admission's own units, for metrics.
    fn usage(&self) -> (u64, u64);
}

/// Admits everything at once (the CPU backend: host memory is accounted by
/// the intake's budget).
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAdmit;

impl Admission for AlwaysAdmit {
    fn admit(&self, _shape: &CircuitShape) -> Result<AdmissionTicket, AdmissionError> {
        Ok(AdmissionTicket::free())
    }

    /// A batch is as free as a partition.
    fn admit_batch(
        &self,
        _shape: &CircuitShape,
        _witness: &cuzk_synth::Synthesized,
        _members: usize,
    ) -> Option<Result<AdmissionTicket, AdmissionError>> {
        Some(Ok(AdmissionTicket::free()))
    }

    fn usage(&self) -> (u64, u64) {
        (0, u64::MAX)
    }
}

/// Admits at most `slots` partitions at once, whatever their shape.
#[derive(Debug)]
pub struct CountingAdmission {
    slots: u64,
    used: Arc<(Mutex<u64>, Condvar)>,
}

impl CountingAdmission {
    /// At most `slots` (at least 1) partitions at once.
    pub fn new(slots: u64) -> Self {
        CountingAdmission {
            slots: slots.max(1),
            used: Arc::new((Mutex::new(0), Condvar::new())),
        }
    }
}

impl Admission for CountingAdmission {
    /// A batch is one backend call: it takes one slot.
    fn admit_batch(
        &self,
        shape: &CircuitShape,
        _witness: &cuzk_synth::Synthesized,
        _members: usize,
    ) -> Option<Result<AdmissionTicket, AdmissionError>> {
        Some(self.admit(shape))
    }

    fn admit(&self, _shape: &CircuitShape) -> Result<AdmissionTicket, AdmissionError> {
        let (lock, freed) = &*self.used;
        let mut used = lock.lock();
        while *used >= self.slots {
            freed.wait(&mut used);
        }
        *used += 1;
        let used = Arc::clone(&self.used);
        Ok(AdmissionTicket::new(move || {
            let (lock, freed) = &*used;
            *lock.lock() -= 1;
            freed.notify_one();
        }))
    }

    fn usage(&self) -> (u64, u64) {
        (*self.used.0.lock(), self.slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_synth::DemoCircuit;

    #[test]
    fn counting_admission_holds_slots_until_tickets_drop() {
        let shape = DemoCircuit::shape_for(4, 0.0);
        let adm = Arc::new(CountingAdmission::new(2));
        let a = adm.admit(&shape).unwrap();
        let _b = adm.admit(&shape).unwrap();
        assert_eq!(adm.usage(), (2, 2));
        let waiter = {
            let adm = Arc::clone(&adm);
            let shape = shape.clone();
            std::thread::spawn(move || adm.admit(&shape).map(|_| ()))
        };
        drop(a);
        waiter.join().unwrap().unwrap();
        assert_eq!(adm.usage(), (1, 2));
    }
}
