//! `dynamic-groups` (FAIR07 Figures 5-8 to 5-10): four groups of the thesis's partly-open clients
//! (100, 150, 100 and 50) join at 0, 30, 60 and 90 s of a 120 s run; each client sends its next
//! request 1 s (exponential think) after a reply, or when 1.5 s have passed without one (FAIR07's
//! expected time), so the offered load grows when the server falls behind. p90 target 1 s:
//! global control sets the throughput target, a P-controlled pool follows it, the early
//! selective dropper (0.8 x target) is the first stage's admission. The plant is emulated: 50 ms
//! exponential service on a backend serving 64 requests at once ([`crate::levers::Contention`]).

use anyhow::Result;
use serde_json::json;

use super::common::{period_series, period_table, sim, stage};
use super::{Options, Output, Scenario};
use crate::levers::{Contention, Levers, PoolControl};
use crate::summary::{RunSummary, fraction, per_s};
use crate::{Dist, Population, SimConfig, SimResult, SourceConfig};

/// `seda sim dynamic-groups`.
pub const SCENARIO: Scenario = Scenario {
    name: "dynamic-groups",
    about: "Four groups of partly-open clients join over time, p90 target 1 s: self-tuning pool and global control (FAIR07 Figures 5-8 to 5-10)",
    run,
};

/// The p90 target.
pub const TARGET_S: f64 = 1.0;
/// Run length.
pub const DURATION_S: f64 = 120.0;
/// The groups: clients and when they join.
pub const GROUPS: [(u32, f64); 4] = [(100, 0.0), (150, 30.0), (100, 60.0), (50, 90.0)];

/// Runs the scenario once.
pub fn run_groups(seed: u64) -> Result<SimResult> {
    let sources = GROUPS
        .iter()
        .map(|&(clients, start_s)| partly_open(clients, start_s))
        .collect();
    let mut cfg = SimConfig::new(DURATION_S, stage(4, Dist::exp(0.05)), sources);
    cfg.seed = seed;
    cfg.bucket_s = 1.0;
    cfg.target_s = TARGET_S;
    let (dropper, pool) = super::thesis_open::self_tuning(TARGET_S, 128);
    cfg.admission = Some(dropper);
    cfg.levers = backend_levers(pool);
    sim(cfg)
}

/// `clients` of the thesis's partly-open clients joining at `start_s`: each sends 1 s
/// (exponential think) after a reply, or 1.5 s (FAIR07's expected time) after its last send
/// without one. `follow-target` uses them too.
pub(super) fn partly_open(clients: u32, start_s: f64) -> SourceConfig {
    SourceConfig::new(Population::Eager {
        clients,
        patience: Dist::Deterministic { mean_s: 1.5 },
        think: Dist::exp(1.0),
        start_s,
        end_s: f64::INFINITY,
    })
}

/// The levers of the emulated plant `follow-target` shares: the backend serving 64 requests at
/// once, and `pool` sized every 2 s.
pub(super) fn backend_levers(pool: PoolControl) -> Levers {
    Levers {
        contention: Some(Contention::backend(64)),
        pool: Some(pool),
        period_s: 2.0,
        ..Levers::new()
    }
}

/// The run's figures.
pub fn summary(r: &SimResult) -> RunSummary {
    let t = &r.metrics.total;
    let mut s = RunSummary::new(TARGET_S);
    s.controller = Some("p".into());
    s.throughput_per_s = Some(per_s(t.completed, DURATION_S));
    s.offered_per_s = Some(per_s(t.offered, DURATION_S));
    s.goodput_per_s = per_s(t.good, DURATION_S);
    s.rejected_fraction = fraction(t.rejected + t.expired, t.offered);
    s.p90_completed_s = t.quantile(0.9);
    s.insert(
        "p90_x_target",
        t.quantile(0.9).map_or(f64::NAN, |p| p / TARGET_S),
    );
    s.insert("within_target_of_all", fraction(t.good, t.offered));
    s.insert("within_target_of_processed", fraction(t.good, t.completed));
    s
}

fn run(args: &Options) -> Result<Output> {
    let r = run_groups(args.seed)?;
    let s = summary(&r);
    let mut text = format!(
        "dynamic-groups: partly-open clients (think 1 s, patience 1.5 s) in groups {:?} \
         (clients, join s); emulated backend of 64, 50 ms service; p90 target {TARGET_S} s; seed {}\n\
         p90 {:.3} s ({:.2} x target), within target {:.3} of all, rejected {:.3}, offered {:.0}/s\n",
        GROUPS,
        args.seed,
        s.p90_completed_s.unwrap_or(f64::NAN),
        s.extra_f64("p90_x_target").unwrap_or(f64::NAN),
        s.extra_f64("within_target_of_all").unwrap_or(f64::NAN),
        s.rejected_fraction,
        s.offered_per_s.unwrap_or(0.0),
    );
    text += &period_table(&r.periods);
    let series = period_series(&r.periods);
    Ok(Output {
        json: json!({
            "scenario": "dynamic-groups",
            "seed": args.seed,
            "summary": s.to_json(),
            "periods": series,
        }),
        text,
    })
}
