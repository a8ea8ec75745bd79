//! What the daemon's integration tests share: a `cuzk-daemon` process on the
//! CPU backend, started over a parameter cache with a few configuration
//! lines, its log, its status address, and its end.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Runs the daemons of one test binary one at a time (each holds a key).
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A TCP port free on 127.0.0.1 now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running daemon (killed when dropped).
pub(crate) struct Daemon {
    pub(crate) child: Option<Child>,
    /// Its folder: configuration, logs, `state/`.
    pub(crate) dir: PathBuf,
    /// Its parameter cache (`--params-dir`).
    pub(crate) params: PathBuf,
    pub(crate) config: PathBuf,
    /// The log of the current process.
    pub(crate) log: PathBuf,
    pub(crate) socket: PathBuf,
    /// The HTTP status address (`host:port`).
    pub(crate) status: String,
}

impl Daemon {
    /// A daemon in `dir` over the parameter cache `params`, listening on a
    /// unix socket in `dir` and a free status port, with `extra` TOML lines;
    /// returns once it logged that it is ready.
    pub(crate) fn start(dir: PathBuf, params: &Path, extra: &str) -> Daemon {
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("cuzk.sock");
        let status = format!("127.0.0.1:{}", free_port());
        let config = dir.join("cuzk.toml");
        std::fs::write(
            &config,
            format!(
                "[listen]\naddresses = [\"unix:{}\"]\nstatus_address = \"{status}\"\n{extra}\n",
                socket.display()
            ),
        )
        .unwrap();
        let mut d = Daemon {
            child: None,
            dir,
            params: params.to_owned(),
            config,
            log: PathBuf::new(),
            socket,
            status,
        };
        d.spawn();
        d
    }

    /// Starts the process (again, after a kill: a new log, the same state).
    pub(crate) fn spawn(&mut self) {
        let n = std::fs::read_dir(&self.dir).unwrap().count();
        self.log = self.dir.join(format!("daemon-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&self.config)
            .arg("--params-dir")
            .arg(&self.params)
            .arg("--state-dir")
            .arg(self.dir.join("state"))
            .args(["--backend", "cpu"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&self.log).unwrap())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.log_text().contains("cuzk daemon ready") {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "the daemon exited ({status}) before it was ready:\n{}",
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The current process's log so far.
    pub(crate) fn log_text(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Its gRPC address, as clients take it.
    pub(crate) fn address(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub(crate) fn kill(&mut self) {
        let mut c = self.child.take().unwrap();
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Sends `sig` (`-TERM`, `-INT`, …) with kill(1).
    pub(crate) fn signal(&mut self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let status = Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(status.success(), "kill {sig} {pid}: {status}");
    }

    /// Waits for the process to exit (at most `limit`).
    pub(crate) fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut().unwrap();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                self.child = None;
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The body of `GET path` on the status address.
    pub(crate) fn http(&self, path: &str) -> String {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(&self.status).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response.split_once("\r\n\r\n").unwrap().1.to_string()
    }

    /// Accepted records in the journal, and request files kept.
    pub(crate) fn journaled(&self) -> (usize, usize) {
        let state = self.dir.join("state");
        let records = std::fs::read_to_string(state.join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"accepted\""))
            .count();
        let files = std::fs::read_dir(state.join("requests"))
            .map(|d| d.count())
            .unwrap_or(0);
        (records, files)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
