//! Groth16 proving and verifying keys in bellperson's `.params` format.
//!
//! # File layout
//!
//! Everything big-endian, no header, no padding, no alignment. Points are
//! uncompressed (G1 96 B, G2 192 B; see [`crate::encoding`]):
//!
//! ```text
//! vk.alpha_g1  G1          vk.beta_g1  G1
//! vk.beta_g2   G2          vk.gamma_g2 G2
//! vk.delta_g1  G1          vk.delta_g2 G2
//! vk.ic        u32 count, then count × G1   (one per public input, ONE included)
//! h            u32 count, then count × G1   (domain size − 1)
//! l            u32 count, then count × G1   (one per aux variable)
//! a            u32 count, then count × G1   (inputs and aux with non-zero A column)
//! b_g1         u32 count, then count × G1   (inputs and aux with non-zero B column)
//! b_g2         u32 count, then count × G2   (same indices as b_g1)
//! ```
//!
//! A standalone verifying-key file (`.vk`) is the first seven sections alone.
//!
//! # Reading
//!
//! Three entry points decode the same bytes to the same [`ProvingKey`]:
//! [`ProvingKey::read`] (any `Read`, chunked, length unknown),
//! [`ProvingKey::read_from_path`] (a file, read in large chunks while the
//! previous chunk is decoded) and [`ProvingKey::read_mmap`] (a file mapped
//! into memory, decoded in place). Point decoding runs in parallel on the
//! rayon pool. The two path readers first walk the section counts (cheap:
//! seven 4-byte reads) so a truncated file or a corrupted count is refused
//! before any point is decoded, and capacities are reserved exactly.
//!
//! A count is never trusted for an allocation: against a known length it is
//! checked first, and from a stream of unknown length the vector grows only
//! as points actually arrive. Every failure is a [`KeyError`] that names the
//! [`Section`] and the byte offset.
//!
//! # Checks
//!
//! The verifying key (including `ic`) is always fully checked: canonical
//! encoding, on the curve, in the subgroup, not the identity. The five large
//! sections are checked as the caller's [`PointCheck`] says. No section may
//! hold the point at infinity. That is stricter than bellperson in one
//! place: bellperson accepts the identity for the six fixed vk points
//! (alpha … delta_g2), which no honest setup produces and with which a
//! verifying key is forgeable (gamma = delta = identity makes any
//! `A = alpha, B = beta` verify), so we refuse it.
//!
//! [`PointCheck::OnCurve`] is safe for a key whose bytes are trusted (a
//! digest-checked Filecoin parameter file): a random corruption is caught by
//! the on-curve check. A *maliciously crafted* key whose points carry small
//! torsion components could make the prover's output leak information about
//! the witness through those components; use [`PointCheck::Full`] for keys
//! of unknown origin, or check the proof's points before publishing it
//! ([`crate::proof::Proof::validate`]).
//!
//! # Cost
//!
//! Measured on the 2-core development machine (shared, load 4–6, so the
//! rayon decode shows little parallel gain there) for a key sized for 2^16
//! constraints: 212,891 G1 and 16,384 G2 points, 23.6 MB, in page cache.
//!
//! | operation | time |
//! | --- | --- |
//! | [`KeySummary::from_path`] | < 1 ms |
//! | [`ProvingKey::read_from_path`] / [`ProvingKey::read_mmap`], `OnCurve` | 0.21–0.23 s |
//! | the same, `Full` | 24–29 s (≈ 110 µs per point per core) |
//! | bellperson `Parameters::read`, `checked = false` / `true` | 0.25 s / 25.5 s |
//! | [`ProvingKey::write_to_path`] (encode, write, fsync, rename) | 0.13 s |
//!
//! At PoRep scale (≈ 600 M points) `OnCurve` costs about 1 µs per point
//! per core, some ten minutes of core time spread over the host's cores next
//! to reading 47 GB; `Full` costs about 18 core-hours, which is why Filecoin
//! checks a digest instead.
//!
//! # Code
//!
//! `section.rs` names the parts of a file, `layout.rs` walks its counts
//! ([`KeySummary`]) and opens or maps it, `codec.rs` decodes and encodes the
//! points (in parallel, from a slice or a stream), `error.rs` is [`KeyError`],
//! and `interop.rs` converts to and from bellperson's types. This file holds
//! the two key types and their read and write entry points.

mod codec;
mod error;
mod interop;
mod layout;
mod section;

pub use error::KeyError;
pub use layout::{KeySummary, SectionSpan};
pub use section::{Section, VK_FIXED_LEN};

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use blstrs::{Bls12, G1Affine, G2Affine};
use rayon::prelude::*;

use crate::encoding::{
    decode_g1_uncompressed, decode_g2_uncompressed, PointCheck, PointError, G1_UNCOMPRESSED_LEN,
    G2_UNCOMPRESSED_LEN,
};

use codec::*;
use layout::*;
use section::COUNT_LEN;

/// The verifying key: the points a verifier needs.
///
/// Every point is affine, in the prime-order subgroup, never the identity
/// (checked when read). `ic` has one point per public input, the implicit
/// leading ONE included, so a circuit with `n` public inputs has
/// `ic.len() == n + 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    /// `[alpha]_1`.
    pub alpha_g1: G1Affine,
    /// `[beta]_1`.
    pub beta_g1: G1Affine,
    /// `[beta]_2`.
    pub beta_g2: G2Affine,
    /// `[gamma]_2`.
    pub gamma_g2: G2Affine,
    /// `[delta]_1`.
    pub delta_g1: G1Affine,
    /// `[delta]_2`.
    pub delta_g2: G2Affine,
    /// `[(beta·u_i + alpha·v_i + w_i)/gamma]_1` for every public input i.
    pub ic: Vec<G1Affine>,
}

/// The proving key: the verifying key plus the five MSM bases.
///
/// `a`, `b_g1` and `b_g2` hold only the points of variables whose A (resp.
/// B) column is non-zero, in variable order (inputs first, then aux);
/// the prover walks them with the circuit's density bitmaps.
#[derive(Clone, PartialEq, Eq)]
pub struct ProvingKey {
    /// The verifying key, first in the file.
    pub vk: VerifyingKey,
    /// `[tau^i · t(tau) / delta]_1` for i in 0..domain−1.
    pub h: Vec<G1Affine>,
    /// `[(beta·u_j + alpha·v_j + w_j)/delta]_1` for every aux variable j.
    pub l: Vec<G1Affine>,
    /// `[u_i(tau)]_1` for variables with a non-zero A column.
    pub a: Vec<G1Affine>,
    /// `[v_i(tau)]_1` for variables with a non-zero B column.
    pub b_g1: Vec<G1Affine>,
    /// `[v_i(tau)]_2`, same variables as `b_g1`.
    pub b_g2: Vec<G2Affine>,
}

impl fmt::Debug for ProvingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Millions of points: show the shape, not the contents.
        f.debug_struct("ProvingKey")
            .field("ic", &self.vk.ic.len())
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish_non_exhaustive()
    }
}

impl VerifyingKey {
    /// Bytes this key takes in a file.
    pub fn encoded_len(&self) -> u64 {
        VK_FIXED_LEN + COUNT_LEN + self.ic.len() as u64 * G1_UNCOMPRESSED_LEN as u64
    }

    /// Number of public inputs a proof for this key carries (ONE excluded).
    pub fn public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    /// Reads a verifying key from the start of `reader` (a `.vk` file, or
    /// the head of a `.params` file), consuming exactly its bytes.
    pub fn read<R: Read + Send>(reader: R) -> Result<Self, KeyError> {
        read_vk(&mut StreamInput {
            reader,
            pos: 0,
            len: None,
        })
    }

    /// Decodes a verifying key that is exactly `bytes` (a `.vk` file).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        let mut input = SliceInput { bytes, pos: 0 };
        let vk = read_vk(&mut input)?;
        trailing(input.pos as u64, bytes.len() as u64)?;
        Ok(vk)
    }

    /// Reads a standalone verifying-key file (`.vk`). Anything after the key
    /// is refused; so a `.params` file given by mistake fails after reading
    /// only its head (use [`ProvingKey::read_verifying_key`] for that).
    pub fn read_from_path(path: &Path) -> Result<Self, KeyError> {
        let file = open(path)?;
        let len = file_len(&file, path)?;
        let mut input = StreamInput {
            reader: io::BufReader::new(file),
            pos: 0,
            len: Some(len),
        };
        let vk = read_vk(&mut input)?;
        trailing(input.pos, len)?;
        Ok(vk)
    }

    /// Writes the key as bellperson's `VerifyingKey::write` does.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        for p in [&self.alpha_g1, &self.beta_g1] {
            writer.write_all(&p.to_uncompressed())?;
        }
        for p in [&self.beta_g2, &self.gamma_g2] {
            writer.write_all(&p.to_uncompressed())?;
        }
        writer.write_all(&self.delta_g1.to_uncompressed())?;
        writer.write_all(&self.delta_g2.to_uncompressed())?;
        write_count(&mut writer, Section::Ic, self.ic.len())?;
        write_points(&mut writer, &self.ic)
    }

    /// The key's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len() as usize);
        self.write(&mut out).expect("writing to a Vec cannot fail");
        out
    }
}

impl ProvingKey {
    /// The layout this key has in a file.
    pub fn summary(&self) -> KeySummary {
        KeySummary::from_counts(
            self.vk.ic.len() as u64,
            self.h.len() as u64,
            self.l.len() as u64,
            self.a.len() as u64,
            self.b_g1.len() as u64,
            self.b_g2.len() as u64,
        )
    }

    /// Reads a key from a stream of unknown length, in chunks. Stops right
    /// after `b_g2`; whatever follows is left unread.
    pub fn read<R: Read + Send>(reader: R, check: PointCheck) -> Result<Self, KeyError> {
        read_pk(
            &mut StreamInput {
                reader,
                pos: 0,
                len: None,
            },
            check,
        )
    }

    /// Decodes a key that is exactly `bytes`, in place and in parallel.
    pub fn from_bytes(bytes: &[u8], check: PointCheck) -> Result<Self, KeyError> {
        // Structure first: a truncated or corrupted count fails in
        // microseconds, before gigabytes are decoded.
        KeySummary::from_bytes(bytes)?;
        read_pk(&mut SliceInput { bytes, pos: 0 }, check)
    }

    /// Reads a key file with large sequential reads, decoding each chunk
    /// while the next is read.
    pub fn read_from_path(path: &Path, check: PointCheck) -> Result<Self, KeyError> {
        let mut file = open(path)?;
        let len = file_len(&file, path)?;
        scan_layout(len, |offset| read_u32_at(&mut file, offset))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|source| KeyError::Open {
                path: path.to_owned(),
                source,
            })?;
        read_pk(
            &mut StreamInput {
                reader: file,
                pos: 0,
                len: Some(len),
            },
            check,
        )
    }

    /// Maps a key file into memory and decodes it in place; the map is
    /// released before returning. Nothing may modify or truncate the file
    /// while this runs (cuzk itself only ever replaces key files by rename,
    /// which leaves a running reader's mapping intact).
    pub fn read_mmap(path: &Path, check: PointCheck) -> Result<Self, KeyError> {
        let file = open(path)?;
        let map = map_file(&file).map_err(|source| KeyError::Open {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(&map, check)
    }

    /// Reads only the verifying key at the head of a `.params` file, after
    /// checking the file's layout (cheap: no proving-key point is decoded).
    pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
        let mut file = open(path)?;
        let len = file_len(&file, path)?;
        scan_layout(len, |offset| read_u32_at(&mut file, offset))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|source| KeyError::Open {
                path: path.to_owned(),
                source,
            })?;
        read_vk(&mut StreamInput {
            reader: io::BufReader::new(file),
            pos: 0,
            len: Some(len),
        })
    }

    /// Writes the key as bellperson's `Parameters::write` does.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_count(&mut writer, Section::H, self.h.len())?;
        write_points(&mut writer, &self.h)?;
        write_count(&mut writer, Section::L, self.l.len())?;
        write_points(&mut writer, &self.l)?;
        write_count(&mut writer, Section::A, self.a.len())?;
        write_points(&mut writer, &self.a)?;
        write_count(&mut writer, Section::BG1, self.b_g1.len())?;
        write_points(&mut writer, &self.b_g1)?;
        write_count(&mut writer, Section::BG2, self.b_g2.len())?;
        write_points(&mut writer, &self.b_g2)
    }

    /// The key's bytes (for small keys and tests).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.summary().file_len as usize);
        self.write(&mut out).expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the key to `path` atomically: into a temporary file in the same
    /// directory, flushed to disk, then renamed over `path`. A crash leaves
    /// either the old file or the new one, never a partial key; readers that
    /// mapped the old file keep their (unlinked) copy.
    pub fn write_to_path(&self, path: &Path) -> Result<(), KeyError> {
        crate::file::write_atomically(path, |w| self.write(w)).map_err(|source| KeyError::Write {
            path: path.to_owned(),
            source,
        })
    }
}
