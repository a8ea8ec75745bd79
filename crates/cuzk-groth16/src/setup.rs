//! Key generation for test and demo circuits, byte-identical to bellperson
//! 0.27's `groth16::generate_random_parameters` for the same RNG.
//!
//! The toxic waste is drawn from the RNG in bellperson's order (g1, g2, α, β,
//! γ, δ, τ, with blstrs' own `random`), the circuit is recorded by our
//! [`KeyAssembly`] with the `input_i * 0 = 0` constraints appended, and every
//! variable's QAP polynomials are evaluated at τ through the Lagrange
//! coefficients of the evaluation domain (the inverse NTT of τ's powers, as
//! bellperson does). The key's points are all fixed-base products of g1 or
//! g2; that step is pluggable ([`FixedBase`]): [`CpuFixedBase`] by default,
//! the GPU in `cuzk-gpu`. Affine points are unique, so any correct
//! implementation gives bellperson's bytes.
//!
//! A circuit recorded once (cuzk-synth's `precompiled`: its A, B, C as
//! sparse matrices, in memory or a mapped cache file) gives the same key
//! without a second synthesis: [`generate_from_recording`] evaluates the
//! QAP as the transposed products Aᵀ·L(τ), Bᵀ·L(τ), Cᵀ·L(τ) (`recording`)
//! and shares every later step with [`generate_key_with`].
//!
//! What each section holds (n = domain size, Z(τ) = τⁿ − 1):
//!
//! * h_i = g1 · τ^i · Z(τ)/δ for i < n − 1;
//! * ic_i = g1 · (β·A_i(τ) + α·B_i(τ) + C_i(τ))/γ for every input i;
//! * l_i = the same over δ for every aux variable (all must be nonzero,
//!   else bellperson's `UnconstrainedVariable`);
//! * a, b_g1, b_g2 = g1 · A_i(τ), g1 · B_i(τ), g2 · B_i(τ) for every variable
//!   (inputs first) whose polynomial is nonzero at τ.

mod assembly;
mod fixed_base;
mod recording;

use std::time::Instant;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar as Fr};
use cuzk_field::ntt::{powers, Domain};
use cuzk_synth::precompiled::R1csRef;
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::params::{ProvingKey, VerifyingKey};

pub use assembly::{Evaluated, KeyAssembly};
pub use fixed_base::{
    batch_to_affine, cpu_window_for, signed_digits, windows_for, CpuFixedBase, FixedBase,
    FixedBaseError, KeyCurve, WindowTable,
};

/// Why a key could not be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The circuit failed, or the key would be degenerate (an aux variable in
    /// no constraint: `UnconstrainedVariable`; γ or δ zero:
    /// `UnexpectedIdentity`; more than 2^31 constraints:
    /// `PolynomialDegreeTooLarge`), exactly where bellperson fails.
    #[error("circuit synthesis failed during setup")]
    Synthesis(#[from] SynthesisError),
    /// The fixed-base step failed.
    #[error(transparent)]
    FixedBase(#[from] FixedBaseError),
    /// A recording handed to [`generate_from_recording`] is not well formed
    /// (matrices of another row count, a column past the variables, ...);
    /// the message names the matrix.
    #[error("the recording cannot be used for setup: {0}")]
    Recording(String),
}

/// The toxic waste, in the order bellperson draws it.
struct ToxicWaste {
    g1: G1Projective,
    g2: G2Projective,
    alpha: Fr,
    beta: Fr,
    gamma: Fr,
    delta: Fr,
    tau: Fr,
}

impl ToxicWaste {
    fn draw(rng: &mut impl RngCore) -> Self {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Fr::random(&mut *rng),
            beta: Fr::random(&mut *rng),
            gamma: Fr::random(&mut *rng),
            delta: Fr::random(&mut *rng),
            tau: Fr::random(&mut *rng),
        }
    }
}

/// Generates a proving key for `circuit` with toxic waste drawn from `rng`,
/// on the CPU: the same bytes as bellperson 0.27's generator.
pub fn generate_key<C: Circuit<Fr>>(
    circuit: C,
    rng: &mut impl RngCore,
) -> Result<ProvingKey, SetupError> {
    generate_key_with(circuit, rng, &CpuFixedBase)
}

/// [`generate_key`] with the fixed-base multiplications done by `fixed_base`.
pub fn generate_key_with<C: Circuit<Fr>, F: FixedBase + ?Sized>(
    circuit: C,
    rng: &mut impl RngCore,
    fixed_base: &F,
) -> Result<ProvingKey, SetupError> {
    let w = ToxicWaste::draw(rng);

    let start = Instant::now();
    let mut assembly = KeyAssembly::default();
    assembly.alloc_input(|| "", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut assembly)?;
    assembly.enforce_input_constraints();
    tracing::info!(
        constraints = assembly.num_constraints(),
        num_inputs = assembly.num_inputs(),
        num_aux = assembly.num_aux(),
        terms = assembly.num_terms(),
        elapsed = ?start.elapsed(),
        "setup: circuit recorded"
    );
    let constraints = assembly.num_constraints();
    key_from_qap(
        w,
        constraints,
        |lagrange| assembly.evaluate(lagrange),
        fixed_base,
    )
}

/// A proving key from a pre-compiled circuit's recording (cuzk-synth's
/// [`record`](cuzk_synth::precompiled::record), or a cache file mapped by
/// [`MappedR1cs`](cuzk_synth::precompiled::MappedR1cs)) instead of a
/// synthesis: the same bytes as [`generate_key_with`] on the circuit that
/// was recorded, for the same RNG, and the same refusals (an aux variable
/// in no constraint is `UnconstrainedVariable`).
///
/// Each variable's A, B and C at τ is the transposed product of the
/// recorded matrix with the Lagrange coefficients L(τ), on every core
/// (`recording`'s passes: scratch bounded, ~12 bytes a term per pass);
/// everything after that — the query scalars, the fixed-base products, the
/// key's layout — is [`generate_key_with`]'s own code. The fixed-base step,
/// by far the heaviest, runs where `fixed_base` does: pass
/// `cuzk_gpu::keygen::GpuFixedBase` to have it on the GPU where there is
/// one. A recording that is not well formed (possible only for an
/// `R1csRef` assembled by hand) is refused as [`SetupError::Recording`].
pub fn generate_from_recording<F: FixedBase + ?Sized>(
    recording: R1csRef<'_>,
    rng: &mut impl RngCore,
    fixed_base: &F,
) -> Result<ProvingKey, SetupError> {
    let w = ToxicWaste::draw(rng);
    recording::check(&recording).map_err(SetupError::Recording)?;
    let constraints = recording.shape.num_constraints;
    key_from_qap(
        w,
        constraints,
        |lagrange| recording::evaluate(&recording, lagrange),
        fixed_base,
    )
}

/// Everything after the circuit: the Lagrange coefficients at τ, the QAP
/// evaluated by `evaluate` on them, the query scalars, the fixed-base
/// products and the key. Both entry points end here, so a key from a
/// recording differs from one from synthesis only in `evaluate`.
fn key_from_qap<F: FixedBase + ?Sized>(
    w: ToxicWaste,
    constraints: usize,
    evaluate: impl FnOnce(&[Fr]) -> Evaluated,
    fixed_base: &F,
) -> Result<ProvingKey, SetupError> {
    if constraints > 1 << (Fr::S - 1) {
        return Err(SynthesisError::PolynomialDegreeTooLarge.into());
    }
    let gamma_inv: Fr = Option::from(w.gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv: Fr = Option::from(w.delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;

    // τ^i for the whole domain; h uses all but the last, then an inverse NTT
    // turns them into the Lagrange coefficients L_j(τ).
    let start = Instant::now();
    let domain = Domain::for_len(constraints);
    let n = domain.size();
    let mut tau_powers = powers(w.tau, n);
    let z_over_delta = (w.tau.pow_vartime([n as u64]) - Fr::ONE) * delta_inv;
    let h_scalars: Vec<Fr> = tau_powers[..n - 1]
        .par_iter()
        .map(|p| *p * z_over_delta)
        .collect();
    domain.intt(&mut tau_powers);
    let lagrange = tau_powers;
    let e = evaluate(&lagrange);
    drop(lagrange);
    let s = QueryScalars::new(&e, w.alpha, w.beta, gamma_inv, delta_inv);
    drop(e);
    tracing::info!(elapsed = ?start.elapsed(), "setup: QAP evaluated at tau");

    let start = Instant::now();
    let [h, ic, l, a, b_g1]: [Vec<G1Affine>; 5] = fixed_base
        .mul_g1(w.g1, &[&h_scalars, &s.ic, &s.l, &s.a, &s.b])?
        .try_into()
        .map_err(|v: Vec<_>| fixed_base_count_error(fixed_base, "G1", 5, v.len()))?;
    drop(h_scalars);
    tracing::info!(elapsed = ?start.elapsed(), backend = fixed_base.name(), "setup: G1 points");
    let start = Instant::now();
    let [b_g2] = fixed_base
        .mul_g2(w.g2, &[&s.b])?
        .try_into()
        .map_err(|v: Vec<_>| fixed_base_count_error(fixed_base, "G2", 1, v.len()))?;
    tracing::info!(elapsed = ?start.elapsed(), backend = fixed_base.name(), "setup: G2 points");

    if l.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable.into());
    }
    let not_identity = |p: &G1Affine| !bool::from(p.is_identity());
    let g1 = w.g1.to_affine();
    let g2 = w.g2.to_affine();
    let vk = VerifyingKey {
        alpha_g1: (g1 * w.alpha).to_affine(),
        beta_g1: (g1 * w.beta).to_affine(),
        beta_g2: (g2 * w.beta).to_affine(),
        gamma_g2: (g2 * w.gamma).to_affine(),
        delta_g1: (g1 * w.delta).to_affine(),
        delta_g2: (g2 * w.delta).to_affine(),
        ic,
    };
    Ok(ProvingKey {
        vk,
        h,
        l,
        // Only nonzero scalars were multiplied; the filter keeps bellperson's
        // rule (drop points at infinity) even for a degenerate g1 or g2.
        a: a.into_iter().filter(not_identity).collect(),
        b_g1: b_g1.into_iter().filter(not_identity).collect(),
        b_g2: b_g2
            .into_iter()
            .filter(|p| !bool::from(p.is_identity()))
            .collect(),
    })
}

fn fixed_base_count_error<F: FixedBase + ?Sized>(
    fixed_base: &F,
    group: &str,
    expected: usize,
    got: usize,
) -> FixedBaseError {
    FixedBaseError {
        backend: fixed_base.name(),
        source: format!("{group}: returned {got} batches for {expected}").into(),
    }
}

/// The scalars of the variable-indexed queries.
struct QueryScalars {
    /// (β·A + α·B + C)/γ per input.
    ic: Vec<Fr>,
    /// (β·A + α·B + C)/δ per aux variable.
    l: Vec<Fr>,
    /// The nonzero A_i(τ), inputs then aux, in order.
    a: Vec<Fr>,
    /// The nonzero B_i(τ), inputs then aux, in order (for b_g1 and b_g2).
    b: Vec<Fr>,
}

impl QueryScalars {
    fn new(e: &Evaluated, alpha: Fr, beta: Fr, gamma_inv: Fr, delta_inv: Fr) -> Self {
        let ext = |i: usize, inv: Fr| (e.at[i] * beta + e.bt[i] * alpha + e.ct[i]) * inv;
        let ni = e.num_inputs;
        let vars = e.at.len();
        let nonzero = |v: &Vec<Fr>| -> Vec<Fr> {
            v.par_iter()
                .filter(|x| !bool::from(x.is_zero()))
                .copied()
                .collect()
        };
        QueryScalars {
            ic: (0..ni).into_par_iter().map(|i| ext(i, gamma_inv)).collect(),
            l: (ni..vars)
                .into_par_iter()
                .map(|i| ext(i, delta_inv))
                .collect(),
            a: nonzero(&e.at),
            b: nonzero(&e.bt),
        }
    }
}
