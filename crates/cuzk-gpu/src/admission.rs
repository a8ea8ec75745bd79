//! Admission of partitions to one GPU from its VRAM plan: the scheduler's
//! prover workers on a device share its arena, and a partition starts only
//! when its plan's bytes fit beside what the other running partitions hold.
//! Pure bookkeeping on the host: no CUDA call at all (docs/facts.md, "Device memory").

use std::sync::Arc;

use crate::matrices::{witness_shape, MatrixSlot};
use crate::plan::{CudaFootprints, PlanOptions, Shape, SrsMode, VramPlan};
use crate::resident::{KeyShape, Keys};
use crate::srs::SrsSlot;
use cuzk_pipeline::admission::{Admission, AdmissionError, AdmissionTicket};
use cuzk_synth::CircuitShape;
use parking_lot::{Condvar, Mutex};

/// Admits partitions while their VRAM plans fit the device's arena together:
/// every resident key is counted once (the keys of `keys`, plus this
/// partition's key if it is not resident yet), each running partition its
/// worker bytes (its largest stage, and its scratch beside it when the key is
/// resident; a streamed key's ring and the scratch are inside the MSM
/// stage). When a partition does not fit, idle resident keys of other shapes
/// are evicted, least recently used first, before it waits; an admitted
/// partition pins its key's shape until its ticket drops.
#[derive(Debug)]
pub struct VramAdmission {
    capacity: u64,
    keys: SrsSlot,
    matrices: MatrixSlot,
    /// What plans may use: the workers' settings (`GpuConfig::shifted_h`,
    /// `GpuConfig::kept_h`, `GpuConfig::ring_ahead`).
    options: PlanOptions,
    state: Arc<(Mutex<u64>, Condvar)>,
}

impl VramAdmission {
    /// Admission for an arena of `capacity` bytes whose workers keep no key
    /// but through this admission's own (empty) shared slot.
    pub fn new(capacity: u64) -> Self {
        Self::with_keys(capacity, SrsSlot::shared())
    }

    /// Admission for an arena of `capacity` bytes whose workers keep their
    /// keys in `keys` (`CudaBackend::workers`' slot).
    pub fn with_keys(capacity: u64, keys: SrsSlot) -> Self {
        Self::with_slots(capacity, keys, MatrixSlot::default())
    }

    /// [`VramAdmission::with_keys`], the workers also keeping a pre-compiled
    /// circuit's matrices in `matrices` (`CudaBackend::workers`' slot): they
    /// are counted as resident bytes, and evicted for room when idle.
    pub fn with_slots(capacity: u64, keys: SrsSlot, matrices: MatrixSlot) -> Self {
        VramAdmission {
            capacity,
            keys,
            matrices,
            options: PlanOptions::default(),
            state: Arc::new((Mutex::new(0), Condvar::new())),
        }
    }

    /// This admission planning H over shifted bases when `on`, as the
    /// workers it admits for do (`GpuDevice::open` sets both from one
    /// `GpuConfig`).
    pub fn with_shifted_h(mut self, on: bool) -> Self {
        self.options.shifted_h = on;
        self
    }

    /// This admission planning a streamed H into kept buckets (where there
    /// is room) when `on`, as the workers it admits for do.
    pub fn with_kept_h(mut self, on: bool) -> Self {
        self.options.kept_h = on;
        self
    }

    /// This admission planning a streamed key's first chunks during the H
    /// polynomial (where they fit) when `on`, as the workers it admits for do.
    pub fn with_ring_ahead(mut self, on: bool) -> Self {
        self.options.ring_ahead = on;
        self
    }

    /// This admission reserving parked batches' room (where the plan
    /// parks) when `on`, as the workers it admits for do.
    pub fn with_parked_batches(mut self, on: bool) -> Self {
        self.options.parked_batches = on;
        self
    }

    /// The plan a partition of `shape` runs under on this device.
    pub fn plan(&self, shape: &CircuitShape) -> Result<VramPlan, AdmissionError> {
        self.plan_shape(Shape::of_circuit(shape))
    }

    fn plan_shape(&self, shape: Shape) -> Result<VramPlan, AdmissionError> {
        VramPlan::new_with(shape, self.capacity, &CudaFootprints, self.options)
            .map_err(AdmissionError::new)
    }

    /// Bytes one running partition holds, and the key it needs resident.
    fn split(plan: &VramPlan) -> (u64, Option<KeyShape>) {
        match plan.mode {
            SrsMode::Resident => (plan.worker_bytes(), Some(KeyShape::of_plan(plan))),
            // The ring is inside the worker's MSM stages.
            SrsMode::Streamed { .. } => (plan.worker_bytes(), None),
        }
    }
}

impl Admission for VramAdmission {
    fn admit(&self, shape: &CircuitShape) -> Result<AdmissionTicket, AdmissionError> {
        self.admit_plan(self.plan(shape)?, None)
    }

    fn admit_witness(
        &self,
        _shape: &CircuitShape,
        witness: &cuzk_synth::Synthesized,
    ) -> Result<AdmissionTicket, AdmissionError> {
        let plan = self.plan_shape(witness_shape(witness))?;
        let circuit = match &witness.deferred {
            // Streamed matrices are not resident: nothing to pin or count.
            Some(d) if plan.abc_on_device() && plan.matrices_streamed().is_none() => Some(*d.id()),
            _ => None,
        };
        self.admit_plan(plan, circuit)
    }

    /// A batch of `members` partitions over one pass of a streamed key
    /// (cuzk-gpu's `msm_sums_batch`): the plan's room and each member's
    /// held state after the first (the plan's `batch_room` of them at
    /// most; more, or a plan that shares no pass: `None`).
    fn admit_batch(
        &self,
        _shape: &CircuitShape,
        witness: &cuzk_synth::Synthesized,
        members: usize,
    ) -> Option<Result<AdmissionTicket, AdmissionError>> {
        let plan = match self.plan_shape(witness_shape(witness)) {
            Ok(plan) => plan,
            Err(e) => return Some(Err(e)),
        };
        let SrsMode::Streamed { chunk } = plan.mode else {
            return None;
        };
        if members < 2 {
            return None;
        }
        let circuit = match &witness.deferred {
            Some(d) if plan.matrices_streamed().is_none() => Some(*d.id()),
            _ => None,
        };
        if members > plan.batch_room() {
            // A parked batch (the workers' `batch_room` offered it): the
            // pass the workers run (chosen for a proof's partitions, as
            // `batch_room` chose it), its peak beyond the plan's, for the
            // most others plus 1/256.
            let others = witness.compact_aux.as_ref()?.others().len();
            let most = crate::plan::BATCH_COUNTED.max(members);
            let parked = match self.options.parked_batches {
                true => plan.parked_batch(&CudaFootprints, others + others / 256, most)?,
                false => return None,
            };
            if parked.members < members {
                return None;
            }
            let extra = parked.peak().saturating_sub(plan.peak());
            return Some(self.admit_plan_with(plan, circuit, extra));
        }
        let extra = (members as u64 - 1) * crate::batch::member_bytes(&plan.shape, chunk);
        Some(self.admit_plan_with(plan, circuit, extra))
    }

    /// No plan at all (not even the smallest: a, b, c on the host, the
    /// lean H, the key streamed in the smallest chunks) fits the arena.
    fn check(&self, shape: &CircuitShape) -> Result<(), AdmissionError> {
        self.plan(shape).map(|_| ())
    }

    fn usage(&self) -> (u64, u64) {
        (
            *self.state.0.lock() + self.keys.usage().bytes + self.matrices.bytes(),
            self.capacity,
        )
    }
}

impl VramAdmission {
    /// Waits until `plan` fits; `matrices_of`: the circuit whose matrices
    /// the partition needs resident (a, b, c on the device).
    fn admit_plan(
        &self,
        plan: VramPlan,
        matrices_of: Option<cuzk_synth::precompiled::CircuitId>,
    ) -> Result<AdmissionTicket, AdmissionError> {
        self.admit_plan_with(plan, matrices_of, 0)
    }

    /// [`VramAdmission::admit_plan`] with `extra` bytes beside the plan's
    /// (a batch's members after the first).
    fn admit_plan_with(
        &self,
        plan: VramPlan,
        matrices_of: Option<cuzk_synth::precompiled::CircuitId>,
        extra: u64,
    ) -> Result<AdmissionTicket, AdmissionError> {
        let (need, key) = Self::split(&plan);
        let need = need + extra;
        let key_bytes = key.map_or(0, |k| k.bytes());
        let room = self.capacity.saturating_sub(plan.margin);
        if need + key_bytes + plan.matrix_bytes > room {
            // The planner said it fits alone; this guards the arithmetic.
            return Err(AdmissionError::new(format!(
                "partition needs {} bytes of VRAM, the device has room for {room}: {plan}",
                need + key_bytes + plan.matrix_bytes
            )));
        }
        let (lock, freed) = &*self.state;
        let mut used = lock.lock();
        loop {
            let mut keys = self.keys.lock();
            let mut matrices = self.matrices.lock();
            // Matrices resident now, and those this partition would add (an
            // idle recording of another circuit is replaced first).
            let (resident, missing) = match &matrices_of {
                Some(id) if matrices.holds(id) => (matrices.bytes(), 0),
                Some(_) => {
                    if let Some(bytes) = matrices.evict_idle() {
                        tracing::info!(
                            "evicted idle resident matrices ({}) for another circuit's",
                            cuzk_arena::human(bytes)
                        );
                    }
                    (matrices.bytes(), plan.matrix_bytes)
                }
                None => (matrices.bytes(), 0),
            };
            let room_left = room.saturating_sub(resident + missing);
            match try_fit(&mut keys, *used, need, key, room_left) {
                Fit::Admitted => {
                    if let Some(id) = &matrices_of {
                        matrices.pin(id);
                    }
                    break;
                }
                Fit::Evicted(bytes) => tracing::info!(
                    "evicted an idle resident key ({}) for a partition's room",
                    cuzk_arena::human(bytes)
                ),
                Fit::Wait => {
                    // Idle matrices of a circuit this partition does not use
                    // go before it waits.
                    if matrices_of.is_none() && matrices.evict_idle().is_some() {
                        continue;
                    }
                    drop((keys, matrices));
                    freed.wait(&mut used);
                }
            }
        }
        *used += need;
        let state = Arc::clone(&self.state);
        let keys = self.keys.clone();
        let slot = self.matrices.clone();
        let ticket_plan = plan.clone();
        Ok(AdmissionTicket::new(move || {
            let (lock, freed) = &*state;
            let mut used = lock.lock();
            *used -= need;
            if let Some(k) = key {
                keys.lock().unpin(&k);
            }
            if let Some(id) = &matrices_of {
                slot.lock().unpin(id);
            }
            drop(used);
            freed.notify_all();
        })
        // The worker runs the plan this room was reserved for.
        .with_plan(ticket_plan))
    }
}

/// One step of admission.
#[derive(Debug, PartialEq, Eq)]
enum Fit {
    /// It fits: its key's shape is pinned.
    Admitted,
    /// An idle key of another shape was evicted (these bytes): try again.
    Evicted(u64),
    /// Nothing to evict: wait for a running partition to finish.
    Wait,
}

/// Whether a partition holding `need` bytes, whose key is `key` (`None`:
/// streamed), fits beside `used` bytes of running partitions and the
/// resident keys in `room`.
fn try_fit<T>(keys: &mut Keys<T>, used: u64, need: u64, key: Option<KeyShape>, room: u64) -> Fit {
    let missing = match &key {
        Some(k) if !keys.has_shape(k) => k.bytes(),
        _ => 0,
    };
    if used + need + keys.bytes() + missing <= room {
        if let Some(k) = key {
            keys.pin(k);
        }
        return Fit::Admitted;
    }
    match keys.evict_lru(key.as_ref()) {
        Some(bytes) => Fit::Evicted(bytes),
        None => Fit::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_synth::DemoCircuit;

    /// A witness that leaves a, b, c to the prover is admitted under the
    /// plan that evaluates them on the device (its `abc` stage reserved, its
    /// matrices counted), the same plan the backend will run.
    #[test]
    fn a_deferred_witness_is_admitted_with_its_matrices() {
        use cuzk_synth::precompiled::{record, witness, DeferredAbc};
        let circuit = DemoCircuit::new(10, 0.95, 3);
        let r1cs = record(circuit.clone()).unwrap();
        let deferred = DeferredAbc::new(r1cs.content_id(), Arc::new(r1cs));
        let w = deferred
            .synthesized(witness(circuit.clone()).unwrap())
            .unwrap();
        let shape = w.shape();
        let adm = VramAdmission::new(u64::MAX / 4);
        let plan = adm.plan_shape(witness_shape(&w)).unwrap();
        assert!(plan.abc_on_device(), "{plan}");
        assert!(plan.matrix_bytes > 0);
        assert_eq!(plan.largest_stage().name, "abc");
        let host = adm.plan(&shape).unwrap();
        assert!(!host.abc_on_device());
        assert!(VramAdmission::split(&plan).0 > VramAdmission::split(&host).0);
        let ticket = adm.admit_witness(&shape, &w).unwrap();
        assert_eq!(adm.usage().0, VramAdmission::split(&plan).0);
        // The plan travels on the ticket: the worker runs it, not a second one.
        let carried = ticket
            .plan()
            .and_then(|p| p.downcast_ref::<VramPlan>())
            .expect("the ticket carries its VRAM plan");
        assert_eq!(carried, &plan);
        assert_eq!(
            adm.matrices.lock().pins.get(&deferred.id().0),
            Some(&1),
            "the circuit's matrices are pinned while the partition runs"
        );
        drop(ticket);
        assert_eq!(adm.usage().0, 0);
        assert!(adm.matrices.lock().pins.is_empty());
        // A full-synthesis witness of the same circuit: the host plan.
        let full = cuzk_synth::synthesize(circuit).unwrap();
        assert_eq!(witness_shape(&full), Shape::of_circuit(&shape));
    }

    #[test]
    fn partitions_wait_for_room_and_give_it_back() {
        let shape = DemoCircuit::shape_for(16, 0.95);
        let probe = VramAdmission::new(u64::MAX / 4);
        let plan = probe.plan(&shape).unwrap();
        let (need, key) = VramAdmission::split(&plan);
        let shared = key.expect("resident").bytes();
        assert_eq!(plan.mode, SrsMode::Resident);
        // Room for exactly two partitions beside the key.
        let margin = |cap: u64| cap / 64 + (64 << 20);
        let mut cap = shared + 2 * need + margin(shared + 2 * need);
        while cap - shared - margin(cap) < 2 * need {
            cap += 1 << 20;
        }
        let adm = Arc::new(VramAdmission::new(cap));
        let a = adm.admit(&shape).unwrap();
        let _b = adm.admit(&shape).unwrap();
        assert_eq!(adm.usage().0, 2 * need);
        let waiter = {
            let adm = Arc::clone(&adm);
            let shape = shape.clone();
            std::thread::spawn(move || adm.admit(&shape).map(|_| ()))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a third partition must wait");
        drop(a);
        waiter.join().unwrap().unwrap();
        assert_eq!(adm.usage().0, need, "the waiter's ticket was dropped");
    }

    #[test]
    fn a_small_key_joins_a_resident_big_one_and_idle_keys_go_for_room() {
        let shape = |n: usize| KeyShape {
            h: n,
            l: n,
            a: n,
            b_g1: n,
            b_g2: n,
            h_copies: 1,
        };
        let (big, small, other) = (shape(1000), shape(10), shape(500));
        let mut keys = Keys::<u32>::new(usize::MAX);
        keys.insert(vec![1], big, Arc::new(1));
        let room = big.bytes() + small.bytes() + 3000;
        // A partition of the big key's shape, then one of the small key's:
        // both fit beside the big key, which is counted once.
        assert_eq!(try_fit(&mut keys, 0, 1000, Some(big), room), Fit::Admitted);
        assert_eq!(
            try_fit(&mut keys, 1000, 1000, Some(small), room),
            Fit::Admitted
        );
        keys.insert(vec![2], small, Arc::new(2));
        // A third shape does not fit; both keys are pinned, so it waits.
        assert_eq!(try_fit(&mut keys, 2000, 10, Some(other), room), Fit::Wait);
        // The small partition finishes: its idle key is evicted for room,
        // the pinned big key stays.
        keys.unpin(&small);
        assert_eq!(
            try_fit(&mut keys, 1000, 10, Some(other), room),
            Fit::Evicted(small.bytes())
        );
        assert_eq!(try_fit(&mut keys, 1000, 10, Some(other), room), Fit::Wait);
        assert!(keys.contains(&[1]) && !keys.contains(&[2]));
        // A streamed partition pins nothing and needs no key room.
        assert_eq!(try_fit(&mut keys, 1000, 2000, None, room), Fit::Admitted);
    }

    #[test]
    fn a_shape_that_never_fits_is_refused_with_numbers() {
        let shape = DemoCircuit::shape_for(20, 0.95);
        let adm = VramAdmission::new(64 << 20);
        let err = adm.admit(&shape).unwrap_err();
        // The plan's own error travels as the typed source.
        let plan = std::error::Error::source(&err)
            .and_then(|s| s.downcast_ref::<crate::PlanError>())
            .expect("the source is the plan error");
        assert_eq!(plan.budget, 64 << 20);
        let msg = cuzk_pipeline::ErrorChain(&err).to_string();
        assert!(msg.contains("VRAM budget too small"), "{msg}");
        assert!(msg.contains("budget has 64.0 MiB"), "{msg}");
        assert_eq!(adm.usage().0, 0);
    }

    #[test]
    fn circuit_shape_maps_to_key_counts() {
        let c = DemoCircuit::shape_for(12, 0.95);
        let s = Shape::of_circuit(&c);
        assert_eq!(s.domain, 1 << 12);
        assert_eq!(s.h, (1 << 12) - 1);
        assert_eq!(s.a, c.num_inputs + c.a_aux_density);
        assert_eq!(s.b_g2, c.b_input_density + c.b_aux_density);
    }
}

#[cfg(test)]
mod porep_plan {
    use super::*;

    /// docs/facts.md's 32 GiB PoRep partition (domain 2^27) must fit a 16 GiB
    /// card (streaming the 47 GB key), as supraseal-c2 fits it in ~13.8 GiB.
    #[test]
    fn a_porep_32gib_partition_fits_a_16_gib_card() {
        let c = crate::plan::tests::porep_32gib();
        let shape = Shape::of_circuit(&c);
        let plan = VramPlan::new(shape, 16 << 30, &CudaFootprints).unwrap();
        assert!(matches!(plan.mode, SrsMode::Streamed { .. }), "{plan}");
        assert!(plan.fits(), "{plan}");
        eprintln!("{plan}");
    }

    /// An arena below the smallest plan refuses the shape when a job is
    /// submitted (the engine calls `check` before any synthesis), with both
    /// numbers; one above it takes it.
    #[test]
    fn an_arena_below_the_smallest_plan_refuses_the_shape_up_front() {
        let c = crate::plan::tests::porep_32gib();
        let err = VramAdmission::new(4 << 30).check(&c).unwrap_err();
        let chain = cuzk_pipeline::ErrorChain(&err).to_string();
        assert!(chain.contains("needs at least"), "{chain}");
        assert!(chain.contains("the budget has 4.00 GiB"), "{chain}");
        assert!(VramAdmission::new(16 << 30).check(&c).is_ok());
    }
}
