//! Writing files so that a reader never sees a partial one: the one
//! implementation every cuzk crate uses for keys, proofs and parameter files.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Buffer of the writer handed to [`write_atomically`]'s closure.
const BUFFER_BYTES: usize = 8 << 20;

/// Writes a file through `write` into a temporary sibling of `path` (whose
/// folder must exist: a missing one is an error, not created), makes it world-readable (keys and
/// proofs are public data; temporary files start owner-only), fsyncs it and
/// renames it over `path`. A crash leaves the old file or the new one, never
/// a partial one; readers that mapped the old file keep their (unlinked)
/// copy.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut w = BufWriter::with_capacity(BUFFER_BYTES, tmp.as_file_mut());
        write(&mut w)?;
        w.flush()?;
    }
    set_readable(tmp.as_file())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// [`write_atomically`] for bytes already in memory.
pub fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically(path, |w| w.write_all(bytes))
}

/// Makes `file` readable by everyone (a no-op off Unix).
pub fn set_readable(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_whole_files_and_leave_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        write_bytes_atomically(&path, b"first").unwrap();
        write_bytes_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.bin"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        write_bytes_atomically(&path, b"old").unwrap();
        let err = write_atomically(&path, |_| Err(io::Error::other("refused"))).unwrap_err();
        assert_eq!(err.to_string(), "refused");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let missing = dir.path().join("no-such-folder").join("out.bin");
        assert!(write_bytes_atomically(&missing, b"x").is_err());
    }
}
