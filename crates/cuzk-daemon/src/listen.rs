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
pub(crate) enum ListenAddr {
    /// A unix domain socket at this path.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(SocketAddr),
}

impl ListenAddr {
    /// `unix:/run/curio/cuzk.sock`, `unix:///run/curio/cuzk.sock`,
    /// `127.0.0.1:9820` or `[::1]:9820`.
    pub(crate) fn parse(text: &str) -> Result<ListenAddr, ConfigError> {
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
    pub(crate) fn is_local(&self) -> bool {
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

/// Binds a unix socket at `path` with permissions `mode` (and group
/// `group`, when given): a stale socket file left by a killed daemon is
/// replaced, anything else at that path is an error (never deleted).
pub(crate) fn bind_unix(
    path: &Path,
    mode: u32,
    group: Option<u32>,
) -> std::io::Result<tokio::net::UnixListener> {
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
    if let Some(gid) = group {
        std::os::unix::fs::chown(path, None, Some(gid))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(listener)
}

/// Something connections are accepted from (a unix or TCP listener).
pub(crate) trait Accept: Send + 'static {
    /// A connection.
    type Io: Send + 'static;
    /// The next connection.
    fn accept(&self) -> impl std::future::Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        tokio::net::UnixListener::accept(self).await.map(|(s, _)| s)
    }
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        tokio::net::TcpListener::accept(self).await.map(|(s, _)| s)
    }
}

/// A connection holding one of the listener's places until it closes.
#[derive(Debug)]
pub(crate) struct Limited<Io> {
    io: Io,
    _place: tokio::sync::OwnedSemaphorePermit,
}

/// The connections of `listener`, at most as many open at once as
/// `places` has permits: beyond, the next connection waits in the
/// kernel's backlog until one closes.
pub(crate) fn limited<L: Accept>(
    listener: L,
    places: std::sync::Arc<tokio::sync::Semaphore>,
) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<Limited<L::Io>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            let place = tokio::select! {
                p = std::sync::Arc::clone(&places).acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return,
                },
                _ = tx.closed() => return,
            };
            let conn = tokio::select! {
                c = listener.accept() => c,
                _ = tx.closed() => return,
            };
            let item = conn.map(|io| Limited { io, _place: place });
            if tx.send(item).await.is_err() {
                return;
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

impl<Io: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Limited<Io> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<Io: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Limited<Io> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

impl<Io: tonic::transport::server::Connected> tonic::transport::server::Connected for Limited<Io> {
    type ConnectInfo = Io::ConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
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
        let first = bind_unix(&path, 0o660, None).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        // Served: a second daemon is refused.
        let e = bind_unix(&path, 0o660, None).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
        drop(first);
        // Stale (nobody accepts): replaced.
        bind_unix(&path, 0o600, None).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert!(bind_unix(&file, 0o660, None).is_err());
        assert!(file.exists());
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_wait_until_one_closes() {
        use tokio_stream::StreamExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.sock");
        // The socket's group: the process's own (chown to it is always allowed).
        let gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(dir.path()).unwrap());
        let listener = bind_unix(&path, 0o660, Some(gid)).unwrap();
        let mut incoming = limited(
            listener,
            std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
        );
        let _c1 = tokio::net::UnixStream::connect(&path).await.unwrap();
        let first = incoming.next().await.unwrap().unwrap();
        let _c2 = tokio::net::UnixStream::connect(&path).await.unwrap();
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(300), incoming.next()).await;
        assert!(
            waited.is_err(),
            "a second connection was served beyond the limit of 1"
        );
        drop(first);
        let second = tokio::time::timeout(std::time::Duration::from_secs(60), incoming.next())
            .await
            .expect("the second connection is served once the first closes");
        assert!(second.unwrap().is_ok());
    }
}
