//! `follow-target` (FAIR07 Figure 5-7, Section 5.2.1): the operator changes the p90 target
//! while the service runs, 1 s, then 0.5 s, then 1.2 s, and global control moves the measured
//! p90 after it. The clients are the thesis's partly-open ones, 250 of them as in the thesis,
//! each sending 1 s (exponential think) after a reply, or 1.5 s after its last send without
//! one; the plant is `dynamic-groups`': 50 ms exponential service on an emulated backend serving
//! 64 requests at once ([`crate::levers::Contention`]). Global control sets a P-controlled
//! pool's throughput target; the thesis runs this experiment unloaded, so nothing is rejected.
//!
//! Three settings differ from `dynamic-groups`, each because this experiment needs the p90 to
//! *rise* to a loosened target, which only fewer threads can do:
//! - global control's arrival floor is off: these clients wait for replies, so arrivals follow
//!   throughput, and a target never below arrivals never shrinks the pool;
//! - no selective dropper: at 0.8 x the first target it would cap the p90 under a looser one
//!   (on the real runtime it keeps its first threshold when the target changes);
//! - one thread per control period: a period's p90 measures queueing begun in the one before,
//!   so larger steps overshoot (at the default 4 the periods' p90 swung between 0.1 s and 3 s).
//!
//! The last target is 1.2 s, not 1.5 s: at a p90 of 1.5 s a tenth of the requests outlast the
//! clients' 1.5 s expected time, they send again, the offered load grows, and the p90 no longer
//! holds (2.1-2.8 x the target on three of seeds 1-6, 0.4-0.5 x on two).

use anyhow::Result;
use seda_control::selftune::{GlobalConfig, GlobalTargets, Law};
use seda_control::sizer::{SelfTuningSizer, SizerSettings};
use serde_json::json;
use std::time::Duration;

use super::common::{period_series, period_table, sim, stage};
use super::dynamic_groups::{backend_levers, partly_open};
use super::{Options, Output, Scenario};
use crate::levers::{PoolControl, TargetPlan};
use crate::summary::{RunSummary, fraction, per_s};
use crate::{Dist, SimConfig, SimResult};

/// `seda sim follow-target`.
pub const SCENARIO: Scenario = Scenario {
    name: "follow-target",
    about: "The p90 target changed at run time (1 s, 0.5 s, 1.2 s): global control and a self-tuning pool move the p90 after it (FAIR07 Figure 5-7)",
    run,
};

/// The p90 targets and when each takes over, seconds.
pub const TARGETS: [(f64, f64); 3] = [(0.0, 1.0), (40.0, 0.5), (80.0, 1.2)];
/// Run length.
pub const DURATION_S: f64 = 120.0;
/// Partly-open clients, all there from the start (the thesis's 250).
pub const CLIENTS: u32 = 250;
const MAX_THREADS: u32 = 128;
/// Threads the pool may add or remove per control period.
pub const MAX_STEP: usize = 1;

/// Runs the scenario once.
pub fn run_steps(seed: u64) -> Result<SimResult> {
    let clients = partly_open(CLIENTS, 0.0);
    let mut cfg = SimConfig::new(DURATION_S, stage(4, Dist::exp(0.05)), vec![clients]);
    cfg.seed = seed;
    cfg.bucket_s = 1.0;
    cfg.target_s = TARGETS[0].1;
    let mut global = GlobalConfig::new(Duration::from_secs_f64(TARGETS[0].1));
    global.arrival_floor = false;
    let plan = TargetPlan::GlobalSteps(GlobalTargets::new(global), TARGETS.to_vec());
    let mut settings = SizerSettings::new(1, MAX_THREADS as usize);
    settings.law = Law::P;
    settings.max_step = Some(MAX_STEP);
    let pool = PoolControl {
        sizer: Box::new(SelfTuningSizer::new(&settings)),
        plan: Some(plan),
        max_servers: MAX_THREADS,
    };
    cfg.levers = backend_levers(pool);
    sim(cfg)
}

/// One target phase's figures: the p90 over its second half (once the pool has had time to
/// follow) against its target, and its requests measured against its target.
pub fn phase_summary(r: &SimResult, phase: usize) -> RunSummary {
    let (from_s, to_s, target_s) = phase_span(phase);
    let all = r.metrics.window(from_s, to_s);
    let settled = r.metrics.window((from_s + to_s) / 2.0, to_s);
    let good = all.response.count_at_most(target_s);
    let mut s = RunSummary::new(target_s);
    s.controller = Some("p".into());
    s.throughput_per_s = Some(per_s(all.completed, to_s - from_s));
    s.offered_per_s = Some(per_s(all.offered, to_s - from_s));
    s.goodput_per_s = per_s(good, to_s - from_s);
    s.rejected_fraction = fraction(all.rejected + all.expired, all.offered);
    s.p90_completed_s = settled.quantile(0.9);
    s.insert("from_s", from_s);
    s.insert("to_s", to_s);
    s.insert(
        "p90_over_target",
        settled.quantile(0.9).map_or(f64::NAN, |p| p / target_s),
    );
    s.insert("within_target_of_all", fraction(good, all.offered));
    s.insert("within_target_of_processed", fraction(good, all.completed));
    s
}

/// The whole run's figures, each request measured against the target in force when it ended.
pub fn summary(r: &SimResult) -> RunSummary {
    let t = &r.metrics.total;
    let good: u64 = (0..TARGETS.len())
        .map(|i| {
            let (from_s, to_s, target_s) = phase_span(i);
            r.metrics
                .window(from_s, to_s)
                .response
                .count_at_most(target_s)
        })
        .sum();
    // `target_s` is the first target; the figures below use each phase's own.
    let mut s = RunSummary::new(TARGETS[0].1);
    s.controller = Some("p".into());
    s.throughput_per_s = Some(per_s(t.completed, DURATION_S));
    s.offered_per_s = Some(per_s(t.offered, DURATION_S));
    s.goodput_per_s = per_s(good, DURATION_S);
    s.rejected_fraction = fraction(t.rejected + t.expired, t.offered);
    s.p90_completed_s = t.quantile(0.9);
    s.insert("within_target_of_all", fraction(good, t.offered));
    s.insert("within_target_of_processed", fraction(good, t.completed));
    s.insert(
        "p90_over_target",
        (0..TARGETS.len())
            .map(|i| phase_summary(r, i).extra_f64("p90_over_target"))
            .collect::<Vec<_>>(),
    );
    s
}

/// Phase `i`'s start, end and target, seconds.
fn phase_span(i: usize) -> (f64, f64, f64) {
    let (from_s, target_s) = TARGETS[i];
    let to_s = TARGETS.get(i + 1).map_or(DURATION_S, |t| t.0);
    (from_s, to_s, target_s)
}

fn run(args: &Options) -> Result<Output> {
    let r = run_steps(args.seed)?;
    let s = summary(&r);
    let mut text = format!(
        "follow-target: {CLIENTS} partly-open clients (think 1 s, patience 1.5 s); emulated \
         backend of 64, 50 ms service; p90 target from (s, target s) {TARGETS:?}; {DURATION_S} s; \
         seed {}\n{:>8} {:>8} {:>14} {:>8} {:>8} {:>8} {:>9}\n",
        args.seed,
        "from_s",
        "target_s",
        "p90_settled_s",
        "x_target",
        "of_all",
        "of_proc",
        "rejected"
    );
    let mut phases = Vec::new();
    for i in 0..TARGETS.len() {
        let p = phase_summary(&r, i);
        let g = |k: &str| p.extra_f64(k).unwrap_or(f64::NAN);
        text += &format!(
            "{:>8.0} {:>8.2} {:>14.3} {:>8.2} {:>8.3} {:>8.3} {:>9.3}\n",
            g("from_s"),
            p.target_s,
            p.p90_completed_s.unwrap_or(f64::NAN),
            g("p90_over_target"),
            g("within_target_of_all"),
            g("within_target_of_processed"),
            p.rejected_fraction
        );
        phases.push(p.to_json());
    }
    text += &format!(
        "whole run: within target {:.3} of all, {:.3} of processed, rejected {:.3} \
         (p90_settled_s: the p90 over each phase's second half)\n",
        s.extra_f64("within_target_of_all").unwrap_or(f64::NAN),
        s.extra_f64("within_target_of_processed")
            .unwrap_or(f64::NAN),
        s.rejected_fraction
    );
    if args.series {
        text += &period_table(&r.periods);
    }
    let series = period_series(&r.periods);
    Ok(Output {
        json: json!({
            "scenario": "follow-target",
            "seed": args.seed,
            "targets": TARGETS,
            "summary": s.to_json(),
            "phases": phases,
            "periods": series,
        }),
        text,
    })
}
