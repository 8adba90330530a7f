//! A steady population of e-mail users against the service, and its figures as a
//! [`RunSummary`]: shared by `mail-users`, `per-stage` and `classes`.

use std::time::Duration;

use anyhow::Result;
use seda_load::{LoadConfig, Report};
use seda_sim::summary::{RunSummary, fraction, settle_time};
use serde::Serialize;

use crate::lab::Lab;
use crate::mail::{self, Control};
use crate::vocabulary::windows;

/// One steady load.
#[derive(Debug, Clone, Copy)]
pub struct Steady {
    /// Closed-loop users.
    pub users: usize,
    /// Seconds of load before measuring (WC03: "an initial warm-up period of about 20 seconds").
    pub warmup_s: f64,
    /// Measured seconds.
    pub duration_s: f64,
    /// The p90 response-time target.
    pub target_s: f64,
    /// Multiplies WC03's think time and wait after a rejection (1: the paper's).
    pub time_scale: f64,
    /// Users wait as long as a 503's `Retry-After` asks where it asks for longer than WC03's
    /// wait; `false`: WC03's fixed wait only, as the paper's users did.
    pub honour_retry_after: bool,
}

impl Steady {
    /// The load generator's configuration against the server at `addr`: measured after the
    /// warm-up, goodput counted within the target.
    pub fn config(&self, addr: std::net::SocketAddr) -> Result<LoadConfig> {
        let mut cfg = mail::users(
            addr,
            self.users,
            Duration::from_secs_f64(self.duration_s),
            self.time_scale,
        )?;
        cfg.warmup = Duration::from_secs_f64(self.warmup_s);
        cfg.goodput_target = Duration::from_secs_f64(self.target_s);
        if !self.honour_retry_after {
            cfg.client.retry_after_scale = None;
        }
        Ok(cfg)
    }
}

/// One request type's figures (WC03 Figures 9 and 11).
#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    /// `login`, `list_folders`...
    pub name: String,
    /// Requests that ended (completed, rejected, timed out or failed).
    pub ended: u64,
    /// Of those, the ones admitted and completed.
    pub completed: u64,
    /// 90th percentile of the admitted (completed) ones, seconds.
    pub p90_s: Option<f64>,
    /// Fraction rejected (503).
    pub rejected_fraction: Option<f64>,
}

/// What one steady run measured.
#[derive(Debug)]
pub struct SteadyRun {
    /// Headline figures.
    pub summary: RunSummary,
    /// Per request type.
    pub types: Vec<TypeRow>,
    /// Rejected fraction of the requests that ended in each 1 s interval: `(t_s, fraction)`.
    pub rejected: Vec<(f64, f64)>,
}

/// Runs `steady` against the server at `addr` from the load core and measures it.
pub fn run(
    lab: &Lab,
    addr: std::net::SocketAddr,
    control: &Control,
    steady: &Steady,
    capacity: f64,
) -> Result<SteadyRun> {
    let report = lab.load(steady.config(addr)?)?;
    Ok(measure(&report, steady, capacity, control))
}

/// Like [`run`] against the lab's mail `server`, with goodput compared with `capacity` on the
/// mix of requests the run completed within the target, each type priced at its handler CPU
/// in this run ([`MailCapacity::on_mix`](crate::mail::MailCapacity::on_mix)).
pub fn run_priced(
    lab: &Lab,
    server: &mail::MailServer,
    control: &Control,
    steady: &Steady,
    capacity: &crate::mail::MailCapacity,
) -> Result<SteadyRun> {
    let (report, work) = mail::load_with_work(lab, server, steady.config(server.addr)?)?;
    let price = mail::RunPrice::new(capacity, &report, (0.0, f64::INFINITY), &work);
    let mut run = measure(&report, steady, price.capacity_per_s, control);
    run.summary = price.annotate(run.summary);
    Ok(run)
}

/// Adds `p90_after_settle_over_target`, the p90 after settling in units of the summary's
/// target. Scenarios scale their target with the calibrated capacity (`per-stage`'s and
/// `classes`' from 0.12 to 0.32 s from run to run), so this is the figure that repeats
/// (`classes`: 0.81-0.84 in five runs) and the one `seda lab repeat` compares.
pub fn add_p90_over_target(summary: &mut RunSummary) {
    let over = summary
        .p90_admitted_after_settle_s
        .map(|p| p / summary.target_s);
    summary.insert("p90_after_settle_over_target", over);
}

/// Requests that ended in `c`.
pub fn ended(c: &seda_load::record::Counts) -> u64 {
    c.completed + c.rejected + c.timeouts + c.errors
}

/// The per-interval rejected fraction, shifted by `offset_s` (intervals where nothing ended
/// are left out).
pub fn rejected_series(report: &Report, offset_s: f64) -> Vec<(f64, f64)> {
    report
        .series
        .iter()
        .filter(|i| ended(&i.counts) > 0)
        .map(|i| {
            (
                i.t_s + offset_s,
                i.counts.rejected as f64 / ended(&i.counts) as f64,
            )
        })
        .collect()
}

/// The rejected fraction of the requests that ended in intervals starting in `[from_s, to_s)`.
pub fn rejected_between(report: &Report, from_s: f64, to_s: f64) -> Option<f64> {
    let (mut rejected, mut all) = (0, 0);
    for i in &report.series {
        if i.t_s >= from_s - 1e-6 && i.t_s < to_s - 1e-6 {
            rejected += i.counts.rejected;
            all += ended(&i.counts);
        }
    }
    (all > 0).then(|| rejected as f64 / all as f64)
}

/// The figures of each request type over the measured run.
pub fn types(report: &Report) -> Vec<TypeRow> {
    report
        .classes
        .iter()
        .map(|k| {
            let n = ended(&k.counts);
            TypeRow {
                name: k.name.clone(),
                ended: n,
                completed: k.counts.completed,
                p90_s: (k.counts.completed > 0).then_some(k.latency.p90_ms / 1000.0),
                rejected_fraction: (n > 0).then(|| k.counts.rejected as f64 / n as f64),
            }
        })
        .collect()
}

/// The figures of a steady run.
pub fn measure(report: &Report, steady: &Steady, capacity: f64, control: &Control) -> SteadyRun {
    let s = &report.summary;
    let c = &s.counts;
    let secs = s.duration_s.max(1e-9);
    // From the start of the measured run (0 when the warm-up sufficed) to its end.
    let settle = settle_time(windows(report, 0.0), 0.0, f64::INFINITY, steady.target_s);
    let after = report.latency_between(settle.min(steady.duration_s - 1.0), steady.duration_s);
    let completed = (c.completed > 0).then_some(s.latency);
    // Little's law on the closed loop: each user is waiting for a reply, thinking, or
    // waiting after a rejection, so users = X (R + think) + rejections/s x wait. Unlike the
    // percentile of completed requests, it counts requests still queued when the run ends,
    // which is where an uncontrolled service hides its slowest ones in a short run.
    let x = ended(c) as f64 / secs;
    let think_s = mail::THINK.as_secs_f64() * steady.time_scale;
    let wait_s = mail::REJECT_WAIT.as_secs_f64() * steady.time_scale;
    let littles = (x > 0.0).then(|| {
        ((steady.users as f64 - c.rejected as f64 / secs * wait_s) / x - think_s).max(0.0)
    });
    let mut summary = RunSummary::new(steady.target_s);
    summary.control = Some(control.describe());
    summary.users = Some(steady.users as u64);
    summary.p90_admitted_s = completed.map(|l| l.p90_ms / 1000.0);
    summary.max_admitted_s = completed.map(|l| l.max_ms / 1000.0);
    summary.mean_response_littles_s = littles;
    summary.settling(settle, steady.duration_s, after.map(|l| l.p90_ms / 1000.0));
    add_p90_over_target(&mut summary);
    summary.rates(c.good, c.completed, secs, capacity);
    summary.rejected_fraction = fraction(c.rejected, ended(c));
    summary.timeout_fraction = Some(fraction(c.timeouts, ended(c)));
    summary.error_fraction = Some(fraction(c.errors, ended(c)));
    summary.error_kinds = Some(s.error_kinds.clone());
    summary.jain_completed = s.jain_completed;
    SteadyRun {
        summary,
        types: types(report),
        rejected: rejected_series(report, 0.0),
    }
}
