//! The `tiers` scenario's claims, checked at issue 53's goals, and its report.

use std::fmt::Write;

use serde_json::{Map, json};

use super::cancel::{Cut, Termination};
use super::stack::{self, back_capacity_per_s};
use super::storm;
use super::{CONTROL_PERIOD_MS, GOODPUT_GOAL, Measured, OVERLOAD, WASTE_GOAL};
use crate::outcome::{Check, Outcome};

pub(super) fn find<'a>(runs: &'a [Measured], variant: &str) -> Option<&'a Measured> {
    runs.iter().find(|m| m.variant == variant)
}

pub(super) fn goodput_fraction(m: &Measured) -> f64 {
    m.summary.goodput_fraction_of_capacity.unwrap_or(0.0)
}

/// A figure of `m`'s summary beyond the standard ones (NaN if it has none).
pub(super) fn figure(m: &Measured, key: &str) -> f64 {
    m.summary.extra_f64(key).unwrap_or(f64::NAN)
}

/// Whether every tier stopped all of a cut's requests, within one control period, and the
/// back's workers were free for the next request.
fn stopped_everywhere(c: &Cut) -> bool {
    c.front_stopped >= c.requests
        && c.middle_dropped_calls >= c.requests
        && c.back_cancelled >= c.requests
        && c.back_stopped_ms <= CONTROL_PERIOD_MS
        && c.probe_status == 200
}

fn cut_detail(c: &Cut) -> String {
    format!(
        "{} requests: the front stopped {}, the middle dropped {} calls to the back, the back \
         counted {} cancelled within {:.1} ms; a {} ms request right after: {} in {:.0} ms",
        c.requests,
        c.front_stopped,
        c.middle_dropped_calls,
        c.back_cancelled,
        c.back_stopped_ms,
        stack::HOLD_MS,
        c.probe_status,
        c.probe_ms
    )
}

fn checks(runs: &[Measured], t: &Termination) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(ours) = find(runs, "ours") {
        let g = goodput_fraction(ours);
        // Enforced (2026-12-06, docs/lab-notebook.md): held in four quick runs of seven
        // (0.994 x, 0.992 x, 0.989 x, 0.986 x; waste 2.03%, 1.99%, 1.94%, 1.43%); every miss
        // was on a machine the lab marked loaded (others on the tiers' core 85-90%), where a
        // failing claim makes the run inconclusive, not failed. The one miss read closely
        // (0.455 x, 71.0%) had a 2.5 s stall with no completions in the middle of ours' load:
        // the tiers, starved of their core, held their window's slots past the 500 ms budget,
        // and each of those requests was waste that also cut the window.
        checks.push(Check::new(
            format!(
                "back at {OVERLOAD} x its capacity, ours: the front's goodput >= \
                 {GOODPUT_GOAL} x the back's capacity"
            ),
            g >= GOODPUT_GOAL,
            format!(
                "{g:.3} x ({:.0}/s of {:.0}/s)",
                ours.summary.goodput_per_s,
                back_capacity_per_s()
            ),
        ));
        let w = ours.wasted_share();
        let alone = find(runs, "alone").map_or(f64::NAN, Measured::wasted_share);
        checks.push(Check::new(
            format!(
                "ours: the work the front and middle spend on requests the back then refused \
                 or that missed their deadline <= {:.0}% of their work",
                WASTE_GOAL * 100.0
            ),
            w <= WASTE_GOAL,
            format!("{:.2}% (each tier alone: {:.1}%)", w * 100.0, alone * 100.0),
        ));
    }
    if let Some(alone) = find(runs, "alone") {
        let w = alone.wasted_share();
        checks.push(Check::observed(
            "each tier controlling alone wastes the upper tiers' work on what the back refuses \
             (more than the goal)",
            w > WASTE_GOAL,
            format!(
                "{:.1}% of the front's and middle's work, goodput {:.3} x capacity",
                w * 100.0,
                goodput_fraction(alone)
            ),
        ));
    }
    if let (Some(ours), Some(dagor)) = (find(runs, "ours"), find(runs, "dagor")) {
        // Observed: a comparison with a peer that the peer may win; the report says who did.
        let (go, gd) = (goodput_fraction(ours), goodput_fraction(dagor));
        let (wo, wd) = (ours.wasted_share(), dagor.wasted_share());
        let winner = |ours_better: bool, tie: bool| match (tie, ours_better) {
            (true, _) => "a tie",
            (false, true) => "ours",
            (false, false) => "DAGOR",
        };
        checks.push(Check::observed(
            "ours against DAGOR (DAGOR18): at least its goodput, and less of the upper tiers' \
             work wasted",
            go >= gd && wo <= wd,
            format!(
                "goodput: ours {go:.3} x, DAGOR {gd:.3} x ({} ahead); wasted: ours {:.2}%, \
                 DAGOR {:.2}% ({} ahead)",
                winner(go > gd, (go - gd).abs() < 0.005),
                wo * 100.0,
                wd * 100.0,
                winner(wo < wd, (wo - wd).abs() < 0.0005),
            ),
        ));
    }
    for (how, c) in [
        ("its client left", &t.client_gone),
        ("its deadline passed at the front", &t.deadline_passed),
    ] {
        checks.push(Check::new(
            format!(
                "a request cancelled at the front ({how}) stops in every tier within one \
                 control period ({CONTROL_PERIOD_MS} ms), the back counting it"
            ),
            stopped_everywhere(c),
            cut_detail(c),
        ));
    }
    checks.push(Check::new(
        "no tier starts work on a request whose deadline has passed",
        t.spent_status == 504 && t.spent_reached_handler == 0,
        format!(
            "a request with no budget left: {}, {} reached the front's handler",
            t.spent_status, t.spent_reached_handler
        ),
    ));
    checks
}

fn table(runs: &[Measured]) -> String {
    let mut md = String::from(
        "| variant | goodput / capacity | offered /s | refused at the front's door /s | \
         back refused /s | back completed /s | front wasted | middle wasted | both |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for m in runs {
        let get = |k: &str| figure(m, k);
        let _ = writeln!(
            md,
            "| {} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}% | {:.1}% | {:.1}% |",
            m.variant,
            goodput_fraction(m),
            m.summary.offered_per_s.unwrap_or(f64::NAN),
            get("refused_at_front_door_per_s"),
            get("back_refused_per_s"),
            get("back_completed_per_s"),
            m.front.wasted_share() * 100.0,
            m.middle.wasted_share() * 100.0,
            m.wasted_share() * 100.0,
        );
    }
    for m in runs {
        if let Some([front, middle, back]) = &m.levels {
            let _ = writeln!(
                md,
                "\n{}'s admission levels at the end (business/user, 0/127 admits all): the \
                 front {front}, the middle {middle}, the back {back}.",
                m.variant
            );
        }
    }
    md
}

/// The outcome of the runs and the termination phase.
pub(super) fn outcome(
    runs: &[Measured],
    storms: &[Measured],
    t: &Termination,
    delay_ms: Option<u32>,
) -> Outcome {
    let mut checks = checks(runs, t);
    checks.extend(storm::checks(storms));
    let mut summary = Map::new();
    for m in runs.iter().chain(storms) {
        summary.insert(
            m.variant.to_string(),
            serde_json::to_value(&m.summary).unwrap_or_default(),
        );
    }
    summary.insert(
        "termination".into(),
        serde_json::to_value(t).unwrap_or_default(),
    );
    let mut report = format!(
        "Three tiers, each a process in its own network namespace, joined by veth pairs {}. \
         The back is the hold service: {} workers, {} ms \
         holds, {:.0} requests/s by design, its queue bounded at {}; the front and middle \
         do {} ms of their own work on {} workers, then call below. Open Poisson arrivals at \
         {OVERLOAD} x the back's capacity; a request's budget is {} ms.\n\n",
        match delay_ms {
            Some(ms) => format!("with netem's {ms} ms delay on every end"),
            None => "without added delay: this kernel has no netem qdisc (sch_netem), so the \
                     links carry real packets between the namespaces at veth's own latency"
                .to_string(),
        },
        stack::BACK_WORKERS,
        stack::HOLD_MS,
        back_capacity_per_s(),
        stack::BACK_QUEUE,
        stack::TIER_WORK_MS,
        stack::TIER_WORKERS,
        stack::DEADLINE_MS,
    );
    report.push_str(&table(runs));
    report.push_str(
        "\n*alone*: each tier's seda layer guards its own response time; the back's 503s \
         reach the client, but only after the front and middle did their part. *ours*: the \
         front keeps a window over the tiers below (SSM's AIMD window, cut once per window of \
         refusals), taken before its own work and fed by the refusals relayed up with the \
         back's `Retry-After`; when the back is full the front refuses at its door. \
         *dagor*: WeChat's DAGOR (DAGOR18) in every tier, beside each tier's seda layer: the \
         front gives each request a priority (one business, a user priority hashed from the \
         request's number, one of 128); each tier moves an admission level from its mean \
         queueing time over 1 s windows (overloaded above 20 ms: 5% fewer admitted, else 1% \
         more), answers with it, and refuses at its door what the tier below last said it \
         would refuse. The back is the same hold service behind a gate in its namespace that \
         queues its requests (2 at a time to the 2 workers, 16 waiting) where DAGOR sees the \
         wait. DAGOR tells a level one call up: the middle learns the back's, the front only \
         the middle's.\n\n\
         Cross-tier termination (ours' stack):\n\n",
    );
    for (how, c) in [
        ("client left", &t.client_gone),
        ("deadline passed", &t.deadline_passed),
    ] {
        let _ = writeln!(report, "- {how}: {}", cut_detail(c));
    }
    let _ = writeln!(
        report,
        "- no budget left: answered {}, {} request(s) reached the front's handler",
        t.spent_status, t.spent_reached_handler
    );
    report.push('\n');
    report.push_str(&storm::report(storms));
    Outcome {
        paper: "issue 53 ([DAGOR18]'s upstream coordination, [SERT06]'s future work)".into(),
        config: json!({
            "back_workers": stack::BACK_WORKERS,
            "back_hold_ms": stack::HOLD_MS,
            "back_queue": stack::BACK_QUEUE,
            "back_capacity_per_s": back_capacity_per_s(),
            "tier_work_ms": stack::TIER_WORK_MS,
            "tier_workers": stack::TIER_WORKERS,
            "deadline_ms": stack::DEADLINE_MS,
            "overload": OVERLOAD,
            "netem_delay_ms": delay_ms,
            "storm_client_retries": storm::CLIENT_RETRIES,
            "storm_middle_retries": storm::MIDDLE_RETRIES,
            "storm_retry_budget": storm::RETRY_BUDGET,
        }),
        summary,
        data: json!({}),
        checks,
        report,
    }
}
