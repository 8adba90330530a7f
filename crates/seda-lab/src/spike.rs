//! A load spike against the e-mail service, and its figures as a [`RunSummary`]:
//! shared by `mail-spike`, `controllers` and `seda demo`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use seda_load::record::{Counts, IntervalStats};
use seda_load::{Report, Schedule};
use seda_sim::summary::{RunSummary, fraction, settle_time};
use serde_json::{Value, json};

use crate::lab::Lab;
use crate::mail::{self, Control, MailCapacity, MailServer, ServeOptions};
use crate::plot::{LineChart, Series};
use crate::poll::{Sample, StatsPoller, controller_series};
use crate::steady::ended;
use crate::vocabulary::windows;

/// The shape of the spike.
#[derive(Debug, Clone, Copy)]
pub struct Spike {
    /// Users before and after the spike (WC03: 3).
    pub base_users: usize,
    /// Users during the spike (WC03: 1000; here calibrated to the machine).
    pub spike_users: usize,
    /// Seconds of base load before the spike.
    pub before_s: f64,
    /// Seconds the spike lasts.
    pub spike_s: f64,
    /// Seconds of base load after it.
    pub after_s: f64,
    /// The p90 response-time target.
    pub target_s: f64,
    /// Multiplies WC03's think time and wait after a rejection (1: the paper's).
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
    /// Headline figures.
    pub summary: RunSummary,
    /// p90 of requests completed in each 1 s interval: `(t_s, seconds)`.
    pub p90: Vec<(f64, f64)>,
    /// Rejected fraction of the requests that ended in each interval.
    pub rejected: Vec<(f64, f64)>,
    /// The admission rate of the `mail.list_folders` stage's controller, if it has one
    /// (WC03 Figure 7 shows that stage): the token bucket's rate, or for our controller the
    /// departure rate it sizes its queue by.
    pub rate: Vec<(f64, f64)>,
    /// The per-interval series as the load generator recorded it.
    pub series: Value,
}

/// Puts a proxy in front of the server at the given address; returns where clients connect
/// and the proxy's process.
pub type Front = dyn Fn(&Lab, SocketAddr) -> Result<(SocketAddr, crate::Child)>;

/// The stage whose controller WC03's Figure 7 plots.
pub const FIGURE_7_STAGE: &str = "mail.list_folders";

/// Starts the service with `control` and `options` (behind `front` if given: a function that
/// puts a proxy in front of the server and returns the address to load), runs `spike` against it, and
/// measures; goodput is compared with `capacity` on the mix of requests the spike completed
/// within the target, each type priced at its handler CPU over the run
/// ([`MailCapacity::on_mix`]).
pub fn run(
    lab: &Lab,
    name: &str,
    control: &Control,
    spike: &Spike,
    capacity: &MailCapacity,
    front: Option<&Front>,
    options: &ServeOptions,
) -> Result<SpikeRun> {
    let server = MailServer::start_with(lab, name, control, options)?;
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
    let work = mail::Work::between(
        samples.first().map(|s| &s.stats),
        samples.last().map(|s| &s.stats),
    );
    // The spike's own mix: control turns some types away more than others while it lasts.
    let span = (spike.onset_s() - 1e-6, spike.end_s() - 1e-6);
    let price = mail::RunPrice::new(capacity, &report, span, &work);
    let mut run = measure(&report, &samples, spike, price.capacity_per_s, control);
    run.summary = price.annotate(run.summary).with(
        "goodput_fraction_by_second",
        price.fraction_by_second(capacity, &report, span),
    );
    Ok(run)
}

/// Draws `p90.png`: each run's p90 of admitted requests over time, by name, against the
/// target.
pub fn plot_p90<'a>(
    lab: &Lab,
    spike: &Spike,
    runs: impl IntoIterator<Item = (&'a str, &'a [(f64, f64)])>,
) -> Result<()> {
    let mut series: Vec<Series> = runs
        .into_iter()
        .map(|(name, points)| Series::new(name, points.to_vec()))
        .collect();
    let run_end = spike.before_s + spike.spike_s + spike.after_s;
    series.push(Series::new(
        "target",
        vec![(0.0, spike.target_s), (run_end, spike.target_s)],
    ));
    lab.plot(
        "p90",
        &LineChart::over_time(
            format!(
                "p90 response time, {} -> {} users",
                spike.base_users, spike.spike_users
            ),
            "p90 of admitted requests (s)",
            series,
        ),
    )
}

/// Draws `rejected.png`: each run's fraction of requests rejected (503) over time, by name.
pub fn plot_rejected<'a>(
    lab: &Lab,
    runs: impl IntoIterator<Item = (&'a str, &'a [(f64, f64)])>,
) -> Result<()> {
    let series = runs
        .into_iter()
        .map(|(name, points)| Series::new(name, points.to_vec()))
        .collect();
    let title = "fraction of requests rejected (503)";
    lab.plot(
        "rejected",
        &LineChart::over_time(title, "rejected fraction", series),
    )
}

/// The settle time of the spike ([`settle_time`]) over the load generator's 1 s intervals.
pub fn settle(report: &Report, spike: &Spike) -> f64 {
    settle_time(
        windows(report, spike.onset_s()),
        spike.onset_s(),
        spike.end_s(),
        spike.target_s,
    )
}

/// The fraction of users who got neither a page nor a rejection in the whole run: left
/// waiting on a connection (WC03: "over 561 of the 1000 clients experienced connection timeout
/// errors" with a connection limit).
pub(crate) fn unanswered_clients(report: &Report) -> f64 {
    let n = report.clients.len().max(1) as f64;
    let silent = report
        .clients
        .iter()
        .filter(|c| c.completed == 0 && c.rejected == 0)
        .count();
    silent as f64 / n
}

/// The load generator's intervals that start during the spike.
pub fn intervals<'a>(
    report: &'a Report,
    spike: &Spike,
) -> impl Iterator<Item = &'a IntervalStats> + 'a {
    let (on, end) = (spike.onset_s(), spike.end_s());
    report
        .series
        .iter()
        .filter(move |i| i.t_s >= on - 1e-6 && i.t_s < end - 1e-6)
}

/// The headline figures of the spike: p90s, settling, goodput and throughput against
/// `capacity`, the share of the admitted requests answered within the target
/// (`within_target_of_processed`, as `thesis-open` names it), and the shares rejected, timed
/// out and failed.
pub fn summary(report: &Report, spike: &Spike, capacity: f64) -> RunSummary {
    let (on, end) = (spike.onset_s(), spike.end_s());
    let mut c = Counts::default();
    for i in intervals(report, spike) {
        c.completed += i.counts.completed;
        c.good += i.counts.good;
        c.rejected += i.counts.rejected;
        c.timeouts += i.counts.timeouts;
        c.errors += i.counts.errors;
    }
    let ended = ended(&c);
    let settle = settle(report, spike);
    let p90_from = |from: f64| report.latency_between(from, end).map(|l| l.p90_ms / 1000.0);
    let mut s = RunSummary::new(spike.target_s);
    s.p90_admitted_s = p90_from(on);
    s.settling(
        settle,
        spike.spike_s,
        p90_from((on + settle).min(end - 1.0)),
    );
    s.rates(c.good, c.completed, spike.spike_s, capacity);
    s.insert("within_target_of_processed", fraction(c.good, c.completed));
    s.rejected_fraction = fraction(c.rejected, ended);
    s.timeout_fraction = Some(fraction(c.timeouts, ended));
    s.error_fraction = Some(fraction(c.errors, ended));
    s.timeouts = Some(c.timeouts);
    s.errors = Some(c.errors);
    s
}

fn measure(
    report: &Report,
    samples: &[Sample],
    spike: &Spike,
    capacity: f64,
    control: &Control,
) -> SpikeRun {
    let mut summary = summary(report, spike, capacity);
    summary.control = Some(control.describe());
    summary.max_admitted_s = report
        .latency_between(spike.onset_s(), spike.end_s())
        .map(|l| l.max_ms / 1000.0);
    summary.error_kinds = Some(report.summary.error_kinds.clone());
    summary.unanswered_clients_fraction = Some(unanswered_clients(report));
    summary.jain_completed = report.summary.jain_completed;
    let pick = |f: &dyn Fn(&seda_load::record::IntervalStats) -> Option<f64>| {
        crate::plot::points_over(report, f)
    };
    let p90 = pick(&|i| (i.counts.completed > 0).then_some(i.latency.p90_ms / 1000.0));
    let rejected_series = pick(&|i| {
        let c = &i.counts;
        let n = crate::steady::ended(c);
        (n > 0).then(|| c.rejected as f64 / n as f64)
    });
    // WC03's controller drives a token bucket (`rate_per_s`); ours limits the queue and
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use seda_load::record::{Latency, Summary};

    use super::*;

    /// A second of load: `completed` pages (`good` in time) at `p90_s`, and `rejected` 503s.
    fn second(t_s: f64, completed: u64, good: u64, rejected: u64, p90_s: f64) -> IntervalStats {
        IntervalStats {
            t_s,
            duration_s: 1.0,
            counts: Counts {
                completed,
                good,
                rejected,
                ..Counts::default()
            },
            throughput_per_s: completed as f64,
            goodput_per_s: good as f64,
            latency: Latency {
                p90_ms: p90_s * 1000.0,
                ..Latency::default()
            },
            level: 0.0,
            active: 0,
            aimd_window: None,
            good_by_class: Vec::new(),
            good_server_cpu_by_class: Vec::new(),
        }
    }

    fn report(series: Vec<IntervalStats>) -> Report {
        Report {
            model: String::new(),
            summary: Summary {
                duration_s: series.len() as f64,
                counts: Counts::default(),
                in_flight_at_end: 0,
                dropped: 0,
                retries: 0,
                retries_denied: 0,
                throughput_per_s: 0.0,
                goodput_per_s: 0.0,
                goodput_target_ms: 1000.0,
                latency: Latency::default(),
                statuses: BTreeMap::new(),
                error_kinds: BTreeMap::new(),
                clients: 0,
                jain_completed: None,
                jain_sent: None,
            },
            series,
            classes: Vec::new(),
            clients: Vec::new(),
            interval_histograms: Vec::new(),
        }
    }

    #[test]
    fn the_spike_is_summarised_in_the_shared_vocabulary() {
        let spike = Spike {
            base_users: 3,
            spike_users: 100,
            before_s: 2.0,
            spike_s: 5.0,
            after_s: 2.0,
            target_s: 1.0,
            time_scale: 1.0,
        };
        // Over 1.2 x target in the spike's first two seconds (and before it, which does not
        // count), within it after; nothing completes in the fourth second.
        let p90 = [5.0, 0.5, 3.0, 2.0, 1.1, 0.0, 0.9, 9.0, 9.0];
        let series = p90
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let completed = if i == 5 { 0 } else { 10 };
                second(i as f64, completed, completed / 2, 10, p)
            })
            .collect();
        let s = summary(&report(series), &spike, 20.0);
        assert_eq!(s.settle_time_s, Some(2.0));
        assert_eq!(s.settled, Some(true));
        // Seconds 2 to 6: 40 completed (20 good), 50 rejected.
        assert_eq!(s.goodput_per_s, 4.0);
        assert_eq!(s.throughput_per_s, Some(8.0));
        assert_eq!(s.goodput_fraction_of_capacity, Some(0.2));
        assert_eq!(s.extra["within_target_of_processed"], 0.5);
        assert!((s.rejected_fraction - 50.0 / 90.0).abs() < 1e-12);
        assert_eq!(s.timeouts, Some(0));
        // No histograms kept: no percentiles, and the JSON leaves them out.
        assert_eq!(s.p90_admitted_s, None);
        let v = s.to_json();
        assert!(v.get("p90_admitted_s").is_none());
        assert_eq!(v["settle_time_s"], 2.0);
        assert_eq!(v["capacity_per_s"], 20.0);
    }
}
