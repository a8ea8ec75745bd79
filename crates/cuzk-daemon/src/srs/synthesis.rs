//! How each key's circuit is synthesized (`proving.synthesis`): chosen
//! once, when the key is loaded, beside it. Pre-compiled, the circuit's
//! recording (`cuzk precompile`, `v28-<circuit>.r1cs` beside the key) is
//! opened and checked against the key; the jobs proved with that key then
//! synthesize only their witness, and a, b, c are evaluated by the prover
//! from the recording (on a GPU from its matrices in VRAM).

use std::fmt;
use std::str::FromStr;

use cuzk_filecoin::precompile::{default_cache_path, precompile_args};
use cuzk_filecoin::{Circuit, CircuitSynthesis, ParamsDir, PorepSynthesis, SynthesisMode};
use cuzk_groth16::ProvingKey;

/// `proving.synthesis`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SynthesisChoice {
    /// Pre-compiled when the key's recording lies beside it, else full.
    #[default]
    Auto,
    /// Pre-compiled; a key without a usable recording is logged as a
    /// warning (the file and why) and its jobs synthesize in full.
    Precompiled,
    /// Full synthesis (a PoRep partition's challenges in parallel).
    Full,
}

impl SynthesisChoice {
    const ALL: [(&'static str, SynthesisChoice); 3] = [
        ("auto", SynthesisChoice::Auto),
        ("precompiled", SynthesisChoice::Precompiled),
        ("full", SynthesisChoice::Full),
    ];
}

impl FromStr for SynthesisChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, c)| *c)
            .ok_or_else(|| format!("{s:?}: expected \"auto\", \"precompiled\" or \"full\""))
    }
}

impl fmt::Display for SynthesisChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Self::ALL.iter().find(|(_, c)| c == self).map(|(n, _)| *n);
        f.write_str(name.expect("every choice is named"))
    }
}

/// How the jobs of one key synthesize.
#[derive(Clone, Debug)]
pub(crate) enum KeySynthesis {
    /// A PoRep key's.
    Porep(PorepSynthesis),
    /// A PoSt or update key's.
    Circuit(CircuitSynthesis),
}

impl KeySynthesis {
    /// Full synthesis for `circuit`.
    fn full(circuit: Circuit) -> Self {
        match circuit {
            Circuit::Porep(_) => KeySynthesis::Porep(PorepSynthesis::Parallel),
            _ => KeySynthesis::Circuit(CircuitSynthesis::Full),
        }
    }

    /// What `choice` gives for `circuit` and its `key` in `params` (the
    /// recording opened and checked here; the outcome is logged).
    pub(crate) fn choose(
        choice: SynthesisChoice,
        circuit: Circuit,
        params: &ParamsDir,
        key: &ProvingKey,
        circuit_id: &str,
    ) -> Self {
        let path = default_cache_path(params, circuit);
        let present = path.as_ref().is_ok_and(|p| p.is_file());
        let wanted = match choice {
            SynthesisChoice::Full => false,
            SynthesisChoice::Precompiled => true,
            SynthesisChoice::Auto => present,
        };
        if !wanted {
            if choice == SynthesisChoice::Auto {
                tracing::info!(
                    circuit_id,
                    recording = %path.as_ref().map_or_else(|e| e.to_string(), |p| p.display().to_string()),
                    "no recording beside the key: its jobs synthesize in full (`cuzk precompile {}` makes it)",
                    precompile_args(circuit)
                );
            }
            return Self::full(circuit);
        }
        // Both fall back to full synthesis on a recording they cannot use,
        // logging the file and why.
        let chosen = match circuit {
            Circuit::Porep(proof_type) => KeySynthesis::Porep(
                PorepSynthesis::for_mode(
                    SynthesisMode::Precompiled,
                    proof_type,
                    params,
                    None,
                    Some(key),
                )
                .0,
            ),
            _ => KeySynthesis::Circuit(
                CircuitSynthesis::precompiled(circuit, params, None, Some(key)).0,
            ),
        };
        tracing::info!(
            circuit_id,
            synthesis = chosen.name(),
            "the key's jobs synthesize"
        );
        chosen
    }

    /// "precompiled", "parallel" (PoRep, full) or "full".
    pub(crate) fn name(&self) -> &'static str {
        match self {
            KeySynthesis::Porep(s) => s.mode().name(),
            KeySynthesis::Circuit(s) => s.name(),
        }
    }

    /// The PoRep synthesis (the default for a key of another kind, which
    /// no PoRep job is given).
    pub(crate) fn porep(&self) -> PorepSynthesis {
        match self {
            KeySynthesis::Porep(s) => s.clone(),
            KeySynthesis::Circuit(_) => PorepSynthesis::default(),
        }
    }

    /// The PoSt or update synthesis (full for a PoRep key).
    pub(crate) fn circuit(&self) -> CircuitSynthesis {
        match self {
            KeySynthesis::Circuit(s) => s.clone(),
            KeySynthesis::Porep(_) => CircuitSynthesis::Full,
        }
    }
}
