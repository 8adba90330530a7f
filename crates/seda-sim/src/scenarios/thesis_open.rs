//! `thesis-open` (FAIR07 Section 5.3, Tables 1 and 2): open clients, 200 then 400 from the
//! two-thirds point, each sending every 200-600 ms (Poisson at clients / 0.4 s: 500/s then
//! 1000/s), p90 target 100 ms, early selective dropper at 0.8 x target. The self-tuning design
//! (global control's throughput target from the p90 target, a P-controlled pool, the dropper at
//! the first stage) against SEDA's admission control (the p90 controller) with a well-sized
//! pool (16 threads: about 60% busy at the first load) and an over-allocated one (128), its
//! rate warm-started at the first load's 500/s.
//!
//! The plant is emulated ([`crate::levers::Contention`]): 20 ms exponential service that slows
//! past 32 busy threads (slope 0.1: peak about 1600/s at 32 threads), so too many threads cost
//! throughput, as the thesis's over-allocated pool did on its machine.

use anyhow::{Result, bail};
use seda_control::SelectiveDropper;
use seda_control::catalogue;
use seda_control::selftune::{GlobalConfig, GlobalTargets};
use seda_control::sizer::{SelfTuningSizer, SizerSettings};
use serde_json::json;
use std::time::Duration;

use super::common::{controller, selected, sim, stage};
use super::{Options, Output, Scenario};
use crate::levers::{Contention, Levers, PoolControl, TargetPlan};
use crate::summary::{RunSummary, fraction, per_s};
use crate::{Dist, Population, SimConfig, SimResult, SourceConfig};

/// `seda sim thesis-open`.
pub const SCENARIO: Scenario = Scenario {
    name: "thesis-open",
    about: "Open clients 200 then 400, p90 target 100 ms: self-tuning pools and global control vs SEDA's admission control with a well-sized and an over-allocated pool (FAIR07 Tables 1 and 2)",
    run,
};

/// The variants.
pub const VARIANTS: [&str; 3] = ["self_tuning", "seda_well_sized", "seda_over_allocated"];
/// The p90 target.
pub const TARGET_S: f64 = 0.1;
/// Run length; the second group joins at two-thirds.
pub const DURATION_S: f64 = 90.0;
const MEAN_S: f64 = 0.02;
const PLANT: Contention = Contention {
    knee: 32.0,
    slope: 0.1,
};
const PERIOD_S: f64 = 2.0;
const MAX_THREADS: u32 = 128;
const WELL_SIZED: u32 = 16;

/// Runs one variant.
pub fn run_variant(name: &str, seed: u64) -> Result<SimResult> {
    let open = |start_s: f64| {
        SourceConfig::new(Population::Open {
            rate_per_s: 200.0 / 0.4,
            poisson: true,
            start_s,
            end_s: f64::INFINITY,
        })
    };
    let servers = match name {
        "self_tuning" | "seda_well_sized" => WELL_SIZED,
        "seda_over_allocated" => MAX_THREADS,
        _ => bail!("thesis-open compares: {}", VARIANTS.join(", ")),
    };
    let mut cfg = SimConfig::new(
        DURATION_S,
        stage(servers, Dist::exp(MEAN_S)),
        vec![open(0.0), open(DURATION_S * 2.0 / 3.0)],
    );
    cfg.seed = seed;
    cfg.bucket_s = 1.0;
    cfg.target_s = TARGET_S;
    cfg.levers = Levers::new();
    cfg.levers.contention = Some(PLANT);
    cfg.levers.period_s = PERIOD_S;
    if name == "self_tuning" {
        let (dropper, pool) = self_tuning(TARGET_S, MAX_THREADS);
        cfg.admission = Some(dropper);
        cfg.levers.pool = Some(pool);
    } else {
        // Warm-started at the first load's rate: from WC03's 100/s its additive increase would
        // take minutes to reach 500/s, and the comparison would be with a cold start.
        let warm = [("initial_rate_per_s".to_string(), 200.0 / 0.4)];
        cfg.admission = controller(catalogue::RESPONSE_TIME, TARGET_S, &warm)?;
    }
    sim(cfg)
}

/// Table 1 and 2's figures of a run.
pub fn summary(name: &str, r: &SimResult) -> RunSummary {
    let t = &r.metrics.total;
    let lost = t.rejected + t.expired;
    let mut s = RunSummary::new(TARGET_S);
    s.controller = Some(name.to_string());
    s.rates(t.good, t.completed, DURATION_S, 1.0 / MEAN_S * PLANT.knee);
    s.offered_per_s = Some(per_s(t.offered, DURATION_S));
    s.rejected_fraction = fraction(lost, t.offered);
    s.p90_completed_s = t.quantile(0.9);
    s.insert("incoming", t.offered);
    s.insert("within_target", t.good);
    s.insert("processed", t.completed);
    s.insert("rejected", lost);
    s.insert("within_target_of_all", fraction(t.good, t.offered));
    s.insert("within_target_of_processed", fraction(t.good, t.completed));
    let peak = r.periods.iter().map(|p| p.servers).max();
    if let Some(n) = peak {
        s.insert("threads_max", n);
    }
    s
}

fn run(args: &Options) -> Result<Output> {
    let names = selected(&args.controller, &VARIANTS);
    let mut text = format!(
        "thesis-open: open Poisson 500/s (200 clients every 200-600 ms), 1000/s from {:.0} s \
         (400 clients); emulated plant 20 ms exp service slowing past 32 busy threads; p90 target \
         {} ms; {DURATION_S} s; seed {}\n{:>20} {:>9} {:>13} {:>10} {:>9} {:>10} {:>9} {:>10} {:>8} {:>8}\n",
        DURATION_S * 2.0 / 3.0,
        TARGET_S * 1e3,
        args.seed,
        "variant",
        "incoming",
        "within_target",
        "processed",
        "rejected",
        "of_proc",
        "of_all",
        "rejected%",
        "p90_s",
        "threads"
    );
    let mut runs = serde_json::Map::new();
    for name in names {
        let r = run_variant(name, args.seed)?;
        let s = summary(name, &r);
        let g = |k: &str| s.extra_f64(k).unwrap_or(0.0);
        text += &format!(
            "{:>20} {:>9.0} {:>13.0} {:>10.0} {:>9.0} {:>10.3} {:>9.3} {:>10.3} {:>8.3} {:>8}\n",
            name,
            g("incoming"),
            g("within_target"),
            g("processed"),
            g("rejected"),
            g("within_target_of_processed"),
            g("within_target_of_all"),
            s.rejected_fraction,
            s.p90_completed_s.unwrap_or(f64::NAN),
            s.extra_f64("threads_max")
                .map_or("-".into(), |n| format!("{n:.0}"))
        );
        let series: Vec<_> = r
            .periods
            .iter()
            .map(|p| {
                json!([
                    p.end_s,
                    p.servers,
                    p.throughput_per_s,
                    p.target_per_s,
                    p.p90_s
                ])
            })
            .collect();
        runs.insert(
            name.to_string(),
            json!({ "summary": s.to_json(), "periods": series }),
        );
    }
    text += "of_proc: share of processed requests within the target (Table 2); of_all: share of \
             all incoming requests within it; rejected: refused or dropped\n";
    let json = json!({
        "scenario": "thesis-open",
        "seed": args.seed,
        "target_s": TARGET_S,
        "duration_s": DURATION_S,
        "runs": runs,
    });
    Ok(Output { json, text })
}

/// The thesis's self-tuning design for a p90 `target_s`: the selective dropper at 0.8 x the
/// target in front, and a P-controlled pool (up to `max_threads`) aimed by global control.
pub(super) fn self_tuning(
    target_s: f64,
    max_threads: u32,
) -> (Box<dyn seda_control::AdmissionController>, PoolControl) {
    let dropper = SelectiveDropper::new(Duration::from_secs_f64(0.8 * target_s));
    let plan = TargetPlan::Global(GlobalTargets::new(GlobalConfig::new(
        Duration::from_secs_f64(target_s),
    )));
    // P control, the pool's other settings at their defaults.
    let settings = SizerSettings::new(1, max_threads as usize);
    let control = PoolControl {
        sizer: Box::new(SelfTuningSizer::new(&settings)),
        plan: Some(plan),
        max_servers: max_threads,
    };
    (Box::new(dropper), control)
}
