//! One point of the sweep: a fresh server, an open load at a multiple of capacity, and what
//! came back within the timeout.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use seda_control::AimdWindowConfig;
use seda_load::workload::{Reply, Request, Session, Workload};
use seda_load::{Arrivals, ClientConfig, LoadConfig, Model, Open, Report, Target};
use seda_sim::summary::{RunSummary, fraction, per_s};
use seda_testbed::mail::workload::MailWorkload;
use serde_json::{Value, json};

use crate::Lab;
use crate::mail::{self, Control, MailServer, ServeOptions};
use crate::poll::{Sample, StatsPoller};
use crate::steady::ended;

use super::{THREADS, TIMEOUT, Variant};

/// Every request is a login: a password check in SQLite and a new session in the server's
/// memory, SSM's "write session state" in miniature. Logins need no cookie, so an open load
/// (whose requests see no replies) is a valid user; accounts are taken in turn.
pub(super) struct Logins(MailWorkload);

struct LoginSession {
    accounts: MailWorkload,
    next: u64,
}

impl Workload for Logins {
    fn classes(&self) -> Vec<String> {
        self.0.classes()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(LoginSession {
            accounts: self.0.clone(),
            next: seed,
        })
    }
}

impl Session for LoginSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        self.next = self.next.wrapping_add(1);
        // A fresh user's first request is its login.
        self.accounts.session(self.next).next_request(None)
    }
}

fn logins() -> Arc<Logins> {
    Arc::new(Logins(MailWorkload::new(mail::CORPUS_USERS)))
}

/// The server for `v`.
fn serve_options(v: &Variant) -> ServeOptions {
    ServeOptions {
        threads: Some(THREADS),
        deadline_ms: v.deadline.then(|| TIMEOUT.as_millis() as u64),
        serve_abandoned: !v.cancel,
        ..ServeOptions::default()
    }
}

/// Logins per second the service completes by design: the emulated processor's cores over a
/// login's stated cost (`seda_mail::cost`).
pub(super) fn capacity() -> f64 {
    let login = seda_mail::cost::CostTable::arashi().mean_cost(seda_mail::RequestKind::Login);
    mail::CORES / login.as_secs_f64()
}

/// What one point measured.
#[derive(Debug)]
pub(super) struct Point {
    /// The variant's name.
    pub variant: &'static str,
    /// Offered load as a multiple of capacity.
    pub load_x: f64,
    /// Figures, with the simulator's.
    pub summary: RunSummary,
    /// The share of stats samples that found requests waiting in the login stage's queue.
    pub login_queue_nonempty: Option<f64>,
    /// Goodput in each 1 s interval: `(t_s, per_s)`.
    pub goodput: Vec<(f64, f64)>,
    /// The client's AIMD window at the end of each interval (empty without one).
    pub window: Vec<(f64, f64)>,
    /// The load generator's per-interval series.
    pub series: Value,
}

/// Runs `variant` at `load_x` times the designed capacity, `capacity` logins/s, on a fresh
/// server.
pub(super) fn run(lab: &Lab, v: &Variant, load_x: f64, capacity: f64) -> Result<Point> {
    let name = format!("{}-{load_x}x", v.file_stem());
    let server = MailServer::start_with(lab, &name, &Control::None, &serve_options(v))?;
    let rate = load_x * capacity;
    // Room for every request the timeout allows to be outstanding at once, and then some:
    // the client, not a connection limit, must be what bounds the load.
    let connections = ((rate * TIMEOUT.as_secs_f64() * 2.0) as usize + 64).min(10_000);
    let result = (|| {
        let target = Target::parse(&format!("http://{}/", server.addr))?;
        let model = Model::Open(Open {
            rate_per_s: rate,
            arrivals: Arrivals::Poisson,
            max_connections: connections,
            max_backlog: 100_000,
        });
        let mut cfg = LoadConfig::new(target, model)?;
        cfg.workload = logins();
        cfg.duration = lab.pick(Duration::from_secs(4), Duration::from_secs(10));
        cfg.warmup = lab.pick(Duration::from_millis(1500), Duration::from_secs(5));
        cfg.goodput_target = TIMEOUT;
        cfg.client = ClientConfig {
            deadline: TIMEOUT,
            connect_timeout: TIMEOUT,
            aimd: v.window.then(|| AimdWindowConfig {
                timeout: TIMEOUT,
                ..AimdWindowConfig::default()
            }),
            aimd_reject_when_full: v.window,
            ..ClientConfig::default()
        };
        lab.log(format!(
            "{}: {load_x} x capacity = {rate:.0} logins/s",
            v.name
        ));
        let poller = StatsPoller::start(server.admin, Duration::from_secs(1));
        let ran = mail::load_with_work(lab, &server, cfg);
        Ok::<_, anyhow::Error>((ran, poller.stop()))
    })();
    server.stop(lab, &name);
    let (ran, samples) = result?;
    let (report, work) = ran?;
    Ok(measure(v, load_x, capacity, &report, &samples, &work))
}

fn measure(
    v: &Variant,
    load_x: f64,
    capacity: f64,
    r: &Report,
    samples: &[Sample],
    work: &mail::Work,
) -> Point {
    let s = &r.summary;
    let c = &s.counts;
    let secs = s.duration_s.max(1e-9);
    let pick = |f: &dyn Fn(&seda_load::record::IntervalStats) -> Option<f64>| {
        r.series
            .iter()
            .filter_map(|i| f(i).map(|y| (i.t_s, y)))
            .collect::<Vec<_>>()
    };
    let window = pick(&|i| i.aimd_window);
    let mean_window =
        (!window.is_empty()).then(|| window.iter().map(|p| p.1).sum::<f64>() / window.len() as f64);
    let server = server_totals(samples);
    let ended = ended(c);
    let login_queue_nonempty = queue_nonempty(samples);
    let mut summary = RunSummary {
        controller: Some(v.name.to_string()),
        load_x_capacity: Some(load_x),
        offered_per_s: Some(per_s(c.sent + s.dropped, secs)),
        rejected_fraction: fraction(c.rejected, ended),
        timed_out_per_s: Some(per_s(c.timeouts, secs)),
        timeout_fraction: Some(fraction(c.timeouts, ended)),
        error_fraction: Some(fraction(c.errors, ended)),
        p50_completed_s: Some(s.latency.p50_ms / 1000.0),
        p90_completed_s: Some(s.latency.p90_ms / 1000.0),
        ..RunSummary::new(TIMEOUT.as_secs_f64())
    };
    summary.rates(c.good, c.completed, secs, capacity);
    let summary = summary
        .with("refused_by_client_fraction", fraction(c.refused, ended))
        .with("late_completed_per_s", per_s(c.completed - c.good, secs))
        .with("mean_window", mean_window)
        .with("dropped_by_client", s.dropped)
        .with("login_queue_nonempty_fraction", login_queue_nonempty)
        .with("server", server)
        .with(
            "server_real_cpu_share",
            work.server_cpu_s.zip(work.window_s).map(|(c, w)| c / w),
        );
    Point {
        variant: v.name,
        load_x,
        summary,
        login_queue_nonempty,
        goodput: pick(&|i| Some(i.goodput_per_s)),
        window,
        series: serde_json::to_value(&r.series).unwrap_or(Value::Null),
    }
}

const LOGIN_STAGE: &str = "mail.login";

/// The fraction of stats samples (one a second, warm-up included) that found requests waiting
/// in the login stage's queue: near 1, the server never ran out of work.
fn queue_nonempty(samples: &[Sample]) -> Option<f64> {
    let lens: Vec<u64> = samples
        .iter()
        .filter_map(|s| Some(s.stage(LOGIN_STAGE)?.queue_len as u64))
        .collect();
    (!lens.is_empty()).then(|| lens.iter().filter(|&&n| n > 0).count() as f64 / lens.len() as f64)
}

/// The login stage's and the front end's totals in the last stats sample (taken up to a
/// second before the end, warm-up included): what the server spent its time on.
fn server_totals(samples: &[Sample]) -> Value {
    let Some(last) = samples.last() else {
        return Value::Null;
    };
    let login = last.stage(LOGIN_STAGE).map(|s| &s.totals.counters);
    let front_end = last.stats.frontend.as_ref();
    json!({
        "at_s": last.t_s,
        "login_completed": login.map(|c| c.completed),
        "login_dropped_expired_or_cancelled": login.and_then(|c| c.dropped.get("expired")),
        "front_end_requests": front_end.map(|f| f.requests),
        "front_end_cancelled": front_end.map(|f| f.cancelled_requests),
    })
}
