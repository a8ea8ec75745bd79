//! The front of the pipeline: submitted partitions wait here, in priority
//! order, until the host-memory budget and the in-flight limit admit them.
//!
//! [`Intake::next`] hands out the most urgent partition (by [`Priority`],
//! then job submission order, then partition index) together with a
//! [`Reservation`] of its whole footprint, and only when that fits: the sum
//! of live reservations never exceeds the budget and the number of admitted
//! partitions never exceeds the in-flight limit. The head of the queue is
//! never skipped for a smaller partition behind it, so big partitions are
//! not starved. Partitions of finished (cancelled, failed) jobs are dropped
//! when they reach the head.
//!
//! **Headroom**: a reserve of the budget ([`HostReserve`]) that only the
//! classes at or above its class may use. A lower-class partition is admitted
//! only while the live reservations stay under `budget − reserve`, so however
//! much lower-class work is queued or admitted, a reserve-class partition of
//! up to `reserve` bytes finds room at the next free synthesis worker.
//! Reserve-class partitions are bounded by the budget alone, not by the
//! in-flight limit (which lower-class work may have filled).
//!
//! **Loans**: what else lives in the same host memory (the daemon's proving
//! keys) takes its bytes out of the budget with [`Intake::lend`], and gives
//! them back by dropping the [`HostLoan`]: partitions are admitted against
//! `budget − lent`, so they get every byte the keys do not hold right now. A
//! loan waiting for room has first claim on what admitted partitions free
//! (no new partition is admitted past it), so a key is never starved by a
//! stream of partitions.
//!
//! [`Priority`]: crate::Priority

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::job::Priority;
use crate::metrics::MemoryMetrics;
use crate::scheduler::SubmitError;
use crate::state::JobState;

/// How often a waiter re-checks for cancelled jobs at the head (cancellation
/// does not free memory, so nothing else would wake it).
const RECHECK: Duration = Duration::from_millis(50);

/// The priority queue of partitions not yet started, plus the memory budget.
#[derive(Debug)]
pub struct Intake {
    state: Mutex<IntakeState>,
    changed: Condvar,
    budget: u64,
    max_in_flight: usize,
    reserve: HostReserve,
}

/// Bytes of the host-memory budget kept for the most urgent classes (see the
/// [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostReserve {
    /// Bytes only `class` and more urgent classes may use (0: no reserve).
    pub bytes: u64,
    /// The least urgent class that may use them.
    pub class: Priority,
}

impl HostReserve {
    /// No reserve: every class shares the whole budget.
    pub const NONE: HostReserve = HostReserve {
        bytes: 0,
        class: Priority::Critical,
    };

    /// Whether partitions of `priority` may use the reserve.
    pub fn admits(&self, priority: Priority) -> bool {
        self.bytes > 0 && priority.at_least(self.class)
    }
}

#[derive(Debug, Default)]
struct IntakeState {
    queue: BinaryHeap<Queued>,
    reserved: u64,
    peak_reserved: u64,
    in_flight: usize,
    /// Admitted partitions waiting in [`Reservation::grow`].
    growing: usize,
    /// Bytes held by [`HostLoan`]s.
    lent: u64,
    /// Bytes of loans waiting for room.
    claimed: u64,
    closed: bool,
}

#[derive(Debug)]
struct Queued {
    /// (priority rank, job id, partition): smallest first.
    order: (usize, u64, usize),
    job: Arc<JobState>,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // BinaryHeap pops the greatest: reverse so the smallest order wins.
        other.order.cmp(&self.order)
    }
}

/// A partition let through the intake, with its memory reserved.
#[derive(Debug)]
#[non_exhaustive]
pub struct Admitted {
    /// Its job.
    pub job: Arc<JobState>,
    /// Its index in the job.
    pub partition: usize,
    /// Its reservation: the job's whole footprint, released in steps.
    pub reservation: Reservation,
}

impl Intake {
    /// An empty intake admitting at most `max_in_flight` partitions and
    /// `budget` bytes of footprints at once, with no reserve.
    pub fn new(budget: u64, max_in_flight: usize) -> Arc<Intake> {
        Intake::with_reserve(budget, max_in_flight, HostReserve::NONE)
    }

    /// As [`Intake::new`], keeping `reserve.bytes` of `budget` for
    /// `reserve.class` and more urgent classes (at most the whole budget).
    pub fn with_reserve(budget: u64, max_in_flight: usize, reserve: HostReserve) -> Arc<Intake> {
        Arc::new(Intake {
            state: Mutex::new(IntakeState::default()),
            changed: Condvar::new(),
            budget,
            max_in_flight: max_in_flight.max(1),
            reserve: HostReserve {
                bytes: reserve.bytes.min(budget),
                ..reserve
            },
        })
    }

    /// The memory budget in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Takes `bytes` out of the partitions' budget until the loan drops,
    /// waiting (ahead of every queued partition) until admitted partitions
    /// leave room. `None` if `bytes` exceed the whole budget less the
    /// reserve: the loan could never be made.
    pub fn lend(self: &Arc<Self>, bytes: u64) -> Option<HostLoan> {
        if bytes > self.lendable() {
            return None;
        }
        let mut st = self.state.lock();
        st.claimed += bytes;
        while st.reserved + st.lent + bytes > self.lendable() {
            self.changed.wait_for(&mut st, RECHECK);
        }
        st.claimed -= bytes;
        Some(self.grant(st, bytes))
    }

    /// [`Intake::lend`] without waiting (what [`crate::HostBudget::try_borrow`] is
    /// for the engine's lender): the loan when the budget has room
    /// for it now (beside admitted partitions, other loans and loans
    /// waiting), else `None`. For a caller that must not wait on the
    /// partitions (a prover thread, which would wait on itself).
    pub fn try_lend(self: &Arc<Self>, bytes: u64) -> Option<HostLoan> {
        let st = self.state.lock();
        if st.reserved + st.lent + st.claimed + bytes > self.lendable() {
            return None;
        }
        Some(self.grant(st, bytes))
    }

    /// Lends `bytes` that `st` has room for.
    fn grant(self: &Arc<Self>, mut st: MutexGuard<'_, IntakeState>, bytes: u64) -> HostLoan {
        st.lent += bytes;
        drop(st);
        self.changed.notify_all();
        HostLoan {
            intake: Arc::clone(self),
            bytes,
        }
    }

    /// The most that can be lent: the budget less the reserve (loans never
    /// take the reserve's bytes).
    pub fn lendable(&self) -> u64 {
        self.budget - self.reserve.bytes
    }

    /// Bytes lent now ([`Intake::lend`]).
    pub fn lent(&self) -> u64 {
        self.state.lock().lent
    }

    /// The part of the budget partitions of `priority` may use: all of it
    /// for the reserve's classes, the rest less the reserve.
    pub fn budget_for(&self, priority: Priority) -> u64 {
        if self.reserve.admits(priority) {
            self.budget
        } else {
            self.budget - self.reserve.bytes
        }
    }

    /// Queues every partition of `job` (already checked by
    /// [`JobState::prepare`] against this budget).
    pub fn push(&self, job: &Arc<JobState>) -> Result<(), SubmitError> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(SubmitError::ShutDown);
        }
        for partition in 0..job.partitions() {
            st.queue.push(Queued {
                order: (job.priority().rank(), job.id().0, partition),
                job: Arc::clone(job),
            });
        }
        drop(st);
        self.changed.notify_all();
        Ok(())
    }

    /// Blocks until the most urgent queued partition fits, and hands it out
    /// with its reservation. `None` once the intake is closed.
    pub fn next(self: &Arc<Self>) -> Option<Admitted> {
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return None;
            }
            while st.queue.peek().is_some_and(|q| q.job.is_finished()) {
                st.queue.pop();
            }
            if let Some(head) = st.queue.peek() {
                let need = head.job.footprint().total();
                let class = head.job.priority();
                let slot = st.in_flight < self.max_in_flight || self.reserve.admits(class);
                let held = st.reserved + st.lent + st.claimed;
                if slot && held + need <= self.budget_for(class) {
                    let head = st.queue.pop().expect("peeked");
                    st.in_flight += 1;
                    st.reserved += need;
                    st.peak_reserved = st.peak_reserved.max(st.reserved);
                    return Some(Admitted {
                        partition: head.order.2,
                        job: head.job,
                        reservation: Reservation {
                            intake: Arc::clone(self),
                            bytes: need,
                        },
                    });
                }
            }
            self.changed.wait_for(&mut st, RECHECK);
        }
    }

    /// Stops admitting; [`Intake::next`] returns `None` from now on. Returns
    /// the unfinished jobs that still had partitions waiting (the caller
    /// resolves them, e.g. with [`JobState::abandon`]).
    pub fn close(&self) -> Vec<Arc<JobState>> {
        let mut st = self.state.lock();
        st.closed = true;
        let mut jobs: Vec<Arc<JobState>> = Vec::new();
        for q in std::mem::take(&mut st.queue).into_sorted_vec() {
            if !q.job.is_finished() && !jobs.iter().any(|j| Arc::ptr_eq(j, &q.job)) {
                jobs.push(q.job);
            }
        }
        drop(st);
        self.changed.notify_all();
        jobs
    }

    /// Whether [`Intake::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Blocks until no live partition is queued and none is in flight (every
    /// reservation has been dropped).
    pub fn wait_idle(&self) {
        let mut st = self.state.lock();
        while st.in_flight > 0 || st.queue.iter().any(|q| !q.job.is_finished()) {
            self.changed.wait_for(&mut st, RECHECK);
        }
    }

    /// Live partitions waiting to be admitted.
    pub fn queued(&self) -> usize {
        let st = self.state.lock();
        st.queue.iter().filter(|q| !q.job.is_finished()).count()
    }

    /// The memory account: budget, reserved now, peak, partitions in flight.
    pub fn memory(&self) -> MemoryMetrics {
        let st = self.state.lock();
        MemoryMetrics {
            budget: self.budget,
            reserved: st.reserved,
            peak_reserved: st.peak_reserved,
            lent: st.lent,
            lend_waiting: st.claimed,
            partitions_in_flight: st.in_flight,
            partitions_queued: st.queue.iter().filter(|q| !q.job.is_finished()).count(),
        }
    }

    /// Adds `bytes` to an admitted partition's reservation: waits until they
    /// fit the budget, or until every admitted partition is itself waiting
    /// here (none would ever give memory back), when it goes over the budget
    /// rather than deadlock, and says so.
    fn grow(&self, bytes: u64) {
        let mut st = self.state.lock();
        st.growing += 1;
        while st.reserved + st.lent + bytes > self.budget && st.growing < st.in_flight {
            self.changed.wait_for(&mut st, RECHECK);
        }
        st.growing -= 1;
        st.reserved += bytes;
        st.peak_reserved = st.peak_reserved.max(st.reserved);
        if st.reserved > self.budget {
            tracing::warn!(
                reserved = st.reserved,
                budget = self.budget,
                "host-memory reservation over budget: every admitted partition needed more at once"
            );
        }
    }

    fn repay(&self, bytes: u64) {
        self.state.lock().lent -= bytes;
        self.changed.notify_all();
    }

    fn give_back(&self, bytes: u64, partition_done: bool) {
        let mut st = self.state.lock();
        st.reserved -= bytes;
        if partition_done {
            st.in_flight -= 1;
        }
        drop(st);
        self.changed.notify_all();
    }
}

/// Host memory held by one admitted partition. Dropping it returns what is
/// left and ends the partition's in-flight slot.
#[derive(Debug)]
pub struct Reservation {
    intake: Arc<Intake>,
    bytes: u64,
}

impl Reservation {
    /// Bytes still held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Holds `bytes` more (a partition moved to a prover that needs more host
    /// memory than the one it was admitted for); blocks until they fit.
    pub fn grow(&mut self, bytes: u64) {
        if bytes > 0 {
            self.intake.grow(bytes);
            self.bytes += bytes;
        }
    }

    /// Gives back up to `bytes` (what was freed); the rest stays held.
    pub fn release(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        if bytes > 0 {
            self.bytes -= bytes;
            self.intake.give_back(bytes, false);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.intake.give_back(self.bytes, true);
    }
}

/// Bytes of the budget lent out of the engine ([`Intake::lend`]); dropping
/// it gives them back.
#[derive(Debug)]
pub struct HostLoan {
    intake: Arc<Intake>,
    bytes: u64,
}

impl HostLoan {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back what is held beyond `bytes` (an estimate turned out
    /// larger than what was needed); never blocks.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes < self.bytes {
            let freed = self.bytes - bytes;
            self.bytes = bytes;
            self.intake.repay(freed);
        }
    }
}

impl Drop for HostLoan {
    fn drop(&mut self) {
        self.intake.repay(self.bytes);
    }
}
