#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![deny(unsafe_code)]

pub mod classify;
pub mod limbs;
pub mod msm;
pub mod ntt;

pub use blstrs::Scalar as Fr;
pub use blstrs::{Bls12, Fp as Fq, Fp2 as Fq2, G1Affine, G1Projective, G2Affine, G2Projective, Gt};
pub use ff::{Field, PrimeField};
pub use group::{prime::PrimeCurveAffine, Curve, Group};
