#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

mod gpu_suite;

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
