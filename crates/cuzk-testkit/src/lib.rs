#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(feature = "filecoin")]
mod filecoin;
mod gpu_suite;

#[cfg(feature = "filecoin")]
pub use filecoin::{curio_wrapper, filecoin_cache, FilecoinCache, KEY_SEED, TEST_SRS_PROOFS};
pub use gpu_suite::{gpu_suite, GpuTest};

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The variable that fixes the seed of every test in a run.
pub const SEED_VARIABLE: &str = "CUZK_TEST_SEED";

/// A fresh random seed for test `test`, or `CUZK_TEST_SEED` when set; printed
/// (to stderr, which the test harness shows for a failing test) so that a
/// failing run can be repeated.
///
/// # Panics
///
/// When `CUZK_TEST_SEED` is set but is not a u64: a typo must not silently
/// test something else.
pub fn test_seed(test: &str) -> u64 {
    let seed = match std::env::var(SEED_VARIABLE) {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VARIABLE}={s:?} is not a u64")),
        Err(_) => {
            // std's randomly keyed hasher: fresh per process and per call.
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(test)
        }
    };
    eprintln!("{test}: seed {seed} ({SEED_VARIABLE}={seed} repeats it)");
    seed
}

/// A ChaCha20 RNG from [`test_seed`]`(test)`.
pub fn test_rng(test: &str) -> ChaCha20Rng {
    rng_from(test_seed(test))
}

/// The ChaCha20 RNG of a seed (the one every cuzk test uses).
pub fn rng_from(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Two assignments, each its public inputs and its auxiliary values, are
/// the same: equal inputs, as many aux values, none that differs (else the
/// first that does is named). `what` names the case.
///
/// # Panics
///
/// When they differ.
pub fn assert_same_assignment<T: PartialEq + std::fmt::Debug>(
    what: &str,
    (inputs, aux): (&[T], &[T]),
    (expected_inputs, expected_aux): (&[T], &[T]),
) {
    assert_eq!(inputs, expected_inputs, "{what}: inputs");
    assert_same_aux(what, aux, expected_aux);
}

/// Two lists of auxiliary values are the same: as many, none that differs
/// (else the first that does is named). `what` names the case.
///
/// # Panics
///
/// When they differ.
pub fn assert_same_aux<T: PartialEq>(what: &str, aux: &[T], expected: &[T]) {
    assert_eq!(aux.len(), expected.len(), "{what}: aux count");
    if let Some(i) = (0..aux.len()).find(|&i| aux[i] != expected[i]) {
        panic!("{what}: aux {i} differs");
    }
}
