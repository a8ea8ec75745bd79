//! PoRep (interactive and non-interactive): the C1 read and checked, its
//! partitions as an engine job, their witnesses, the proof's verification,
//! SnarkPack aggregation, and (with the `fixtures` feature) synthetic
//! sectors.

pub mod aggregate;
pub(crate) mod c1;
pub(crate) mod check;
pub(crate) mod native;
pub(crate) mod prove;
pub(crate) mod sdr;
pub(crate) mod source;
pub(crate) mod synthesis;
#[cfg(feature = "fixtures")]
pub mod synthetic;
