//! A web page under a spike and under a light load, for services that are not seda stages
//! inside (`tower-spike`, `proxy-spike`): the same closed users as the bottleneck page's
//! ([`bottleneck::users`]), and figures in the shared vocabulary ([`RunSummary`]) plus what a
//! light load costs each server process in CPU per request.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Result;
use seda_load::{Arrivals, ClientConfig, LoadConfig, Model, Open, Report, Target};
use seda_sim::summary::RunSummary;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::bottleneck;
use crate::lab::Lab;
use crate::plot::{LineChart, Series};
use crate::spike::{self, Spike};

/// The client's deadline in a spike: long enough that response times past the target are
/// measured rather than cut off (a request past it counts as a timeout).
pub fn deadline(spike: &Spike) -> Duration {
    Duration::from_secs_f64((10.0 * spike.target_s).max(30.0))
}

/// The spike of the page scenarios: 3 users, then enough that `offered` pages a second would
/// fill a target of `target_s` (at least 20, at most 6,000); WC03's e-mail users' think time
/// and wait after a rejection (20 ms and 5 s with a 5 s target, Section 4.5's page) in the same
/// proportions to this target.
pub fn spike_shape(lab: &Lab, offered: f64, target_s: f64) -> Spike {
    Spike {
        base_users: 3,
        spike_users: ((offered * target_s).round() as usize).clamp(20, 6000),
        before_s: lab.pick(1.0, 10.0),
        spike_s: lab.pick(6.0, 60.0),
        after_s: lab.pick(0.5, 10.0),
        target_s,
        time_scale: target_s / 5.0,
    }
}

/// The users of `spike` against the page at `addr` (the bottleneck service's users, with the
/// spike's schedule and target and [`deadline`]), logged as `name`'s load.
pub(crate) fn spike_users(
    lab: &Lab,
    name: &str,
    addr: SocketAddr,
    spike: &Spike,
) -> Result<LoadConfig> {
    let total = spike.before_s + spike.spike_s + spike.after_s;
    let mut cfg = bottleneck::users(
        addr,
        spike.base_users,
        Duration::from_secs_f64(total),
        deadline(spike),
        spike.time_scale,
    )?;
    cfg.schedule = Some(spike.schedule()?);
    cfg.goodput_target = Duration::from_secs_f64(spike.target_s);
    lab.log(format!(
        "{name}: {} users, {} during {:.0} s from {:.0} s, p90 target {} s",
        spike.base_users,
        spike.spike_users,
        spike.spike_s,
        spike.onset_s(),
        spike.target_s
    ));
    Ok(cfg)
}

/// What one spike against a page measured.
#[derive(Debug)]
pub struct PageRun {
    /// Headline figures (`unanswered_clients_fraction` included).
    pub summary: RunSummary,
    /// p90 of the pages completed in each 1 s interval: `(t_s, seconds)`.
    pub p90: Vec<(f64, f64)>,
    /// Pages answered within the target in each 1 s interval, per second.
    pub goodput: Vec<(f64, f64)>,
    /// Rejected fraction of the requests that ended in each interval.
    pub rejected: Vec<(f64, f64)>,
    /// The load generator's per-interval series.
    pub series: Value,
}

/// Draws `p90` (against the spike's target) and `goodput` of each named page run.
pub fn plot<'a>(
    lab: &Lab,
    spike: &Spike,
    runs: impl IntoIterator<Item = (&'a str, &'a PageRun)> + Clone,
) -> Result<()> {
    let p90 = runs.clone().into_iter().map(|(n, r)| (n, r.p90.as_slice()));
    spike::plot_p90(lab, spike, p90)?;
    let goodput = runs
        .into_iter()
        .map(|(name, r)| Series::new(name, r.goodput.clone()))
        .collect();
    let chart = LineChart::over_time(
        "pages answered within the target",
        "goodput (pages/s)",
        goodput,
    );
    lab.plot("goodput", &chart)
}

/// The outcome's summary (each named run's figures, with what it measured at `Underload` in
/// them) and data (each run's series).
pub fn summary_and_data<'a>(
    runs: impl IntoIterator<Item = (&'a str, &'a PageRun, &'a Underload)>,
) -> (Map<String, Value>, Value) {
    let mut summary = Map::new();
    let mut data = Map::new();
    for (name, run, underload) in runs {
        let mut s = run.summary.to_json();
        if let Value::Object(m) = &mut s {
            m.insert("underload".into(), json!(underload));
        }
        summary.insert(name.to_string(), s);
        data.insert(name.to_string(), json!({"series": run.series}));
    }
    (summary, Value::Object(data))
}

/// Runs `spike` against the page at `addr` (whatever serves it) and measures it against
/// `capacity`, a calibration's pages per second. With `renderer_cpu` (the CPU seconds so far
/// of the processes that render the pages, pinned to the server core, and that render nothing
/// else) the capacity is this run's own instead: the pages they completed in the spike per
/// CPU-second they ran in it, so goodput / capacity is the share of a core they spent on pages
/// answered within the target and cannot pass 1. A calibration's pages per second follow the
/// machine's speed (`proxy-spike`'s HAProxy read 1.30 x one that way).
///
/// Without `renderer_cpu`, a service that says what each page cost it (`Server-Timing:
/// cpu;dur=...`, as `seda serve tower-demo` does) is priced page by page: the capacity is a
/// core's pages per second at the mean cost of the pages answered within the target, so
/// goodput / capacity is the share of the server's core that went to rendering them, at most
/// 1 on a pinned server, less what its front end, refusals and late pages took. Such a
/// service answers its own refusals, so its process's CPU per page would count them as the
/// pages' cost. A service that says neither is measured against the calibration's `capacity`.
pub fn spike(
    lab: &Lab,
    name: &str,
    addr: SocketAddr,
    spike: &Spike,
    capacity: f64,
    renderer_cpu: Option<&(dyn Fn() -> Option<f64> + Sync)>,
) -> Result<PageRun> {
    let cfg = spike_users(lab, name, addr, spike)?;
    let start = Instant::now();
    let at = |t_s: f64, read: &dyn Fn() -> Option<f64>| {
        std::thread::sleep(Duration::from_secs_f64(t_s).saturating_sub(start.elapsed()));
        read()
    };
    let (report, cpu) = std::thread::scope(|s| {
        let sampler = renderer_cpu.map(|read| {
            let at = &at;
            s.spawn(move || {
                let before = at(spike.onset_s(), read);
                before.zip(at(spike.end_s(), read)).map(|(a, b)| b - a)
            })
        });
        let report = lab.load(cfg);
        (report, sampler.and_then(|h| h.join().ok().flatten()))
    });
    let report = report?;
    let mut run = measure(&report, spike, capacity);
    let s = &mut run.summary;
    if let (Some(cpu), Some(pages)) = (cpu.filter(|c| *c > 0.01), s.throughput_per_s)
        && pages > 0.0
    {
        let per_cpu_s = pages * spike.spike_s / cpu;
        s.capacity_per_s = Some(per_cpu_s);
        s.goodput_fraction_of_capacity = Some(s.goodput_per_s / per_cpu_s);
    } else if renderer_cpu.is_none()
        && let Some(price) = good_page_cpu_s(&report, spike)
    {
        s.capacity_per_s = Some(1.0 / price);
        s.goodput_fraction_of_capacity = Some(s.goodput_per_s * price);
    }
    Ok(run)
}

/// The mean CPU seconds the server said (`Server-Timing`) the pages it answered within the
/// target over the spike cost it; `None` where it said nothing of them.
fn good_page_cpu_s(report: &Report, spike: &Spike) -> Option<f64> {
    let (timed, cpu_s) = report
        .good_server_cpu_between(spike.onset_s() - 1e-6, spike.end_s() - 1e-6)
        .values()
        .fold((0, 0.0), |(n, c), s| (n + s.timed, c + s.cpu_s));
    (timed > 0 && cpu_s > 0.0 && cpu_s.is_finite()).then(|| cpu_s / timed as f64)
}

fn measure(report: &Report, spike: &Spike, capacity: f64) -> PageRun {
    let mut summary = spike::summary(report, spike, capacity);
    summary.max_admitted_s = report
        .latency_between(spike.onset_s(), spike.end_s())
        .map(|l| l.max_ms / 1000.0);
    summary.unanswered_clients_fraction = Some(spike::unanswered_clients(report));
    summary.error_kinds = Some(report.summary.error_kinds.clone());
    let pick = |f: &dyn Fn(&seda_load::record::IntervalStats) -> Option<f64>| {
        crate::plot::points_over(report, f)
    };
    PageRun {
        summary,
        p90: pick(&|i| (i.counts.completed > 0).then_some(i.latency.p90_ms / 1000.0)),
        goodput: pick(&|i| Some(i.counts.good as f64 / i.duration_s.max(1e-9))),
        rejected: pick(&|i| {
            let c = &i.counts;
            let n = crate::steady::ended(c);
            (n > 0).then(|| c.rejected as f64 / n as f64)
        }),
        series: serde_json::to_value(&report.series).unwrap_or(Value::Null),
    }
}

impl PageRun {
    /// The median of the 1 s intervals' p90 over the spike's second half: what a control
    /// holds once past the onset, robust to one interval in which the shared machine stalled
    /// the server.
    pub fn second_half_median_p90(&self, spike: &Spike) -> Option<f64> {
        let from = spike.onset_s() + spike.spike_s / 2.0;
        let mut v: Vec<f64> = self
            .p90
            .iter()
            .filter(|(t, _)| *t >= from - 1e-6 && *t < spike.end_s() - 1e-6)
            .map(|(_, p)| *p)
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    }
}

/// What a light load measured.
#[derive(Debug, Clone, Serialize)]
pub struct Underload {
    /// Requests per second offered (Poisson arrivals).
    pub rate_per_s: f64,
    /// Pages completed.
    pub completed: u64,
    /// Requests that did not complete (rejected, timed out, failed): at underload, none should.
    pub not_completed: u64,
    /// CPU seconds per completed request of each process measured, by name.
    pub cpu_ms_per_request: Vec<(String, f64)>,
    /// Median response time, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// Offers `rate_per_s` Poisson arrivals to `addr` for `duration` and reads, around the run,
/// the CPU time of each named process (`cpu` gives a process's CPU seconds so far).
pub fn underload(
    lab: &Lab,
    addr: SocketAddr,
    rate_per_s: f64,
    duration: Duration,
    cpu: &[(&str, &dyn Fn() -> Option<f64>)],
) -> Result<Underload> {
    let target = Target::parse(&format!("http://{addr}/"))?;
    let model = Model::Open(Open {
        rate_per_s,
        arrivals: Arrivals::Poisson,
        max_connections: 256,
        max_backlog: 10_000,
    });
    let mut cfg = LoadConfig::new(target, model)?;
    cfg.duration = duration;
    cfg.client = ClientConfig {
        deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    // No warm-up: the CPU time read around the run must cover the same requests as the counts.
    let before: Vec<Option<f64>> = cpu.iter().map(|(_, f)| f()).collect();
    let report = lab.load(cfg)?;
    let c = &report.summary.counts;
    let completed = c.completed;
    let cpu_ms_per_request = cpu
        .iter()
        .zip(before)
        .filter_map(|((name, f), b)| {
            let used = f().zip(b).map(|(after, before)| after - before)?;
            (completed > 0).then(|| (name.to_string(), 1000.0 * used / completed as f64))
        })
        .collect();
    Ok(Underload {
        rate_per_s,
        completed,
        not_completed: c.rejected + c.timeouts + c.errors,
        cpu_ms_per_request,
        p50_ms: report.summary.latency.p50_ms,
        p99_ms: report.summary.latency.p99_ms,
    })
}
