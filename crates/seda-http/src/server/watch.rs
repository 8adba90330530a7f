//! Per-connection timing: which phase a connection is in and since when, so one timer per
//! connection enforces both the header read timeout and the keep-alive idle timeout.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

const IDLE: u8 = 0;
const HEAD: u8 = 1;
const BUSY: u8 = 2;

/// What a connection is doing.
pub(crate) struct ConnState {
    epoch: Instant,
    phase: AtomicU8,
    since_us: AtomicU64,
    in_flight: AtomicU32,
}

/// The verdict of a connection's timer.
pub(crate) enum Verdict {
    /// Nothing expired; look again at this instant.
    Until(Instant),
    /// A request head took too long to arrive.
    HeadTimeout,
    /// The connection stayed idle too long between requests.
    IdleTimeout,
}

impl ConnState {
    /// A fresh connection: waiting for its first request head, as of now.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(ConnState {
            epoch: Instant::now(),
            phase: AtomicU8::new(HEAD),
            since_us: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
        })
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn set(&self, phase: u8) {
        self.since_us.store(self.now_us(), Ordering::Relaxed);
        self.phase.store(phase, Ordering::Relaxed);
    }

    /// Bytes arrived: if the connection was idle, a request head is now being read.
    fn on_bytes(&self) {
        if self.phase.load(Ordering::Relaxed) == IDLE {
            self.set(HEAD);
        }
    }

    /// A request head was parsed: the connection is busy until its answer is written.
    pub(crate) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.phase.store(BUSY, Ordering::Relaxed);
    }

    /// A request was answered.
    pub(crate) fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.set(IDLE);
        }
    }

    /// Checks the timeouts at `now`.
    pub(crate) fn verdict(&self, now: Instant, head: Duration, idle: Duration) -> Verdict {
        let since = self.epoch + Duration::from_micros(self.since_us.load(Ordering::Relaxed));
        match self.phase.load(Ordering::Relaxed) {
            HEAD if now >= since + head => Verdict::HeadTimeout,
            HEAD => Verdict::Until(since + head),
            IDLE if now >= since + idle => Verdict::IdleTimeout,
            IDLE => Verdict::Until(since + idle),
            // Busy: the stages answer or drop; look again later.
            _ => Verdict::Until(now + head.min(idle)),
        }
    }
}

/// A TCP stream that tells its [`ConnState`] when bytes arrive.
pub(crate) struct WatchedStream {
    inner: TcpStream,
    state: Arc<ConnState>,
}

impl WatchedStream {
    pub(crate) fn new(inner: TcpStream, state: Arc<ConnState>) -> Self {
        WatchedStream { inner, state }
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.on_bytes();
        }
        r
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
