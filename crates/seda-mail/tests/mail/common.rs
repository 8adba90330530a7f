//! Backends for tests: SQLite always; PostgreSQL and MariaDB when they answer on 127.0.0.1.

use std::sync::Arc;
use std::time::Instant;

use seda::Runtime;
use seda_mail::store::{self, Store};
use seda_mail::{Corpus, MailRequest, MailResponse, MailService, ServiceOptions};

pub const PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
pub const MY_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// A small corpus: 3 users, folders of at most 40 messages.
pub fn small_corpus() -> Corpus {
    Corpus::with_max_folder(3, 11, 40)
}

/// The path of test `name`'s temporary SQLite file.
pub fn temp_db_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("seda-mail-test-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}.db")).display().to_string()
}

/// A fresh temporary SQLite file.
pub fn temp_db(name: &str) -> String {
    let path = temp_db_path(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    path
}

/// Every backend available, each with its own tables (prefix `t_<test>_`), loaded with
/// `corpus`.
pub fn backends(test: &str, corpus: &Corpus) -> Vec<Arc<dyn Store>> {
    let prefix = format!("t_{test}_");
    let mut out: Vec<Arc<dyn Store>> = Vec::new();
    let candidates = [
        ("sqlite", temp_db(test)),
        ("postgres", PG_URL.to_string()),
        ("mysql", MY_URL.to_string()),
    ];
    for (name, url) in candidates {
        match store::open(&url, &prefix) {
            Ok(s) => {
                s.reset().expect("create tables");
                s.load(corpus).expect("load corpus");
                out.push(s);
            }
            Err(e) => {
                assert_ne!(name, "sqlite", "SQLite must always work: {e}");
                seda_peers::skip(
                    &format!("seda-mail {test}"),
                    seda_peers::database(name),
                    &e.to_string(),
                );
            }
        }
    }
    out
}

pub fn service(store: Arc<dyn Store>, options: ServiceOptions) -> (Runtime, Arc<MailService>) {
    let rt = Runtime::start().expect("runtime");
    let svc = MailService::start(&rt, store, &options).expect("stages");
    (rt, svc)
}

pub fn req(method: &str, target: &str, cookie: Option<&str>, body: &str) -> MailRequest {
    MailRequest::parse(
        method,
        target,
        cookie,
        None,
        body.as_bytes(),
        Instant::now(),
    )
    .expect("small request")
}

/// Submits and waits for the answer (immediate answers included).
pub fn call(svc: &MailService, r: MailRequest) -> MailResponse {
    match svc.submit(r) {
        Ok((_, rx)) => rx.blocking_recv().expect("a response"),
        Err((_, resp)) => resp,
    }
}

/// Logs in as user `i` and returns the cookie header value.
pub fn login(svc: &MailService, i: u64) -> String {
    let body = format!("user=user{i}&password=pass{i}");
    let r = call(svc, req("POST", "/login", None, &body));
    assert_eq!(r.status, 303, "{}", r.body);
    let c = r.header("set-cookie").expect("cookie");
    c.split(';').next().expect("sid").to_string()
}
