//! Decoding and encoding a key's points: in parallel on the rayon pool, from
//! bytes already in memory (a buffer or a mapped file) or from a stream read
//! in chunks while the previous chunk decodes; counts are never trusted for
//! an allocation.

use super::error::*;
use super::layout::*;
use super::section::*;
use super::*;

/// A point type that can appear in a key file.
pub(super) trait KeyPoint: Copy + Send + Sync + PartialEq + fmt::Debug {
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
pub(super) fn decode_points_into<P: KeyPoint>(
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
pub(super) fn encode_points<P: KeyPoint>(points: &[P], out: &mut [u8]) {
    out.par_chunks_exact_mut(P::LEN)
        .zip(points.par_iter())
        .for_each(|(dst, p)| p.encode_into(dst));
}

/// Chunk size for streamed reads and writes: large enough that a syscall
/// and a rayon fork per chunk are noise, small enough to stay in L3-ish
/// sizes per thread.
pub(super) const CHUNK_BYTES: usize = 8 << 20;

/// Key bytes, and the offset reached so far, for error messages.
pub(super) trait KeyInput {
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
pub(super) struct SliceInput<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
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
pub(super) struct StreamInput<R> {
    pub(super) reader: R,
    pub(super) pos: u64,
    /// Total length, when known: lets counts be checked before allocating.
    pub(super) len: Option<u64>,
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
pub(super) fn fill_from<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
) -> Result<usize, (usize, io::Error)> {
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

pub(super) fn read_count(input: &mut impl KeyInput, section: Section) -> Result<u64, KeyError> {
    let mut be = [0u8; 4];
    input.read_small(section, &mut be)?;
    Ok(u64::from(u32::from_be_bytes(be)))
}

pub(super) fn read_one<P: KeyPoint>(
    input: &mut impl KeyInput,
    section: Section,
) -> Result<P, KeyError> {
    // The vk points are few and always fully checked.
    let mut points = input.read_points::<P>(section, 1, PointCheck::Full)?;
    Ok(points.remove(0))
}

pub(super) fn read_counted<P: KeyPoint>(
    input: &mut impl KeyInput,
    section: Section,
    check: PointCheck,
) -> Result<Vec<P>, KeyError> {
    let count = read_count(input, section)?;
    input.read_points(section, count, check)
}

pub(super) fn read_vk(input: &mut impl KeyInput) -> Result<VerifyingKey, KeyError> {
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

pub(super) fn read_pk(
    input: &mut impl KeyInput,
    check: PointCheck,
) -> Result<ProvingKey, KeyError> {
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

pub(super) fn trailing(offset: u64, len: u64) -> Result<(), KeyError> {
    if offset < len {
        return Err(KeyError::TrailingBytes {
            offset,
            count: len - offset,
        });
    }
    Ok(())
}

/// Writes `count` as the section's u32 count.
pub(super) fn write_count<W: Write>(w: &mut W, section: Section, count: usize) -> io::Result<()> {
    let count = u32::try_from(count).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            KeyError::TooManyPoints { section, count },
        )
    })?;
    w.write_all(&count.to_be_bytes())
}

/// Writes points in chunks, encoding in parallel.
pub(super) fn write_points<P: KeyPoint, W: Write>(w: &mut W, points: &[P]) -> io::Result<()> {
    let per_chunk = (CHUNK_BYTES / P::LEN).max(1);
    let mut buf = vec![0u8; points.len().min(per_chunk) * P::LEN];
    for chunk in points.chunks(per_chunk) {
        let bytes = &mut buf[..chunk.len() * P::LEN];
        encode_points(chunk, bytes);
        w.write_all(bytes)?;
    }
    Ok(())
}
