//! `classes`: 128 low-priority users throughout, 128 high-priority users in the middle third
//! (WC03 Figures 14 and 15), think 20 ms, 5 s wait after a rejection, one server with 50 ms
//! exponential service; p90 target 10 s for both classes. `response_time` treats everyone alike
//! (Figure 14); `multiclass` differentiates (Figure 15).

use anyhow::Result;
use seda_control::catalogue;
use serde_json::{Value, json};

use super::common::{controller, selected, sim, stage};
use super::{Options, Output, Scenario};
use crate::summary::{RunSummary, Series};
use crate::{Dist, Population, SimConfig, SourceConfig};

const TARGET_S: f64 = 10.0;
const DURATION_S: f64 = 600.0;
const HIGH_FROM_S: f64 = 200.0;
const HIGH_TO_S: f64 = 400.0;
const USERS: u32 = 128;
const ALL: [&str; 3] = ["none", catalogue::RESPONSE_TIME, catalogue::MULTICLASS];

/// `seda sim classes`.
pub const SCENARIO: Scenario = Scenario {
    name: "classes",
    about: "Two priority classes under one controller (WC03 Figures 14 and 15)",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let stage = stage(1, Dist::exp(0.05));
    let mut runs = Vec::new();
    let mut text = format!(
        "classes: 1 server x 50 ms exp service; {USERS} low-priority users 0-{DURATION_S} s, \
         {USERS} high-priority users {HIGH_FROM_S}-{HIGH_TO_S} s (think 20 ms, 5 s wait after a \
         rejection); p90 target {TARGET_S} s; figures over {HIGH_FROM_S}-{HIGH_TO_S} s; seed {}\n\
         {:<16} {:>12} {:>12} {:>10} {:>10} {:>12} {:>12}\n",
        args.seed,
        "controller",
        "refused_low",
        "refused_high",
        "p90_low",
        "p90_high",
        "thru_low/s",
        "thru_high/s"
    );
    let mut series = String::new();
    for kind in selected(&args.controller, &ALL) {
        let closed = |class: u8, start_s: f64, end_s: f64| {
            let mut s = SourceConfig::new(Population::Closed {
                users: USERS,
                think: Dist::exp(0.02),
                reject_wait: Some(Dist::Deterministic { mean_s: 5.0 }),
                start_s,
                end_s,
            });
            s.class = class;
            s
        };
        let sources = vec![
            closed(0, 0.0, f64::INFINITY),
            closed(1, HIGH_FROM_S, HIGH_TO_S),
        ];
        let mut cfg = SimConfig::new(DURATION_S, stage.clone(), sources);
        cfg.seed = args.seed;
        cfg.target_s = TARGET_S;
        cfg.admission = controller(kind, TARGET_S, &args.params)?;
        // Per-class p90 needs per-class histograms: run the classes' response times apart.
        let r = sim(cfg)?;
        let m = &r.metrics;
        let mid = m.window(HIGH_FROM_S, HIGH_TO_S);
        let secs = HIGH_TO_S - HIGH_FROM_S;
        let (lo, hi) = (mid.class_refused_fraction(0), mid.class_refused_fraction(1));
        let (p_lo, p_hi) = (mid.class_quantile(0, 0.9), mid.class_quantile(1, 0.9));
        let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}"));
        text += &format!(
            "{:<16} {:>12.3} {:>12.3} {:>10} {:>10} {:>12.2} {:>12.2}\n",
            kind,
            lo,
            hi,
            f(p_lo),
            f(p_hi),
            mid.class_completed[0] as f64 / secs,
            mid.class_completed[1] as f64 / secs
        );
        let per = Series::of(m, 10.0);
        if args.series {
            series += &per.text(kind);
        }
        let summary = RunSummary {
            controller: Some(kind.to_string()),
            rejected_fraction: mid.refused_fraction(),
            p90_admitted_s: mid.quantile(0.9),
            goodput_per_s: mid.good as f64 / secs,
            ..RunSummary::new(TARGET_S)
        }
        .with("rejected_fraction_low", lo)
        .with("rejected_fraction_high", hi)
        .with("p90_admitted_low_s", p_lo)
        .with("p90_admitted_high_s", p_hi);
        runs.push(json!({ "summary": summary, "series": per }));
    }
    let json = json!({
        "scenario": "classes",
        "seed": args.seed,
        "target_s": TARGET_S,
        "paper_rejected_fraction": { "low": 0.879, "high": 0.488 },
        "runs": Value::Array(runs),
    });
    Ok(Output {
        json,
        text: text + &series,
    })
}
