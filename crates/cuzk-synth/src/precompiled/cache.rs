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
//! and never used. [`write`] is atomic (a temporary sibling, fsync,
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

/// A cache file, checked and mapped: lends the [`R1csRef`] it holds.
///
/// The matrices stay in the mapping (the page cache); the coefficient table
/// and the densities, small, are decoded into memory.
pub struct MappedR1cs {
    map: memmap2::Mmap,
    id: CircuitId,
    shape: CircuitShape,
    coeffs: Vec<Fr>,
    id_width: usize,
    /// The nine matrix sections' byte ranges in `map`.
    matrices: [Range<usize>; 9],
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl fmt::Debug for MappedR1cs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedR1cs")
            .field("id", &self.id)
            .field("shape", &self.shape)
            .field("bytes", &self.map.len())
            .finish_non_exhaustive()
    }
}

/// Reads header fields in order.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().expect("split at N")
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

impl MappedR1cs {
    /// Opens, maps and checks the cache file at `path`, which must hold
    /// circuit `expected`; see the [module documentation](self) for what is
    /// checked. Costs one read of the file (parallel checksums).
    pub fn open(path: &Path, expected: &CircuitId) -> Result<Self, CacheError> {
        let io = |op: &'static str| {
            move |source| CacheError::Io {
                op,
                path: path.to_owned(),
                source,
            }
        };
        let file = File::open(path).map_err(io("open"))?;
        let actual = file.metadata().map_err(io("stat"))?.len();
        if actual < HEADER_LEN as u64 {
            let mut found = [0u8; 8];
            let head = std::fs::read(path).map_err(io("read"))?;
            let n = head.len().min(8);
            found[..n].copy_from_slice(&head[..n]);
            if n == 8 && found != MAGIC {
                return Err(CacheError::NotACache {
                    path: path.to_owned(),
                    found,
                });
            }
            return Err(CacheError::Truncated {
                path: path.to_owned(),
                expected: HEADER_LEN as u64,
                actual,
            });
        }
        let map = map_file(&file).map_err(io("map"))?;
        Self::check(map, path, expected)
    }

    fn check(map: memmap2::Mmap, path: &Path, expected: &CircuitId) -> Result<Self, CacheError> {
        let malformed = |problem: String| CacheError::Malformed {
            path: path.to_owned(),
            problem,
        };
        let bytes: &[u8] = &map;
        let mut f = Fields(&bytes[..HEADER_LEN]);
        let magic: [u8; 8] = f.take();
        if magic != MAGIC {
            return Err(CacheError::NotACache {
                path: path.to_owned(),
                found: magic,
            });
        }
        let version = f.u32();
        if version != FORMAT_VERSION {
            return Err(CacheError::Version {
                path: path.to_owned(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if Sha256::digest(&bytes[..HEADER_DIGEST_AT])[..] != bytes[HEADER_DIGEST_AT..HEADER_LEN] {
            return Err(CacheError::Checksum {
                path: path.to_owned(),
                what: "header",
            });
        }
        let id_width = f.u32() as usize;
        let id = CircuitId(f.take());
        if id != *expected {
            return Err(CacheError::OtherCircuit {
                path: path.to_owned(),
                expected: *expected,
                found: id,
            });
        }
        let counts: [u64; 6] = std::array::from_fn(|_| f.u64());
        let to_usize = |n: u64| {
            usize::try_from(n).map_err(|_| malformed(format!("a count of {n} in the header")))
        };
        let [constraints, inputs, aux, a_aux, b_input, b_aux] = counts;
        let shape = CircuitShape {
            num_constraints: to_usize(constraints)?,
            num_inputs: to_usize(inputs)?,
            num_aux: to_usize(aux)?,
            a_aux_density: to_usize(a_aux)?,
            b_input_density: to_usize(b_input)?,
            b_aux_density: to_usize(b_aux)?,
            domain_log2: crate::assignment::domain_log2(to_usize(constraints)?),
        };
        let num_coeffs = to_usize(f.u64())?;
        let mut ranges: [Range<usize>; SECTIONS] = std::array::from_fn(|_| 0..0);
        let mut stored = [[0u8; 32]; SECTIONS];
        for (range, digest) in ranges.iter_mut().zip(&mut stored) {
            let (start, len) = (to_usize(f.u64())?, to_usize(f.u64())?);
            *range = start..start.saturating_add(len);
            *digest = f.take();
        }

        // The layout must be the one `write` makes for this shape.
        if id_width != 2 && id_width != 4 {
            return Err(malformed(format!("coefficient ids of {id_width} bytes")));
        }
        let section = |s: usize| -> &Range<usize> { &ranges[s] };
        let nnz = |m: usize| section(2 + 3 * m).len() / 4;
        let words = |bits: usize| bits.div_ceil(64) * 8;
        let expected_lens: [usize; SECTIONS] = [
            num_coeffs.saturating_mul(32),
            (shape.num_constraints + 1) * 4,
            nnz(0) * 4,
            nnz(0) * id_width,
            (shape.num_constraints + 1) * 4,
            nnz(1) * 4,
            nnz(1) * id_width,
            (shape.num_constraints + 1) * 4,
            nnz(2) * 4,
            nnz(2) * id_width,
            words(shape.num_aux),
            words(shape.num_inputs),
            words(shape.num_aux),
        ];
        let expected_ranges = layout(&expected_lens);
        for s in 0..SECTIONS {
            if ranges[s] != expected_ranges[s] {
                return Err(malformed(format!(
                    "the {} section is at {:?}, the layout for this shape puts it at {:?}",
                    SECTION_NAMES[s], ranges[s], expected_ranges[s]
                )));
            }
        }
        let end = ranges[SECTIONS - 1].end;
        if bytes.len() < end {
            return Err(CacheError::Truncated {
                path: path.to_owned(),
                expected: end as u64,
                actual: bytes.len() as u64,
            });
        }
        if bytes.len() > end {
            return Err(malformed(format!(
                "{} bytes past the last section",
                bytes.len() - end
            )));
        }

        let all: [&[u8]; SECTIONS] = std::array::from_fn(|s| &bytes[ranges[s].clone()]);
        let computed = digests(&all);
        if let Some(s) = (0..SECTIONS).find(|&s| computed[s] != stored[s]) {
            return Err(CacheError::Checksum {
                path: path.to_owned(),
                what: SECTION_NAMES[s],
            });
        }

        let coeffs = decode_coeffs(all[0]).ok_or_else(|| {
            malformed("a coefficient is not canonical, or the table does not start 1, -1".into())
        })?;
        let density = |s: usize, len: usize, count: usize| -> Result<Density, CacheError> {
            let words: Vec<u64> = bytemuck::cast_slice(all[s]).to_vec();
            if len % 64 != 0 && words.last().is_some_and(|w| w >> (len % 64) != 0) {
                return Err(malformed(format!(
                    "the {} has bits past its end",
                    SECTION_NAMES[s]
                )));
            }
            let density = Density::from_words(words, len);
            if density.count_ones() != count {
                return Err(malformed(format!(
                    "the {} has {} bits set, the header says {count}",
                    SECTION_NAMES[s],
                    density.count_ones()
                )));
            }
            Ok(density)
        };
        let a_aux_density = density(10, shape.num_aux, shape.a_aux_density)?;
        let b_input_density = density(11, shape.num_inputs, shape.b_input_density)?;
        let b_aux_density = density(12, shape.num_aux, shape.b_aux_density)?;

        let matrices: [Range<usize>; 9] = std::array::from_fn(|s| ranges[s + 1].clone());
        let mapped = Self {
            map,
            id,
            shape,
            coeffs,
            id_width,
            matrices,
            a_aux_density,
            b_input_density,
            b_aux_density,
        };
        let columns = mapped.shape.num_inputs + mapped.shape.num_aux;
        let view = mapped.as_ref();
        for (m, name) in [(view.a, 'A'), (view.b, 'B'), (view.c, 'C')] {
            check_matrix(&m, columns, num_coeffs)
                .map_err(|problem| malformed(format!("matrix {name}: {problem}")))?;
        }
        Ok(mapped)
    }

    /// The recording, borrowed from the mapping.
    pub fn as_ref(&self) -> R1csRef<'_> {
        let bytes: &[u8] = &self.map;
        let section = |s: usize| &bytes[self.matrices[s].clone()];
        let matrix = |m: usize| MatrixRef {
            row_ptr: bytemuck::cast_slice(section(3 * m)),
            cols: bytemuck::cast_slice(section(3 * m + 1)),
            ids: match self.id_width {
                2 => CoeffIdsRef::U16(bytemuck::cast_slice(section(3 * m + 2))),
                _ => CoeffIdsRef::U32(bytemuck::cast_slice(section(3 * m + 2))),
            },
        };
        R1csRef {
            shape: &self.shape,
            coeffs: &self.coeffs,
            a: matrix(0),
            b: matrix(1),
            c: matrix(2),
            a_aux_density: &self.a_aux_density,
            b_input_density: &self.b_input_density,
            b_aux_density: &self.b_aux_density,
        }
    }

    /// The circuit id in the file.
    pub fn id(&self) -> CircuitId {
        self.id
    }

    /// The recorded shape.
    pub fn shape(&self) -> &CircuitShape {
        &self.shape
    }

    /// Size of the file.
    pub fn file_bytes(&self) -> usize {
        self.map.len()
    }
}

/// `1, -1, ...` as canonical 32-byte encodings, or `None`.
fn decode_coeffs(bytes: &[u8]) -> Option<Vec<Fr>> {
    let coeffs = bytes
        .chunks_exact(32)
        .map(|c| {
            let mut repr = <Fr as PrimeField>::Repr::default();
            repr.as_mut().copy_from_slice(c);
            Option::<Fr>::from(Fr::from_repr(repr))
        })
        .collect::<Option<Vec<Fr>>>()?;
    (coeffs.len() >= 2 && coeffs[0] == Fr::ONE && coeffs[1] == -Fr::ONE).then_some(coeffs)
}

/// Row offsets from 0, ascending, ending at the term count; columns and ids
/// in range. What the evaluator indexes by, checked once so that a file
/// whose writer was wrong fails here rather than mid-proof.
fn check_matrix(m: &MatrixRef<'_>, columns: usize, coeffs: usize) -> Result<(), String> {
    let (first, last) = (m.row_ptr[0], m.row_ptr[m.row_ptr.len() - 1]);
    if first != 0 || last as usize != m.cols.len() {
        return Err(format!(
            "row offsets run {first}..{last} over {} terms",
            m.cols.len()
        ));
    }
    if !m.row_ptr.par_windows(2).all(|w| w[0] <= w[1]) {
        return Err("row offsets descend".into());
    }
    if let Some(col) = m.cols.par_iter().find_any(|&&c| c as usize >= columns) {
        return Err(format!("column {col} of {columns}"));
    }
    let bad_id = match m.ids {
        CoeffIdsRef::U16(ids) => ids
            .par_iter()
            .find_any(|&&id| usize::from(id) >= coeffs)
            .map(|&id| u32::from(id)),
        CoeffIdsRef::U32(ids) => ids
            .par_iter()
            .find_any(|&&id| id as usize >= coeffs)
            .copied(),
    };
    match bad_id {
        Some(id) => Err(format!("coefficient id {id} of a table of {coeffs}")),
        None => Ok(()),
    }
}

/// Maps `file` read-only.
///
/// Sound only while nobody modifies or truncates the file: cache files are
/// only ever replaced by rename ([`write`]), which leaves existing mappings
/// intact, and callers must not point this at a file another process
/// rewrites in place.
#[allow(unsafe_code)]
fn map_file(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the file is not changed while mapped
    // (the bytes behind `&[u8]` would change, or a truncation would fault).
    // Our writer never changes a file in place (temporary file + rename),
    // per the contract documented above; the map is read-only.
    unsafe { memmap2::Mmap::map(file) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file whose checksums are right (its writer was wrong) is still
    /// refused when its structure is out of range.
    #[test]
    fn checksummed_but_inconsistent_files_are_malformed() {
        let good = super::super::record(crate::DemoCircuit::new(10, 0.0, 1)).unwrap();
        let columns = (good.shape.num_inputs + good.shape.num_aux) as u32;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.r1cs");
        let id = CircuitId::from_name("bad");
        type Damage = fn(&mut R1cs, u32);
        let cases: [(&str, Damage); 3] = [
            ("matrix B: column", |r, columns| r.b.cols[3] = columns),
            ("matrix A: row offsets descend", |r, _| {
                r.a.row_ptr.swap(5, 6)
            }),
            ("matrix C: coefficient id", |r, _| match &mut r.c.ids {
                CoeffIds::U16(ids) => ids[0] = 2,
                CoeffIds::U32(ids) => ids[0] = 2,
            }),
        ];
        for (expected, damage) in cases {
            let mut bad = good.clone();
            damage(&mut bad, columns);
            write(&path, &id, &bad).unwrap();
            let err = MappedR1cs::open(&path, &id).unwrap_err();
            assert!(
                matches!(&err, CacheError::Malformed { problem, .. } if problem.starts_with(expected)),
                "{expected}: {err}"
            );
        }
        write(&path, &id, &good).unwrap();
        assert_eq!(MappedR1cs::open(&path, &id).unwrap().shape(), &good.shape);
    }
}
