//! The key-assembly constraint system: records every linear-combination term
//! of a circuit, then evaluates each variable's A, B and C polynomials at τ.
//!
//! It behaves as bellperson 0.27's private `KeypairAssembly` does: `alloc`
//! and `alloc_input` never call their value closures, namespaces are ignored,
//! every term is kept (a zero coefficient included; it contributes zero), and
//! the caller allocates ONE first and appends the `input_i * 0 = 0`
//! constraints after synthesis ([`KeyAssembly::enforce_input_constraints`]).
//!
//! Unlike bellperson's per-variable vectors, the terms are stored flat, one
//! vector per matrix, in the order they were enforced. Evaluation multiplies
//! every term by its constraint's Lagrange coefficient and sums the products
//! per variable, both in parallel ([`sum_by_variable`]). Field addition is
//! exact, so the sums equal bellperson's whatever the order.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Marks an input in [`Term::var`]; aux variables have it clear.
const INPUT_BIT: u32 = 1 << 31;

/// One term of one constraint's A, B or C combination (40 bytes).
#[derive(Clone, Copy, Debug)]
struct Term {
    /// Variable index, [`INPUT_BIT`] set for inputs.
    var: u32,
    /// The constraint (row) the term belongs to.
    constraint: u32,
    /// The coefficient.
    coeff: Fr,
}

/// See the module documentation (`setup::assembly`).
#[derive(Debug, Default)]
pub struct KeyAssembly {
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    /// Terms of A, B and C, in enforcement order.
    terms: [Vec<Term>; 3],
}

/// Each variable's QAP polynomials at τ, inputs first, then aux variables.
#[derive(Debug)]
pub struct Evaluated {
    /// Number of inputs (ONE included); the first `num_inputs` entries of
    /// each vector.
    pub num_inputs: usize,
    /// A_i(τ).
    pub at: Vec<Fr>,
    /// B_i(τ).
    pub bt: Vec<Fr>,
    /// C_i(τ).
    pub ct: Vec<Fr>,
}

impl KeyAssembly {
    /// Inputs allocated so far (ONE included).
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Aux variables allocated so far.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Constraints enforced so far.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Linear-combination terms recorded so far (A, B and C together).
    pub fn num_terms(&self) -> usize {
        self.terms.iter().map(Vec::len).sum()
    }

    /// Appends `input_i * 0 = 0` for every input, as bellperson does after
    /// synthesis, so every input has a nonzero A polynomial (the IC query is
    /// dense).
    pub fn enforce_input_constraints(&mut self) {
        for i in 0..self.num_inputs {
            self.enforce(
                || "",
                |lc| lc + Variable::new_unchecked(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
    }

    /// A_i(τ), B_i(τ), C_i(τ) for every variable, given the Lagrange
    /// coefficients `lagrange[j] = L_j(τ)` of the evaluation domain (at least
    /// one per constraint). Consumes the recorded terms.
    pub fn evaluate(self, lagrange: &[Fr]) -> Evaluated {
        assert!(
            lagrange.len() >= self.num_constraints,
            "{} Lagrange coefficients for {} constraints",
            lagrange.len(),
            self.num_constraints
        );
        let num_inputs = self.num_inputs;
        let vars = self.num_inputs + self.num_aux;
        let [a, b, c] = self.terms;
        let sum = |terms: Vec<Term>| sum_by_variable(terms, lagrange, num_inputs, vars);
        let (at, bt, ct) = (sum(a), sum(b), sum(c));
        Evaluated {
            num_inputs,
            at,
            bt,
            ct,
        }
    }
}

/// Variables per bucket of [`sum_by_variable`]: 16 Ki sums (512 KiB) that one
/// task owns, so the additions stay in cache.
const BUCKET: usize = 1 << 14;

/// Σ coeff · L_constraint(τ) per variable (inputs first, then aux), in
/// parallel: each task takes a run of terms, multiplies them by their
/// constraint's Lagrange coefficient and deals the products into buckets of
/// [`BUCKET`] consecutive variables; then each bucket's sums are formed by one
/// task. Field addition is exact, so the order does not matter.
fn sum_by_variable(terms: Vec<Term>, lagrange: &[Fr], num_inputs: usize, vars: usize) -> Vec<Fr> {
    let index = |t: &Term| {
        if t.var & INPUT_BIT != 0 {
            (t.var & !INPUT_BIT) as usize
        } else {
            num_inputs + t.var as usize
        }
    };
    let buckets = vars.div_ceil(BUCKET).max(1);
    let per_task = terms
        .len()
        .div_ceil(4 * rayon::current_num_threads())
        .max(1 << 14);
    let dealt: Vec<Vec<Vec<(u32, Fr)>>> = terms
        .par_chunks(per_task)
        .map(|run| {
            let mut dealt = vec![Vec::new(); buckets];
            for t in run {
                let i = index(t);
                dealt[i / BUCKET].push((i as u32, t.coeff * lagrange[t.constraint as usize]));
            }
            dealt
        })
        .collect();
    drop(terms);
    let mut out = vec![Fr::ZERO; vars];
    out.par_chunks_mut(BUCKET)
        .enumerate()
        .for_each(|(bucket, sums)| {
            let base = bucket * BUCKET;
            for run in &dealt {
                for &(i, v) in &run[bucket] {
                    sums[i as usize - base] += v;
                }
            }
        });
    out
}

/// Variables and constraints are indexed by u32 (aux below 2^31); a circuit
/// beyond that would need a key of hundreds of gigabytes and a domain beyond
/// Fr's 2-adicity, so it is refused as too large.
fn check_index(index: usize, limit: u64) -> Result<u32, SynthesisError> {
    if index as u64 >= limit {
        return Err(SynthesisError::PolynomialDegreeTooLarge);
    }
    Ok(index as u32)
}

impl ConstraintSystem<Fr> for KeyAssembly {
    cuzk_synth::own_root_without_namespaces!(new_from_default);

    fn alloc<F, A, AR>(&mut self, _annotation: A, _value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_index(self.num_aux, INPUT_BIT as u64)?;
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(
        &mut self,
        _annotation: A,
        _value: F,
    ) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_index(self.num_inputs, INPUT_BIT as u64)?;
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        // Constraint indices past u32 cannot be recorded; such a circuit's
        // domain would exceed 2^31 anyway, which `generate_key` refuses from
        // the count kept here.
        let constraint = self.num_constraints as u32;
        self.num_constraints += 1;
        if self.num_constraints > u32::MAX as usize {
            return;
        }
        let lcs = [
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        ];
        for (terms, lc) in self.terms.iter_mut().zip(&lcs) {
            let inputs = lc.iter_inputs().map(|(&i, &coeff)| Term {
                var: i as u32 | INPUT_BIT,
                constraint,
                coeff,
            });
            let aux = lc.iter_aux().map(|(&i, &coeff)| Term {
                var: i as u32,
                constraint,
                coeff,
            });
            terms.extend(inputs.chain(aux));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// The parallel sums against a plain loop, over several buckets, with
    /// inputs, repeated variables, zero coefficients and empty buckets.
    #[test]
    fn parallel_sums_match_a_plain_loop() {
        let mut rng = cuzk_testkit::test_rng("parallel_sums_match_a_plain_loop");
        let (num_inputs, num_aux, constraints) = (7usize, 3 * BUCKET + 123, 40_000usize);
        let lagrange: Vec<Fr> = (0..constraints).map(|_| Fr::random(&mut rng)).collect();
        let terms: Vec<Term> = (0..200_000)
            .map(|k| {
                let var = if k % 50 == 0 {
                    rng.gen_range(0..num_inputs as u32) | INPUT_BIT
                } else if k % 7 == 0 {
                    // Leaves bucket 1 empty: aux below BUCKET or above 2·BUCKET.
                    rng.gen_range(2 * BUCKET as u32..num_aux as u32)
                } else {
                    rng.gen_range(0..BUCKET as u32)
                };
                let coeff = if k % 11 == 0 {
                    Fr::ZERO
                } else {
                    Fr::random(&mut rng)
                };
                Term {
                    var,
                    constraint: rng.gen_range(0..constraints as u32),
                    coeff,
                }
            })
            .collect();
        let vars = num_inputs + num_aux;
        let mut want = vec![Fr::ZERO; vars];
        for t in &terms {
            let i = if t.var & INPUT_BIT != 0 {
                (t.var & !INPUT_BIT) as usize
            } else {
                num_inputs + t.var as usize
            };
            want[i] += t.coeff * lagrange[t.constraint as usize];
        }
        assert_eq!(sum_by_variable(terms, &lagrange, num_inputs, vars), want);
    }
}
