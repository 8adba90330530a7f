//! The front end: accepts connections, enforces the limits, turns requests into events.

mod conn;
mod stats;
mod watch;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch as tokio_watch};

use crate::config::HttpConfig;
use crate::request::HttpRequest;
use stats::Counters;
pub use stats::FrontendStats;

/// Extra figures for `/_seda/stats` (a service's own counters, e.g. its cache's).
pub type ExtraStats = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// State shared by the accept loops and every connection.
pub(crate) struct Shared {
    pub(crate) config: HttpConfig,
    pub(crate) sink: seda::Sink<HttpRequest>,
    pub(crate) runtime: Option<seda::Runtime>,
    pub(crate) extra: Option<ExtraStats>,
    pub(crate) counters: Counters,
    pub(crate) shutdown: tokio_watch::Sender<bool>,
    /// Signalled whenever a connection closes (shutdown waits on it).
    pub(crate) closed: Notify,
    /// Whether introspection answers on the service port.
    pub(crate) introspect_here: bool,
}

/// A running HTTP front end feeding one stage.
///
/// It owns a tokio runtime (`threads` workers). Dropping it without
/// [`shutdown`](Self::shutdown) stops it abruptly.
pub struct HttpServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    tokio: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .field("admin_addr", &self.admin_addr)
            .finish_non_exhaustive()
    }
}

/// What a graceful shutdown achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownSummary {
    /// Connections still open when the wait ran out (closed abruptly).
    pub connections_cut: usize,
}

fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

impl HttpServer {
    /// Binds `config.addr` (and the admin address), and starts serving: each request becomes an
    /// [`HttpRequest`] enqueued into `sink`. `runtime` feeds `/_seda/stats` and `/_seda/graph`.
    pub fn start(
        config: HttpConfig,
        sink: seda::Sink<HttpRequest>,
        runtime: Option<seda::Runtime>,
    ) -> io::Result<HttpServer> {
        Self::start_with_stats(config, sink, runtime, None)
    }

    /// Like [`start`](Self::start); `extra` adds the service's own figures to `/_seda/stats`
    /// (under `"service"`).
    pub fn start_with_stats(
        config: HttpConfig,
        sink: seda::Sink<HttpRequest>,
        runtime: Option<seda::Runtime>,
        extra: Option<ExtraStats>,
    ) -> io::Result<HttpServer> {
        config
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let threads = match config.threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("seda-http")
            .enable_all()
            .build()?;
        let (listener, admin) = tokio.block_on(async {
            let l = listen(config.addr, config.backlog)?;
            let a = match (config.introspection, config.admin_addr) {
                (true, Some(addr)) => Some(listen(addr, 128)?),
                _ => None,
            };
            Ok::<_, io::Error>((l, a))
        })?;
        let local_addr = listener.local_addr()?;
        let admin_addr = admin.as_ref().map(TcpListener::local_addr).transpose()?;
        let (shutdown, _) = tokio_watch::channel(false);
        let shared = Arc::new(Shared {
            introspect_here: config.introspection && config.admin_addr.is_none(),
            config,
            sink,
            runtime,
            extra,
            counters: Counters::default(),
            shutdown,
            closed: Notify::new(),
        });
        tokio.spawn(conn::accept_loop(shared.clone(), listener, false));
        if let Some(admin) = admin {
            tokio.spawn(conn::accept_loop(shared.clone(), admin, true));
        }
        Ok(HttpServer {
            shared,
            local_addr,
            admin_addr,
            tokio: Some(tokio),
        })
    }

    /// Where the service listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where introspection listens, if on its own port.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// The front end's counters.
    pub fn stats(&self) -> FrontendStats {
        self.shared.counters.snapshot()
    }

    /// Stops accepting, lets in-flight requests finish and idle connections close, waits up to
    /// `timeout` for every connection to end, then cuts what is left.
    pub fn shutdown(mut self, timeout: Duration) -> ShutdownSummary {
        let Some(tokio) = self.tokio.take() else {
            return ShutdownSummary { connections_cut: 0 };
        };
        let _ = self.shared.shutdown.send(true);
        let shared = self.shared.clone();
        let deadline = Instant::now() + timeout;
        tokio.block_on(async move {
            loop {
                let notified = shared.closed.notified();
                if shared.counters.open.load(Ordering::SeqCst) == 0 {
                    break;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
                    break;
                }
            }
        });
        let connections_cut = self.shared.counters.open.load(Ordering::SeqCst);
        tokio.shutdown_timeout(Duration::from_millis(100));
        ShutdownSummary { connections_cut }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(tokio) = self.tokio.take() {
            tokio.shutdown_background();
        }
    }
}
