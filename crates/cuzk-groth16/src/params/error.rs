//! [`KeyError`]: why a key file could not be read or written, naming the
//! [`Section`] and the byte offset.

use super::section::*;
use super::*;

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

pub(super) fn point_label(section: Section, index: u64) -> String {
    if Section::FIXED.contains(&section) {
        String::new()
    } else {
        format!(" (point {index})")
    }
}
