//! `stages`: per-stage versus single-stage admission control (WC03 Section 2.3 and Figure 11).
//! A front stage (8 servers, 1 ms) sends 90% of requests to a light stage (4 servers, 10 ms:
//! 400/s) and 10% to a heavy one (1 server, 50 ms: 20/s). Open Poisson load of 300/s overloads
//! only the heavy stage (30/s offered). p90 target 1 s. Compared: no control; our controller at
//! the light and heavy stages (per-stage); the same controller once, at the front door, hearing
//! end-to-end response times (single-stage).

use anyhow::{Result, bail};
use seda_control::catalogue;
use serde_json::{Value, json};

use super::common::{controller, sim, stage};
use super::{Options, Output, Scenario};
use crate::summary::RunSummary;
use crate::{Dist, Population, SimConfig, SourceConfig, StageNode};

const TARGET_S: f64 = 1.0;
const DURATION_S: f64 = 120.0;
const WARMUP_S: f64 = 20.0;
const RATE_PER_S: f64 = 300.0;
const MODES: [&str; 3] = ["none", "per_stage", "single_stage"];

/// `seda sim stages`.
pub const SCENARIO: Scenario = Scenario {
    name: "stages",
    about: "Per-stage against single-stage admission control (WC03 Figure 11)",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let kind = args
        .controller
        .as_deref()
        .unwrap_or(catalogue::RESPONSE_TIME_TUNED);
    let stage = |servers, mean_s| stage(servers, Dist::exp(mean_s));
    let mut text = format!(
        "stages: front (8 x 1 ms) -> 90% light (4 x 10 ms, 400/s) | 10% heavy (1 x 50 ms, 20/s); \
         open Poisson {RATE_PER_S}/s; p90 target {TARGET_S} s; controller {kind}; {WARMUP_S}-{DURATION_S} s; \
         seed {}\n{:<14} {:>13} {:>13} {:>10} {:>10} {:>10} {:>11}\n",
        args.seed,
        "mode",
        "refused_light",
        "refused_heavy",
        "p90_light",
        "p90_heavy",
        "p90_all",
        "goodput/s"
    );
    let mut runs = Vec::new();
    for mode in MODES {
        let (front, light, heavy) = match mode {
            "none" => (None, None, None),
            "per_stage" => (
                None,
                controller(kind, TARGET_S, &args.params)?,
                controller(kind, TARGET_S, &args.params)?,
            ),
            "single_stage" => (controller(kind, TARGET_S, &args.params)?, None, None),
            _ => bail!("unknown mode"),
        };
        let open = Population::Open {
            rate_per_s: RATE_PER_S,
            poisson: true,
            start_s: 0.0,
            end_s: f64::INFINITY,
        };
        let mut cfg = SimConfig::new(DURATION_S, stage(8, 0.001), vec![SourceConfig::new(open)]);
        cfg.seed = args.seed;
        cfg.warmup_s = WARMUP_S;
        cfg.target_s = TARGET_S;
        cfg.admission = front;
        cfg.entry_control = mode == "single_stage";
        cfg.next = vec![(0.9, 1), (0.1, 2)];
        cfg.more_stages = vec![
            StageNode {
                stage: stage(4, 0.01),
                admission: light,
                next: vec![],
            },
            StageNode {
                stage: stage(1, 0.05),
                admission: heavy,
                next: vec![],
            },
        ];
        let r = sim(cfg)?;
        let (f, l, h) = (&r.stages[0], &r.stages[1], &r.stages[2]);
        // A request refused at the front never learnt its type: split those 90/10.
        let front_refused = (f.rejected + f.expired) as f64;
        let refused = |s: &crate::StageStats, share: f64| {
            let offered = s.arrived as f64 + front_refused * share;
            if offered == 0.0 {
                0.0
            } else {
                ((s.rejected + s.expired) as f64 + front_refused * share) / offered
            }
        };
        let (rl, rh) = (refused(l, 0.9), refused(h, 0.1));
        let q = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        let t = &r.metrics.total;
        let goodput = t.good as f64 / (DURATION_S - WARMUP_S);
        text += &format!(
            "{:<14} {:>13.3} {:>13.3} {:>10} {:>10} {:>10} {:>11.1}\n",
            mode,
            rl,
            rh,
            q(l.exits.quantile(0.9)),
            q(h.exits.quantile(0.9)),
            q(t.quantile(0.9)),
            goodput
        );
        let summary = RunSummary {
            controller: Some(format!("{kind} ({mode})")),
            rejected_fraction: t.refused_fraction(),
            p90_admitted_s: t.quantile(0.9),
            goodput_per_s: goodput,
            ..RunSummary::new(TARGET_S)
        }
        .with("rejected_fraction_light", rl)
        .with("rejected_fraction_heavy", rh)
        .with("p90_light_s", l.exits.quantile(0.9))
        .with("p90_heavy_s", h.exits.quantile(0.9));
        runs.push(json!({ "summary": summary }));
    }
    let json = json!({
        "scenario": "stages",
        "seed": args.seed,
        "target_s": TARGET_S,
        "runs": Value::Array(runs),
    });
    Ok(Output { json, text })
}
