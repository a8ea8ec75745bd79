//! Aux vectors kept for the next native PoSt witness.
//!
//! A 32 GiB WindowPoSt partition's aux vector is 126.9 M values, 4.06 GB.
//! Allocated fresh, each of its ~995 k pages is faulted in and zeroed by
//! the kernel on first touch: 1.9–9.3 core-s of system time a partition on
//! dev-2c, a fifth to a half of the witness. Huge pages do not help there (the kernel
//! still clears 4 GB, and compacts memory for them when it is fragmented:
//! the lab note's measurements). A vector the prover has finished with,
//! handed back, is already faulted in: the next partition's witness writes
//! over it, every value of it (the native generator writes each sector's
//! run in full and checks its length), with neither faults nor a zeroing
//! pass.
//!
//! The pool is bounded in bytes (each vector counted at its capacity), so
//! what it holds is known: a caller that keeps a pool holds up to its
//! limit in host memory between partitions, and must count that limit in
//! its memory budget.

use std::sync::Mutex;

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Aux vectors handed back after proving, for the next native PoSt
/// witness to write over (see the module's documentation), holding at most
/// `limit` bytes.
#[derive(Debug)]
pub struct AuxPool {
    limit: u64,
    held: Mutex<Vec<Vec<Fr>>>,
}

impl AuxPool {
    /// An empty pool that holds at most `limit` bytes of vectors (a 32 GiB
    /// WindowPoSt partition's aux vector: 126,902,376 values, 4.06 GB).
    pub fn new(limit: u64) -> Self {
        AuxPool {
            limit,
            held: Mutex::new(Vec::new()),
        }
    }

    /// The most bytes the pool holds.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes the pool holds now (its vectors' capacities).
    pub fn held_bytes(&self) -> u64 {
        self.lock().iter().map(|v| bytes(v.capacity())).sum()
    }

    /// Keeps `aux` (a witness's aux vector the prover is done with) for a
    /// later witness, if it fits under the limit, freeing held vectors
    /// smaller than it (the smallest first) to make room: the large vectors
    /// are the ones whose faults the pool saves, so a WinningPoSt's few MB
    /// never keep a WindowPoSt's 4 GB out. Otherwise frees `aux`. Returns
    /// whether it was kept.
    pub fn give_back(&self, aux: Vec<Fr>) -> bool {
        let size = bytes(aux.capacity());
        if size == 0 || size > self.limit {
            return false;
        }
        let mut held = self.lock();
        held.sort_unstable_by_key(|v| std::cmp::Reverse(v.capacity()));
        let mut total: u64 = held.iter().map(|v| bytes(v.capacity())).sum();
        while total + size > self.limit {
            match held.last() {
                Some(smallest) if smallest.capacity() < aux.capacity() => {
                    total -= bytes(smallest.capacity());
                    held.pop();
                }
                _ => return false,
            }
        }
        held.push(aux);
        true
    }

    /// Faults in a zeroed vector of `len` values now and keeps it (as
    /// [`AuxPool::give_back`] would), so that even the first witness of
    /// that size finds one: a daemon does it at start, off any deadline.
    /// Returns whether it was kept (not when over the limit).
    pub fn prefill(&self, len: usize) -> bool {
        if bytes(len) > self.limit || len == 0 {
            return false;
        }
        self.give_back(zeroed(len, len))
    }

    /// A vector of `len` values with room for `capacity` (at least `len`):
    /// a held one when one is large enough (the smallest such), its values
    /// left as they were up to `len`, which the caller must overwrite
    /// every one of; else a fresh one, zeroed on rayon.
    pub(crate) fn take(&self, len: usize, capacity: usize) -> Vec<Fr> {
        let kept = {
            let mut held = self.lock();
            held.iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= len)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i)
                .map(|i| held.swap_remove(i))
        };
        match kept {
            Some(mut aux) => {
                if aux.len() >= len {
                    aux.truncate(len);
                } else {
                    aux.resize(len, Fr::ZERO);
                }
                aux
            }
            None => zeroed(len, capacity),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Fr>>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `len` zeros with room for `capacity` values, written on rayon (the
/// pages are faulted in by every core).
pub(crate) fn zeroed(len: usize, capacity: usize) -> Vec<Fr> {
    let mut aux = Vec::with_capacity(capacity.max(len));
    aux.par_extend(rayon::iter::repeat_n(Fr::ZERO, len));
    aux
}

fn bytes(values: usize) -> u64 {
    (values * std::mem::size_of::<Fr>()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_smallest_vector_that_fits_and_keeps_under_the_limit() {
        let value = bytes(1);
        let pool = AuxPool::new(30 * value);
        assert!(pool.give_back(vec![Fr::ONE; 20]));
        assert!(pool.give_back(vec![Fr::ONE; 8]));
        // 20 + 8 + 4 > 30: refused, and an empty vector is never kept.
        assert!(!pool.give_back(vec![Fr::ONE; 4]));
        assert!(!pool.give_back(Vec::new()));
        assert_eq!(pool.held_bytes(), 28 * value);

        // 6 values: the 8-value vector, cut to 6 (its values as they were).
        let aux = pool.take(6, 6);
        assert_eq!((aux.len(), aux.capacity()), (6, 8));
        assert_eq!(aux, vec![Fr::ONE; 6]);
        // 12 values: the 20-value vector.
        let aux = pool.take(12, 12);
        assert_eq!(aux.len(), 12);
        assert!(aux.capacity() >= 20);
        assert_eq!(pool.held_bytes(), 0);

        // Nothing held: a fresh, zeroed vector with the room asked for.
        let aux = pool.take(5, 9);
        assert_eq!(aux, vec![Fr::ZERO; 5]);
        assert!(aux.capacity() >= 9);

        // A held vector shorter than asked (but with the room) is extended
        // with zeros.
        let mut short = Vec::with_capacity(10);
        short.extend([Fr::ONE; 3]);
        assert!(pool.give_back(short));
        assert_eq!(
            pool.take(5, 5),
            [Fr::ONE, Fr::ONE, Fr::ONE, Fr::ZERO, Fr::ZERO]
        );
    }

    #[test]
    fn a_prefilled_vector_is_taken_by_the_first_witness() {
        let value = bytes(1);
        let pool = AuxPool::new(10 * value);
        assert!(!pool.prefill(11), "over the limit");
        assert!(pool.prefill(10));
        assert_eq!(pool.held_bytes(), 10 * value);
        let aux = pool.take(10, 10);
        assert_eq!(aux, vec![Fr::ZERO; 10]);
        assert_eq!(pool.held_bytes(), 0);
    }

    #[test]
    fn a_larger_vector_pushes_smaller_ones_out_never_the_reverse() {
        let value = bytes(1);
        let pool = AuxPool::new(30 * value);
        assert!(pool.give_back(vec![Fr::ONE; 4]));
        assert!(pool.give_back(vec![Fr::ONE; 6]));
        assert!(pool.give_back(vec![Fr::ONE; 10]));
        // 20 more: the 4 and the 6 go (smallest first), the 10 stays.
        assert!(pool.give_back(vec![Fr::ONE; 20]));
        assert_eq!(pool.held_bytes(), 30 * value);
        // A smaller one pushes nothing out, so it is refused.
        assert!(!pool.give_back(vec![Fr::ONE; 5]));
        // Nor does one as large as a held one.
        assert!(!pool.give_back(vec![Fr::ONE; 10]));
        // Over the limit on its own: refused, the pool unchanged.
        assert!(!pool.give_back(vec![Fr::ONE; 31]));
        assert_eq!(pool.held_bytes(), 30 * value);
        assert_eq!(pool.take(15, 15).capacity(), 20);
        assert_eq!(pool.take(7, 7).capacity(), 10);
    }
}
