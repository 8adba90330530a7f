//! `goodput`: SSM04 Figures 5 to 7. Open Poisson load from 0.5 x to 2 x capacity on 3 servers
//! with 1.5 ms exponential service (about 2000/s, SSM's three bricks), clients giving up after
//! 60 ms; goodput is what completes within 60 ms. Four configurations: no control; the
//! client-side AIMD window alone; deadline dropping at the stage alone; both (SSM).

use anyhow::{Result, bail};
use seda_control::AimdWindowConfig;
use serde_json::json;

use super::common::{measure_capacity, sim, stage};
use super::{Options, Output, Scenario};
use crate::summary::{RunSummary, per_s};
use crate::{Dist, Population, SimConfig, SourceConfig};

const TIMEOUT_S: f64 = 0.06;
const DURATION_S: f64 = 40.0;
const WARMUP_S: f64 = 10.0;
const MODES: [(&str, bool, bool); 4] = [
    ("none", false, false),
    ("window", true, false),
    ("deadline", false, true),
    ("window+deadline", true, true),
];

/// `seda sim goodput`.
pub const SCENARIO: Scenario = Scenario {
    name: "goodput",
    about: "Goodput under a client timeout, with and without SSM's window and deadlines (SSM04 Figures 5-7)",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let modes: Vec<_> = match &args.controller {
        None => MODES.to_vec(),
        Some(c) => match MODES.iter().find(|m| m.0 == c.as_str()) {
            Some(m) => vec![*m],
            None => bail!("goodput compares modes: none, window, deadline, window+deadline"),
        },
    };
    let base = stage(3, Dist::exp(0.0015));
    let capacity = measure_capacity(&base, args.seed)?;
    let loads = [0.5, 0.75, 0.9, 0.95, 1.0, 1.25, 1.5, 1.75, 2.0];
    let mut table = vec![vec![0.0; modes.len()]; loads.len()];
    let mut points = Vec::new();
    for (i, &load) in loads.iter().enumerate() {
        let mut per = serde_json::Map::new();
        for (j, &(name, window, deadline)) in modes.iter().enumerate() {
            let mut stage = base.clone();
            stage.drop_expired = deadline;
            let open = Population::Open {
                rate_per_s: load * capacity,
                poisson: true,
                start_s: 0.0,
                end_s: f64::INFINITY,
            };
            let mut src = SourceConfig::new(open);
            src.timeout_s = Some(TIMEOUT_S);
            if window {
                src.window = Some(AimdWindowConfig {
                    timeout: std::time::Duration::from_secs_f64(TIMEOUT_S),
                    ..AimdWindowConfig::default()
                });
            }
            let mut cfg = SimConfig::new(DURATION_S, stage, vec![src]);
            cfg.seed = args.seed;
            cfg.warmup_s = WARMUP_S;
            cfg.bucket_s = 1.0;
            cfg.target_s = TIMEOUT_S;
            let r = sim(cfg)?;
            let t = &r.metrics.total;
            let secs = DURATION_S - WARMUP_S;
            let goodput = t.good as f64 / secs;
            table[i][j] = goodput;
            per.insert(
                name.to_string(),
                RunSummary {
                    controller: Some(name.to_string()),
                    goodput_per_s: goodput,
                    throughput_per_s: Some(per_s(t.completed, secs)),
                    offered_per_s: Some(per_s(t.offered, secs)),
                    rejected_fraction: t.refused_fraction(),
                    timed_out_per_s: Some(per_s(t.timed_out, secs)),
                    capacity_per_s: Some(capacity),
                    ..RunSummary::new(TIMEOUT_S)
                }
                .to_json(),
            );
        }
        points.push(json!({ "load_x_capacity": load, "runs": per }));
    }
    // Peak goodput of the uncontrolled system over the sweep (SSM04 "discovers" it by hand).
    let none_col = modes.iter().position(|m| m.0 == "none");
    let peak = match none_col {
        Some(c) => table.iter().map(|r| r[c]).fold(0.0, f64::max),
        None => capacity,
    };
    let mut text = format!(
        "goodput: 3 servers x 1.5 ms exp service (measured capacity {capacity:.0}/s), open Poisson \
         load, client timeout {} ms, goodput = completed within the timeout, {}-{} s; seed {}\n\
         peak goodput without control: {peak:.0}/s\n{:>6}",
        TIMEOUT_S * 1e3,
        WARMUP_S,
        DURATION_S,
        args.seed,
        "load"
    );
    for m in &modes {
        text += &format!(" {:>22}", format!("{} (x peak)", m.0));
    }
    text += "\n";
    for (i, load) in loads.iter().enumerate() {
        text += &format!("{:>5.2}x", load);
        for g in &table[i] {
            text += &format!(" {:>22}", format!("{g:.0} ({:.2})", g / peak));
        }
        text += "\n";
    }
    let json = json!({
        "scenario": "goodput",
        "seed": args.seed,
        "timeout_s": TIMEOUT_S,
        "capacity_per_s": capacity,
        "peak_goodput_per_s": peak,
        "points": points,
    });
    Ok(Output { json, text })
}
