//! The plots and the report of `overload-curve`.

use anyhow::Result;
use serde_json::Value;

use super::plant::{self, TARGET, capacity_per_s};
use super::{
    BREAKWATER_RECOVERY_S, DAGOR_RECOVERY_S_PER_BREAKWATER, NONE, OURS, Point,
    SEDA_RECOVERY_S_PER_BREAKWATER, STEP_FROM, STEP_TO, Step, WINDOW, find, load_key, of,
};
use crate::Lab;
use crate::plot::{LineChart, Series};

/// Response times past this many targets are drawn at it, so that no control's seconds do not
/// flatten everyone else's milliseconds (the tables have the figures).
const CLIP_TARGETS: f64 = 3.0;

/// The variants in the order they ran.
fn names(steps: &[Step]) -> Vec<&'static str> {
    steps.iter().map(|s| s.variant).collect()
}

pub(super) fn plots(lab: &Lab, points: &[Point], steps: &[Step], loads: &[f64]) -> Result<()> {
    let target_ms = TARGET.as_secs_f64() * 1e3;
    let clip_ms = CLIP_TARGETS * target_ms;
    let curve = |f: &dyn Fn(&Point) -> Option<f64>| -> Vec<Series> {
        names(steps)
            .into_iter()
            .map(|n| Series {
                name: n.to_string(),
                points: of(points, n)
                    .filter_map(|p| Some((p.load_x, f(p)?)))
                    .collect(),
            })
            .collect()
    };
    let (lo, hi) = (
        loads.iter().copied().fold(f64::INFINITY, f64::min),
        loads.iter().copied().fold(0.0, f64::max),
    );
    lab.plot(
        "goodput",
        &LineChart {
            title: format!(
                "Goodput (answered within {target_ms:.0} ms) over capacity ({:.0}/s)",
                capacity_per_s()
            ),
            x_label: "offered load (x capacity)".into(),
            y_label: "goodput / capacity".into(),
            series: curve(&|p| Some(p.goodput())),
        },
    )?;
    let mut p99 = curve(&|p| p.p99_s().map(|s| (s * 1e3).min(clip_ms)));
    p99.push(Series::new(
        "target",
        vec![(lo, target_ms), (hi, target_ms)],
    ));
    lab.plot(
        "p99",
        &LineChart {
            title: format!(
                "p99 of the requests answered (drawn at most {CLIP_TARGETS} x the target)"
            ),
            x_label: "offered load (x capacity)".into(),
            y_label: "ms".into(),
            series: p99,
        },
    )?;
    lab.plot(
        "rejected",
        &LineChart {
            title: "Share of requests turned away (503)".into(),
            x_label: "offered load (x capacity)".into(),
            y_label: "fraction".into(),
            series: curve(&|p| Some(p.rejected())),
        },
    )?;
    let mut step: Vec<Series> = steps
        .iter()
        .map(|s| Series {
            name: s.variant.to_string(),
            points: s
                .p90
                .iter()
                .map(|&(t, p)| (t, (p * 1e3).min(clip_ms)))
                .collect(),
        })
        .collect();
    let end = steps
        .iter()
        .flat_map(|s| s.p90.last().map(|p| p.0))
        .fold(0.0, f64::max);
    step.push(Series::new(
        "1.2 x target",
        vec![(0.0, 1.2 * target_ms), (end, 1.2 * target_ms)],
    ));
    lab.plot(
        "step_p90",
        &LineChart::over_time(format!(
                "p90 of {} ms windows, {STEP_FROM} x then {STEP_TO} x capacity (at most {CLIP_TARGETS} x the target)",
                WINDOW.as_millis()
            ), "ms", step),
    )?;
    if let Some(s) = steps.iter().find(|s| s.variant == OURS) {
        let keys = ["queue_limit", "queued"];
        lab.plot(
            "step_ours_queue",
            &LineChart::over_time(
                "Ours during the step: its queue limit and the queue",
                "requests",
                keys.iter()
                    .filter_map(|k| Some(Series::new((*k).to_string(), s.state.get(*k)?.clone())))
                    .collect(),
            ),
        )?;
    }
    Ok(())
}

/// A table of `f` per variant (rows) and load (columns).
fn table(points: &[Point], steps: &[Step], loads: &[f64], f: &dyn Fn(&Point) -> String) -> String {
    let mut md = "| controller |".to_string();
    for l in loads {
        md += &format!(" {} |", load_key(*l));
    }
    md += "\n|---|";
    md += &"---|".repeat(loads.len());
    md += "\n";
    for n in names(steps) {
        md += &format!("| {} |", shown(n));
        for &l in loads {
            md += &match find(points, n, l) {
                Some(p) => format!(" {} |", f(p)),
                None => " - |".into(),
            };
        }
        md += "\n";
    }
    md
}

/// A variant's name in the tables: ours marked.
fn shown(name: &str) -> String {
    if name == OURS {
        format!("**{name}** (ours)")
    } else {
        name.to_string()
    }
}

pub(super) fn markdown(
    points: &[Point],
    steps: &[Step],
    loads: &[f64],
    cpu: &Value,
    quick: bool,
) -> String {
    let target_ms = TARGET.as_secs_f64() * 1e3;
    let mut md = intro(quick);
    md += "**Goodput / capacity**\n\n";
    md += &table(points, steps, loads, &|p| format!("{:.3}", p.goodput()));
    md += "\n**Goodput in requests**: answered within the target per second, over 200/s\n\n";
    md += &table(points, steps, loads, &|p| {
        p.summary
            .extra_f64("goodput_requests_fraction_of_capacity")
            .map_or("-".into(), |g| format!("{g:.3}"))
    });
    md += &format!(
        "\n**p99 of the requests answered, ms** (target {target_ms:.0}; -: none answered \
         within the run)\n\n"
    );
    md += &table(points, steps, loads, &|p| {
        p.p99_s().map_or("-".into(), |s| format!("{:.0}", s * 1e3))
    });
    md += "\n**Turned away (503), %**\n\n";
    md += &table(points, steps, loads, &|p| {
        format!("{:.2}", p.rejected() * 100.0)
    });
    md += &step_table(steps);
    md += &winners(points, steps, loads);
    md += &ours_state(points, loads);
    md += &ours_tail(points);
    md += &format!(
        "\nThe server's real CPU, from the lab's watch over every load: {:.1}% of a core on \
         average, {:.1}% at most (the holds are sleeps: this is the front end and the runtime \
         answering and turning requests away).\n",
        cpu["mean_share"].as_f64().unwrap_or(f64::NAN) * 100.0,
        cpu["max_share"].as_f64().unwrap_or(f64::NAN) * 100.0,
    );
    if let Some(p) = find(points, NONE, loads[0]) {
        md += &format!(
            "\nThe mix answered in time without control at {} x: {:.1}% long holds (sent: \
             {:.0}%).\n",
            loads[0],
            p.summary
                .extra_f64("long_share_of_good")
                .unwrap_or(f64::NAN)
                * 100.0,
            plant::LONG_SHARE * 100.0
        );
    }
    md += "\n![goodput](goodput.svg)\n![p99](p99.svg)\n![rejected](rejected.svg)\n\
           ![step](step_p90.svg)\n![ours in the step](step_ours_queue.svg)\n";
    md
}

/// Who led each figure, in words.
fn winners(points: &[Point], steps: &[Step], loads: &[f64]) -> String {
    let hi = super::top(loads);
    let best = |f: &dyn Fn(&Point) -> f64| {
        points
            .iter()
            .filter(|p| p.load_x == hi)
            .max_by(|a, b| f(a).total_cmp(&f(b)))
    };
    let mut md = String::from("**Who won**\n\n");
    if let Some(b) = best(&|p| p.goodput()) {
        let ours = find(points, OURS, hi).map_or(f64::NAN, Point::goodput);
        md += &format!(
            "- Goodput at {hi} x: {} with {:.3} x capacity (ours {ours:.3}).\n",
            b.variant,
            b.goodput()
        );
    }
    if let Some(b) = best(&|p| {
        if p.goodput() >= 0.5 {
            -p.p99_s().unwrap_or(f64::INFINITY)
        } else {
            f64::NEG_INFINITY
        }
    }) {
        md += &format!(
            "- Lowest p99 at {hi} x among those answering at least half the capacity in time: \
             {} with {:.0} ms.\n",
            b.variant,
            b.p99_s().unwrap_or(f64::NAN) * 1e3
        );
    }
    let recovered: Vec<&Step> = steps.iter().filter(|s| s.variant != NONE).collect();
    let fastest = recovered
        .iter()
        .map(|s| s.recovery_s())
        .fold(f64::INFINITY, f64::min);
    if fastest.is_finite() {
        let tied: Vec<&str> = recovered
            .iter()
            .filter(|s| s.recovery_s() <= fastest + 1e-9)
            .map(|s| s.variant)
            .collect();
        md += &format!(
            "- Recovery from the step: {fastest:.2} s, {}.\n",
            tied.join(", ")
        );
    }
    let light: Vec<&Point> = points.iter().filter(|p| p.load_x <= 0.8 + 1e-9).collect();
    let shy: Vec<String> = light
        .iter()
        .filter(|p| p.rejected() > 0.005)
        .map(|p| {
            format!(
                "{} {:.1}% at {} x",
                p.variant,
                p.rejected() * 100.0,
                p.load_x
            )
        })
        .collect();
    md += &format!(
        "- Turning away more than 0.5% at or below 0.8 x: {}.\n",
        if shy.is_empty() {
            "nobody".to_string()
        } else {
            shy.join(", ")
        }
    );
    md
}

/// Why ours' p99 sits where it does, with the run's figures.
fn ours_tail(points: &[Point]) -> String {
    let over: Vec<&Point> = of(points, OURS).filter(|p| p.load_x > 1.0).collect();
    let worst = over
        .iter()
        .filter_map(|p| Some((p.load_x, p.p99_s()?, p.summary.p90_admitted_s?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((load, p99, p90)) = worst else {
        return String::new();
    };
    let t = TARGET.as_secs_f64() * 1e3;
    let long_ms = plant::WORKERS as f64 / plant::CORES * plant::LONG.as_secs_f64() * 1e3;
    format!(
        "\nPast capacity ours holds the queue at the length its departure rate empties in its \
         waiting budget, and steers that budget until the p90 of response times is at 0.8 x \
         the target ({:.0} ms). With a fifth of the requests long, the p90 is a long request's \
         median response, and the p99 is the long ones' queueing tail plus their hold \
         ({long_ms:.0} ms on the shared cores); its selective dropper drops at dequeue only \
         what queued past 0.8 x the target, so a long request that queued just under it \
         answers at up to {:.0} ms, and the late ones are long holds, whose work is lost \
         to goodput. Here, at {load} x: p90 {:.0} ms, p99 {:.0} ms.\n",
        0.8 * t,
        0.8 * t + long_ms,
        p90 * 1e3,
        p99 * 1e3,
    )
}

/// Ours' controller near the end of each point.
fn ours_state(points: &[Point], loads: &[f64]) -> String {
    let mut md = String::from(
        "\n**Ours' state near the end of each point** (`/_seda/stats`, the last reading while the \
         load ran: its queueing-time budget, queue limit, departure rate, the last window's \
         p90, events dropped at dequeue so far)\n\n\
         | load | wait budget ms | queue limit | departures/s | last p90 ms | dropped |\n\
         |---|---|---|---|---|---|\n",
    );
    for &l in loads {
        let Some(s) = find(points, OURS, l).and_then(|p| p.summary.extra.get("controller_state"))
        else {
            continue;
        };
        let g = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        md += &format!(
            "| {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} |\n",
            load_key(l),
            g("wait_budget_s") * 1e3,
            g("queue_limit"),
            g("departures_per_s"),
            g("last_p_s") * 1e3,
            g("dropped"),
        );
    }
    md
}

/// The report's opening: the plant, the capacity by construction, the target and how each
/// controller is aimed at it.
fn intro(quick: bool) -> String {
    let target_ms = TARGET.as_secs_f64() * 1e3;
    format!(
        "The plant is `seda serve bottleneck`'s `GET /hold?us=N&cores=2`: N µs of work on 2 \
         emulated cores, shared by the holds running at once, served by {} workers (two per \
         core, so that past two requests in service they slow each other as threads sharing a \
         CPU do). The mix is {:.0}% holds of {} ms and {:.0}% of {} ms, a mean of {:.0} ms: \
         the capacity is **{:.0} requests/s by construction**, stated before the run, whatever \
         else the machine runs. The target is **{target_ms:.0} ms** (25 x the mean hold; \
         Breakwater sets its SLO at 10 x the service time of microsecond RPCs, but here a long \
         hold alone takes 60 ms once four workers share the cores). Every controller is aimed \
         at it as its catalogue entry says (ours, WC03's and the selective dropper through \
         their targets, AIMD through its timeout; Vegas, Gradient2, Envoy's gradient and CoDel \
         find their own). Open Poisson arrivals; every point is a fresh server. Goodput / capacity is \
         the share of the emulated cores' time that went to requests answered within the \
         target, each priced at its hold: for the designed mix it is the requests answered in \
         time per second over 200/s, without the noise of the mix a short span happened to \
         answer (the second table counts requests).{}\n\n",
        plant::WORKERS,
        (1.0 - plant::LONG_SHARE) * 100.0,
        plant::SHORT.as_millis(),
        plant::LONG_SHARE * 100.0,
        plant::LONG.as_millis(),
        plant::mean_hold_s() * 1e3,
        capacity_per_s(),
        if quick {
            " Quick form: four loads, the first five controllers of the catalogue's comparison \
             and none, points of 0.5 s warm-up and 1.5 s measured."
        } else {
            ""
        }
    )
}

/// The step's table, beside Breakwater's, DAGOR's and SEDA's recovery as Breakwater measured
/// them.
fn step_table(steps: &[Step]) -> String {
    let mut md = format!(
        "\n**The step** from {STEP_FROM} x to {STEP_TO} x capacity: the time from the step until \
         the p90 of every {} ms window stays within 1.2 x the target (0: it never left), the \
         worst window after the step, and goodput and turned-away share over the time after it.\n\n\
         | controller | recovery s | worst window p90 ms | goodput / capacity | turned away % |\n\
         |---|---|---|---|---|\n",
        WINDOW.as_millis()
    );
    for s in steps {
        md += &format!(
            "| {} | {}{:.2} | {:.0} | {:.3} | {:.1} |\n",
            shown(s.variant),
            if s.summary.settled == Some(false) {
                "not settled: "
            } else {
                ""
            },
            s.recovery_s(),
            s.summary
                .extra_f64("worst_window_p90_after_step_s")
                .unwrap_or(f64::NAN)
                * 1e3,
            s.summary.goodput_fraction_of_capacity.unwrap_or(0.0),
            s.summary.rejected_fraction * 100.0,
        );
    }
    md += &format!(
        "| Breakwater's credits (Breakwater, OSDI 2020) | {BREAKWATER_RECOVERY_S:.2} | | | |\n\
         | DAGOR (as Breakwater measured it) | {DAGOR_RECOVERY_S_PER_BREAKWATER:.2} | | | |\n\
         | SEDA's controller (as Breakwater measured it) | {SEDA_RECOVERY_S_PER_BREAKWATER:.2} | | | |\n\n\
         Breakwater's figures are for a 1.4 x spike on microsecond RPCs, read from its latency \
         over time; ours are for a {STEP_TO} x step on millisecond holds, on the rule every lab \
         scenario uses for settling (`seda_sim::summary::settle_time`). They are beside each \
         other, not the same measurement.{}\n\n",
        match steps.iter().find(|s| s.variant == "response_time") {
            Some(s) => format!(
                " WC03's controller (`response_time`, the SEDA controller Breakwater measured) \
                 reads {:.2} s here with {:.3} x capacity in time: its token rate starts at \
                 100/s and climbs by at most 1.8/s a window, so in a run this short it never \
                 admits enough to queue, and nothing is there to recover from.",
                s.recovery_s(),
                s.summary.goodput_fraction_of_capacity.unwrap_or(0.0)
            ),
            None => String::new(),
        }
    );
    md
}
