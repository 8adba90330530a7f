//! Accepting and serving connections; one request becomes one event.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONNECTION, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use seda::{CancelReason::Terminated, CancelToken, Meta};
use seda_control::RefusalAction;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Shared;
use super::budget::{self, Door};
use super::h1;
use super::park::{ParkedGuard, Wait, wait_parked};
use super::stats::inc;
use super::watch::{ConnState, Verdict, WatchedStream};
use crate::HttpConfig;
use crate::body::Body;
use crate::request::{Answer, HttpRequest, Reply, RequestHead, overloaded, terminated, text};

/// Connections being answered 503 because too many are open; beyond this many they are just
/// closed, so a flood cannot pile up refusal tasks either.
const MAX_REFUSING: usize = 1024;
static REFUSING: AtomicUsize = AtomicUsize::new(0);

/// Accepts as fast as connections come, so the listen backlog never does admission control.
pub(crate) async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.wait_for(|s| *s) => return,
            r = listener.accept() => r,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or a connection reset before accept: back off briefly so
                // the loop does not spin, then keep accepting.
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let open = shared.counters.open.fetch_add(1, Ordering::SeqCst);
        if open >= shared.config.max_connections {
            shared.counters.open.fetch_sub(1, Ordering::SeqCst);
            inc(&shared.counters.refused_connections);
            refuse(stream, shared.retry.refused());
            continue;
        }
        inc(&shared.counters.accepted);
        tokio::spawn(serve_connection(shared.clone(), stream));
    }
}

/// Answers a connection past the limit with a 503 and closes it, reading what the client sent
/// first so the close does not turn into a reset that hides the answer.
fn refuse(mut stream: TcpStream, retry_after_s: u32) {
    if REFUSING.fetch_add(1, Ordering::Relaxed) >= MAX_REFUSING {
        REFUSING.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    tokio::spawn(async move {
        let body = "503 Service Unavailable: too many open connections, retry later.\n";
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {retry_after_s}\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let work = async {
            let mut buf = [0u8; 4096];
            // Give the client a moment to send its request, so it is read before the close.
            let _ = tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await;
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut drained = 0usize;
            while drained < 64 * 1024 {
                match stream.read(&mut buf).await? {
                    0 => break,
                    n => drained += n,
                }
            }
            Ok::<_, std::io::Error>(())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), work).await;
        REFUSING.fetch_sub(1, Ordering::Relaxed);
    });
}

/// Decrements the open-connection count however the connection task ends.
struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Ordering::SeqCst);
        self.0.closed.notify_waiters();
    }
}

async fn serve_connection(shared: Arc<Shared>, stream: TcpStream) {
    let _open = OpenGuard(shared.clone());
    let state = ConnState::new();
    let io = WatchedStream::new(stream, state.clone());
    let svc = {
        let shared = shared.clone();
        let state = state.clone();
        service_fn(move |req: hyper::Request<Incoming>| {
            let clean = req.body().is_end_stream();
            let (shared, state) = (shared.clone(), state.clone());
            async move {
                let r = handle(shared, state.clone(), req).await?;
                Ok::<_, Infallible>(r.map(|inner| Tracked {
                    inner,
                    state,
                    clean,
                }))
            }
        })
    };
    if shared.config.h2c {
        // HTTP/1 or HTTP/2 without TLS, told apart by the first bytes, run to the end (never
        // parked). Boxed: the HTTP/2 builder and connection are never part of an HTTP/1
        // connection's task, which a parked connection keeps whole.
        return Box::pin(async move {
            let cfg = &shared.config;
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .keep_alive(true)
                .header_read_timeout(None)
                .max_buf_size(cfg.max_header_bytes);
            if cfg.max_headers != 100 {
                builder.http1().max_headers(cfg.max_headers);
            }
            builder
                .http2()
                .max_header_list_size(u32::try_from(cfg.max_header_bytes).unwrap_or(u32::MAX))
                .max_concurrent_streams(256);
            let mut conn = Box::pin(builder.serve_connection(TokioIo::new(io), svc));
            let driven = drive(
                &shared,
                &state,
                conn.as_mut(),
                |c| c.graceful_shutdown(),
                false,
            );
            driven.await;
        })
        .await;
    }
    // Idle between requests (for `park_after`), the connection is parked: hyper's connection
    // (its 8 KB read buffer, 8 KB write buffer and cached header map) is taken apart and
    // dropped, and only the socket waits for the next bytes; then a new hyper connection is
    // built on the same socket and service. An idle keep-alive connection then costs the
    // socket, its state and this task.
    // With `fast_h1`, simple requests are read and answered by `h1` (which parks the same way,
    // holding no buffer); hyper gets the connection, with the bytes already read, for anything
    // else, until it is idle again.
    let (mut io, mut svc) = (io, svc);
    loop {
        if shared.config.fast_h1 {
            match h1::serve(&shared, &state, &mut io).await {
                h1::Next::Done => return,
                h1::Next::Hyper => {}
            }
        }
        let mut conn =
            Box::new(http1_builder(&shared.config).serve_connection(TokioIo::new(io), svc));
        // Boxed too: the task itself keeps only what a parked connection needs.
        let ended = Box::pin(drive(
            &shared,
            &state,
            Pin::new(&mut *conn),
            |c| c.graceful_shutdown(),
            true,
        ))
        .await;
        if let Ended::Done = ended {
            return;
        }
        // In a block, so that hyper's parts are not kept across the parked wait below.
        let read_buf = {
            let parts = conn.into_parts();
            io = parts.io.into_inner();
            svc = parts.service;
            parts.read_buf
        };
        state.unpark();
        // Bytes hyper read but did not parse yet are read again first.
        io.set_prefix(read_buf);
        if !io.has_prefix() && !shared.config.fast_h1 {
            let _parked = ParkedGuard::count(&shared);
            if wait_parked(&shared, &state, &io, None).await != Wait::Readable {
                return;
            }
        }
    }
}

/// hyper's HTTP/1 settings for `cfg`, built for each (re)built connection rather than kept
/// across a parked connection's wait.
fn http1_builder(cfg: &HttpConfig) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        // Not pipeline_flush: with it, hyper 1.x leaves its automatic 400/431 answer to a bad
        // head unflushed (the unparsed bytes keep the read buffer non-empty).
        .header_read_timeout(None)
        .max_header_size(cfg.max_header_bytes)
        .max_buf_size(cfg.max_header_bytes.max(64 * 1024));
    if cfg.max_headers != 100 {
        // hyper keeps up to 100 header slots on the stack; another count costs an allocation.
        builder.max_headers(cfg.max_headers);
    }
    builder
}

/// A response body that tells the connection's state when hyper is done with it (dropped it).
struct Tracked {
    inner: Body,
    state: Arc<ConnState>,
    /// The request was read to its end (it had no body).
    clean: bool,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.state.body_done(self.clean);
    }
}

/// How [`drive`] ended.
enum Ended {
    /// The connection is closed (or cut).
    Done,
    /// hyper waits for a new request head with nothing left to write: take it apart.
    Parked,
}

/// Runs a connection to its end (or, with `park`, until it is idle between requests),
/// enforcing the head and idle timeouts and starting a graceful close when the server shuts
/// down.
async fn drive<C, X>(
    shared: &Shared,
    state: &ConnState,
    mut conn: Pin<&mut C>,
    mut graceful: impl FnMut(Pin<&mut C>),
    park: bool,
) -> Ended
where
    C: Future<Output = Result<(), X>>,
{
    let cfg = &shared.config;
    let mut shutdown = shared.shutdown.subscribe();
    let mut draining = *shutdown.borrow();
    if draining {
        graceful(conn.as_mut());
    }
    let (head_limit, idle_limit) = (cfg.header_timeout(), cfg.idle_timeout());
    // A connection is parked at once after an answer unless it is busy: its request came
    // within `park_after` of the one before. A busy connection keeps hyper's connection and
    // its buffers (rebuilding them costs about a quarter of a small request's instructions);
    // the timer then looks every `park_after` whether it has gone idle, for half of that at
    // least, and parks it.
    let park_after = cfg.park_after();
    // Phases change without re-arming the timer; it fires at least this often to look.
    let mut period = head_limit.min(idle_limit);
    if park && !park_after.is_zero() {
        period = period.min(park_after);
    }
    let mut until = Instant::now() + period;
    loop {
        let can_park = park && !draining;
        let step = std::future::poll_fn(|cx| match conn.as_mut().poll(cx) {
            std::task::Poll::Ready(r) => std::task::Poll::Ready(Some(r)),
            std::task::Poll::Pending
                if can_park && state.parkable() && !state.busy_within(park_after) =>
            {
                std::task::Poll::Ready(None)
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        });
        tokio::select! {
            r = step => {
                match r {
                    None => return Ended::Parked,
                    Some(Err(_)) => inc(&shared.counters.connection_errors),
                    Some(Ok(())) => {}
                }
                return Ended::Done;
            }
            _ = tokio::time::sleep_until(until.into()) => {
                if can_park && state.parkable() && state.idle_for(Instant::now()) >= park_after / 2 {
                    return Ended::Parked;
                }
                match state.verdict(Instant::now(), head_limit, idle_limit) {
                    Verdict::Until(t) => until = t.min(Instant::now() + period),
                    Verdict::HeadTimeout => {
                        // Slowloris: a head that does not arrive in time ends the connection.
                        inc(&shared.counters.header_timeouts);
                        return Ended::Done;
                    }
                    Verdict::IdleTimeout => {
                        inc(&shared.counters.idle_closed);
                        return Ended::Done;
                    }
                }
            }
            _ = shutdown.wait_for(|s| *s), if !draining => {
                draining = true;
                graceful(conn.as_mut());
            }
        }
    }
}

/// Cancels a request's token unless disarmed: hyper drops the service future when the client
/// goes away, and the stages then drop the request's remaining work.
struct CancelOnDrop<'a>(Option<CancelToken>, &'a Shared);

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
            inc(&self.1.counters.cancelled);
        }
    }
}

/// Marks the connection busy while a request is being answered.
struct Busy(Arc<ConnState>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

async fn handle(
    shared: Arc<Shared>,
    state: Arc<ConnState>,
    req: hyper::Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (head, body) = req.into_parts();
    let body = (!body.is_end_stream()).then_some(body);
    Ok(answer(shared, state, head.into(), body)
        .await
        .into_response())
}

/// The answer to one request (its head parsed just now, by hyper or [`super::h1`]): admission,
/// the stages, and the 503s, 504s and 413s of the front end.
pub(super) async fn answer(
    shared: Arc<Shared>,
    state: Arc<ConnState>,
    head: RequestHead,
    body: Option<Incoming>,
) -> Answer {
    // Called right after the head was parsed: the request is born now.
    let born = Instant::now();
    state.begin();
    let busy = Busy(state);
    inc(&shared.counters.requests);
    // Introspection is on the admin address only (`crate::admin`), never here.
    let deadline = match budget::read(&head, born) {
        Door::Open => None,
        Door::Until(d) => Some(d),
        Door::Spent => {
            inc(&shared.counters.deadline_missed);
            return budget::missed().into();
        }
    };
    let mut meta = Meta::born_at(born);
    meta.set_deadline(deadline);
    let mut cancel = CancelOnDrop(Some(meta.cancel_token().clone()), &shared);
    let (reply, rx) = Reply::channel();
    let request = HttpRequest::new(meta, head, Bytes::new(), reply);
    // Admission is decided on the head, before a body is read: a refusal never costs reading
    // (and holding) the body, and hyper, finding the body unread, drains what it already
    // buffered or closes the connection rather than read the rest. A body declared too large
    // is refused first, as that costs nothing either.
    let admitted = match body {
        None => shared.sink.enqueue(request).is_ok(),
        Some(body) if body.size_hint().lower() > shared.config.max_body_bytes as u64 => {
            cancel.0 = None;
            return too_large(&shared).into();
        }
        Some(body) => match shared.sink.enqueue_prepare(vec![request]) {
            Err(_) => false,
            Ok(mut prepared) => match read_body(&shared, body).await {
                Ok(b) => {
                    if let Some(r) = prepared.events_mut().first_mut() {
                        r.body = b;
                    }
                    prepared.commit();
                    true
                }
                // Dropping the prepared enqueue gives its admission back.
                Err(r) => {
                    cancel.0 = None;
                    return r.into();
                }
            },
        },
    };
    let policy = &shared.config.refusal;
    if !admitted {
        cancel.0 = None;
        if budget::passed(deadline) {
            inc(&shared.counters.deadline_missed);
            return budget::missed().into();
        }
        inc(&shared.counters.rejected_requests);
        let mut response = overloaded(shared.retry.refused());
        // Against clients that resend at once (`seda_control::refusal`): the connection's
        // policy, then the server's pace across connections. Timers: no CPU while paused.
        let mut pause = shared.refusals.wait();
        match busy.0.refused(policy) {
            RefusalAction::Answer => {}
            RefusalAction::AnswerAfter(own) => pause = pause.max(own),
            // hyper closes an HTTP/1 connection after a response that says so.
            RefusalAction::AnswerAndClose => {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
        wait_turn(pause).await;
        return response.into();
    }
    busy.0.admitted(policy);
    shared.retry.admitted();
    let response = match rx.await {
        // The service's own refusal (a stage past the front end refused it, as the e-mail
        // service's per-type stages do) waits for the server's pace like the front end's. The
        // connection's policy is left to the front end's refusals: applied to the service's
        // too, it held back the refusals of WC03's users in `per-stage` (they resend after a
        // scaled-down wait, faster than `cap:10`) and changed what that experiment shows.
        Ok(Answer::Response(r)) if r.status() == StatusCode::SERVICE_UNAVAILABLE => {
            wait_turn(shared.refusals.wait()).await;
            Answer::Response(r)
        }
        Ok(r) => r,
        Err(_) if cancel.0.as_ref().and_then(CancelToken::reason) == Some(Terminated) => {
            // The stage's terminator cut it and the handler gave it up unanswered.
            terminated(shared.retry.seconds()).into()
        }
        Err(_) if budget::passed(deadline) => {
            // Dropped unserved because its deadline passed while it waited.
            inc(&shared.counters.deadline_missed);
            budget::missed().into()
        }
        Err(_) => {
            // Admitted, then dropped without an answer (expired, shutdown, or a handler panic).
            inc(&shared.counters.unanswered);
            overloaded(shared.retry.seconds()).into()
        }
    };
    cancel.0 = None;
    response
}

/// A refusal's wait for its turn: a timer, no CPU while paused (none at all when zero).
async fn wait_turn(pause: Duration) {
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
}

/// The 413 of a body over `max_body_bytes`, counted.
fn too_large(shared: &Shared) -> Response<Body> {
    inc(&shared.counters.body_too_large);
    text(StatusCode::PAYLOAD_TOO_LARGE, "413 Content Too Large\n")
}

async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, Response<Body>> {
    let max = shared.config.max_body_bytes;
    let too_large = || too_large(shared);
    if body.size_hint().lower() > max as u64 {
        return Err(too_large());
    }
    let collect = Limited::new(body, max).collect();
    match tokio::time::timeout(shared.config.header_timeout(), collect).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(text(StatusCode::BAD_REQUEST, "400 Bad Request\n")),
        Err(_) => Err(text(StatusCode::REQUEST_TIMEOUT, "408 Request Timeout\n")),
    }
}
