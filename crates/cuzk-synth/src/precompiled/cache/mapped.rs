//! [`MappedR1cs`]: a cache file opened, its digests and structure checked,
//! and its matrices lent in place from the mapping.

use super::*;

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
    /// circuit `expected`; see the [cache module](super) documentation for what is
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
        let good = crate::precompiled::record(crate::DemoCircuit::new(10, 0.0, 1)).unwrap();
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
