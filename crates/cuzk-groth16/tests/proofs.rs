//! Proof bytes and verification, against bellperson's prover and verifier.

mod tiny;

use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use cuzk_groth16::encoding::{EncodingFault, PointError};
use cuzk_groth16::params::VerifyingKey;
use cuzk_groth16::proof::{
    proofs_from_bytes, proofs_to_bytes, Proof, ProofError, ProofPoint, PROOF_LEN,
};
use cuzk_groth16::verifier::{
    verify_proof, verify_proofs_batch, PreparedVerifyingKey, VerifyError,
};
use group::prime::PrimeCurveAffine;

use tiny::{
    bellperson_params, bellperson_proof, g1_no_y_compressed, g1_off_subgroup_compressed,
    g2_off_subgroup_compressed, rng, Tiny,
};

/// A key, and proofs by bellperson for a few witnesses with their inputs.
struct Fixture {
    params: bp::Parameters<Bls12>,
    pvk: PreparedVerifyingKey,
    proofs: Vec<(Proof, Vec<Scalar>)>,
}

fn fixture() -> Fixture {
    let params = bellperson_params(7);
    let pvk = PreparedVerifyingKey::new(&VerifyingKey::from(&params.vk));
    // (0, 0) makes every public input zero: the IC combination is ONE's
    // point alone.
    let proofs = [(3, 5), (11, 2), (0, 0), (1, 1 << 40)]
        .into_iter()
        .enumerate()
        .map(|(i, (x, y))| {
            let circuit = Tiny::with(x, y);
            let proof = bellperson_proof(&params, circuit, 100 + i as u64);
            (Proof::from(&proof), circuit.public_inputs())
        })
        .collect();
    Fixture {
        params,
        pvk,
        proofs,
    }
}

/// What verifying some proof bytes with some inputs gives: decoding first,
/// then the pairing check.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Valid,
    Invalid,
    Undecodable(ProofError),
    Unverifiable(VerifyError),
}

fn check(pvk: &PreparedVerifyingKey, bytes: &[u8], inputs: &[Scalar]) -> Outcome {
    match Proof::from_bytes(bytes) {
        Err(e) => Outcome::Undecodable(e),
        Ok(proof) => match verify_proof(pvk, &proof, inputs) {
            Ok(true) => Outcome::Valid,
            Ok(false) => Outcome::Invalid,
            Err(e) => Outcome::Unverifiable(e),
        },
    }
}

/// bellperson's verdict on the same question, for the cases it can decode.
fn bellperson_accepts(f: &Fixture, bytes: &[u8], inputs: &[Scalar]) -> bool {
    let pvk = bp::prepare_verifying_key(&f.params.vk);
    match bp::Proof::<Bls12>::read(bytes) {
        Ok(proof) => bp::verify_proof(&pvk, &proof, inputs).unwrap_or(false),
        Err(_) => false,
    }
}

#[test]
fn bellperson_proof_bytes_equal_ours() {
    let params = bellperson_params(7);
    for seed in 0..3 {
        let theirs = bellperson_proof(&params, Tiny::with(3, 5), seed);
        let mut their_bytes = Vec::new();
        theirs.write(&mut their_bytes).unwrap();
        let ours = Proof::from(&theirs);
        assert_eq!(ours.to_bytes().to_vec(), their_bytes);
        assert_eq!(Proof::from_bytes(&their_bytes), Ok(ours));
        assert!(bp::Proof::<Bls12>::from(&ours) == theirs);
    }
}

#[test]
fn valid_proofs_verify_under_both_verifiers() {
    let f = fixture();
    for (proof, inputs) in &f.proofs {
        let bytes = proof.to_bytes();
        assert_eq!(check(&f.pvk, &bytes, inputs), Outcome::Valid);
        assert!(bellperson_accepts(&f, &bytes, inputs));
    }
}

#[test]
fn tampered_proofs_are_rejected() {
    let f = fixture();
    let (proof, inputs) = &f.proofs[0];
    let bytes = proof.to_bytes();

    // A bit flipped inside each point's x coordinate: whichever way the
    // decoder or the pairing check catches it, neither verifier accepts.
    for point in [ProofPoint::A, ProofPoint::B, ProofPoint::C] {
        let mut flipped = bytes;
        flipped[point.offset() + 20] ^= 0x04;
        let outcome = check(&f.pvk, &flipped, inputs);
        assert_ne!(outcome, Outcome::Valid, "flip in {point}");
        assert!(!bellperson_accepts(&f, &flipped, inputs));
    }

    // Valid points, wrong proof: only the pairing check can tell.
    let g1 = G1Affine::generator();
    let g2 = G2Affine::generator();
    let shifted = [
        Proof {
            a: (proof.a.to_curve() + g1).into(),
            ..*proof
        },
        Proof {
            b: (proof.b.to_curve() + g2).into(),
            ..*proof
        },
        Proof {
            c: (proof.c.to_curve() + g1).into(),
            ..*proof
        },
        Proof {
            a: proof.c,
            c: proof.a,
            ..*proof
        },
    ];
    for bad in shifted {
        let bytes = bad.to_bytes();
        assert_eq!(check(&f.pvk, &bytes, inputs), Outcome::Invalid);
        assert!(!bellperson_accepts(&f, &bytes, inputs));
    }
}

#[test]
fn wrong_public_inputs_are_rejected() {
    let f = fixture();
    let (proof, inputs) = &f.proofs[0];
    let bytes = proof.to_bytes();
    let mut plus_one = inputs.clone();
    plus_one[0] += Scalar::from(1u64);
    let swapped = vec![inputs[1], inputs[0]];
    let others = f.proofs[1].1.clone();
    for wrong in [plus_one, swapped, others] {
        assert_eq!(check(&f.pvk, &bytes, &wrong), Outcome::Invalid);
        assert!(!bellperson_accepts(&f, &bytes, &wrong));
    }
}

#[test]
fn wrong_input_count_is_an_error_naming_both_counts() {
    let f = fixture();
    let (proof, inputs) = &f.proofs[0];
    let bytes = proof.to_bytes();
    for actual in [0, 1, 3] {
        let wrong: Vec<Scalar> = inputs.iter().copied().cycle().take(actual).collect();
        assert_eq!(
            check(&f.pvk, &bytes, &wrong),
            Outcome::Unverifiable(VerifyError::InputCount {
                expected: 2,
                actual
            })
        );
    }
    let e = verify_proof(&f.pvk, proof, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected 2 public inputs (the verifying key has 3 IC points, ONE included), got 0"
    );
}

#[test]
fn proof_length_must_be_192() {
    let f = fixture();
    let bytes = f.proofs[0].0.to_bytes();
    let mut long = bytes.to_vec();
    long.push(0);
    for (input, actual) in [(&bytes[..191], 191), (&long[..], 193), (&[][..], 0)] {
        let e = Proof::from_bytes(input).unwrap_err();
        assert_eq!(
            e,
            ProofError::Length {
                expected: 192,
                actual
            }
        );
        assert_eq!(e.to_string(), format!("a proof is 192 bytes, got {actual}"));
    }
}

#[test]
fn bad_points_are_distinct_errors() {
    let f = fixture();
    let good = f.proofs[0].0.to_bytes();
    let identity_g1 = G1Affine::identity().to_compressed();
    let identity_g2 = G2Affine::identity().to_compressed();
    let mut no_flag = good;
    no_flag[0] &= 0x7f;

    let cases: [(ProofPoint, &[u8], PointError); 8] = [
        (ProofPoint::A, &g1_no_y_compressed(), PointError::NotOnCurve),
        (ProofPoint::C, &g1_no_y_compressed(), PointError::NotOnCurve),
        (
            ProofPoint::A,
            &g1_off_subgroup_compressed(),
            PointError::NotInSubgroup,
        ),
        (
            ProofPoint::B,
            &g2_off_subgroup_compressed(),
            PointError::NotInSubgroup,
        ),
        (ProofPoint::A, &identity_g1, PointError::Identity),
        (ProofPoint::B, &identity_g2, PointError::Identity),
        (ProofPoint::C, &identity_g1, PointError::Identity),
        (
            ProofPoint::A,
            &no_flag[..48],
            PointError::Encoding(EncodingFault::CompressionFlag {
                expected_compressed: true,
            }),
        ),
    ];
    for (point, replacement, problem) in cases {
        let mut bytes = good;
        bytes[point.offset()..point.offset() + replacement.len()].copy_from_slice(replacement);
        assert_eq!(
            Proof::from_bytes(&bytes),
            Err(ProofError::BadPoint {
                index: 0,
                point,
                offset: point.offset(),
                problem
            }),
            "{point}: {problem}"
        );
        assert!(!bellperson_accepts(&f, &bytes, &f.proofs[0].1));
    }

    // A proof built in memory with a bad point is refused by the verifier.
    let mut proof = f.proofs[0].0;
    proof.a = G1Affine::identity();
    assert!(matches!(
        verify_proof(&f.pvk, &proof, &f.proofs[0].1),
        Err(VerifyError::BadProof { index: 0, .. })
    ));
}

#[test]
fn concatenated_proofs_round_trip_and_name_the_bad_one() {
    let f = fixture();
    let proofs: Vec<Proof> = f.proofs.iter().map(|(p, _)| *p).collect();
    let bytes = proofs_to_bytes(&proofs);
    assert_eq!(bytes.len(), proofs.len() * PROOF_LEN);
    assert_eq!(proofs_from_bytes(&bytes).unwrap(), proofs);

    let mut corrupt = bytes.clone();
    let c_of_2 = 2 * PROOF_LEN + ProofPoint::C.offset();
    let c_of_3 = 3 * PROOF_LEN + ProofPoint::C.offset();
    for at in [c_of_3, c_of_2] {
        corrupt[at..at + 48].copy_from_slice(&G1Affine::identity().to_compressed());
    }
    assert_eq!(
        proofs_from_bytes(&corrupt),
        Err(ProofError::BadPoint {
            index: 2,
            point: ProofPoint::C,
            offset: c_of_2,
            problem: PointError::Identity
        })
    );

    for len in [0, 191, 383] {
        assert_eq!(
            proofs_from_bytes(&bytes[..len]),
            Err(ProofError::ConcatenatedLength { actual: len })
        );
    }
}

#[test]
fn batch_verification_accepts_valid_and_rejects_one_bad() {
    let f = fixture();
    let proofs: Vec<&Proof> = f.proofs.iter().map(|(p, _)| p).collect();
    let inputs: Vec<&[Scalar]> = f.proofs.iter().map(|(_, x)| x.as_slice()).collect();
    let mut r = rng(42);
    assert_eq!(
        verify_proofs_batch(&f.pvk, &proofs, &inputs, &mut r),
        Ok(true)
    );
    assert_eq!(
        verify_proofs_batch(&f.pvk, &proofs[..1], &inputs[..1], &mut r),
        Ok(true)
    );

    // One proof with the wrong inputs.
    let wrong = vec![Scalar::from(1u64), Scalar::from(2u64)];
    let mut bad_inputs = inputs.clone();
    bad_inputs[2] = &wrong;
    assert_eq!(
        verify_proofs_batch(&f.pvk, &proofs, &bad_inputs, &mut r),
        Ok(false)
    );

    // One tampered proof (valid points).
    let p = f.proofs[1].0;
    let tampered = Proof {
        c: (p.c.to_curve() + G1Affine::generator()).into(),
        ..p
    };
    let mut bad_proofs = proofs.clone();
    bad_proofs[1] = &tampered;
    assert_eq!(
        verify_proofs_batch(&f.pvk, &bad_proofs, &inputs, &mut r),
        Ok(false)
    );

    // Two proofs swapped against their inputs.
    let mut swapped = proofs.clone();
    swapped.swap(0, 1);
    assert_eq!(
        verify_proofs_batch(&f.pvk, &swapped, &inputs, &mut r),
        Ok(false)
    );
}

#[test]
fn batch_verification_errors() {
    let f = fixture();
    let proofs: Vec<&Proof> = f.proofs.iter().map(|(p, _)| p).collect();
    let inputs: Vec<&[Scalar]> = f.proofs.iter().map(|(_, x)| x.as_slice()).collect();
    let mut r = rng(1);
    assert_eq!(
        verify_proofs_batch(&f.pvk, &proofs, &inputs[..3], &mut r),
        Err(VerifyError::BatchLength {
            proofs: 4,
            inputs: 3
        })
    );
    assert_eq!(
        verify_proofs_batch(&f.pvk, &[], &[], &mut r),
        Err(VerifyError::EmptyBatch)
    );
    let mut short = inputs.clone();
    short[3] = &inputs[3][..1];
    assert_eq!(
        verify_proofs_batch(&f.pvk, &proofs, &short, &mut r),
        Err(VerifyError::BatchInputCount {
            index: 3,
            expected: 2,
            actual: 1
        })
    );
}
