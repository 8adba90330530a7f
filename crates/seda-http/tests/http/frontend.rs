//! The front end over a stage whose handler the test holds: overload through a tiny queue
//! threshold, cancellation on disconnect, graceful shutdown with requests in flight.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use seda::{RejectReason, Runtime, Sink, Stage, handler};
use seda_http::{HttpConfig, HttpRequest, HttpServer};

use crate::client::Conn;
use crate::eventually;

/// A one-thread stage with queue threshold 1: each event reports its path on `started`, then
/// waits for one message on `release` before answering 200 with the path.
pub(crate) struct Held {
    pub(crate) runtime: Runtime,
    pub(crate) sink: Sink<HttpRequest>,
    pub(crate) started: Receiver<String>,
    pub(crate) release: Sender<()>,
    pub(crate) dropped: Receiver<RejectReason>,
}

pub(crate) fn held_stage() -> Held {
    let runtime = Runtime::start().expect("runtime");
    let (started_tx, started) = channel();
    let (release, release_rx) = channel::<()>();
    let (dropped_tx, dropped) = channel();
    let started_tx = Mutex::new(started_tx);
    let release_rx = Mutex::new(release_rx);
    let dropped_tx = Mutex::new(dropped_tx);
    let sink = runtime
        .stage(
            Stage::builder("held")
                .threads(1)
                .threshold(1)
                .handler(handler::each(move |req: HttpRequest, _cx| {
                    let path = req.head.uri.path().to_string();
                    let _ = started_tx.lock().expect("lock").send(path.clone());
                    let _ = release_rx.lock().expect("lock").recv();
                    req.respond(Response::new(Full::new(Bytes::from(path))));
                }))
                .on_drop(move |req: HttpRequest, reason| {
                    let _ = dropped_tx.lock().expect("lock").send(reason);
                    drop(req);
                }),
        )
        .expect("stage");
    Held {
        runtime,
        sink,
        started,
        release,
        dropped,
    }
}

pub(crate) fn front(held: &Held, per_core: bool) -> HttpServer {
    let config = HttpConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        threads: 2,
        per_core,
        ..HttpConfig::default()
    };
    HttpServer::start(config, held.sink.clone(), Some(held.runtime.clone())).expect("start")
}

/// Sends `GET path` on a new connection from another thread; the response comes back on the
/// returned handle.
pub(crate) fn spawn_get(
    addr: std::net::SocketAddr,
    path: &'static str,
) -> thread::JoinHandle<crate::client::Response> {
    thread::spawn(move || Conn::open(addr).get(path, ""))
}

pub(crate) const WAIT: Duration = Duration::from_secs(10);

fn a_full_queue_answers_503_with_retry_after_at_once(per_core: bool) {
    let held = held_stage();
    let server = front(&held, per_core);
    let addr = server.local_addr();
    let a = spawn_get(addr, "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let b = spawn_get(addr, "/b");
    assert!(eventually(WAIT, || held.sink.len() == 1), "b queued");
    // The queue (threshold 1) is full: the next request is not admitted.
    let start = Instant::now();
    let c = Conn::open(addr).get("/c", "");
    assert_eq!(c.status, 503);
    assert_eq!(c.header("retry-after"), Some("1"));
    assert!(c.text().contains("overloaded"), "{}", c.text());
    assert!(start.elapsed() < Duration::from_secs(2), "answered at once");
    assert_eq!(server.stats().rejected_requests, 1);
    // Refused on, for a little over two of the `Retry-After` advisor's half-second periods,
    // against two admissions: the wait grows, so clients that honour it come back less often.
    let mut conn = Conn::open(addr);
    let mut wait = 1;
    let end = Instant::now() + Duration::from_millis(1100);
    while Instant::now() < end {
        let r = conn.get("/c", "");
        assert_eq!(r.status, 503);
        let w = r.header("retry-after").and_then(|v| v.parse::<u32>().ok());
        wait = w.expect("Retry-After in whole seconds");
        thread::sleep(Duration::from_millis(2));
    }
    assert!(wait > 1 && wait <= 24, "Retry-After {wait} s");
    let least = server.stats().retry_after_s;
    assert!(
        (least..=2 * least).contains(&wait),
        "the stats say what refusals get: at least {least} s, told {wait} s"
    );
    held.release.send(()).expect("release a");
    held.release.send(()).expect("release b");
    assert_eq!(a.join().expect("a").text(), "/a");
    assert_eq!(b.join().expect("b").text(), "/b");
    server.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}

/// A request whose body has not arrived is refused on its head: the 503 comes without the
/// body being waited for, and an admitted request's body is read after its admission.
fn a_refusal_is_decided_before_the_body_is_read(per_core: bool) {
    let held = held_stage();
    let server = front(&held, per_core);
    let addr = server.local_addr();
    let a = spawn_get(addr, "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let b = spawn_get(addr, "/b");
    assert!(eventually(WAIT, || held.sink.len() == 1), "b queued");
    // The head of a 100 KB POST, and not a byte of its body: reading the body first would
    // wait for it until the head timeout (10 s), past this client's read timeout.
    let mut c = Conn::open(addr);
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(3)))
        .expect("timeout");
    c.send(b"POST /c HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n")
        .expect("send head");
    let r = c.read_response(false).expect("a 503 without the body");
    assert_eq!(r.status, 503);
    assert_eq!(server.stats().rejected_requests, 1);
    held.release.send(()).expect("release a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("b started"), "/b");
    held.release.send(()).expect("release b");
    assert_eq!(a.join().expect("a").text(), "/a");
    assert_eq!(b.join().expect("b").text(), "/b");
    // Admitted, the body is read, then the request is handled.
    let d = thread::spawn(move || {
        let mut d = Conn::open(addr);
        d.send(b"POST /d HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
            .expect("send");
        d.read_response(false).expect("response")
    });
    assert_eq!(held.started.recv_timeout(WAIT).expect("d started"), "/d");
    held.release.send(()).expect("release d");
    assert_eq!(d.join().expect("d").text(), "/d");
    server.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}

/// The connection's refusal policy (`HttpConfig::refusal`), on a stage that refuses every
/// request while it holds two: `close:2` answers the second refusal in a row with
/// `Connection: close` and closes the socket; `delay:200ms` answers no refusal sooner.
fn refusals_follow_the_connection_policy(per_core: bool) {
    let held = held_stage();
    let config = |refusal: &str| HttpConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        threads: 2,
        per_core,
        refusal: refusal.parse().expect("policy"),
        ..HttpConfig::default()
    };
    let closing = HttpServer::start(config("close:2"), held.sink.clone(), None).expect("start");
    let delaying =
        HttpServer::start(config("delay:200ms"), held.sink.clone(), None).expect("start");
    let a = spawn_get(closing.local_addr(), "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let b = spawn_get(closing.local_addr(), "/b");
    assert!(eventually(WAIT, || held.sink.len() == 1), "b queued");

    let mut c = Conn::open(closing.local_addr());
    let first = c.get("/c", "");
    assert_eq!(first.status, 503);
    assert_ne!(
        first.header("connection"),
        Some("close"),
        "one refusal keeps it"
    );
    let second = c.get("/c", "");
    assert_eq!(second.status, 503);
    assert_eq!(second.header("connection"), Some("close"));
    assert!(
        c.closed_by_server(),
        "closed after the second refusal in a row"
    );

    let mut d = Conn::open(delaying.local_addr());
    for _ in 0..2 {
        let sent = Instant::now();
        let r = d.get("/d", "");
        assert_eq!(r.status, 503);
        let took = sent.elapsed();
        assert!(
            took >= Duration::from_millis(200),
            "a refusal after {took:?}"
        );
    }

    held.release.send(()).expect("release a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("b started"), "/b");
    held.release.send(()).expect("release b");
    assert_eq!(a.join().expect("a").text(), "/a");
    assert_eq!(b.join().expect("b").text(), "/b");
    closing.shutdown(WAIT);
    delaying.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}

/// The server's pace of refusals (`HttpConfig::refusals_per_s`) holds across connections and
/// counts the 503s the service answers itself (a stage past the front end refused): at one a
/// second, of two refusals on two connections with no policy of their own, one is answered at
/// once and the other a second later.
fn the_servers_refusals_are_paced_across_connections(per_core: bool) {
    let runtime = Runtime::start().expect("runtime");
    let sink = runtime
        .stage(
            Stage::builder("refusing").handler(handler::each(|req: HttpRequest, _cx| {
                let mut busy = Response::new(Full::new(Bytes::from_static(b"busy")));
                *busy.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
                req.respond(busy);
            })),
        )
        .expect("stage");
    let config = HttpConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        threads: 2,
        per_core,
        refusal: "none".parse().expect("policy"),
        refusals_per_s: 1,
        ..HttpConfig::default()
    };
    let server = HttpServer::start(config, sink, None).expect("start");
    let sent = Instant::now();
    let first = Conn::open(server.local_addr()).get("/a", "");
    let at_once = sent.elapsed();
    let second = Conn::open(server.local_addr()).get("/b", "");
    let later = sent.elapsed();
    assert_eq!((first.status, second.status), (503, 503));
    assert!(
        at_once < Duration::from_millis(500),
        "the first after {at_once:?}"
    );
    assert!(
        later >= Duration::from_millis(900),
        "the second after {later:?}"
    );
    server.shutdown(WAIT);
    runtime.shutdown_timeout(WAIT);
}

fn a_client_that_disconnects_cancels_its_request(per_core: bool) {
    let held = held_stage();
    let server = front(&held, per_core);
    let addr = server.local_addr();
    let a = spawn_get(addr, "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let mut b = Conn::open(addr);
    b.send(b"GET /b HTTP/1.1\r\nHost: t\r\n\r\n").expect("send");
    assert!(eventually(WAIT, || held.sink.len() == 1), "b queued");
    drop(b);
    assert!(
        eventually(WAIT, || server.stats().cancelled_requests == 1),
        "the disconnect cancelled b"
    );
    held.release.send(()).expect("release a");
    assert_eq!(a.join().expect("a").text(), "/a");
    // b is dropped at dequeue, never handled, and the stage's drop hook sees it.
    assert_eq!(
        held.dropped.recv_timeout(WAIT).expect("b dropped"),
        RejectReason::Expired
    );
    assert!(
        held.started.try_recv().is_err(),
        "b never reached the handler"
    );
    server.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}

fn graceful_shutdown_finishes_requests_in_flight_and_stops_accepting(per_core: bool) {
    let held = held_stage();
    let server = front(&held, per_core);
    let addr = server.local_addr();
    let a = spawn_get(addr, "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    // An idle keep-alive connection, open at shutdown, is closed by it.
    let mut idle = Conn::open(addr);
    assert!(eventually(WAIT, || server.stats().open_connections == 2));
    let stats = Arc::new(Mutex::new(None));
    let shutdown = {
        let stats = stats.clone();
        thread::spawn(move || {
            let summary = server.shutdown(WAIT);
            *stats.lock().expect("lock") = Some(summary);
        })
    };
    assert!(
        eventually(WAIT, || std::net::TcpStream::connect(addr).is_err()),
        "still accepting after shutdown began"
    );
    assert!(idle.closed_by_server(), "idle connection closed");
    assert!(
        stats.lock().expect("lock").is_none(),
        "waits for the request in flight"
    );
    held.release.send(()).expect("release a");
    let r = a.join().expect("a");
    assert_eq!((r.status, r.text().as_str()), (200, "/a"));
    assert_eq!(r.header("connection"), Some("close"));
    shutdown.join().expect("shutdown");
    let summary = stats.lock().expect("lock").take().expect("summary");
    assert_eq!(summary.connections_cut, 0);
    assert!(held.runtime.shutdown_timeout(WAIT).drained);
}

fn the_shutdown_wait_is_bounded(per_core: bool) {
    let held = held_stage();
    let server = front(&held, per_core);
    let a = spawn_get(server.local_addr(), "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let start = Instant::now();
    let summary = server.shutdown(Duration::from_millis(300));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(summary.connections_cut, 1);
    // The client saw its connection end without an answer.
    held.release.send(()).expect("release");
    assert!(a.join().is_err(), "the client got no answer");
    held.runtime.shutdown_timeout(WAIT);
}

#[test]
fn a_full_queue_answers_503_with_retry_after_at_once_per_core() {
    a_full_queue_answers_503_with_retry_after_at_once(true);
}

#[test]
fn a_full_queue_answers_503_with_retry_after_at_once_shared() {
    a_full_queue_answers_503_with_retry_after_at_once(false);
}

#[test]
fn a_client_that_disconnects_cancels_its_request_per_core() {
    a_client_that_disconnects_cancels_its_request(true);
}

#[test]
fn a_client_that_disconnects_cancels_its_request_shared() {
    a_client_that_disconnects_cancels_its_request(false);
}

#[test]
fn graceful_shutdown_finishes_requests_in_flight_and_stops_accepting_per_core() {
    graceful_shutdown_finishes_requests_in_flight_and_stops_accepting(true);
}

#[test]
fn graceful_shutdown_finishes_requests_in_flight_and_stops_accepting_shared() {
    graceful_shutdown_finishes_requests_in_flight_and_stops_accepting(false);
}

#[test]
fn the_shutdown_wait_is_bounded_per_core() {
    the_shutdown_wait_is_bounded(true);
}

#[test]
fn the_shutdown_wait_is_bounded_shared() {
    the_shutdown_wait_is_bounded(false);
}

#[test]
fn a_refusal_is_decided_before_the_body_is_read_per_core() {
    a_refusal_is_decided_before_the_body_is_read(true);
}

#[test]
fn a_refusal_is_decided_before_the_body_is_read_shared() {
    a_refusal_is_decided_before_the_body_is_read(false);
}

#[test]
fn refusals_follow_the_connection_policy_per_core() {
    refusals_follow_the_connection_policy(true);
}

#[test]
fn refusals_follow_the_connection_policy_shared() {
    refusals_follow_the_connection_policy(false);
}

#[test]
fn the_servers_refusals_are_paced_across_connections_per_core() {
    the_servers_refusals_are_paced_across_connections(true);
}

#[test]
fn the_servers_refusals_are_paced_across_connections_shared() {
    the_servers_refusals_are_paced_across_connections(false);
}
