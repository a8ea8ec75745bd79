//! Synthesis of one PoRep partition circuit: cuzk's `ProvingAssignment`
//! against bellperson 0.27's own (private) one, on the same circuit.
//!
//! ```sh
//! # A real partition (from a C1 output, e.g. `cargo xtask fixtures seal --out c1.json`):
//! cargo run --release -p cuzk-filecoin --example porep_synthesis -- --c1 c1.json
//! # The blank circuit of a sector size, unassigned values read as zero (same constraints):
//! cargo run --release -p cuzk-filecoin --example porep_synthesis -- --sector-size 32GiB
//! ```
//!
//! Prints the circuit's shape (constraints with the `input_i * 0 = 0` ones,
//! inputs with ONE, aux, the three density counts) and each synthesis's
//! wall time. bellperson's synthesis is timed by running its prover with a
//! parameter source that refuses every request: bellperson synthesizes
//! first (with its own `ProvingAssignment`) and stops at its first key
//! access, so the call's time is its synthesis (plus a negligible error path).
//! `--skip-bellperson` measures cuzk only, `--skip-cuzk` bellperson only
//! (either halves the peak memory; without cuzk's run no shape is printed).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::{create_random_proof_batch, ParameterSource, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
use common::{measure_partition, print_machine, Args, ExampleResult, Measure};
use cuzk_synth::{CircuitShape, ProvingAssignment};
use ff::Field;
use rand::SeedableRng;

/// A constraint system that reads every unassigned value as zero, around
/// another one. The constraints and the variables are the wrapped system's
/// own: only the missing values change, so shapes and densities are exact.
struct ZeroFill<'a, CS>(&'a mut CS);

fn or_zero(v: Result<Fr, SynthesisError>) -> Result<Fr, SynthesisError> {
    match v {
        Err(SynthesisError::AssignmentMissing) => Ok(Fr::ZERO),
        other => other,
    }
}

impl<CS: ConstraintSystem<Fr>> ConstraintSystem<Fr> for ZeroFill<'_, CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(annotation, || or_zero(f()))
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(annotation, || or_zero(f()))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.enforce(annotation, a, b, c)
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.0.get_root().push_namespace(name_fn)
    }

    fn pop_namespace(&mut self) {
        self.0.get_root().pop_namespace()
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A circuit synthesized through [`ZeroFill`].
struct Blank<C>(C);

impl<C: Circuit<Fr>> Circuit<Fr> for Blank<C> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(&mut ZeroFill(cs))
    }
}

/// A parameter source that has nothing: bellperson's prover stops at its first request.
struct NoKey;

fn no_key<T>() -> Result<T, SynthesisError> {
    Err(SynthesisError::IoError(std::io::Error::other(
        "no key: synthesis timing only",
    )))
}

impl ParameterSource<Bls12> for NoKey {
    type G1Builder = (Arc<Vec<G1Affine>>, usize);
    type G2Builder = (Arc<Vec<G2Affine>>, usize);

    fn get_vk(&self, _: usize) -> Result<&VerifyingKey<Bls12>, SynthesisError> {
        no_key()
    }
    fn get_h(&self, _: usize) -> Result<Self::G1Builder, SynthesisError> {
        no_key()
    }
    fn get_l(&self, _: usize) -> Result<Self::G1Builder, SynthesisError> {
        no_key()
    }
    fn get_a(
        &self,
        _: usize,
        _: usize,
    ) -> Result<(Self::G1Builder, Self::G1Builder), SynthesisError> {
        no_key()
    }
    fn get_b_g1(
        &self,
        _: usize,
        _: usize,
    ) -> Result<(Self::G1Builder, Self::G1Builder), SynthesisError> {
        no_key()
    }
    fn get_b_g2(
        &self,
        _: usize,
        _: usize,
    ) -> Result<(Self::G2Builder, Self::G2Builder), SynthesisError> {
        no_key()
    }
}

fn cuzk_synthesis<C: Circuit<Fr>>(circuit: C) -> (CircuitShape, Duration) {
    let t = Instant::now();
    let mut cs = ProvingAssignment::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).expect("ONE");
    circuit.synthesize(&mut cs).expect("cuzk synthesis");
    let w = cs.finish();
    let elapsed = t.elapsed();
    let shape = w.shape();
    drop(w);
    (shape, elapsed)
}

fn bellperson_synthesis<C: Circuit<Fr> + Send>(circuit: C) -> Duration {
    let t = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0);
    match create_random_proof_batch(vec![circuit], NoKey, &mut rng) {
        Err(SynthesisError::IoError(_)) => t.elapsed(),
        Err(e) => panic!("bellperson synthesis failed: {e}"),
        Ok(_) => unreachable!("NoKey has no key"),
    }
}

/// Which sides to measure.
#[derive(Clone, Copy)]
struct Sides {
    cuzk: bool,
    bellperson: bool,
}

fn run<C: Circuit<Fr> + Send>(label: &str, make: &dyn Fn() -> C, sides: Sides) {
    println!("circuit: {label}");
    let mut cuzk = None;
    if sides.cuzk {
        let (shape, elapsed) = cuzk_synthesis(make());
        println!(
            "  constraints {} (+ {} input_i * 0 = 0 = {}, domain 2^{}), inputs {} (ONE included), aux {}",
            shape.num_constraints - shape.num_inputs,
            shape.num_inputs,
            shape.num_constraints,
            shape.domain_log2,
            shape.num_inputs,
            shape.num_aux
        );
        println!(
            "  density: a_aux {}, b_input {}, b_aux {}",
            shape.a_aux_density, shape.b_input_density, shape.b_aux_density
        );
        println!("  cuzk synthesis        {:>10.3} s", elapsed.as_secs_f64());
        // Flushed line by line so a run cut short still reports cuzk's figure.
        let _ = std::io::Write::flush(&mut std::io::stdout());
        cuzk = Some(elapsed);
    }
    if sides.bellperson {
        let bp = bellperson_synthesis(make());
        let ratio = cuzk.map_or_else(String::new, |c| {
            format!(
                "  (cuzk / bellperson {:.2})",
                c.as_secs_f64() / bp.as_secs_f64()
            )
        });
        println!(
            "  bellperson synthesis  {:>10.3} s{ratio}",
            bp.as_secs_f64()
        );
    }
}

impl Measure for Sides {
    /// A blank circuit is synthesized through [`ZeroFill`] (its unassigned
    /// values read as zero).
    fn measure<C: Circuit<Fr> + Send>(&self, label: &str, make: &dyn Fn() -> C, witnessed: bool) {
        if witnessed {
            run(label, make, *self)
        } else {
            let label = format!("{label}, unassigned values as zero");
            run(&label, &|| Blank(make()), *self)
        }
    }
}

fn main() -> ExampleResult {
    let args = Args::from_env();
    let sides = Sides {
        cuzk: !args.has("--skip-cuzk"),
        bellperson: !args.has("--skip-bellperson"),
    };
    if !sides.cuzk && !sides.bellperson {
        return Err("--skip-cuzk and --skip-bellperson leave nothing to measure".into());
    }
    print_machine(rayon::current_num_threads());
    measure_partition(&args, &sides)
}
