//! `tiers`' retry storm (issue 53, item 5): clients that send a refused request again at once,
//! up to [`CLIENT_RETRIES`] times (`seda load --retries`, no back-off), against the front of
//! the three tiers, the back at 3 x its capacity. The front and the middle control alone
//! (their own seda layer); the middle's client of the back helps it or not:
//!
//! - `storm`: the middle throttles its calls (Google SRE's adaptive throttling, K = 2) and
//!   retries a refused call, up to [`MIDDLE_RETRIES`] times, within a retry budget of 10% of
//!   its first calls (`seda serve tier --throttle --retries N --retry-budget 0.1`);
//! - `storm-unhelped`: the same retries with neither throttle nor budget, every refused call
//!   sent again at once: the storm a tier in the middle multiplies.
//!
//! Enforced at issue 53's goal, with the help: the front's goodput >= 0.9 x the back's
//! capacity, and the retries the middle sent <= 10% of its calls. The storm without the help
//! is beside it, observed.

use std::fmt::Write;

use anyhow::Result;

use super::net::TierNet;
use super::report::{figure, find, goodput_fraction};
use super::stack::{Stack, back_capacity_per_s};
use super::{Drive, GOODPUT_GOAL, Measured, OVERLOAD, measure};
use crate::Lab;
use crate::outcome::Check;

/// How often the clients send a refused request again, at once.
pub const CLIENT_RETRIES: u32 = 3;
/// How often the middle sends a refused call again, at once.
pub const MIDDLE_RETRIES: u32 = 3;
/// The middle's retry budget (with help): a share of its first calls.
pub const RETRY_BUDGET: f64 = 0.1;
/// The goal for the middle's retries, a share of its calls (issue 53).
const RETRY_GOAL: f64 = 0.1;
/// The storm with the middle's help, and without.
pub const HELPED: &str = "storm";
pub const UNHELPED: &str = "storm-unhelped";

/// `seda serve tier`'s arguments for the middle, helped or not.
fn middle_help(helped: bool) -> Vec<String> {
    let mut args = vec!["--retries".to_string(), MIDDLE_RETRIES.to_string()];
    if helped {
        args.extend([
            "--throttle".to_string(),
            "--retry-budget".to_string(),
            RETRY_BUDGET.to_string(),
        ]);
    }
    args
}

/// Runs the storm with the middle's help, then without.
pub(super) fn run(lab: &Lab, net: &TierNet) -> Result<Vec<Measured>> {
    let drive = Drive {
        run_s: lab.pick(5.0, 20.0),
        from_s: lab.pick(2.0, 5.0),
        client_retries: CLIENT_RETRIES,
    };
    let secs = drive.run_s - drive.from_s;
    let mut runs = Vec::new();
    for (variant, helped) in [(HELPED, true), (UNHELPED, false)] {
        let stack = Stack::start(lab, net, variant, "alone", &middle_help(helped))?;
        let measured = measure(lab, &stack, variant, drive);
        stack.stop();
        let mut m = measured?;
        let per_s = |n: u64| Some(n as f64 / secs);
        let figures = [
            ("middle_retry_share", Some(m.middle.retry_share())),
            ("front_requests_per_s", per_s(m.front.requests)),
            ("middle_requests_per_s", per_s(m.middle.requests)),
            ("middle_calls_per_s", per_s(m.middle.calls)),
            ("middle_retries_per_s", per_s(m.middle.retries)),
            (
                "middle_retries_denied_per_s",
                per_s(m.middle.retries_denied),
            ),
            ("middle_throttled_per_s", per_s(m.middle.throttled)),
            ("back_requests_per_s", per_s(m.back.requests)),
        ];
        for (key, value) in figures {
            m.summary.insert(key, value);
        }
        runs.push(m);
    }
    Ok(runs)
}

/// The storm's claims.
pub(super) fn checks(storms: &[Measured]) -> Vec<Check> {
    let (Some(h), Some(u)) = (find(storms, HELPED), find(storms, UNHELPED)) else {
        return Vec::new();
    };
    let storm = format!(
        "retry storm (clients resend a 503 at once, up to {CLIENT_RETRIES} times; the back at \
         {OVERLOAD} x its capacity), the middle tier throttling and retrying within a {:.0}% \
         budget",
        RETRY_BUDGET * 100.0
    );
    let g = goodput_fraction(h);
    let share = h.middle.retry_share();
    let first_calls = h.middle.calls.saturating_sub(h.middle.retries);
    vec![
        Check::new(
            format!("{storm}: the front's goodput >= {GOODPUT_GOAL} x the back's capacity"),
            g >= GOODPUT_GOAL,
            format!(
                "{g:.3} x ({:.0}/s of {:.0}/s); the same storm without the middle's help: \
                 {:.3} x",
                h.summary.goodput_per_s,
                back_capacity_per_s(),
                goodput_fraction(u)
            ),
        ),
        Check::new(
            format!(
                "{storm}: the retries the middle sent <= {:.0}% of its calls",
                RETRY_GOAL * 100.0
            ),
            h.middle.calls > 0 && share <= RETRY_GOAL,
            format!(
                "{:.1}% ({} retries of {} calls, {:.1}% of its first calls; {} denied by the \
                 budget, {} calls throttled); without help: {:.1}% ({} of {})",
                share * 100.0,
                h.middle.retries,
                h.middle.calls,
                100.0 * h.middle.retries as f64 / first_calls.max(1) as f64,
                h.middle.retries_denied,
                h.middle.throttled,
                u.middle.retry_share() * 100.0,
                u.middle.retries,
                u.middle.calls
            ),
        ),
        // Observed: the storm without the help is the baseline the help is weighed against;
        // the report says which did better.
        Check::observed(
            "retry storm, the middle's help against none: at least the goodput, and fewer \
             requests reaching the back",
            g >= goodput_fraction(u) && h.back.requests < u.back.requests,
            format!(
                "goodput {g:.3} x with the help, {:.3} x without; the back received {:.0}/s \
                 ({:.0}/s refused) with the help, {:.0}/s ({:.0}/s refused) without; of the \
                 front's {:.0}/s and {:.0}/s, {:.0}/s and {:.0}/s passed the middle's own seda \
                 layer",
                goodput_fraction(u),
                figure(h, "back_requests_per_s"),
                figure(h, "back_refused_per_s"),
                figure(u, "back_requests_per_s"),
                figure(u, "back_refused_per_s"),
                figure(h, "front_requests_per_s"),
                figure(u, "front_requests_per_s"),
                figure(h, "middle_requests_per_s"),
                figure(u, "middle_requests_per_s"),
            ),
        ),
    ]
}

/// The storm's part of the report.
pub(super) fn report(storms: &[Measured]) -> String {
    let mut md = format!(
        "Retry storm: the same open arrivals, each request refused (503) sent again at once up \
         to {CLIENT_RETRIES} times by its client; the front and middle control alone. \
         *{HELPED}*: the middle's client of the back throttles (Google SRE's adaptive \
         throttling: a request refused at the middle's door, before its work, with probability \
         max(0, (requests - 2 x accepts) / (requests + 1)) over 10 s) and sends a refused call \
         again at once, up to {MIDDLE_RETRIES} times, while the request's budget lasts and \
         within a retry budget of {:.0}% of its first calls. *{UNHELPED}*: the same retries, \
         without throttle or budget.\n\n\
         | variant | goodput / capacity | front arrivals /s | past the middle's layer /s | \
         throttled at the middle /s | middle calls /s | middle retries /s (share of calls) | \
         retries denied by the budget /s | back arrivals /s | back refused /s | back completed \
         /s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        RETRY_BUDGET * 100.0
    );
    for m in storms {
        let _ = writeln!(
            md,
            "| {} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} ({:.1}%) | {:.0} | {:.0} | \
             {:.0} | {:.0} |",
            m.variant,
            goodput_fraction(m),
            figure(m, "front_requests_per_s"),
            figure(m, "middle_requests_per_s"),
            figure(m, "middle_throttled_per_s"),
            figure(m, "middle_calls_per_s"),
            figure(m, "middle_retries_per_s"),
            m.middle.retry_share() * 100.0,
            figure(m, "middle_retries_denied_per_s"),
            figure(m, "back_requests_per_s"),
            figure(m, "back_refused_per_s"),
            figure(m, "back_completed_per_s"),
        );
    }
    md
}
