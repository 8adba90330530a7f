//! The `criticality` scenario's claims, checked at issue 53's thresholds, and its report.

use std::fmt::Write;

use seda_load::Report;
use seda_load::record::ClassStats;
use serde_json::{Map, json};

use super::mix::CLASSES;
use super::{HOLD_MS, OVERLOAD, Sample, TARGET_MS, WARMUP_S, WORKERS, capacity_per_s};
use crate::criticality_stats::CriticalityStats;
use crate::outcome::{Check, Outcome};

/// The goal for the critical requests' success.
const CRITICAL_SUCCESS_GOAL: f64 = 0.999;
/// The least share of the refusals the sheddable levels must take: critical is a fifth of the
/// traffic, so a gate cutting blindly would give it a fifth of the refusals.
const SHEDDABLE_SHARE_GOAL: f64 = 0.99;

/// A class's requests that ended (answered, refused, timed out or failed), and of those the
/// ones answered below 500.
fn ended_ok(c: &ClassStats) -> (u64, u64) {
    let k = &c.counts;
    (
        k.completed + k.rejected + k.timeouts + k.errors,
        k.completed,
    )
}

fn success(c: &ClassStats) -> f64 {
    let (ended, ok) = ended_ok(c);
    if ended == 0 {
        0.0
    } else {
        ok as f64 / ended as f64
    }
}

fn class<'a>(report: &'a Report, name: &str) -> Option<&'a ClassStats> {
    report.classes.iter().find(|c| c.name == name)
}

/// The levels in flight against the global limiter, in every sample.
fn global_limit(samples: &[Sample]) -> Check {
    // Every sample read the gate under its lock: the levels' counts and the global limiter's
    // own count are of the same instant.
    let apart = samples
        .iter()
        .filter(|x| x.levels_in_flight > x.global_in_flight)
        .count();
    let over = samples
        .iter()
        .filter(|x| x.levels_in_flight > x.bound)
        .count();
    let peak = samples
        .iter()
        .map(|x| x.levels_in_flight)
        .fold(0.0, f64::max);
    let peak_share = samples
        .iter()
        .filter(|x| x.bound > 0.0)
        .map(|x| x.levels_in_flight / x.bound)
        .fold(0.0, f64::max);
    Check::new(
        "no partition ever exceeds the global limit: in every sample, the levels' requests in \
         flight together are counted by the global limiter and within its bound",
        samples.len() >= 10 && apart == 0 && over == 0,
        format!(
            "{} samples: levels above the global count in {apart}, above the bound in {over}; \
             peak {peak:.0} in flight, {:.2} x the bound at its highest (the concurrency test \
             `criticality_limit` checks it at every admission)",
            samples.len(),
            peak_share
        ),
    )
}

fn checks(report: &Report, samples: &[Sample], end: &CriticalityStats) -> Vec<Check> {
    let mut checks = Vec::new();
    let (Some(crit), Some(plus), Some(shed)) = (
        class(report, "critical"),
        class(report, "sheddable_plus"),
        class(report, "sheddable"),
    ) else {
        checks.push(Check::new(
            "the load's report has the three classes",
            false,
            "a class is missing",
        ));
        return checks;
    };
    let (crit_ended, crit_ok) = ended_ok(crit);
    let s = success(crit);
    checks.push(
        Check::new(
            format!(
                "at {OVERLOAD} x overload with 20% of the traffic critical, critical requests \
                 succeed >= {:.1}%",
                CRITICAL_SUCCESS_GOAL * 100.0
            ),
            crit_ended > 0 && s >= CRITICAL_SUCCESS_GOAL,
            format!("{:.3}% ({crit_ok} of {crit_ended})", s * 100.0),
        )
        .paper("NETFLIX-PRIO: user-initiated requests above 99.4% while prefetch fell to 20%"),
    );
    let p90 = crit.latency.p90_ms;
    checks.push(Check::new(
        format!("the critical requests' p90 is within the target ({TARGET_MS} ms)"),
        crit_ok > 0 && p90 <= TARGET_MS as f64,
        format!("p90 {p90:.1} ms"),
    ));
    let refused = |c: &ClassStats| {
        let (ended, ok) = ended_ok(c);
        ended - ok
    };
    let (r_crit, r_plus, r_shed) = (refused(crit), refused(plus), refused(shed));
    let total = r_crit + r_plus + r_shed;
    let share = if total == 0 {
        0.0
    } else {
        (r_plus + r_shed) as f64 / total as f64
    };
    let (sp, ss) = (success(plus), success(shed));
    checks.push(Check::new(
        format!(
            "the cuts land on the sheddable levels: they take >= {:.0}% of the refusals, \
             sheddable cut hardest, then sheddable-plus, then critical",
            SHEDDABLE_SHARE_GOAL * 100.0
        ),
        total > 0 && share >= SHEDDABLE_SHARE_GOAL && ss <= sp && sp <= s,
        format!(
            "refused: sheddable {r_shed}, sheddable-plus {r_plus}, critical {r_crit} \
             ({:.2}% on the sheddable levels); served: sheddable {:.1}%, sheddable-plus \
             {:.1}%, critical {:.2}%",
            share * 100.0,
            ss * 100.0,
            sp * 100.0,
            s * 100.0
        ),
    ));
    checks.push(global_limit(samples));
    checks.push(Check::new(
        "a client's own criticality header is not believed: no request admitted as \
         critical-plus (every request claimed it)",
        end.get("critical_plus_admitted") == 0.0 && end.get("critical_admitted") > 0.0,
        format!(
            "admitted as critical-plus {}, as critical {}",
            end.get("critical_plus_admitted"),
            end.get("critical_admitted")
        ),
    ));
    let served = report.summary.counts.completed as f64 / report.summary.duration_s.max(1e-9);
    checks.push(Check::new(
        "the service stays busy: served >= 0.9 x its capacity",
        served >= 0.9 * capacity_per_s(),
        format!(
            "{served:.0}/s of {:.0}/s ({:.2} x)",
            capacity_per_s(),
            served / capacity_per_s()
        ),
    ));
    checks
}

fn table(report: &Report, end: &CriticalityStats) -> String {
    let mut md = String::from(
        "| level | share of requests | sent | served | refused (503) | p90 ms | gate admitted | \
         gate refused |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (name, _, share) in CLASSES {
        let Some(c) = class(report, name) else {
            continue;
        };
        let _ = writeln!(
            md,
            "| {name} | {:.0}% | {} | {:.2}% | {} | {:.1} | {} | {} |",
            share * 100.0,
            c.counts.sent,
            success(c) * 100.0,
            c.counts.rejected,
            c.latency.p90_ms,
            end.get(&format!("{name}_admitted")),
            end.get(&format!("{name}_refused")),
        );
    }
    md
}

/// The outcome of the measured load.
pub(super) fn outcome(
    report: &Report,
    samples: &[Sample],
    end: &CriticalityStats,
    run_s: f64,
) -> Outcome {
    let checks = checks(report, samples, end);
    let mut summary = Map::new();
    for (name, _, _) in CLASSES {
        if let Some(c) = class(report, name) {
            summary.insert(format!("{name}_success"), json!(success(c)));
            summary.insert(format!("{name}_p90_ms"), json!(c.latency.p90_ms));
            summary.insert(format!("{name}_sent"), json!(c.counts.sent));
        }
    }
    let served = report.summary.counts.completed as f64 / report.summary.duration_s.max(1e-9);
    summary.insert("served_per_s".into(), json!(served));
    summary.insert("capacity_per_s".into(), json!(capacity_per_s()));
    summary.insert("gate_end_state".into(), json!(end.state));
    let mut text = format!(
        "An axum service of designed capacity ({WORKERS} permits held {HOLD_MS} ms each: \
         {:.0} requests/s) behind `SedaLayer::prioritized` ({TARGET_MS} ms p90 target) and a \
         `CriticalityLayer` taking the level from the route. Open Poisson arrivals at \
         {OVERLOAD} x capacity, 20% critical, 40% sheddable-plus, 40% sheddable, from 1,000 \
         users; {WARMUP_S} s of warm-up, then {run_s} s measured.\n\n",
        capacity_per_s()
    );
    text.push_str(&table(report, end));
    let _ = write!(
        text,
        "\nServed {served:.0}/s ({:.2} x capacity). The gate's state was sampled {} times.\n",
        served / capacity_per_s(),
        samples.len()
    );
    Outcome {
        paper: "issue 53 ([GSRE] criticality, [CINNAMON] cohorts, [NETFLIX-PRIO])".into(),
        config: json!({
            "workers": WORKERS,
            "hold_ms": HOLD_MS,
            "capacity_per_s": capacity_per_s(),
            "target_ms": TARGET_MS,
            "overload": OVERLOAD,
            "mix": CLASSES.iter().map(|(n, p, s)| json!({"class": n, "route": p, "share": s})).collect::<Vec<_>>(),
            "warmup_s": WARMUP_S,
            "run_s": run_s,
        }),
        summary,
        data: json!({ "samples": samples }),
        checks,
        report: text,
    }
}
