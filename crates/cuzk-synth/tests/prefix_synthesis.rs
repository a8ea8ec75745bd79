//! Pieces sharing a preamble, synthesized in parallel and joined past the
//! prefix, equal the sequential synthesis of the whole circuit bit for bit
//! (a, b, c, assignments, all three densities), for the proving and the
//! witness-only assignment, on pools of one and several threads; a piece
//! with another preamble, other prefix sizes or no mark is refused.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_synth::precompiled::{witness, WitnessAssignment};
use cuzk_synth::{
    synthesize, synthesize_piece, synthesize_with_shared_prefix, PieceError, PieceFault, Prefix,
    ProvingAssignment,
};
use ff::Field;

/// A preamble (a secret, its 8 low bits, an input, a few constraints), then
/// one namespace `challenge_{i}` per challenge whose constraints use
/// preamble variables that the preamble itself never puts in A or B, so
/// the prefix density bits come from the challenges (OR-ed when joined).
#[derive(Clone)]
struct Toy {
    secret: u64,
    /// Extra preamble allocations (0 in the real circuit; a piece with
    /// more has other prefix sizes).
    extra: usize,
    challenges: Vec<u64>,
    /// Whether to open the challenge namespaces at all.
    marked: bool,
}

impl Toy {
    fn new(secret: u64, challenges: Vec<u64>) -> Self {
        Self {
            secret,
            extra: 0,
            challenges,
            marked: true,
        }
    }

    fn pieces(&self) -> Vec<Toy> {
        self.challenges
            .iter()
            .map(|&c| Toy {
                challenges: vec![c],
                ..self.clone()
            })
            .collect()
    }
}

impl Circuit<Fr> for Toy {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let s = Fr::from(self.secret);
        let secret = cs.alloc(|| "secret", || Ok(s))?;
        let public = cs.alloc_input(|| "public", || Ok(s.square()))?;
        // Only the challenges use these two in A or B.
        let lonely = cs.alloc(|| "lonely", || Ok(s + Fr::ONE))?;
        let lonely_input = cs.alloc_input(|| "lonely input", || Ok(Fr::from(7)))?;
        cs.enforce(
            || "square",
            |lc| lc + secret,
            |lc| lc + secret,
            |lc| lc + public,
        );
        let mut bits = Vec::new();
        for k in 0..8 {
            let bit = (self.secret >> k) & 1 == 1;
            let v = cs.alloc(|| format!("bit {k}"), || Ok(Fr::from(u64::from(bit))))?;
            cs.enforce(
                || format!("boolean {k}"),
                |lc| lc + v,
                |lc| lc + CS::one() - v,
                |lc| lc,
            );
            bits.push(v);
        }
        for k in 0..self.extra {
            cs.alloc(|| format!("extra {k}"), || Ok(Fr::ONE))?;
        }
        for (i, c) in self.challenges.into_iter().enumerate() {
            let name = if self.marked {
                format!("challenge_{i}")
            } else {
                format!("round_{i}")
            };
            let mut cs = cs.namespace(|| name);
            let cv = Fr::from(c);
            let input = cs.alloc_input(|| "challenge", || Ok(cv))?;
            let bit = bits[(c % 8) as usize];
            let bit_value = Fr::from((self.secret >> (c % 8)) & 1);
            // product = challenge * bit: B touches a preamble aux variable.
            let product = cs.alloc(|| "product", || Ok(cv * bit_value))?;
            cs.enforce(
                || "product",
                |lc| lc + input,
                |lc| lc + bit,
                |lc| lc + product,
            );
            if c % 2 == 0 {
                // An even challenge puts `lonely` in A and the lonely input in B.
                let t = cs.alloc(|| "t", || Ok((s + Fr::ONE) * Fr::from(7)))?;
                cs.enforce(
                    || "lonely",
                    |lc| lc + lonely,
                    |lc| lc + lonely_input,
                    |lc| lc + t,
                );
            }
            // A chain of its own, a few constraints long.
            let mut acc = product;
            let mut value = cv * bit_value;
            for step in 0..(c % 5) {
                let next_value = value * value + cv;
                let next = cs.alloc(|| format!("step {step}"), || Ok(next_value))?;
                cs.enforce(
                    || format!("step {step}"),
                    |lc| lc + acc,
                    |lc| lc + acc,
                    |lc| lc + next - input,
                );
                acc = next;
                value = next_value;
            }
        }
        Ok(())
    }
}

fn parallel_proving(toy: &Toy) -> Result<ProvingAssignment, PieceError> {
    synthesize_with_shared_prefix(toy.pieces(), |piece| {
        synthesize_piece::<ProvingAssignment, _>(piece, "challenge_0")
    })
}

fn parallel_witness(toy: &Toy) -> Result<WitnessAssignment, PieceError> {
    synthesize_with_shared_prefix(toy.pieces(), |piece| {
        synthesize_piece::<WitnessAssignment, _>(piece, "challenge_0")
    })
}

fn on_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn parallel_pieces_equal_the_sequential_circuit_bit_for_bit() {
    let cases = [
        (0b1011_0110, vec![3, 8, 12, 5, 6, 1, 40, 2, 9]),
        (0xff, vec![4]),
        (0, vec![1, 3, 5, 7]),
        (0b0101, vec![2, 2, 2, 10, 11]),
    ];
    for threads in [1, 4] {
        for (secret, challenges) in &cases {
            let toy = Toy::new(*secret, challenges.clone());
            let sequential = synthesize(toy.clone()).unwrap();
            let parallel = on_pool(threads, || parallel_proving(&toy))
                .unwrap()
                .finish();
            assert!(
                parallel == sequential,
                "{threads} threads, secret {secret}, challenges {challenges:?}: \
                 {parallel:?} against {sequential:?}"
            );
            let sequential_witness = witness(toy.clone()).unwrap();
            let parallel_witness = on_pool(threads, || parallel_witness(&toy))
                .unwrap()
                .into_witness();
            assert_eq!(
                parallel_witness, sequential_witness,
                "{threads} threads, secret {secret}"
            );
            assert_eq!(parallel_witness.aux_assignment, sequential.aux_assignment);
        }
    }
}

#[test]
fn the_prefix_bits_come_from_the_challenges() {
    // Without an even challenge `lonely` is in no A row; with one it is.
    // This is what makes the OR of the prefix densities matter.
    let odd = parallel_proving(&Toy::new(5, vec![1, 3])).unwrap().finish();
    let even = parallel_proving(&Toy::new(5, vec![1, 4])).unwrap().finish();
    assert_eq!(
        even.a_aux_density.count_ones(),
        odd.a_aux_density.count_ones() + 2
    );
    assert!(!odd.a_aux_density.get(1) && even.a_aux_density.get(1));
    assert!(!odd.b_input_density.get(2) && even.b_input_density.get(2));
}

#[test]
fn the_probe_finds_the_preamble() {
    let (cs, prefix) =
        synthesize_piece::<ProvingAssignment, _>(Toy::new(9, vec![2]), "challenge_0").unwrap();
    // ONE, public, lonely input; secret, lonely, 8 bits; square + 8 booleans.
    assert_eq!(
        prefix,
        Prefix {
            inputs: 3,
            aux: 10,
            constraints: 9
        }
    );
    assert!(cs.num_constraints() > prefix.constraints);
}

#[test]
fn a_piece_with_another_preamble_is_refused() {
    let toy = Toy::new(6, vec![1, 2, 3]);
    let mut pieces = toy.pieces();
    pieces[2].secret = 7;
    let err = synthesize_with_shared_prefix(pieces, |p| {
        synthesize_piece::<ProvingAssignment, _>(p, "challenge_0")
    })
    .unwrap_err();
    assert_eq!(err.piece, 2);
    assert!(matches!(err.fault, PieceFault::PrefixValues(_)), "{err}");

    let mut pieces = toy.pieces();
    pieces[1].extra = 1;
    let err = synthesize_with_shared_prefix(pieces, |p| {
        synthesize_piece::<WitnessAssignment, _>(p, "challenge_0")
    })
    .unwrap_err();
    assert_eq!(err.piece, 1);
    assert!(matches!(err.fault, PieceFault::PrefixSizes { .. }), "{err}");

    let mut pieces = toy.pieces();
    pieces[0].marked = false;
    let err = synthesize_with_shared_prefix(pieces, |p| {
        synthesize_piece::<ProvingAssignment, _>(p, "challenge_0")
    })
    .unwrap_err();
    assert_eq!(err.piece, 0);
    assert!(
        matches!(err.fault, PieceFault::NoMark("challenge_0")),
        "{err}"
    );

    let err = synthesize_with_shared_prefix(Vec::<Toy>::new(), |p| {
        synthesize_piece::<ProvingAssignment, _>(p, "challenge_0")
    })
    .unwrap_err();
    assert!(matches!(err.fault, PieceFault::NoPieces), "{err}");
}
