//! Per-connection timing: which phase a connection is in and since when, so one timer per
//! connection enforces both the header read timeout and the keep-alive idle timeout.

use std::io;
use std::pin::Pin;
use std::sync::Arc;

use seda_control::{ConnectionRefusals, RefusalAction, RefusalPolicy};
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

const IDLE: u8 = 0;
const HEAD: u8 = 1;
const BUSY: u8 = 2;

// Steps to "parkable" (HTTP/1 only): the connection's answer left and hyper waits for a new
// request head, so its buffers can be freed until bytes arrive (see `conn::serve_connection`).
/// A request is being read or answered (or bytes of the next one arrived).
const PARK_NO: u8 = 0;
/// The response body was handed over whole (hyper dropped it) and the request was read to its end.
const PARK_BODY_DONE: u8 = 1;
/// Then hyper flushed: its write buffer is empty, and all it can wait for is a new request.
const PARK_FLUSHED: u8 = 2;

/// What a connection is doing.
pub(crate) struct ConnState {
    epoch: Instant,
    phase: AtomicU8,
    since_us: AtomicU64,
    in_flight: AtomicU32,
    park: AtomicU8,
    /// How long the connection was idle before its current (or last) request, µs; `u64::MAX`
    /// before a second request.
    gap_us: AtomicU64,
    /// Its refusals, for `HttpConfig::refusal` (one request at a time on HTTP/1: uncontended).
    refusals: parking_lot::Mutex<ConnectionRefusals>,
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
            park: AtomicU8::new(PARK_NO),
            gap_us: AtomicU64::new(u64::MAX),
            refusals: parking_lot::Mutex::new(ConnectionRefusals::new()),
        })
    }

    /// A request on the connection was refused: what `policy` says to do with the refusal.
    pub(crate) fn refused(&self, policy: &RefusalPolicy) -> RefusalAction {
        self.refusals.lock().refused(policy, self.epoch.elapsed())
    }

    /// A request on the connection was admitted (only `close:N` counts refusals in a row).
    pub(crate) fn admitted(&self, policy: &RefusalPolicy) {
        if let RefusalPolicy::CloseAfter(_) = policy {
            self.refusals.lock().admitted();
        }
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
        self.park.store(PARK_NO, Ordering::Relaxed);
        if self.phase.load(Ordering::Relaxed) == IDLE {
            let now = self.now_us();
            let idle_since = self.since_us.load(Ordering::Relaxed);
            self.gap_us
                .store(now.saturating_sub(idle_since), Ordering::Relaxed);
            self.since_us.store(now, Ordering::Relaxed);
            self.phase.store(HEAD, Ordering::Relaxed);
        }
    }

    /// A request head was parsed: the connection is busy until its answer is written.
    pub(crate) fn begin(&self) {
        self.park.store(PARK_NO, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.phase.store(BUSY, Ordering::Relaxed);
    }

    /// A request was answered.
    pub(crate) fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.set(IDLE);
        }
    }

    /// hyper dropped a response body (it has all of it); `clean`: the request was read to its
    /// end, so hyper's next read is a new request head.
    pub(crate) fn body_done(&self, clean: bool) {
        if clean && self.in_flight.load(Ordering::Relaxed) == 0 {
            self.park.store(PARK_BODY_DONE, Ordering::Relaxed);
        }
    }

    fn step_park(&self, from: u8, to: u8) {
        let _ = self
            .park
            .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether hyper is idle between requests with nothing buffered to write (asked when its
    /// connection returned Pending: with the answer flushed it can only be waiting to read; it
    /// may not have tried the read yet).
    pub(crate) fn parkable(&self) -> bool {
        self.park.load(Ordering::Relaxed) == PARK_FLUSHED
    }

    /// Back from parking: a new hyper connection reads the next request.
    pub(crate) fn unpark(&self) {
        self.park.store(PARK_NO, Ordering::Relaxed);
    }

    /// Whether the current (or last) request came less than `window` after the one before:
    /// the connection is in use, and parking it after every answer would rebuild hyper's
    /// connection for every request.
    pub(crate) fn busy_within(&self, window: Duration) -> bool {
        u128::from(self.gap_us.load(Ordering::Relaxed)) < window.as_micros()
    }

    /// How long the connection has been idle between requests at `now` (zero if it is not).
    pub(crate) fn idle_for(&self, now: Instant) -> Duration {
        if self.phase.load(Ordering::Relaxed) != IDLE {
            return Duration::ZERO;
        }
        let since = self.epoch + Duration::from_micros(self.since_us.load(Ordering::Relaxed));
        now.saturating_duration_since(since)
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
    prefix: Bytes,
}

impl WatchedStream {
    pub(crate) fn new(inner: TcpStream, state: Arc<ConnState>) -> Self {
        WatchedStream {
            inner,
            state,
            prefix: Bytes::new(),
        }
    }

    /// Bytes hyper had read but not parsed when its connection was parked: read first.
    pub(crate) fn set_prefix(&mut self, prefix: Bytes) {
        self.prefix = detached(prefix);
    }

    /// Whether bytes are waiting in the prefix.
    pub(crate) fn has_prefix(&self) -> bool {
        !self.prefix.is_empty()
    }

    /// Whether the socket has something to read (bytes, EOF or an error). hyper returned to
    /// the parked loop only after a read met `WouldBlock`, so the readiness is fresh.
    pub(crate) fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_read_ready(cx)
    }
}

/// `bytes` without the buffer it is a view of. What hyper hands back when its connection is
/// taken apart is a view of its whole read buffer (8 KB): kept as it is, even empty, it would
/// keep that buffer alive for as long as the connection stays parked, which is most of what an
/// idle connection cost (issue 52). The rest of a pipelined request is short: copied.
fn detached(bytes: Bytes) -> Bytes {
    if bytes.is_empty() {
        Bytes::new()
    } else {
        Bytes::copy_from_slice(&bytes)
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix.split_to(n));
            self.state.on_bytes();
            return Poll::Ready(Ok(()));
        }
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
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(r, Poll::Ready(Ok(()))) {
            // hyper flushes the socket only once its own write buffer is empty.
            self.state.step_park(PARK_BODY_DONE, PARK_FLUSHED);
        }
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::detached;

    /// What hyper's `into_parts` gives back: its 8 KB read buffer frozen after the parsed
    /// request was split off it; and the parsed part, a second handle on the same buffer.
    fn view_of_read_buffer(left: &[u8]) -> (bytes::Bytes, bytes::Bytes) {
        let mut buf = BytesMut::with_capacity(8192);
        buf.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let parsed = buf.split();
        buf.extend_from_slice(left);
        (buf.freeze(), parsed.freeze())
    }

    #[test]
    fn a_parked_connection_keeps_no_part_of_hypers_read_buffer() {
        for left in [&b""[..], b"GET /next HTTP/1.1\r\n"] {
            let (view, parsed) = view_of_read_buffer(left);
            assert!(!parsed.is_unique(), "the view shares the buffer");
            let kept = detached(view);
            assert_eq!(&kept[..], left);
            assert!(parsed.is_unique(), "the 8 KB buffer is still shared");
        }
    }
}
