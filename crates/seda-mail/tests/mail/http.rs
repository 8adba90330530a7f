//! `MailServer` (the service on the shared front end) on a real socket: login, cookie, pages, 404, 413, and 503 on rejection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use seda_mail::{MailServer, MailServerConfig, ServiceOptions};
use seda_testbed::mail::workload::MailWorkload;

use crate::common::*;

fn exchange(addr: std::net::SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A [`MailServer`] on `store` at a free port of 127.0.0.1.
fn start(store: std::sync::Arc<dyn seda_mail::store::Store>) -> MailServer {
    let mut config = MailServerConfig::default();
    config.http.addr = "127.0.0.1:0".parse().unwrap();
    MailServer::start(store, config).expect("server")
}

#[test]
fn serves_pages_over_http() {
    let corpus = small_corpus();
    let store = seda_mail::store::open(&temp_db("http"), "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let server = start(store);
    let addr = server.local_addr();

    let r = exchange(
        addr,
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("<form method=\"post\" action=\"/login\">"));

    let body = "user=user2&password=pass2";
    let r = exchange(
        addr,
        &format!(
            "POST /login HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: \
             application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 303"), "{r}");
    let sid = r
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_string();
    let r = exchange(
        addr,
        &format!("GET /folders HTTP/1.1\r\nhost: x\r\ncookie: {sid}\r\nconnection: close\r\n\r\n"),
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("Folders of user2"));
    // Each type's handlers count the CPU they used, and each response says what it cost: what
    // the lab prices goodput with.
    let cpu = server.service().handler_cpu_s();
    assert!(cpu["login"] > 0.0 && cpu["list_folders"] > 0.0, "{cpu:?}");
    assert_eq!(cpu["search"], 0.0);
    let said_ms: f64 = r
        .lines()
        .find_map(|l| l.strip_prefix("server-timing: cpu;dur="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no server-timing in {r}"));
    // To the header's microsecond.
    assert!(
        said_ms > 0.0 && said_ms <= cpu["list_folders"] * 1e3 + 1e-3,
        "{said_ms} ms, {cpu:?}"
    );

    let r = exchange(
        addr,
        "GET /etc/passwd HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");

    let big = "a".repeat(seda_mail::MAX_FORM_BYTES + 10);
    let r = exchange(
        addr,
        &format!(
            "POST /login HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{big}",
            big.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");

    let done = server.shutdown(Duration::from_secs(5));
    assert!(done.runtime.drained, "{done:?}");
}

#[test]
fn rejection_is_503_with_retry_after() {
    let corpus = small_corpus();
    let store = seda_mail::store::open(&temp_db("http503"), "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let rt = seda::Runtime::start().unwrap();
    let svc = seda_mail::MailService::start(&rt, store, &ServiceOptions::default()).unwrap();
    // A request whose deadline has passed is not served.
    let mut late = req("GET", "/login", None, "");
    late.meta.set_deadline(Some(std::time::Instant::now()));
    let r = call(&svc, late);
    assert_eq!(r.status, 503);
    // Dispatch answers through the event's callback, whatever happens to it.
    let (tx, rx) = std::sync::mpsc::channel();
    let answer = move |r: seda_mail::MailResponse| {
        let _ = tx.send(r.status);
    };
    let t2 = answer.clone();
    assert_eq!(
        svc.dispatch(seda_mail::MailEvent::with_callback(
            req("GET", "/nope", None, ""),
            answer
        )),
        None
    );
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 404);
    svc.dispatch(seda_mail::MailEvent::with_callback(
        req("GET", "/login", None, ""),
        t2,
    ));
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 200);
    // Stop admitting: every stage now rejects at enqueue.
    svc.sink(seda_mail::RequestKind::Login)
        .set_threshold(Some(0));
    let r = call(&svc, req("GET", "/login", None, ""));
    assert_eq!(r.status, 503);
    // WC03's wait, spread by up to half of it so that refused users do not return together.
    let told: u32 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((5..=8).contains(&told), "Retry-After: {told}");
    // Refusing everything for over a second, the service asks refused clients to wait longer.
    let mut wait = 0;
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(10));
        let r = call(&svc, req("GET", "/login", None, ""));
        wait = r
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
    }
    assert!(wait > 5 && wait <= 120, "Retry-After: {wait}");
    let (tx, rx) = std::sync::mpsc::channel();
    svc.dispatch(seda_mail::MailEvent::with_callback(
        req("GET", "/login", None, ""),
        move |r| {
            let _ = tx.send(r.status);
        },
    ));
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 503);
    rt.shutdown();
}

#[test]
fn emulated_users_drive_every_page_over_http() {
    let corpus = seda_mail::Corpus::with_max_folder(4, 5, 60);
    let store = seda_mail::store::open(&temp_db("users"), "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let server = start(store.clone());
    let target = seda_load::Target::parse(&format!("http://{}/", server.local_addr())).unwrap();
    let model = seda_load::Model::Closed(seda_load::Closed {
        users: 4,
        think: Duration::from_millis(1),
        think_exponential: false,
        ramp: Duration::ZERO,
    });
    let mut load = seda_load::LoadConfig::new(target, model).unwrap();
    load.workload = std::sync::Arc::new(MailWorkload::new(4));
    load.duration = Duration::from_secs(2);
    let report = seda_load::run(load).expect("load");
    server.shutdown(Duration::from_secs(5));
    let s = &report.summary;
    eprintln!(
        "{} completed, statuses {:?}",
        s.counts.completed, s.statuses
    );
    assert!(s.counts.completed > 20, "{s:?}");
    assert_eq!(s.counts.errors, 0, "{s:?}");
    // Every page the model reads exists: logins, folder lists and message lists at least.
    for k in [
        seda_mail::RequestKind::Login,
        seda_mail::RequestKind::ListFolders,
        seda_mail::RequestKind::ListMessages,
        seda_mail::RequestKind::ShowMessage,
    ] {
        let c = report
            .classes
            .iter()
            .find(|c| c.name == k.name())
            .unwrap_or_else(|| panic!("{k}: no class in {:?}", report.classes));
        assert!(c.counts.completed > 0, "{k}: {c:?}");
    }
    let a = store.audit().unwrap();
    assert_eq!((a.bad_folders, a.folder_counts), (0, a.messages));
    assert_eq!(
        a.messages,
        corpus.total_messages(),
        "the Markov users never purge"
    );
}
