//! [`Section`]: the named parts of a key file, in file order, with their
//! element sizes and the fixed lengths a reader checks against.

use super::*;

/// One named part of a key file, in file order. Errors and summaries use
/// these names (`vk.delta_g2`, `h`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `vk.alpha_g1`
    AlphaG1,
    /// `vk.beta_g1`
    BetaG1,
    /// `vk.beta_g2`
    BetaG2,
    /// `vk.gamma_g2`
    GammaG2,
    /// `vk.delta_g1`
    DeltaG1,
    /// `vk.delta_g2`
    DeltaG2,
    /// `vk.ic` (count and points)
    Ic,
    /// `h`
    H,
    /// `l`
    L,
    /// `a`
    A,
    /// `b_g1`
    BG1,
    /// `b_g2`
    BG2,
}

impl Section {
    /// Every section, in file order.
    pub const ALL: [Section; 12] = [
        Section::AlphaG1,
        Section::BetaG1,
        Section::BetaG2,
        Section::GammaG2,
        Section::DeltaG1,
        Section::DeltaG2,
        Section::Ic,
        Section::H,
        Section::L,
        Section::A,
        Section::BG1,
        Section::BG2,
    ];

    /// The six fixed-size vk points, in file order.
    pub const FIXED: [Section; 6] = [
        Section::AlphaG1,
        Section::BetaG1,
        Section::BetaG2,
        Section::GammaG2,
        Section::DeltaG1,
        Section::DeltaG2,
    ];

    /// The six sections that start with a u32 count, in file order.
    pub const COUNTED: [Section; 6] = [
        Section::Ic,
        Section::H,
        Section::L,
        Section::A,
        Section::BG1,
        Section::BG2,
    ];

    /// The name used in errors and summaries.
    pub const fn name(self) -> &'static str {
        match self {
            Section::AlphaG1 => "vk.alpha_g1",
            Section::BetaG1 => "vk.beta_g1",
            Section::BetaG2 => "vk.beta_g2",
            Section::GammaG2 => "vk.gamma_g2",
            Section::DeltaG1 => "vk.delta_g1",
            Section::DeltaG2 => "vk.delta_g2",
            Section::Ic => "vk.ic",
            Section::H => "h",
            Section::L => "l",
            Section::A => "a",
            Section::BG1 => "b_g1",
            Section::BG2 => "b_g2",
        }
    }

    /// Bytes of one uncompressed point of this section.
    pub const fn point_len(self) -> u64 {
        match self {
            Section::BetaG2 | Section::GammaG2 | Section::DeltaG2 | Section::BG2 => {
                G2_UNCOMPRESSED_LEN as u64
            }
            _ => G1_UNCOMPRESSED_LEN as u64,
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes of the six fixed vk points at the start of every key file.
pub const VK_FIXED_LEN: u64 = 3 * G1_UNCOMPRESSED_LEN as u64 + 3 * G2_UNCOMPRESSED_LEN as u64;

/// Bytes of a section count.
pub(super) const COUNT_LEN: u64 = 4;
