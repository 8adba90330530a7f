//! The front end: accepts connections, enforces the limits, turns requests into events.

mod budget;
mod conn;
mod h1;
mod park;
mod stats;
mod watch;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::{ServerRefusals, SharedRetryAfter};

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch as tokio_watch};

use crate::admin::{AdminServer, AdminSources, ExtraStats, FrontendStats};
use crate::config::HttpConfig;
use crate::request::HttpRequest;
use stats::Counters;

/// State shared by the accept loops and every connection.
pub(crate) struct Shared {
    pub(crate) config: HttpConfig,
    pub(crate) sink: seda::Sink<HttpRequest>,
    pub(crate) counters: Counters,
    /// The `Retry-After` of a 503, stretched while refusals outnumber admissions.
    pub(crate) retry: SharedRetryAfter,
    /// The server's pace of refusals across its connections (`HttpConfig::refusals_per_s`).
    pub(crate) refusals: ServerRefusals,
    pub(crate) shutdown: tokio_watch::Sender<bool>,
    /// Signalled when the shutdown starts, for parked connections (a `Notified` is less than
    /// half the size of a `watch` wait, and a parked connection keeps one).
    pub(crate) stopping: Notify,
    /// Signalled whenever a connection closes (shutdown waits on it).
    pub(crate) closed: Notify,
    /// When a shutdown stops waiting for connections.
    pub(crate) deadline: Mutex<Option<Instant>>,
}

impl Shared {
    /// Tells every connection that the server is shutting down.
    pub(crate) fn begin_shutdown(&self) {
        let _ = self.shutdown.send(true);
        self.stopping.notify_waiters();
    }

    /// The counters, and the `Retry-After` a refusal gets now.
    fn stats(&self) -> FrontendStats {
        self.counters.snapshot(self.retry.seconds())
    }
}

/// A running HTTP front end feeding one stage.
///
/// It owns its tokio runtime(s): one multi-thread runtime of `threads` workers, or with
/// `per_core`, `threads` single-thread runtimes, each on its own thread with its own
/// `SO_REUSEPORT` listener (nginx's worker model: no work stealing, no shared I/O driver).
/// Dropping it without [`shutdown`](Self::shutdown) stops it abruptly.
pub struct HttpServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    admin: Option<AdminServer>,
    engine: Option<Engine>,
}

enum Engine {
    Shared(tokio::runtime::Runtime),
    PerCore(Vec<JoinHandle<usize>>),
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .field("admin_addr", &self.admin_addr())
            .finish_non_exhaustive()
    }
}

/// What a graceful shutdown achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownSummary {
    /// Connections still open when the wait ran out (closed abruptly).
    pub connections_cut: usize,
}

fn listen(addr: SocketAddr, backlog: u32, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    if reuse_port {
        socket.set_reuseport(true)?;
    }
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Waits until no connection is open or `deadline` passes; returns the connections left.
async fn wait_closed(shared: &Shared, deadline: Instant) -> usize {
    loop {
        let notified = shared.closed.notified();
        let open = shared.counters.open.load(Ordering::SeqCst);
        if open == 0 {
            return 0;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
            return shared.counters.open.load(Ordering::SeqCst);
        }
    }
}

impl HttpServer {
    /// Binds `config.addr` and starts serving: each request becomes an [`HttpRequest`] enqueued
    /// into `sink`. With `config.admin_addr`, an [`AdminServer`] shows `runtime` (stats, graph,
    /// `/metrics`, the dashboard) and the front end's counters there.
    pub fn start(
        config: HttpConfig,
        sink: seda::Sink<HttpRequest>,
        runtime: Option<seda::Runtime>,
    ) -> io::Result<HttpServer> {
        Self::start_with_stats(config, sink, runtime, None)
    }

    /// Like [`start`](Self::start); `extra` adds the service's own figures to the admin
    /// address's `/_seda/stats` (under `"service"`).
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
        let (shutdown, _) = tokio_watch::channel(false);
        let shared = Arc::new(Shared {
            retry: SharedRetryAfter::around(config.retry_after_s),
            refusals: ServerRefusals::new(config.refusals_per_s),
            config,
            sink,
            counters: Counters::default(),
            shutdown,
            stopping: Notify::new(),
            closed: Notify::new(),
            deadline: Mutex::new(None),
        });
        let admin =
            match shared.config.admin_addr {
                Some(addr) => {
                    let counters = shared.clone();
                    let sources = AdminSources {
                        runtime,
                        frontend: Some(Arc::new(move || counters.stats())),
                        extra,
                        layers: None,
                    };
                    Some(AdminServer::start(addr, sources).map_err(|e| {
                        io::Error::new(e.kind(), format!("admin address {addr}: {e}"))
                    })?)
                }
                None => None,
            };
        let mut server = if shared.config.per_core {
            Self::start_per_core(shared, threads)?
        } else {
            Self::start_shared(shared, threads)?
        };
        server.admin = admin;
        Ok(server)
    }

    fn start_shared(shared: Arc<Shared>, threads: usize) -> io::Result<HttpServer> {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("seda-http")
            .enable_all()
            .build()?;
        let cfg = &shared.config;
        let listener = tokio.block_on(async { listen(cfg.addr, cfg.backlog, false) })?;
        let local_addr = listener.local_addr()?;
        tokio.spawn(conn::accept_loop(shared.clone(), listener));
        Ok(HttpServer {
            shared,
            local_addr,
            admin: None,
            engine: Some(Engine::Shared(tokio)),
        })
    }

    fn start_per_core(shared: Arc<Shared>, threads: usize) -> io::Result<HttpServer> {
        let mut addr = shared.config.addr;
        if addr.port() != 0 {
            // SO_REUSEPORT would let this server silently share a port with another process
            // of the same user that also set it (a second `seda serve` on the same address):
            // a plain bind first makes that an "address in use" error instead.
            drop(std::net::TcpListener::bind(addr)?);
        }
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let shared2 = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("seda-http-{i}"))
                .spawn(move || core_thread(shared2, addr, ready_tx))?;
            let started = ready_rx
                .recv()
                .map_err(|_| io::Error::other("a front-end thread died while starting"))
                .and_then(|r| r);
            match started {
                Ok(bound) => {
                    // Later threads bind the port the first one got (port 0 asks for one).
                    addr = bound;
                    handles.push(handle);
                }
                Err(e) => {
                    shared.begin_shutdown();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(HttpServer {
            shared,
            local_addr: addr,
            admin: None,
            engine: Some(Engine::PerCore(handles)),
        })
    }

    /// Where the service listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the admin address listens (stats, graph, `/metrics`, the dashboard), if on.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(AdminServer::local_addr)
    }

    /// The front end's counters.
    pub fn stats(&self) -> FrontendStats {
        self.shared.stats()
    }

    /// Stops accepting, lets in-flight requests finish and idle connections close, waits up to
    /// `timeout` for every connection to end, then cuts what is left.
    pub fn shutdown(mut self, timeout: Duration) -> ShutdownSummary {
        let deadline = Instant::now() + timeout;
        if let Some(admin) = self.admin.take() {
            admin.shutdown();
        }
        *self.shared.deadline.lock() = Some(deadline);
        self.shared.begin_shutdown();
        let connections_cut = match self.engine.take() {
            None => 0,
            Some(Engine::Shared(tokio)) => {
                let shared = self.shared.clone();
                let left = tokio.block_on(async move { wait_closed(&shared, deadline).await });
                tokio.shutdown_timeout(Duration::from_millis(100));
                left
            }
            Some(Engine::PerCore(handles)) => handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .max()
                .unwrap_or(0),
        };
        ShutdownSummary { connections_cut }
    }
}

type Started = io::Result<SocketAddr>;

/// One per-core front-end thread: its own single-thread runtime and listener. Returns the
/// connections still open when the shutdown wait ran out.
fn core_thread(
    shared: Arc<Shared>,
    addr: SocketAddr,
    ready: std::sync::mpsc::Sender<Started>,
) -> usize {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return 0;
        }
    };
    rt.block_on(async move {
        let cfg = &shared.config;
        let bound = listen(addr, cfg.backlog, true).and_then(|l| Ok((l.local_addr()?, l)));
        let listener = match bound {
            Ok((local, l)) => {
                let _ = ready.send(Ok(local));
                l
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return 0;
            }
        };
        conn::accept_loop(shared.clone(), listener).await;
        let deadline = shared
            .deadline
            .lock()
            .unwrap_or_else(|| Instant::now() + cfg.shutdown_timeout());
        wait_closed(&shared, deadline).await
    })
    // Dropping the runtime here cuts the connections left on this thread.
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        match self.engine.take() {
            Some(Engine::Shared(tokio)) => tokio.shutdown_background(),
            Some(Engine::PerCore(_)) => {
                *self.shared.deadline.lock() = Some(Instant::now());
                self.shared.begin_shutdown();
            }
            None => {}
        }
    }
}
