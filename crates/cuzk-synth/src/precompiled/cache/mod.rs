//! The pre-compiled circuit cache file: an [`R1cs`] on disk, versioned,
//! checksummed, keyed by the circuit's identity, and memory-mapped on load
//! so the matrices are never copied.
//!
//! Layout (little-endian throughout, version [`FORMAT_VERSION`]):
//!
//! | bytes | what |
//! | --- | --- |
//! | 0..8 | magic `CUZKR1CS` |
//! | 8..12 | format version (u32) |
//! | 12..16 | coefficient id width in bytes (u32: 2 or 4) |
//! | 16..48 | [`CircuitId`] |
//! | 48..96 | shape: constraints, inputs, aux, A-aux, B-input, B-aux density counts (u64 each) |
//! | 96..104 | distinct coefficients (u64) |
//! | 104..728 | 13 sections: offset, length (u64 each), SHA-256 digest (32 bytes) |
//! | 992..1024 | SHA-256 of bytes 0..992 (the header's checksum) |
//!
//! The sections follow in this order, each at the first 64-byte boundary
//! after the previous one (zero padding between), the file ending with the
//! last: the coefficients (32-byte canonical encodings, `1` and `-1`
//! first), then A's row offsets (u32), columns (u32) and ids (u16 or u32),
//! B's, C's, then the A-aux, B-input and B-aux density words (u64, LSB
//! first, as [`crate::Density::as_words`]). A section's digest is SHA-256
//! over its length and the SHA-256 of each 8 MiB chunk, so that checking a
//! 6 GB file runs on every core.
//!
//! [`MappedR1cs::open`] checks all of it — length, magic, version, header
//! checksum, circuit id, the layout against the shape, every section's
//! digest, the structure (row offsets ascending, columns and ids in range,
//! canonical coefficients, density counts) — before it hands out a
//! [`R1csRef`]; a file failing any check is reported as a [`CacheError`]
//! and never used. [`write()`] is atomic (a temporary sibling, fsync,
//! rename), so a reader sees the old file or the whole new one.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

#[cfg(test)]
use super::matrix::CoeffIds;
use super::matrix::{CoeffIdsRef, MatrixRef};
use super::{R1cs, R1csRef};
use crate::{CircuitShape, Density};

mod mapped;
pub use mapped::MappedR1cs;

#[cfg(not(target_endian = "little"))]
compile_error!("the cache file is little-endian and its sections are mapped as they are");

/// The layout version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: [u8; 8] = *b"CUZKR1CS";
const HEADER_LEN: usize = 1024;
/// Where the header's own checksum starts.
const HEADER_DIGEST_AT: usize = HEADER_LEN - 32;
const SECTIONS: usize = 13;
const SECTION_TABLE_AT: usize = 104;
const SECTION_ALIGN: usize = 64;
/// Chunk of a section digest: small enough that a big section splits over
/// every core, large enough that the digest list is short.
const DIGEST_CHUNK: usize = 8 << 20;
const SECTION_NAMES: [&str; SECTIONS] = [
    "coefficients",
    "A row offsets",
    "A columns",
    "A coefficient ids",
    "B row offsets",
    "B columns",
    "B coefficient ids",
    "C row offsets",
    "C columns",
    "C coefficient ids",
    "A-aux density",
    "B-input density",
    "B-aux density",
];

/// Which circuit a cache file holds: a caller's name for it (for Filecoin,
/// the parameter file's cache id) through [`CircuitId::from_name`], or the
/// recording's own content through [`R1cs::content_id`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CircuitId(pub [u8; 32]);

impl CircuitId {
    /// The id of a circuit known by `name`: SHA-256 of the name, domain
    /// separated from content ids.
    pub fn from_name(name: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"cuzk r1cs name\0");
        h.update(name.as_bytes());
        Self(h.finalize().into())
    }
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CircuitId({self})")
    }
}

/// Why a cache file was not written or not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// An I/O call failed.
    #[error("cannot {op} {path}")]
    Io {
        /// What was being done ("open", "map", "write", ...).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Shorter than its header says it must be.
    #[error("{path} is {actual} bytes but its header needs {expected}: truncated")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header's layout needs.
        expected: u64,
        /// Bytes on disk.
        actual: u64,
    },
    /// Not a cache file at all.
    #[error("{path} is not a cuzk R1CS cache file (its first bytes are {found:02x?})")]
    NotACache {
        /// The file.
        path: PathBuf,
        /// What stands where the magic should.
        found: [u8; 8],
    },
    /// Written by another version of the format.
    #[error("{path} has format version {found}; this build reads version {supported}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// [`FORMAT_VERSION`].
        supported: u32,
    },
    /// Holds another circuit.
    #[error("{path} holds circuit {found}, not the expected {expected}")]
    OtherCircuit {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        expected: CircuitId,
        /// The id in the file.
        found: CircuitId,
    },
    /// A checksum does not match: the bytes changed after writing.
    #[error("{path}: the checksum of the {what} does not match: the file is corrupt")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// "header" or a section's name.
        what: &'static str,
    },
    /// Checksums match but the content is inconsistent.
    #[error("{path}: {problem}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the section.
        problem: String,
    },
}

impl R1cs {
    /// The id of this recording's content: SHA-256 over its shape and the
    /// digests of its sections, so two recordings of the same circuit have
    /// the same id and any change of a term changes it.
    pub fn content_id(&self) -> CircuitId {
        let sections = Sections::of(self);
        content_id(&self.shape, &sections.digests(), sections.id_width)
    }
}

fn content_id(shape: &CircuitShape, digests: &[[u8; 32]; SECTIONS], width: usize) -> CircuitId {
    let mut h = Sha256::new();
    h.update(b"cuzk r1cs content\0");
    h.update(shape_bytes(shape));
    h.update((width as u32).to_le_bytes());
    digests.iter().for_each(|d| h.update(d));
    CircuitId(h.finalize().into())
}

fn shape_bytes(shape: &CircuitShape) -> Vec<u8> {
    [
        shape.num_constraints,
        shape.num_inputs,
        shape.num_aux,
        shape.a_aux_density,
        shape.b_input_density,
        shape.b_aux_density,
    ]
    .iter()
    .flat_map(|&n| (n as u64).to_le_bytes())
    .collect()
}

/// The section bytes of an in-memory recording.
struct Sections<'a> {
    coeffs: Vec<u8>,
    slices: [&'a [u8]; SECTIONS - 1],
    id_width: usize,
}

impl<'a> Sections<'a> {
    fn of(r1cs: &'a R1cs) -> Self {
        let coeffs = r1cs
            .coeffs
            .values()
            .iter()
            .flat_map(|c| c.to_repr().as_ref().to_vec())
            .collect();
        let matrix = |m: MatrixRef<'a>| -> [&'a [u8]; 3] {
            let ids: &'a [u8] = match m.ids {
                CoeffIdsRef::U16(v) => bytemuck::cast_slice(v),
                CoeffIdsRef::U32(v) => bytemuck::cast_slice(v),
            };
            [
                bytemuck::cast_slice(m.row_ptr),
                bytemuck::cast_slice(m.cols),
                ids,
            ]
        };
        let [a0, a1, a2] = matrix(r1cs.a.as_ref());
        let [b0, b1, b2] = matrix(r1cs.b.as_ref());
        let [c0, c1, c2] = matrix(r1cs.c.as_ref());
        let words = |d: &'a Density| -> &'a [u8] { bytemuck::cast_slice(d.as_words()) };
        Self {
            coeffs,
            slices: [
                a0,
                a1,
                a2,
                b0,
                b1,
                b2,
                c0,
                c1,
                c2,
                words(&r1cs.a_aux_density),
                words(&r1cs.b_input_density),
                words(&r1cs.b_aux_density),
            ],
            id_width: r1cs.a.as_ref().ids.width(),
        }
    }

    fn all(&self) -> [&[u8]; SECTIONS] {
        let mut all = [&[][..]; SECTIONS];
        all[0] = &self.coeffs;
        all[1..].copy_from_slice(&self.slices);
        all
    }

    fn digests(&self) -> [[u8; 32]; SECTIONS] {
        digests(&self.all())
    }
}

/// Section digests, every chunk of every section on the rayon pool.
fn digests(sections: &[&[u8]; SECTIONS]) -> [[u8; 32]; SECTIONS] {
    let chunks: Vec<(usize, &[u8])> = sections
        .iter()
        .enumerate()
        .flat_map(|(s, bytes)| bytes.chunks(DIGEST_CHUNK).map(move |c| (s, c)))
        .collect();
    let chunk_digests: Vec<(usize, [u8; 32])> = chunks
        .par_iter()
        .map(|&(s, c)| (s, Sha256::digest(c).into()))
        .collect();
    let mut hashers: Vec<Sha256> = sections
        .iter()
        .map(|bytes| {
            let mut h = Sha256::new();
            h.update(b"cuzk r1cs section\0");
            h.update((bytes.len() as u64).to_le_bytes());
            h
        })
        .collect();
    for (s, d) in &chunk_digests {
        hashers[*s].update(d);
    }
    let mut out = [[0u8; 32]; SECTIONS];
    for (o, h) in out.iter_mut().zip(hashers) {
        *o = h.finalize().into();
    }
    out
}

/// Section offsets: each at the first aligned offset after the previous.
fn layout(lens: &[usize; SECTIONS]) -> [Range<usize>; SECTIONS] {
    let mut at = HEADER_LEN;
    lens.map(|len| {
        let start = at.next_multiple_of(SECTION_ALIGN);
        at = start + len;
        start..at
    })
}

/// Writes `r1cs` as the cache file of circuit `id` at `path`, atomically:
/// into a temporary file in the same directory, flushed to disk, then
/// renamed over `path`.
pub fn write(path: &Path, id: &CircuitId, r1cs: &R1cs) -> Result<(), CacheError> {
    let io = |op: &'static str| {
        move |source| CacheError::Io {
            op,
            path: path.to_owned(),
            source,
        }
    };
    let sections = Sections::of(r1cs);
    let all = sections.all();
    let digests = digests(&all);
    let ranges = layout(&all.map(<[u8]>::len));
    let header = header(id, r1cs, sections.id_width, &ranges, &digests);

    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".r1cs-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io("create a temporary file beside"))?;
    {
        let mut out = BufWriter::with_capacity(4 << 20, tmp.as_file_mut());
        out.write_all(&header).map_err(io("write"))?;
        let mut at = HEADER_LEN;
        for (bytes, range) in all.iter().zip(&ranges) {
            out.write_all(&vec![0u8; range.start - at])
                .map_err(io("write"))?;
            out.write_all(bytes).map_err(io("write"))?;
            at = range.end;
        }
        out.flush().map_err(io("write"))?;
    }
    tmp.as_file().sync_all().map_err(io("fsync"))?;
    tmp.persist(path).map_err(|e| CacheError::Io {
        op: "rename a temporary file to",
        path: path.to_owned(),
        source: e.error,
    })?;
    // The rename itself is durable once the directory is.
    if let Ok(d) = File::open(dir) {
        d.sync_all().map_err(io("fsync the directory of"))?;
    }
    Ok(())
}

fn header(
    id: &CircuitId,
    r1cs: &R1cs,
    id_width: usize,
    ranges: &[Range<usize>; SECTIONS],
    digests: &[[u8; 32]; SECTIONS],
) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&(id_width as u32).to_le_bytes());
    h.extend_from_slice(&id.0);
    h.extend_from_slice(&shape_bytes(&r1cs.shape));
    h.extend_from_slice(&(r1cs.coeffs.len() as u64).to_le_bytes());
    debug_assert_eq!(h.len(), SECTION_TABLE_AT);
    for (range, digest) in ranges.iter().zip(digests) {
        h.extend_from_slice(&(range.start as u64).to_le_bytes());
        h.extend_from_slice(&(range.len() as u64).to_le_bytes());
        h.extend_from_slice(digest);
    }
    h.resize(HEADER_DIGEST_AT, 0);
    let digest = Sha256::digest(&h);
    h.extend_from_slice(&digest);
    h
}
