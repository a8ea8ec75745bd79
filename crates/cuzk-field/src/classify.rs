//! Scalar classification: zero, one, or anything else.
//!
//! PoRep witnesses are mostly bits, so an MSM over them is mostly "skip" and
//! "add the point"; only the remaining scalars need Pippenger. Classification
//! compares Montgomery limbs directly (no conversion), so it is one pass over
//! memory.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use crate::limbs::{fr_as_limbs, FrLimbs};

/// What an MSM must do with one scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarClass {
    /// Contributes nothing; skipped.
    Zero,
    /// Contributes its point as is; summed by plain additions.
    One,
    /// Anything else; goes through Pippenger.
    Other,
}

/// Classifies one scalar.
pub fn classify_one(s: &Fr) -> ScalarClass {
    let l = FrLimbs::from(*s);
    if l == ZERO_LIMBS {
        ScalarClass::Zero
    } else if l == one_limbs() {
        ScalarClass::One
    } else {
        ScalarClass::Other
    }
}

const ZERO_LIMBS: FrLimbs = FrLimbs([0; 4]);

fn one_limbs() -> FrLimbs {
    FrLimbs::from(Fr::ONE)
}

/// The indices of a scalar vector, split by class, in increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classified {
    /// How many scalars were zero.
    pub zeros: usize,
    /// Indices of scalars equal to one.
    pub ones: Vec<u32>,
    /// Indices of all other scalars.
    pub others: Vec<u32>,
}

impl Classified {
    /// Total number of scalars classified.
    pub fn len(&self) -> usize {
        self.zeros + self.ones.len() + self.others.len()
    }

    /// True when no scalar was classified.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Splits `scalars` into zero / one / other index lists (rayon-parallel).
///
/// # Panics
/// If `scalars.len()` exceeds `u32::MAX` (indices are 32-bit, as on the GPU).
pub fn classify(scalars: &[Fr]) -> Classified {
    assert!(
        scalars.len() <= u32::MAX as usize,
        "classify: {} scalars exceed 32-bit indices",
        scalars.len()
    );
    const CHUNK: usize = 1 << 16;
    let one = one_limbs();
    let limbs = fr_as_limbs(scalars);
    let parts: Vec<Classified> = limbs
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let base = (c * CHUNK) as u32;
            let mut out = Classified::default();
            for (i, l) in chunk.iter().enumerate() {
                if *l == ZERO_LIMBS {
                    out.zeros += 1;
                } else if *l == one {
                    out.ones.push(base + i as u32);
                } else {
                    out.others.push(base + i as u32);
                }
            }
            out
        })
        .collect();
    let mut out = Classified {
        zeros: parts.iter().map(|p| p.zeros).sum(),
        ones: Vec::with_capacity(parts.iter().map(|p| p.ones.len()).sum()),
        others: Vec::with_capacity(parts.iter().map(|p| p.others.len()).sum()),
    };
    for p in parts {
        out.ones.extend_from_slice(&p.ones);
        out.others.extend_from_slice(&p.others);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scalar_of(kind: u8, seed: u64) -> Fr {
        match kind % 3 {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            _ => Fr::from(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 2) * Fr::from(3),
        }
    }

    proptest! {
        #[test]
        fn classify_matches_field_comparisons(kinds in proptest::collection::vec((any::<u8>(), any::<u64>()), 0..300_000usize).prop_map(|v| v)) {
            let scalars: Vec<Fr> = kinds.iter().map(|(k, s)| scalar_of(*k, *s)).collect();
            let c = classify(&scalars);
            prop_assert_eq!(c.len(), scalars.len());
            prop_assert_eq!(c.zeros, scalars.iter().filter(|s| bool::from(s.is_zero())).count());
            let ones: Vec<u32> = (0..scalars.len() as u32).filter(|&i| scalars[i as usize] == Fr::ONE).collect();
            let others: Vec<u32> = (0..scalars.len() as u32)
                .filter(|&i| { let s = scalars[i as usize]; s != Fr::ONE && !bool::from(s.is_zero()) })
                .collect();
            prop_assert_eq!(&c.ones, &ones);
            prop_assert_eq!(&c.others, &others);
            for (i, s) in scalars.iter().enumerate().take(50) {
                let expect = if bool::from(s.is_zero()) { ScalarClass::Zero } else if *s == Fr::ONE { ScalarClass::One } else { ScalarClass::Other };
                prop_assert_eq!(classify_one(s), expect, "index {}", i);
            }
        }
    }

    #[test]
    fn minus_one_and_two_are_other() {
        assert_eq!(classify_one(&-Fr::ONE), ScalarClass::Other);
        assert_eq!(classify_one(&Fr::from(2)), ScalarClass::Other);
        assert_eq!(classify(&[]), Classified::default());
    }
}
