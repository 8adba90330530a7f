//! Rejections and backoff, the AIMD window, the adaptive throttle, timeouts and failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use seda_control::{AimdWindowConfig, RetryBudgetConfig, ThrottleConfig};
use seda_load::Arrivals;
use seda_load::workload::{Reply as Seen503, Request, Session, Workload};

use crate::common::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A workload that counts restarts (the e-mail user's "log in again").
struct Counting(Arc<AtomicUsize>);
struct CountingSession(Arc<AtomicUsize>);

impl Workload for Counting {
    fn classes(&self) -> Vec<String> {
        vec!["login".into()]
    }
    fn session(&self, _seed: u64) -> Box<dyn Session> {
        Box::new(CountingSession(self.0.clone()))
    }
}

impl Session for CountingSession {
    fn next_request(&mut self, _last: Option<&Seen503<'_>>) -> Request {
        Request::get("/login", 0)
    }
    fn restart(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A stateful user in the style of the e-mail model: log in, then follow the link and the
/// session cookie the previous reply gave.
struct Mail;
struct MailUser {
    cookie: Option<String>,
    next: Option<String>,
}

impl Workload for Mail {
    fn classes(&self) -> Vec<String> {
        vec!["login".into(), "read".into()]
    }
    fn session(&self, _seed: u64) -> Box<dyn Session> {
        Box::new(MailUser {
            cookie: None,
            next: None,
        })
    }
}

impl Session for MailUser {
    fn next_request(&mut self, last: Option<&Seen503<'_>>) -> Request {
        if let Some(r) = last {
            if let Some(c) = r.header("set-cookie") {
                self.cookie = Some(c.to_string());
            }
            let body = String::from_utf8_lossy(r.body);
            self.next = body.strip_prefix("next=").map(str::to_string);
        }
        match (&self.cookie, &self.next) {
            (Some(c), Some(path)) => {
                let mut req = Request::get(path.as_str(), 1);
                req.headers.push(("Cookie".into(), c.clone()));
                req
            }
            _ => Request::get("/login", 0),
        }
    }
    fn capture_bytes(&self) -> usize {
        64
    }
    fn capture_headers(&self) -> bool {
        true
    }
    fn think_time(&mut self) -> Option<Duration> {
        Some(MS(2))
    }
}

#[test]
fn a_stateful_session_follows_the_previous_reply() {
    let server = TestServer::start(|s| {
        let text = format!("next=/msg/{}", s.n + 1);
        if s.path == "/login" {
            let headers = format!("Set-Cookie: sid={}\r\n", s.conn);
            Reply {
                headers,
                text: Some(text),
                ..Reply::ok()
            }
        } else {
            Reply {
                text: Some(text),
                ..Reply::ok()
            }
        }
    });
    let mut cfg = closed(&server.url("/"), 3, MS(500), MS(400));
    cfg.workload = Arc::new(Mail);
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let log = server.log();
    // One login per user, then only links taken from the previous reply, with the cookie.
    assert_eq!(log.iter().filter(|s| s.path == "/login").count(), 3);
    let reads: Vec<_> = log.iter().filter(|s| s.path != "/login").collect();
    assert!(
        reads.len() > 30,
        "{} reads: the think time override (2 ms) was not used",
        reads.len()
    );
    for s in &reads {
        assert!(s.path.starts_with("/msg/"), "{}", s.path);
        assert!(
            s.head.contains(&format!("cookie: sid={}", s.conn)),
            "{}",
            s.head
        );
    }
    assert_eq!(r.classes[0].counts.completed, 3);
}

#[test]
fn a_503_is_a_rejection_honoured_with_backoff() {
    // The server rejects everything in the 300 ms after the first request it sees.
    let first = Arc::new(OnceLock::new());
    let f = first.clone();
    let server = TestServer::start(move |s| {
        let t0: Instant = *f.get_or_init(|| s.at);
        if s.at.duration_since(t0) < MS(300) {
            Reply::status(503)
        } else {
            Reply::ok()
        }
    });
    let restarts = Arc::new(AtomicUsize::new(0));
    let mut cfg = closed(&server.url("/"), 4, MS(5), MS(1200));
    cfg.workload = Arc::new(Counting(restarts.clone()));
    cfg.client.backoff_on_503 = Some(MS(500));
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    assert_eq!((c.rejected, c.errors), (4, 0), "{c:?}");
    assert_eq!(restarts.load(Ordering::SeqCst), 4);
    // Each user came back 500 ms after its rejection, on the connection the server kept open.
    let log = server.log();
    let t0 = *first.get().unwrap();
    let (rejected, served): (Vec<_>, Vec<_>) =
        log.iter().partition(|s| s.at.duration_since(t0) < MS(300));
    assert_eq!(rejected.len(), 4);
    // Every user waits 500 ms after its own rejection, so nobody is back before the first
    // rejection plus 500 ms.
    let first_rejection = rejected.iter().map(|s| s.at).min().unwrap();
    let first_back = served.iter().map(|s| s.at).min().unwrap();
    let waited = first_back.duration_since(first_rejection);
    assert!(waited >= MS(500), "came back after {waited:?}");
    assert_eq!(server.connections(), 4);
    assert!(
        r.clients
            .iter()
            .all(|c| c.rejected == 1 && c.completed > 10),
        "{:?}",
        r.clients
    );

    // Without a backoff the users ask again at once: many rejections.
    let t1 = Instant::now();
    let server = TestServer::start(move |s| {
        if s.at.duration_since(t1) < MS(300) {
            Reply::status(503)
        } else {
            Reply::ok()
        }
    });
    let r = seda_load::run(closed(&server.url("/"), 4, MS(5), MS(600))).unwrap();
    assert!(r.summary.counts.rejected > 40, "{:?}", r.summary.counts);
}

#[test]
fn a_longer_retry_after_is_honoured_scaled() {
    // Every request is refused with `Retry-After: 10`; honoured at a scale of 0.05, each user
    // waits 500 ms (not the 20 ms backoff), so in 1.2 s each is refused at most three times.
    let server = TestServer::start(|_| Reply {
        headers: "Retry-After: 10\r\n".into(),
        ..Reply::status(503)
    });
    let mut cfg = closed(&server.url("/"), 4, Duration::ZERO, MS(1200));
    cfg.client.backoff_on_503 = Some(MS(20));
    cfg.client.retry_after_scale = Some(0.05);
    let r = seda_load::run(cfg.clone()).unwrap();
    let rejected = r.summary.counts.rejected;
    assert!((4..=12).contains(&rejected), "{rejected} rejections");
    // Without the scale the fixed 20 ms backoff holds: far more refusals.
    cfg.client.retry_after_scale = None;
    let r = seda_load::run(cfg).unwrap();
    assert!(r.summary.counts.rejected > 60, "{:?}", r.summary.counts);
}

#[test]
fn the_aimd_window_bounds_outstanding_requests() {
    let server = TestServer::start(|_| Reply::delayed(MS(20)));
    let mut cfg = closed(&server.url("/"), 16, Duration::ZERO, MS(500));
    cfg.client.aimd = Some(AimdWindowConfig {
        initial: 2.0,
        max: 3.0,
        ..Default::default()
    });
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    assert!(
        server.max_in_flight() <= 3,
        "max in flight {}",
        server.max_in_flight()
    );
    assert!(r.summary.counts.completed > 30);

    let server = TestServer::start(|_| Reply::delayed(MS(20)));
    seda_load::run(closed(&server.url("/"), 16, Duration::ZERO, MS(300))).unwrap();
    assert_eq!(server.max_in_flight(), 16);
}

#[test]
fn an_adaptive_throttle_sends_about_k_requests_per_accepted_one() {
    // The server serves at most one request per 10 ms (100/s) and refuses the rest with a
    // 503; the application tries 1000/s for 3 s. Throttled (K = 2, a 1 s window), the client
    // sends about twice what is accepted once the window has filled, and refuses the rest
    // itself: the server sees a fraction of the 3000 tries.
    let last = Mutex::new(None::<Instant>);
    let server = TestServer::start(move |_| {
        let mut last = last.lock().unwrap();
        let now = Instant::now();
        if last.is_none_or(|t| now - t >= MS(10)) {
            *last = Some(now);
            Reply::ok()
        } else {
            Reply::status(503)
        }
    });
    let mut cfg = open(&server.url("/"), 1000.0, Arrivals::Constant, MS(3000));
    cfg.client.throttle = Some(ThrottleConfig {
        k: 2.0,
        window: MS(1000),
    });
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    let reached = server.requests();
    assert!(
        c.refused > 1200,
        "refused {} of {}: {c:?}",
        c.refused,
        c.sent
    );
    assert!(reached < 1500, "the server saw {reached} of {}", c.sent);
    // Served ones keep flowing, and the server sees about K per served request (the first
    // window's misses included).
    assert!(c.completed > 100, "{c:?}");
    let per_served = reached as f64 / c.completed as f64;
    assert!(per_served < 3.0, "{per_served:.2} sent per served: {c:?}");
}

#[test]
fn retries_storm_a_refusing_server_unless_a_budget_bounds_them() {
    // A server that refuses every request; 200 requests a second for 1 s, each retried up
    // to 3 times at once. Without a budget the server sees 4 sends per request; with a 10%
    // budget (and its allowance of 1 retry a second over 10 s) about 1.1 per request.
    let run = |budget: Option<RetryBudgetConfig>| {
        let server = TestServer::start(|_| Reply::status(503));
        let mut cfg = open(&server.url("/"), 200.0, Arrivals::Constant, MS(1000));
        cfg.client.retries = 3;
        cfg.client.retry_budget = budget;
        let r = seda_load::run(cfg).unwrap();
        assert_counts_add_up(&r);
        (r.summary, server.requests())
    };
    let (storm, reached) = run(None);
    let c = storm.counts;
    // Each request counts once, refused after its last attempt.
    assert_eq!(c.rejected, c.sent, "{storm:?}");
    assert_eq!((storm.retries, storm.retries_denied), (3 * c.sent, 0));
    assert_eq!(reached, 4 * c.sent, "every attempt reaches the server");
    let (budgeted, reached) = run(Some(RetryBudgetConfig::default()));
    let c = budgeted.counts;
    let allowance = 10;
    assert!(
        budgeted.retries <= c.sent / 10 + allowance,
        "retries {} for {} requests",
        budgeted.retries,
        c.sent
    );
    assert!(budgeted.retries >= c.sent / 10, "{budgeted:?}");
    // A denied retry ends its request: each request was denied once or used all 3 retries.
    assert!(budgeted.retries_denied <= c.sent, "{budgeted:?}");
    assert!(
        budgeted.retries_denied + budgeted.retries / 3 >= c.sent,
        "{budgeted:?}"
    );
    assert_eq!(reached, c.sent + budgeted.retries);
}

#[test]
fn a_throttled_user_without_think_time_pauses_after_its_own_refusal() {
    // 10 closed users with no think time and no back-off, throttled, against a server that
    // refuses everything for 1 s. A user refused by its own throttle waits the error pause
    // (100 ms) instead of trying again at once: at most about 10 users x 10 pauses of
    // refusals, where a spinning user would refuse itself millions of times.
    let server = TestServer::start(|_| Reply::status(503));
    let mut cfg = closed(&server.url("/"), 10, Duration::ZERO, MS(1000));
    cfg.client.throttle = Some(ThrottleConfig {
        k: 2.0,
        window: MS(1000),
    });
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    assert!(c.refused > 0, "the throttle refused: {c:?}");
    assert!(
        c.refused <= 150,
        "users paused after refusing themselves: {c:?}"
    );
}

#[test]
fn a_full_aimd_window_refuses_open_arrivals_at_once() {
    // 500/s against a server that takes 20 ms and a window of at most 3: at most 150/s fit,
    // the rest must be refused by the client without reaching the server or waiting.
    let server = TestServer::start(|_| Reply::delayed(MS(20)));
    let mut cfg = open(&server.url("/"), 500.0, Arrivals::Constant, MS(600));
    cfg.client.aimd = Some(AimdWindowConfig {
        initial: 3.0,
        max: 3.0,
        ..Default::default()
    });
    cfg.client.aimd_reject_when_full = true;
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    assert!(
        server.max_in_flight() <= 3,
        "max in flight {}",
        server.max_in_flight()
    );
    assert!(c.refused > 100, "{c:?}");
    assert_eq!(c.refused, c.rejected, "no 503 came from the server: {c:?}");
    assert_eq!(c.timeouts, 0, "a refused request does not wait: {c:?}");
    assert!(r.summary.latency.max_ms < 200.0, "{:?}", r.summary.latency);
    assert!(
        r.series.iter().all(|i| i.aimd_window == Some(3.0)),
        "{:?}",
        r.series
    );

    // The closed model waits for a slot instead; refusing is an error there.
    let mut cfg = closed(&server.url("/"), 4, Duration::ZERO, MS(100));
    cfg.client.aimd = Some(AimdWindowConfig::default());
    cfg.client.aimd_reject_when_full = true;
    assert!(seda_load::run(cfg).is_err());
}

#[test]
fn deadlines_garbage_and_refused_connections_are_counted_not_fatal() {
    // Deadline: the server takes 2 s, the deadline is 150 ms.
    let slow = TestServer::start(|_| Reply::delayed(MS(2000)));
    let mut cfg = closed(&slow.url("/"), 2, Duration::ZERO, MS(700));
    cfg.client.deadline = MS(150);
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    assert!(r.summary.counts.timeouts >= 6, "{:?}", r.summary.counts);
    assert_eq!(r.summary.counts.completed, 0);

    // Garbage replies: protocol errors.
    let junk = TestServer::start(|_| Reply {
        garbage: true,
        ..Reply::ok()
    });
    let r = seda_load::run(closed(&junk.url("/"), 2, Duration::ZERO, MS(300))).unwrap();
    assert_counts_add_up(&r);
    assert!(r.summary.counts.errors >= 2);
    assert_eq!(
        r.summary.error_kinds.get("protocol").copied(),
        Some(r.summary.counts.errors)
    );

    // Nobody listening: connect errors, paced by the error pause (100 ms), not a tight loop.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = seda_load::run(closed(
        &format!("http://127.0.0.1:{port}/"),
        2,
        Duration::ZERO,
        MS(500),
    ))
    .unwrap();
    let e = r.summary.counts.errors;
    assert!((4..=12).contains(&e), "{e} connect errors");
    assert_eq!(r.summary.error_kinds.get("connect").copied(), Some(e));
}

#[test]
fn a_keep_alive_connection_closed_by_the_server_is_retried_once() {
    let server = TestServer::start(|_| Reply {
        silent_close: true,
        ..Reply::ok()
    });
    let r = seda_load::run(closed(&server.url("/"), 2, MS(5), MS(400))).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    assert_eq!(c.errors, 0, "{:?}", r.summary.error_kinds);
    assert!(c.completed > 20, "{c:?}");
    // One connection per request: every reuse found the connection closed and retried (a user
    // may have just connected when the run ended).
    let (conns, reqs) = (server.connections(), server.requests());
    assert!(
        reqs <= conns && conns <= reqs + 2,
        "{conns} connections, {reqs} requests"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let e = seda_load::Target::parse("ftp://x/")
        .unwrap_err()
        .to_string();
    assert!(e.contains("http://"), "{e}");
    let e = seda_load::Schedule::parse("10s=1,5s=2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("increasing"), "{e}");
    let mut cfg = closed("http://127.0.0.1:9/", 1, Duration::ZERO, Duration::ZERO);
    assert!(seda_load::run(cfg.clone()).is_err());
    cfg.duration = MS(10);
    cfg.cpu = Some(100_000);
    assert!(seda_load::run(cfg).unwrap_err().to_string().contains("CPU"));
}
