//! Shared by the key and proof tests: a tiny circuit, bellperson keys and
//! proofs for it, and hand-made points that must be refused.

#![allow(dead_code)] // each test binary uses a different subset

use bellperson::groth16::{self as bp, Parameters};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Fp, Fp2, G1Affine, G2Affine, Scalar};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Knowledge of `x, y` with public `xy = x·y` and `t = (x + y)²·x`, plus a
/// chain `c_{i+1} = c_i·y` (c_0 = x) that ends in a variable used only in C,
/// so the key's `a` and `b` sections skip some variables.
///
/// Every aux variable is constrained (bellperson refuses a key otherwise).
#[derive(Clone, Copy)]
pub(crate) struct Tiny {
    pub x: Option<Scalar>,
    pub y: Option<Scalar>,
}

pub(crate) const CHAIN: usize = 5;

impl Tiny {
    pub(crate) fn shape() -> Self {
        Tiny { x: None, y: None }
    }

    pub(crate) fn with(x: u64, y: u64) -> Self {
        Tiny {
            x: Some(Scalar::from(x)),
            y: Some(Scalar::from(y)),
        }
    }

    /// The public inputs (ONE excluded) for this witness.
    pub(crate) fn public_inputs(&self) -> Vec<Scalar> {
        let (x, y) = (self.x.unwrap(), self.y.unwrap());
        let s = (x + y).square();
        vec![x * y, s * x]
    }
}

impl Circuit<Scalar> for Tiny {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let val = |v: Option<Scalar>| v.ok_or(SynthesisError::AssignmentMissing);
        let x = cs.alloc(|| "x", || val(self.x))?;
        let y = cs.alloc(|| "y", || val(self.y))?;
        let xy_val = self.x.zip(self.y).map(|(x, y)| x * y);
        let xy = cs.alloc_input(|| "xy", || val(xy_val))?;
        cs.enforce(|| "x*y", |lc| lc + x, |lc| lc + y, |lc| lc + xy);

        let s_val = self.x.zip(self.y).map(|(x, y)| (x + y).square());
        let s = cs.alloc(|| "s", || val(s_val))?;
        cs.enforce(|| "(x+y)^2", |lc| lc + x + y, |lc| lc + x + y, |lc| lc + s);
        let t_val = s_val.zip(self.x).map(|(s, x)| s * x);
        let t = cs.alloc_input(|| "t", || val(t_val))?;
        cs.enforce(|| "s*x", |lc| lc + s, |lc| lc + x, |lc| lc + t);

        let (mut c, mut c_val) = (x, self.x);
        for i in 0..CHAIN {
            let next_val = c_val.zip(self.y).map(|(c, y)| c * y);
            let next = cs.alloc(|| format!("c{}", i + 1), || val(next_val))?;
            cs.enforce(
                || format!("c{i}*y"),
                |lc| lc + c,
                |lc| lc + y,
                |lc| lc + next,
            );
            (c, c_val) = (next, next_val);
        }
        Ok(())
    }
}

pub(crate) fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// bellperson's key for [`Tiny`], from a seeded RNG.
pub(crate) fn bellperson_params(seed: u64) -> Parameters<Bls12> {
    bp::generate_random_parameters::<Bls12, _, _>(Tiny::shape(), &mut rng(seed))
        .expect("bellperson keygen")
}

pub(crate) fn bellperson_bytes(params: &Parameters<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    params.write(&mut out).expect("write to Vec");
    out
}

/// bellperson's proof for `circuit`, from a seeded RNG.
pub(crate) fn bellperson_proof(
    params: &Parameters<Bls12>,
    circuit: Tiny,
    seed: u64,
) -> bp::Proof<Bls12> {
    bp::create_random_proof(circuit, params, &mut rng(seed)).expect("bellperson prove")
}

fn g2_b() -> Fp2 {
    Fp2::new(Fp::from(4u64), Fp::from(4u64))
}

/// A G1 point on the curve `y² = x³ + 4` but outside the prime-order
/// subgroup: the first small x with a square right-hand side, cofactor not
/// cleared. Returns its uncompressed bytes.
pub(crate) fn g1_off_subgroup_uncompressed() -> [u8; 96] {
    for i in 1u64.. {
        let x = Fp::from(i);
        let rhs = x.square() * x + Fp::from(4u64);
        if let Some(y) = Option::<Fp>::from(rhs.sqrt()) {
            let mut out = [0u8; 96];
            out[..48].copy_from_slice(&x.to_bytes_be());
            out[48..].copy_from_slice(&y.to_bytes_be());
            let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&out))
                .expect("on the curve");
            if !bool::from(p.is_torsion_free()) {
                return out;
            }
        }
    }
    unreachable!()
}

/// The same point, compressed.
pub(crate) fn g1_off_subgroup_compressed() -> [u8; 48] {
    let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(
        &g1_off_subgroup_uncompressed(),
    ))
    .unwrap();
    p.to_compressed()
}

/// A G2 point on `y² = x³ + 4(1 + u)` outside the prime-order subgroup.
pub(crate) fn g2_off_subgroup_uncompressed() -> [u8; 192] {
    for i in 1u64.. {
        let x = Fp2::new(Fp::from(i), Fp::ONE);
        let rhs = x.square() * x + g2_b();
        if let Some(y) = Option::<Fp2>::from(rhs.sqrt()) {
            let mut out = [0u8; 192];
            for (k, f) in [x.c1(), x.c0(), y.c1(), y.c0()].iter().enumerate() {
                out[k * 48..(k + 1) * 48].copy_from_slice(&f.to_bytes_be());
            }
            let p = Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(&out))
                .expect("on the curve");
            if !bool::from(p.is_torsion_free()) {
                return out;
            }
        }
    }
    unreachable!()
}

/// The same point, compressed.
pub(crate) fn g2_off_subgroup_compressed() -> [u8; 96] {
    let p = Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(
        &g2_off_subgroup_uncompressed(),
    ))
    .unwrap();
    p.to_compressed()
}

/// A compressed G1 encoding whose x has no y on the curve.
pub(crate) fn g1_no_y_compressed() -> [u8; 48] {
    for i in 1u64.. {
        let x = Fp::from(i);
        let rhs = x.square() * x + Fp::from(4u64);
        if bool::from(rhs.sqrt().is_none()) {
            let mut out = x.to_bytes_be();
            out[0] |= 0x80;
            return out;
        }
    }
    unreachable!()
}

/// The uncompressed encoding of the point at infinity (G1: 96 bytes, G2: 192).
pub(crate) fn infinity_uncompressed(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    out[0] = 0x40;
    out
}
