//! The daemon's log: a `tracing` filter (`log.level`, `--log-level`,
//! RUST_LOG) and a format, text (coloured on a terminal) or JSON (one
//! object per line, for journald or a log shipper), on stderr.

use std::io::IsTerminal;

use crate::config::LogConfig;
use crate::error::{ConfigError, DaemonError};

/// The subscriber for `log`, writing through `writer`.
pub(crate) fn subscriber<W>(
    log: &LogConfig,
    writer: W,
) -> Result<Box<dyn tracing::Subscriber + Send + Sync>, ConfigError>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter =
        tracing_subscriber::EnvFilter::try_new(&log.level).map_err(|e| ConfigError::Invalid {
            key: "log.level",
            problem: format!("{:?}: {e}", log.level),
        })?;
    // A log line that cannot be written (a full disk under a log file) is
    // dropped: by default the fmt layer says so with eprintln!, which
    // panics when stderr is that same file, failing the call that logged.
    let builder = tracing_subscriber::fmt()
        .log_internal_errors(false)
        .with_env_filter(filter)
        .with_writer(writer);
    Ok(match log.format.as_str() {
        "json" => Box::new(builder.json().finish()),
        _ => Box::new(builder.with_ansi(std::io::stderr().is_terminal()).finish()),
    })
}

/// Installs the subscriber for `log` on stderr (once per process; a
/// second call, or one after the binary installed its own, is a no-op).
pub(crate) fn init(log: &LogConfig) -> Result<(), DaemonError> {
    let s = subscriber(log, std::io::stderr)?;
    let _ = tracing::subscriber::set_global_default(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Buffer {
            self.clone()
        }
    }

    #[test]
    fn json_logs_are_one_object_a_line_and_the_level_filters() {
        let buffer = Buffer::default();
        let log = LogConfig {
            level: "warn".into(),
            format: "json".into(),
        };
        let s = subscriber(&log, buffer.clone()).unwrap();
        tracing::subscriber::with_default(s, || {
            tracing::info!(job = "job-1", "not shown at warn");
            tracing::warn!(job = "job-2", "shown");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["fields"]["job"], "job-2");
        assert_eq!(v["fields"]["message"], "shown");
        let bad = LogConfig {
            level: "cuzk=[".into(),
            format: "text".into(),
        };
        let e = subscriber(&bad, buffer).err().unwrap().to_string();
        assert!(e.contains("log.level"), "{e}");
    }
}
