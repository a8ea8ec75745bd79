//! CPU number-theoretic transform over Fr.
//!
//! Conventions (the same as bellperson's `EvaluationDomain`, so results agree
//! value for value): a domain of size n = 2^k uses ω = `Fr::ROOT_OF_UNITY`
//! squared (32 − k) times; the coset is g·⟨ω⟩ with g =
//! `Fr::MULTIPLICATIVE_GENERATOR` (7). Inputs and outputs are in natural order:
//! `ntt` maps coefficients c to evaluations e_j = Σ c_i ω^{ij}.
//!
//! The transform is in place and iterative radix-2: a bit-reversal permutation,
//! then the first `BLOCK_LOG` butterfly levels inside cache-sized blocks (one
//! pass over memory for all of them), then the remaining levels over the whole
//! vector. Every level runs on rayon.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Butterfly levels done per block while the block is in cache (2^12 × 32 B = 128 KiB).
const BLOCK_LOG: u32 = 12;
/// Below this size, loops run serially (rayon overhead dominates).
const PAR_MIN: usize = 1 << 12;

/// A power-of-two evaluation domain with its constants and twiddle table.
#[derive(Clone, Debug)]
pub struct Domain {
    log_n: u32,
    omega: Fr,
    n_inv: Fr,
    /// ω^j for j < n/2 (natural order).
    twiddles: Vec<Fr>,
    /// ω^{-j} for j < n/2.
    inv_twiddles: Vec<Fr>,
}

impl Domain {
    /// The domain of size 2^`log_n`.
    ///
    /// # Panics
    /// If `log_n` exceeds Fr's two-adicity (32).
    pub fn new(log_n: u32) -> Self {
        assert!(
            log_n <= Fr::S,
            "domain 2^{log_n} exceeds Fr's 2-adicity 2^{}",
            Fr::S
        );
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        let omega_inv = omega.invert().unwrap();
        let n_inv = Fr::from(1u64 << log_n).invert().unwrap();
        let half = (1usize << log_n) / 2;
        Domain {
            log_n,
            omega,
            n_inv,
            twiddles: powers(omega, half),
            inv_twiddles: powers(omega_inv, half),
        }
    }

    /// The smallest domain holding `len` values (bellperson's padding rule).
    pub fn for_len(len: usize) -> Self {
        Self::new(len.max(1).next_power_of_two().trailing_zeros())
    }

    /// log2 of the size.
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// The size n.
    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    /// The generator ω of the domain.
    pub fn omega(&self) -> Fr {
        self.omega
    }

    /// The coset shift g = 7.
    pub fn coset_generator() -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR
    }

    /// Z(x) = x^n − 1 evaluated on the coset (constant there: g^n − 1).
    pub fn z_on_coset(&self) -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size() as u64]) - Fr::ONE
    }

    /// Coefficients to evaluations on ⟨ω⟩, in place.
    pub fn ntt(&self, values: &mut [Fr]) {
        self.check(values);
        transform(values, &self.twiddles);
    }

    /// Evaluations on ⟨ω⟩ to coefficients, in place (includes the 1/n scaling).
    pub fn intt(&self, values: &mut [Fr]) {
        self.check(values);
        transform(values, &self.inv_twiddles);
        scale(values, self.n_inv);
    }

    /// Coefficients to evaluations on the coset g·⟨ω⟩, in place.
    pub fn coset_ntt(&self, values: &mut [Fr]) {
        self.check(values);
        distribute_powers(values, Fr::MULTIPLICATIVE_GENERATOR);
        transform(values, &self.twiddles);
    }

    /// Evaluations on the coset g·⟨ω⟩ to coefficients, in place.
    pub fn coset_intt(&self, values: &mut [Fr]) {
        self.check(values);
        transform(values, &self.inv_twiddles);
        let g_inv = Fr::MULTIPLICATIVE_GENERATOR.invert().unwrap();
        // Scale by 1/n and by g^{-i} in one pass.
        distribute_powers_scaled(values, g_inv, self.n_inv);
    }

    fn check(&self, values: &[Fr]) {
        assert_eq!(
            values.len(),
            self.size(),
            "NTT input has {} values, domain 2^{} needs {}",
            values.len(),
            self.log_n,
            self.size()
        );
    }
}

/// [1, x, x², …] of length `len`, computed in parallel chunks.
pub fn powers(x: Fr, len: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; len];
    let chunk = (len / rayon::current_num_threads().max(1)).clamp(1024, 1 << 16);
    out.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
        let mut acc = x.pow_vartime([(c * chunk) as u64]);
        for v in part {
            *v = acc;
            acc *= x;
        }
    });
    out
}

/// `values[i] *= g^i`.
pub fn distribute_powers(values: &mut [Fr], g: Fr) {
    distribute_powers_scaled(values, g, Fr::ONE)
}

/// `values[i] *= c · g^i`.
pub fn distribute_powers_scaled(values: &mut [Fr], g: Fr, c: Fr) {
    let chunk = 1 << 14;
    values
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(k, part)| {
            let mut acc = c * g.pow_vartime([(k * chunk) as u64]);
            for v in part {
                *v *= acc;
                acc *= g;
            }
        });
}

fn scale(values: &mut [Fr], c: Fr) {
    values.par_chunks_mut(1 << 14).for_each(|part| {
        for v in part {
            *v *= c;
        }
    });
}

fn bit_reverse(values: &mut [Fr]) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    if log_n == 0 {
        return;
    }
    let shift = usize::BITS - log_n;
    for i in 0..n {
        let j = i.reverse_bits() >> shift;
        if i < j {
            values.swap(i, j);
        }
    }
}

/// Radix-2 decimation-in-time transform with the given half-size twiddles.
fn transform(values: &mut [Fr], twiddles: &[Fr]) {
    let n = values.len();
    if n <= 1 {
        return;
    }
    let log_n = n.trailing_zeros();
    bit_reverse(values);

    // Levels 1..=b inside blocks of 2^b.
    let b = log_n.min(BLOCK_LOG);
    let block = 1usize << b;
    let run_block = |chunk: &mut [Fr]| {
        for level in 1..=b {
            let m = 1usize << level;
            let half = m / 2;
            let stride = n / m;
            for group in chunk.chunks_mut(m) {
                let (lo, hi) = group.split_at_mut(half);
                butterflies(lo, hi, twiddles, 0, stride);
            }
        }
    };
    if n >= PAR_MIN {
        values.par_chunks_mut(block).for_each(run_block);
    } else {
        values.chunks_mut(block).for_each(run_block);
    }

    // Levels b+1..=log_n over the whole vector.
    for level in (b + 1)..=log_n {
        let m = 1usize << level;
        let half = m / 2;
        let stride = n / m;
        values.par_chunks_mut(m).for_each(|group| {
            let (lo, hi) = group.split_at_mut(half);
            // Split each group's butterflies into pieces so large levels use every core.
            const PIECE: usize = 1 << 12;
            lo.par_chunks_mut(PIECE)
                .zip(hi.par_chunks_mut(PIECE))
                .enumerate()
                .for_each(|(p, (l, h))| butterflies(l, h, twiddles, p * PIECE, stride));
        });
    }
}

#[inline]
fn butterflies(lo: &mut [Fr], hi: &mut [Fr], twiddles: &[Fr], first: usize, stride: usize) {
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *v * twiddles[(first + j) * stride];
        *v = *u - t;
        *u += t;
    }
}

/// The O(n²) DFT used as a reference in tests: e_j = Σ c_i ω^{ij}.
pub fn naive_dft(coeffs: &[Fr], omega: Fr) -> Vec<Fr> {
    let n = coeffs.len();
    (0..n)
        .map(|j| {
            let w = omega.pow_vartime([j as u64]);
            let mut acc = Fr::ZERO;
            let mut p = Fr::ONE;
            for c in coeffs {
                acc += *c * p;
                p *= w;
            }
            acc
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn random_vec(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        (0..n).map(|_| Fr::random(&mut rng)).collect()
    }

    #[test]
    fn ntt_matches_naive_dft_small_sizes() {
        let seed = cuzk_testkit::test_seed("ntt_matches_naive_dft_small_sizes");
        for log_n in 0..=8 {
            let d = Domain::new(log_n);
            let c = random_vec(d.size(), seed ^ log_n as u64);
            let mut e = c.clone();
            d.ntt(&mut e);
            assert_eq!(e, naive_dft(&c, d.omega()), "2^{log_n}");
            d.intt(&mut e);
            assert_eq!(e, c, "inverse 2^{log_n}");
        }
    }

    #[test]
    fn coset_ntt_evaluates_on_the_coset() {
        let seed = cuzk_testkit::test_seed("coset_ntt_evaluates_on_the_coset");
        let d = Domain::new(6);
        let c = random_vec(64, seed);
        let mut e = c.clone();
        d.coset_ntt(&mut e);
        let g = Domain::coset_generator();
        for (j, ej) in e.iter().enumerate().step_by(7) {
            let x = g * d.omega().pow_vartime([j as u64]);
            let mut acc = Fr::ZERO;
            for ci in c.iter().rev() {
                acc = acc * x + ci;
            }
            assert_eq!(*ej, acc, "point {j}");
        }
        d.coset_intt(&mut e);
        assert_eq!(e, c);
    }

    #[test]
    fn large_round_trips_cross_the_block_boundary() {
        let seed = cuzk_testkit::test_seed("large_round_trips_cross_the_block_boundary");
        for log_n in [BLOCK_LOG, BLOCK_LOG + 1, BLOCK_LOG + 4] {
            let d = Domain::new(log_n);
            let c = random_vec(d.size(), seed ^ log_n as u64);
            let mut e = c.clone();
            d.ntt(&mut e);
            // Spot-check a few evaluations by Horner.
            for j in [0usize, 1, d.size() / 2 + 3, d.size() - 1] {
                let x = d.omega().pow_vartime([j as u64]);
                let mut acc = Fr::ZERO;
                for ci in c.iter().rev() {
                    acc = acc * x + ci;
                }
                assert_eq!(e[j], acc);
            }
            d.coset_intt(&mut e);
            d.coset_ntt(&mut e);
            d.intt(&mut e);
            assert_eq!(e, c);
        }
    }

    #[test]
    fn z_on_coset_is_g_pow_n_minus_one() {
        let d = Domain::new(10);
        let g = Domain::coset_generator();
        let x = g * d.omega().pow_vartime([5]);
        assert_eq!(d.z_on_coset(), x.pow_vartime([1024]) - Fr::ONE);
    }

    #[test]
    #[should_panic(expected = "NTT input has 3 values")]
    fn wrong_length_is_refused() {
        Domain::new(2).ntt(&mut [Fr::ONE; 3]);
    }
}
