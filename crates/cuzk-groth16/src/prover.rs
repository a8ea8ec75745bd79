//! The per-partition Groth16 prover, on a [`Backend`].
//!
//! A backend computes the five raw MSM sums of one partition ([`MsmSums`]):
//! ΣH (the quotient polynomial against `h`), ΣL (aux against `l`), ΣA (inputs
//! and A-dense aux against `a`), ΣB₁ and ΣB₂ (B-dense inputs and aux against
//! `b_g1` / `b_g2`). The epilogue ([`finish`]) is the same for every backend
//! and reproduces bellperson 0.27's formula term for term, so for the same
//! `r`, `s` the proof is byte-identical to bellperson's:
//!
//! ```text
//! A = α₁ + r·δ₁ + ΣA
//! B = β₂ + s·δ₂ + ΣB₂
//! C = s·ΣA + r·ΣB₁ + rs·δ₁ + s·α₁ + r·β₁ + ΣH + ΣL
//! ```
//!
//! Randomness is drawn as bellperson draws it: for a batch of k partitions,
//! k values of r, then k values of s, each `Fr::random(rng)`.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Projective, Scalar as Fr};
use cuzk_field::{msm, ntt::Domain};
use cuzk_synth::{CircuitShape, Density, Synthesized};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::params::ProvingKey;
use crate::proof::Proof;

/// Why a partition could not be proved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProveError {
    /// The key was made for a different circuit.
    #[error(
        "proving key does not match the circuit: {what}: key has {key}, circuit needs {circuit}"
    )]
    KeyMismatch {
        /// Which count differs.
        what: &'static str,
        /// The key's count.
        key: usize,
        /// The circuit's count.
        circuit: usize,
    },
    /// The key's delta is the identity (a subverted setup).
    #[error("proving key has delta at infinity (subverted setup); refusing to prove")]
    SubvertedKey,
    /// The witness does not satisfy the circuit (the quotient has a remainder).
    #[error("witness does not satisfy the circuit: a·b − c is not divisible by Z")]
    Unsatisfied,
    /// A backend-specific failure (device error, out of memory, ...); the
    /// backend's own error is the source.
    #[error("the {backend} backend failed ({failure})")]
    Backend {
        /// The backend's name.
        backend: &'static str,
        /// What kind of failure, decided by the backend from its own error
        /// type: whether proving the partition elsewhere makes sense.
        failure: BackendFailure,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl ProveError {
    /// A backend failure of kind `failure`, caused by `source`.
    pub fn backend(
        backend: &'static str,
        failure: BackendFailure,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        ProveError::Backend {
            backend,
            failure,
            source: source.into(),
        }
    }

    /// The kind of backend failure, or `None` for an error that any backend
    /// would give (a key that does not fit the circuit, an unsatisfied
    /// witness).
    pub fn backend_failure(&self) -> Option<BackendFailure> {
        match self {
            ProveError::Backend { failure, .. } => Some(*failure),
            _ => None,
        }
    }
}

/// The kinds of backend failure that callers treat differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendFailure {
    /// The device has not the memory this partition needs (now, or with
    /// this budget): the partition itself is fine, and a backend with other
    /// memory (the CPU) can prove it.
    OutOfDeviceMemory,
    /// Anything else: a driver or kernel fault, a refused launch. The device
    /// is suspect; proving elsewhere would hide that.
    Fault,
}

impl std::fmt::Display for BackendFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendFailure::OutOfDeviceMemory => "out of device memory",
            BackendFailure::Fault => "device fault",
        })
    }
}

/// The raw MSM sums of one partition, before randomization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmSums {
    /// ΣH: the quotient polynomial against the key's `h`.
    pub h: G1Projective,
    /// ΣL: the auxiliary assignment against `l`.
    pub l: G1Projective,
    /// ΣA: the inputs and the A-dense auxiliary values against `a`.
    pub a: G1Projective,
    /// ΣB₁: the B-dense inputs and auxiliary values against `b_g1`.
    pub b_g1: G1Projective,
    /// ΣB₂: the same values against `b_g2`.
    pub b_g2: G2Projective,
}

/// Wall time of each named stage of one partition, in the order run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageTimings {
    /// (stage name, wall time), in the order run.
    pub stages: Vec<(&'static str, Duration)>,
}

impl StageTimings {
    /// Runs `f`, recording its wall time under `name`.
    pub fn time<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.stages.push((name, start.elapsed()));
        out
    }

    /// Records a duration measured elsewhere (e.g. with device events).
    pub fn record(&mut self, name: &'static str, d: Duration) {
        self.stages.push((name, d));
    }

    /// Sum of all stages.
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|(_, d)| *d).sum()
    }

    /// The duration of `name`, if recorded (summed if recorded more than once).
    pub fn get(&self, name: &str) -> Option<Duration> {
        let mut hit = false;
        let mut sum = Duration::ZERO;
        for (n, d) in &self.stages {
            if *n == name {
                hit = true;
                sum += *d;
            }
        }
        hit.then_some(sum)
    }
}

/// Something that computes a partition's MSM sums: the CPU here, a GPU elsewhere.
pub trait Backend: Send + Sync {
    /// A short name for reports ("cpu", "cuda:0").
    fn name(&self) -> &'static str;

    /// Computes the five sums. `key` has already been checked against `witness`.
    fn msm_sums(
        &self,
        key: &ProvingKey,
        witness: &Synthesized,
        timings: &mut StageTimings,
    ) -> Result<MsmSums, ProveError>;

    /// [`Backend::msm_sums`] for a partition a device admitted under
    /// `admitted`, the plan its admission reserved room for (a GPU's VRAM
    /// plan, as `Any`): a backend that plans its own memory runs that plan
    /// rather than making another. The default ignores it.
    fn msm_sums_admitted(
        &self,
        key: &ProvingKey,
        witness: &Synthesized,
        timings: &mut StageTimings,
        admitted: &(dyn std::any::Any + Send + Sync),
    ) -> Result<MsmSums, ProveError> {
        let _ = admitted;
        self.msm_sums(key, witness, timings)
    }

    /// Called with the shared key before a partition of it is proved: a
    /// backend that keeps something of the key for as long as the key lives
    /// (a GPU that streams a key too large for its memory pins it in host
    /// memory once) takes its hold here. The default does nothing.
    fn prepare_key(&self, key: &std::sync::Arc<ProvingKey>) -> Result<(), ProveError> {
        let _ = key;
        Ok(())
    }

    /// How the last partition ran, when the backend has more to say than its
    /// name (e.g. the GPU's VRAM plan: resident or streamed key, peak bytes).
    fn last_run(&self) -> Option<String> {
        None
    }

    /// The bytes the last partition moved between host and device (a GPU
    /// streaming its key: the key's chunks, or each member's share of a
    /// batch's pass, its aux values, streamed matrices, parked state both
    /// ways), when the backend moves any; `None` for one that does not (the
    /// CPU) or does not say.
    fn last_crossed(&self) -> Option<u64> {
        None
    }

    /// How many partitions the last [`Backend::msm_sums_batch`] call proved
    /// together, where the backend may prove a batch's members one at a
    /// time instead (1 then); `None`: as many as the call gave it.
    fn last_batch(&self) -> Option<usize> {
        None
    }

    /// How many partitions of `witness`'s circuit one
    /// [`Backend::msm_sums_batch`] call takes with gain: more than one where
    /// the backend shares work between them (a GPU streaming the key passes
    /// each chunk of it once for all). The default, 1: no gain.
    fn batch_room(&self, key: &ProvingKey, witness: &Synthesized) -> usize {
        let _ = (key, witness);
        1
    }

    /// The most [`Backend::batch_room`] says for any circuit: an engine
    /// keeps that many partitions queued for this backend's provers, so a
    /// batch can fill. The default, 1.
    fn most_batch_room(&self) -> usize {
        1
    }

    /// The sums of several partitions of one circuit in one call, each
    /// member's own in `timings[m]`; `admitted`, when given, is the plan the
    /// device's admission reserved room for the whole batch under. The
    /// default proves them one after the other.
    fn msm_sums_batch(
        &self,
        key: &ProvingKey,
        witnesses: &[&Synthesized],
        timings: &mut [StageTimings],
        admitted: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> Result<Vec<MsmSums>, ProveError> {
        let _ = admitted;
        witnesses
            .iter()
            .zip(timings.iter_mut())
            .map(|(w, t)| self.msm_sums(key, w, t))
            .collect()
    }

    /// Host memory a partition of `shape` needs on top of its witness while
    /// this backend proves it, at the peak: what an engine reserves for it
    /// beside the witness. The default is the CPU prover's
    /// ([`cpu_host_working_set`]); a backend that computes in its own memory
    /// says how little it needs on the host.
    fn host_working_set(&self, shape: &CircuitShape) -> u64 {
        cpu_host_working_set(shape)
    }
}

/// The CPU prover's host memory beside the witness, at its peak: the
/// quotient needs a, b and c padded to the domain size n at once (3n `Fr`;
/// afterwards only h, n − 1 `Fr`, is kept); the density-gathered scalars of A
/// and B come after h is freed. The larger of the two; blst's Pippenger
/// scratch (a few MiB) is not counted.
pub fn cpu_host_working_set(shape: &CircuitShape) -> u64 {
    let fr = std::mem::size_of::<Fr>() as u64;
    let n = 1u64 << shape.domain_log2;
    let gathered = (shape.num_inputs + shape.a_aux_density) as u64
        + (shape.b_input_density + shape.b_aux_density) as u64;
    (3 * n).max(gathered) * fr
}

/// The CPU backend: cuzk-field's NTT and split MSM, rayon and blst threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn msm_sums(
        &self,
        key: &ProvingKey,
        w: &Synthesized,
        t: &mut StageTimings,
    ) -> Result<MsmSums, ProveError> {
        // a, b, c padded to the domain: copies of the witness's, or the
        // recording's products when synthesis left them to the prover.
        let h = t.time("h_poly", || {
            quotient_of_padded(w.padded_abc(1 << w.domain_log2()))
        })?;
        let sum_h = t.time("msm_h", || msm::msm_g1(&key.h, &h));
        drop(h);
        // A compact witness's aux values are expanded here, once, for L,
        // A and B (the CPU's MSMs read 32-byte scalars).
        let aux = match w.compact_aux {
            Some(_) => t.time("expand_aux", || w.aux_values()),
            None => w.aux_values(),
        };
        let sum_l = t.time("msm_l", || msm::msm_g1(&key.l, &aux));
        let (a_scalars, b_scalars) = t.time("gather", || dense_ab_scalars_of(w, &aux));
        drop(aux);
        let sum_a = t.time("msm_a", || msm::msm_g1(&key.a, &a_scalars));
        let sum_b_g1 = t.time("msm_b_g1", || msm::msm_g1(&key.b_g1, &b_scalars));
        let sum_b_g2 = t.time("msm_b_g2", || msm::msm_g2(&key.b_g2, &b_scalars));
        Ok(MsmSums {
            h: sum_h,
            l: sum_l,
            a: sum_a,
            b_g1: sum_b_g1,
            b_g2: sum_b_g2,
        })
    }
}

/// A's and B's dense scalars (the a and b_g1/b_g2 queries' order), gathered
/// in parallel (a compact witness's aux values expanded first).
pub fn dense_ab_scalars(w: &Synthesized) -> (Vec<Fr>, Vec<Fr>) {
    dense_ab_scalars_of(w, &w.aux_values())
}

/// [`dense_ab_scalars`] with `w`'s aux values given (`aux`, already
/// expanded when the witness holds them compact).
pub fn dense_ab_scalars_of(w: &Synthesized, aux: &[Fr]) -> (Vec<Fr>, Vec<Fr>) {
    rayon::join(
        || dense_scalars(&w.input_assignment, None, aux, &w.a_aux_density),
        || {
            dense_scalars(
                &w.input_assignment,
                Some(&w.b_input_density),
                aux,
                &w.b_aux_density,
            )
        },
    )
}

/// The scalars of a density-indexed query, in key order: the inputs (all of
/// them, or those set in `input_density`), then the aux values set in `aux_density`.
pub fn dense_scalars(
    inputs: &[Fr],
    input_density: Option<&Density>,
    aux: &[Fr],
    aux_density: &Density,
) -> Vec<Fr> {
    let mut out = Vec::with_capacity(inputs.len() + aux_density.count_ones());
    match input_density {
        None => out.extend_from_slice(inputs),
        Some(d) => out.extend(d.iter_ones().map(|i| inputs[i])),
    }
    let head = out.len();
    out.resize(head + aux_density.count_ones(), Fr::ZERO);
    gather_set_bits(&mut out[head..], aux, aux_density);
    out
}

/// out[k] = values[i_k] for the k-th set bit i_k of `density`, in parallel:
/// blocks of words are counted, their offsets summed, then filled independently.
fn gather_set_bits(out: &mut [Fr], values: &[Fr], density: &Density) {
    const WORDS: usize = 1 << 12;
    let words = density.as_words();
    let counts: Vec<usize> = words
        .par_chunks(WORDS)
        .map(|c| c.iter().map(|w| w.count_ones() as usize).sum())
        .collect();
    let mut parts = Vec::with_capacity(counts.len());
    let mut rest = out;
    for &c in &counts {
        let (part, tail) = rest.split_at_mut(c);
        parts.push(part);
        rest = tail;
    }
    parts
        .into_par_iter()
        .zip(words.par_chunks(WORDS))
        .enumerate()
        .for_each(|(block, (part, chunk))| {
            let mut k = 0;
            for (j, &word) in chunk.iter().enumerate() {
                let mut w = word;
                while w != 0 {
                    let bit = w.trailing_zeros() as usize;
                    part[k] = values[(block * WORDS + j) * 64 + bit];
                    k += 1;
                    w &= w - 1;
                }
            }
        });
}

/// The n − 1 coefficients of h = (a·b − c)/Z for a, b, c given as evaluations
/// on the domain of size n (zero-padded from the constraint count).
pub fn quotient_coefficients(a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<Vec<Fr>, ProveError> {
    let n = Domain::for_len(a.len()).size();
    let pad = |v: &[Fr]| {
        let mut p = Vec::with_capacity(n);
        p.extend_from_slice(v);
        p.resize(n, Fr::ZERO);
        p
    };
    quotient_of_padded([pad(a), pad(b), pad(c)])
}

/// [`quotient_coefficients`] of a, b, c already zero-padded to the domain
/// size (a power of two), transformed in place: no copy of them is made.
pub fn quotient_of_padded([mut pa, mut pb, mut pc]: [Vec<Fr>; 3]) -> Result<Vec<Fr>, ProveError> {
    let domain = Domain::for_len(pa.len());
    let n = domain.size();
    assert!(
        pa.len() == n && pb.len() == n && pc.len() == n,
        "a, b, c padded to the domain size {n}"
    );
    let to_coset = |p: &mut Vec<Fr>| {
        domain.intt(p);
        domain.coset_ntt(p);
    };
    rayon::join(
        || to_coset(&mut pa),
        || rayon::join(|| to_coset(&mut pb), || to_coset(&mut pc)),
    );
    let z_inv = domain.z_on_coset().invert().unwrap();
    pa.par_iter_mut()
        .zip(pb.par_iter().zip(pc.par_iter()))
        .for_each(|(x, (y, z))| *x = (*x * y - z) * z_inv);
    drop((pb, pc));
    domain.coset_intt(&mut pa);
    // deg(a·b − c) ≤ 2n − 2 and Z has degree n, so h has degree ≤ n − 2: the top
    // coefficient is zero exactly when the witness satisfies the circuit.
    let top = pa.pop().unwrap_or(Fr::ZERO);
    if n > 1 && !bool::from(top.is_zero()) {
        return Err(ProveError::Unsatisfied);
    }
    Ok(pa)
}

/// Checks that `key` was made for a circuit of `shape`, naming the first mismatch.
pub fn check_key_shape(key: &ProvingKey, shape: &CircuitShape) -> Result<(), ProveError> {
    let n = 1usize << shape.domain_log2;
    let checks: [(&'static str, usize, usize); 6] = [
        ("public inputs (ic)", key.vk.ic.len(), shape.num_inputs),
        ("h points (domain size − 1)", key.h.len(), n - 1),
        ("l points (aux variables)", key.l.len(), shape.num_aux),
        (
            "a points (inputs + A-aux density)",
            key.a.len(),
            shape.num_inputs + shape.a_aux_density,
        ),
        (
            "b_g1 points (B-input + B-aux density)",
            key.b_g1.len(),
            shape.b_input_density + shape.b_aux_density,
        ),
        (
            "b_g2 points (B-input + B-aux density)",
            key.b_g2.len(),
            shape.b_input_density + shape.b_aux_density,
        ),
    ];
    for (what, key, circuit) in checks {
        if key != circuit {
            return Err(ProveError::KeyMismatch { what, key, circuit });
        }
    }
    Ok(())
}

/// The epilogue: randomizes the sums into a proof (bellperson's formula).
pub fn finish(key: &ProvingKey, sums: &MsmSums, r: Fr, s: Fr) -> Result<Proof, ProveError> {
    let vk = &key.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::SubvertedKey);
    }
    let a = G1Projective::from(vk.alpha_g1) + vk.delta_g1 * r + sums.a;
    let b = G2Projective::from(vk.beta_g2) + vk.delta_g2 * s + sums.b_g2;
    let c = sums.a * s
        + sums.b_g1 * r
        + vk.delta_g1 * (r * s)
        + vk.alpha_g1 * s
        + vk.beta_g1 * r
        + sums.h
        + sums.l;
    let mut affine = [G1Affine::identity(); 2];
    G1Projective::batch_normalize(&[a, c], &mut affine);
    Ok(Proof {
        a: affine[0],
        b: b.to_affine(),
        c: affine[1],
    })
}

/// One proved partition and where its time went.
#[derive(Clone, Debug)]
pub struct Proved {
    /// The proof.
    pub proof: Proof,
    /// The name of the backend that proved it.
    pub backend: &'static str,
    /// Each stage's time (device stages as the backend measures them: CUDA
    /// events on the GPU).
    pub timings: StageTimings,
    /// Wall time of the whole call, shape check to proof (≥ the stages' sum).
    pub wall: Duration,
}

/// Proves one partition with the given randomness.
pub fn prove_with(
    backend: &dyn Backend,
    key: &ProvingKey,
    witness: &Synthesized,
    r: Fr,
    s: Fr,
) -> Result<Proved, ProveError> {
    let start = Instant::now();
    check_key_shape(key, &witness.shape())?;
    let mut timings = StageTimings::default();
    let sums = backend.msm_sums(key, witness, &mut timings)?;
    let proof = timings.time("epilogue", || finish(key, &sums, r, s))?;
    Ok(Proved {
        proof,
        backend: backend.name(),
        timings,
        wall: start.elapsed(),
    })
}

/// Proves a batch of partitions of one circuit, drawing r for every partition,
/// then s for every partition, from `rng` (bellperson's order). Every witness
/// is checked against the key before any proving starts.
pub fn prove_batch(
    backend: &dyn Backend,
    key: &ProvingKey,
    witnesses: &[Synthesized],
    rng: &mut impl RngCore,
) -> Result<Vec<Proved>, ProveError> {
    for w in witnesses {
        check_key_shape(key, &w.shape())?;
    }
    witnesses
        .iter()
        .zip(draw_randomness(witnesses.len(), rng))
        .map(|(w, (r, s))| prove_with(backend, key, w, r, s))
        .collect()
}

/// The `(r, s)` of a batch of `k` partitions in bellperson's order: `k`
/// values of r, then `k` values of s, each `Fr::random(rng)`; so the same
/// seeded RNG gives bellperson's proofs. Every caller that draws r and s
/// draws them here.
pub fn draw_randomness(k: usize, rng: &mut (impl RngCore + ?Sized)) -> Vec<(Fr, Fr)> {
    let r: Vec<Fr> = (0..k).map(|_| Fr::random(&mut *rng)).collect();
    let s: Vec<Fr> = (0..k).map(|_| Fr::random(&mut *rng)).collect();
    r.into_iter().zip(s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotient_of_a_satisfied_system_has_no_remainder() {
        // a·b = c pointwise on the domain ⇒ h exists.
        let a: Vec<Fr> = (1..=6u64).map(Fr::from).collect();
        let b: Vec<Fr> = (7..=12u64).map(Fr::from).collect();
        let c: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let h = quotient_coefficients(&a, &b, &c).unwrap();
        assert_eq!(h.len(), 7);
        let mut bad = c.clone();
        bad[2] += Fr::ONE;
        assert!(matches!(
            quotient_coefficients(&a, &b, &bad),
            Err(ProveError::Unsatisfied)
        ));
    }

    #[test]
    fn dense_scalars_pick_set_bits_in_order() {
        // Sizes around the parallel block (2^12 words of 64 bits) and odd tails.
        for len in [0usize, 1, 63, 64, 65, 1000, (1 << 18) + 77, (1 << 19) + 3] {
            let aux: Vec<Fr> = (0..len as u64).map(Fr::from).collect();
            let density = Density::from_bools((0..len).map(|i| (i * 7 + i / 3) % 5 < 2));
            let inputs = [Fr::ONE, Fr::from(9)];
            let got = dense_scalars(&inputs, None, &aux, &density);
            let mut expect = inputs.to_vec();
            expect.extend((0..len).filter(|&i| density.get(i)).map(|i| aux[i]));
            assert_eq!(got, expect, "len {len}");
            let input_density = Density::from_bools([false, true]);
            let got = dense_scalars(&inputs, Some(&input_density), &aux, &density);
            assert_eq!(got[0], Fr::from(9));
            assert_eq!(&got[1..], &expect[2..]);
        }
    }

    #[test]
    fn timings_sum_and_lookup() {
        let mut t = StageTimings::default();
        t.record("x", Duration::from_millis(2));
        t.record("y", Duration::from_millis(3));
        t.record("x", Duration::from_millis(1));
        assert_eq!(t.total(), Duration::from_millis(6));
        assert_eq!(t.get("x"), Some(Duration::from_millis(3)));
        assert_eq!(t.get("z"), None);
    }
}
