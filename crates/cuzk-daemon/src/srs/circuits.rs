//! Circuit ids as Curio names them (`porep-32g`, `winning-2k`, …).

use std::sync::OnceLock;

use cuzk_filecoin::{Circuit, PostKind, PostType, ProofType, UpdateType};

use crate::error::SrsError;

/// The sector sizes as Curio abbreviates them in circuit ids, with the
/// name of a PoRep proof type of that size.
const SIZES: [(&str, &str); 5] = [
    ("2k", "StackedDrg2KiBV1_1"),
    ("8m", "StackedDrg8MiBV1_1"),
    ("512m", "StackedDrg512MiBV1_1"),
    ("32g", "StackedDrg32GiBV1_1"),
    ("64g", "StackedDrg64GiBV1_1"),
];

/// Every circuit the daemon proves, by circuit id as Curio names them:
/// `porep-32g`, `winning-32g`, `wpost-32g` (the V1_2 WindowPoSt circuit),
/// `snap-32g`, for each sector size.
pub(crate) fn circuits() -> &'static [(&'static str, Circuit)] {
    static ALL: OnceLock<Vec<(&'static str, Circuit)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        for (prefix, of) in [
            ("porep", Circuit::Porep as fn(ProofType) -> Circuit),
            ("winning", |s| Circuit::Post(PostType::winning_for(s))),
            ("wpost", |s| Circuit::Post(PostType::window_for(s))),
            ("snap", |s| Circuit::Update(UpdateType::for_seal(s))),
        ] {
            for (size, name) in SIZES {
                let seal = ProofType::from_name(name).expect("a supported PoRep proof type");
                let id: &'static str = Box::leak(format!("{prefix}-{size}").into_boxed_str());
                out.push((id, of(seal)));
            }
        }
        out
    })
}

/// The kind of a circuit, ignoring its sector size and version.
fn kind_of(c: Circuit) -> u8 {
    match c {
        Circuit::Porep(_) => 0,
        Circuit::Post(p) if p.kind() == PostKind::Winning => 1,
        Circuit::Post(_) => 2,
        Circuit::Update(_) => 3,
    }
}

/// The circuit id of a circuit (every version of one kind and sector size
/// proves the same circuit with the same key).
pub(crate) fn circuit_id(circuit: Circuit) -> &'static str {
    circuits()
        .iter()
        .find(|(_, c)| kind_of(*c) == kind_of(circuit) && c.sector_size() == circuit.sector_size())
        .map(|(id, _)| *id)
        .expect("every supported circuit has one of the five sector sizes")
}

pub(super) fn circuit_of(id: &str) -> Result<Circuit, SrsError> {
    circuits()
        .iter()
        .find(|(c, _)| *c == id)
        .map(|(_, c)| *c)
        .ok_or_else(|| SrsError::UnknownCircuit {
            id: id.into(),
            known: circuits()
                .iter()
                .map(|(c, _)| *c)
                .collect::<Vec<_>>()
                .join(", "),
        })
}
