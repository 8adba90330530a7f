//! `classes` (WC03 Figures 14 and 15): two classes of 128 e-mail users each; the low class runs
//! throughout, the high class only in the middle third. Per stage, WC03's multiclass controller
//! with one class (no differentiation: every user is treated alike) and with two (the low
//! class is cut first when the high class misses its target).
//!
//! Each class is its own load generator (two threads, both on the load core), whose users send
//! their class in the `x-seda-class` header: the per-interval rejected fraction of each class
//! then comes straight from its own report.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow};
use seda_load::Report;
use seda_load::workload::{Reply, Request, Session, Workload};
use seda_mail::workload::MailWorkload;
use seda_sim::summary::{RunSummary, per_s};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::mail_spike::measure_capacity;
use crate::mail::{self, Control, MailServer};
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::steady::{fmt, pct, rejected_between, rejected_series};
use crate::{Lab, Scenario};

/// The scenario.
pub struct Classes;

/// WC03's p90 target (both classes).
const PAPER_TARGET_S: f64 = 10.0;
/// Users per class (WC03: 128).
const USERS: usize = 128;
/// The target is `USERS / capacity x TARGET_FRACTION`, as in `per-stage`: the low class
/// alone loads the service to about the target, both classes overload it.
const TARGET_FRACTION: f64 = 0.5;
/// The paper's averages while both classes are active: rejected fraction of (low, high)
/// without and with differentiation.
const PAPER_WITHOUT: (f64, f64) = (0.555, 0.576);
const PAPER_WITH: (f64, f64) = (0.879, 0.488);

/// E-mail users who send their class in `x-seda-class`.
struct ClassUsers {
    inner: MailWorkload,
    class: u8,
}

impl Workload for ClassUsers {
    fn classes(&self) -> Vec<String> {
        self.inner.classes()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(ClassSession {
            inner: self.inner.session(seed),
            header: self.class.to_string(),
        })
    }
}

struct ClassSession {
    inner: Box<dyn Session>,
    header: String,
}

impl Session for ClassSession {
    fn next_request(&mut self, last: Option<&Reply<'_>>) -> Request {
        let mut r = self.inner.next_request(last);
        r.headers
            .push(("x-seda-class".to_string(), self.header.clone()));
        r
    }

    fn restart(&mut self) {
        self.inner.restart();
    }

    fn capture_bytes(&self) -> usize {
        self.inner.capture_bytes()
    }

    fn capture_headers(&self) -> bool {
        self.inner.capture_headers()
    }

    fn think_time(&mut self) -> Option<Duration> {
        self.inner.think_time()
    }
}

/// The run's shape on this machine.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Length of each third: low only, both, low only.
    third_s: f64,
    target_s: f64,
}

impl Plan {
    fn time_scale(&self) -> f64 {
        self.target_s / PAPER_TARGET_S
    }

    /// When the high class is active.
    fn both(&self) -> (f64, f64) {
        (self.third_s, 2.0 * self.third_s)
    }
}

/// What one variant measured: each class's report (times from the start of the low class).
struct ClassRun {
    low: Report,
    high: Report,
}

/// Starts the service with `control`, runs the low class for three thirds and the high class
/// in the middle one, both from the load core.
fn run_variant(lab: &Lab, name: &str, control: &Control, plan: &Plan) -> Result<ClassRun> {
    let server = MailServer::start(lab, name, control)?;
    let config = |class: u8, duration_s: f64, seed: u64| -> Result<seda_load::LoadConfig> {
        let mut cfg = mail::users(
            server.addr,
            USERS,
            Duration::from_secs_f64(duration_s),
            plan.time_scale(),
        )?;
        cfg.workload = Arc::new(ClassUsers {
            inner: MailWorkload::new(mail::CORPUS_USERS),
            class,
        });
        cfg.goodput_target = Duration::from_secs_f64(plan.target_s);
        cfg.seed = seed;
        Ok(cfg)
    };
    let low_cfg = config(0, 3.0 * plan.third_s, 1);
    let high_cfg = config(1, plan.third_s, 2);
    lab.log(format!(
        "{name}: {USERS} low users for {:.0} s, {USERS} high users from {:.0} s to {:.0} s",
        3.0 * plan.third_s,
        plan.both().0,
        plan.both().1
    ));
    let result = match (low_cfg, high_cfg) {
        (Ok(low_cfg), Ok(high_cfg)) => std::thread::scope(|s| {
            let low = s.spawn(|| lab.load(low_cfg));
            let high = s.spawn(|| {
                std::thread::sleep(Duration::from_secs_f64(plan.third_s));
                lab.load(high_cfg)
            });
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<Report>>| {
                h.join()
                    .map_err(|_| anyhow!("a load generator thread panicked"))?
            };
            Ok(ClassRun {
                low: join(low)?,
                high: join(high)?,
            })
        }),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    server.stop(lab, name);
    result
}

impl Scenario for Classes {
    fn name(&self) -> &'static str {
        "classes"
    }

    fn about(&self) -> &'static str {
        "two classes of e-mail users, the high one active in the middle third: WC03's \
         multiclass controller without and with differentiation (WC03 Figures 14, 15)"
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let capacity = measure_capacity(lab)?;
        let target_s = ((USERS as f64 / capacity * TARGET_FRACTION * 100.0).round() / 100.0)
            .clamp(0.05, PAPER_TARGET_S);
        let plan = Plan {
            third_s: lab.pick(7.0, 60.0),
            target_s,
        };
        let multiclass = |classes: f64| Control::PerStage {
            kind: "multiclass".into(),
            params: vec![("classes".into(), classes), ("target_s".into(), target_s)],
        };
        let variants = [("without", multiclass(1.0)), ("with", multiclass(2.0))];
        let mut runs = Vec::new();
        for (name, control) in &variants {
            runs.push((*name, run_variant(lab, name, control, &plan)?));
        }
        plots(lab, &runs, &plan)?;
        let summaries: Vec<(&str, ClassesSummary)> = runs
            .iter()
            .map(|(name, r)| (*name, summarize(r, &plan, capacity)))
            .collect();
        let summary: Map<String, Value> = summaries
            .iter()
            .map(|(n, s)| {
                (
                    (*n).to_string(),
                    serde_json::to_value(s).unwrap_or(Value::Null),
                )
            })
            .collect();
        Ok(Outcome {
            paper: "WC03 Figures 14 and 15".into(),
            config: json!({
                "users_per_class": USERS,
                "third_s": plan.third_s,
                "target_s": target_s,
                "time_scale": plan.time_scale(),
                "think_s": mail::THINK.as_secs_f64() * plan.time_scale(),
                "reject_wait_s": mail::REJECT_WAIT.as_secs_f64() * plan.time_scale(),
                "variants": variants.iter().map(|(n, c)| json!({"name": n, "control": c.describe()})).collect::<Vec<_>>(),
                "classes": "x-seda-class: 0 low, 1 high",
                "corpus_users": mail::CORPUS_USERS,
                "slowdown": mail::SLOWDOWN,
            }),
            data: Value::Object(
                runs.iter()
                    .map(|(n, r)| {
                        (
                            (*n).to_string(),
                            json!({
                                "low_rejected": rejected_series(&r.low, 0.0),
                                "high_rejected": rejected_series(&r.high, plan.third_s),
                            }),
                        )
                    })
                    .collect(),
            ),
            checks: checks(&summaries),
            report: report(&summaries, &plan, capacity),
            summary,
        })
    }
}

/// One variant's figures.
#[derive(Debug, Clone, Serialize)]
struct ClassesSummary {
    target_s: f64,
    capacity_per_s: f64,
    /// While both are active: the low class's clock starts with the run, the high class's
    /// when it arrives.
    low_both_active: RunSummary,
    high_both_active: RunSummary,
    low_alone_before: RunSummary,
}

/// One class's figures over `[from_s, to_s)` on its own clock.
fn class_figures(r: &Report, from_s: f64, to_s: f64, target_s: f64) -> RunSummary {
    let (mut good, mut secs) = (0, 0.0);
    for i in r
        .series
        .iter()
        .filter(|i| i.t_s >= from_s - 1e-6 && i.t_s < to_s - 1e-6)
    {
        good += i.counts.good;
        secs += i.duration_s;
    }
    RunSummary {
        rejected_fraction: rejected_between(r, from_s, to_s).unwrap_or(0.0),
        p90_admitted_s: r.latency_between(from_s, to_s).map(|l| l.p90_ms / 1000.0),
        goodput_per_s: per_s(good, secs),
        ..RunSummary::new(target_s)
    }
}

fn summarize(r: &ClassRun, plan: &Plan, capacity: f64) -> ClassesSummary {
    let (on, off) = plan.both();
    let t = plan.target_s;
    ClassesSummary {
        target_s: t,
        capacity_per_s: capacity,
        low_both_active: class_figures(&r.low, on, off, t),
        high_both_active: class_figures(&r.high, 0.0, off - on, t),
        low_alone_before: class_figures(&r.low, 0.0, on, t),
    }
}

type Summaries<'a> = [(&'a str, ClassesSummary)];

fn variant<'a>(summaries: &'a Summaries<'_>, name: &str) -> Option<&'a ClassesSummary> {
    summaries.iter().find(|(n, _)| *n == name).map(|(_, s)| s)
}

fn checks(summaries: &Summaries<'_>) -> Vec<Check> {
    let rej = |v: &str, class: fn(&ClassesSummary) -> &RunSummary| {
        variant(summaries, v).map(|s| class(s).rejected_fraction)
    };
    let (lo, hi) = (
        rej("with", |s| &s.low_both_active),
        rej("with", |s| &s.high_both_active),
    );
    let (lo0, hi0) = (
        rej("without", |s| &s.low_both_active),
        rej("without", |s| &s.high_both_active),
    );
    vec![
        Check::new(
            "with differentiation, the high class is rejected less than the low class while both are active",
            lo.zip(hi).is_some_and(|(l, h)| h < l),
            format!("with: low {}, high {}", pct(lo), pct(hi)),
        ),
        // Observed only: without differentiation the classes' rates differ by chance (who
        // arrives while the controller cuts), which a short run cannot average out.
        Check::observed(
            "without differentiation, both classes are rejected alike (within 0.1)",
            lo0.zip(hi0).is_some_and(|(l, h)| (l - h).abs() <= 0.1),
            format!("without: low {}, high {}", pct(lo0), pct(hi0)),
        ),
    ]
}

fn plots(lab: &Lab, runs: &[(&str, ClassRun)], plan: &Plan) -> Result<()> {
    for (name, r) in runs {
        let figure = if *name == "with" { 15 } else { 14 };
        lab.plot(
            &format!("rejected_{name}"),
            &LineChart {
                title: format!(
                    "rejected fraction per class, {name} differentiation (WC03 Figure {figure})"
                ),
                x_label: "time (s)".into(),
                y_label: "rejected fraction".into(),
                series: vec![
                    Series {
                        name: "low class".into(),
                        points: rejected_series(&r.low, 0.0),
                    },
                    Series {
                        name: "high class".into(),
                        points: rejected_series(&r.high, plan.third_s),
                    },
                ],
            },
        )?;
    }
    Ok(())
}

fn report(summaries: &Summaries<'_>, plan: &Plan, capacity: f64) -> String {
    let t = plan.target_s;
    let mut s = format!(
        "**Scale-down.** The service runs {}x slower than this machine (`seda serve mail \
         --slowdown {}`); its measured capacity is {capacity:.0} requests/s. WC03 ran 128 low and \
         128 high users with a 10 s target for each class, the high class active from 100 s to \
         200 s. Here: 128 users per class, target {t} s for each (half of 128 / capacity), \
         think time {:.1} ms and wait after a rejection {:.2} s (shrunk with the target), the \
         high class active from {:.0} s to {:.0} s of {:.0} s. Per stage, WC03's multiclass \
         controller (`multiclass`): with `classes = 1` every user is treated alike (the \
         paper's Figure 14 setup), with `classes = 2` the low class is cut first.\n\n",
        mail::SLOWDOWN,
        mail::SLOWDOWN,
        20.0 * plan.time_scale(),
        5.0 * plan.time_scale(),
        plan.both().0,
        plan.both().1,
        3.0 * plan.third_s,
    );
    s += "### Rejected fraction while both classes are active\n\n| | low class | high class | p90 low | p90 high | paper low | paper high |\n|---|---|---|---|---|---|---|\n";
    let get = |v: &str, figure: fn(&ClassesSummary) -> Option<f64>| {
        variant(summaries, v).and_then(figure)
    };
    for (v, label, paper) in [
        (
            "without",
            "without differentiation (Figure 14)",
            PAPER_WITHOUT,
        ),
        ("with", "with differentiation (Figure 15)", PAPER_WITH),
    ] {
        s += &format!(
            "| {label} | {} | {} | {} s | {} s | {} | {} |\n",
            pct(get(v, |s| Some(s.low_both_active.rejected_fraction))),
            pct(get(v, |s| Some(s.high_both_active.rejected_fraction))),
            fmt(get(v, |s| s.low_both_active.p90_admitted_s)),
            fmt(get(v, |s| s.high_both_active.p90_admitted_s)),
            pct(Some(paper.0)),
            pct(Some(paper.1)),
        );
    }
    s += &format!(
        "\nBefore the high class arrives the low class alone is rejected {} (without) and {} \
         (with differentiation).\n\n",
        pct(get("without", |s| Some(
            s.low_alone_before.rejected_fraction
        ))),
        pct(get("with", |s| Some(s.low_alone_before.rejected_fraction))),
    );
    s += "**The paper (WC03 Figures 14, 15):** without differentiation both classes see about \
          the same rejection rate (55.5% low, 57.6% high); with it the low class is rejected \
          far more (87.9%) and the high class somewhat less (48.8%), with a sharper spike when \
          the high class arrives because the controller first cuts only the low class.\n\n";
    s += "**Where we differ and why.** Each class is a separate closed-loop load generator on \
          the same core rather than one population with a class per user. The multiclass \
          controller is WC03's token bucket per class and per stage, with WC03's constants (an \
          additive increase of at most about 2 requests/s per window), tuned for a 10 s \
          target; at our shorter time scale a window closes every 100 requests or 1 s, so it \
          reacts in a comparable number of windows but over a shorter run.\n";
    s
}
