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
            out.push(goal(
                Goal::Leads,
                name,
                format!("{name}: ours is >= 5% ahead of the best adaptive peer"),
                g >= adaptive.1 * (1.0 + LEAD),
                versus(g, &adaptive),
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

/// The goals ours does not meet yet at a load, decided from the runs recorded in
/// docs/lab-notebook.md (2026-12-06), not from this run: reported as known shortfalls with
/// their figures; every other goal is enforced and fails the run when missed.
///
/// Through the incident, tower's `ConcurrencyLimit` at half of capacity x target (25) read
/// 0.686 and 0.753 x capacity in two quick runs against ours' 0.719 and 0.730 (+4.9%, -3.0%):
/// at half the capacity its 25 in flight answer near the target, while ours trims its bound
/// and holds the p90 at 0.14 s, under-using the budget. The full form (one run, a loaded
/// machine) missed four more: at 3 x ours 0.933 against `limit:25`'s 0.970 (-3.8%; the quick
/// runs read +0.8% and +16.6%); in the shift ours 0.924 against `little`'s 0.892 (+3.5%, not
/// 5%); at 0.8 x ours refused 0.7% (0.0% in both quick runs after the standing share); after
/// the incident a whole second at 0.9 x ended 2.25 s after it (quick: 1.75 and 1.5 s). A third
/// quick run had ours refuse 1.7% at 0.8 x, and serve 0.740 there against `res-aimd`'s 0.775
/// (-4.5%): the standing share made the refusals rarer, not rare enough.
///
/// With trimming stopped at a floor (`TunedConfig::trim_floor` 0.75), two quick runs (loaded
/// machine) refused 0.0% at 0.8 x and served 0.748 and 0.713 there against the best peer's
/// 0.733 and 0.710 (ahead, a tie), and CI's pre-check (quiet) held every goal here (3 x +1.8%,
/// incident +11.5%, back in 1.25 s); but the same floor failed `tower-spike`'s CPU-bound page,
/// so the layer runs without it (seda-tower's `TRIM_FLOOR`) and these goals stay shortfalls.
///
/// Enforced since 2026-12-07, from nine runs of the current layer (three CI pre-checks, a
/// quick run on a loaded machine, a set of five quiet quick runs), each of which held them:
/// through the incident ours ahead of every peer by +2.9% to +11.5%, and 0.0% refused at 0.8 x.
/// In the set of five the others missed: at 3 x behind `limit:25` in three runs (down to
/// -13.6%), at 0.8 x behind `res-aimd` once (-3.9%), back at 0.9 x capacity 2.5 s after the
/// incident once.
///
/// Back to a known shortfall on 2026-12-07 (second session, an AMD EPYC machine where the nine
/// runs above were on Intel Xeon ones): ours refused 4.3% at 0.8 x in one quiet run of seven
/// of the layer of that day (0.0% in the other six), and the layer before it, run again the
/// same hour, refused 3.6% and 4.6% in two of three quick runs. The cause is not found yet.
const KNOWN_SHORTFALLS: &[(Goal, &str)] = &[
    (Goal::Beats, "open_0.8x"),
    (Goal::Refuses, "open_0.8x"),
    (Goal::Beats, "open_3x"),
    (Goal::Leads, "shift"),
    (Goal::Recovers, "incident"),
];

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
