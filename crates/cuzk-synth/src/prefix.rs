//! Pieces that share a prefix: circuits whose synthesis starts with the
//! same allocations and constraints (a preamble) and then does independent
//! work, each piece's work depending only on its own data and the
//! preamble's values. Filecoin's PoRep partition is one: a circuit built
//! with one challenge synthesizes the shared preamble and then exactly what
//! that challenge synthesizes inside the full circuit.
//!
//! Each piece is synthesized on its own system through a [`PrefixProbe`],
//! which notes the system's sizes when the root namespace that begins the
//! piece's own work is entered; the pieces are then joined in order with
//! [`PrefixJoin::join_past`] ([`synthesize_with_shared_prefix`] does both on
//! rayon), giving what one sequential synthesis of the preamble followed by
//! every piece's work gives, bit for bit.

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

/// The sizes of a system at one moment: inputs (ONE included), aux
/// variables and constraints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prefix {
    /// Inputs, ONE included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// Constraints.
    pub constraints: usize,
}

impl Prefix {
    /// Whether every count of `self` is at most `other`'s.
    pub fn fits_in(&self, other: &Prefix) -> bool {
        self.inputs <= other.inputs
            && self.aux <= other.aux
            && self.constraints <= other.constraints
    }
}

/// A system that can take another one's work past a shared prefix.
pub trait PrefixJoin: ConstraintSystem<Fr> {
    /// The sizes so far.
    fn sizes(&self) -> Prefix;

    /// Reserves room for `additional` more inputs, aux variables and
    /// constraints.
    fn reserve(&mut self, additional: Prefix);

    /// Appends what `piece` holds past `prefix`: `piece` and `self` both
    /// began with the same `prefix` (same values, checked), and the part of
    /// `piece` after it is independent of anything `self` holds past it.
    /// Inputs, aux variables and constraints past the prefix are appended;
    /// density bits of prefix variables are OR-ed into ours (the piece's
    /// constraints may touch preamble variables), the rest appended.
    fn join_past(&mut self, piece: Self, prefix: Prefix) -> Result<(), PieceFault>;
}

/// What went wrong with one piece.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PieceFault {
    /// The piece's synthesis failed.
    #[error("its synthesis failed")]
    Synthesis(#[source] SynthesisError),
    /// The namespace that marks the end of the prefix was never entered.
    #[error("the root namespace {0:?} was never entered, so the shared prefix is unknown")]
    NoMark(&'static str),
    /// There was nothing to synthesize.
    #[error("no pieces to synthesize")]
    NoPieces,
    /// The prefix is longer than a system holds.
    #[error("a shared prefix of {prefix:?} is longer than a system of {sizes:?}")]
    TooShort {
        /// The prefix.
        prefix: Prefix,
        /// The system's sizes.
        sizes: Prefix,
    },
    /// The piece's prefix has other sizes than the first piece's.
    #[error("its shared prefix is {found:?}, the first piece's {expected:?}")]
    PrefixSizes {
        /// The first piece's prefix.
        expected: Prefix,
        /// This piece's.
        found: Prefix,
    },
    /// The piece's prefix holds other values than the first piece's.
    #[error("its shared prefix's {0} differ from the first piece's")]
    PrefixValues(&'static str),
}

/// One piece's fault, with the piece's index.
#[derive(Debug, thiserror::Error)]
#[error("piece {piece} of a prefix-sharing synthesis: {fault}")]
#[non_exhaustive]
pub struct PieceError {
    /// Index of the piece in the order given.
    pub piece: usize,
    /// What went wrong.
    pub fault: PieceFault,
}

/// Wraps a system and notes its sizes when the root namespace named `mark`
/// is first entered: the shared prefix of a piece whose own work begins
/// there. Everything else goes to the wrapped system unchanged.
///
/// Only root-level namespaces are compared (a name is formatted only
/// there, until the mark is found), so the probe costs next to nothing.
#[derive(Debug)]
pub struct PrefixProbe<CS> {
    inner: CS,
    mark: &'static str,
    depth: usize,
    found: Option<Prefix>,
}

impl<CS: PrefixJoin> PrefixProbe<CS> {
    /// Probes `inner` for the root namespace `mark`.
    pub fn new(inner: CS, mark: &'static str) -> Self {
        Self {
            inner,
            mark,
            depth: 0,
            found: None,
        }
    }

    /// The wrapped system and the prefix found, if the mark was entered.
    pub fn into_parts(self) -> (CS, Option<Prefix>) {
        (self.inner, self.found)
    }
}

impl<CS: PrefixJoin> ConstraintSystem<Fr> for PrefixProbe<CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inner.alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inner.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.inner.enforce(annotation, a, b, c)
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 && self.found.is_none() {
            let name: String = name_fn().into();
            if name == self.mark {
                self.found = Some(self.inner.sizes());
            }
            self.inner.get_root().push_namespace(move || name);
        } else {
            self.inner.get_root().push_namespace(name_fn);
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.inner.get_root().pop_namespace();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Synthesizes one piece on a fresh `CS` (ONE allocated first, as
/// bellperson's prover does) and returns it with its shared prefix: the
/// sizes when the root namespace `mark` was entered.
pub fn synthesize_piece<CS, C>(circuit: C, mark: &'static str) -> Result<(CS, Prefix), PieceFault>
where
    CS: PrefixJoin,
    C: Circuit<Fr>,
{
    let mut probe = PrefixProbe::new(CS::new(), mark);
    probe
        .alloc_input(|| "one", || Ok(Fr::ONE))
        .map_err(PieceFault::Synthesis)?;
    circuit
        .synthesize(&mut probe)
        .map_err(PieceFault::Synthesis)?;
    match probe.into_parts() {
        (cs, Some(prefix)) => Ok((cs, prefix)),
        (_, None) => Err(PieceFault::NoMark(mark)),
    }
}

/// Synthesizes `pieces` on rayon tasks with `synth` (typically
/// [`synthesize_piece`]) and joins them in order: the first piece whole,
/// every later one past the shared prefix, each as soon as it and every
/// piece before it are done, and dropped once joined. Every piece must
/// report the first piece's prefix, with the same values in it.
///
/// The result is the system the preamble followed by every piece's own work
/// would be after one sequential synthesis (ONE first; `finish` it as
/// usual). The first fault in piece order is returned.
pub fn synthesize_with_shared_prefix<CS, P, F>(pieces: Vec<P>, synth: F) -> Result<CS, PieceError>
where
    CS: PrefixJoin,
    P: Send,
    F: Fn(P) -> Result<(CS, Prefix), PieceFault> + Sync,
{
    let count = pieces.len();
    let mut root: Option<(CS, Prefix)> = None;
    let mut outcome: Result<(), PieceError> = Ok(());
    crate::parallel::in_order(pieces, synth, |piece, done| {
        if outcome.is_err() {
            return;
        }
        let fail = |fault| Err(PieceError { piece, fault });
        outcome = match (done, root.as_mut()) {
            (Err(fault), _) => fail(fault),
            (Ok((mut first, prefix)), None) => {
                let own = first.sizes();
                if !prefix.fits_in(&own) {
                    fail(PieceFault::TooShort { prefix, sizes: own })
                } else {
                    // Room for the other pieces, if they are as big as the
                    // first: the vectors then never grow by doubling.
                    let rest = count.saturating_sub(1);
                    first.reserve(Prefix {
                        inputs: (own.inputs - prefix.inputs) * rest,
                        aux: (own.aux - prefix.aux) * rest,
                        constraints: (own.constraints - prefix.constraints) * rest,
                    });
                    root = Some((first, prefix));
                    Ok(())
                }
            }
            (Ok((part, found)), Some((root, expected))) => {
                if found != *expected {
                    fail(PieceFault::PrefixSizes {
                        expected: *expected,
                        found,
                    })
                } else {
                    root.join_past(part, found).or_else(fail)
                }
            }
        };
    });
    outcome?;
    root.map(|(cs, _)| cs).ok_or(PieceError {
        piece: 0,
        fault: PieceFault::NoPieces,
    })
}

/// Checks the sizes `join_past` needs.
pub(crate) fn check_fits(prefix: Prefix, root: Prefix, piece: Prefix) -> Result<(), PieceFault> {
    for sizes in [root, piece] {
        if !prefix.fits_in(&sizes) {
            return Err(PieceFault::TooShort { prefix, sizes });
        }
    }
    Ok(())
}
