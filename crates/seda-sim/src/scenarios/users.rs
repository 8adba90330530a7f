//! `users`: closed users from 2 to 1024 (WC03 Figure 8), each thinking 20 ms and waiting 5 s
//! after a rejection, on a stage of one server with 50 ms exponential service (20/s);
//! p90 target 10 s; with and without the response-time controller.

use anyhow::Result;
use seda_control::catalogue;
use serde_json::{Value, json};

use super::common::{controller, measure_capacity, selected, sim, stage};
use super::{Options, Output, Scenario};
use crate::summary::{RunSummary, per_s};
use crate::{Dist, Population, SimConfig, SourceConfig};

const TARGET_S: f64 = 10.0;
const DURATION_S: f64 = 600.0;
const WARMUP_S: f64 = 100.0;
const ALL: [&str; 4] = [
    "none",
    catalogue::RESPONSE_TIME,
    catalogue::RESPONSE_TIME_TUNED,
    catalogue::RESPONSE_TIME_TUNED_TRIM,
];

/// `seda sim users`.
pub const SCENARIO: Scenario = Scenario {
    name: "users",
    about: "Closed users from 2 to 1024 (WC03 Figure 8)",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let stage = stage(1, Dist::exp(0.05));
    let capacity = measure_capacity(&stage, args.seed)?;
    let kinds = selected(&args.controller, &ALL);
    let mut text = format!(
        "users: 1 server x 50 ms exp service (measured capacity {capacity:.1}/s), closed users \
         (think 20 ms, 5 s wait after a rejection), p90 target {TARGET_S} s, {DURATION_S} s runs \
         after {WARMUP_S} s warm-up, seed {}\n{:>6}",
        args.seed, "users"
    );
    for k in &kinds {
        text += &format!(" {:>31}", format!("{k}: p90_s/refused"));
    }
    text += "\n";
    let mut points = Vec::new();
    for users in (1..=10).map(|i| 1u32 << i) {
        let mut row = format!("{users:>6}");
        let mut per = serde_json::Map::new();
        for kind in &kinds {
            let pop = Population::Closed {
                users,
                think: Dist::exp(0.02),
                reject_wait: Some(Dist::Deterministic { mean_s: 5.0 }),
                start_s: 0.0,
                end_s: f64::INFINITY,
            };
            let mut cfg = SimConfig::new(
                DURATION_S + WARMUP_S,
                stage.clone(),
                vec![SourceConfig::new(pop)],
            );
            cfg.seed = args.seed;
            cfg.warmup_s = WARMUP_S;
            cfg.bucket_s = 10.0;
            cfg.target_s = TARGET_S;
            cfg.admission = controller(kind, TARGET_S, &args.params)?;
            let r = sim(cfg)?;
            let t = &r.metrics.total;
            let p90 = t.quantile(0.9);
            row += &format!(
                " {:>31}",
                format!(
                    "{}/{:.3}",
                    p90.map_or("-".into(), |v| format!("{v:.2}")),
                    t.refused_fraction()
                )
            );
            per.insert(
                (*kind).to_string(),
                RunSummary {
                    controller: Some((*kind).to_string()),
                    p90_admitted_s: p90,
                    rejected_fraction: t.refused_fraction(),
                    throughput_per_s: Some(per_s(t.completed, DURATION_S)),
                    goodput_per_s: per_s(t.good, DURATION_S),
                    capacity_per_s: Some(capacity),
                    ..RunSummary::new(TARGET_S)
                }
                .to_json(),
            );
        }
        text += &row;
        text += "\n";
        points.push(json!({ "users": users, "runs": Value::Object(per) }));
    }
    let json = json!({
        "scenario": "users",
        "seed": args.seed,
        "target_s": TARGET_S,
        "capacity_per_s": capacity,
        "points": points,
    });
    Ok(Output { json, text })
}
