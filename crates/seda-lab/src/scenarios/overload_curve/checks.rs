//! The claims of `overload-curve`: ours' goals, enforced, and who leads each figure, observed.

use super::plant::TARGET;
use super::{
    BREAKWATER_RECOVERY_S, DAGOR_RECOVERY_S_PER_BREAKWATER, GOAL_LIGHT_LOAD, GOAL_LIGHT_REJECTED,
    GOAL_OF_PEAK, GOAL_RECOVERY_S, NONE, OURS, Point, SEDA_RECOVERY_S_PER_BREAKWATER, STEP_FROM,
    STEP_TO, Step, WINDOW, find, of, top,
};
use crate::outcome::Check;

/// The claims, from the points and steps measured at `loads`.
pub(super) fn checks(points: &[Point], steps: &[Step], loads: &[f64]) -> Vec<Check> {
    let mut out = goals(points, steps, loads);
    out.extend(comparisons(points, steps, loads));
    out
}

/// Past capacity: the load is at least the capacity.
fn overloaded(p: &Point) -> bool {
    p.load_x >= 1.0
}

/// Ours' goals, enforced: goodput past capacity, the p99 of what it answers, nobody turned
/// away below capacity, recovery from the step.
fn goals(points: &[Point], steps: &[Step], loads: &[f64]) -> Vec<Check> {
    let mut out = Vec::new();
    let ours: Vec<&Point> = of(points, OURS).collect();
    let peak = ours
        .iter()
        .max_by(|a, b| a.goodput().total_cmp(&b.goodput()));
    let listed = |f: &dyn Fn(&Point) -> String, filter: &dyn Fn(&Point) -> bool| -> String {
        ours.iter()
            .filter(|p| filter(p))
            .map(|p| format!("{} x: {}", p.load_x, f(p)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // 1. Goodput past capacity.
    let peak_g = peak.map_or(0.0, |p| p.goodput());
    out.push(Check::new(
        format!(
            "ours holds >= {GOAL_OF_PEAK} of its peak goodput at every load from 1 x to {} x",
            top(loads)
        ),
        peak.is_some()
            && ours
                .iter()
                .filter(|p| overloaded(p))
                .all(|p| p.goodput() >= GOAL_OF_PEAK * peak_g),
        format!(
            "peak {peak_g:.3} x capacity at {} x; {}",
            peak.map_or(f64::NAN, |p| p.load_x),
            listed(&|p| format!("{:.3}", p.goodput()), &overloaded)
        ),
    ));
    // 2. The p99 of what it answers.
    let target_s = TARGET.as_secs_f64();
    out.push(Check::new(
        format!(
            "the p99 of the requests ours answers is within the target ({:.0} ms) at every load",
            target_s * 1e3
        ),
        !ours.is_empty()
            && ours
                .iter()
                .all(|p| p.p99_s().is_some_and(|x| x <= target_s)),
        listed(
            &|p| {
                p.p99_s()
                    .map_or("-".into(), |x| format!("{:.0} ms", x * 1e3))
            },
            &|_| true,
        ),
    ));
    // 3. Nobody turned away below capacity.
    let light = |p: &Point| p.load_x <= GOAL_LIGHT_LOAD + 1e-9;
    out.push(Check::new(
        format!(
            "ours turns away at most {:.1}% of requests at or below {GOAL_LIGHT_LOAD} x",
            GOAL_LIGHT_REJECTED * 100.0
        ),
        ours.iter().any(|p| light(p))
            && ours
                .iter()
                .filter(|p| light(p))
                .all(|p| p.rejected() <= GOAL_LIGHT_REJECTED),
        listed(&|p| format!("{:.2}%", p.rejected() * 100.0), &light),
    ));
    // 4. Recovery from the step.
    let our_step = steps.iter().find(|s| s.variant == OURS);
    out.push(Check::new(
        format!(
            "after a {STEP_FROM} x to {STEP_TO} x step, ours brings the p90 of {} ms windows back \
             within 1.2 x the target within {GOAL_RECOVERY_S} s and keeps it there",
            WINDOW.as_millis()
        ),
        our_step
            .is_some_and(|s| s.recovery_s() <= GOAL_RECOVERY_S && s.summary.settled == Some(true)),
        our_step.map_or("not run".into(), |s| {
            format!(
                "{:.2} s (worst window {:.0} ms; Breakwater {:.0} ms, SEDA {:.2} s as Breakwater \
                 measured it)",
                s.recovery_s(),
                s.summary
                    .extra_f64("worst_window_p90_after_step_s")
                    .unwrap_or(f64::NAN)
                    * 1e3,
                BREAKWATER_RECOVERY_S * 1e3,
                SEDA_RECOVERY_S_PER_BREAKWATER
            )
        }),
    )
    .paper(format!(
        "Breakwater: stable within {:.0} ms of a 1.4 x spike; SEDA {SEDA_RECOVERY_S_PER_BREAKWATER} \
         s, DAGOR {DAGOR_RECOVERY_S_PER_BREAKWATER} s",
        BREAKWATER_RECOVERY_S * 1e3
    )));
    out
}

/// Who leads each figure, observed (a peer may win), and the papers' claim that no control
/// collapses.
fn comparisons(points: &[Point], steps: &[Step], loads: &[f64]) -> Vec<Check> {
    let mut out = Vec::new();
    let hi = top(loads);
    let at_top = |f: &dyn Fn(&Point) -> Option<f64>| -> Vec<(&str, f64)> {
        points
            .iter()
            .filter(|p| p.load_x == hi)
            .filter_map(|p| Some((p.variant, f(p)?)))
            .collect()
    };
    out.push(leader_check(
        format!("ours has the highest goodput at {hi} x"),
        at_top(&|p| Some(p.goodput())),
        true,
        &|x| format!("{x:.3} x capacity"),
    ));
    let names: Vec<&str> = steps.iter().map(|s| s.variant).collect();
    out.push(leader_check(
        "ours has the highest worst goodput over the loads from 1 x (the flattest curve)".into(),
        names
            .iter()
            .map(|n| {
                let worst = of(points, n)
                    .filter(|p| overloaded(p))
                    .map(Point::goodput)
                    .fold(f64::INFINITY, f64::min);
                (*n, worst)
            })
            .collect(),
        true,
        &|x| format!("{x:.3} x capacity"),
    ));
    out.push(leader_check(
        format!(
            "ours has the lowest p99 at {hi} x among controllers answering >= 0.5 x capacity in \
             time"
        ),
        at_top(&|p| p.p99_s().filter(|_| p.goodput() >= 0.5)),
        false,
        &|x| format!("{:.0} ms", x * 1e3),
    ));
    out.push(leader_check(
        "ours recovers from the step fastest".into(),
        steps
            .iter()
            .filter(|s| s.variant != NONE)
            .map(|s| (s.variant, s.recovery_s()))
            .collect(),
        false,
        &|x| format!("{x:.2} s"),
    ));
    let none_top = find(points, NONE, hi).map_or(f64::NAN, Point::goodput);
    // A claim of the papers (no control collapses), not a comparison a peer may win.
    out.push(Check::new(
        format!("without admission control goodput collapses at {hi} x (under 0.1 x capacity)"),
        none_top < 0.1,
        format!("{none_top:.3} x capacity"),
    ));
    out
}

/// An observed check that ours leads `figures` (highest if `high`, else lowest),
/// naming the leader and ours' figure.
fn leader_check(
    claim: String,
    figures: Vec<(&str, f64)>,
    high: bool,
    show: &dyn Fn(f64) -> String,
) -> Check {
    let mut all: Vec<(&str, f64)> = figures.into_iter().filter(|(_, x)| x.is_finite()).collect();
    all.sort_by(|a, b| {
        if high {
            b.1.total_cmp(&a.1)
        } else {
            a.1.total_cmp(&b.1)
        }
    });
    let ours = all.iter().find(|(n, _)| *n == OURS).map(|(_, x)| *x);
    let detail = match (all.first(), ours) {
        (Some((lead, x)), Some(o)) => format!(
            "leader {lead} {}; ours {}; {}",
            show(*x),
            show(o),
            all.iter()
                .skip(1)
                .take(3)
                .map(|(n, x)| format!("{n} {}", show(*x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "not measured".into(),
    };
    // Ours leads when no one does better (a tie counts).
    let passed = ours.is_some_and(|o| all.first().is_some_and(|(_, x)| *x == o));
    Check::observed(claim, passed, detail)
}
