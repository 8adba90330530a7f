//! The HTTP adapter on a real socket: login, cookie, pages, 404, 413, and 503 on rejection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use seda_mail::{ServiceOptions, http};

use crate::common::*;

fn exchange(addr: std::net::SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn serves_pages_over_http() {
    let corpus = small_corpus();
    let store = seda_mail::store::open(&temp_db("http"), "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let (rt, svc) = service(store, ServiceOptions::default());
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (listener, addr) = tokio
        .block_on(http::bind("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    let server = tokio.spawn(http::serve(
        listener,
        svc,
        http::HttpOptions::default(),
        async {
            let _ = stop_rx.await;
        },
    ));

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

    // A closed stage rejects: 503 with Retry-After.
    let _ = stop_tx.send(());
    tokio.block_on(server).unwrap();
    rt.shutdown();
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
    late.meta.deadline = Some(std::time::Instant::now());
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
    assert_eq!(r.header("retry-after"), Some("5"));
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
    let (rt, svc) = service(store.clone(), ServiceOptions::default());
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (listener, addr) = tokio
        .block_on(http::bind("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    let server = tokio.spawn(http::serve(
        listener,
        svc,
        http::HttpOptions::default(),
        async {
            let _ = stop_rx.await;
        },
    ));
    let report = tokio.block_on(seda_mail::load::run(seda_mail::load::LoadOptions {
        addr,
        users: 4,
        corpus_users: 4,
        duration: Duration::from_secs(2),
        warmup: Duration::ZERO,
        think: Duration::from_millis(1),
        mix: seda_mail::user_model::Mix::Markov,
        seed: 3,
        class: Some(1),
    }));
    let _ = stop_tx.send(());
    tokio.block_on(server).unwrap();
    rt.shutdown();
    eprint!("{}", report.table());
    let total: u64 = report.kinds.iter().map(|(_, s)| s.ok).sum();
    assert!(total > 20, "{}", report.table());
    for (kind, s) in &report.kinds {
        assert_eq!(
            (s.server_errors, s.failed, s.client_errors),
            (0, 0, 0),
            "{kind}: {}",
            report.table()
        );
    }
    // Every page the model reads exists: logins, folder lists and message lists at least.
    for k in [
        seda_mail::RequestKind::Login,
        seda_mail::RequestKind::ListFolders,
        seda_mail::RequestKind::ListMessages,
        seda_mail::RequestKind::ShowMessage,
    ] {
        assert!(report.kinds[k.index()].1.ok > 0, "{k}: {}", report.table());
    }
    let a = store.audit().unwrap();
    assert_eq!((a.bad_folders, a.folder_counts), (0, a.messages));
    assert_eq!(
        a.messages,
        corpus.total_messages(),
        "the Markov users never purge"
    );
}
