//! The pre-compiled circuit cache file: what is written is read back and
//! proves the same; every kind of bad file is refused with its reason.

use std::fs;
use std::path::{Path, PathBuf};

use cuzk_synth::precompiled::cache::{self, CacheError, CircuitId, MappedR1cs, FORMAT_VERSION};
use cuzk_synth::precompiled::{record, witness, R1cs};
use cuzk_synth::{synthesize, DemoCircuit};

/// 2^15 at the default share: one SHA block (506 distinct coefficients,
/// so the table and u16 ids are exercised) and a multiplication chain.
fn recorded() -> (DemoCircuit, R1cs) {
    let circuit = DemoCircuit::new(15, DemoCircuit::DEFAULT_SHA_SHARE, 4);
    let r1cs = record(circuit.clone()).unwrap();
    (circuit, r1cs)
}

fn id() -> CircuitId {
    CircuitId::from_name("demo-k15-sha95")
}

fn written(dir: &Path) -> (PathBuf, DemoCircuit, R1cs) {
    let (circuit, r1cs) = recorded();
    let path = dir.join("demo.r1cs");
    cache::write(&path, &id(), &r1cs).unwrap();
    (path, circuit, r1cs)
}

#[test]
fn a_written_file_maps_back_to_the_same_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (path, circuit, r1cs) = written(dir.path());
    let mapped = MappedR1cs::open(&path, &id()).unwrap();
    assert_eq!(mapped.id(), id());
    assert_eq!(mapped.shape(), r1cs.shape());
    assert_eq!(mapped.as_ref().stats(), r1cs.as_ref().stats());
    assert_eq!(
        mapped.file_bytes() as u64,
        fs::metadata(&path).unwrap().len()
    );
    let expected = synthesize(circuit.clone()).unwrap();
    let actual = mapped
        .as_ref()
        .synthesize(witness(circuit).unwrap())
        .unwrap();
    assert!(
        actual == expected,
        "the mapped recording evaluates differently"
    );
    // Nothing but the file is left in the directory.
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("demo.r1cs")]);
}

#[test]
fn content_ids_name_the_content() {
    let (_, r1cs) = recorded();
    let again = record(DemoCircuit::new(15, DemoCircuit::DEFAULT_SHA_SHARE, 99)).unwrap();
    assert_eq!(
        r1cs.content_id(),
        again.content_id(),
        "the witness seed is not content"
    );
    let other = record(DemoCircuit::new(15, 0.0, 4)).unwrap();
    assert_ne!(r1cs.content_id(), other.content_id());
    assert_ne!(r1cs.content_id(), id());
    assert_eq!(id().to_string().len(), 64);
}

#[test]
fn rewriting_leaves_an_open_mapping_intact() {
    let dir = tempfile::tempdir().unwrap();
    let (path, circuit, r1cs) = written(dir.path());
    let old = MappedR1cs::open(&path, &id()).unwrap();
    let other = record(DemoCircuit::new(12, 0.0, 1)).unwrap();
    let other_id = CircuitId::from_name("other");
    cache::write(&path, &other_id, &other).unwrap();
    assert_eq!(old.shape(), r1cs.shape());
    let expected = synthesize(circuit.clone()).unwrap();
    assert!(old.as_ref().synthesize(witness(circuit).unwrap()).unwrap() == expected);
    assert_eq!(
        MappedR1cs::open(&path, &other_id).unwrap().shape(),
        other.shape()
    );
}

/// Writes the demo file, lets `damage` change its bytes, and returns why
/// opening it was refused.
fn refused(damage: impl FnOnce(&mut Vec<u8>)) -> CacheError {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = written(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    damage(&mut bytes);
    fs::write(&path, &bytes).unwrap();
    let err = MappedR1cs::open(&path, &id()).expect_err("a damaged file was accepted");
    let message = err.to_string();
    assert!(
        message.contains("demo.r1cs"),
        "the path is named: {message}"
    );
    err
}

/// Byte offset of section `s`'s (offset, length) in the header.
fn section_entry(s: usize) -> usize {
    104 + 48 * s
}

fn section_range(bytes: &[u8], s: usize) -> std::ops::Range<usize> {
    let at = section_entry(s);
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
    word(at)..word(at) + word(at + 8)
}

#[test]
fn truncated_files_are_refused() {
    let err = refused(|b| b.truncate(b.len() - 1));
    assert!(
        matches!(err, CacheError::Truncated { expected, actual, .. } if expected == actual + 1),
        "{err}"
    );
    let err = refused(|b| b.truncate(100));
    assert!(
        matches!(
            err,
            CacheError::Truncated {
                expected: 1024,
                actual: 100,
                ..
            }
        ),
        "{err}"
    );
    let err = refused(Vec::clear);
    assert!(
        matches!(err, CacheError::Truncated { actual: 0, .. }),
        "{err}"
    );
}

#[test]
fn other_files_and_versions_are_refused() {
    let err = refused(|b| b[..8].copy_from_slice(b"NOTACACH"));
    assert!(
        matches!(err, CacheError::NotACache { found, .. } if &found == b"NOTACACH"),
        "{err}"
    );
    let err = refused(|b| b[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes()));
    assert!(
        matches!(err, CacheError::Version { found, supported, .. }
            if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION),
        "{err}"
    );
}

#[test]
fn another_circuits_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, r1cs) = written(dir.path());
    let asked = r1cs.content_id();
    let err = MappedR1cs::open(&path, &asked).unwrap_err();
    assert!(
        matches!(err, CacheError::OtherCircuit { expected, found, .. } if expected == asked && found == id()),
        "{err}"
    );
    assert!(err.to_string().contains(&asked.to_string()), "{err}");
}

#[test]
fn corrupt_headers_and_sections_are_refused_naming_the_part() {
    // A count in the header (the number of constraints).
    let err = refused(|b| b[48] ^= 1);
    assert!(
        matches!(err, CacheError::Checksum { what: "header", .. }),
        "{err}"
    );
    // One bit of each section.
    let names = [
        (0, "coefficients"),
        (2, "A columns"),
        (3, "A coefficient ids"),
        (4, "B row offsets"),
        (9, "C coefficient ids"),
        (12, "B-aux density"),
    ];
    for (section, name) in names {
        let err = refused(|b| {
            let range = section_range(b, section);
            b[range.start + range.len() / 2] ^= 0x10;
        });
        assert!(
            matches!(err, CacheError::Checksum { what, .. } if what == name),
            "{name}: {err}"
        );
    }
    // Bytes after the last section.
    let err = refused(|b| b.push(0));
    assert!(matches!(err, CacheError::Malformed { .. }), "{err}");
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.r1cs");
    let err = MappedR1cs::open(&path, &id()).unwrap_err();
    assert!(matches!(err, CacheError::Io { op: "open", .. }), "{err}");
    assert!(err.to_string().contains("absent.r1cs"), "{err}");
}
