//! The journal of accepted jobs: nothing a client was told is accepted is
//! lost when the daemon crashes or is killed, and no damage to the journal
//! keeps the daemon from starting.
//!
//! A state directory holds `journal.jsonl` (one JSON record per line,
//! append-only, each record fsync'd before the client hears of it) and
//! `requests/<job id>.pb`, the accepted request as it came over the wire
//! (protobuf), written and fsync'd before its `accepted` record. A job is
//! `accepted`, then `finished` (with its proof or error, and its request file
//! deleted), then `delivered` once a client received the result. At start
//! the journal is replayed: accepted and unfinished jobs are queued again,
//! finished and undelivered results are kept for their clients, and the
//! journal is rewritten with only those records.
//!
//! Damage is survived record by record, and each dropped record is logged
//! with its line and why ([`Replay::damage`]): a torn last line (a crash
//! mid-write), a line that is not UTF-8 or not a record, two records glued
//! on one line (the second is kept). A failed append (a full disk) is cut
//! back off the file, so the next record starts on its own line. A request
//! file whose `accepted` record was lost is not deleted: its job is
//! recovered from the file ([`Replayed::Recovered`]).

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::JournalError;

/// A job's accepted record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Accepted {
    /// The daemon's job id.
    pub job_id: String,
    /// The client's request id.
    pub request_id: String,
    /// SHA-256 of the request's content (hex): the same request id with other
    /// content is another request.
    pub digest: String,
    /// The wire values of `ProofKind` and `Priority`.
    pub proof_kind: i32,
    /// The wire value of `Priority`.
    pub priority: i32,
    /// Milliseconds since the Unix epoch.
    pub accepted_unix_ms: u64,
}

/// A job's result as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Finished {
    /// The wire value of `AwaitProofResponse.Status`.
    pub status: i32,
    /// The proof bytes, hex.
    pub proof_hex: String,
    /// Why it failed or was cancelled ("" for a proof).
    pub error_message: String,
    /// Time in the queue, ms.
    pub queue_wait_ms: u64,
    /// Time loading the key, ms.
    pub srs_load_ms: u64,
    /// Time synthesizing, ms.
    pub synthesis_ms: u64,
    /// Time proving, ms.
    pub gpu_compute_ms: u64,
    /// Time from acceptance to the result, ms.
    pub total_ms: u64,
    /// The device that proved it ("" if none).
    pub device: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Record {
    Accepted(Accepted),
    Finished { job_id: String, result: Finished },
    Delivered { job_id: String },
}

impl Record {
    fn job_id(&self) -> &str {
        match self {
            Record::Accepted(a) => &a.job_id,
            Record::Finished { job_id, .. } | Record::Delivered { job_id } => job_id,
        }
    }
}

/// What replaying the journal found, in acceptance order.
#[derive(Debug)]
pub(crate) enum Replayed {
    /// Accepted and not finished: to be proved (again); the request as it
    /// came over the wire.
    Unfinished {
        /// Its accepted record.
        accepted: Accepted,
        /// The request's bytes.
        request: Vec<u8>,
    },
    /// Finished and not delivered.
    Undelivered {
        /// Its accepted record.
        accepted: Accepted,
        /// Its result.
        result: Finished,
    },
    /// A request file whose `accepted` record was lost (a damaged journal):
    /// the daemon rebuilds the record from the request. `accepted_unix_ms` is
    /// the file's modification time.
    Recovered {
        /// The job id the request file is named by.
        job_id: String,
        /// The request's bytes.
        request: Vec<u8>,
        /// The request file's modification time, ms since the Unix epoch.
        accepted_unix_ms: u64,
    },
}

/// The journal's replay: the jobs, and what damage was found and dropped
/// (each already logged).
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// The jobs, in acceptance order.
    pub jobs: Vec<Replayed>,
    /// What was damaged and dropped, one line each.
    pub damage: Vec<String>,
}

/// Who may read the state files: their mode (`0600`, `0660`) and group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Permissions {
    /// The files' mode; directories get it with execute where it reads.
    pub file_mode: u32,
    /// The group given to the directory and files (`None`: the process's).
    pub group: Option<u32>,
}

impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            file_mode: 0o600,
            group: None,
        }
    }
}

impl Permissions {
    fn dir_mode(&self) -> u32 {
        let m = self.file_mode & 0o777;
        // Execute (search) for whoever may read.
        m | ((m & 0o444) >> 2)
    }

    fn apply(&self, path: &Path, mode: u32) -> Result<(), JournalError> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(io("setting the mode of", path))?;
        if let Some(gid) = self.group {
            std::os::unix::fs::chown(path, None, Some(gid))
                .map_err(io("setting the group of", path))?;
        }
        Ok(())
    }
}

/// Where records are appended: the journal file, or in tests a writer that
/// fails as a full disk does.
pub(crate) trait Sink: Send + std::fmt::Debug {
    /// Writes all of `bytes` at the end (or fails, maybe after part of them).
    fn append_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes what was written durable.
    fn sync(&mut self) -> std::io::Result<()>;
    /// The length now.
    fn size(&mut self) -> std::io::Result<u64>;
    /// Cuts the file back to `len` bytes.
    fn truncate(&mut self, len: u64) -> std::io::Result<()>;
}

impl Sink for File {
    fn append_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        Write::write_all(self, bytes)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_data()
    }
    fn size(&mut self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.set_len(len)
    }
}

#[derive(Debug)]
struct Appender {
    sink: Box<dyn Sink>,
    /// A failed append left bytes that could not be cut off: the next
    /// record starts with a newline, so it is not glued to them.
    ragged: bool,
}

/// The open journal.
#[derive(Debug)]
pub(crate) struct Journal {
    dir: PathBuf,
    perms: Permissions,
    file: Mutex<Appender>,
}

impl Journal {
    /// [`Journal::open_with`] with the default permissions (0600, the
    /// process's group); the daemon passes its configured ones.
    #[cfg(test)]
    pub(crate) fn open(dir: &Path) -> Result<(Journal, Replay), JournalError> {
        Journal::open_with(dir, Permissions::default())
    }

    /// Opens (creating) the journal in `dir` with `perms` for the directory
    /// and files, replays it and compacts it.
    pub(crate) fn open_with(
        dir: &Path,
        perms: Permissions,
    ) -> Result<(Journal, Replay), JournalError> {
        let requests = dir.join("requests");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(perms.dir_mode())
            .create(&requests)
            .map_err(io("creating", &requests))?;
        perms.apply(dir, perms.dir_mode())?;
        perms.apply(&requests, perms.dir_mode())?;
        let path = dir.join("journal.jsonl");
        let mut damage = Vec::new();
        let records = read_records(&path, &mut damage)?;

        let mut order: Vec<String> = Vec::new();
        let mut accepted: HashMap<String, Accepted> = HashMap::new();
        let mut finished: HashMap<String, Finished> = HashMap::new();
        let mut delivered: Vec<String> = Vec::new();
        let mut named: HashSet<String> = HashSet::new();
        for r in records {
            named.insert(r.job_id().to_string());
            match r {
                Record::Accepted(a) => {
                    order.push(a.job_id.clone());
                    accepted.insert(a.job_id.clone(), a);
                }
                Record::Finished { job_id, result } => {
                    finished.insert(job_id, result);
                }
                Record::Delivered { job_id } => delivered.push(job_id),
            }
        }
        for d in delivered {
            accepted.remove(&d);
            finished.remove(&d);
        }
        let mut jobs = Vec::new();
        let mut keep = Vec::new();
        for id in order {
            let Some(a) = accepted.remove(&id) else {
                continue;
            };
            match finished.remove(&id) {
                Some(result) => {
                    keep.push(Record::Accepted(a.clone()));
                    keep.push(Record::Finished {
                        job_id: id,
                        result: result.clone(),
                    });
                    jobs.push(Replayed::Undelivered {
                        accepted: a,
                        result,
                    });
                }
                None => {
                    let file = request_path(dir, &id);
                    match std::fs::read(&file) {
                        Ok(request) => {
                            keep.push(Record::Accepted(a.clone()));
                            jobs.push(Replayed::Unfinished {
                                accepted: a,
                                request,
                            });
                        }
                        // The request file is written before its record, so a record
                        // without one was tampered with: say so, and go on.
                        Err(e) => {
                            let why = format!(
                                "job {id}: accepted, but its request file {} cannot be read ({e}); the job is dropped",
                                file.display()
                            );
                            tracing::error!("journal: {why}");
                            damage.push(why);
                        }
                    }
                }
            }
        }
        // The request files: a finished job's (its deletion was interrupted)
        // goes; one that no record names lost its `accepted` record and is
        // recovered; a temporary one was never acknowledged and goes.
        let live: HashSet<String> = keep.iter().map(|r| r.job_id().to_string()).collect();
        let mut orphans = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&requests) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".pb.tmp") {
                    let _ = std::fs::remove_file(e.path());
                    continue;
                }
                let id = name.strip_suffix(".pb").unwrap_or(&name);
                if live.contains(id) {
                    continue;
                }
                if named.contains(id) {
                    let _ = std::fs::remove_file(e.path());
                } else if name.ends_with(".pb") && is_job_id(id) {
                    orphans.push((id.to_string(), e.path()));
                } else {
                    tracing::warn!(file = %e.path().display(),
                        "journal: a file in the requests folder that is not a request; left alone");
                }
            }
        }
        orphans.sort();
        for (job_id, file) in orphans {
            match std::fs::read(&file) {
                Ok(request) => {
                    let accepted_unix_ms = std::fs::metadata(&file)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_millis() as u64);
                    let why = format!(
                        "job {job_id}: its accepted record was lost; recovered from {}",
                        file.display()
                    );
                    tracing::warn!("journal: {why}");
                    damage.push(why);
                    jobs.push(Replayed::Recovered {
                        job_id,
                        request,
                        accepted_unix_ms,
                    });
                }
                Err(e) => {
                    let why = format!(
                        "job {job_id}: no record and its request file {} cannot be read ({e}); left alone",
                        file.display()
                    );
                    tracing::error!("journal: {why}");
                    damage.push(why);
                }
            }
        }

        // Compact: the surviving records into a new file, renamed over the old.
        let tmp = dir.join("journal.jsonl.tmp");
        {
            let mut f = create(&tmp, perms)?;
            for r in &keep {
                let line = serde_json::to_string(r).map_err(JournalError::Encode)?;
                writeln!(f, "{line}").map_err(io("writing", &tmp))?;
            }
            f.sync_all().map_err(io("syncing", &tmp))?;
        }
        std::fs::rename(&tmp, &path).map_err(io("renaming over", &path))?;
        sync_dir(dir)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io("opening", &path))?;
        let journal = Journal {
            dir: dir.to_path_buf(),
            perms,
            file: Mutex::new(Appender {
                sink: Box::new(file),
                ragged: false,
            }),
        };
        Ok((journal, Replay { jobs, damage }))
    }

    /// Appends through `sink` from now on (tests: a disk that fills up).
    #[cfg(test)]
    pub(crate) fn with_sink(self, sink: Box<dyn Sink>) -> Journal {
        *self.file.lock() = Appender {
            sink,
            ragged: false,
        };
        self
    }

    /// Records an accepted job: its request file first (fsync'd), then the
    /// record. If the record cannot be written, the request file is removed
    /// (the client hears that the job was not accepted).
    pub(crate) fn accept(&self, accepted: &Accepted, request: &[u8]) -> Result<(), JournalError> {
        let path = request_path(&self.dir, &accepted.job_id);
        let tmp = path.with_extension("pb.tmp");
        let written = (|| {
            let mut f = create(&tmp, self.perms)?;
            f.write_all(request).map_err(io("writing", &tmp))?;
            f.sync_all().map_err(io("syncing", &tmp))?;
            std::fs::rename(&tmp, &path).map_err(io("renaming over", &path))?;
            sync_dir(&self.dir.join("requests"))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        self.append(&Record::Accepted(accepted.clone()))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&path);
            })
    }

    /// Records the `accepted` record of a job recovered from its request
    /// file ([`Replayed::Recovered`]).
    pub(crate) fn adopt(&self, accepted: &Accepted) -> Result<(), JournalError> {
        self.append(&Record::Accepted(accepted.clone()))
    }

    /// Records a job's result and deletes its request file.
    pub(crate) fn finish(&self, job_id: &str, result: &Finished) -> Result<(), JournalError> {
        self.append(&Record::Finished {
            job_id: job_id.into(),
            result: result.clone(),
        })?;
        let _ = std::fs::remove_file(request_path(&self.dir, job_id));
        Ok(())
    }

    /// Records that a client received the job's result.
    pub(crate) fn deliver(&self, job_id: &str) -> Result<(), JournalError> {
        self.append(&Record::Delivered {
            job_id: job_id.into(),
        })
    }

    fn append(&self, record: &Record) -> Result<(), JournalError> {
        let mut line = serde_json::to_string(record).map_err(JournalError::Encode)?;
        line.push('\n');
        let path = self.dir.join("journal.jsonl");
        let mut f = self.file.lock();
        if f.ragged {
            line.insert(0, '\n');
        }
        let before = f.sink.size().map_err(io("reading the length of", &path))?;
        // One write per record, so a crash tears at most the last line.
        let written = f
            .sink
            .append_bytes(line.as_bytes())
            .map_err(io("appending to", &path))
            .and_then(|()| f.sink.sync().map_err(io("syncing", &path)));
        match written {
            Ok(()) => {
                f.ragged = false;
                Ok(())
            }
            Err(e) => {
                // Cut the half record off, so the next one is not glued to it.
                match f.sink.truncate(before).and_then(|()| f.sink.sync()) {
                    Ok(()) => f.ragged = false,
                    Err(cut) => {
                        tracing::error!(path = %path.display(), error = %cut,
                            "journal: a failed append could not be cut off; the next record starts on a new line");
                        f.ragged = true;
                    }
                }
                Err(e)
            }
        }
    }
}

/// Whether `id` is a job id this daemon makes (`job-` and 16 hex digits).
fn is_job_id(id: &str) -> bool {
    id.strip_prefix("job-")
        .is_some_and(|h| h.len() == 16 && hex::decode(h).is_ok())
}

fn create(path: &Path, perms: Permissions) -> Result<File, JournalError> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(perms.file_mode)
        .open(path)
        .map_err(io("creating", path))?;
    // The umask may have taken bits away, and a file that existed keeps its mode.
    perms.apply(path, perms.file_mode)?;
    Ok(f)
}

fn request_path(dir: &Path, job_id: &str) -> PathBuf {
    dir.join("requests").join(format!("{job_id}.pb"))
}

/// The journal's records, each line on its own: a line that is not a record
/// is dropped and said in `damage` (with its number and why); two records
/// glued on one line (an append that failed half-way before this journal
/// cut such halves off) give the last whole one.
fn read_records(path: &Path, damage: &mut Vec<String>) -> Result<Vec<Record>, JournalError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("reading", path)(e)),
    };
    let mut records = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = lines.len().saturating_sub(1);
    for (n, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let err = match serde_json::from_slice::<Record>(line) {
            Ok(r) => {
                records.push(r);
                continue;
            }
            Err(e) => e,
        };
        let what = if n == last {
            "the last record is torn (a crash or a full disk while writing it)"
        } else if std::str::from_utf8(line).is_err() {
            "a record that is not UTF-8"
        } else {
            "an unreadable record"
        };
        let salvaged = salvage(line);
        let why = format!(
            "{} line {}: {what} ({err}); dropped{}",
            path.display(),
            n + 1,
            if salvaged.is_some() {
                ", keeping the whole record glued after it"
            } else {
                ""
            }
        );
        tracing::warn!("journal: {why}");
        damage.push(why);
        records.extend(salvaged);
    }
    Ok(records)
}

/// The last whole record that starts inside `line` after its beginning.
fn salvage(line: &[u8]) -> Option<Record> {
    const START: &[u8] = b"{\"event\":";
    (1..line.len().saturating_sub(START.len()))
        .rev()
        .filter(|&i| line[i..].starts_with(START))
        .find_map(|i| serde_json::from_slice::<Record>(&line[i..]).ok())
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing the directory", dir))
}

fn io(context: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> JournalError {
    let path = path.to_path_buf();
    move |source| JournalError::Io {
        context,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(id: &str) -> Accepted {
        Accepted {
            job_id: id.into(),
            request_id: format!("porep-1000-{id}"),
            digest: "00".into(),
            proof_kind: 1,
            priority: 2,
            accepted_unix_ms: 1,
        }
    }

    fn finished(status: i32) -> Finished {
        Finished {
            status,
            proof_hex: "c0ffee".into(),
            error_message: String::new(),
            queue_wait_ms: 1,
            srs_load_ms: 2,
            synthesis_ms: 3,
            gpu_compute_ms: 4,
            total_ms: 10,
            device: "cpu-0".into(),
        }
    }

    fn ids(replayed: &[Replayed]) -> Vec<(String, &'static str)> {
        replayed
            .iter()
            .map(|r| match r {
                Replayed::Unfinished { accepted, .. } => (accepted.job_id.clone(), "unfinished"),
                Replayed::Undelivered { accepted, .. } => (accepted.job_id.clone(), "undelivered"),
                Replayed::Recovered { job_id, .. } => (job_id.clone(), "recovered"),
            })
            .collect()
    }

    #[test]
    fn replay_keeps_what_is_not_delivered_in_order_and_compacts() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (j, replay) = Journal::open(dir.path()).unwrap();
            assert!(replay.jobs.is_empty() && replay.damage.is_empty());
            for id in ["a", "b", "c", "d"] {
                j.accept(&accepted(id), id.as_bytes()).unwrap();
            }
            j.finish("a", &finished(1)).unwrap();
            j.deliver("a").unwrap();
            j.finish("b", &finished(2)).unwrap();
            // c and d stay unfinished; the process "dies" here.
        }
        let (j, replay) = Journal::open(dir.path()).unwrap();
        let replayed = replay.jobs;
        assert_eq!(
            ids(&replayed),
            [
                ("b".to_string(), "undelivered"),
                ("c".to_string(), "unfinished"),
                ("d".to_string(), "unfinished"),
            ]
        );
        match &replayed[1] {
            Replayed::Unfinished { request, .. } => assert_eq!(request, b"c"),
            other => panic!("{other:?}"),
        }
        match &replayed[0] {
            Replayed::Undelivered { result, .. } => assert_eq!(result, &finished(2)),
            other => panic!("{other:?}"),
        }
        // Finished jobs' request files are gone; the journal holds 4 records now.
        assert!(!dir.path().join("requests/a.pb").exists());
        assert!(!dir.path().join("requests/b.pb").exists());
        let text = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        j.deliver("b").unwrap();
        drop(j);
        let (_, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(ids(&replay.jobs).len(), 2);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_the_rest_replays() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (j, _) = Journal::open(dir.path()).unwrap();
            j.accept(&accepted("a"), b"a").unwrap();
            j.accept(&accepted("b"), b"b").unwrap();
        }
        let path = dir.path().join("journal.jsonl");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"event\":\"finished\",\"job_id\":\"a\",\"res");
        std::fs::write(&path, text).unwrap();
        let (_, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay.damage.len(), 1, "{:?}", replay.damage);
        assert!(replay.damage[0].contains("torn"), "{:?}", replay.damage);
        assert_eq!(
            ids(&replay.jobs),
            [
                ("a".to_string(), "unfinished"),
                ("b".to_string(), "unfinished")
            ]
        );
    }

    fn job(n: u8) -> String {
        format!("job-{:016x}", n as u64 * 0x1111)
    }

    /// The file's bytes and its lines.
    fn journal_text(dir: &Path) -> Vec<u8> {
        std::fs::read(dir.join("journal.jsonl")).unwrap()
    }

    #[test]
    fn a_non_utf8_byte_a_corrupt_record_and_a_torn_tail_drop_only_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c, d) = (job(1), job(2), job(3), job(4));
        {
            let (j, _) = Journal::open(dir.path()).unwrap();
            for id in [&a, &b, &c, &d] {
                j.accept(&accepted(id), id.as_bytes()).unwrap();
            }
            j.finish(&d, &finished(1)).unwrap();
        }
        // Line 2 (b's record) gets a byte that is not UTF-8 in its request id,
        // line 3 (c's) is overwritten with garbage, and a half record follows.
        let mut bytes = journal_text(dir.path());
        let lines: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i)
            .collect();
        let in_b = lines[0]
            + 1
            + bytes[lines[0] + 1..]
                .iter()
                .position(|x| *x == b'1')
                .unwrap();
        bytes[in_b] = 0xff;
        for byte in &mut bytes[lines[1] + 1..lines[2]] {
            *byte = b'#';
        }
        bytes.extend_from_slice(b"{\"event\":\"delivered\",\"job_");
        std::fs::write(dir.path().join("journal.jsonl"), &bytes).unwrap();

        let (_, replay) = Journal::open(dir.path()).unwrap();
        // a is intact; b's and c's records are lost but their request files
        // are not: they come back from them; d's result is kept.
        assert_eq!(
            ids(&replay.jobs),
            [
                (a.clone(), "unfinished"),
                (d.clone(), "undelivered"),
                (b.clone(), "recovered"),
                (c.clone(), "recovered"),
            ]
        );
        match &replay.jobs[2] {
            Replayed::Recovered { request, .. } => assert_eq!(request, b.as_bytes()),
            other => panic!("{other:?}"),
        }
        let damage = replay.damage.join("\n");
        for words in [
            "line 2: a record that is not UTF-8",
            "line 3: an unreadable record",
            "line 6: the last record is torn",
            &format!("job {b}: its accepted record was lost; recovered"),
            &format!("job {c}: its accepted record was lost; recovered"),
        ] {
            assert!(damage.contains(words), "no {words:?} in:\n{damage}");
        }
        assert!(dir.path().join(format!("requests/{b}.pb")).exists());
        // The daemon writes the recovered jobs' records again (`adopt`): a
        // second start finds no damage.
        let (j, _) = Journal::open(dir.path()).unwrap();
        j.adopt(&accepted(&b)).unwrap();
        j.adopt(&accepted(&c)).unwrap();
        drop(j);
        let (_, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(ids(&replay.jobs).len(), 4);
        assert!(replay.damage.is_empty(), "{:?}", replay.damage);
    }

    /// A disk with `room` bytes left: a write beyond it writes what fits and
    /// fails, as `write(2)` does with ENOSPC or past RLIMIT_FSIZE; cutting
    /// the file back may be refused too (`cut_fails`).
    #[derive(Debug)]
    struct FullDisk {
        file: File,
        room: std::sync::Arc<std::sync::atomic::AtomicU64>,
        cut_fails: bool,
    }

    impl Sink for FullDisk {
        fn append_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            use std::sync::atomic::Ordering;
            let room = self.room.load(Ordering::SeqCst);
            let n = (bytes.len() as u64).min(room) as usize;
            Write::write_all(&mut self.file, &bytes[..n])?;
            self.room.fetch_sub(n as u64, Ordering::SeqCst);
            if n < bytes.len() {
                return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
            }
            Ok(())
        }
        fn sync(&mut self) -> std::io::Result<()> {
            self.file.sync_data()
        }
        fn size(&mut self) -> std::io::Result<u64> {
            Ok(self.file.metadata()?.len())
        }
        fn truncate(&mut self, len: u64) -> std::io::Result<()> {
            if self.cut_fails {
                return Err(std::io::Error::from_raw_os_error(30)); // EROFS
            }
            self.file.set_len(len)
        }
    }

    #[test]
    fn a_full_disk_leaves_no_half_record_to_glue_the_next_one() {
        use std::sync::atomic::{AtomicU64, Ordering};
        for cut_fails in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (a, b, c) = (job(1), job(2), job(3));
            let room = std::sync::Arc::new(AtomicU64::new(u64::MAX));
            {
                let (j, _) = Journal::open(dir.path()).unwrap();
                let file = OpenOptions::new()
                    .append(true)
                    .open(dir.path().join("journal.jsonl"))
                    .unwrap();
                let j = j.with_sink(Box::new(FullDisk {
                    file,
                    room: room.clone(),
                    cut_fails,
                }));
                j.accept(&accepted(&a), b"a").unwrap();
                // 20 bytes left: b's record is cut in the middle.
                room.store(20, Ordering::SeqCst);
                let e = j.accept(&accepted(&b), b"b").unwrap_err();
                assert!(e.to_string().contains("appending to"), "{e}");
                // Refused, so its request file is gone: it will not run.
                assert!(!dir.path().join(format!("requests/{b}.pb")).exists());
                // The disk has room again.
                room.store(u64::MAX, Ordering::SeqCst);
                j.accept(&accepted(&c), b"c").unwrap();
                j.finish(&a, &finished(1)).unwrap();
            }
            // b's record was cut after 20 bytes, before its job id.
            let text = String::from_utf8(journal_text(dir.path())).unwrap();
            assert!(!text.contains(&b), "{text}");
            let (_, replay) = Journal::open(dir.path()).unwrap();
            assert_eq!(
                ids(&replay.jobs),
                [(a.clone(), "undelivered"), (c.clone(), "unfinished")],
                "cut_fails {cut_fails}: {:?}",
                replay.damage
            );
            // Cut off: no trace. Left behind: one dropped line, the next record whole.
            assert_eq!(
                replay.damage.len(),
                usize::from(cut_fails),
                "{:?}",
                replay.damage
            );
        }
    }

    #[test]
    fn two_records_glued_on_one_line_keep_the_second() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (job(1), job(2));
        {
            let (j, _) = Journal::open(dir.path()).unwrap();
            j.accept(&accepted(&a), b"a").unwrap();
            j.accept(&accepted(&b), b"b").unwrap();
        }
        // What an older journal left after a failed append: a's record
        // torn and b's written right after it.
        let text = String::from_utf8(journal_text(dir.path())).unwrap();
        let (first, second) = text.split_once('\n').unwrap();
        let glued = format!("{}{}", &first[..first.len() / 2], second);
        std::fs::write(dir.path().join("journal.jsonl"), glued).unwrap();
        let (_, replay) = Journal::open(dir.path()).unwrap();
        // b is kept from the glued line; a's request file brings it back.
        assert_eq!(
            ids(&replay.jobs),
            [(b.clone(), "unfinished"), (a.clone(), "recovered")]
        );
        assert!(
            replay.damage[0].contains("keeping the whole record glued after it"),
            "{:?}",
            replay.damage
        );
    }

    #[test]
    fn state_files_get_their_mode() {
        for (file_mode, dir_mode) in [(0o600, 0o700), (0o660, 0o770)] {
            let dir = tempfile::tempdir().unwrap();
            let state = dir.path().join("state");
            let perms = Permissions {
                file_mode,
                group: None,
            };
            let (j, _) = Journal::open_with(&state, perms).unwrap();
            j.accept(&accepted(&job(1)), b"x").unwrap();
            let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(state.clone()), dir_mode);
            assert_eq!(mode(state.join("requests")), dir_mode);
            assert_eq!(mode(state.join("journal.jsonl")), file_mode);
            assert_eq!(
                mode(state.join(format!("requests/{}.pb", job(1)))),
                file_mode
            );
        }
    }
}
