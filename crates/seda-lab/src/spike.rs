//! A load spike against the e-mail service, and its figures under the simulator's key names:
//! shared by `mail-spike`, `controllers` and `seda demo`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use seda_load::{Report, Schedule};
use serde_json::{Value, json};

use crate::lab::Lab;
use crate::mail::{self, Control, MailServer};
use crate::poll::{Sample, StatsPoller, controller_series};

/// The shape of the spike.
#[derive(Debug, Clone, Copy)]
pub struct Spike {
    /// Users before and after the spike (002: 3).
    pub base_users: usize,
    /// Users during the spike (002: 1000; here calibrated to the machine).
    pub spike_users: usize,
    /// Seconds of base load before the spike.
    pub before_s: f64,
    /// Seconds the spike lasts.
    pub spike_s: f64,
    /// Seconds of base load after it.
    pub after_s: f64,
    /// The p90 response-time target.
    pub target_s: f64,
    /// Multiplies 002's think time and wait after a rejection (1: the paper's).
    pub time_scale: f64,
}

impl Spike {
    /// When the spike starts, in seconds from the start of the run.
    pub fn onset_s(&self) -> f64 {
        self.before_s
    }

    /// When it ends.
    pub fn end_s(&self) -> f64 {
        self.before_s + self.spike_s
    }

    /// The users over time: base, the spike at its onset, base again at its end.
    pub fn schedule(&self) -> Result<Schedule> {
        Ok(Schedule::parse(&format!(
            "0s={},{}s={},{}s={}",
            self.base_users,
            self.onset_s(),
            self.spike_users,
            self.end_s(),
            self.base_users
        ))?)
    }

    /// As JSON for `result.json`.
    pub fn describe(&self) -> Value {
        json!({
            "base_users": self.base_users,
            "spike_users": self.spike_users,
            "before_s": self.before_s,
            "spike_s": self.spike_s,
            "after_s": self.after_s,
            "target_s": self.target_s,
            "time_scale": self.time_scale,
            "think_s": mail::THINK.as_secs_f64() * self.time_scale,
            "reject_wait_s": mail::REJECT_WAIT.as_secs_f64() * self.time_scale,
        })
    }
}

/// What one spike run measured.
#[derive(Debug)]
pub struct SpikeRun {
    /// Headline figures (the simulator's key names).
    pub summary: Value,
    /// p90 of requests completed in each 1 s interval: `(t_s, seconds)`.
    pub p90: Vec<(f64, f64)>,
    /// Rejected fraction of the requests that ended in each interval.
    pub rejected: Vec<(f64, f64)>,
    /// The admission rate of the `mail.list_folders` stage's controller, if it has one
    /// (002 Figure 7 shows that stage): the token bucket's rate, or for our controller the
    /// departure rate it sizes its queue by.
    pub rate: Vec<(f64, f64)>,
    /// The per-interval series as the load generator recorded it.
    pub series: Value,
}

/// Puts a proxy in front of the server at the given address; returns where clients connect
/// and the proxy's process.
pub type Front = dyn Fn(&Lab, SocketAddr) -> Result<(SocketAddr, crate::Child)>;

/// The stage whose controller 002's Figure 7 plots.
pub const FIGURE_7_STAGE: &str = "mail.list_folders";

/// Starts the service with `control` (behind `front` if given: a function that puts a proxy
/// in front of the server and returns the address to load), runs `spike` against it, and
/// measures.
pub fn run(
    lab: &Lab,
    name: &str,
    control: &Control,
    spike: &Spike,
    capacity: f64,
    front: Option<&Front>,
) -> Result<SpikeRun> {
    let server = MailServer::start(lab, name, control)?;
    let (addr, proxy) = match front {
        Some(f) => {
            let (a, c) = f(lab, server.addr)?;
            (a, Some(c))
        }
        None => (server.addr, None),
    };
    let total = spike.before_s + spike.spike_s + spike.after_s;
    let mut cfg = mail::users(
        addr,
        spike.base_users,
        Duration::from_secs_f64(total),
        spike.time_scale,
    )?;
    cfg.schedule = Some(spike.schedule()?);
    cfg.goodput_target = Duration::from_secs_f64(spike.target_s);
    lab.log(format!(
        "{name}: {} users, {} during {:.0} s from {:.0} s",
        spike.base_users,
        spike.spike_users,
        spike.spike_s,
        spike.onset_s()
    ));
    let poller = StatsPoller::start(server.admin, Duration::from_secs(1));
    let report = lab.load(cfg);
    let samples = poller.stop();
    drop(proxy);
    server.stop(lab, name);
    let report = report?;
    Ok(measure(&report, &samples, spike, capacity, control))
}

/// The simulator's definition: the time from the onset until every 1 s interval's p90 stays at
/// or below 1.2 x target up to the end of the spike (the end of the last interval over it).
pub fn settle_time(report: &Report, spike: &Spike) -> f64 {
    let limit_ms = 1.2 * spike.target_s * 1000.0;
    let mut settle = 0.0;
    for i in &report.series {
        let end = i.t_s + i.duration_s;
        if i.t_s >= spike.onset_s() - 1e-6
            && end <= spike.end_s() + 1e-6
            && i.counts.completed > 0
            && i.latency.p90_ms > limit_ms
        {
            settle = end - spike.onset_s();
        }
    }
    settle
}

/// The fraction of users who got neither a page nor a rejection in the whole run: left
/// waiting on a connection (002: "over 561 of the 1000 clients experienced connection timeout
/// errors" with a connection limit).
fn unanswered_clients(report: &Report) -> f64 {
    let n = report.clients.len().max(1) as f64;
    let silent = report
        .clients
        .iter()
        .filter(|c| c.completed == 0 && c.rejected == 0)
        .count();
    silent as f64 / n
}

fn measure(
    report: &Report,
    samples: &[Sample],
    spike: &Spike,
    capacity: f64,
    control: &Control,
) -> SpikeRun {
    let (on, end) = (spike.onset_s(), spike.end_s());
    let during: Vec<_> = report
        .series
        .iter()
        .filter(|i| i.t_s >= on - 1e-6 && i.t_s < end - 1e-6)
        .collect();
    let sum = |f: &dyn Fn(&seda_load::record::Counts) -> u64| -> u64 {
        during.iter().map(|i| f(&i.counts)).sum()
    };
    let (completed, good) = (sum(&|c| c.completed), sum(&|c| c.good));
    let (rejected, timeouts, errors) = (
        sum(&|c| c.rejected),
        sum(&|c| c.timeouts),
        sum(&|c| c.errors),
    );
    let ended = (completed + rejected + timeouts + errors).max(1) as f64;
    let settle = settle_time(report, spike);
    let settled = settle < spike.spike_s - 1.0;
    let after = report.latency_between((on + settle).min(end - 1.0), end);
    let all = report.latency_between(on, end);
    let secs = spike.spike_s;
    let goodput = good as f64 / secs;
    let opt = |x: Option<f64>| x.map_or(Value::Null, |v| json!(v));
    let summary = json!({
        "control": control.describe(),
        "target_s": spike.target_s,
        "capacity_per_s": capacity,
        "p90_admitted_s": opt(all.map(|l| l.p90_ms / 1000.0)),
        "p90_admitted_after_settle_s": opt(after.map(|l| l.p90_ms / 1000.0)),
        "max_admitted_s": opt(all.map(|l| l.max_ms / 1000.0)),
        "settle_time_s": settle,
        "settled": settled,
        "goodput_per_s": goodput,
        "goodput_fraction_of_capacity": goodput / capacity,
        "throughput_per_s": completed as f64 / secs,
        "rejected_fraction": rejected as f64 / ended,
        "timeout_fraction": timeouts as f64 / ended,
        "error_fraction": errors as f64 / ended,
        "timeouts": timeouts,
        "errors": errors,
        "error_kinds": report.summary.error_kinds,
        "unanswered_clients_fraction": unanswered_clients(report),
        "jain_completed": report.summary.jain_completed,
    });
    let pick = |f: &dyn Fn(&seda_load::record::IntervalStats) -> Option<f64>| {
        report
            .series
            .iter()
            .filter_map(|i| f(i).map(|v| (i.t_s, v)))
            .collect::<Vec<_>>()
    };
    let p90 = pick(&|i| (i.counts.completed > 0).then_some(i.latency.p90_ms / 1000.0));
    let rejected_series = pick(&|i| {
        let c = &i.counts;
        let n = c.completed + c.rejected + c.timeouts + c.errors;
        (n > 0).then(|| c.rejected as f64 / n as f64)
    });
    // 002's controller drives a token bucket (`rate_per_s`); ours limits the queue and
    // reports the departure rate it admits against (`departures_per_s`).
    let mut rate = controller_series(samples, FIGURE_7_STAGE, "rate_per_s");
    if rate.is_empty() {
        rate = controller_series(samples, FIGURE_7_STAGE, "departures_per_s");
    }
    let series = serde_json::to_value(&report.series).unwrap_or(Value::Null);
    SpikeRun {
        summary,
        p90,
        rejected: rejected_series,
        rate,
        series,
    }
}
