//! `spike`: a stage of capacity C (servers x 10 ms exponential service); 3 users, then at 10 s
//! enough users to offer 3 x C until 60 s, then 3 again (the shape of WC03 Figure 10).
//! Target: p90 of 1 s.

use std::time::Instant;

use anyhow::{Result, bail};
use seda_control::catalogue;
use serde_json::{Value, json};

use super::common::{controller, measure_capacity, selected, sim, spike_sources, stage};
use super::{Options, Output, Scenario};
use crate::summary::{RunSummary, Series, fraction, per_s, settle_time, spike_table};
use crate::{Dist, SimConfig};

const TARGET_S: f64 = 1.0;
const ONSET_S: f64 = 10.0;
const END_S: f64 = 60.0;
const DURATION_S: f64 = 70.0;
const BASE_USERS: u32 = 3;

const ALL: [&str; 10] = [
    "none",
    catalogue::RESPONSE_TIME,
    catalogue::RESPONSE_TIME_TUNED,
    catalogue::RESPONSE_TIME_TUNED_TRIM,
    catalogue::SELECTIVE_DROPPER,
    catalogue::VEGAS,
    catalogue::GRADIENT2,
    catalogue::AIMD_LIMIT,
    catalogue::ENVOY_GRADIENT,
    catalogue::CODEL,
];

/// `seda sim spike`.
pub const SCENARIO: Scenario = Scenario {
    name: "spike",
    about: "The flash crowd of WC03 Figure 10",
    run,
};

fn run(args: &Options) -> Result<Output> {
    let servers = args.servers.unwrap_or(4).max(1);
    let users = args.users.unwrap_or(1000).max(BASE_USERS + 1);
    let service = match args.service.as_str() {
        "exp" => Dist::exp(0.01),
        "lognormal" => Dist::Lognormal {
            mean_s: 0.01,
            sigma: 1.5,
        },
        "pareto" => Dist::Pareto {
            mean_s: 0.01,
            alpha: 1.5,
        },
        "bimodal" => Dist::bimodal(0.1, Dist::exp(0.005), Dist::exp(0.055)),
        other => bail!("unknown service `{other}`; valid: exp, lognormal, pareto, bimodal"),
    };
    let stage = stage(servers, service);
    let capacity = measure_capacity(&stage, args.seed)?;
    // Users think long enough that all of them together offer 3 x capacity.
    let think_s = f64::from(users) / (3.0 * capacity);
    let mut runs = Vec::new();
    let mut rows = Vec::new();
    let mut text = String::new();
    for kind in selected(&args.controller, &ALL) {
        let sources = spike_sources(BASE_USERS, users, think_s, ONSET_S, END_S);
        let mut cfg = SimConfig::new(DURATION_S, stage.clone(), sources);
        cfg.seed = args.seed;
        cfg.target_s = TARGET_S;
        cfg.admission = controller(kind, TARGET_S, &args.params)?;
        let wall = Instant::now();
        let r = sim(cfg)?;
        let wall_s = wall.elapsed().as_secs_f64();
        let m = &r.metrics;
        let spike = m.window(ONSET_S, END_S);
        let secs = END_S - ONSET_S;
        let settle = settle_time(
            m.sliding_windows(1.0, ONSET_S, END_S),
            ONSET_S,
            END_S,
            TARGET_S,
        );
        let after = m.window((ONSET_S + settle).min(END_S - 1.0), END_S);
        let mut summary = RunSummary::new(TARGET_S);
        summary.controller = Some(kind.to_string());
        summary.p90_admitted_s = spike.quantile(0.9);
        summary.p90_last_5s_of_spike_s = m.window(END_S - 5.0, END_S).quantile(0.9);
        summary.settling(settle, secs, after.quantile(0.9));
        summary.rates(spike.good, spike.completed, secs, capacity);
        summary.rejected_fraction = spike.refused_fraction();
        summary.expired_fraction = Some(fraction(spike.expired, spike.offered));
        summary.offered_per_s = Some(per_s(spike.offered, secs));
        summary.events = Some(r.events);
        summary.wall_s = Some(wall_s);
        summary.events_per_s = Some(r.events_per_s());
        let series = Series::of(m, 1.0);
        if args.series {
            text += &series.text(kind);
        }
        runs.push(json!({ "summary": summary, "series": series }));
        rows.push((kind, summary));
    }
    let header = format!(
        "spike: {servers} servers x 10 ms {} service, measured capacity {capacity:.1}/s; \
         {BASE_USERS} -> {users} users at {ONSET_S} s (think {think_s:.3} s, offering 3 x C) \
         until {END_S} s; p90 target {TARGET_S} s; seed {}\n",
        args.service, args.seed,
    );
    let rows: Vec<(&str, &RunSummary)> = rows.iter().map(|(k, s)| (*k, s)).collect();
    let text = header + &spike_table(&rows) + &text;
    let json = json!({
        "scenario": "spike",
        "seed": args.seed,
        "servers": servers,
        "service": args.service,
        "users": users,
        "think_s": think_s,
        "onset_s": ONSET_S,
        "end_s": END_S,
        "target_s": TARGET_S,
        "capacity_per_s": capacity,
        "runs": Value::Array(runs),
    });
    Ok(Output { json, text })
}
