//! Native witness generation for the hot gadgets: the aux values a
//! bellperson gadget allocates, computed with plain integer code in the
//! gadget's order, for witness-only synthesis of pre-compiled circuits.

pub mod bits;
pub mod sha256;
