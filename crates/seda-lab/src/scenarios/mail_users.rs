//! `mail-users` (WC03 Figures 8 and 9): the e-mail service under 2 to 1024 users, with and
//! without overload control; the p90 of admitted requests and the rejected fraction per user
//! count, and the p90 of each request type at 16 and 1024 users.
//!
//! The control is session-aware admission (SBAC02, `session_aware`, one controller shared by
//! the request-type stages): established sessions are served before new logins. With WC03's
//! per-stage control alone, the users rejected at 1024 came back and logged in again, and the
//! login stage rejected most of them: 1,073 logins completed against 20,528 rejected, the p90
//! 1.6 to 5 x the target and goodput collapsing. Three changes address that: users retry the
//! rejected request in the session they have (as a browser does), on the connection they have
//! (reconnecting after every 503 cost the server an accept and a close per rejection: at 1024
//! users, 51,532 connections for 56,595 requests, and a p90 of 0.65-0.85 s), and new logins are
//! the first turned away when the service is full.
//!
//! What was left at 1024 users, and the two changes that took goodput (in server work, see
//! [`crate::mail::MailCapacity`]) from a median of 0.74 x capacity (0.63-0.91, five quick
//! release runs) to 0.92 (0.88-0.93; in server work that prices only answered requests, see
//! [`crate::mail::Work::cost_s`]):
//!
//! - **Refusals.** The users who hold no session retried their login after WC03's wait (5 s,
//!   scaled to 0.2 s), 2,200-5,000 refusals a second against about 250 admissions; the front
//!   end's thread took 16% of the server's core (per-thread CPU from `/proc`; `perf` put half
//!   of it in the kernel's TCP send path, which on loopback also runs the client's receive).
//!   The service now stretches its `Retry-After` while refusals outnumber admissions
//!   ([`seda_control::RetryAfter`]), and the users honour it, scaled like every other time:
//!   160-400 refusals a second, the front end 4-5% of the core. Alone, this left goodput
//!   where it was (median 0.76 in five runs): the next loss was searches.
//! - **Searches that cannot be in time.** A search's cost depends on its user's mailbox and
//!   words; with the slowdown a few ran for 1-2 s and took 25-37% of the core without a reply
//!   in time (their CPU is counted only when they end, so a run's handler CPU read 0.75 of the
//!   core where the core was busy throughout). Ours cuts a search that has run for half the
//!   target, which is unlikely to be answered in time (SERT06's lever, a fixed threshold),
//!   and the service tells the user of a cut search to wait the longest `Retry-After` before
//!   asking again: retried after the usual wait, the same search of the same mailbox was cut
//!   again, and cut searches kept 16-20% of the core busy. Cutting at a percentile of recent
//!   running times instead (p99 x 1.5, within 0.1-1 x the target) cut more and served less
//!   (0.78, 0.69-0.83): a search's running time is wall-clock time, and with every stage's
//!   threads sharing the core a 12 ms search runs for ten times that.
//! - **A standing queue in one stage.** The controller shared by the stages steered the p90
//!   of all their requests to 0.8 x the target, and the list-messages stage's queue stood at
//!   the dropper's threshold (queueing p50 0.298 s against 0.296 s): two of three requests
//!   leaving it were dropped and the rest answered near the target, often late at the client
//!   (0.898 x capacity, 0.891-0.913, in five runs). The controller now shrinks its queueing
//!   budget while it drops more than 1% of what leaves the queue
//!   ([`seda_control::TunedResponseTimeController`]): 0.940 (0.910-0.951) and 0.918
//!   (0.895-0.936) in two sets of five runs, 0.910 (0.902-0.920) and 0.925 (0.901-0.950) in
//!   eight more; 17 of the 18 at or over 0.9.
//!
//!
//! Priced request by request (each answered request at the handler CPU its `Server-Timing`
//! reported, see [`crate::mail::HOW`]), the cut searches' work showed: 0.854 x capacity
//! (0.826-0.872) in five runs cutting at half the target, 0.879 (0.858-0.897) cutting at a
//! quarter, the cut searches still 0.2 of the 3.8 CPU-seconds the handlers spent in a run's
//! window. A search's cost is nearly its user's mailbox times a rate set by its words and
//! field, so the service now learns that rate and refuses a search it predicts would be cut,
//! before it runs (`seda-mail`'s `search_cost.rs`): 0.939 (0.925-0.951) in three runs and
//! 0.919 (0.905-0.942) in four more, every one at 0.9 or more.
//!
//! Goodput and the p90 at 1024 users are enforced at the goals: the lab runs the release
//! build on a processor of stated capacity.

use std::time::Duration;

use anyhow::Result;
use seda_sim::summary::{RunSummary, SETTLE_TOLERANCE};
use serde_json::{Map, Value, json};

use crate::figure::{fmt, pct};
use crate::mail::MailCapacity;
use crate::mail::{self, Control, MailServer, ServeOptions};
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::steady::{self, Steady, SteadyRun, TypeRow};
use crate::{Lab, Scenario};

/// The scenario.
pub struct MailUsers;

/// WC03's p90 target for this experiment.
const PAPER_TARGET_S: f64 = 10.0;
/// The most users WC03 ran; the target is scaled so that this many overload the service.
const MAX_USERS: usize = 1024;
/// The user counts of WC03's Figure 9 table.
const TABLE_USERS: [usize; 2] = [16, 1024];
/// How far over the target the p90 of 1024 uncontrolled users is meant to be: the target is
/// `1024 / capacity / OVERLOAD` (users / capacity is the closed-loop response time).
const OVERLOAD: f64 = 5.0;

/// WC03's Figure 9: p90 seconds at 16 users (no control, control) and 1024 users (no control,
/// control), target 10 s.
const PAPER_FIGURE_9: [(&str, [f64; 4]); 7] = [
    ("login", [0.83, 0.59, 0.86, 3.84]),
    ("list_folders", [1.73, 0.57, 365.0, 5.75]),
    ("list_messages", [2.37, 0.58, 116.0, 9.28]),
    ("show_message", [0.70, 0.30, 30.1, 3.87]),
    ("delete", [1.00, 0.28, 11.3, 6.85]),
    ("refile", [1.00, 0.47, 10.6, 6.07]),
    ("search", [8.17, 9.92, 19.6, 18.1]),
];

/// The plan for this machine.
#[derive(Debug, Clone)]
struct Plan {
    users: Vec<usize>,
    /// Shortest warm-up.
    warmup_s: f64,
    /// The warm-up lasts at least this many closed-loop cycles (users / capacity seconds):
    /// a thousand users arriving at once take that long to spread over the request types.
    warmup_cycles: f64,
    /// Longest warm-up (keeps the quick form under a minute on a slow machine).
    max_warmup_s: f64,
    capacity: f64,
    duration_s: f64,
    target_s: f64,
}

impl Plan {
    fn new(lab: &Lab, capacity: f64) -> Plan {
        let target_s = (MAX_USERS as f64 / capacity / OVERLOAD).clamp(0.2, PAPER_TARGET_S);
        Plan {
            users: lab.pick(vec![16, 128, 1024], (1..=10).map(|k| 1usize << k).collect()),
            warmup_s: lab.pick(1.5, 4.0),
            // Two cycles in both forms: at 1024 users half a cycle (a 2 s warm-up in the quick
            // form) left one run in five unsettled for 3 s of its 4 (p90 of admitted 0.58 s
            // against 0.38 s, and 30% of what completed late: goodput 0.52 x capacity against
            // 0.63-0.75 x in the others).
            warmup_cycles: 2.0,
            max_warmup_s: lab.pick(4.0, 30.0),
            capacity,
            duration_s: lab.pick(4.0, 20.0),
            // Two decimals: a target that reads well in the report.
            target_s: (target_s * 100.0).round() / 100.0,
        }
    }

    fn time_scale(&self) -> f64 {
        self.target_s / PAPER_TARGET_S
    }

    fn warmup_s(&self, users: usize) -> f64 {
        let cycle_s = users as f64 / self.capacity;
        self.warmup_s
            .max(self.warmup_cycles * cycle_s)
            .min(self.max_warmup_s)
            .ceil()
    }

    fn steady(&self, users: usize) -> Steady {
        Steady {
            users,
            warmup_s: self.warmup_s(users),
            duration_s: self.duration_s,
            target_s: self.target_s,
            time_scale: self.time_scale(),
            honour_retry_after: true,
        }
    }

    fn describe(&self) -> Value {
        json!({
            "users": self.users,
            "warmup_s": self.users.iter().map(|&u| self.warmup_s(u)).collect::<Vec<_>>(),
            "duration_s": self.duration_s,
            "target_s": self.target_s,
            "time_scale": self.time_scale(),
            "think_s": mail::THINK.as_secs_f64() * self.time_scale(),
            "reject_wait_s": mail::REJECT_WAIT.as_secs_f64() * self.time_scale(),
        })
    }
}

/// One figure of a run's summary.
type Figure = fn(&RunSummary) -> Option<f64>;

/// One variant's runs, in increasing order of users.
struct Variant {
    name: &'static str,
    control: Control,
    runs: Vec<(usize, SteadyRun)>,
}

impl Variant {
    fn at(&self, users: usize) -> Option<&SteadyRun> {
        self.runs.iter().find(|(u, _)| *u == users).map(|(_, r)| r)
    }

    fn get(&self, users: usize, figure: Figure) -> Option<f64> {
        self.at(users).and_then(|r| figure(&r.summary))
    }
}

/// Runs every user count against one server with `control`, fewest users first: a user
/// population growing step by step, as in WC03 Section 4.3.
fn run_variant(
    lab: &Lab,
    name: &'static str,
    control: Control,
    plan: &Plan,
    capacity: &MailCapacity,
) -> Result<Variant> {
    // Ours also cuts a search that has run for a quarter of the target (SERT06's lever, with a
    // fixed threshold): after its wait in the queue it is unlikely to be answered in time. A
    // search's cost depends on its user's mailbox and words; at 1024 users a few ran for 1-2 s
    // with the slowdown and took 25-37% of the server's core, without one reply in time. Cut
    // at the whole target, five quick runs read 0.872 x capacity (0.829-0.926) and answered
    // 13-25 searches in a run's window; at half, 0.916 (0.883-0.928) and 16-40, both priced at
    // each type's mean cost. Priced request by request (`Server-Timing`), cut at half the
    // target five runs read 0.854 (0.826-0.872), the cut searches' work 0.3-0.4 of the 3.8
    // CPU-seconds the handlers spent; at a quarter three read 0.897 (0.882-0.932), at an
    // eighth 0.872 (0.872-0.876). The service also refuses, before it runs, a search it
    // predicts the terminator would cut (see the module's documentation).
    let options = match control {
        Control::SingleStage { .. } => ServeOptions::cutting_searches(plan.target_s),
        _ => ServeOptions::default(),
    };
    let server = MailServer::start_with(lab, name, &control, &options)?;
    let mut runs = Vec::new();
    for &users in &plan.users {
        lab.log(format!("{name}: {users} users"));
        let r = steady::run_priced(lab, &server, &control, &plan.steady(users), capacity);
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                server.stop(lab, name);
                return Err(e);
            }
        };
        runs.push((users, r));
        // Requests left queued by the departed users are cancelled with their connections;
        // a pause lets the stages drop them before the next population arrives.
        std::thread::sleep(Duration::from_millis(500));
    }
    server.stop(lab, name);
    Ok(Variant {
        name,
        control,
        runs,
    })
}

impl Scenario for MailUsers {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "mail-users"
    }

    fn about(&self) -> &'static str {
        "e-mail service from 2 to 1024 users, with and without session-aware overload control \
         (WC03 Figures 8, 9)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "ours/goodput_fraction_of_capacity",
            "ours/p90_after_settle_over_target",
            // Not the rejected fraction (it stays in the summary): 1024 users' load is sized by
            // the calibration, so what is refused follows the machine's speed in the run
            // against the calibration's, as `goodput`'s does: 0.540 at 0.66 x, 0.523 at 0.92 x
            // and 0.404 at 1.05 x in three runs on 2026-12-04, with goodput 0.954-0.960.
            // Not the p90 of completed requests: the requests that complete within a
            // quick run's 4 s at 1024 users are the fast ones, and that p90 read 0.017 s in one
            // of five runs (about 3 s in the others). Nor the mean by Little's law over the
            // target (it stays in the summary): it is 1024 users over the throughput, divided
            // by a target that follows the calibrated capacity, so it carries the noise of
            // two measurements of the machine's speed: in two sets of runs on 2026-12-02 it
            // strayed 17% and 34% from its median, the goodput 3% and 22% (the machine ran
            // the uncontrolled server at 0.72-1.08 x the calibration's speed in the second).
            // Nor what the service serves in time without control (it stays in the summary
            // and the report): at 1024 users with no control nearly every request
            // waits out the target in a queue, and the few that do not are whichever cheap
            // requests a collapse happens to let through, 0.278-0.407 x capacity (28% from the
            // median) in five runs on 2026-12-04 and 9-18% in the sets before, each run under
            // half of ours (0.918-0.973 x).
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let cap = crate::mail::MailCapacity::designed(crate::mail::CORES);
        let capacity = cap.per_s;
        let plan = Plan::new(lab, capacity);
        let variants = vec![
            run_variant(lab, "none", Control::None, &plan, &cap)?,
            run_variant(lab, "ours", Control::sessions(plan.target_s), &plan, &cap)?,
        ];
        plots(lab, &variants, &plan)?;
        let top = *plan.users.last().unwrap_or(&MAX_USERS);
        let mut summary = Map::new();
        for v in &variants {
            if let Some(r) = v.at(top) {
                let mut s = r.summary.to_json();
                if let (Some(m), Some(mean)) =
                    (s.as_object_mut(), r.summary.mean_response_littles_s)
                {
                    let over = mean / plan.target_s;
                    m.insert("mean_response_littles_over_target".into(), json!(over));
                }
                summary.insert(v.name.to_string(), s);
            }
        }
        Ok(Outcome {
            paper: "WC03 Figures 8 and 9".into(),
            config: json!({
                "plan": plan.describe(),
                "variants": variants.iter().map(|v| json!({"name": v.name, "control": v.control.describe()})).collect::<Vec<_>>(),
                "server": "one per variant, the user counts in increasing order",
                "corpus_users": mail::CORPUS_USERS,
                "cores": mail::CORES,
                "database": "sqlite",
                "capacity": cap.describe(),
            }),
            summary,
            data: Value::Object(
                variants
                    .iter()
                    .map(|v| {
                        let points: Vec<Value> = v
                            .runs
                            .iter()
                            .map(|(u, r)| json!({"users": u, "summary": r.summary, "types": r.types}))
                            .collect();
                        (v.name.to_string(), Value::Array(points))
                    })
                    .collect(),
            ),
            checks: checks(&variants, &plan),
            report: report(&variants, &plan, capacity),
        })
    }
}

/// Request type `name`'s figures in variant `v` at `users`.
fn type_row<'a>(v: Option<&'a Variant>, users: usize, name: &str) -> Option<&'a TypeRow> {
    v.and_then(|v| v.at(users))
        .and_then(|r| r.types.iter().find(|k| k.name == name))
}

fn by_name<'a>(variants: &'a [Variant], name: &str) -> Option<&'a Variant> {
    variants.iter().find(|v| v.name == name)
}

fn checks(variants: &[Variant], plan: &Plan) -> Vec<Check> {
    let t = plan.target_s;
    let (Some(none), Some(ours)) = (by_name(variants, "none"), by_name(variants, "ours")) else {
        return Vec::new();
    };
    let top = *plan.users.last().unwrap_or(&MAX_USERS);
    let low = *plan.users.first().unwrap_or(&2);
    let mut out = Vec::new();
    let p_ours = ours.get(top, |s| s.p90_admitted_after_settle_s);
    out.push(Check::new(
        format!(
            "with control, the p90 of admitted requests at {top} users stays at the target \
             (within {SETTLE_TOLERANCE} x after settling)"
        ),
        p_ours.is_some_and(|p| p <= SETTLE_TOLERANCE * t),
        format!("ours {} s against target {t} s", fmt(p_ours)),
    ));
    // The goal: goodput at 1024 users >= 0.9 x capacity, in the processor's work.
    let g_ours = ours.get(top, |s| s.goodput_fraction_of_capacity);
    out.push(Check::new(
        format!("with control, goodput at {top} users is at least 0.9 x capacity"),
        g_ours.is_some_and(|g| g >= 0.9),
        format!("ours {} x capacity", fmt(g_ours)),
    ));
    let p_none = none.get(top, |s| s.p90_admitted_s);
    let mean_none = none.get(top, |s| s.mean_response_littles_s);
    out.push(Check::new(
        format!("without control, response times at {top} users exceed the target (p90 of completed requests, or the mean by Little's law)"),
        p_none.is_some_and(|p| p > t) || mean_none.is_some_and(|m| m > t),
        format!("none: p90 {} s, mean by Little's law {} s, against target {t} s", fmt(p_none), fmt(mean_none)),
    ));
    let rejected: Vec<(usize, f64)> = plan
        .users
        .iter()
        .filter_map(|&u| ours.get(u, |s| Some(s.rejected_fraction)).map(|r| (u, r)))
        .collect();
    // Each overloaded point against the light load, not one overloaded point against the next:
    // refused clients wait the `Retry-After` they are sent, which grows while refusals
    // outnumber admissions, so past saturation the requests at the door do not grow with the
    // users. In three quick runs 128 users were refused 0.33-0.47 of their requests and 1024
    // users 0.41-0.54; the run that refused 1024 users least (0.406 against 0.474 at 128)
    // served the most, 0.939 x capacity.
    let grows = rejected
        .split_first()
        .is_some_and(|(light, rest)| !rest.is_empty() && rest.iter().all(|r| r.1 >= light.1 + 0.2));
    out.push(Check::new(
        "with control, the overloaded points are refused more than the light load (each by +0.2)",
        grows,
        rejected
            .iter()
            .map(|(u, r)| format!("{u}: {r:.3}"))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    let r_low = ours.get(low, |s| Some(s.rejected_fraction));
    out.push(Check::new(
        format!("with control, a light load ({low} users) is left alone (rejected <= 2%)"),
        r_low.is_some_and(|r| r <= 0.02),
        format!("ours at {low} users: rejected {}", fmt(r_low)),
    ));
    out
}

fn plots(lab: &Lab, variants: &[Variant], plan: &Plan) -> Result<()> {
    let x = |u: usize| (u as f64).log2();
    let line = |v: &Variant, figure: Figure| Series {
        name: v.name.to_string(),
        points: v
            .runs
            .iter()
            .filter_map(|(u, r)| figure(&r.summary).map(|y| (x(*u), y)))
            .collect(),
    };
    let mut p90: Vec<Series> = variants
        .iter()
        .map(|v| line(v, |s| s.p90_admitted_after_settle_s))
        .collect();
    let (lo, hi) = (
        x(*plan.users.first().unwrap_or(&2)),
        x(*plan.users.last().unwrap_or(&MAX_USERS)),
    );
    p90.push(Series::new(
        "target",
        vec![(lo, plan.target_s), (hi, plan.target_s)],
    ));
    lab.plot(
        "p90",
        &LineChart {
            title: "p90 of admitted requests vs users (WC03 Figure 8)".into(),
            x_label: "log2(users)".into(),
            y_label: "p90 response time (s)".into(),
            series: p90,
        },
    )?;
    lab.plot(
        "rejected",
        &LineChart {
            title: "fraction of requests rejected vs users (WC03 Figure 8)".into(),
            x_label: "log2(users)".into(),
            y_label: "rejected fraction".into(),
            series: variants
                .iter()
                .map(|v| line(v, |s| Some(s.rejected_fraction)))
                .collect(),
        },
    )?;
    Ok(())
}

fn report(variants: &[Variant], plan: &Plan, capacity: f64) -> String {
    let t = plan.target_s;
    let mut s = format!(
        "**Scale-down.** The service runs on an emulated processor of {} core(s) \
         (`seda serve mail --cores`, as in `mail-spike`), {capacity:.0} requests per second on \
         the user model's mix, and goodput at each point is compared with the capacity on the mix it \
         served ({}). \
         WC03 used a 10 s target, 20 ms think time and a 5 s wait after a rejection, with about \
         15 minutes per point after a 20 s warm-up. Here the target is {t} s, chosen so that \
         1024 uncontrolled users would wait about {OVERLOAD} times the target (1024 / capacity \
         / {OVERLOAD}); think time and wait shrink by the same factor ({:.0} ms, {:.2} s). Each \
         point runs {:.1} s after a warm-up of at least {:.1} s and {} closed-loop cycles (users \
         / capacity), at most {:.0} s ({:.0} s at {MAX_USERS} users), all points of a variant against one server, \
         fewest users first.\n\n",
        mail::CORES,
        mail::HOW,
        20.0 * plan.time_scale(),
        5.0 * plan.time_scale(),
        plan.duration_s,
        plan.warmup_s,
        plan.warmup_cycles,
        plan.max_warmup_s,
        plan.warmup_s(MAX_USERS),
    );
    s += "### p90 and rejections by users (WC03 Figure 8)\n\n| users | p90 no control | mean by Little's law, no control | p90 with control | rejected with control | goodput no control / capacity | goodput with control / capacity |\n|---|---|---|---|---|---|---|\n";
    let (none, ours) = (by_name(variants, "none"), by_name(variants, "ours"));
    let get = |v: Option<&Variant>, u: usize, f: Figure| v.and_then(|v| v.get(u, f));
    for &u in &plan.users {
        s += &format!(
            "| {u} | {} s | {} s | {} s | {} | {} | {} |\n",
            fmt(get(none, u, |s| s.p90_admitted_after_settle_s)),
            fmt(get(none, u, |s| s.mean_response_littles_s)),
            fmt(get(ours, u, |s| s.p90_admitted_after_settle_s)),
            pct(get(ours, u, |s| Some(s.rejected_fraction))),
            fmt(get(none, u, |s| s.goodput_fraction_of_capacity)),
            fmt(get(ours, u, |s| s.goodput_fraction_of_capacity)),
        );
    }
    s += &format!(
        "\nThe p90 is over the measured run after the simulator's settling rule (every later \
          1 s interval at or under {SETTLE_TOLERANCE} x target); where a run never settles, it is the last \
          interval's. It counts only requests that completed: without control, the requests \
          of the most expensive type (list messages) can sit in their stage's queue for longer \
          than a short run, so the percentile of what completed misses them. The mean by \
          Little's law counts them: every user is waiting for a reply, thinking, or waiting \
          after a rejection, so mean response = (users - rejections/s x wait) / requests/s - \
          think time.\n\n"
    );
    s += &format!(
        "### p90 by request type at 16 and 1024 users (WC03 Figure 9), in units of the target \
         (ours {t} s, the paper's 10 s)\n\n| type | 16 no control | 16 with control | 1024 no \
         control | 1024 with control | 1024 rejected with control | paper 16 no / with | paper \
         1024 no / with |\n|---|---|---|---|---|---|---|---|\n"
    );
    let rel = |x: Option<f64>| x.map_or("-".into(), |p| format!("{:.2}", p / t));
    for (name, paper) in PAPER_FIGURE_9 {
        let [a, b] = TABLE_USERS;
        s += &format!(
            "| {name} | {} | {} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |\n",
            rel(type_row(none, a, name).and_then(|k| k.p90_s)),
            rel(type_row(ours, a, name).and_then(|k| k.p90_s)),
            rel(type_row(none, b, name).and_then(|k| k.p90_s)),
            rel(type_row(ours, b, name).and_then(|k| k.p90_s)),
            pct(type_row(ours, b, name).and_then(|k| k.rejected_fraction)),
            paper[0] / PAPER_TARGET_S,
            paper[1] / PAPER_TARGET_S,
            paper[2] / PAPER_TARGET_S,
            paper[3] / PAPER_TARGET_S,
        );
    }
    s += "\n(A `-` is a type with no completed request, or a user count the quick form does not \
          run.)\n\n**The paper (WC03 Figures 8, 9):** with control the p90 stays near the 10 s \
          target from 2 to 1024 users while the rejected fraction grows with the load; without \
          control the p90 grows far past it. Per type, the controller meets the target for \
          every type but search at 1024 users, which is under 1% of the requests and so too \
          rare for its stage's controller to react in time.\n\n";
    s += "**Where we differ and why.** Our users are closed-loop with a negligible think \
          time, so without control the response time levels off near users / capacity instead \
          of growing without bound (the paper's Java and MySQL stack also slowed down under \
          contention, e.g. 365 s for list folders). Our controller is not WC03's token bucket \
          per stage but `session_aware` (SBAC02) shared by the request-type stages: it bounds \
          the service's queue by its departure rate (`response_time_tuned`), serves \
          established sessions before new logins, and lets a login fill only half of the \
          queue. A rejected user retries the rejected request in its session after the (scaled) \
          wait, or after the service's `Retry-After` where it asks for longer (the service \
          stretches it while refusals outnumber admissions), and ours cuts a search that has \
          run for a quarter of the target, and refuses before it runs one it predicts would \
          run that long (by what the same words cost per message of a mailbox); WC03's users logged in again, and with real sessions and \
          password hashes those re-logins swamped our login stage at 1024 users (1,073 logins \
          completed against 20,528 rejected, the p90 1.6 to 5 x the target).\n";
    s
}
