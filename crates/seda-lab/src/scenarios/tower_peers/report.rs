//! `tower-peers`' claims (issue 54's goals, at the thresholds) and its report.

use crate::figure::{fmt, pct};
use crate::outcome::Check;

use super::{Cell, Load, TARGET_S, Variant, capacity};

/// How each peer was configured (the binary's `variant.rs` has the reasons).
pub(crate) const PEER_CONFIGURATION: &str = "limit:N: tower ConcurrencyLimit(N) under LoadShed, \
    503 from HandleErrorLayer; little: little_loadshedder::LoadShedLayer::new(0.01, target / 2) \
    (its example's EWMA; a mean-latency target of half the p90 target); acc-*: \
    tower_acc::ConcurrencyLimitLayer::new(<Algorithm>::default()) under tower's LoadShed; \
    res-*: tower_resilience_adaptive::AdaptiveLimiterLayer::new(<Algorithm>::builder()...build()) \
    at the builder's defaults (AIMD's latency_threshold set to the target) under tower's \
    LoadShed; seda: SedaLayer::response_time(target).http(). Every one built once as a service \
    over the router and shared by all connections.";

/// Under this relative difference two goodputs are a tie (the 2%).
const TIE: f64 = 0.02;
/// The lead over the best adaptive peer asked for in the shift and the incident.
const LEAD: f64 = 0.05;
/// The most ours may refuse at or below 0.8 x capacity.
const MAX_REFUSED_UNDERLOAD: f64 = 0.005;
/// Back at 0.9 x capacity within this after the incident.
const RECOVERY_S: f64 = 2.0;

fn cell<'a>(cells: &'a [Cell], variant: &str, load: &str) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.variant.name == variant && c.load.name == load)
}

fn ours<'a>(cells: &'a [Cell], load: &str) -> Option<&'a Cell> {
    cells.iter().find(|c| c.variant.ours && c.load.name == load)
}

/// The best peer at `load` among those `keep` selects: its name and goodput.
fn best_peer(cells: &[Cell], load: &str, keep: impl Fn(&Variant) -> bool) -> Option<(String, f64)> {
    cells
        .iter()
        .filter(|c| c.load.name == load && !c.variant.ours && keep(&c.variant))
        .filter_map(|c| c.goodput_x.map(|g| (c.variant.name.clone(), g)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// "ours 0.93 vs best peer little 0.91 (+2.2%: ahead)".
fn versus(ours: f64, best: &(String, f64)) -> String {
    let diff = if best.1 > 0.0 {
        ours / best.1 - 1.0
    } else {
        0.0
    };
    let call = if diff.abs() < TIE {
        "a tie"
    } else if diff > 0.0 {
        "ahead"
    } else {
        "behind"
    };
    format!(
        "ours {ours:.3} x capacity vs the best peer {} {:.3} ({:+.1}%: {call})",
        best.0,
        best.1,
        100.0 * diff
    )
}

/// Each goal, per load, as a check ([`KNOWN_SHORTFALLS`] names the ones ours misses yet).
pub(crate) fn checks(cells: &[Cell], loads: &[Load]) -> Vec<Check> {
    let mut out = Vec::new();
    for load in loads {
        let name = load.name.as_str();
        let (Some(o), Some(best)) = (ours(cells, name), best_peer(cells, name, |_| true)) else {
            continue;
        };
        let g = o.goodput_x.unwrap_or(0.0);
        let held = g >= best.1 * (1.0 - TIE);
        out.push(goal(
            Goal::Beats,
            name,
            format!(
                "{name} ({} x capacity): ours' goodput within the target is at least every \
                 peer's (under 2% apart is a tie)",
                load.x
            ),
            held,
            versus(g, &best),
        ));
        if load.calls.is_empty() {
            continue;
        }
        if let Some(adaptive) = best_peer(cells, name, |v| v.adaptive) {
            let room = ceiling(load).map_or(String::new(), |c| {
                format!(
                    "; at most {c:.3} x capacity can be served within the target here, so a 5% \
                     lead needs ours at {:.3}, {:.1}% of that",
                    adaptive.1 * (1.0 + LEAD),
                    100.0 * adaptive.1 * (1.0 + LEAD) / c
                )
            });
            out.push(goal(
                Goal::Leads,
                name,
                format!("{name}: ours is >= 5% ahead of the best adaptive peer"),
                g >= adaptive.1 * (1.0 + LEAD),
                versus(g, &adaptive) + &room,
            ));
        }
    }
    for load in loads.iter().filter(|l| l.x <= 0.8 && l.calls.is_empty()) {
        if let Some(o) = ours(cells, &load.name) {
            out.push(goal(
                Goal::Refuses,
                &load.name,
                format!(
                    "{} ({} x capacity): ours refuses <= 0.5% of requests",
                    load.name, load.x
                ),
                o.refused.is_some_and(|r| r <= MAX_REFUSED_UNDERLOAD),
                format!("refused {}", pct(o.refused)),
            ));
        }
    }
    for load in loads.iter().filter(|l| l.incident_end_s.is_some()) {
        if let Some(o) = ours(cells, &load.name) {
            out.push(goal(
                Goal::Recovers,
                &load.name,
                format!(
                    "{}: ours is back at >= 0.9 x capacity within {RECOVERY_S} s of its end",
                    load.name
                ),
                o.recovery_s.is_some_and(|r| r <= RECOVERY_S),
                format!(
                    "a whole second at >= 0.9 x capacity ended {} s after the incident",
                    fmt(o.recovery_s)
                ),
            ));
        }
    }
    out
}

/// Through an incident, the most any variant can serve within the target over the measured
/// window, as a multiple of capacity: the offered load, up to the capacity outside the
/// incident and half of it during it (every hold twice as long). `None` for other loads.
fn ceiling(load: &Load) -> Option<f64> {
    let end = load.incident_end_s?;
    let start = load.calls.first()?.0;
    let window = load.run_s - load.measure_from_s;
    let during = end - start;
    (window > 0.0)
        .then(|| (load.x.min(1.0) * (window - during) + load.x.min(0.5) * during) / window)
}

/// The goals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goal {
    /// At least every peer's goodput (a tie counts).
    Beats,
    /// >= 5% ahead of the best adaptive peer.
    Leads,
    /// Refuses <= 0.5% at or below 0.8 x.
    Refuses,
    /// Back at 0.9 x capacity within 2 s.
    Recovers,
}

/// The goals ours does not meet yet at a load, decided from runs recorded in
/// docs/lab-notebook.md, not from this run: reported as known shortfalls with their figures;
/// every other goal is enforced and fails the run when missed.
///
/// Since 2026-12-07 (fourth session) the service has 16 slots (it had 8, fewer than the
/// layer's `min_queue`, which hid a bound trimmed under the service's concurrency), both
/// seeds are fixed (common random numbers), the layer's trimming stops at its budget floor,
/// and the quick form measures 4 s per open load. In the four quick runs of that change (one
/// quiet, three beside builds) every goal here held: 0.0% refused at 0.8 x and a tie there
/// with every peer that refused nothing; at 3 x a tie with `limit:50` (+0.6% to +1.0%);
/// through the incident +11.0% to +11.8% over the best peer, back at 0.9 x capacity 1.0 s
/// after it. Left a shortfall: the shift, which only the full form runs. The full form's
/// incident lead stays enforced and failed its one run since (ours 0.647 x capacity,
/// `acc-gradient2` 0.646, which the quick form does not run): a 5% lead there needs ours at
/// 0.678, 99.6% of the most the incident lets any variant serve within the target (0.681).
const KNOWN_SHORTFALLS: &[(Goal, &str)] = &[(Goal::Leads, "shift")];

fn goal(which: Goal, load: &str, claim: String, held: bool, detail: String) -> Check {
    if KNOWN_SHORTFALLS.contains(&(which, load)) {
        Check::shortfall(claim, held, detail)
    } else {
        Check::new(claim, held, detail)
    }
}

pub(crate) fn markdown(cells: &[Cell], loads: &[Load], variants: &[Variant]) -> String {
    let mut s = format!(
        "An axum service of designed capacity: an emulated processor of {} slots at a mean \
         service time of {:.0} ms, {:.0} requests/s whatever the machine; target {:.0} ms. \
         Open Poisson arrivals; each cell is one run against a fresh server.\n\n\
         Peers, as configured: {PEER_CONFIGURATION}\n\n\
         `congestion-limiter` is left out: it has no tower layer.\n\n\
         ### Goodput within the target, x capacity (refused share, p90 s)\n\n| variant |",
        super::SLOTS,
        super::MEAN_S * 1000.0,
        capacity(),
        TARGET_S * 1000.0
    );
    for l in loads {
        s.push_str(&format!(" {} |", l.name));
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(loads.len()));
    s.push('\n');
    for v in variants {
        s.push_str(&format!("| {} |", v.name));
        for l in loads {
            match cell(cells, &v.name, &l.name) {
                Some(c) => s.push_str(&format!(
                    " {} ({}, {}) |",
                    fmt(c.goodput_x),
                    pct(c.refused),
                    fmt(c.p90_s)
                )),
                None => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    s.push_str("\n### Recovery after the incident (s to a whole second at >= 0.9 x capacity)\n\n");
    for c in cells.iter().filter(|c| c.load.incident_end_s.is_some()) {
        s.push_str(&format!("- {}: {}\n", c.variant.name, fmt(c.recovery_s)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_incidents_ceiling_halves_capacity_for_its_share_of_the_window() {
        // The full form: 1.5 x, measured from 3 s to 50 s, capacity halved from 8 s to 38 s.
        let load = Load {
            name: "incident".into(),
            x: 1.5,
            run_s: 50.0,
            calls: vec![(8.0, "/admin/slowdown/2"), (38.0, "/admin/slowdown/1")],
            measure_from_s: 3.0,
            incident_end_s: Some(38.0),
        };
        let c = ceiling(&load).unwrap();
        assert!((c - 32.0 / 47.0).abs() < 1e-9, "{c}");
        let open = Load {
            incident_end_s: None,
            ..load
        };
        assert_eq!(ceiling(&open), None);
    }
}
