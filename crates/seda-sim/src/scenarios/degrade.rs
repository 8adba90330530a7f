//! `degrade`: service degradation (WC03 Section 3.4, Figures 12 and 13). The spike of `spike`
//! (3 users, then users offering 3 x capacity from 10 s to 60 s, p90 target 1 s) on a stage
//! whose handler can do less work: half of each service time scales with the quality knob, so
//! degrading can at most double the capacity, short of the 3x load. Compared: no control;
//! degradation alone; degradation that re-enables admission control at the lowest quality;
//! admission control alone.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use seda_control::{AdmissionController, catalogue};
use serde_json::{Value, json};

use super::common::{measure_capacity, selected, sim, spike_sources, stage};
use super::{Options, Output, Scenario};
use crate::summary::{RunSummary, Series, settle_time};
use crate::{Dist, SimConfig};

const TARGET_S: f64 = 1.0;
const ONSET_S: f64 = 10.0;
const END_S: f64 = 60.0;
const DEGRADABLE: f64 = 0.5;
const MODES: [&str; 4] = [
    "none",
    "degradation_only",
    "degradation+admission",
    catalogue::RESPONSE_TIME,
];

fn build(mode: &str) -> Result<Option<Box<dyn AdmissionController>>> {
    let (kind, reenable) = match mode {
        "none" => return Ok(None),
        "degradation_only" => (catalogue::DEGRADATION, 0.0),
        "degradation+admission" => (catalogue::DEGRADATION, 1.0),
        catalogue::RESPONSE_TIME => (catalogue::RESPONSE_TIME, -1.0),
        other => bail!("degrade compares: {}; got `{other}`", MODES.join(", ")),
    };
    let mut p = BTreeMap::new();
    if reenable >= 0.0 {
        p.insert("reenable_admission".to_string(), reenable);
    }
    catalogue::entry(kind)
        .and_then(|e| e.build_aimed(Duration::from_secs_f64(TARGET_S), &p))
        .map(Some)
        .map_err(|e| anyhow!(e))
}

/// `seda sim degrade`.
pub const SCENARIO: Scenario = Scenario {
    name: "degrade",
    about: "Service degradation against admission control (WC03 Figures 12 and 13)",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let modes = selected(&args.controller, &MODES);
    let stage = stage(4, Dist::exp(0.01));
    let capacity = measure_capacity(&stage, args.seed)?;
    let users = args.users.unwrap_or(3000).max(4);
    let think_s = f64::from(users) / (3.0 * capacity);
    let mut text = format!(
        "degrade: 4 servers x 10 ms exp service ({} of it scaled by the quality knob), measured \
         full-quality capacity {capacity:.1}/s; 3 -> {users} users at {ONSET_S} s offering 3 x C \
         until {END_S} s; p90 target {TARGET_S} s; seed {}\n\
         {:<22} {:>8} {:>9} {:>10} {:>8} {:>9} {:>12}\n",
        DEGRADABLE,
        args.seed,
        "mode",
        "p90_s",
        "settle_s",
        "goodput/s",
        "xC",
        "refused",
        "mean_quality"
    );
    let mut series = String::new();
    let mut runs = Vec::new();
    for mode in modes {
        let sources = spike_sources(3, users, think_s, ONSET_S, END_S);
        let mut cfg = SimConfig::new(END_S + 10.0, stage.clone(), sources);
        cfg.seed = args.seed;
        cfg.target_s = TARGET_S;
        cfg.degradable = DEGRADABLE;
        cfg.admission = build(mode)?;
        let r = sim(cfg)?;
        let m = &r.metrics;
        let spike = m.window(ONSET_S, END_S);
        let settle = settle_time(
            m.sliding_windows(1.0, ONSET_S, END_S),
            ONSET_S,
            END_S,
            TARGET_S,
        );
        let secs = END_S - ONSET_S;
        let goodput = spike.good as f64 / secs;
        let lo = (ONSET_S / m.bucket_s) as usize;
        let hi = ((END_S / m.bucket_s) as usize).min(m.buckets.len());
        let qs: Vec<f64> = m.buckets[lo.min(hi)..hi]
            .iter()
            .filter_map(|b| {
                b.state
                    .iter()
                    .find(|(k, _)| *k == "quality")
                    .map(|(_, q)| *q)
            })
            .collect();
        let mean_q = if qs.is_empty() {
            1.0
        } else {
            qs.iter().sum::<f64>() / qs.len() as f64
        };
        let p90 = spike.quantile(0.9);
        text += &format!(
            "{:<22} {:>8} {:>9} {:>10.1} {:>8.2} {:>9.3} {:>12.3}\n",
            mode,
            p90.map_or("-".into(), |v| format!("{v:.3}")),
            if settle < secs - 1.0 {
                format!("{settle:.1}")
            } else {
                "never".into()
            },
            goodput,
            goodput / capacity,
            spike.refused_fraction(),
            mean_q
        );
        let per = Series::of(m, 1.0);
        if args.series {
            series += &per.text(mode);
        }
        let summary = RunSummary {
            controller: Some(mode.to_string()),
            p90_admitted_s: p90,
            settle_time_s: Some(settle),
            goodput_per_s: goodput,
            capacity_per_s: Some(capacity),
            rejected_fraction: spike.refused_fraction(),
            ..RunSummary::new(TARGET_S)
        }
        .with("mean_quality", mean_q);
        runs.push(json!({ "summary": summary, "series": per }));
    }
    let json = json!({
        "scenario": "degrade",
        "seed": args.seed,
        "target_s": TARGET_S,
        "degradable": DEGRADABLE,
        "capacity_per_s": capacity,
        "runs": Value::Array(runs),
    });
    Ok(Output {
        json,
        text: text + &series,
    })
}
