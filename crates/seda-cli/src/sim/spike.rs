//! `spike`: a stage of capacity C (servers x 10 ms exponential service); 3 users, then at 10 s
//! enough users to offer 3 x C until 60 s, then 3 again (the shape of 002 Figure 10).
//! Target: p90 of 1 s.

use std::time::Instant;

use anyhow::{Result, bail};
use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig};
use serde_json::{Value, json};

use super::common::{controller, measure_capacity, selected, series_json, series_text, sim};
use super::{Output, SimArgs};

const TARGET_S: f64 = 1.0;
const ONSET_S: f64 = 10.0;
const END_S: f64 = 60.0;
const DURATION_S: f64 = 70.0;
const BASE_USERS: u32 = 3;

const ALL: [&str; 10] = [
    "none",
    "response_time",
    "response_time_tuned",
    "response_time_tuned_trim",
    "selective_dropper",
    "vegas",
    "gradient2",
    "aimd_limit",
    "envoy_gradient",
    "codel",
];

pub fn run(args: &SimArgs) -> Result<Output> {
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
    let stage = StageConfig {
        servers,
        service,
        queue_cap: None,
        drop_expired: false,
    };
    let capacity = measure_capacity(&stage, args.seed)?;
    // Users think long enough that all of them together offer 3 x capacity.
    let think_s = f64::from(users) / (3.0 * capacity);
    let mut runs = Vec::new();
    let mut rows = Vec::new();
    let mut text = String::new();
    for kind in selected(&args.controller, &ALL) {
        let closed = |n, start_s, end_s| {
            SourceConfig::new(Population::Closed {
                users: n,
                think: Dist::exp(think_s),
                reject_wait: None,
                start_s,
                end_s,
            })
        };
        let sources = vec![
            closed(BASE_USERS, 0.0, f64::INFINITY),
            closed(users - BASE_USERS, ONSET_S, END_S),
        ];
        let mut cfg = SimConfig::new(DURATION_S, stage.clone(), sources);
        cfg.seed = args.seed;
        cfg.target_s = TARGET_S;
        cfg.admission = controller(kind, TARGET_S, &args.params)?;
        let wall = Instant::now();
        let r = sim(cfg)?;
        let wall_s = wall.elapsed().as_secs_f64();
        let m = &r.metrics;
        let spike = m.window(ONSET_S, END_S);
        let settle = m.settle_time(ONSET_S, END_S, 1.0, 0.9, 1.2 * TARGET_S);
        let after = m.window((ONSET_S + settle).min(END_S - 1.0), END_S);
        let last5 = m.window(END_S - 5.0, END_S);
        let secs = END_S - ONSET_S;
        let goodput = spike.good as f64 / secs;
        let summary = json!({
            "controller": kind,
            "target_s": TARGET_S,
            "p90_admitted_s": spike.quantile(0.9),
            "p90_admitted_after_settle_s": after.quantile(0.9),
            "p90_last_5s_of_spike_s": last5.quantile(0.9),
            "settle_time_s": settle,
            "settled": settle < secs - 1.0,
            "goodput_per_s": goodput,
            "throughput_per_s": spike.completed as f64 / secs,
            "capacity_per_s": capacity,
            "goodput_fraction_of_capacity": goodput / capacity,
            "rejected_fraction": spike.refused_fraction(),
            "expired_fraction": if spike.offered == 0 { 0.0 } else { spike.expired as f64 / spike.offered as f64 },
            "offered_per_s": spike.offered as f64 / secs,
            "events": r.events,
            "wall_s": wall_s,
            "events_per_s": r.events_per_s(),
        });
        let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.3}"));
        rows.push(format!(
            "{:<24} {:>9} {:>11} {:>9} {:>9} {:>9.1} {:>7.2} {:>9.3} {:>10.2e}\n",
            kind,
            f(spike.quantile(0.9)),
            f(after.quantile(0.9)),
            if settle < secs - 1.0 {
                format!("{settle:.1}")
            } else {
                "never".into()
            },
            f(last5.quantile(0.9)),
            goodput,
            goodput / capacity,
            spike.refused_fraction(),
            r.events_per_s(),
        ));
        if args.series {
            text += &series_text(kind, m, 1.0);
        }
        runs.push(json!({ "summary": summary, "series": series_json(m, 1.0) }));
    }
    let header = format!(
        "spike: {servers} servers x 10 ms {} service, measured capacity {capacity:.1}/s; \
         {BASE_USERS} -> {users} users at {ONSET_S} s (think {think_s:.3} s, offering 3 x C) \
         until {END_S} s; p90 target {TARGET_S} s; seed {}\n\
         {:<24} {:>9} {:>11} {:>9} {:>9} {:>9} {:>7} {:>9} {:>10}\n",
        args.service,
        args.seed,
        "controller",
        "p90_s",
        "p90_settled",
        "settle_s",
        "p90_last5",
        "goodput/s",
        "xC",
        "refused",
        "events/s",
    );
    let text = header + &rows.concat() + &text;
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
