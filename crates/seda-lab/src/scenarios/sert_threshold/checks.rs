//! What `sert-threshold` checks: the goal for our threshold (within 5% of the best
//! fixed threshold at every load, on throughput loss and mean response time), enforced where
//! a threshold can meet it; SERT's formula beside it as the baseline, observed; and SERT's
//! premise, that each fixed threshold misses somewhere.

use super::{Point, Service, WITHIN};
use crate::outcome::Check;

/// The axes, each with the absolute slack that makes a figure near zero a match (a loss of
/// 0.1% against 0.0%, a mean of 4 ms against 3 ms).
const AXES: [(&str, f64); 2] = [("throughput_loss", 0.01), ("mean_response_s", 0.005)];

/// Below this load the ranking service's goal is a known shortfall: there the best fixed
/// threshold on loss (15 s: nothing cut) and on mean response (0.5 s: 7.5% cut in `seda sim
/// sert-threshold` at 80%) are the two ends of a trade-off, and a threshold that cuts under
/// 1% of the requests (the loss goal) cannot bring the mean within 5% of one that cuts 7.5%.
/// Index matching's heavy tail has no such trade-off: cutting its few giants costs almost no
/// loss and frees the cores.
///
/// Ours' loss at 80% alone is within reach since a period needs two congested replies
/// (2026-12-07): two quick lab runs read 0.000 against fixed 15 s's 0.000, and the
/// simulator's quick window 0.009 against 0.007 over seeds 1-5. It stays a known shortfall:
/// over seeds 1-20 of that window one missed (seed 11: 0.090 against 0.011), and in steady
/// state (the full form's length) ours drifts to 0.034 against 0.001, trading late replies for
/// cuts.
const RANKING_TRADE_OFF_BELOW: f64 = 1.5;

/// Whether ours' goal for `service` at `load` on `key` is a known shortfall: ranking below
/// [`RANKING_TRADE_OFF_BELOW`]. Ranking's loss at 200% in the quick form was one too (a start
/// transient: the queue built while the threshold fell from its upper bound was drained by
/// cutting at a 0.1 s floor, 0.569 lost against 0.519 with 15 s); with a 0.2 s floor it read
/// 0.531 against 0.524 and 0.514 against 0.517 (threshold to a quarter per period) and 0.534
/// against 0.520 (to 30%, the default) in quick runs on 2026-12-06 (the simulator's quick
/// window, seeds 1-5, 30%: 0.506 against 0.497), so it is enforced.
fn known_shortfall(service: &str, load: f64) -> bool {
    service == "ranking" && load < RANKING_TRADE_OFF_BELOW
}

pub(super) fn find<'a>(
    points: &'a [Point],
    service: &str,
    variant: &str,
    load: f64,
) -> Option<&'a Point> {
    points
        .iter()
        .find(|p| p.service == service && p.variant == variant && p.load == load)
}

/// The fixed variants of `service` measured.
fn fixed_names(points: &[Point], service: &str) -> Vec<String> {
    let mut v: Vec<String> = points
        .iter()
        .filter(|p| p.service == service && p.variant.starts_with("fixed_"))
        .map(|p| p.variant.clone())
        .collect();
    v.dedup();
    v
}

/// Whether `x` is within [`WITHIN`] of `best` (lower is better), with `slack` for figures
/// near zero.
fn matches(x: f64, best: f64, slack: f64) -> bool {
    x <= best * (1.0 + WITHIN) + slack
}

/// Where fixed threshold `f` of `service` first misses the best fixed one by more than 5%:
/// `"<load>% <axis> <f's> vs <best>"`.
fn first_miss(
    points: &[Point],
    service: &str,
    fixed: &[String],
    f: &str,
    loads: &[f64],
) -> Option<String> {
    loads.iter().find_map(|&load| {
        let mine = find(points, service, f, load)?;
        AXES.iter().find_map(|&(key, slack)| {
            let best = fixed
                .iter()
                .filter_map(|g| find(points, service, g, load))
                .map(|p| p.get(key))
                .fold(f64::INFINITY, f64::min);
            (!matches(mine.get(key), best, slack)).then(|| {
                format!(
                    "{:.0}% {key} {:.3} vs {best:.3}",
                    load * 100.0,
                    mine.get(key)
                )
            })
        })
    })
}

pub(super) fn checks(
    points: &[Point],
    services: &[&Service],
    loads: &[f64],
    quick: bool,
) -> Vec<Check> {
    let mut out = Vec::new();
    let top = loads.iter().copied().fold(f64::NAN, f64::max);
    for s in services {
        let fixed = fixed_names(points, s.name);
        let largest = fixed.last().cloned().unwrap_or_default();
        // The slides' point, for both adaptive thresholds: a long threshold lets long
        // requests hold the workers under overload.
        for adaptive in ["ours", "sert"] {
            let (a, l) = (
                find(points, s.name, adaptive, top),
                find(points, s.name, &largest, top),
            );
            if let (Some(a), Some(l)) = (a, l) {
                let (ma, ml) = (a.get("mean_response_s"), l.get("mean_response_s"));
                out.push(Check::new(
                    format!(
                        "{}: at {:.0}% load the {adaptive} threshold's mean response time is \
                         below the largest fixed threshold's ({largest})",
                        s.name,
                        top * 100.0
                    ),
                    ma < ml,
                    format!("{ma:.3} s vs {ml:.3} s (scaled times)"),
                ));
            }
        }
        for &load in loads {
            for (key, slack) in AXES {
                let best = fixed
                    .iter()
                    .filter_map(|f| find(points, s.name, f, load))
                    .min_by(|x, y| x.get(key).total_cmp(&y.get(key)));
                let Some(b) = best else { continue };
                let other = |v: &str| {
                    find(points, s.name, v, load)
                        .map_or("-".into(), |p| format!("{:.3}", p.get(key)))
                };
                for adaptive in ["ours", "sert"] {
                    let Some(a) = find(points, s.name, adaptive, load) else {
                        continue;
                    };
                    let claim = format!(
                        "{}: at {:.0}% load the {adaptive} threshold's {key} is within 5% of the \
                         best fixed threshold's",
                        s.name,
                        load * 100.0
                    );
                    let passed = matches(a.get(key), b.get(key), slack);
                    let detail = format!(
                        "{adaptive} {:.3}, best fixed {} {:.3}; {} {}, percentile {}",
                        a.get(key),
                        b.variant,
                        b.get(key),
                        if adaptive == "ours" { "sert" } else { "ours" },
                        other(if adaptive == "ours" { "sert" } else { "ours" }),
                        other("percentile"),
                    );
                    out.push(if adaptive == "sert" {
                        // The baseline: reported beside ours, not a goal of this code.
                        Check::observed(claim, passed, detail)
                    } else if known_shortfall(s.name, load) {
                        Check::shortfall(claim, passed, detail)
                    } else {
                        Check::new(claim, passed, detail)
                    });
                }
            }
        }
        // SERT's premise, the goal: each fixed threshold is worse than 5% of the best
        // fixed one somewhere (a load and an axis).
        let missed: Vec<(&String, Option<String>)> = fixed
            .iter()
            .map(|f| (f, first_miss(points, s.name, &fixed, f, loads)))
            .collect();
        let claim = format!(
            "{}: each fixed threshold is worse than 5% of the best fixed one at some load",
            s.name
        );
        let passed = missed.iter().all(|(_, m)| m.is_some());
        let detail = missed
            .iter()
            .map(|(f, m)| format!("{f}: {}", m.as_deref().unwrap_or("never")))
            .collect::<Vec<_>>()
            .join("; ");
        // Index matching: a known shortfall of the plant, not of a controller. 1.5 s costs
        // against 3 s and 8 s only the requests whose running time passes it; below capacity
        // running time is about the size, and 0.07% of the sizes pass 1.5 s (none pass the
        // slides' longest, 2.732 s), far inside the loss's slack, while cutting them lowers the
        // mean; above capacity its cuts free the cores for the rest. So 1.5 s is the best fixed
        // threshold, or within 5% of it, at every load the lab measured (80% and 200%) and the
        // simulator too (80% to 200%). The slides' figure for index matching is not in the text
        // we have, so whether theirs showed 1.5 s losing somewhere cannot be checked.
        out.push(if quick && s.name == "index_matching" {
            Check::shortfall(claim, passed, detail)
        } else {
            Check::new(claim, passed, detail)
        });
    }
    out
}
