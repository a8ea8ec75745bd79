//! Whether a job can ever run: its key, HOT, and one of its partitions
//! must fit the engine's host budget together, since a HOT key's bytes are
//! lent out of that budget and a partition reserves its whole footprint
//! before synthesis. A job for which even that cannot fit (every other key
//! evicted, nothing else running) would wait in the engine's intake
//! forever; it is refused at `SubmitProof` instead, and a configuration
//! that preloads such a key is refused at start.
//!
//! Both sizes come from the key file's section counts alone
//! (`cuzk_groth16::KeySummary`, no point decoded): the parsed key's bytes
//! as `load` counts them, and the partition's footprint from the engine's
//! own estimate ([`Provers::footprint`], what its admission reserves) on
//! the shape the key proves.

use cuzk_filecoin::{Circuit, PostKind};
use cuzk_groth16::params::KeySummary;
use cuzk_pipeline::{HostReserve, PartitionFootprint, Priority, Provers};
use cuzk_sched::HostLender;
use cuzk_synth::CircuitShape;

use super::{circuit_id, circuit_of, circuits, SrsManager};
use crate::error::SrsError;

/// The engine whose host budget HOT keys share with partitions.
#[derive(Debug, Clone)]
pub(crate) struct EngineShare {
    /// Lends the keys' bytes out of the engine's budget.
    pub lender: HostLender,
    /// The engine's whole host budget (`proving.engine_memory_budget`).
    pub budget: u64,
    /// Its reserve for the most urgent classes (`proving.critical_reserve`).
    pub reserve: HostReserve,
    /// Its prover backends: what one partition reserves beside its witness.
    pub provers: Provers,
}

impl EngineShare {
    /// The part of the budget partitions of `class` may use.
    pub(crate) fn budget_for(&self, class: Priority) -> u64 {
        if self.reserve.admits(class) {
            self.budget
        } else {
            self.budget - self.reserve.bytes.min(self.budget)
        }
    }
}

/// What a circuit's jobs need of the host, from its key file's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyNeeds {
    /// The key file's length (what a load borrows until the key is parsed).
    pub file_bytes: u64,
    /// The parsed key's bytes (what a HOT key holds).
    pub key_bytes: u64,
    /// One partition's reservation, as the engine estimates it.
    pub partition: PartitionFootprint,
}

/// Bytes of a parsed key with these section counts (as
/// `load::parsed_bytes` counts a key in memory).
pub(crate) fn key_bytes(s: &KeySummary) -> u64 {
    let g1 = std::mem::size_of::<blstrs::G1Affine>() as u64;
    let g2 = std::mem::size_of::<blstrs::G2Affine>() as u64;
    (s.ic.count + s.h.count + s.l.count + s.a.count + s.b_g1.count) * g1 + s.b_g2.count * g2
}

/// The shape of the partitions a key with these counts proves: what
/// cuzk-filecoin's sources derive from the parsed key (every kind's
/// source does the same), here from the counts.
pub(crate) fn shape_of(s: &KeySummary) -> CircuitShape {
    let num_inputs = s.ic.count as usize;
    let domain = (s.h.count as usize + 1).next_power_of_two();
    let b_input_density = 1;
    CircuitShape {
        num_constraints: domain,
        num_inputs,
        num_aux: s.l.count as usize,
        a_aux_density: (s.a.count as usize).saturating_sub(num_inputs),
        b_input_density,
        b_aux_density: (s.b_g1.count as usize).saturating_sub(b_input_density),
        domain_log2: domain.trailing_zeros(),
    }
}

/// The engine class a circuit's jobs get when the request leaves the
/// priority unspecified (the kinds' defaults).
fn default_class(c: Circuit) -> Priority {
    match c {
        Circuit::Post(p) if p.kind() == PostKind::Winning => Priority::Critical,
        Circuit::Post(_) => Priority::High,
        _ => Priority::Normal,
    }
}

impl SrsManager {
    /// What `circuit`'s jobs need, from its key file's counts; `None` when
    /// the file cannot be read (absent or broken: loading it says why) or
    /// there is no engine to size partitions for.
    pub(crate) fn needs(&self, circuit: Circuit) -> Option<KeyNeeds> {
        let share = self.engine.as_ref()?;
        let path = self.params.params_path(circuit).ok()?;
        let summary = KeySummary::from_path(&path).ok()?;
        Some(KeyNeeds {
            file_bytes: summary.file_len,
            key_bytes: key_bytes(&summary),
            partition: share.provers.footprint(&shape_of(&summary)),
        })
    }

    /// The most HOT keys may hold: `srs.host_budget`, and what the engine
    /// can lend.
    pub(crate) fn keys_at_most(&self) -> u64 {
        self.engine
            .as_ref()
            .map_or(self.budget, |e| self.budget.min(e.lender.lendable()))
    }

    /// Refuses a job of `circuit` in `class` that could never be admitted:
    /// its key larger than keys may hold, or its key and one partition
    /// together larger than the part of the engine's budget partitions of
    /// `class` may use. A key whose file cannot be read passes (its load
    /// fails the job with the reason).
    pub(crate) fn check_fits(&self, circuit: Circuit, class: Priority) -> Result<(), SrsError> {
        let (Some(share), Some(needs)) = (self.engine.as_ref(), self.needs(circuit)) else {
            return Ok(());
        };
        let id = circuit_id(circuit);
        let keys = self.keys_at_most();
        if needs.file_bytes > keys {
            return Err(SrsError::TooLarge {
                circuit_id: id.into(),
                needed: needs.file_bytes,
                budget: keys,
            });
        }
        let budget = share.budget_for(class);
        if needs.key_bytes + needs.partition.total() > budget {
            return Err(SrsError::NeverFits {
                circuit_id: id.into(),
                key_bytes: needs.key_bytes,
                partition_bytes: needs.partition.total(),
                witness: needs.partition.witness,
                working_set: needs.partition.working_set,
                budget,
                class: class.as_str(),
            });
        }
        Ok(())
    }

    /// [`SrsManager::check_fits`] for a circuit id, in its kind's default
    /// class (for `PreloadSRS` and `srs.preload`).
    pub(crate) fn check_id_fits(&self, circuit_id: &str) -> Result<(), SrsError> {
        let circuit = circuit_of(circuit_id)?;
        self.check_fits(circuit, default_class(circuit))
    }

    /// At start: every key present in the parameter cache whose jobs could
    /// never run under this configuration, with the reason (each is logged
    /// as an error: its jobs will be refused).
    pub(crate) fn never_fitting(&self) -> Vec<(&'static str, SrsError)> {
        circuits()
            .iter()
            .filter(|(id, _)| self.paths.get(id).is_some_and(|p| p.exists()))
            .filter_map(|&(id, c)| Some((id, self.check_fits(c, default_class(c)).err()?)))
            .collect()
    }
}
