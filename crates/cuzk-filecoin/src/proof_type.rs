//! The registered PoRep proof types: what each proves, how many partitions
//! it has, and the names of its parameter files.

use filecoin_proofs::PoRepConfig;
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof};
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};

use crate::Error;

/// Calls `$f::<Tree>(args)` with the Merkle tree shape of a sector size, for
/// PoRep, PoSt and update circuits alike (every registered shape's tree
/// hasher is the update's `TreeRHasher` too). Only the five sector sizes that
/// registered proof types use are listed; anything else is an error, never a
/// panic.
macro_rules! with_sector_shape {
    ($size:expr, $f:ident $(, $arg:expr)* $(,)?) => {
        match $size {
            s if s == filecoin_proofs::SECTOR_SIZE_2_KIB => {
                $f::<filecoin_proofs::SectorShape2KiB>($($arg),*)
            }
            s if s == filecoin_proofs::SECTOR_SIZE_8_MIB => {
                $f::<filecoin_proofs::SectorShape8MiB>($($arg),*)
            }
            s if s == filecoin_proofs::SECTOR_SIZE_512_MIB => {
                $f::<filecoin_proofs::SectorShape512MiB>($($arg),*)
            }
            s if s == filecoin_proofs::SECTOR_SIZE_32_GIB => {
                $f::<filecoin_proofs::SectorShape32GiB>($($arg),*)
            }
            s if s == filecoin_proofs::SECTOR_SIZE_64_GIB => {
                $f::<filecoin_proofs::SectorShape64GiB>($($arg),*)
            }
            other => Err($crate::Error::Unsupported {
                proof_type: format!("sector size {other}"),
                why: "no registered proof type has this sector size".into(),
            }),
        }
    };
}
pub(crate) use with_sector_shape;

/// A registered PoRep proof type that this crate proves: every
/// `RegisteredSealProof`. The non-interactive ones (`…_Feat_NonInteractivePoRep`)
/// have more partitions of the same circuit (13 below 32 GiB, 126 at 32 and
/// 64 GiB) and their C2 output is the SnarkPack aggregate of the partition
/// proofs (`crate::aggregate`), not the proofs themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProofType(RegisteredSealProof);

impl ProofType {
    /// All registered PoRep proof types, supported or not, in registry order.
    pub const ALL: [RegisteredSealProof; 20] = {
        use RegisteredSealProof::*;
        [
            StackedDrg2KiBV1,
            StackedDrg8MiBV1,
            StackedDrg512MiBV1,
            StackedDrg32GiBV1,
            StackedDrg64GiBV1,
            StackedDrg2KiBV1_1,
            StackedDrg8MiBV1_1,
            StackedDrg512MiBV1_1,
            StackedDrg32GiBV1_1,
            StackedDrg64GiBV1_1,
            StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
            StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
            StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
            StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
            StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
            StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
            StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
            StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
            StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
            StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
        ]
    };

    /// The proof type (every registered one is supported).
    pub fn new(proof: RegisteredSealProof) -> Result<Self, Error> {
        Ok(ProofType(proof))
    }

    /// Non-interactive PoRep (FIP-0092): challenges drawn from comm_r, not
    /// from a chain seed; the C2 output is a SnarkPack aggregate.
    pub fn is_non_interactive(self) -> bool {
        self.0.feature_enabled(ApiFeature::NonInteractivePoRep)
    }

    /// The proof type of the same sector size and circuit with the other
    /// interaction: the V1_1 interactive type for a non-interactive one,
    /// the non-interactive type for any interactive one.
    pub fn other_interaction(self) -> ProofType {
        let want_ni = !self.is_non_interactive();
        let proof = ProofType::ALL
            .into_iter()
            .find(|p| {
                p.sector_size() == self.0.sector_size()
                    && p.feature_enabled(ApiFeature::NonInteractivePoRep) == want_ni
                    && (want_ni || format!("{p:?}").ends_with("V1_1"))
            })
            .expect("every sector size has a V1_1 and a non-interactive type");
        ProofType(proof)
    }

    /// Vanilla proofs (challenges) per partition, as filecoin-proofs
    /// derives it: the minimum challenge count divided by the partitions,
    /// rounded up (2 below 32 GiB, 18 at 32 and 64 GiB, both kinds).
    pub fn challenges_per_partition(self) -> usize {
        let config = self.config();
        let partitions = usize::from(config.partitions);
        config.minimum_challenges().div_ceil(partitions)
    }

    /// Looks a proof type up by its registry name (`StackedDrg2KiBV1_1`).
    pub fn from_name(name: &str) -> Result<Self, Error> {
        let proof = Self::ALL
            .into_iter()
            .find(|p| format!("{p:?}") == name)
            .ok_or_else(|| Error::Unsupported {
                proof_type: name.to_string(),
                why: "not a registered PoRep proof type".into(),
            })?;
        Self::new(proof)
    }

    /// The registered proof.
    pub fn registered(self) -> RegisteredSealProof {
        self.0
    }

    /// Its registry name.
    pub fn name(self) -> String {
        format!("{:?}", self.0)
    }

    /// The current (V1_1) interactive proof type of `sector_size`-byte
    /// sectors: what a new sector of that size is sealed with.
    pub fn for_sector_size(sector_size: u64) -> Result<Self, Error> {
        let proof = ProofType::ALL
            .into_iter()
            .find(|p| {
                u64::from(p.sector_size()) == sector_size && format!("{p:?}").ends_with("V1_1")
            })
            .ok_or_else(|| Error::Unsupported {
                proof_type: format!("{sector_size}-byte sectors"),
                why: "no PoRep proof type has that sector size (sizes: 2KiB, 8MiB, 512MiB, 32GiB, \
                      64GiB)"
                    .into(),
            })?;
        ProofType::new(proof)
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        u64::from(self.0.sector_size())
    }

    /// Partition circuits, hence 192-byte proofs, per sector.
    pub fn partitions(self) -> usize {
        usize::from(self.0.partitions())
    }

    /// filecoin-proofs' configuration for it.
    pub fn config(self) -> PoRepConfig {
        self.0.as_v1_config()
    }

    /// The circuit's identifier in the parameter cache (what the file names are made of).
    pub fn circuit_identifier(self) -> Result<String, Error> {
        self.0
            .circuit_identifier()
            .map_err(|e| Error::filecoin("computing the circuit identifier", e))
    }

    /// The official file name of the proving key (`v28-…​.params`).
    pub fn params_file_name(self) -> Result<String, Error> {
        Ok(parameter_id(&self.circuit_identifier()?))
    }

    /// The official file name of the verifying key (`v28-…​.vk`).
    pub fn vk_file_name(self) -> Result<String, Error> {
        Ok(verifying_key_id(&self.circuit_identifier()?))
    }

    /// The sector size as users write it (`2KiB`, `32GiB`).
    pub fn sector_size_label(self) -> String {
        sector_size_label(self.sector_size())
    }
}

/// `2048` → `2KiB`, `34359738368` → `32GiB`.
pub fn sector_size_label(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

/// A miner actor id as operators write it: `f01000`, `t01000` or `1000`.
pub fn parse_actor_id(text: &str) -> Option<u64> {
    let digits = text
        .strip_prefix("f0")
        .or_else(|| text.strip_prefix("t0"))
        .unwrap_or(text);
    digits.parse().ok()
}

/// Parses `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` (or a plain byte count).
pub fn parse_sector_size(text: &str) -> Option<u64> {
    let t = text.trim();
    for (suffix, unit) in [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)] {
        if let Some(n) = t.strip_suffix(suffix) {
            return n.trim().parse::<u64>().ok()?.checked_mul(unit);
        }
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_supported_with_its_partitions_and_challenges() {
        for p in ProofType::ALL {
            let name = format!("{p:?}");
            let pt = ProofType::from_name(&name).unwrap();
            assert_eq!(pt.registered(), p);
            let large = pt.sector_size() >= 32 << 30;
            // filecoin-proofs 19.1 constants.rs: POREP_PARTITIONS,
            // get_porep_non_interactive_partitions and the minimum challenges.
            let (partitions, challenges) = match (pt.is_non_interactive(), large) {
                (false, false) => (1, 2),
                (false, true) => (10, 18),
                (true, false) => (13, 2),
                (true, true) => (126, 18),
            };
            assert_eq!(pt.partitions(), partitions, "{name}");
            assert_eq!(pt.challenges_per_partition(), challenges, "{name}");
            assert_eq!(pt.is_non_interactive(), name.contains("NonInteractive"));
            // One circuit per sector size: a non-interactive partition is the
            // interactive circuit, so the key files are the same.
            let other = pt.other_interaction();
            assert_ne!(
                other.is_non_interactive(),
                pt.is_non_interactive(),
                "{name}"
            );
            assert_eq!(other.sector_size(), pt.sector_size());
            assert_eq!(
                other.params_file_name().unwrap(),
                pt.params_file_name().unwrap(),
                "{name}"
            );
        }
        assert!(ProofType::from_name("StackedDrg4KiBV1").is_err());
    }

    #[test]
    fn sector_sizes_read_and_print() {
        for (text, bytes) in [
            ("2KiB", 2048u64),
            ("8MiB", 8 << 20),
            ("512MiB", 512 << 20),
            ("32GiB", 32 << 30),
            ("64GiB", 64 << 30),
            ("2048", 2048),
        ] {
            assert_eq!(parse_sector_size(text), Some(bytes), "{text}");
        }
        assert_eq!(sector_size_label(2048), "2KiB");
        assert_eq!(sector_size_label(32 << 30), "32GiB");
        assert_eq!(sector_size_label(1000), "1000B");
        assert_eq!(parse_sector_size("2 KB"), None);
    }
}
