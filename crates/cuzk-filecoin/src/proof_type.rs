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
/// `RegisteredSealProof` except the non-interactive ones, whose C2 output is
/// a SnarkPack aggregate rather than one Groth16 proof per partition.
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

    /// The proof type, or why it is not supported.
    pub fn new(proof: RegisteredSealProof) -> Result<Self, Error> {
        if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
            return Err(Error::Unsupported {
                proof_type: format!("{proof:?}"),
                why: "non-interactive PoRep's C2 output is a SnarkPack aggregate of the \
                      partition proofs; cuzk produces the partition proofs only"
                    .into(),
            });
        }
        Ok(ProofType(proof))
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
    fn every_interactive_type_is_supported_and_non_interactive_ones_are_not() {
        for p in ProofType::ALL {
            let name = format!("{p:?}");
            let got = ProofType::from_name(&name);
            if name.contains("NonInteractive") {
                assert!(matches!(got, Err(Error::Unsupported { .. })), "{name}");
            } else {
                let pt = got.unwrap();
                assert_eq!(pt.registered(), p);
                let expected = if pt.sector_size() >= 32 << 30 { 10 } else { 1 };
                assert_eq!(pt.partitions(), expected, "{name}");
            }
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
