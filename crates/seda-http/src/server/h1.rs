//! The fast HTTP/1 path of one connection (`HttpConfig::fast_h1`): simple requests read on a
//! reused buffer and answered with one head and one `writev`, without hyper.
//!
//! A connection alternates between two states. Idle, it holds no buffer: only the small wait
//! of [`wait_parked`] (as a parked hyper connection does). Busy, one boxed future owns a read
//! buffer and a head buffer, reused for every request and every pipelined one, until the
//! connection has been idle for half of `park_after` (or at once after its first request),
//! when both are freed. A request the fast path does not take (a body, an upgrade, another
//! method, a malformed or too long head) goes to hyper with the bytes already read.
//!
//! Limits are the front end's: the head is bounded by `max_header_bytes` and
//! `max_headers` (beyond them, hyper answers 431 or 400), and must arrive within
//! `header_timeout_ms` (slowloris); a connection idle past `idle_timeout_ms` is closed, and
//! an answer the client does not read within that time ends the connection too. A client
//! that closes while its request is in the stages cancels it, as with hyper.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http::{Method, Version};
use hyper::body::Body as _;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Shared;
use super::conn::answer;
use super::park::{ParkedGuard, Wait, wait_parked, wait_parked_on};
use super::watch::{ConnState, WatchedStream};
use crate::body::Body;
use crate::request::Answer;
use crate::wire::{self, Framing, Head, Simple};

/// The first read buffer of a busy connection; it grows to `max_header_bytes` at most.
const FIRST_READ: usize = 4096;

/// How the fast path left the connection.
pub(super) enum Next {
    /// Closed.
    Done,
    /// hyper's turn: the bytes read are in the stream's prefix.
    Hyper,
}

/// How a busy period ended.
enum Period {
    Done,
    Hyper,
    /// Idle: the buffers are freed, wait for the next bytes.
    Idle,
}

/// Serves the connection until it closes or hyper must take over.
pub(super) async fn serve(
    shared: &Arc<Shared>,
    state: &Arc<ConnState>,
    io: &mut WatchedStream,
) -> Next {
    loop {
        if !io.has_prefix() {
            let _parked = ParkedGuard::count(shared);
            if wait_parked(shared, state, io, None).await != Wait::Readable {
                return Next::Done;
            }
        }
        // Boxed: an idle connection's task keeps none of a busy one's state.
        match Box::pin(busy(shared, state, io)).await {
            Period::Done => return Next::Done,
            Period::Hyper => return Next::Hyper,
            Period::Idle => {}
        }
    }
}

/// Reads and answers requests while the connection is in use.
async fn busy(shared: &Arc<Shared>, state: &Arc<ConnState>, io: &mut WatchedStream) -> Period {
    let cfg = &shared.config;
    let mut buf = BytesMut::with_capacity(FIRST_READ);
    let mut out = Vec::with_capacity(512);
    // One timer for the waits between requests, re-armed in place.
    let mut timer = std::pin::pin!(tokio::time::sleep_until(Instant::now().into()));
    loop {
        if !buf.is_empty() {
            match wire::parse_head(&mut buf, cfg.max_headers) {
                Head::Simple(req) => {
                    if !respond(shared, state, io, &mut buf, &mut out, req).await {
                        return Period::Done;
                    }
                    continue;
                }
                Head::Partial if buf.len() < cfg.max_header_bytes => {}
                // hyper answers a head over the limit (431) or a bad one (400), or serves it.
                Head::Partial | Head::Other => {
                    io.set_prefix(buf.freeze());
                    return Period::Hyper;
                }
            }
        }
        let room = cfg.max_header_bytes.saturating_sub(buf.len()).max(1);
        match std::future::poll_fn(|cx| Poll::Ready(poll_read(io, &mut buf, room, cx))).await {
            Poll::Ready(Ok(0) | Err(_)) => return Period::Done,
            Poll::Ready(Ok(_)) => continue,
            Poll::Pending => {}
        }
        let park_at = if buf.is_empty() {
            // Idle between requests: a connection that is not in steady use frees its
            // buffers at once, a busy one once idle for half of `park_after`.
            if !state.busy_within(cfg.park_after()) {
                return Period::Idle;
            }
            Some(Instant::now() + cfg.park_after() / 2)
        } else {
            None
        };
        match wait_parked_on(shared, state, io, park_at, timer.as_mut()).await {
            Wait::Readable => {}
            Wait::Close => return Period::Done,
            Wait::Park => return Period::Idle,
        }
    }
}

/// Reads once into `buf` (at most `room` bytes).
fn poll_read(
    io: &mut WatchedStream,
    buf: &mut BytesMut,
    room: usize,
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    if buf.capacity() - buf.len() < FIRST_READ / 4 {
        buf.reserve(FIRST_READ.min(room));
    }
    let mut limited = (&mut *buf).limit(room);
    let read = std::pin::pin!(io.read_buf(&mut limited));
    read.poll(cx)
}

/// Answers one simple request; false when the connection is to be closed.
async fn respond(
    shared: &Arc<Shared>,
    state: &Arc<ConnState>,
    io: &mut WatchedStream,
    buf: &mut BytesMut,
    out: &mut Vec<u8>,
    req: Simple,
) -> bool {
    let version = req.head.version;
    let head_only = req.head.method == Method::HEAD;
    let answered = answer(shared.clone(), state.clone(), req.head, None);
    let max = shared.config.max_header_bytes;
    let Some(answer) = watch_client(answered, io, buf, max).await else {
        return false;
    };
    let keep_alive = req.keep_alive && !*shared.shutdown.borrow();
    out.clear();
    let (body, keep_alive) = render(answer, out, version, keep_alive, head_only);
    if write_all(io, out, &body, shared.config.idle_timeout())
        .await
        .is_err()
    {
        return false;
    }
    if !keep_alive {
        // A FIN after the answer, as hyper does on `Connection: close`.
        let _ = tokio::time::timeout(Duration::from_secs(1), io.shutdown()).await;
    }
    keep_alive
}

/// Renders the head of `answer` into `out`; returns the body to send after it and whether the
/// connection stays open (`keep_alive`, unless the response says close).
fn render(
    answer: Answer,
    out: &mut Vec<u8>,
    version: Version,
    keep_alive: bool,
    head_only: bool,
) -> (Bytes, bool) {
    let (body, keep_alive) = match answer {
        Answer::Prepared { prepared, .. } => {
            let framing = Framing {
                version,
                keep_alive,
                body_len: prepared.body().len(),
            };
            prepared.render_head(out, framing);
            (prepared.body().clone(), keep_alive)
        }
        Answer::Response(mut response) => {
            let body = take_body(response.body_mut());
            let keep_alive = keep_alive && !wire::says_close(&*response);
            let framing = Framing {
                version,
                keep_alive,
                body_len: body.len(),
            };
            wire::render_head(out, &*response, framing);
            let body = if wire::bodiless(response.status()) {
                Bytes::new()
            } else {
                body
            };
            (body, keep_alive)
        }
    };
    if head_only {
        return (Bytes::new(), keep_alive);
    }
    (body, keep_alive)
}

/// Awaits `answered` while watching the socket: bytes of pipelined requests are read into
/// `buf` (up to `max`), and an EOF or error (the client went away) drops the request, which
/// cancels it (None).
async fn watch_client(
    answered: impl Future<Output = Answer>,
    io: &mut WatchedStream,
    buf: &mut BytesMut,
    max: usize,
) -> Option<Answer> {
    let mut answered = std::pin::pin!(answered);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = answered.as_mut().poll(cx) {
            return Poll::Ready(Some(r));
        }
        while buf.len() < max {
            match poll_read(io, buf, max - buf.len(), cx) {
                Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(None),
                Poll::Ready(Ok(_)) => {}
                Poll::Pending => break,
            }
        }
        Poll::Pending
    })
    .await
}

/// The bytes of a ready response body (a `Full`: one frame, available at once).
fn take_body(body: &mut Body) -> Bytes {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(body).poll_frame(&mut cx) {
        Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

/// Writes `head` then `body` (one `writev` when the socket takes it all); what the socket does
/// not take at once must go within `limit`.
async fn write_all(
    io: &mut WatchedStream,
    head: &[u8],
    body: &[u8],
    limit: Duration,
) -> io::Result<()> {
    let mut done = 0;
    let first =
        std::future::poll_fn(|cx| Poll::Ready(poll_write(io, head, body, &mut done, cx))).await;
    match first {
        Poll::Ready(r) => r,
        Poll::Pending => {
            let rest = std::future::poll_fn(|cx| poll_write(io, head, body, &mut done, cx));
            tokio::time::timeout(limit, rest)
                .await
                .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
        }
    }
}

fn poll_write(
    io: &mut WatchedStream,
    head: &[u8],
    body: &[u8],
    done: &mut usize,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    while *done < head.len() + body.len() {
        let slices = if *done < head.len() {
            [IoSlice::new(&head[*done..]), IoSlice::new(body)]
        } else {
            [IoSlice::new(&body[*done - head.len()..]), IoSlice::new(&[])]
        };
        match Pin::new(&mut *io).poll_write_vectored(cx, &slices) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(n)) => *done += n,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
    }
    Poll::Ready(Ok(()))
}
