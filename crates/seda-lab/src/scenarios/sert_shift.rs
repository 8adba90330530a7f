//! `sert-shift` (SERT06, slides "Size Distribution Shift" and "CDF of Response Time"): a
//! steady mix of 5 ms and 500 ms requests, then a shift to about 10% long ones, then back;
//! admission control alone (a queue bound) against the same plus SERT's adaptive termination
//! in the real runtime.
//!
//! The synthetic hold service ([`crate::hold`]) stands for SERT's thread-pool service: 8
//! workers, each request holding one for 5 ms or 500 ms (the slides' times, not scaled),
//! open Poisson arrivals at 400/s (the slides' 50/s scaled by our 8 workers: before the shift
//! the workers are half busy, during it the load is 2.7 x what they can serve, as the slides'
//! shift overloads their service). The slides' run is 180 s with the shift from 30 s to
//! 155 s; the full form keeps those times, the quick form shrinks them to 24 s with the shift
//! from 4 s to 20 s. SERT's settings are those of `seda sim sert-shift` (LB 50 ms, UB 1 s, LW
//! 2%, HW 12%, alpha 2), with a loss window of 10 s (full) or 3 s (quick) of 1 s periods.

use seda_control::catalogue::terminators;
use std::time::Duration;

use anyhow::Result;
use seda::TerminateConfig;
use seda_load::Report;
use seda_sim::summary::RunSummary;
use serde_json::{Map, Value, json};

use crate::hold::{self, HoldServer, HoldSetup, ShiftMix};
use crate::outcome::{Check, Outcome};
use crate::plot::LineChart;
use crate::poll::StatsPoller;
use crate::{Lab, Scenario};

/// The scenario.
pub struct SertShift;

const WORKERS: usize = 8;
const QUEUE: usize = 100;
const RATE_PER_S: f64 = 400.0;
const BASE_LONG: f64 = 0.01;
const SHIFT_LONG: f64 = 0.10;

/// The variants: their names and whether SERT terminates.
const VARIANTS: [(&str, bool); 2] = [("admission", false), ("admission+sert", true)];

/// The slides' figures during the shift: within 1 s, admission alone and with SERT (also
/// `mail-search`'s reference).
pub(crate) const PAPER_WITHIN_1S: (f64, f64) = (0.453, 0.817);
const PAPER_THROUGHPUT_GAIN: f64 = 3.091;
const PAPER_RESPONSE_CUT: f64 = 0.547;

/// The goals for SERT during the shift.
const GOAL_THROUGHPUT_X: f64 = 2.0;
/// With SERT, the share within 1 s (DESIGN's goal for SERT; `mail-search` is held to it too).
pub(crate) const GOAL_WITHIN_1S: f64 = 0.85;
const GOAL_RESPONSE_CUT: f64 = 0.55;

/// SERT as the slides ran it, over a window of `window` completions (`sert-motivation` runs it
/// too).
pub(crate) fn sert_terminator(window: usize) -> TerminateConfig {
    TerminateConfig::new(
        terminators::SERT,
        [
            ("lower_s", 0.05),
            ("upper_s", 1.0),
            ("low_water", 0.02),
            ("high_water", 0.12),
            ("alpha", 2.0),
            ("window", window as f64),
        ],
    )
}

/// A run's data: the load's per-interval series and SERT's threshold over time, `(t, s)`
/// (`mail-search` adds its audit).
pub(crate) fn run_data(report: &Report, threshold: &[(f64, f64)]) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert(
        "series".into(),
        serde_json::to_value(&report.series).unwrap_or(Value::Null),
    );
    data.insert("threshold_s".into(), json!(threshold));
    data
}

struct Run {
    name: &'static str,
    summary: RunSummary,
    report: Report,
    threshold: Vec<(f64, f64)>,
}

impl Scenario for SertShift {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "sert-shift"
    }

    fn about(&self) -> &'static str {
        "A shift to 10% long (500 ms) requests: admission control alone vs admission plus \
         SERT's adaptive early termination, in the real runtime (SERT06)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "admission/within_1s_fraction",
            "admission+sert/within_1s_fraction",
            "admission+sert/goodput_per_s",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let (run_s, from_s, to_s) = lab.pick((24.0, 4.0, 20.0), (180.0, 30.0, 155.0));
        let window = lab.pick(3, 10);
        let mix = ShiftMix {
            short: Duration::from_millis(5),
            long: Duration::from_millis(500),
            base_long: BASE_LONG,
            shift_long: SHIFT_LONG,
            shift_from_s: from_s,
            shift_to_s: to_s,
        };
        let mut runs = Vec::new();
        for (name, sert) in VARIANTS {
            let setup = HoldSetup {
                workers: WORKERS,
                queue: QUEUE,
                terminate: sert.then(|| sert_terminator(window)),
                stats_period_ms: None,
            };
            runs.push(run_variant(lab, name, &setup, &mix, run_s)?);
        }
        plots(lab, &runs)?;
        let g = |r: &Run, k: &str| r.summary.extra_f64(k).unwrap_or(f64::NAN);
        let (ac, sert) = (&runs[0], &runs[1]);
        let gain = sert.summary.throughput_per_s.unwrap_or(0.0)
            / ac.summary.throughput_per_s.unwrap_or(f64::NAN);
        let cut = 1.0 - g(sert, "mean_response_s") / g(ac, "mean_response_s");
        let within = g(sert, "within_1s_fraction");
        let checks = vec![
            Check::new(
                format!(
                    "SERT's throughput during the shift >= {GOAL_THROUGHPUT_X} x admission alone"
                ),
                gain >= GOAL_THROUGHPUT_X,
                format!("{gain:.2} x (slides: {PAPER_THROUGHPUT_GAIN:.2} x)"),
            ),
            Check::new(
                format!(
                    "with SERT >= {:.0}% of requests complete within 1 s during the shift",
                    GOAL_WITHIN_1S * 100.0
                ),
                within >= GOAL_WITHIN_1S,
                format!(
                    "{:.1}% (admission alone {:.1}%; slides: {:.1}% vs {:.1}%)",
                    within * 100.0,
                    g(ac, "within_1s_fraction") * 100.0,
                    PAPER_WITHIN_1S.1 * 100.0,
                    PAPER_WITHIN_1S.0 * 100.0
                ),
            ),
            Check::new(
                format!(
                    "SERT cuts the mean response time during the shift by >= {:.0}%",
                    GOAL_RESPONSE_CUT * 100.0
                ),
                cut >= GOAL_RESPONSE_CUT,
                format!(
                    "{:.1}% ({:.3} s -> {:.3} s; slides: {:.1}%)",
                    cut * 100.0,
                    g(ac, "mean_response_s"),
                    g(sert, "mean_response_s"),
                    PAPER_RESPONSE_CUT * 100.0
                ),
            ),
        ];
        let mut summary = Map::new();
        for r in &runs {
            summary.insert(r.name.to_string(), r.summary.to_json());
        }
        Ok(Outcome {
            paper: "SERT06 slides \"Size Distribution Shift\", \"CDF of Response Time\"".into(),
            config: json!({
                "service": "synthetic hold service (seda serve bottleneck, GET /hold): each request holds a worker for its time",
                "workers": WORKERS,
                "queue_threshold": QUEUE,
                "rate_per_s": RATE_PER_S,
                "arrivals": "open, Poisson",
                "short_ms": 5, "long_ms": 500,
                "long_share": { "before_and_after": BASE_LONG, "shift": SHIFT_LONG },
                "run_s": run_s, "shift_from_s": from_s, "shift_to_s": to_s,
                "capacity_per_s": {
                    "before": WORKERS as f64 / mix.mean_s(BASE_LONG),
                    "shift": WORKERS as f64 / mix.mean_s(SHIFT_LONG),
                },
                "sert": sert_terminator(window),
                "scaling": "times as in the slides; the slides' 50/s scaled to 400/s for 8 workers so the shift overloads as theirs did",
            }),
            summary,
            data: crate::outcome::by_name(
                runs.iter()
                    .map(|r| (r.name, Value::Object(run_data(&r.report, &r.threshold)))),
            ),
            report: markdown(&runs, gain, cut, from_s, to_s, lab.quick),
            checks,
        })
    }
}

fn run_variant(
    lab: &Lab,
    name: &'static str,
    setup: &HoldSetup,
    mix: &ShiftMix,
    run_s: f64,
) -> Result<Run> {
    let server = HoldServer::start(lab, name, setup)?;
    let cfg = hold::open_load(&server, RATE_PER_S, run_s, mix.clone())?;
    let poller = StatsPoller::start(server.admin, Duration::from_millis(500));
    let report = lab.load(cfg);
    let samples = poller.stop();
    server.stop();
    let report = report?;
    let (from, to) = (mix.shift_from_s, mix.shift_to_s);
    let terminated = hold::increase(&hold::stage_series(&samples, hold::terminated), from, to);
    let threshold = hold::stage_series(&samples, hold::termination_threshold_s);
    let summary = hold::window_summary(name, &report, from, to, terminated);
    lab.log(format!(
        "{name}: {:.1}/s during the shift, mean {:.3} s, {:.1}% within 1 s, {:.1}% terminated",
        summary.throughput_per_s.unwrap_or(0.0),
        summary.extra_f64("mean_response_s").unwrap_or(f64::NAN),
        summary.extra_f64("within_1s_fraction").unwrap_or(f64::NAN) * 100.0,
        summary.extra_f64("terminated_fraction").unwrap_or(f64::NAN) * 100.0,
    ));
    Ok(Run {
        name,
        summary,
        report,
        threshold,
    })
}

fn plots(lab: &Lab, runs: &[Run]) -> Result<()> {
    let reports = || runs.iter().map(|r| (r.name, &r.report));
    lab.plot("throughput", &LineChart::throughput(reports()))?;
    let response_time = LineChart::over_runs(
        "Mean response time of completed requests",
        "seconds",
        reports(),
        |i| (i.counts.completed > 0).then_some(i.latency.mean_ms / 1000.0),
    );
    lab.plot("response_time", &response_time)?;
    if let Some(r) = runs.iter().find(|r| !r.threshold.is_empty()) {
        let title = "SERT's termination threshold";
        let chart = LineChart::one_line(title, "seconds", r.name, r.threshold.clone());
        lab.plot("threshold", &chart)?;
    }
    Ok(())
}

fn markdown(runs: &[Run], gain: f64, cut: f64, from_s: f64, to_s: f64, quick: bool) -> String {
    let g = |r: &Run, k: &str| r.summary.extra_f64(k).unwrap_or(f64::NAN);
    let mut md = format!(
        "Figures over the shift ({from_s:.0} s to {to_s:.0} s{}), beside the slides' (SERT06).\n\n\
         | variant | throughput/s | mean response s | within 1 s | terminated | throughput loss |\n\
         |---|---|---|---|---|---|\n",
        if quick { ", quick form" } else { "" }
    );
    for r in runs {
        md += &format!(
            "| {} | {:.1} | {:.3} | {:.1}% | {:.1}% | {:.1}% |\n",
            r.name,
            r.summary.throughput_per_s.unwrap_or(0.0),
            g(r, "mean_response_s"),
            g(r, "within_1s_fraction") * 100.0,
            g(r, "terminated_fraction") * 100.0,
            g(r, "throughput_loss") * 100.0,
        );
    }
    md += &format!(
        "\nSERT's throughput is {gain:.2} x admission alone's (slides: 209.1% higher, {PAPER_THROUGHPUT_GAIN:.2} x); \
         its mean response time is {:.1}% lower (slides: 54.7%). Within 1 s, slides: SERT \
         81.7%, admission control 45.3%.\n\n\
         ![throughput](throughput.svg)\n![response time](response_time.svg)\n![threshold](threshold.svg)\n",
        cut * 100.0
    );
    md
}
