//! The shape of a key file from its counts alone ([`KeySummary`],
//! [`SectionSpan`]): what `cuzk info` prints and how the path readers check a
//! file before decoding a point. Also opening, sizing and mapping the file.

use super::error::*;
use super::section::*;
use super::*;

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
pub(super) fn scan_layout(
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
pub(super) fn require(
    section: Section,
    offset: u64,
    needed: u64,
    len: u64,
) -> Result<(), KeyError> {
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

pub(super) fn read_u32_at<R: Read + Seek>(reader: &mut R, offset: u64) -> io::Result<u32> {
    reader.seek(SeekFrom::Start(offset))?;
    let mut be = [0u8; 4];
    reader.read_exact(&mut be)?;
    Ok(u32::from_be_bytes(be))
}

pub(super) fn open(path: &Path) -> Result<File, KeyError> {
    File::open(path).map_err(|source| KeyError::Open {
        path: path.to_owned(),
        source,
    })
}

pub(super) fn file_len(file: &File, path: &Path) -> Result<u64, KeyError> {
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
pub(super) fn map_file(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified for the
    // life of the map (that would change bytes behind a `&[u8]`, or fault on
    // truncation). The map lives only inside `ProvingKey::read_mmap`, which
    // decodes it into owned points and drops it; key files are replaced by
    // rename, never rewritten in place, per the contract documented above.
    unsafe { memmap2::Mmap::map(file) }
}
