//! Loop models, schedules, counts and fairness.

use std::sync::Arc;
use std::time::{Duration, Instant};

use seda_load::{Arrivals, LoadConfig, Model, PartlyOpen, Schedule, Target};

use crate::common::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn counts_add_up_with_rejections_errors_and_closes() {
    let server = TestServer::start(|s| match s.n {
        n if n % 5 == 0 => Reply::status(503),
        n if n % 7 == 0 => Reply::status(500),
        n if n % 11 == 0 => Reply {
            close: true,
            ..Reply::ok()
        },
        _ => Reply {
            body: 100 + (s.n % 50) as usize,
            ..Reply::ok()
        },
    });
    let r = seda_load::run(closed(&server.url("/x"), 8, MS(1), MS(800))).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    let received = server.requests();
    assert!(c.completed > 500, "too few: {c:?}");
    assert!(
        c.completed + c.rejected + c.errors <= received && received <= c.sent,
        "{received} {c:?}"
    );
    // 503 is a rejection, 500 an error; nothing else failed.
    assert_eq!(
        r.summary.statuses.get("503").copied().unwrap_or(0),
        c.rejected
    );
    assert_eq!(
        r.summary.statuses.get("500").copied().unwrap_or(0),
        c.errors
    );
    assert_eq!(c.timeouts, 0);
    let share = c.rejected as f64 / received as f64;
    assert!((0.17..0.23).contains(&share), "503 share {share}");
    // Connections closed by the server were reopened: more connections than users.
    assert!(
        server.connections() > 8 + received / 11 / 2,
        "{} connections",
        server.connections()
    );
}

#[test]
fn the_open_model_keeps_its_rate_when_the_server_is_slow() {
    let server = TestServer::start(|_| Reply::delayed(MS(200)));
    let t0 = Instant::now();
    let r = seda_load::run(open(
        &server.url("/slow"),
        400.0,
        Arrivals::Constant,
        MS(2000),
    ))
    .unwrap();
    assert_counts_add_up(&r);
    let s = &r.summary;
    // 400/s for 2 s is 800 arrivals, one every 2.5 ms, whatever the 200 ms service time.
    assert!(
        (797..=800).contains(&s.counts.sent),
        "sent {}",
        s.counts.sent
    );
    assert_eq!(s.dropped, 0);
    let log = server.log();
    let second_half = log
        .iter()
        .filter(|x| x.at.duration_since(t0) >= MS(1000))
        .count();
    assert!(
        (380..=420).contains(&second_half),
        "server saw {second_half} in the second second"
    );
    // Latency is the service time, not more.
    assert!(
        s.latency.p50_ms >= 200.0 && s.latency.p50_ms < 300.0,
        "{:?}",
        s.latency
    );
    // The same slow server throttles a closed loop of 4 users to 4 / 0.2 s = 20 req/s.
    let c = seda_load::run(closed(&server.url("/slow"), 4, Duration::ZERO, MS(1000))).unwrap();
    assert!(
        c.summary.counts.sent <= 24,
        "closed sent {}",
        c.summary.counts.sent
    );
}

#[test]
fn poisson_arrivals_average_the_rate() {
    let server = TestServer::start(|_| Reply::ok());
    let r = seda_load::run(open(&server.url("/"), 2000.0, Arrivals::Poisson, MS(1000))).unwrap();
    assert_counts_add_up(&r);
    // Arrivals: sent, or due and not sent by the end (on a busy machine).
    let arrivals = (r.summary.counts.sent + r.summary.dropped) as f64;
    // Poisson: sd = sqrt(2000) = 45; 8% is 3.5 sd.
    assert!((1840.0..=2160.0).contains(&arrivals), "{arrivals} arrivals");
}

#[test]
fn the_schedule_changes_the_open_rate_at_the_right_times() {
    let server = TestServer::start(|_| Reply::ok());
    let count = |log: &[Seen], t0: Instant, from: u64, to: u64| {
        log.iter()
            .filter(|s| (MS(from)..MS(to)).contains(&s.at.duration_since(t0)))
            .count()
    };
    // Poisson: a spike from 0.1/s to 1000/s at 0.5 s starts at once (no 10 s gap drawn at the
    // old rate carried over), and stops at 1 s.
    let mut cfg = open(&server.url("/"), 1.0, Arrivals::Poisson, MS(1500));
    cfg.schedule = Some(Schedule::parse("0s=0.1,0.5s=1000,1s=0").unwrap());
    let t0 = Instant::now();
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let log = server.log();
    let spike = count(&log, t0, 500, 1020);
    assert!(
        (400..=600).contains(&spike),
        "{spike} arrivals in the spike"
    );
    assert!(count(&log, t0, 1050, 1500) == 0, "arrivals after the spike");
    // Constant arrivals ramping from 0 to 1000/s over 1 s: about 500 in that second.
    let mut cfg = open(&server.url("/"), 1.0, Arrivals::Constant, MS(1000));
    cfg.schedule = Some(Schedule::parse("0s=0,1s~1000").unwrap());
    let r = seda_load::run(cfg).unwrap();
    let sent = r.summary.counts.sent;
    assert!((420..=540).contains(&sent), "{sent} arrivals on the ramp");
}

#[test]
fn the_schedule_changes_users_at_the_right_times() {
    let server = TestServer::start(|_| Reply::ok());
    let mut cfg = closed(&server.url("/"), 1, MS(5), MS(3000));
    cfg.schedule = Some(Schedule::parse("0s=2, 1s=6, 2s=1").unwrap());
    // Interval ends (0.3, 0.6, ...) never coincide with a step, so the order is not a race.
    cfg.interval = MS(300);
    let t0 = Instant::now();
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    // Seen from the server: one keep-alive connection per user.
    let log = server.log();
    assert_eq!(connections_between(&log, t0, 0.2, 0.9), 2);
    assert_eq!(connections_between(&log, t0, 1.2, 1.9), 6);
    assert_eq!(connections_between(&log, t0, 2.2, 2.9), 1);
    // And in the series (level and active users at the end of each interval).
    let levels: Vec<(f64, usize)> = r.series.iter().map(|i| (i.level, i.active)).collect();
    let want: Vec<(f64, usize)> = [2, 2, 2, 6, 6, 6, 1, 1, 1, 1]
        .iter()
        .map(|&n| (n as f64, n))
        .collect();
    assert_eq!(levels, want);
}

#[test]
fn the_closed_ramp_starts_users_gradually() {
    let server = TestServer::start(|_| Reply::ok());
    let mut cfg = closed(&server.url("/"), 10, MS(5), MS(1500));
    if let seda_load::Model::Closed(c) = &mut cfg.model {
        c.ramp = MS(1000);
    }
    let t0 = Instant::now();
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let log = server.log();
    // 0 to 10 users over 1 s: about 2 users by 0.2 s, 5 by 0.5 s, all 10 after 1 s.
    let early = connections_between(&log, t0, 0.0, 0.2);
    let middle = connections_between(&log, t0, 0.0, 0.5);
    let late = connections_between(&log, t0, 1.1, 1.5);
    assert!((1..=3).contains(&early), "{early} users by 0.2 s");
    assert!((4..=6).contains(&middle), "{middle} users by 0.5 s");
    assert_eq!(late, 10);
}

#[test]
fn the_warm_up_is_not_recorded() {
    let server = TestServer::start(|_| Reply::ok());
    let mut cfg = closed(&server.url("/"), 2, MS(5), MS(500));
    cfg.warmup = MS(300);
    cfg.interval = MS(100);
    let t0 = Instant::now();
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let log = server.log();
    let warm = log
        .iter()
        .filter(|s| s.at.duration_since(t0) < MS(300))
        .count() as i64;
    let sent = r.summary.counts.sent as i64;
    assert!(warm > 20, "{warm} requests in the warm-up");
    assert!(
        (sent + warm - log.len() as i64).abs() <= 10,
        "sent {sent} + warm {warm} vs {}",
        log.len()
    );
    assert!(
        (r.summary.duration_s - 0.5).abs() < 0.05,
        "{}",
        r.summary.duration_s
    );
    assert_eq!(r.series.len(), 5);
}

#[test]
fn requests_per_connection_is_honoured() {
    let server = TestServer::start(|_| Reply::ok());
    let mut cfg = closed(&server.url("/"), 2, MS(2), MS(500));
    cfg.client.requests_per_connection = 5;
    let r = seda_load::run(cfg).unwrap();
    let n = server.requests();
    let conns = server.connections();
    assert!(n > 50, "{n}");
    // Each user closes after 5; the last connection of each may be partly used.
    assert!(
        conns * 5 >= n && conns <= n / 5 + 2,
        "{conns} connections for {n} requests"
    );
    assert_eq!(r.summary.counts.errors, 0);
}

#[test]
fn partly_open_sessions_stay_with_probability_p() {
    let server = TestServer::start(|_| Reply::ok());
    let model = Model::PartlyOpen(PartlyOpen {
        sessions_per_s: 100.0,
        stay_probability: 0.75,
        think: MS(2),
        max_sessions: 1000,
    });
    let mut cfg = LoadConfig::new(Target::parse(&server.url("/")).unwrap(), model).unwrap();
    cfg.duration = MS(2000);
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    // Each session is one connection; 1/(1-p) = 4 requests per session on average.
    let sessions = server.connections() as f64;
    let per_session = server.requests() as f64 / sessions;
    assert!((150.0..=250.0).contains(&sessions), "{sessions} sessions");
    assert!(
        (3.0..=5.0).contains(&per_session),
        "{per_session} requests per session"
    );
}

#[test]
fn jain_index_over_clients_of_a_fair_and_an_unfair_server() {
    let fair = TestServer::start(|_| Reply::delayed(MS(1)));
    let r = seda_load::run(closed(&fair.url("/"), 4, Duration::ZERO, MS(500))).unwrap();
    let j = r.summary.jain_completed.unwrap();
    assert!(j > 0.95, "fair server, Jain {j}");
    // The first connection is served at once, the others in 20 ms.
    let unfair = TestServer::start(|s| Reply::delayed(if s.conn == 0 { MS(0) } else { MS(20) }));
    let r = seda_load::run(closed(&unfair.url("/"), 4, Duration::ZERO, MS(500))).unwrap();
    let j = r.summary.jain_completed.unwrap();
    assert!(j < 0.5, "unfair server, Jain {j}: {:?}", r.clients);
    // The same index computed from what the server saw per connection (one per user).
    let mut per_conn = [0.0f64; 4];
    for s in unfair.log() {
        per_conn[s.conn as usize] += 1.0;
    }
    let server_j = seda_load::jain_index(&per_conn).unwrap();
    assert!(
        (j - server_j).abs() < 0.02,
        "client {j} vs server {server_j}"
    );
}

#[test]
fn the_url_list_and_classes() {
    let server = TestServer::start(|s| {
        if s.path == "/b" {
            Reply::status(404)
        } else {
            Reply::ok()
        }
    });
    let mut cfg = closed(&server.url("/a"), 2, MS(1), MS(300));
    cfg.workload =
        Arc::new(seda_load::workload::UrlList::new(vec!["/a".into(), "/b".into()]).unwrap());
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let names: Vec<&str> = r.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["/a", "/b"]);
    let (a, b) = (r.classes[0].counts.completed, r.classes[1].counts.completed);
    assert!(
        a > 20 && b > 20 && (a as f64 / b as f64 - 1.0).abs() < 0.4,
        "{a} {b}"
    );
    assert_eq!(r.summary.statuses.get("404").copied(), Some(b));
}

fn eager(url: &str, users: usize, patience: Duration, think: Duration) -> LoadConfig {
    let model = Model::Eager(seda_load::Eager {
        users,
        patience_min: patience,
        patience_max: patience,
        think,
        max_outstanding: seda_load::Eager::DEFAULT_MAX_OUTSTANDING,
    });
    let mut c = LoadConfig::new(Target::parse(url).unwrap(), model).unwrap();
    c.duration = MS(1500);
    c.progress = false;
    c
}

#[test]
fn eager_users_send_again_when_the_reply_is_late() {
    // Replies take 400 ms; each user sends again after 100 ms without one.
    let server = TestServer::start(|_| Reply::delayed(MS(400)));
    let r = seda_load::run(eager(&server.url("/slow"), 4, MS(100), MS(0))).unwrap();
    assert_counts_add_up(&r);
    // Closed users would have one request each in flight and send 4 x 1.5 s / 0.4 s = 15.
    assert!(
        server.max_in_flight() > 4,
        "in flight {}",
        server.max_in_flight()
    );
    assert!(
        r.summary.counts.sent >= 30,
        "sent {}",
        r.summary.counts.sent
    );
    // ... but never more than max_outstanding each.
    assert!(server.max_in_flight() <= 4 * 8);
}

#[test]
fn eager_users_wait_for_a_timely_reply_and_think() {
    // Replies come at once; each user thinks 100 ms, well within its 1 s expected time.
    let server = TestServer::start(|_| Reply::ok());
    let r = seda_load::run(eager(&server.url("/fast"), 4, MS(1000), MS(100))).unwrap();
    assert_counts_add_up(&r);
    assert!(
        server.max_in_flight() <= 4,
        "in flight {}",
        server.max_in_flight()
    );
    // About 4 users x 1.5 s / 0.1 s = 60 requests, never more than one each per think time.
    let sent = r.summary.counts.sent;
    assert!((20..=64).contains(&sent), "sent {sent}");
}
