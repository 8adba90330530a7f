//! `degrade` (WC03 Figures 12 and 13): a CPU-bound bottleneck page with a quality knob under a
//! load spike, p90 target 5 s (quick form: 1 s); no control, degradation alone, and degradation
//! that re-enables admission control at the lowest quality.
//!
//! The page holds an emulated processor for its stated cost (half of it fixed, half scaling
//! with the quality), so its capacity at full quality is known before the run
//! ([`bottleneck::page_capacity_full_quality`]) and the spike is sized from it: as on the
//! paper's machine, no control leaves response times far past the target (`users / capacity`
//! is [`SPIKE_X`] times the target) while the lowest quality, which halves a page's cost at
//! best, is still not quite enough: the regime where WC03 re-enables admission control.

mod report;

use std::time::Duration;

use anyhow::Result;
use seda_load::Report;
use seda_sim::summary::{RunSummary, within_target_share};
use seda_testbed::bottleneck::{BottleneckConfig, BottleneckSection, Control, STAGE};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::admin::StatsDocument;
use crate::bottleneck::{self, BottleneckServer};
use crate::outcome::Outcome;
use crate::poll::{Sample, StatsPoller, controller_series};
use crate::spike::{self, Spike};
use crate::vocabulary::windows;
use crate::{Lab, Scenario};

/// The scenario.
pub struct Degrade;

/// Spike users as a multiple of `capacity x target`: the closed-loop response time without
/// control, in targets.
pub const SPIKE_X: f64 = 3.0;

/// How often the server's stats are polled.
const POLL: Duration = Duration::from_millis(500);

/// WC03's p90 target for the spike.
const PAPER_TARGET_S: f64 = 5.0;

/// The variants, in the order they run: their names in the results and their control.
const VARIANTS: [(&str, Control); 3] = [
    ("none", Control::None),
    ("degrade", Control::Degrade),
    ("degrade+admission", Control::DegradeAdmission),
];

/// What one variant measured.
#[derive(Debug)]
pub(crate) struct Run {
    pub name: &'static str,
    /// Its server's capacity at full quality, by design.
    pub capacity: f64,
    /// Its spike, sized from that capacity.
    pub spike: Spike,
    /// Headline figures.
    pub summary: RunSummary,
    /// This scenario's own figures (in `result.json` beside the headline ones).
    pub figures: Figures,
    /// p90 of the pages completed in each 1 s interval: `(t_s, seconds)`.
    pub p90: Vec<(f64, f64)>,
    /// Rejected fraction of the requests that ended in each interval.
    pub rejected: Vec<(f64, f64)>,
    /// The stage's quality knob, polled from `/_seda/stats`.
    pub quality: Vec<(f64, f64)>,
    /// Whether the knob had re-enabled admission control (1) or not (0).
    pub admission: Vec<(f64, f64)>,
    /// The queue limit of the admission control behind the knob (enforced only while it is on).
    pub queue_limit: Vec<(f64, f64)>,
    /// Pages served in each 1 s interval.
    pub served: Vec<(f64, f64)>,
    /// The load generator's per-interval series.
    pub series: Value,
}

/// What `degrade` measures beyond a [`RunSummary`].
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Figures {
    /// p90 of the pages completed in the spike's second half, pooled.
    pub p90_admitted_second_half_s: Option<f64>,
    /// Median of the 1 s intervals' p90 over the spike's second half.
    pub p90_interval_median_second_half_s: Option<f64>,
    /// Share of the spike's 1 s intervals whose p90 met the target.
    pub intervals_meeting_target: f64,
    /// The quality knob over the spike: mean and lowest polled.
    pub quality_mean: Option<f64>,
    /// See `quality_mean`.
    pub quality_min: Option<f64>,
    /// Share of the polls with admission control re-enabled.
    pub admission_enabled_fraction: Option<f64>,
    /// The departure rate the admission control behind the knob had measured when the knob
    /// first re-enabled it.
    pub admission_departures_at_enable_per_s: Option<f64>,
    /// Its queue limit then.
    pub admission_queue_limit_at_enable: Option<f64>,
    /// The mean cost of a page served within the target during the spike, relative to a page
    /// at full quality (priced at the mean cost of the pages the server computed in its second;
    /// [`computed_cost`]).
    pub served_cost_x_full_quality: Option<f64>,
    /// A full-quality page's stated cost, seconds of the processor.
    pub page_cost_full_quality_s: f64,
    /// The capacity at full quality, pages per second, by design.
    pub capacity_full_quality_per_s: f64,
    /// The load generator's CPU time over the run's wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_cpu_share: Option<f64>,
    /// Other processes' CPU time on the load generator's core over the run's wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_core_other_share: Option<f64>,
    /// The server's CPU time over the run's wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_share: Option<f64>,
    /// Other processes' CPU time on the server's core over the run's wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cpu_share: Option<f64>,
}

impl Run {
    /// The summary as `result.json` has it: headline and own figures together.
    pub(crate) fn summary_json(&self) -> Value {
        let mut s = self.summary.clone();
        s.extend(&self.figures);
        s.to_json()
    }
}

fn shape(lab: &Lab, capacity: f64, target_s: f64, time_scale: f64) -> Spike {
    let users = (SPIKE_X * capacity * target_s).round() as usize;
    Spike {
        base_users: 3,
        spike_users: users.clamp(20, 6000),
        before_s: lab.pick(1.0, 10.0),
        // The quick spike is 20 s: the knob takes about 2 s to halve its way down and switch
        // admission on, which a 12 s spike made a sixth of the window (goodput 0.80-0.95 x
        // capacity, all of it lost in those seconds) where the full form's is a tenth.
        spike_s: lab.pick(20.0, 120.0),
        after_s: lab.pick(1.0, 20.0),
        target_s,
        time_scale,
    }
}

impl Scenario for Degrade {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "degrade"
    }

    fn about(&self) -> &'static str {
        "CPU-bound page with a quality knob under a spike: no control vs degradation vs \
         degradation + admission control (WC03 Figures 12, 13)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "degrade+admission/goodput_fraction_of_capacity",
            "degrade+admission/p90_interval_median_second_half_s",
            "degrade/goodput_fraction_of_capacity",
            "degrade/p90_interval_median_second_half_s",
            "none/p90_interval_median_second_half_s",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let mut runs = Vec::new();
        for (name, control) in VARIANTS {
            runs.push(run_variant(lab, name, control)?);
        }
        let spike = runs[0].spike;
        report::plots(lab, &runs, &spike)?;
        let mut summary = Map::new();
        for r in &runs {
            summary.insert(r.name.to_string(), r.summary_json());
        }
        let service = BottleneckConfig::default();
        Ok(Outcome {
            paper: "WC03 Figures 12 and 13".into(),
            config: json!({
                "spike": {
                    "base_users": spike.base_users,
                    "spike_users": runs.iter().map(|r| (r.name.to_string(), json!(r.spike.spike_users))).collect::<Map<_, _>>(),
                    "spike_users_per_capacity_target": SPIKE_X,
                    "before_s": spike.before_s,
                    "spike_s": spike.spike_s,
                    "after_s": spike.after_s,
                    "think_s": bottleneck::THINK.as_secs_f64() * spike.time_scale,
                    "reject_wait_s": bottleneck::REJECT_WAIT.as_secs_f64() * spike.time_scale,
                    "client_deadline_s": crate::page_load::deadline(&spike).as_secs_f64(),
                },
                "target_s": spike.target_s,
                "target_scaled_down": lab.quick,
                "capacity_per_s": runs.iter().map(|r| (r.name.to_string(), json!(r.capacity))).collect::<Map<_, _>>(),
                "capacity": "by design: each page holds an emulated processor for its stated cost (base_ms + work_ms x quality x size) after a little real work, so capacity at full quality is the processor's cores over base_ms + work_ms. Goodput is compared with the capacity on the pages served: the cores over the mean stated cost of a page served within the target (compute_cpu_s over its pages, priced per poll), so goodput / capacity is the share of the processor that went to pages served in time",
                "service": {
                    "cores": bottleneck::PAGE_CORES,
                    "base_ms": service.base_ms,
                    "work_ms": service.work_ms,
                    "threads": 2,
                },
                "controller": {
                    "kind": "degradation",
                    "q_min": 0.01, "quality_step": 0.01, "quality_decrease": 2.0,
                    "percentile": 0.9,
                    "nreq": (100.0 * spike.time_scale).round().max(10.0),
                    "timeout_s": spike.time_scale,
                },
                "time_scale": spike.time_scale,
                "variants": VARIANTS.iter().map(|(n, c)| json!({"name": n, "control": c.name()})).collect::<Vec<_>>(),
            }),
            summary,
            data: crate::outcome::by_name(runs.iter().map(|r| {
                (
                    r.name,
                    json!({
                        "series": r.series,
                        "quality": r.quality,
                        "admission_enabled": r.admission,
                        "admission_queue_limit": r.queue_limit,
                    }),
                )
            })),
            checks: report::checks(&runs, &spike),
            report: report::markdown(&runs, &spike, lab.quick),
        })
    }
}

fn run_variant(lab: &Lab, name: &'static str, control: Control) -> Result<Run> {
    let target_s = lab.pick(1.0, PAPER_TARGET_S);
    let time_scale = target_s / PAPER_TARGET_S;
    let server = BottleneckServer::start(lab, name, control, target_s, time_scale)?;
    let capacity = bottleneck::page_capacity_full_quality();
    let full_page_s = bottleneck::PAGE_CORES / capacity;
    lab.log(format!(
        "{name}: capacity at quality 1: {capacity:.1} pages/s by design"
    ));
    let spike = &shape(lab, capacity, target_s, time_scale);
    let total = spike.before_s + spike.spike_s + spike.after_s;
    let cfg = crate::page_load::spike_users(lab, name, server.addr, spike)?;
    let poller = StatsPoller::start(server.admin, POLL);
    let core = |c: Option<usize>| c.and_then(crate::procfs::core_busy_seconds);
    let me = || crate::procfs::process_cpu_seconds(std::process::id());
    let (cpu_before, core_before) = (server.cpu_seconds(), core(lab.server_cpu));
    let (lab_before, load_core_before) = (me(), core(lab.load_cpu));
    let report = lab.load(cfg);
    let cpu = cpu_before.zip(server.cpu_seconds()).map(|(a, b)| b - a);
    let core_busy = core_before.zip(core(lab.server_cpu)).map(|(a, b)| b - a);
    let lab_cpu = lab_before.zip(me()).map(|(a, b)| b - a);
    let load_core_busy = load_core_before.zip(core(lab.load_cpu)).map(|(a, b)| b - a);
    let samples = poller.stop();
    server.stop();
    let mut run = measure(name, &report?, &samples, spike, capacity, full_page_s);
    // How much of its core the server had, and how much other processes took from it.
    let f = &mut run.figures;
    // The same for the load generator's core (the generator runs in this process).
    if let (Some(busy), Some(mine)) = (load_core_busy, lab_cpu) {
        f.load_cpu_share = Some(mine / total);
        f.load_core_other_share = Some(((busy - mine) / total).max(0.0));
    }
    if let Some(cpu) = cpu {
        f.server_cpu_share = Some(cpu / total);
        if let Some(busy) = core_busy {
            f.other_cpu_share = Some(((busy - cpu) / total).max(0.0));
        }
    }
    Ok(run)
}

/// The service's cumulative pages and their computation's CPU seconds in a stats document
/// (`None`: the document has no bottleneck service's section).
fn page_counters(stats: &StatsDocument) -> Option<(f64, f64)> {
    let section: BottleneckSection = stats.service_as().ok()??;
    let b = section.bottleneck;
    Some((b.pages as f64, b.compute_cpu_s))
}

/// CPU seconds per page computed between two readings of [`page_counters`]; `None` where no
/// page was.
fn cpu_per_page((p0, c0): (f64, f64), (p1, c1): (f64, f64)) -> Option<f64> {
    (p1 > p0).then(|| (c1 - c0) / (p1 - p0))
}

/// The CPU seconds per page of the pages the server computed between consecutive polls:
/// `(t_s, seconds)` at each poll that saw pages computed since the previous one.
fn computed_cost(samples: &[Sample]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut last = None;
    for s in samples {
        let Some(now) = page_counters(&s.stats) else {
            continue;
        };
        if let Some(cpu) = last.and_then(|l| cpu_per_page(l, now)) {
            out.push((s.t_s, cpu));
        }
        last = Some(now);
    }
    out
}

/// The mean CPU seconds of the pages completed within the target in the spike's intervals,
/// each priced at the mean of the pages the server computed over the interval (`cost` from
/// [`computed_cost`]; `full` where none was polled).
fn served_cost(report: &Report, spike: &Spike, cost: &[(f64, f64)], full: f64) -> Option<f64> {
    let (mut pages, mut work) = (0.0, 0.0);
    for i in spike::intervals(report, spike) {
        let (start, end) = (i.t_s, i.t_s + i.duration_s);
        // Polls closing a span that overlaps the interval (each covers the poll period before it).
        let c: Vec<f64> = cost
            .iter()
            .filter(|(t, _)| *t > start && *t <= end + POLL.as_secs_f64())
            .map(|(_, c)| *c)
            .collect();
        let c = if c.is_empty() {
            full
        } else {
            c.iter().sum::<f64>() / c.len() as f64
        };
        pages += i.counts.good as f64;
        work += i.counts.good as f64 * c;
    }
    (pages > 0.0).then(|| work / pages)
}

/// Mean and minimum of the points with `t` in `[from, to)`.
fn mean_min(points: &[(f64, f64)], from: f64, to: f64) -> (Option<f64>, Option<f64>) {
    let v: Vec<f64> = points
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, v)| *v)
        .collect();
    if v.is_empty() {
        return (None, None);
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (Some(mean), v.iter().copied().reduce(f64::min))
}

fn measure(
    name: &'static str,
    report: &Report,
    samples: &[Sample],
    spike: &Spike,
    capacity: f64,
    full_page_s: f64,
) -> Run {
    let (on, end) = (spike.onset_s(), spike.end_s());
    let secs = spike.spike_s;
    let p90_of = |from: f64| report.latency_between(from, end).map(|l| l.p90_ms / 1000.0);
    let quality = controller_series(samples, STAGE, "quality");
    let admission = controller_series(samples, STAGE, "admission_enabled");
    let queue_limit = controller_series(samples, STAGE, "queue_limit");
    // The admission controller's view when the knob first switched it on.
    let enabled_at = admission.iter().find(|(_, a)| *a > 0.0).map(|(t, _)| *t);
    let at_enable = |series: &[(f64, f64)]| {
        enabled_at.and_then(|t| series.iter().find(|(u, _)| *u >= t).map(|(_, v)| *v))
    };
    let departures_at_enable = at_enable(&controller_series(samples, STAGE, "departures_per_s"));
    let queue_limit_at_enable = at_enable(&queue_limit);
    let (q_mean, q_min) = mean_min(&quality, on, end);
    let (adm_on, _) = mean_min(&admission, on, end);
    let mut late: Vec<f64> = spike::intervals(report, spike)
        .filter(|i| i.t_s >= on + secs / 2.0 - 1e-6 && i.counts.completed > 0)
        .map(|i| i.latency.p90_ms / 1000.0)
        .collect();
    late.sort_by(f64::total_cmp);
    let late_median = late.get(late.len() / 2).copied();
    // Goodput against the capacity on the pages served, each priced at its stated cost (the
    // mean of the pages the server computed around its interval): a processor that served
    // nothing else would serve `cores / cost` pages a second.
    let cost = served_cost(report, spike, &computed_cost(samples), full_page_s);
    let summary = spike::summary(
        report,
        spike,
        bottleneck::PAGE_CORES / cost.unwrap_or(full_page_s),
    );
    let figures = Figures {
        served_cost_x_full_quality: cost.map(|c| c / full_page_s),
        page_cost_full_quality_s: full_page_s,
        capacity_full_quality_per_s: capacity,
        p90_admitted_second_half_s: p90_of(on + secs / 2.0),
        p90_interval_median_second_half_s: late_median,
        intervals_meeting_target: within_target_share(
            windows(report, on).filter(|w| w.end_s <= end + 1e-6),
            spike.target_s,
        ),
        quality_mean: q_mean,
        quality_min: q_min,
        admission_enabled_fraction: adm_on,
        admission_departures_at_enable_per_s: departures_at_enable,
        admission_queue_limit_at_enable: queue_limit_at_enable,
        ..Figures::default()
    };
    let pick = |f: &dyn Fn(&seda_load::record::IntervalStats) -> Option<f64>| {
        crate::plot::points_over(report, f)
    };
    Run {
        name,
        capacity,
        spike: *spike,
        summary,
        figures,
        p90: pick(&|i| (i.counts.completed > 0).then_some(i.latency.p90_ms / 1000.0)),
        rejected: pick(&|i| {
            let c = &i.counts;
            let n = crate::steady::ended(c);
            (n > 0).then(|| c.rejected as f64 / n as f64)
        }),
        served: pick(&|i| Some(i.counts.completed as f64 / i.duration_s.max(1e-9))),
        quality,
        admission,
        queue_limit,
        series: serde_json::to_value(&report.series).unwrap_or(Value::Null),
    }
}
