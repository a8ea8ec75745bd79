//! The journal of accepted jobs: nothing a client was told is accepted is
//! lost when the daemon crashes or is killed.
//!
//! A state directory holds `journal.jsonl` (one JSON record per line,
//! append-only, each record fsync'd before the client hears of it) and
//! `requests/<job id>.pb`, the accepted request as it came over the wire
//! (protobuf), written and fsync'd before its `accepted` record. A job is
//! `accepted`, then `finished` (with its proof or error, and its request file
//! deleted), then `delivered` once a client received the result. At start
//! the journal is replayed: accepted and unfinished jobs are queued again,
//! finished and undelivered results are kept for their clients, and the
//! journal is rewritten with only those records (a torn last line from a
//! crash mid-write is dropped).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::JournalError;

/// A job's accepted record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub job_id: String,
    pub request_id: String,
    /// SHA-256 of the request's content (hex): the same request id with other
    /// content is another request.
    pub digest: String,
    /// The wire values of `ProofKind` and `Priority`.
    pub proof_kind: i32,
    pub priority: i32,
    /// Milliseconds since the Unix epoch.
    pub accepted_unix_ms: u64,
}

/// A job's result as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finished {
    /// The wire value of `AwaitProofResponse.Status`.
    pub status: i32,
    /// The proof bytes, hex.
    pub proof_hex: String,
    pub error_message: String,
    pub queue_wait_ms: u64,
    pub srs_load_ms: u64,
    pub synthesis_ms: u64,
    pub gpu_compute_ms: u64,
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

/// What replaying the journal found, in acceptance order.
#[derive(Debug)]
pub enum Replayed {
    /// Accepted and not finished: to be proved (again); the request as it
    /// came over the wire.
    Unfinished {
        accepted: Accepted,
        request: Vec<u8>,
    },
    /// Finished and not delivered.
    Undelivered {
        accepted: Accepted,
        result: Finished,
    },
}

/// The open journal.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    file: Mutex<File>,
}

impl Journal {
    /// Opens (creating) the journal in `dir`, replays it and compacts it.
    pub fn open(dir: &Path) -> Result<(Journal, Vec<Replayed>), JournalError> {
        let requests = dir.join("requests");
        std::fs::create_dir_all(&requests).map_err(io("creating", &requests))?;
        let path = dir.join("journal.jsonl");
        let records = read_records(&path)?;

        let mut order: Vec<String> = Vec::new();
        let mut accepted: HashMap<String, Accepted> = HashMap::new();
        let mut finished: HashMap<String, Finished> = HashMap::new();
        let mut delivered: Vec<String> = Vec::new();
        for r in records {
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
        let mut replayed = Vec::new();
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
                    replayed.push(Replayed::Undelivered {
                        accepted: a,
                        result,
                    });
                }
                None => {
                    let file = request_path(dir, &id);
                    match std::fs::read(&file) {
                        Ok(request) => {
                            keep.push(Record::Accepted(a.clone()));
                            replayed.push(Replayed::Unfinished {
                                accepted: a,
                                request,
                            });
                        }
                        // The request file is written before its record, so a record
                        // without one was tampered with: say so, and go on.
                        Err(e) => tracing::error!(job = %id, file = %file.display(), error = %e,
                            "journal: an accepted job's request file is missing; the job is dropped"),
                    }
                }
            }
        }
        // Request files of jobs no longer in the journal.
        let live: std::collections::HashSet<String> = keep
            .iter()
            .filter_map(|r| match r {
                Record::Accepted(a) => Some(a.job_id.clone()),
                _ => None,
            })
            .collect();
        if let Ok(entries) = std::fs::read_dir(&requests) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".pb").unwrap_or(&name);
                if !live.contains(id) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }

        // Compact: the surviving records into a new file, renamed over the old.
        let tmp = dir.join("journal.jsonl.tmp");
        {
            let mut f = File::create(&tmp).map_err(io("creating", &tmp))?;
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
        Ok((
            Journal {
                dir: dir.to_path_buf(),
                file: Mutex::new(file),
            },
            replayed,
        ))
    }

    /// Records an accepted job: its request file first (fsync'd), then the record.
    pub fn accept(&self, accepted: &Accepted, request: &[u8]) -> Result<(), JournalError> {
        let path = request_path(&self.dir, &accepted.job_id);
        let tmp = path.with_extension("pb.tmp");
        {
            let mut f = File::create(&tmp).map_err(io("creating", &tmp))?;
            f.write_all(request).map_err(io("writing", &tmp))?;
            f.sync_all().map_err(io("syncing", &tmp))?;
        }
        std::fs::rename(&tmp, &path).map_err(io("renaming over", &path))?;
        sync_dir(&self.dir.join("requests"))?;
        self.append(&Record::Accepted(accepted.clone()))
    }

    /// Records a job's result and deletes its request file.
    pub fn finish(&self, job_id: &str, result: &Finished) -> Result<(), JournalError> {
        self.append(&Record::Finished {
            job_id: job_id.into(),
            result: result.clone(),
        })?;
        let _ = std::fs::remove_file(request_path(&self.dir, job_id));
        Ok(())
    }

    /// Records that a client received the job's result.
    pub fn deliver(&self, job_id: &str) -> Result<(), JournalError> {
        self.append(&Record::Delivered {
            job_id: job_id.into(),
        })
    }

    fn append(&self, record: &Record) -> Result<(), JournalError> {
        let mut line = serde_json::to_string(record).map_err(JournalError::Encode)?;
        line.push('\n');
        let path = self.dir.join("journal.jsonl");
        let mut f = self.file.lock();
        // One write per record, so a crash tears at most the last line.
        f.write_all(line.as_bytes())
            .map_err(io("appending to", &path))?;
        f.sync_data().map_err(io("syncing", &path))
    }
}

fn request_path(dir: &Path, job_id: &str) -> PathBuf {
    dir.join("requests").join(format!("{job_id}.pb"))
}

fn read_records(path: &Path) -> Result<Vec<Record>, JournalError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("opening", path)(e)),
    };
    let mut records = Vec::new();
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(io("reading", path))?;
    let last = lines.len().saturating_sub(1);
    for (n, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => records.push(r),
            Err(e) if n == last => {
                tracing::warn!(path = %path.display(), line = n + 1, error = %e,
                    "journal: the last record is torn (a crash while writing it); dropped")
            }
            Err(e) => tracing::error!(path = %path.display(), line = n + 1, error = %e,
                "journal: an unreadable record; skipped"),
        }
    }
    Ok(records)
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
            })
            .collect()
    }

    #[test]
    fn replay_keeps_what_is_not_delivered_in_order_and_compacts() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (j, replayed) = Journal::open(dir.path()).unwrap();
            assert!(replayed.is_empty());
            for id in ["a", "b", "c", "d"] {
                j.accept(&accepted(id), id.as_bytes()).unwrap();
            }
            j.finish("a", &finished(1)).unwrap();
            j.deliver("a").unwrap();
            j.finish("b", &finished(2)).unwrap();
            // c and d stay unfinished; the process "dies" here.
        }
        let (j, replayed) = Journal::open(dir.path()).unwrap();
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
        let (_, replayed) = Journal::open(dir.path()).unwrap();
        assert_eq!(ids(&replayed).len(), 2);
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
        let (_, replayed) = Journal::open(dir.path()).unwrap();
        assert_eq!(
            ids(&replayed),
            [
                ("a".to_string(), "unfinished"),
                ("b".to_string(), "unfinished")
            ]
        );
    }
}
