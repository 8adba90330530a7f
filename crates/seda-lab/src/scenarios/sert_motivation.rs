//! `sert-motivation` (SERT06, slide "Motivating Example: Size Distribution Shift"): a steady
//! stream of 5 ms and 500 ms requests whose long share grows from 0.1% to 10%; throughput and
//! mean response time with admission control alone (a queue bound) and with SERT's adaptive
//! termination too, in the real runtime.
//!
//! Scaled as `sert-shift`: the synthetic hold service ([`crate::hold`]) with 8 workers, open
//! Poisson arrivals at 400/s (the slides' 50/s for 8 workers: the workers are saturated once
//! about 3% of the requests are long), the slides' 5 ms and 500 ms. Each point runs on a fresh
//! server for 30 s, measured from 5 s (quick form: 7 s from 2 s, three shares).

use crate::scenarios::sert_shift::sert_terminator;
use anyhow::Result;
use seda_sim::summary::RunSummary;
use serde_json::{Map, json};

use crate::hold::{self, HoldServer, HoldSetup, ShiftMix};
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::poll::StatsPoller;
use crate::{Lab, Scenario};

/// The scenario.
pub struct SertMotivation;

const WORKERS: usize = 8;
const QUEUE: usize = 100;
const RATE_PER_S: f64 = 400.0;
const VARIANTS: [(&str, bool); 2] = [("admission", false), ("admission+sert", true)];

struct Point {
    variant: &'static str,
    long_share: f64,
    summary: RunSummary,
}

impl Scenario for SertMotivation {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "sert-motivation"
    }

    fn about(&self) -> &'static str {
        "5 ms and 500 ms requests, the long share from 0.1% to 10%: admission control alone \
         vs with SERT's termination, throughput and mean response time (SERT06)"
    }

    /// Admission alone is headlined by the slides' own figures, its throughput and mean
    /// response time: its requests wait 0.7-0.9 s in a full queue, at the 1 s cut, so its
    /// share within 1 s moved by a fifth between quiet runs (0.197-0.256) on a few tens of ms
    /// of wait, and stays in the summary.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "admission@10.0%/throughput_per_s",
            "admission@10.0%/mean_response_s",
            "admission+sert@10.0%/within_1s_fraction",
            "admission+sert@10.0%/goodput_per_s",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let shares: &[f64] = lab.pick(&[0.001, 0.02, 0.1], &[0.001, 0.01, 0.02, 0.05, 0.1]);
        let span = Span {
            run_s: lab.pick(7.0, 30.0),
            // The first seconds are the server's warm-up and the SERT window's first fill.
            from_s: lab.pick(2.0, 5.0),
            window: lab.pick(3, 10),
        };
        let mut points = Vec::new();
        for (variant, sert) in VARIANTS {
            for &share in shares {
                points.push(run_point(lab, variant, sert, share, span)?);
            }
        }
        draw(lab, &points)?;
        let (summary, md) = tabulate(&points);
        Ok(Outcome {
            paper: "SERT06 slide \"Motivating Example: Size Distribution Shift\"".into(),
            config: json!({
                "service": "synthetic hold service (seda serve bottleneck, GET /hold)",
                "workers": WORKERS, "queue_threshold": QUEUE, "rate_per_s": RATE_PER_S,
                "short_ms": 5, "long_ms": 500, "long_shares": shares,
                "run_s": span.run_s, "measured_from_s": span.from_s,
                "sert": sert_terminator(span.window),
                "scaling": "the slides' 50/s scaled to 400/s for 8 workers; times as in the slides",
            }),
            summary,
            data: json!({}),
            checks: checks(&points, shares),
            report: md,
        })
    }
}

/// How long each point runs, from when it is measured, and SERT's window.
#[derive(Debug, Clone, Copy)]
struct Span {
    run_s: f64,
    from_s: f64,
    window: usize,
}

/// One point: `variant` (with SERT's termination if `sert`) at a long share of `share`, on a
/// fresh server.
fn run_point(
    lab: &Lab,
    variant: &'static str,
    sert: bool,
    share: f64,
    span: Span,
) -> Result<Point> {
    let name = format!("{variant}-{:.1}pct", share * 100.0);
    let setup = HoldSetup {
        workers: WORKERS,
        queue: QUEUE,
        terminate: sert.then(|| sert_terminator(span.window)),
        stats_period_ms: None,
    };
    let mix = ShiftMix {
        short: std::time::Duration::from_millis(5),
        long: std::time::Duration::from_millis(500),
        base_long: share,
        shift_long: share,
        shift_from_s: 0.0,
        shift_to_s: 0.0,
    };
    let server = HoldServer::start(lab, &name, &setup)?;
    let cfg = hold::open_load(&server, RATE_PER_S, span.run_s, mix.clone())?;
    let poller = StatsPoller::start(server.admin, std::time::Duration::from_millis(500));
    let report = lab.load(cfg);
    let samples = poller.stop();
    server.stop();
    let report = report?;
    let terminated = hold::increase(
        &hold::stage_series(&samples, hold::terminated),
        span.from_s,
        span.run_s,
    );
    let summary = hold::window_summary(&name, &report, span.from_s, span.run_s, terminated);
    lab.log(format!(
        "{name}: {:.1}/s, mean {:.3} s",
        summary.throughput_per_s.unwrap_or(0.0),
        summary.extra_f64("mean_response_s").unwrap_or(f64::NAN)
    ));
    Ok(Point {
        variant,
        long_share: share,
        summary,
    })
}

/// Throughput and mean response time by long share, one line a variant.
fn draw(lab: &Lab, points: &[Point]) -> Result<()> {
    let series = |f: &dyn Fn(&RunSummary) -> f64| -> Vec<Series> {
        VARIANTS
            .iter()
            .map(|(v, _)| Series {
                name: v.to_string(),
                points: points
                    .iter()
                    .filter(|p| p.variant == *v)
                    .map(|p| (p.long_share * 100.0, f(&p.summary)))
                    .collect(),
            })
            .collect()
    };
    lab.plot(
        "throughput",
        &LineChart {
            title: "Throughput by share of long requests".into(),
            x_label: "long requests (%)".into(),
            y_label: "completed requests/s".into(),
            series: series(&|s| s.throughput_per_s.unwrap_or(0.0)),
        },
    )?;
    lab.plot(
        "response_time",
        &LineChart {
            title: "Mean response time by share of long requests".into(),
            x_label: "long requests (%)".into(),
            y_label: "seconds".into(),
            series: series(&|s| s.extra_f64("mean_response_s").unwrap_or(f64::NAN)),
        },
    )
}

/// The slides' claims, between the lowest and the highest long share of `shares`.
fn checks(points: &[Point], shares: &[f64]) -> Vec<Check> {
    let get = |variant: &str, share: f64, k: &str| {
        points
            .iter()
            .find(|p| p.variant == variant && p.long_share == share)
            .map_or(f64::NAN, |p| match k {
                "throughput" => p.summary.throughput_per_s.unwrap_or(0.0),
                k => p.summary.extra_f64(k).unwrap_or(f64::NAN),
            })
    };
    let (lo, hi) = (shares[0], shares[shares.len() - 1]);
    let ac_drop = get("admission", hi, "throughput") / get("admission", lo, "throughput");
    let ac_rise = get("admission", hi, "mean_response_s") / get("admission", lo, "mean_response_s");
    let sert_tput = get("admission+sert", hi, "throughput") / get("admission", hi, "throughput");
    vec![
        Check::new(
            "admission control alone loses throughput as long requests grow (slides: from \
             50/s to about 20/s at 10%)",
            ac_drop < 0.8,
            format!(
                "at {:.1}% long {:.0}% of its throughput at {:.1}% (the share of the loss \
                 depends on the scaled worker pool)",
                hi * 100.0,
                ac_drop * 100.0,
                lo * 100.0
            ),
        ),
        Check::new(
            "admission control alone: the mean response time grows by an order of magnitude",
            ac_rise >= 10.0,
            format!(
                "{ac_rise:.1} x from {:.1}% to {:.1}% long",
                lo * 100.0,
                hi * 100.0
            ),
        ),
        Check::new(
            "SERT keeps the throughput admission control alone loses",
            sert_tput >= 2.0,
            format!(
                "{sert_tput:.2} x admission alone's at {:.1}% long",
                hi * 100.0
            ),
        ),
    ]
}

/// The summary (one entry a point) and the report's table.
fn tabulate(points: &[Point]) -> (Map<String, serde_json::Value>, String) {
    let mut summary = Map::new();
    let mut md = "Figures per long share (after the first seconds of each run), beside the \
                  slides' motivating example (SERT06): with admission control alone the \
                  throughput fell from 50/s to about 20/s and the mean response time rose \
                  from tens of ms to about 700 ms as long requests grew to 10%.\n\n\
                  | variant | long share | throughput/s | mean response s | within 1 s | \
                  terminated | throughput loss |\n|---|---|---|---|---|---|---|\n"
        .to_string();
    for p in points {
        let g = |k: &str| p.summary.extra_f64(k).unwrap_or(f64::NAN);
        md += &format!(
            "| {} | {:.1}% | {:.1} | {:.3} | {:.1}% | {:.1}% | {:.1}% |\n",
            p.variant,
            p.long_share * 100.0,
            p.summary.throughput_per_s.unwrap_or(0.0),
            g("mean_response_s"),
            g("within_1s_fraction") * 100.0,
            g("terminated_fraction") * 100.0,
            g("throughput_loss") * 100.0
        );
        summary.insert(
            format!("{}@{:.1}%", p.variant, p.long_share * 100.0),
            p.summary.to_json(),
        );
    }
    md += "\n![throughput](throughput.svg)\n![response time](response_time.svg)\n";
    (summary, md)
}
