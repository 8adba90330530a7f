//! Front-end limits: header size and count, slowloris, body size, idle keep-alive, connection
//! flood, pipelining.

use std::fs;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::client::{Conn, get};
use crate::{TempDir, eventually, static_server};

fn root_with_file() -> TempDir {
    let dir = TempDir::new();
    fs::write(dir.path().join("f"), "payload").expect("write");
    dir
}

#[test]
fn oversized_heads_and_too_many_headers_get_431() {
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| {
        c.http.max_header_bytes = 8192;
        c.http.max_headers = 16;
    });
    let addr = server.local_addr();
    let mut conn = Conn::open(addr);
    let big = format!("X-Big: {}\r\n", "a".repeat(9000));
    assert_eq!(conn.get("/f", &big).status, 431);
    assert!(conn.closed_by_server(), "closed after a 431");

    let mut conn = Conn::open(addr);
    let many: String = (0..20).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_eq!(conn.get("/f", &many).status, 431);

    // Just under both limits is fine, and the server serves a fresh client.
    let mut conn = Conn::open(addr);
    let ok: String = (0..10).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_eq!(conn.get("/f", &ok).status, 200);
    assert_eq!(get(addr, "/f").text(), "payload");
    assert_eq!(
        server.frontend_stats().requests,
        2,
        "refused heads never became requests"
    );
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_slowloris_connection_is_cut_off_and_costs_no_worker() {
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| {
        c.http.header_timeout_ms = 300;
        c.http.idle_timeout_ms = 60_000;
    });
    let addr = server.local_addr();
    let mut slow = Conn::open(addr);
    slow.stream()
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let start = Instant::now();
    slow.send(b"GET /f HTTP/1.1\r\nHost: test\r\n")
        .expect("send");
    let mut cut = false;
    // Trickle one header line every 50 ms, as a slowloris does, for at most 5 s.
    while start.elapsed() < Duration::from_secs(5) {
        if slow.stream().write_all(b"X-Slow: 1\r\n").is_err() || slow.closed_by_server() {
            cut = true;
            break;
        }
        // Meanwhile the server answers others at once.
        assert_eq!(get(addr, "/f").status, 200);
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = start.elapsed();
    assert!(cut, "the slow connection was still open after {took:?}");
    assert!(
        took >= Duration::from_millis(250),
        "cut too early: {took:?}"
    );
    let stats = server.frontend_stats();
    assert_eq!(stats.header_timeouts, 1);
    let runtime = server.runtime().stats();
    let route = runtime
        .stages
        .iter()
        .find(|s| s.name == "route")
        .expect("route");
    assert_eq!(
        route.totals.counters.admitted, stats.requests,
        "only complete heads became events"
    );
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn idle_keep_alive_connections_are_closed() {
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| c.http.idle_timeout_ms = 200);
    let mut conn = Conn::open(server.local_addr());
    assert_eq!(conn.get("/f", "").status, 200);
    // Keep-alive works while the connection is in use...
    assert_eq!(conn.get("/f", "").status, 200);
    let start = Instant::now();
    // ...and an idle one is closed after the idle time (the read timeout is 10 s).
    assert!(conn.closed_by_server());
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(server.frontend_stats().idle_closed, 1);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn bodies_over_the_limit_get_413() {
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| c.http.max_body_bytes = 100);
    let addr = server.local_addr();
    let mut conn = Conn::open(addr);
    let body = "x".repeat(1000);
    conn.send(
        format!("POST /f HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{body}").as_bytes(),
    )
    .expect("send");
    assert_eq!(conn.read_response(false).expect("response").status, 413);

    let mut conn = Conn::open(addr);
    let chunk = "y".repeat(80);
    conn.send(
        format!(
            "POST /f HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
             50\r\n{chunk}\r\n50\r\n{chunk}\r\n0\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("send");
    assert_eq!(conn.read_response(false).expect("response").status, 413);

    // A small body passes the front end (and the static service answers 405).
    let mut conn = Conn::open(addr);
    conn.send(b"POST /f HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
        .expect("send");
    assert_eq!(conn.read_response(false).expect("response").status, 405);
    assert_eq!(server.frontend_stats().body_too_large, 2);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_flood_past_max_connections_gets_503s_and_the_server_stays_responsive() {
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| c.http.max_connections = 8);
    let addr = server.local_addr();
    let mut held: Vec<Conn> = (0..8).map(|_| Conn::open(addr)).collect();
    for c in &mut held {
        assert_eq!(c.get("/f", "").status, 200);
    }
    let start = Instant::now();
    let mut refused = 0;
    for _ in 0..50 {
        let mut c = Conn::open(addr);
        let r = c.get("/f", "");
        assert_eq!(r.status, 503);
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(r.header("connection"), Some("close"));
        assert!(c.closed_by_server());
        refused += 1;
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "refusals were slow"
    );
    assert_eq!(server.frontend_stats().refused_connections, refused);
    // The held connections still work.
    assert_eq!(held[0].get("/f", "").status, 200);
    drop(held);
    assert!(eventually(Duration::from_secs(5), || server
        .frontend_stats()
        .open_connections
        == 0));
    assert_eq!(
        get(addr, "/f").text(),
        "payload",
        "a fresh client is served"
    );
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let dir = root_with_file();
    fs::write(dir.path().join("g"), "second").expect("write");
    let server = static_server(dir.path(), |_| {});
    let mut conn = Conn::open(server.local_addr());
    conn.send(
        b"GET /f HTTP/1.1\r\nHost: t\r\n\r\nGET /g HTTP/1.1\r\nHost: t\r\n\r\n\
          HEAD /f HTTP/1.1\r\nHost: t\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .expect("send");
    assert_eq!(conn.read_response(false).expect("1").text(), "payload");
    assert_eq!(conn.read_response(false).expect("2").text(), "second");
    let head = conn.read_response(true).expect("3");
    assert_eq!(head.header("content-length"), Some("7"));
    assert_eq!(conn.read_response(false).expect("4").status, 404);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn an_idle_keep_alive_connection_is_parked_until_its_next_request() {
    // Parked: hyper's connection and its buffers are dropped while the socket waits (issue
    // 52: bytes per idle connection), and the connection is counted as parked.
    let dir = root_with_file();
    let server = static_server(dir.path(), |c| {
        c.http.idle_timeout_ms = 60_000;
        c.http.h2c = false; // HTTP/2 detection keeps hyper's connection (nothing parks)
    });
    let mut conns: Vec<Conn> = (0..3).map(|_| Conn::open(server.local_addr())).collect();
    for c in &mut conns {
        assert_eq!(c.get("/f", "").text(), "payload");
    }
    let parked = || server.frontend_stats().parked_connections;
    assert!(
        eventually(Duration::from_secs(5), || parked() == 3),
        "{} of 3 idle connections parked",
        parked()
    );
    // The next request unparks its connection, which parks again after the answer.
    assert_eq!(conns[0].get("/f", "").text(), "payload");
    assert!(eventually(Duration::from_secs(5), || parked() == 3));
    drop(conns);
    assert!(eventually(Duration::from_secs(5), || parked() == 0));
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_keep_alive_connection_idle_between_requests_serves_what_comes_next() {
    // Between requests the server drops hyper's connection and keeps only the socket (here at
    // once after every answer); the next request, however it arrives, is read whole and
    // answered in order.
    let dir = root_with_file();
    fs::write(dir.path().join("g"), "second").expect("write");
    let server = static_server(dir.path(), |c| c.http.park_after_ms = 0);
    let mut conn = Conn::open(server.local_addr());
    for _ in 0..3 {
        assert_eq!(conn.get("/f", "").text(), "payload");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A head split over two writes, the second after a pause.
    conn.send(b"GET /g HTTP/1.1\r\nHo").expect("send");
    std::thread::sleep(Duration::from_millis(50));
    conn.send(b"st: t\r\n\r\n").expect("send");
    assert_eq!(conn.read_response(false).expect("split").text(), "second");
    std::thread::sleep(Duration::from_millis(50));
    // Pipelined requests after an idle pause.
    conn.send(b"GET /f HTTP/1.1\r\nHost: t\r\n\r\nGET /g HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("send");
    assert_eq!(conn.read_response(false).expect("1").text(), "payload");
    assert_eq!(conn.read_response(false).expect("2").text(), "second");
    // A POST with a body (its connection is not parked), then a GET.
    conn.send(b"POST /f HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        .expect("send");
    assert_eq!(conn.read_response(false).expect("post").status, 405);
    assert_eq!(conn.get("/g", "").text(), "second");
    server.shutdown(Duration::from_secs(5));
}
