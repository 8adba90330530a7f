//! Culprit-aware termination on a real socket: a search hogging the searches' one connection
//! (`--search-connections 1 --cut-culprits`) while others wait is cut, its statement
//! interrupted inside SQLite and answered 503 `terminated`; the searches queued behind it are
//! answered, and the connection serves the next search.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use seda::CulpritPolicy;
use seda_mail::search_gate::SearchConnections;
use seda_mail::{MailServer, MailServerConfig, ServiceOptions};

use crate::common::*;

/// Rows of long, uniform bodies whose LIKE scan with a near-miss pattern takes seconds (as in
/// `cancel.rs`).
const ROWS: i64 = 200;
const BODY: usize = 100_000;

/// Sends one request and returns the whole answer.
fn exchange(addr: SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s.write_all(raw.as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn get(addr: SocketAddr, path: &str, sid: &str) -> String {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nhost: x\r\ncookie: {sid}\r\nconnection: close\r\n\r\n"),
    )
}

fn http_login(addr: SocketAddr, i: u64) -> String {
    let body = format!("user=user{i}&password=pass{i}");
    let r = exchange(
        addr,
        &format!(
            "POST /login HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: \
             application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 303"), "{r}");
    r.lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string()
}

/// A SQLite store of the small corpus whose user 1 also has [`ROWS`] huge bodies.
fn store_with_huge_mailbox() -> std::sync::Arc<dyn seda_mail::store::Store> {
    let path = temp_db("culprit");
    let store = seda_mail::store::open(&path, "").expect("store");
    store.reset().expect("tables");
    store.load(&small_corpus()).expect("corpus");
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    let mut st = conn
        .prepare("INSERT INTO messages VALUES (?1, 1, 1, 's', 'r', 'slow', 0, 0, 0, 'h', ?2)")
        .expect("insert");
    let body = "a".repeat(BODY);
    for i in 0..ROWS {
        st.execute(rusqlite::params![10_000_000 + i, body])
            .expect("row");
    }
    store
}

#[test]
fn the_search_hogging_the_connection_is_cut_and_its_victims_answered() {
    let store = store_with_huge_mailbox();
    let mut config = MailServerConfig::default();
    config.http.addr = "127.0.0.1:0".parse().expect("addr");
    config.service = ServiceOptions {
        threads: 8,
        search_connections: Some(
            SearchConnections::new(1)
                .expect("one connection")
                .cutting(CulpritPolicy::default()),
        ),
        ..ServiceOptions::default()
    };
    let server = MailServer::start(store, config).expect("server");
    let addr = server.local_addr();
    let (rogue_sid, victim_sid) = (http_login(addr, 1), http_login(addr, 2));

    // The rogue: a near miss on every huge body, seconds of scanning if nobody cuts it.
    let q = format!("{}b", "a".repeat(190));
    let started = Instant::now();
    let rogue = std::thread::spawn(move || {
        let r = get(addr, &format!("/search?q={q}&in=body"), &rogue_sid);
        (r, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(30));
    // Its victims: short searches of a small mailbox, queued on the one connection.
    let victims: Vec<_> = (0..4)
        .map(|_| {
            let sid = victim_sid.clone();
            std::thread::spawn(move || get(addr, "/search?q=the&in=headers", &sid))
        })
        .collect();
    let (r, took) = rogue.join().expect("rogue");
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    assert!(r.contains("x-seda-reject: terminated"), "{r}");
    for v in victims {
        let r = v.join().expect("victim");
        assert!(r.starts_with("HTTP/1.1 200"), "a victim is answered: {r}");
    }
    eprintln!("the rogue was cut after {took:?}");
    // After its min_hold (100 ms) and a tick or two: far less than its scan.
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The connection is back and serves the next search.
    let r = get(addr, "/search?q=the&in=headers", &victim_sid);
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let stats = server.runtime().stats();
    let search = stats
        .stages
        .iter()
        .find(|s| s.name == "mail.search")
        .expect("search stage");
    assert_eq!(search.totals.counters.terminated, 1, "the rogue, only");
}
