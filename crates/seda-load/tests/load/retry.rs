//! Retries on a stale keep-alive connection: only idempotent methods are sent again.

use std::sync::Arc;
use std::time::Duration;

use seda_load::workload::{Reply as Last, Request, Session, Workload};

use crate::common::*;

/// Every request is `method /delete`, one user, a short think time.
struct Same(&'static str);

impl Workload for Same {
    fn classes(&self) -> Vec<String> {
        vec!["delete".into()]
    }
    fn session(&self, _seed: u64) -> Box<dyn Session> {
        Box::new(SameSession(self.0))
    }
}

struct SameSession(&'static str);

impl Session for SameSession {
    fn next_request(&mut self, _last: Option<&Last<'_>>) -> Request {
        let mut req = Request::get("/delete", 0);
        req.method = self.0;
        if self.0 == "POST" {
            req.body = b"id=7".to_vec();
        }
        req
    }
}

/// The server answers the first request of each connection and hangs up on the second after
/// reading it: to the client the reused connection looks stale, yet the server saw the request.
fn run(method: &'static str) -> (seda_load::Report, u64) {
    let log = Arc::new(std::sync::Mutex::new(
        std::collections::HashMap::<u64, u32>::new(),
    ));
    let seen = log.clone();
    let server = TestServer::start(move |s| {
        let mut per_conn = seen.lock().expect("log");
        let n = per_conn.entry(s.conn).or_insert(0);
        *n += 1;
        Reply {
            hang_up: *n >= 2,
            ..Reply::ok()
        }
    });
    let mut cfg = closed(
        &server.url("/"),
        1,
        Duration::from_millis(5),
        Duration::from_millis(400),
    );
    cfg.workload = Arc::new(Same(method));
    let r = seda_load::run(cfg).expect("run");
    assert_counts_add_up(&r);
    (r, server.requests())
}

#[test]
fn a_post_on_a_stale_connection_is_not_sent_twice() {
    let (r, seen) = run("POST");
    let c = &r.summary.counts;
    assert!(c.errors > 0, "no stale connection was met: {c:?}");
    assert_eq!(
        seen, c.sent,
        "the server saw {seen} POSTs for {} sent: some were sent again",
        c.sent
    );
}

#[test]
fn a_get_on_a_stale_connection_is_retried_once_on_a_new_one() {
    let (r, seen) = run("GET");
    let c = &r.summary.counts;
    assert_eq!(c.errors, 0, "{c:?}");
    assert!(
        seen > c.sent,
        "no GET was retried: {seen} seen, {} sent",
        c.sent
    );
}
