//! The shape of a circuit of any kind and size without a witness: the
//! crates' blank circuit (the one a key is generated from) run on a
//! constraint system that only counts. Constraints, inputs, aux variables
//! and the A/B densities come out exactly as cuzk-synth's prover would
//! find them for a real witness of the same circuit (`Synthesized::shape`):
//! ONE allocated first, `input_i * 0 = 0` appended for every input, a term
//! whose merged coefficient is zero setting no density bit. Memory is three
//! bitmaps (one bit per variable); a 32 GiB WindowPoSt partition's ~10^8
//! constraints are counted in minutes on one core.

use std::time::{Duration, Instant};

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_synth::CircuitShape;
use ff::Field;

use crate::circuit::BlankUse;
use crate::{Circuit, Error};

/// A circuit's counted shape and how long counting took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitCounts {
    /// The circuit counted.
    pub circuit: Circuit,
    /// Its shape (what a witness of it and its key have).
    pub shape: CircuitShape,
    /// `Some(n)`: a WindowPoSt counted with 1 and 2 sectors and extended to
    /// its `n` (see [`count_circuit_by_sectors`]); `None`: counted whole.
    pub by_sectors: Option<usize>,
    /// Time to build the blank circuit(s) and count.
    pub elapsed: Duration,
}

/// Counts the blank circuit of `circuit` (one partition for PoRep and the
/// update, the one circuit of a PoSt) whole.
pub fn count_circuit(circuit: Circuit) -> Result<CircuitCounts, Error> {
    let start = Instant::now();
    let shape = count_blank(circuit, None)?;
    Ok(CircuitCounts {
        circuit,
        shape,
        by_sectors: None,
        elapsed: start.elapsed(),
    })
}

/// [`count_circuit`], except for a WindowPoSt of more than 2 sectors: its
/// circuit is the same gadget once per sector (the sector's comm_r, its
/// challenges' inclusion proofs) after ONE, so every count is
/// `c(1) + (n - 1) (c(2) - c(1))`; the blank circuits of 1 and 2 sectors are
/// counted and extended to `n`. A 32 GiB partition (2349 sectors, ~10^8
/// constraints) takes a second instead of minutes; the tests check the
/// rule against whole counts.
pub fn count_circuit_by_sectors(circuit: Circuit) -> Result<CircuitCounts, Error> {
    let Circuit::Post(p) = circuit else {
        return count_circuit(circuit);
    };
    let n = p.sector_count();
    if p.kind() != crate::PostKind::Window || n <= 2 {
        return count_circuit(circuit);
    }
    let start = Instant::now();
    let one = count_blank(circuit, Some(1))?;
    let two = count_blank(circuit, Some(2))?;
    Ok(CircuitCounts {
        circuit,
        shape: extend(&one, &two, n),
        by_sectors: Some(n),
        elapsed: start.elapsed(),
    })
}

/// The shape of `n` sectors from those of 1 and 2 (each count affine in the
/// number of sectors).
fn extend(one: &CircuitShape, two: &CircuitShape, n: usize) -> CircuitShape {
    let at = |a: usize, b: usize| a + (n - 1) * (b - a);
    let num_constraints = at(one.num_constraints, two.num_constraints);
    CircuitShape {
        num_constraints,
        num_inputs: at(one.num_inputs, two.num_inputs),
        num_aux: at(one.num_aux, two.num_aux),
        a_aux_density: at(one.a_aux_density, two.a_aux_density),
        b_input_density: at(one.b_input_density, two.b_input_density),
        b_aux_density: at(one.b_aux_density, two.b_aux_density),
        domain_log2: num_constraints.max(1).next_power_of_two().trailing_zeros(),
    }
}

/// Runs `circuit` (blank or not: no value is ever asked for) on a
/// [`CountingSystem`] and returns its shape.
pub(crate) fn count<C: bellperson::Circuit<Fr>>(circuit: C) -> Result<CircuitShape, Error> {
    let mut cs = CountingSystem::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))
        .and_then(|_| circuit.synthesize(&mut cs))
        .map_err(|e| Error::filecoin("counting the blank circuit", e))?;
    Ok(cs.shape())
}

/// The counted shape of `circuit`'s blank circuit (of `sectors` sectors
/// for a PoSt when given).
fn count_blank(circuit: Circuit, sectors: Option<usize>) -> Result<CircuitShape, Error> {
    struct Count(Option<CircuitShape>);
    impl BlankUse for Count {
        fn take<C: bellperson::Circuit<Fr>>(&mut self, circuit: C) -> Result<(), Error> {
            self.0 = Some(count(circuit)?);
            Ok(())
        }
    }
    let mut counted = Count(None);
    circuit.with_blank(sectors, &mut counted)?;
    Ok(counted.0.expect("with_blank hands the circuit over"))
}

/// One bit per variable, grown as variables are allocated.
#[derive(Default)]
struct Bits {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Bits {
    fn push(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    fn set(&mut self, index: usize) {
        assert!(index < self.len, "variable {index} of {}", self.len);
        let (word, mask) = (&mut self.words[index / 64], 1u64 << (index % 64));
        if *word & mask == 0 {
            *word |= mask;
            self.ones += 1;
        }
    }
}

/// A constraint system that keeps no values and no constraints: only their
/// number and the density bitmaps (A-aux, B-input, B-aux).
#[derive(Default)]
struct CountingSystem {
    constraints: usize,
    inputs: usize,
    aux: usize,
    a_aux: Bits,
    b_input: Bits,
    b_aux: Bits,
}

impl CountingSystem {
    /// The shape after the `input_i * 0 = 0` constraints (A = input_i: no
    /// density bit, inputs having none in A).
    fn shape(&self) -> CircuitShape {
        let num_constraints = self.constraints + self.inputs;
        CircuitShape {
            num_constraints,
            num_inputs: self.inputs,
            num_aux: self.aux,
            a_aux_density: self.a_aux.ones,
            b_input_density: self.b_input.ones,
            b_aux_density: self.b_aux.ones,
            domain_log2: num_constraints.max(1).next_power_of_two().trailing_zeros(),
        }
    }
}

/// Sets `bits` for every term of `lc` of the kind `pick` selects with a
/// nonzero (merged) coefficient.
fn mark<'a>(bits: &mut Bits, terms: impl Iterator<Item = (&'a usize, &'a Fr)>) {
    for (&index, coeff) in terms {
        if !bool::from(coeff.is_zero()) {
            bits.set(index);
        }
    }
}

impl ConstraintSystem<Fr> for CountingSystem {
    cuzk_synth::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        self.a_aux.push();
        self.b_aux.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.b_input.push();
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let a = a(LinearCombination::zero());
        mark(&mut self.a_aux, a.iter_aux());
        drop(a);
        let b = b(LinearCombination::zero());
        mark(&mut self.b_input, b.iter_inputs());
        mark(&mut self.b_aux, b.iter_aux());
        drop(b);
        drop(c(LinearCombination::zero()));
        self.constraints += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PostType, ProofType, UpdateType};
    use cuzk_groth16::setup::CpuFixedBase;

    /// The counts against a key generated from the same blank circuit
    /// (cuzk-groth16's key generator counts on its own): its A query holds
    /// every input and the A-aux density's variables, its B query (G1) the
    /// B densities of both kinds, L one point per aux variable, H one per
    /// domain point but the last, IC one per input. (Not PoRep: its 2 KiB
    /// key takes minutes; `cuzk circuit-info` checks it against the 32 GiB
    /// counts in BENCHMARKS.md.)
    #[test]
    fn counts_at_2_kib_agree_with_the_keys_of_every_kind() {
        let porep = ProofType::for_sector_size(2048).unwrap();
        for circuit in [
            Circuit::Post(PostType::winning_for(porep)),
            Circuit::Post(PostType::window_for(porep)),
            Circuit::Update(UpdateType::for_seal(porep)),
        ] {
            let s = count_circuit(circuit).unwrap().shape;
            let key = circuit.generate_key(0, &CpuFixedBase).unwrap();
            let name = circuit.name();
            assert_eq!(s.num_inputs, key.vk.ic.len(), "{name}: inputs");
            assert_eq!(s.num_aux, key.l.len(), "{name}: aux");
            assert_eq!(s.num_inputs + s.a_aux_density, key.a.len(), "{name}: A");
            let b = s.b_input_density + s.b_aux_density;
            assert_eq!(b, key.b_g1.len(), "{name}: B in G1");
            assert_eq!(b, key.b_g2.len(), "{name}: B in G2");
            assert_eq!(1 << s.domain_log2, key.h.len() + 1, "{name}: domain");
            assert!(s.num_constraints <= key.h.len() + 1, "{name}: constraints");
            assert!(
                2 * s.num_constraints > key.h.len() + 1,
                "{name}: constraints"
            );
        }
    }

    /// The counts of the PoSt circuits are exactly the shape of a real
    /// witness (synthetic vanilla proofs of a full partition), constraints
    /// included.
    #[test]
    #[cfg(feature = "fixtures")]
    fn post_counts_at_2_kib_are_the_shape_of_a_witness() {
        use crate::synthetic_post::SyntheticPost;
        use crate::{PostKind, PostRequest};
        let porep = ProofType::for_sector_size(2048).unwrap();
        for pt in [PostType::winning_for(porep), PostType::window_for(porep)] {
            let counted = count_circuit(Circuit::Post(pt)).unwrap().shape;
            let randomness = [7u8; 32];
            let prover_id = [3u8; 32];
            let made = SyntheticPost {
                post_type: pt,
                randomness,
                prover_id,
                sectors: (1..=pt.sector_count() as u64).collect(),
                seed: 5,
            }
            .generate()
            .unwrap();
            let request = match pt.kind() {
                PostKind::Winning => {
                    PostRequest::winning(pt, &randomness, prover_id, made.vanilla_proofs)
                }
                PostKind::Window => {
                    PostRequest::window(pt, &randomness, prover_id, made.vanilla_proofs, 0)
                }
            }
            .unwrap();
            let (synthesis, inputs, _) = crate::post::erased_circuit::<
                filecoin_proofs::SectorShape2KiB,
            >(
                &request, &crate::CircuitSynthesis::Full, None
            )
            .unwrap();
            let witness = synthesis(&counted).unwrap();
            assert_eq!(witness.shape(), counted, "{}", pt.name());
            assert_eq!(inputs.len() + 1, counted.num_inputs, "{}", pt.name());
        }
    }

    /// The per-sector rule of [`count_circuit_by_sectors`] against whole
    /// counts of 3 and 5 sectors, at 2 KiB and 8 MiB.
    #[test]
    fn window_counts_extended_by_sectors_are_whole_counts() {
        for size in [2048, 8 << 20] {
            let pt = PostType::window_for(ProofType::for_sector_size(size).unwrap());
            let counted = |n| count_blank(pt.into(), Some(n)).unwrap();
            let (one, two) = (counted(1), counted(2));
            for n in [3, 5] {
                assert_eq!(extend(&one, &two, n), counted(n), "{} with {n}", pt.name());
            }
        }
    }
}
