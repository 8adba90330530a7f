//! `controllers`: the flash crowd of `mail-spike` against every admission controller, the
//! seeds' and the peers', each per stage on the real e-mail service.

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::averages::{mean, standard_error};
use crate::mail;
use crate::mail::{Control, ServeOptions};
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::scenarios::mail_spike::calibrated;
use crate::spike::{self, Spike, SpikeRun};
use crate::{Lab, Scenario};
use seda_sim::summary::{RunSummary, SETTLE_TOLERANCE, spike_table};

/// Our controller, the one the comparison judges the peers against.
const OURS: &str = seda_control::catalogue::RESPONSE_TIME_TUNED;

/// The scenario.
pub struct Controllers;

/// The controllers compared, in the order run: none, then the catalogue's compared
/// controllers (ours and the seeds' first). The quick form runs the first five.
fn kinds() -> Vec<&'static str> {
    std::iter::once("none")
        .chain(seda_control::catalogue::compared().map(|e| e.name))
        .collect()
}

/// What `kind` is, from the catalogue.
fn about(kind: &str) -> &'static str {
    seda_control::catalogue::entry(kind).map_or("no admission control", |e| e.about)
}

/// The control for `kind`, aimed at the target as its catalogue entry says.
fn control(kind: &str, target_s: f64) -> Result<Control> {
    if kind == "none" {
        return Ok(Control::None);
    }
    let entry = seda_control::catalogue::entry(kind)?;
    Ok(Control::PerStage {
        kind: kind.into(),
        params: entry
            .aimed(std::time::Duration::from_secs_f64(target_s))
            .into_iter()
            .collect(),
    })
}

impl Scenario for Controllers {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "controllers"
    }

    fn about(&self) -> &'static str {
        "the mail-spike flash crowd against every controller, the seeds' and the peers' \
         (Vegas, Gradient2, AIMD, Envoy gradient, CoDel)"
    }

    /// WC03's own controller (`response_time`) stays in the summary and the report, not here:
    /// its token bucket climbs by a constant step each period and a 6 s spike ends before it
    /// settles, so its goodput says where the climb stood (0.590-0.868 x capacity in five runs
    /// on 2026-12-03, the lowest with its p90 at 1.09 s); `per-stage` leaves out its figures
    /// for the same reason. It trailed ours in each of those five runs.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "response_time_tuned/goodput_fraction_of_capacity",
            // Not the p90 after settling (it stays in the summary, the report and the checks):
            // a quick spike lasts 6 s, and that p90 is read while the controller still moves,
            // far under the target and wherever its climb stood (it strayed 15-41% from its
            // median in sets of five on 2026-12-04). What each admitted request was promised,
            // a reply within the target, a short spike decides.
            "response_time_tuned/within_target_of_processed",
            "vegas/goodput_fraction_of_capacity",
            "codel/goodput_fraction_of_capacity",
            "none/goodput_fraction_of_capacity",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let cap = crate::mail::MailCapacity::designed(crate::mail::CORES);
        let capacity = cap.per_s;
        let spike = Spike {
            before_s: lab.pick(1.0, 10.0),
            spike_s: lab.pick(6.0, 60.0),
            after_s: lab.pick(1.0, 5.0),
            ..calibrated(lab, capacity)
        };
        let all = kinds();
        let kinds = &all[..lab.pick(5, all.len()).min(all.len())];
        // Every variant runs the service as `mail-spike`'s ours does, cutting long searches, so
        // that only the admission controller differs.
        let options = ServeOptions::cutting_searches(spike.target_s);
        let mut runs: Vec<(&str, SpikeRun)> = Vec::new();
        let mut described = Vec::new();
        for kind in kinds {
            let c = control(kind, spike.target_s)?;
            described.push(json!({"kind": kind, "what": about(kind), "control": c.describe()}));
            runs.push((
                kind,
                spike::run(lab, kind, &c, &spike, &cap, None, &options)?,
            ));
        }
        let chart = |title: &str, y: &str, pick: fn(&SpikeRun) -> &Vec<(f64, f64)>| {
            let lines = runs.iter().map(|(n, r)| Series::new(*n, pick(r).clone()));
            LineChart::over_time(title, y, lines.collect())
        };
        lab.plot(
            "p90",
            &chart("p90 response time of admitted requests", "seconds", |r| {
                &r.p90
            }),
        )?;
        lab.plot(
            "rejected",
            &chart("fraction of requests rejected", "fraction", |r| &r.rejected),
        )?;
        let mut summary = Map::new();
        for (n, r) in &runs {
            summary.insert((*n).to_string(), r.summary.to_json());
        }
        Ok(Outcome {
            paper: "WC03 Figure 10's spike, with the peers' controllers".into(),
            config: json!({
                "spike": spike.describe(),
                "controllers": described,
                "capacity": cap.describe(),
            }),
            summary,
            data: crate::outcome::by_name(
                runs.iter().map(|(n, r)| (*n, json!({"series": r.series}))),
            ),
            checks: checks(&runs, &spike),
            report: report(&runs, &spike, capacity),
        })
    }
}

/// Goodput counts only requests answered within the target, so a controller that admits too
/// much (late answers) or too little (idle server) both lose. It is compared in the server's
/// work (goodput / capacity: CPU-seconds of requests answered in time per CPU-second), not in
/// requests: the controllers serve different mixes, and one that turns the costly types away
/// answers more requests with less work.
fn leader<'a>(runs: &[(&'a str, SpikeRun)]) -> Option<(&'a str, f64)> {
    ranked(runs).first().map(|(n, s)| (*n, work(s)))
}

/// The second highest goodput within the target, in server work.
fn runner_up<'a, 'b>(runs: &'b [(&'a str, SpikeRun)]) -> Option<(&'a str, &'b RunSummary)> {
    ranked(runs).get(1).copied()
}

/// The runs by goodput within the target, in server work, highest first.
fn ranked<'a, 'b>(runs: &'b [(&'a str, SpikeRun)]) -> Vec<(&'a str, &'b RunSummary)> {
    let mut by_work: Vec<(&str, &RunSummary)> =
        runs.iter().map(|(n, r)| (*n, &r.summary)).collect();
    by_work.sort_by(|a, b| work(b.1).total_cmp(&work(a.1)));
    by_work
}

/// Goodput in the server's work: CPU-seconds of requests answered within the target per
/// CPU-second.
fn work(s: &RunSummary) -> f64 {
    s.goodput_fraction_of_capacity.unwrap_or(0.0)
}

/// The handler CPU, in seconds, a run spent beyond what its requests answered in time said
/// they cost (its `handler_cpu_s` against `served_mix` x `cost_s_per_type`), and the type
/// that wasted the most, with how much; last, all its handler CPU.
fn wasted(s: &RunSummary) -> Option<(f64, String, f64, f64)> {
    let get = |key: &str| s.extra.get(key)?.as_object().cloned();
    let (cpu, served, cost) = (
        get("handler_cpu_s")?,
        get("served_mix")?,
        get("cost_s_per_type")?,
    );
    let mut by_type: Vec<(String, f64)> = cpu
        .iter()
        .filter_map(|(kind, c)| {
            let n = served.get(kind).and_then(Value::as_f64).unwrap_or(0.0);
            let price = cost.get(kind).and_then(Value::as_f64).unwrap_or(0.0);
            Some((kind.clone(), (c.as_f64()? - n * price).max(0.0)))
        })
        .collect();
    by_type.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total = by_type.iter().map(|(_, w)| w).sum();
    let all = cpu.values().filter_map(Value::as_f64).sum();
    let (kind, most) = by_type.into_iter().next()?;
    Some((total, kind, most, all))
}

fn checks(runs: &[(&str, SpikeRun)], spike: &Spike) -> Vec<Check> {
    let run = |name: &str| {
        runs.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| &r.summary)
    };
    let ours = run(OURS).map_or(0.0, work);
    let best = leader(runs).map_or(0.0, |(_, g)| g);
    let none = run("none").map_or(0.0, work);
    let ours_p90 = run(OURS).and_then(|s| s.p90_admitted_after_settle_s);
    let leader_name = leader(runs).map_or("-", |(n, _)| n);
    vec![
        Check::observed(
            "our controller has the highest goodput within the target (in server work)",
            leader_name == OURS,
            match leader(runs) {
                Some((OURS, g)) => format!("ours leads at {g:.3} x capacity"),
                Some((n, g)) => {
                    format!(
                        "{n} leads at {g:.3} x capacity, ours {ours:.3} x (the report says why)"
                    )
                }
                None => "no runs".into(),
            },
        ),
        // Observed: which controller leads is the experiment's finding, not a claim of the
        // papers; the report names the leader.
        Check::observed(
            "our controller's goodput within the target is at or near the best (quick form: >= 0.8 x the best)",
            best > 0.0 && ours >= 0.8 * best,
            format!("ours {ours:.3} x capacity, best {best:.3} x"),
        ),
        Check::new(
            "any adaptive control beats none on goodput within the target",
            ours > none,
            format!("ours {ours:.3} x capacity, none {none:.3} x"),
        ),
        Check::new(
            format!(
                "our controller keeps admitted p90 at the target (within {SETTLE_TOLERANCE} x \
                 after settling)"
            ),
            ours_p90.is_some_and(|p| p <= SETTLE_TOLERANCE * spike.target_s),
            format!(
                "p90 after settling {}, target {} s",
                ours_p90.map_or("-".into(), |p| format!("{p:.3} s")),
                spike.target_s
            ),
        ),
    ]
}

fn report(runs: &[(&str, SpikeRun)], spike: &Spike, capacity: f64) -> String {
    let rows: Vec<(&str, &RunSummary)> = runs.iter().map(|(n, r)| (*n, &r.summary)).collect();
    let mut s = format!(
        "The spike of `mail-spike` ({} -> {} users, target {} s, an emulated processor of {} \
         core(s), {capacity:.0} requests per second on the user model's mix), {:.0} s long, against \
         each controller placed on every request-type stage; in every variant the service cuts a \
         search that runs past a quarter of the target (and refuses one it predicts would), as \
         `mail-spike`'s ours does, so that only admission differs. Goodput counts requests answered \
         within the target. How capacity is set: {}. The table is `seda sim spike`'s: p90s \
         in seconds over the spike and after settling, settle time, goodput per second and as a \
         multiple of the capacity on the mix that run served (xC), shares refused, timed out or \
         failed, and of users never answered.\n\n```\n{}```\n",
        spike.base_users,
        spike.spike_users,
        spike.target_s,
        crate::mail::CORES,
        spike.spike_s,
        mail::HOW,
        spike_table(&rows),
    );
    if let Some((n, g)) = leader(runs) {
        s += &format!(
            "\nHighest goodput within the target, in server work: **{n}** ({g:.3} x capacity)."
        );
        if n != OURS {
            let get = |name: &str| {
                runs.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, r)| &r.summary)
            };
            if let (Some(peer), Some(ours)) = (get(n), get(OURS)) {
                s += &format!(" A peer wins this run: {}", why_peer_wins(n, peer, ours));
            }
        } else if let Some((ours, (runner, second))) =
            runs.iter().find(|(k, _)| *k == n).zip(runner_up(runs))
            && let Some(seconds) = seconds_compared(("ours", &ours.1.summary), (runner, second))
        {
            s += &format!(" The runner-up is {runner}. {seconds}");
        }
        s += "\n";
    }
    s += "\n**Notes.** The peers' limits (Vegas, Gradient2, AIMD, Envoy) bound concurrency from \
          latency gradients and do not know the operator's target; CoDel drops by queueing \
          delay against its own 5 ms target. They can keep latency far below the target and \
          still reject more than needed, which costs goodput only when the server idles. WC03's \
          own controller starts at a low rate and raises it slowly, so it admits too little \
          during a short spike (the simulator shows the same: `seda sim spike`).\n";
    s
}

/// Why `peer` served more within the target than ours, from the two runs' figures: ours
/// admitted too much (its admitted p90 over the target, so its answers came late), turned away
/// work the server could have done in time (more rejected with its p90 under the target), or
/// settled later.
fn why_peer_wins(name: &str, peer: &RunSummary, ours: &RunSummary) -> String {
    let target = ours.target_s;
    let p90 = |s: &RunSummary| s.p90_admitted_s.unwrap_or(f64::NAN);
    let mut why = Vec::new();
    if p90(ours) > target && p90(peer) < p90(ours) {
        why.push(format!(
            "ours admitted too much: its p90 over the spike was {:.2} s against the {target} s \
             target ({name}: {:.2} s), so more of its answers came too late to count",
            p90(ours),
            p90(peer)
        ));
    }
    if ours.rejected_fraction > peer.rejected_fraction + 0.05 {
        why.push(format!(
            "ours turned away more ({:.0}% rejected against {:.0}%){}",
            ours.rejected_fraction * 100.0,
            peer.rejected_fraction * 100.0,
            if p90(ours) <= target {
                format!(
                    " while its p90 ({:.2} s) was under the target: work the server could have \
                     done in time",
                    p90(ours)
                )
            } else {
                String::new()
            }
        ));
    }
    if p90(peer) > target {
        why.push(format!(
            "{name} missed the target (p90 {:.2} s) yet answered more requests within it: in a \
             spike this short its backlog had not yet grown enough to make most answers late",
            p90(peer)
        ));
    }
    if let (Some(a), Some(b)) = (ours.settle_time_s, peer.settle_time_s)
        && a > b + 1.0
    {
        why.push(format!("ours took {a:.0} s to settle, {name} {b:.0} s"));
    }
    // Less work in the handlers: priced in server work, ours reads lower where its server
    // spent more of the spike outside request work, refusing or idle (one quick run: 611/s
    // each, ours' handlers 5.14 s of CPU against Vegas's 5.73 s, 0.831 against 0.936).
    let busy = |s: &RunSummary| -> Option<f64> {
        let cpu = s.extra.get("handler_cpu_s")?.as_object()?;
        Some(cpu.values().filter_map(Value::as_f64).sum())
    };
    if let (Some(a), Some(b)) = (busy(ours), busy(peer))
        && a < 0.95 * b
    {
        why.push(format!(
            "ours' handlers worked {a:.2} s of CPU against {name}'s {b:.2} s{}: its server \
             spent more of the spike outside request work, refusing {:.0}% or idle",
            if ours.goodput_per_s >= 0.98 * peer.goodput_per_s {
                format!(
                    " while answering as many requests or more in time ({:.0}/s against {:.0}/s)",
                    ours.goodput_per_s, peer.goodput_per_s
                )
            } else {
                String::new()
            },
            ours.rejected_fraction * 100.0
        ));
    }
    // Work that bought no answer in time: the processor's work over the run (a light second either
    // side of the spike) beyond what the requests answered in time during the spike said they
    // cost. In one quick run ours' handlers spent 1.28 s on searches whose answers in time
    // cost 0.45 s (searches cut at half the target), CoDel's 0.51 s for 0.48 s.
    if let (Some((a, kind, most, all)), Some((b, ..))) = (wasted(ours), wasted(peer))
        && a > b + 0.05 * all
    {
        why.push(format!(
            "ours' handlers spent {a:.2} s of the processor on work that bought no answer in time \
             against {name}'s {b:.2} s, the most on {kind} ({most:.2} s): requests cut, given \
             up or answered late"
        ));
    }
    let gap = format!(
        "{name} {:.3} x capacity against ours {:.3} x within the target ({:.0}/s against \
         {:.0}/s)",
        work(peer),
        work(ours),
        peer.goodput_per_s,
        ours.goodput_per_s
    );
    let seconds = seconds_compared((name, peer), ("ours", ours));
    if why.is_empty() {
        format!(
            "{gap}; their p90s ({:.2} s, {:.2} s), rejected shares and settle times do not \
             explain the gap. {}",
            p90(peer),
            p90(ours),
            seconds.unwrap_or_else(|| "One run cannot tell it from noise (`seda lab repeat \
                controllers` gives each controller's spread over runs)."
                .into())
        )
    } else {
        let seconds = seconds.map(|s| format!(" {s}")).unwrap_or_default();
        format!("{gap}: {}.{seconds}", why.join("; "))
    }
}

/// A run's goodput / capacity second by second over the spike
/// (`goodput_fraction_by_second`).
fn by_second(s: &RunSummary) -> Vec<f64> {
    let pairs: Vec<(f64, f64)> = s
        .extra
        .get("goodput_fraction_by_second")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    pairs.into_iter().map(|(_, f)| f).collect()
}

/// Where the variant `ahead` gained on `behind`, second by second over the spike, and whether
/// one run can tell the two apart: each mean over its seconds has a standard error (the
/// seconds' spread over the root of their number), and a gap under twice the two combined is
/// within what the run resolves. The variants run one after another, so their seconds are not
/// paired: the machine's speed and the returning users' waves differ between them.
fn seconds_compared(
    (ahead_name, ahead): (&str, &RunSummary),
    (behind_name, behind): (&str, &RunSummary),
) -> Option<String> {
    let (a, b) = (by_second(ahead), by_second(behind));
    let (ea, eb) = (standard_error(&a)?, standard_error(&b)?);
    let (k, most) = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x - y)
        .enumerate()
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    let gap = mean(a.iter().copied()) - mean(b.iter().copied());
    let resolves = 2.0 * (ea * ea + eb * eb).sqrt();
    let list = |xs: &[f64]| {
        xs.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "Second by second over the spike, {ahead_name} served {} and {behind_name} {} x \
         capacity; {behind_name} fell furthest behind in the spike's second {} ({most:.2} x \
         capacity). The gap of their means, {gap:.3}, is {} twice their combined standard error \
         over those seconds ({resolves:.3}){}.",
        list(&a),
        list(&b),
        k + 1,
        if gap <= resolves { "within" } else { "beyond" },
        if gap <= resolves {
            ": this run does not tell the two apart"
        } else {
            ": more than the seconds' own spread explains"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_win_is_explained_from_the_figures() {
        let mut ours = RunSummary::new(0.5);
        ours.goodput_per_s = 100.0;
        ours.p90_admitted_s = Some(0.2);
        ours.rejected_fraction = 0.8;
        let mut peer = RunSummary::new(0.5);
        peer.goodput_per_s = 150.0;
        peer.p90_admitted_s = Some(0.4);
        peer.rejected_fraction = 0.6;
        let why = why_peer_wins("vegas", &peer, &ours);
        assert!(
            why.contains("turned away more (80% rejected against 60%)"),
            "{why}"
        );
        ours.p90_admitted_s = Some(0.9);
        let why = why_peer_wins("vegas", &peer, &ours);
        assert!(why.contains("admitted too much"), "{why}");
        // No control misses the target yet wins a short spike: said so, not blamed on ours.
        peer.p90_admitted_s = Some(3.0);
        peer.rejected_fraction = 0.0;
        let why = why_peer_wins("none", &peer, &ours);
        assert!(!why.contains("admitted too much"), "{why}");
        assert!(why.contains("none missed the target (p90 3.00 s)"), "{why}");
    }

    #[test]
    fn the_same_answers_on_less_work_are_said_to_be_so() {
        let cpu = |s: f64| serde_json::json!({"login": s / 2.0, "search": s / 2.0});
        let mut ours = RunSummary::new(0.5).with("handler_cpu_s", cpu(5.14));
        ours.goodput_per_s = 610.5;
        ours.p90_admitted_s = Some(0.24);
        ours.rejected_fraction = 0.65;
        let mut peer = RunSummary::new(0.5).with("handler_cpu_s", cpu(5.73));
        peer.goodput_per_s = 611.0;
        peer.p90_admitted_s = Some(0.03);
        peer.rejected_fraction = 0.65;
        let why = why_peer_wins("vegas", &peer, &ours);
        assert!(
            why.contains(
                "ours' handlers worked 5.14 s of CPU against vegas's 5.73 s while \
                 answering as many requests or more in time (610/s against 611/s)"
            ),
            "{why}"
        );
        ours.goodput_per_s = 500.0;
        let why = why_peer_wins("vegas", &peer, &ours);
        assert!(why.contains("handlers worked 5.14 s"), "{why}");
        assert!(!why.contains("as many requests"), "{why}");
        // As much work in both: not the reason.
        let peer = ours.clone();
        assert!(!why_peer_wins("vegas", &peer, &ours).contains("handlers worked"));
    }

    #[test]
    fn work_that_bought_no_answer_in_time_is_named() {
        use serde_json::json;
        // Run 4 of a quick set: ours' searches cost 1.28 s for 47 answered in time at 9.6 ms.
        let summary = |search_cpu: f64, in_time: u64| {
            RunSummary::new(0.5)
                .with("handler_cpu_s", json!({"login": 0.6, "search": search_cpu}))
                .with("served_mix", json!({"login": 600, "search": in_time}))
                .with("cost_s_per_type", json!({"login": 0.001, "search": 0.0096}))
        };
        let (ours, peer) = (summary(1.28, 47), summary(0.51, 50));
        let why = why_peer_wins("codel", &peer, &ours);
        assert!(
            why.contains(
                "ours' handlers spent 0.83 s of the processor on work that bought no answer in time \
                 against codel's 0.03 s, the most on search (0.83 s)"
            ),
            "{why}"
        );
        assert!(!why_peer_wins("codel", &ours, &ours).contains("bought no answer"));
    }

    #[test]
    fn a_gap_within_the_seconds_spread_is_said_to_be_so() {
        let seconds = |xs: &[f64]| {
            let pairs: Vec<(f64, f64)> =
                xs.iter().enumerate().map(|(i, x)| (i as f64, *x)).collect();
            RunSummary::new(0.5).with("goodput_fraction_by_second", pairs)
        };
        // Ours lost its first second to the onset; otherwise alike.
        let ours = seconds(&[0.80, 1.00, 0.99, 1.01, 0.98, 1.00]);
        let peer = seconds(&[0.95, 0.99, 1.00, 0.99, 1.00, 0.99]);
        let why = seconds_compared(("vegas", &peer), ("ours", &ours)).unwrap();
        assert!(
            why.contains("ours 0.80 1.00 0.99 1.01 0.98 1.00 x"),
            "{why}"
        );
        assert!(
            why.contains("ours fell furthest behind in the spike's second 1 (0.15 x"),
            "{why}"
        );
        assert!(why.contains("within twice"), "{why}");
        // A steady gap in every second is beyond the run's noise.
        let ours = seconds(&[0.90, 0.91, 0.90, 0.91, 0.90, 0.91]);
        let why = seconds_compared(("vegas", &peer), ("ours", &ours)).unwrap();
        assert!(why.contains("beyond twice"), "{why}");
        // Without the seconds, nothing is claimed.
        assert!(seconds_compared(("vegas", &RunSummary::new(0.5)), ("ours", &ours)).is_none());
    }

    #[test]
    fn the_quick_form_runs_none_ours_the_seeds_and_two_peers_and_every_control_builds() {
        let kinds = kinds();
        assert_eq!(
            kinds[..5],
            [
                "none",
                "response_time_tuned",
                "response_time",
                "vegas",
                "codel"
            ]
        );
        for kind in kinds {
            let c = control(kind, 0.5).unwrap();
            if let Control::PerStage { kind, params } = c {
                let params = params.into_iter().collect();
                seda_control::build_admission(&kind, &params).unwrap();
            }
        }
    }
}
