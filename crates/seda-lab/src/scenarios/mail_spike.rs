//! `mail-spike` (WC03 Figures 7 and 10): 3 users jump to 1000 or more (five times what the
//! service's designed capacity answers within the target), the target is a 1 s p90; no
//! control, our per-stage controller, and a fixed limit of 128 connections (HAProxy `maxconn
//! 128` in front, and the server's own connection cap). The service runs on the lab's emulated
//! processor ([`mail::MailCapacity::designed`]), so its capacity is known before the run.
//!
//! Ours also cuts searches ([`ServeOptions::cutting_searches`]).

use anyhow::Result;
use serde_json::{Map, json};

use seda_sim::summary::{RunSummary, SETTLE_TOLERANCE, spike_table};

use crate::figure::fmt;
use crate::mail::{self, Control, ServeOptions};
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::spike::{self, Front, Spike, SpikeRun};
use crate::{Lab, Scenario, haproxy};

/// The scenario.
pub struct MailSpike;

/// WC03's response-time target for the spike.
const PAPER_TARGET_S: f64 = 1.0;
/// The connection limit WC03 compares against.
const MAX_CONNECTIONS: usize = 128;

/// The spike: WC03's 3 users jumping to 1000 with a 1 s target, 20 ms think time and a 5 s
/// wait after a rejection. The quick form halves the time scale (target, think time and
/// wait). The spike has at least 1000 users, more where the capacity is so high that 1000
/// users would not load the server to 5 times the target without control (users / capacity
/// is the closed-loop response time).
pub fn calibrated(lab: &Lab, capacity: f64) -> Spike {
    let target_s = lab.pick(0.5, PAPER_TARGET_S);
    let users = ((capacity * 5.0 * target_s) as usize).clamp(1000, lab.pick(3000, 6000));
    Spike {
        base_users: 3,
        spike_users: users,
        before_s: lab.pick(2.0, 20.0),
        spike_s: lab.pick(10.0, 120.0),
        after_s: lab.pick(1.0, 20.0),
        target_s,
        time_scale: target_s / PAPER_TARGET_S,
    }
}

impl Scenario for MailSpike {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "mail-spike"
    }

    fn about(&self) -> &'static str {
        "e-mail service under a flash crowd: no control vs our per-stage controller vs a \
         128-connection limit (WC03 Figures 7, 10)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "ours/goodput_fraction_of_capacity",
            // Not the p90 of the admitted requests (it stays in the summary, the report and the
            // checks): under the target it is where the controller chose to sit, trading
            // rejections for latency, and it moved with the machine's speed against the
            // calibration's (0.254-0.355 s against 0.5 s, 24% from its median, in a set of five
            // on 2026-12-06 at 0.54-0.84 x that speed). What each admitted request was
            // promised, a reply within the target, the spike decides (0.999-1.000 there).
            "ours/within_target_of_processed",
            "ours/rejected_fraction",
            "none/goodput_fraction_of_capacity",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let cap = mail::MailCapacity::designed(mail::CORES);
        let capacity = cap.per_s;
        let spike = calibrated(lab, capacity);
        let haproxy_front: &Front = &|lab, backend| {
            let h = haproxy::Haproxy::start(lab, "haproxy", backend, MAX_CONNECTIONS)?;
            Ok((h.addr, h.child))
        };
        let mut variants: Vec<(&str, Control, Option<&Front>)> = vec![
            ("none", Control::None, None),
            ("ours", Control::ours(spike.target_s), None),
        ];
        let mut skipped = Vec::new();
        if haproxy::binary().is_some() {
            variants.push(("haproxy_maxconn_128", Control::None, Some(haproxy_front)));
        } else {
            lab.skipping(haproxy::missing())?;
            skipped.push("haproxy_maxconn_128: HAProxy is not installed (apt-get install haproxy)");
        }
        if !lab.quick || haproxy::binary().is_none() {
            variants.push(("own_cap_128", Control::ConnectionCap(MAX_CONNECTIONS), None));
        }
        let mut runs: Vec<(&str, SpikeRun)> = Vec::new();
        for (name, control, front) in &variants {
            // Ours also cuts searches (our lever beside admission); the peers' variants run the
            // service as it comes.
            let options = match *name {
                "ours" => ServeOptions::cutting_searches(spike.target_s),
                _ => ServeOptions::default(),
            };
            runs.push((
                name,
                spike::run(lab, name, control, &spike, &cap, *front, &options)?,
            ));
        }
        plots(lab, &runs, &spike)?;
        let mut summary = Map::new();
        for (name, r) in &runs {
            summary.insert((*name).to_string(), r.summary.to_json());
        }
        let checks = checks(&runs, &spike);
        Ok(Outcome {
            paper: "WC03 Figures 7 and 10".into(),
            config: json!({
                "spike": spike.describe(),
                "variants": variants.iter().map(|(n, c, _)| json!({"name": n, "control": c.describe()})).collect::<Vec<_>>(),
                "skipped": skipped,
                "corpus_users": mail::CORPUS_USERS,
                "database": "sqlite",
                "capacity": cap.describe(),
            }),
            summary,
            data: crate::outcome::by_name(
                runs.iter()
                    .map(|(n, r)| (*n, json!({"series": r.series, "controller_rate": r.rate}))),
            ),
            report: report(&runs, &spike, capacity, &skipped),
            checks,
        })
    }
}

fn run<'a>(runs: &'a [(&str, SpikeRun)], name: &str) -> Option<&'a RunSummary> {
    runs.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, r)| &r.summary)
}

fn get(runs: &[(&str, SpikeRun)], name: &str, f: fn(&RunSummary) -> Option<f64>) -> Option<f64> {
    run(runs, name).and_then(f)
}

/// The paper's claims and the issues' goals, each checked at its stated threshold.
fn checks(runs: &[(&str, SpikeRun)], spike: &Spike) -> Vec<Check> {
    let t = spike.target_s;
    let mut out = Vec::new();
    let ours = get(runs, "ours", |s| s.p90_admitted_after_settle_s);
    let none = get(runs, "none", |s| s.p90_admitted_s);
    out.push(Check::new(
        format!(
            "with control, the p90 of admitted requests stays at the target (within \
             {SETTLE_TOLERANCE} x after settling)"
        ),
        ours.is_some_and(|p| p <= SETTLE_TOLERANCE * t),
        format!("ours {} s against target {t} s", fmt(ours)),
    ));
    out.push(Check::new(
        "without control, response times grow far past the target (over 2 x)",
        none.is_some_and(|p| p > 2.0 * t),
        format!("none: p90 over the spike {} s", fmt(none)),
    ));
    // In server work, not requests: without control the stage that falls behind holds its
    // users in its queue while the cheaper types flow, so the uncontrolled server answers more
    // requests a second of a cheaper mix (one CI run: 333/s against ours 323/s). Goodput /
    // capacity prices each run's mix (see `mail::HOW`).
    let work = |s: &RunSummary| s.goodput_fraction_of_capacity;
    let (w_ours, w_none) = (get(runs, "ours", work), get(runs, "none", work));
    out.push(Check::new(
        "with control, goodput stays near capacity (>= 0.9 x)",
        w_ours.is_some_and(|g| g >= 0.9),
        format!("ours {} x capacity", fmt(w_ours)),
    ));
    let per_s = |n| fmt(get(runs, n, |s| Some(s.goodput_per_s)));
    out.push(Check::new(
        "with control, more of the server's work is answered within the target than without",
        w_ours.zip(w_none).is_some_and(|(o, n)| o > n),
        format!(
            "goodput / capacity ours {} ({}/s), none {} ({}/s)",
            fmt(w_ours),
            per_s("ours"),
            fmt(w_none),
            per_s("none")
        ),
    ));
    let rej = get(runs, "ours", |s| Some(s.rejected_fraction));
    out.push(Check::new(
        "with control, excess users get an explicit rejection",
        rej.is_some_and(|r| r > 0.05),
        format!("ours: rejected fraction {}", fmt(rej)),
    ));
    if let Some(p) = get(runs, "haproxy_maxconn_128", |s| s.max_admitted_s) {
        let silent = get(runs, "haproxy_maxconn_128", |s| {
            s.unanswered_clients_fraction
        })
        .unwrap_or(0.0);
        out.push(Check::new(
            "a fixed connection limit leaves many users waiting with no answer at all",
            silent > 0.1 || p > 2.0 * t,
            format!(
                "haproxy maxconn 128: {silent:.2} of users never answered, max response {p:.2} s"
            ),
        ));
    }
    out
}

fn plots(lab: &Lab, runs: &[(&str, SpikeRun)], spike: &Spike) -> Result<()> {
    spike::plot_p90(lab, spike, runs.iter().map(|(n, r)| (*n, r.p90.as_slice())))?;
    spike::plot_rejected(lab, runs.iter().map(|(n, r)| (*n, r.rejected.as_slice())))?;
    let rates: Vec<Series> = runs
        .iter()
        .filter(|(_, r)| !r.rate.is_empty())
        .map(|(n, r)| Series::new(*n, r.rate.clone()))
        .collect();
    if !rates.is_empty() {
        lab.plot(
            "controller",
            &LineChart::over_time(
                format!("controller of {} (WC03 Figure 7)", spike::FIGURE_7_STAGE),
                "admission rate (requests/s)",
                rates,
            ),
        )?;
    }
    Ok(())
}

fn report(runs: &[(&str, SpikeRun)], spike: &Spike, capacity: f64, skipped: &[&str]) -> String {
    let mut s = format!(
        "**Scale-down.** The service runs on an emulated processor of {} core(s), {capacity:.0} \
         requests per second on the user model's mix; each run's goodput is compared with the \
         capacity on the mix it served within the target ({}). WC03 spiked from 3 to 1000 users with a 1 s p90 target, \
         20 ms think time and a 5 s wait after a rejection. Here: {} users, target {} s, think \
         time {:.0} ms, wait {:.1} s (the quick form halves the time scale); without control \
         the closed-loop response time (users / capacity) is {:.1} s. Spike {:.0} s (WC03: about \
         150 s).\n\n",
        mail::CORES,
        mail::HOW,
        spike.spike_users,
        spike.target_s,
        20.0 * spike.time_scale,
        5.0 * spike.time_scale,
        spike.spike_users as f64 / capacity,
        spike.spike_s
    );
    let rows: Vec<(&str, &RunSummary)> = runs.iter().map(|(n, r)| (*n, &r.summary)).collect();
    s += &format!(
        "The table is `seda sim spike`'s: p90s in seconds over the spike and after settling, \
         settle time, goodput per second and as a multiple of capacity (xC), shares refused, \
         timed out or failed, and of users never answered, the slowest response.\n\n```\n{}```\n",
        spike_table(&rows)
    );
    s += "\n**The paper (WC03 Figure 10):** without control, response times grow without bound \
          during the spike; with control and a 1 s target there is a small increase at the \
          onset and response times quickly stabilise, with 70–80% of requests rejected; with a \
          128-connection limit response times are large and over 561 of the 1000 clients saw \
          connection timeouts.\n\n";
    s += "**Where we differ and why.** SQLite in the server's process answers a request in \
          about a hundred microseconds, as fast as the load generator handles a reply, so \
          served at this machine's speed the client's core saturates first and its own queue \
          of unread replies, invisible to any server, dominates the response time. Each \
          request holding an emulated processor for its cost from WC03's table emulates the \
          paper's slower server and keeps the bottleneck in the stages, where the controller \
          sees it, at a capacity that does not move with this machine. Our users are closed-loop, so without control the \
          response time levels off at about users / capacity instead of growing without bound \
          (the paper's Java and MySQL stack also slowed down under contention). Our controller \
          is `response_time_tuned` (per stage), not WC03's token-bucket controller, which on this \
          service reaches only about half the capacity (see `seda sim spike`). Ours also cuts \
          a search that has run for a quarter of the target (SERT06's lever) and refuses \
          one the service predicts would run that long; the other variants run the service \
          as it comes.\n";
    for k in skipped {
        s += &format!("\nSkipped: {k}.\n");
    }
    s
}
