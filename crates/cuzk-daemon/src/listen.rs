//! Where the daemon listens: `unix:PATH` (also `unix://PATH`, as Curio writes
//! it) or `HOST:PORT`, and binding those listeners. A unix socket gets the
//! configured permissions; a TCP address that is not loopback is bound
//! because the operator wrote it, and the exposure is logged.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// One address the gRPC service listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A unix domain socket at this path.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(SocketAddr),
}

impl ListenAddr {
    /// `unix:/run/curio/cuzk.sock`, `unix:///run/curio/cuzk.sock`,
    /// `127.0.0.1:9820` or `[::1]:9820`.
    pub fn parse(text: &str) -> Result<ListenAddr, ConfigError> {
        if let Some(rest) = text.strip_prefix("unix:") {
            // `unix:///x` is a URI with an empty authority: the path is `/x`.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(ConfigError::Address {
                    address: text.into(),
                    problem: "the unix socket path is empty".into(),
                });
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        text.parse::<SocketAddr>()
            .map(ListenAddr::Tcp)
            .map_err(|e| ConfigError::Address {
                address: text.into(),
                problem: format!("neither unix:PATH nor HOST:PORT ({e})"),
            })
    }

    /// Whether only this machine can reach it.
    pub fn is_local(&self) -> bool {
        match self {
            ListenAddr::Unix(_) => true,
            ListenAddr::Tcp(a) => a.ip().is_loopback(),
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            ListenAddr::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// Binds a unix socket at `path` with permissions `mode`: a stale socket
/// file left by a killed daemon is replaced, anything else at that path is
/// an error (never deleted).
pub fn bind_unix(path: &Path, mode: u32) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("another process is serving {}", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_as_curio_writes_them() {
        let cases = [
            (
                "unix:/run/curio/cuzk.sock",
                "unix:/run/curio/cuzk.sock",
                true,
            ),
            (
                "unix:///run/curio/cuzk.sock",
                "unix:/run/curio/cuzk.sock",
                true,
            ),
            ("127.0.0.1:9820", "127.0.0.1:9820", true),
            ("[::1]:9820", "[::1]:9820", true),
            ("0.0.0.0:9820", "0.0.0.0:9820", false),
        ];
        for (text, shown, local) in cases {
            let a = ListenAddr::parse(text).unwrap();
            assert_eq!(a.to_string(), shown, "{text}");
            assert_eq!(a.is_local(), local, "{text}");
        }
        for bad in ["unix:", "localhost", "127.0.0.1", "9820"] {
            let e = ListenAddr::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[tokio::test]
    async fn a_socket_gets_its_mode_and_a_stale_one_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cuzk.sock");
        let first = bind_unix(&path, 0o660).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        // Served: a second daemon is refused.
        let e = bind_unix(&path, 0o660).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
        drop(first);
        // Stale (nobody accepts): replaced.
        bind_unix(&path, 0o600).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert!(bind_unix(&file, 0o660).is_err());
        assert!(file.exists());
    }
}
