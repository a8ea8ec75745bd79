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
const COUNT_LEN: u64 = 4;

/// A key file that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file could not be opened, measured or mapped.
    #[error("cannot open key file {}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Reading failed for a reason other than the end of the data.
    #[error("I/O error in section `{section}` at byte {offset}")]
    Io {
        /// The section being read.
        section: Section,
        /// Where the failed read started.
        offset: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The data ends inside `section`: a truncated file, or a count that was
    /// corrupted into something larger than the file.
    #[error(
        "key data ends inside section `{section}`: {needed} bytes needed from byte {offset}, \
         only {available} present (truncated file or corrupted count)"
    )]
    Truncated {
        /// The section that does not fit.
        section: Section,
        /// Where the item that does not fit starts: the count, the single
        /// vk point, or the first point of a counted section.
        offset: u64,
        /// Bytes that item needs (for a counted section: count × point size).
        needed: u64,
        /// Bytes actually present from `offset` on.
        available: u64,
    },
    /// A point failed its checks.
    #[error("bad point in section `{section}`{} at byte {offset}: {problem}", point_label(*.section, *.index))]
    BadPoint {
        /// The section holding the point.
        section: Section,
        /// The point's index within its section (0 for the fixed vk points).
        index: u64,
        /// Where the point's encoding starts.
        offset: u64,
        /// What is wrong with it.
        problem: PointError,
    },
    /// Bytes follow the last section.
    #[error("{count} unexpected bytes after the last section, from byte {offset}")]
    TrailingBytes {
        /// Where the extra bytes start (the end of the last section).
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// A section has more points than its u32 count can say.
    #[error("section `{section}` has {count} points, more than a u32 count can hold")]
    TooManyPoints {
        /// The section.
        section: Section,
        /// Its length.
        count: usize,
    },
    /// Writing the key file failed.
    #[error("cannot write key file {}", path.display())]
    Write {
        /// The destination.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn point_label(section: Section, index: u64) -> String {
    if Section::FIXED.contains(&section) {
        String::new()
    } else {
        format!(" (point {index})")
    }
}

/// Where one counted section's points lie in a key file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionSpan {
    /// The section.
    pub section: Section,
    /// Byte offset of the section's u32 count.
    pub count_offset: u64,
    /// Number of points.
    pub count: u64,
}

impl SectionSpan {
    /// Byte offset of the first point.
    pub const fn points_offset(&self) -> u64 {
        self.count_offset + COUNT_LEN
    }

    /// Bytes of the points (count × point size).
    pub const fn points_len(&self) -> u64 {
        self.count * self.section.point_len()
    }

    /// Byte offset just past the last point.
    pub const fn end(&self) -> u64 {
        self.points_offset() + self.points_len()
    }
}

/// The shape of a key file, from its counts alone, without decoding points:
/// what `cuzk info` prints, and how a streaming reader finds each section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    /// Total bytes (equal to the end of `b_g2`: trailing bytes are refused).
    pub file_len: u64,
    /// `vk.ic`: public inputs, ONE included.
    pub ic: SectionSpan,
    /// `h`: domain size − 1.
    pub h: SectionSpan,
    /// `l`: aux variables.
    pub l: SectionSpan,
    /// `a`: variables with a non-zero A column.
    pub a: SectionSpan,
    /// `b_g1`: variables with a non-zero B column.
    pub b_g1: SectionSpan,
    /// `b_g2`: the same variables, in G2.
    pub b_g2: SectionSpan,
}

impl KeySummary {
    /// The layout a key with these section counts has.
    pub fn from_counts(ic: u64, h: u64, l: u64, a: u64, b_g1: u64, b_g2: u64) -> Self {
        let mut next = VK_FIXED_LEN;
        let mut span = |section: Section, count: u64| {
            let s = SectionSpan {
                section,
                count_offset: next,
                count,
            };
            next = s.end();
            s
        };
        let ic = span(Section::Ic, ic);
        let h = span(Section::H, h);
        let l = span(Section::L, l);
        let a = span(Section::A, a);
        let b_g1 = span(Section::BG1, b_g1);
        let b_g2 = span(Section::BG2, b_g2);
        KeySummary {
            file_len: b_g2.end(),
            ic,
            h,
            l,
            a,
            b_g1,
            b_g2,
        }
    }

    /// The six counted sections, in file order.
    pub fn spans(&self) -> [SectionSpan; 6] {
        [self.ic, self.h, self.l, self.a, self.b_g1, self.b_g2]
    }

    /// The span of a counted section (`None` for the six fixed vk points).
    pub fn span(&self, section: Section) -> Option<SectionSpan> {
        self.spans().into_iter().find(|s| s.section == section)
    }

    /// Number of public inputs a proof carries (`ic` minus the ONE).
    pub fn public_inputs(&self) -> u64 {
        self.ic.count.saturating_sub(1)
    }

    /// Reads the counts of a key file, seeking over the points.
    pub fn from_path(path: &Path) -> Result<Self, KeyError> {
        let mut file = open(path)?;
        let len = file_len(&file, path)?;
        scan_layout(len, |offset| read_u32_at(&mut file, offset))
    }

    /// Reads the counts of a key held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        scan_layout(bytes.len() as u64, |offset| {
            let at = offset as usize;
            let be: [u8; 4] = bytes[at..at + 4].try_into().expect("4-byte slice");
            Ok(u32::from_be_bytes(be))
        })
    }

    /// Reads the counts from any seekable source (its length is found by
    /// seeking to the end).
    pub fn read<R: Read + Seek>(mut reader: R) -> Result<Self, KeyError> {
        let len = reader
            .seek(SeekFrom::End(0))
            .map_err(|source| KeyError::Io {
                section: Section::AlphaG1,
                offset: 0,
                source,
            })?;
        scan_layout(len, |offset| read_u32_at(&mut reader, offset))
    }
}

impl fmt::Display for KeySummary {
    /// A small table: one row per section with count, offset and bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<8} {:>12} {:>14} {:>16}",
            "section", "points", "offset", "bytes"
        )?;
        writeln!(f, "{:<8} {:>12} {:>14} {:>16}", "vk", 6, 0, VK_FIXED_LEN)?;
        for s in self.spans() {
            let name = s.section.name().trim_start_matches("vk.");
            writeln!(
                f,
                "{:<8} {:>12} {:>14} {:>16}",
                name,
                s.count,
                s.points_offset(),
                s.points_len()
            )?;
        }
        write!(
            f,
            "total {} bytes; {} public inputs (ONE excluded)",
            self.file_len,
            self.public_inputs()
        )
    }
}

/// Walks the counts of a key of `len` bytes, fetching each count with
/// `read_count_at(offset)`; never reads outside `0..len`.
fn scan_layout(
    len: u64,
    mut read_count_at: impl FnMut(u64) -> Result<u32, io::Error>,
) -> Result<KeySummary, KeyError> {
    let mut offset = 0;
    for section in Section::FIXED {
        require(section, offset, section.point_len(), len)?;
        offset += section.point_len();
    }
    let mut counts = [0u64; 6];
    for (slot, section) in counts.iter_mut().zip(Section::COUNTED) {
        require(section, offset, COUNT_LEN, len)?;
        let count = u64::from(read_count_at(offset).map_err(|source| KeyError::Io {
            section,
            offset,
            source,
        })?);
        offset += COUNT_LEN;
        require(section, offset, count * section.point_len(), len)?;
        offset += count * section.point_len();
        *slot = count;
    }
    if offset < len {
        return Err(KeyError::TrailingBytes {
            offset,
            count: len - offset,
        });
    }
    let [ic, h, l, a, b_g1, b_g2] = counts;
    Ok(KeySummary::from_counts(ic, h, l, a, b_g1, b_g2))
}

/// Fails with `Truncated` unless `needed` bytes from `offset` fit in `len`.
fn require(section: Section, offset: u64, needed: u64, len: u64) -> Result<(), KeyError> {
    let available = len.saturating_sub(offset);
    if needed > available {
        return Err(KeyError::Truncated {
            section,
            offset,
            needed,
            available,
        });
    }
    Ok(())
}

fn read_u32_at<R: Read + Seek>(reader: &mut R, offset: u64) -> io::Result<u32> {
    reader.seek(SeekFrom::Start(offset))?;
    let mut be = [0u8; 4];
    reader.read_exact(&mut be)?;
    Ok(u32::from_be_bytes(be))
}

fn open(path: &Path) -> Result<File, KeyError> {
    File::open(path).map_err(|source| KeyError::Open {
        path: path.to_owned(),
        source,
    })
}

fn file_len(file: &File, path: &Path) -> Result<u64, KeyError> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|source| KeyError::Open {
            path: path.to_owned(),
            source,
        })
}

/// Maps `file` read-only.
///
/// The mapping is only sound while nobody modifies or truncates the file:
/// cuzk never writes a key in place (it writes a new file and renames it
/// over the old one, which leaves existing mappings intact), and callers must
/// not point it at a file another process is writing.
#[allow(unsafe_code)]
fn map_file(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified for the
    // life of the map (that would change bytes behind a `&[u8]`, or fault on
    // truncation). The map lives only inside `ProvingKey::read_mmap`, which
    // decodes it into owned points and drops it; key files are replaced by
    // rename, never rewritten in place, per the contract documented above.
    unsafe { memmap2::Mmap::map(file) }
}

/// A point type that can appear in a key file.
trait KeyPoint: Copy + Send + Sync + PartialEq + fmt::Debug {
    const LEN: usize;
    fn decode(bytes: &[u8], check: PointCheck) -> Result<Self, PointError>;
    fn encode_into(&self, out: &mut [u8]);
    /// The value stored where a point failed to decode (the error is reported
    /// instead; the vector holding it is never returned).
    fn decode_failed() -> Self;
}

impl KeyPoint for G1Affine {
    const LEN: usize = G1_UNCOMPRESSED_LEN;
    fn decode(bytes: &[u8], check: PointCheck) -> Result<Self, PointError> {
        decode_g1_uncompressed(bytes.try_into().expect("96-byte chunk"), check)
    }
    fn encode_into(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
    fn decode_failed() -> Self {
        G1Affine::default()
    }
}

impl KeyPoint for G2Affine {
    const LEN: usize = G2_UNCOMPRESSED_LEN;
    fn decode(bytes: &[u8], check: PointCheck) -> Result<Self, PointError> {
        decode_g2_uncompressed(bytes.try_into().expect("192-byte chunk"), check)
    }
    fn encode_into(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
    fn decode_failed() -> Self {
        G2Affine::default()
    }
}

/// Decodes `bytes` (a whole number of points) in parallel, appending to
/// `out`. On failure returns the index (within `bytes`) of the *first* bad
/// point and its problem, whatever order the threads ran in.
fn decode_points_into<P: KeyPoint>(
    bytes: &[u8],
    check: PointCheck,
    out: &mut Vec<P>,
) -> Result<(), (usize, PointError)> {
    debug_assert_eq!(bytes.len() % P::LEN, 0);
    let first_bad = AtomicUsize::new(usize::MAX);
    // An indexed parallel iterator extends the vector in place: no
    // intermediate copy of a multi-gigabyte section.
    out.par_extend(
        bytes
            .par_chunks_exact(P::LEN)
            .enumerate()
            .map(|(i, chunk)| {
                P::decode(chunk, check).unwrap_or_else(|_| {
                    first_bad.fetch_min(i, Ordering::Relaxed);
                    P::decode_failed()
                })
            }),
    );
    match first_bad.into_inner() {
        usize::MAX => Ok(()),
        i => {
            let chunk = &bytes[i * P::LEN..(i + 1) * P::LEN];
            let problem = P::decode(chunk, check).expect_err("point failed before");
            Err((i, problem))
        }
    }
}

/// Encodes `points` into `out` (exactly `points.len() * P::LEN` bytes) in
/// parallel.
fn encode_points<P: KeyPoint>(points: &[P], out: &mut [u8]) {
    out.par_chunks_exact_mut(P::LEN)
        .zip(points.par_iter())
        .for_each(|(dst, p)| p.encode_into(dst));
}

/// Chunk size for streamed reads and writes: large enough that a syscall
/// and a rayon fork per chunk are noise, small enough to stay in L3-ish
/// sizes per thread.
const CHUNK_BYTES: usize = 8 << 20;

/// Key bytes, and the offset reached so far, for error messages.
trait KeyInput {
    /// Fills `buf` completely from the next bytes of `section`.
    fn read_small(&mut self, section: Section, buf: &mut [u8]) -> Result<(), KeyError>;
    /// Decodes the next `count` points of `section`.
    fn read_points<P: KeyPoint>(
        &mut self,
        section: Section,
        count: u64,
        check: PointCheck,
    ) -> Result<Vec<P>, KeyError>;
}

/// Key bytes already in memory (a buffer or a mapped file): decoded in
/// place, no copy.
struct SliceInput<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl SliceInput<'_> {
    fn take(&mut self, section: Section, needed: u64) -> Result<&[u8], KeyError> {
        require(section, self.pos as u64, needed, self.bytes.len() as u64)?;
        let start = self.pos;
        // `require` proved start + needed <= len, so it fits in usize.
        self.pos += needed as usize;
        Ok(&self.bytes[start..self.pos])
    }
}

impl KeyInput for SliceInput<'_> {
    fn read_small(&mut self, section: Section, buf: &mut [u8]) -> Result<(), KeyError> {
        buf.copy_from_slice(self.take(section, buf.len() as u64)?);
        Ok(())
    }

    fn read_points<P: KeyPoint>(
        &mut self,
        section: Section,
        count: u64,
        check: PointCheck,
    ) -> Result<Vec<P>, KeyError> {
        let start = self.pos as u64;
        let bytes = self.take(section, count * P::LEN as u64)?;
        let mut points = Vec::with_capacity(count as usize);
        decode_points_into(bytes, check, &mut points).map_err(|(i, problem)| {
            KeyError::BadPoint {
                section,
                index: i as u64,
                offset: start + (i * P::LEN) as u64,
                problem,
            }
        })?;
        Ok(points)
    }
}

/// Key bytes from a stream, optionally of known total length.
struct StreamInput<R> {
    reader: R,
    pos: u64,
    /// Total length, when known: lets counts be checked before allocating.
    len: Option<u64>,
}

impl<R: Read + Send> StreamInput<R> {
    /// Reads until `buf` is full or the stream ends; returns bytes read.
    fn fill(&mut self, section: Section, buf: &mut [u8]) -> Result<usize, KeyError> {
        let got = fill_from(&mut self.reader, buf).map_err(|(got, source)| KeyError::Io {
            section,
            offset: self.pos + got as u64,
            source,
        })?;
        self.pos += got as u64;
        Ok(got)
    }
}

/// Reads into `buf` until it is full or `reader` ends. On an I/O error,
/// returns how many bytes had been read.
fn fill_from<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<usize, (usize, io::Error)> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((got, e)),
        }
    }
    Ok(got)
}

impl<R: Read + Send> KeyInput for StreamInput<R> {
    fn read_small(&mut self, section: Section, buf: &mut [u8]) -> Result<(), KeyError> {
        let offset = self.pos;
        if let Some(len) = self.len {
            require(section, offset, buf.len() as u64, len)?;
        }
        let got = self.fill(section, buf)?;
        if got < buf.len() {
            return Err(KeyError::Truncated {
                section,
                offset,
                needed: buf.len() as u64,
                available: got as u64,
            });
        }
        Ok(())
    }

    fn read_points<P: KeyPoint>(
        &mut self,
        section: Section,
        count: u64,
        check: PointCheck,
    ) -> Result<Vec<P>, KeyError> {
        let start = self.pos;
        let needed = count * P::LEN as u64;
        let truncated = |available: u64| KeyError::Truncated {
            section,
            offset: start,
            needed,
            available,
        };
        let chunk_points = (CHUNK_BYTES / P::LEN) as u64;
        let mut points = match self.len {
            Some(len) => {
                require(section, start, needed, len)?;
                Vec::with_capacity(count as usize)
            }
            // Unknown length: trust the count only as far as data arrives.
            None => Vec::with_capacity(count.min(chunk_points) as usize),
        };

        // Double buffering: decode one chunk while the next one is read.
        let mut current = vec![0u8; (count.min(chunk_points) as usize) * P::LEN];
        let mut next = vec![0u8; current.len()];
        let mut got = self.fill(section, &mut current)?;
        let mut done: u64 = 0; // points decoded
        loop {
            if got < current.len() {
                return Err(truncated(done * P::LEN as u64 + got as u64));
            }
            let here = (current.len() / P::LEN) as u64;
            let after = (count - done - here).min(chunk_points) as usize;
            next.truncate(after * P::LEN);
            points.reserve(here as usize);
            let (decoded, read) = rayon::join(
                || decode_points_into(&current, check, &mut points),
                || self.fill(section, &mut next),
            );
            decoded.map_err(|(i, problem)| {
                let index = done + i as u64;
                KeyError::BadPoint {
                    section,
                    index,
                    offset: start + index * P::LEN as u64,
                    problem,
                }
            })?;
            done += here;
            if done == count {
                return Ok(points);
            }
            got = read?;
            std::mem::swap(&mut current, &mut next);
        }
    }
}

fn read_count(input: &mut impl KeyInput, section: Section) -> Result<u64, KeyError> {
    let mut be = [0u8; 4];
    input.read_small(section, &mut be)?;
    Ok(u64::from(u32::from_be_bytes(be)))
}

fn read_one<P: KeyPoint>(input: &mut impl KeyInput, section: Section) -> Result<P, KeyError> {
    // The vk points are few and always fully checked.
    let mut points = input.read_points::<P>(section, 1, PointCheck::Full)?;
    Ok(points.remove(0))
}

fn read_counted<P: KeyPoint>(
    input: &mut impl KeyInput,
    section: Section,
    check: PointCheck,
) -> Result<Vec<P>, KeyError> {
    let count = read_count(input, section)?;
    input.read_points(section, count, check)
}

fn read_vk(input: &mut impl KeyInput) -> Result<VerifyingKey, KeyError> {
    Ok(VerifyingKey {
        alpha_g1: read_one(input, Section::AlphaG1)?,
        beta_g1: read_one(input, Section::BetaG1)?,
        beta_g2: read_one(input, Section::BetaG2)?,
        gamma_g2: read_one(input, Section::GammaG2)?,
        delta_g1: read_one(input, Section::DeltaG1)?,
        delta_g2: read_one(input, Section::DeltaG2)?,
        ic: read_counted(input, Section::Ic, PointCheck::Full)?,
    })
}

fn read_pk(input: &mut impl KeyInput, check: PointCheck) -> Result<ProvingKey, KeyError> {
    let vk = read_vk(input)?;
    Ok(ProvingKey {
        vk,
        h: read_counted(input, Section::H, check)?,
        l: read_counted(input, Section::L, check)?,
        a: read_counted(input, Section::A, check)?,
        b_g1: read_counted(input, Section::BG1, check)?,
        b_g2: read_counted(input, Section::BG2, check)?,
    })
}

fn trailing(offset: u64, len: u64) -> Result<(), KeyError> {
    if offset < len {
        return Err(KeyError::TrailingBytes {
            offset,
            count: len - offset,
        });
    }
    Ok(())
}

/// Writes `count` as the section's u32 count.
fn write_count<W: Write>(w: &mut W, section: Section, count: usize) -> io::Result<()> {
    let count = u32::try_from(count).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            KeyError::TooManyPoints { section, count },
        )
    })?;
    w.write_all(&count.to_be_bytes())
}

/// Writes points in chunks, encoding in parallel.
fn write_points<P: KeyPoint, W: Write>(w: &mut W, points: &[P]) -> io::Result<()> {
    let per_chunk = (CHUNK_BYTES / P::LEN).max(1);
    let mut buf = vec![0u8; points.len().min(per_chunk) * P::LEN];
    for chunk in points.chunks(per_chunk) {
        let bytes = &mut buf[..chunk.len() * P::LEN];
        encode_points(chunk, bytes);
        w.write_all(bytes)?;
    }
    Ok(())
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

/// bellperson's types, for interop tests and for callers that still hold
/// bellperson parameters.
mod interop {
    use super::*;
    use bellperson::groth16 as bp;

    impl From<&bp::VerifyingKey<Bls12>> for VerifyingKey {
        fn from(vk: &bp::VerifyingKey<Bls12>) -> Self {
            VerifyingKey {
                alpha_g1: vk.alpha_g1,
                beta_g1: vk.beta_g1,
                beta_g2: vk.beta_g2,
                gamma_g2: vk.gamma_g2,
                delta_g1: vk.delta_g1,
                delta_g2: vk.delta_g2,
                ic: vk.ic.clone(),
            }
        }
    }

    impl From<&VerifyingKey> for bp::VerifyingKey<Bls12> {
        fn from(vk: &VerifyingKey) -> Self {
            bp::VerifyingKey {
                alpha_g1: vk.alpha_g1,
                beta_g1: vk.beta_g1,
                beta_g2: vk.beta_g2,
                gamma_g2: vk.gamma_g2,
                delta_g1: vk.delta_g1,
                delta_g2: vk.delta_g2,
                ic: vk.ic.clone(),
            }
        }
    }

    impl From<&bp::Parameters<Bls12>> for ProvingKey {
        fn from(p: &bp::Parameters<Bls12>) -> Self {
            ProvingKey {
                vk: (&p.vk).into(),
                h: p.h.to_vec(),
                l: p.l.to_vec(),
                a: p.a.to_vec(),
                b_g1: p.b_g1.to_vec(),
                b_g2: p.b_g2.to_vec(),
            }
        }
    }

    impl From<ProvingKey> for bp::Parameters<Bls12> {
        fn from(pk: ProvingKey) -> Self {
            bp::Parameters {
                vk: (&pk.vk).into(),
                h: Arc::new(pk.h),
                l: Arc::new(pk.l),
                a: Arc::new(pk.a),
                b_g1: Arc::new(pk.b_g1),
                b_g2: Arc::new(pk.b_g2),
            }
        }
    }
}
