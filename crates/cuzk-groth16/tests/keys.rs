//! Key files: interop with bellperson, and every way a file can be bad.
//!
//! Each case runs through all four readers (stream, bytes, file, mmap) via
//! [`check_accepted`] / [`check_refused`], which compare against one
//! expected outcome.

mod tiny;

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use bellperson::groth16::{Parameters, VerifyingKey as BpVerifyingKey};
use blstrs::Bls12;
use cuzk_groth16::encoding::{EncodingFault, PointCheck, PointError};
use cuzk_groth16::params::{KeyError, KeySummary, ProvingKey, Section, VerifyingKey};

use tiny::{
    bellperson_bytes, bellperson_params, g1_off_subgroup_uncompressed,
    g2_off_subgroup_uncompressed, infinity_uncompressed,
};

/// Records the largest single allocation, so a corrupted count can be shown
/// not to have been trusted for one.
struct TrackLargest;

static LARGEST_ALLOCATION: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards its arguments unchanged to the system
// allocator, which upholds the `GlobalAlloc` contract; recording a size has
// no effect on the memory handed out.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for TrackLargest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: TrackLargest = TrackLargest;

/// The ways a key is read; each must give the same result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Stream,
    Bytes,
    Path,
    Mmap,
}

const READERS: [Reader; 4] = [Reader::Stream, Reader::Bytes, Reader::Path, Reader::Mmap];

fn read_with(reader: Reader, bytes: &[u8], check: PointCheck) -> Result<ProvingKey, KeyError> {
    match reader {
        Reader::Stream => ProvingKey::read(bytes, check),
        Reader::Bytes => ProvingKey::from_bytes(bytes, check),
        Reader::Path | Reader::Mmap => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("key.params");
            fs::write(&path, bytes).unwrap();
            if reader == Reader::Path {
                ProvingKey::read_from_path(&path, check)
            } else {
                ProvingKey::read_mmap(&path, check)
            }
        }
    }
}

/// A refusal, without the parts that cannot be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Truncated {
        section: Section,
        offset: u64,
        needed: u64,
        available: u64,
    },
    BadPoint {
        section: Section,
        index: u64,
        offset: u64,
        problem: PointError,
    },
    Trailing {
        offset: u64,
        count: u64,
    },
}

fn failure(e: &KeyError) -> Failure {
    match *e {
        KeyError::Truncated {
            section,
            offset,
            needed,
            available,
        } => Failure::Truncated {
            section,
            offset,
            needed,
            available,
        },
        KeyError::BadPoint {
            section,
            index,
            offset,
            problem,
        } => Failure::BadPoint {
            section,
            index,
            offset,
            problem,
        },
        KeyError::TrailingBytes { offset, count } => Failure::Trailing { offset, count },
        ref other => panic!("unexpected error kind: {other}"),
    }
}

fn check_accepted(bytes: &[u8], check: PointCheck, expected: &ProvingKey) {
    for reader in READERS {
        match read_with(reader, bytes, check) {
            Ok(key) => assert!(key == *expected, "{reader:?}: decoded a different key"),
            Err(e) => panic!("{reader:?} refused a good key: {e}"),
        }
    }
}

/// Every reader refuses `bytes` with `expected`. The stream reader stops
/// after `b_g2` and so does not see trailing bytes.
fn check_refused(bytes: &[u8], check: PointCheck, expected: Failure) {
    for reader in READERS {
        if reader == Reader::Stream && matches!(expected, Failure::Trailing { .. }) {
            continue;
        }
        match read_with(reader, bytes, check) {
            Ok(_) => panic!("{reader:?} accepted a bad key, expected {expected:?}"),
            Err(e) => assert_eq!(failure(&e), expected, "{reader:?}: {e}"),
        }
    }
}

/// Byte offset of one point of a section.
fn point_offset(s: &KeySummary, section: Section, index: u64) -> u64 {
    let mut fixed = 0;
    for f in Section::FIXED {
        if f == section {
            return fixed;
        }
        fixed += f.point_len();
    }
    s.span(section).unwrap().points_offset() + index * section.point_len()
}

/// The key as a list of (section, offset, length) items in file order: the
/// independent model the truncation tests check against.
fn items(s: &KeySummary) -> Vec<(Section, u64, u64)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for f in Section::FIXED {
        out.push((f, offset, f.point_len()));
        offset += f.point_len();
    }
    for span in s.spans() {
        out.push((span.section, span.count_offset, 4));
        out.push((span.section, span.points_offset(), span.points_len()));
    }
    out
}

fn tiny_key() -> (Parameters<Bls12>, Vec<u8>, ProvingKey) {
    let params = bellperson_params(1);
    let bytes = bellperson_bytes(&params);
    let key = ProvingKey::from(&params);
    (params, bytes, key)
}

fn splice(bytes: &[u8], offset: u64, with: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let at = offset as usize;
    out[at..at + with.len()].copy_from_slice(with);
    out
}

#[test]
fn bellperson_key_decodes_identically_through_every_reader() {
    let (_, bytes, key) = tiny_key();
    check_accepted(&bytes, PointCheck::Full, &key);
    check_accepted(&bytes, PointCheck::OnCurve, &key);
}

#[test]
fn rewrite_is_byte_identical_and_bellperson_reads_it() {
    let (params, bytes, key) = tiny_key();
    assert_eq!(key.to_bytes(), bytes);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.params");
    key.write_to_path(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap(), bytes);
    let theirs = Parameters::<Bls12>::read(fs::File::open(&path).unwrap(), true).unwrap();
    assert!(theirs == params, "bellperson read back a different key");
    assert!(Parameters::<Bls12>::from(key) == params);
}

#[test]
fn write_to_path_replaces_atomically_and_leaves_no_temporary() {
    let (_, bytes, key) = tiny_key();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.params");
    fs::write(&path, b"old contents").unwrap();
    key.write_to_path(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap(), bytes);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["k.params"]);

    let missing = dir.path().join("no-such-dir").join("k.params");
    assert!(matches!(
        key.write_to_path(&missing),
        Err(KeyError::Write { .. })
    ));
}

#[test]
fn verifying_key_files_interoperate() {
    let (params, bytes, key) = tiny_key();
    let mut theirs = Vec::new();
    params.vk.write(&mut theirs).unwrap();
    assert_eq!(key.vk.to_bytes(), theirs);
    assert_eq!(key.vk.encoded_len(), theirs.len() as u64);
    assert_eq!(VerifyingKey::from_bytes(&theirs).unwrap(), key.vk);
    assert_eq!(VerifyingKey::read(&theirs[..]).unwrap(), key.vk);
    assert!(BpVerifyingKey::<Bls12>::read(&key.vk.to_bytes()[..]).unwrap() == params.vk);
    assert!(BpVerifyingKey::<Bls12>::from(&key.vk) == params.vk);
    assert_eq!(key.vk.public_inputs(), 2);

    let dir = tempfile::tempdir().unwrap();
    let vk_path = dir.path().join("tiny.vk");
    fs::write(&vk_path, &theirs).unwrap();
    assert_eq!(VerifyingKey::read_from_path(&vk_path).unwrap(), key.vk);
    let params_path = dir.path().join("tiny.params");
    fs::write(&params_path, &bytes).unwrap();
    assert_eq!(
        ProvingKey::read_verifying_key(&params_path).unwrap(),
        key.vk
    );

    // A .vk file with anything after it is refused; the head of a .params
    // file read as a stream is fine.
    assert!(matches!(
        VerifyingKey::from_bytes(&bytes),
        Err(KeyError::TrailingBytes { offset, .. }) if offset == theirs.len() as u64
    ));
    assert_eq!(VerifyingKey::read(&bytes[..]).unwrap(), key.vk);
    assert!(matches!(
        VerifyingKey::read_from_path(&params_path),
        Err(KeyError::TrailingBytes { offset, count })
            if offset == theirs.len() as u64 && count == (bytes.len() - theirs.len()) as u64
    ));
}

#[test]
fn summary_reads_counts_without_decoding() {
    let (_, bytes, key) = tiny_key();
    let summary = key.summary();
    assert_eq!(KeySummary::from_bytes(&bytes).unwrap(), summary);
    assert_eq!(
        KeySummary::read(std::io::Cursor::new(&bytes)).unwrap(),
        summary
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.params");
    fs::write(&path, &bytes).unwrap();
    assert_eq!(KeySummary::from_path(&path).unwrap(), summary);
    assert_eq!(summary.file_len, bytes.len() as u64);
    assert_eq!(summary.h.count, key.h.len() as u64);
    assert_eq!(summary.b_g2.count, key.b_g2.len() as u64);
    insta::assert_snapshot!("tiny_key_summary", summary.to_string());

    // Points need not be valid for a summary: corrupt every h point.
    let s = &summary;
    let mut garbage = bytes.clone();
    garbage[s.h.points_offset() as usize..s.h.end() as usize].fill(0xAB);
    assert_eq!(KeySummary::from_bytes(&garbage).unwrap(), summary);
}

#[test]
fn truncation_names_the_section_and_offset() {
    let (_, bytes, key) = tiny_key();
    let summary = key.summary();
    let model = items(&summary);
    let mut cuts: Vec<u64> = model
        .iter()
        .flat_map(|&(_, offset, len)| [offset, offset + 1, offset + len / 2, offset + len - 1])
        .filter(|&t| t < bytes.len() as u64)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    assert!(cuts.len() > 40);

    for cut in cuts {
        let &(section, offset, needed) = model
            .iter()
            .find(|&&(_, offset, len)| offset + len > cut)
            .unwrap();
        check_refused(
            &bytes[..cut as usize],
            PointCheck::OnCurve,
            Failure::Truncated {
                section,
                offset,
                needed,
                available: cut - offset,
            },
        );
        assert!(matches!(
            KeySummary::from_bytes(&bytes[..cut as usize]),
            Err(KeyError::Truncated { section: s, offset: o, .. }) if s == section && o == offset
        ));
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let (_, mut bytes, _) = tiny_key();
    let len = bytes.len() as u64;
    bytes.extend_from_slice(&[0, 1, 2]);
    check_refused(
        &bytes,
        PointCheck::OnCurve,
        Failure::Trailing {
            offset: len,
            count: 3,
        },
    );
}

#[test]
fn corrupted_counts_are_refused_without_a_large_allocation() {
    let (_, bytes, key) = tiny_key();
    let summary = key.summary();
    for span in summary.spans() {
        let corrupt = splice(&bytes, span.count_offset, &u32::MAX.to_be_bytes());
        check_refused(
            &corrupt,
            PointCheck::OnCurve,
            Failure::Truncated {
                section: span.section,
                offset: span.points_offset(),
                needed: u64::from(u32::MAX) * span.section.point_len(),
                available: bytes.len() as u64 - span.points_offset(),
            },
        );
    }
    // The file is a few KB; nothing near count × point size (0.4–0.8 TB)
    // may have been requested. The bound leaves room for the 8 MiB read
    // chunks and everything else the test harness allocates.
    let largest = LARGEST_ALLOCATION.load(Ordering::Relaxed);
    assert!(largest < 64 << 20, "largest allocation {largest} bytes");

    let h = summary.h;
    let err = ProvingKey::from_bytes(
        &splice(&bytes, h.count_offset, &u32::MAX.to_be_bytes()),
        PointCheck::OnCurve,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "key data ends inside section `h`: 412316860320 bytes needed from byte {}, \
             only {} present (truncated file or corrupted count)",
            h.points_offset(),
            bytes.len() as u64 - h.points_offset()
        )
    );

    // A count one too small shifts everything after it: refused, no panic.
    let shorter = splice(&bytes, h.count_offset, &(h.count as u32 - 1).to_be_bytes());
    for reader in READERS {
        assert!(read_with(reader, &shorter, PointCheck::OnCurve).is_err());
    }
}

/// One corrupted point: where, what bytes, under which check, and the
/// problem every reader must report (`None`: the key is accepted).
struct BadPointCase {
    section: Section,
    index: u64,
    bytes: Vec<u8>,
    check: PointCheck,
    problem: Option<PointError>,
}

#[test]
fn bad_points_name_the_section_index_and_offset() {
    let (_, bytes, key) = tiny_key();
    let s = key.summary();
    let last = |section: Section| s.span(section).unwrap().count - 1;

    let flip_last_bit = |section: Section, index: u64| {
        let at = (point_offset(&s, section, index) + section.point_len() - 1) as usize;
        let mut p = bytes[at + 1 - section.point_len() as usize..=at].to_vec();
        *p.last_mut().unwrap() ^= 1;
        p
    };
    let g1_bad_subgroup = g1_off_subgroup_uncompressed().to_vec();
    let g2_bad_subgroup = g2_off_subgroup_uncompressed().to_vec();
    let mut compressed_flag = key.a[1].to_uncompressed();
    compressed_flag[0] |= 0x80;
    let mut big_x = key.b_g1[0].to_uncompressed();
    big_x[..48].fill(0x1f);

    use PointCheck::{Full, OnCurve};
    let case = |section, index, bytes: &[u8], check, problem| BadPointCase {
        section,
        index,
        bytes: bytes.to_vec(),
        check,
        problem,
    };
    let cases = [
        case(
            Section::AlphaG1,
            0,
            &flip_last_bit(Section::AlphaG1, 0),
            OnCurve,
            Some(PointError::NotOnCurve),
        ),
        case(
            Section::BetaG2,
            0,
            &g2_bad_subgroup,
            OnCurve,
            Some(PointError::NotInSubgroup),
        ),
        case(
            Section::DeltaG2,
            0,
            &infinity_uncompressed(192),
            OnCurve,
            Some(PointError::Identity),
        ),
        case(
            Section::Ic,
            1,
            &g1_bad_subgroup,
            OnCurve,
            Some(PointError::NotInSubgroup),
        ),
        case(
            Section::H,
            7,
            &flip_last_bit(Section::H, 7),
            OnCurve,
            Some(PointError::NotOnCurve),
        ),
        case(
            Section::H,
            0,
            &g1_bad_subgroup,
            Full,
            Some(PointError::NotInSubgroup),
        ),
        case(Section::H, 0, &g1_bad_subgroup, OnCurve, None),
        case(
            Section::L,
            last(Section::L),
            &infinity_uncompressed(96),
            Full,
            Some(PointError::Identity),
        ),
        case(
            Section::A,
            1,
            &compressed_flag,
            OnCurve,
            Some(PointError::Encoding(EncodingFault::CompressionFlag {
                expected_compressed: false,
            })),
        ),
        case(
            Section::BG1,
            0,
            &big_x,
            OnCurve,
            Some(PointError::Encoding(EncodingFault::NonCanonicalCoordinate)),
        ),
        case(
            Section::BG2,
            last(Section::BG2),
            &g2_bad_subgroup,
            Full,
            Some(PointError::NotInSubgroup),
        ),
        case(Section::BG2, 0, &g2_bad_subgroup, OnCurve, None),
        case(
            Section::BG2,
            0,
            &flip_last_bit(Section::BG2, 0),
            OnCurve,
            Some(PointError::NotOnCurve),
        ),
    ];

    for c in cases {
        let offset = point_offset(&s, c.section, c.index);
        let corrupt = splice(&bytes, offset, &c.bytes);
        match c.problem {
            Some(problem) => check_refused(
                &corrupt,
                c.check,
                Failure::BadPoint {
                    section: c.section,
                    index: c.index,
                    offset,
                    problem,
                },
            ),
            None => {
                let accepted = ProvingKey::from_bytes(&corrupt, c.check).unwrap();
                check_accepted(&corrupt, c.check, &accepted);
            }
        }
    }
}

#[test]
fn the_first_bad_point_is_reported() {
    let (_, bytes, key) = tiny_key();
    let s = key.summary();
    let bad = infinity_uncompressed(96);
    let mut corrupt = bytes.clone();
    for index in [9, 2, 12] {
        corrupt = splice(&corrupt, point_offset(&s, Section::H, index), &bad);
    }
    check_refused(
        &corrupt,
        PointCheck::OnCurve,
        Failure::BadPoint {
            section: Section::H,
            index: 2,
            offset: point_offset(&s, Section::H, 2),
            problem: PointError::Identity,
        },
    );
    let err = ProvingKey::from_bytes(&corrupt, PointCheck::OnCurve).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "bad point in section `h` (point 2) at byte {}: the point at infinity, which is not allowed here",
            point_offset(&s, Section::H, 2)
        )
    );
}

#[test]
fn missing_files_name_the_path() {
    let path = Path::new("/nonexistent/cuzk/key.params");
    for result in [
        ProvingKey::read_from_path(path, PointCheck::OnCurve).map(|_| ()),
        ProvingKey::read_mmap(path, PointCheck::OnCurve).map(|_| ()),
        KeySummary::from_path(path).map(|_| ()),
    ] {
        let e = result.unwrap_err();
        assert!(matches!(e, KeyError::Open { .. }));
        assert!(e.to_string().contains("/nonexistent/cuzk/key.params"));
    }
}
