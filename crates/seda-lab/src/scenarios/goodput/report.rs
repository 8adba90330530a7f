//! The `goodput` scenario's plots and report text.

use anyhow::Result;

use crate::Lab;
use crate::plot::{LineChart, Series};

use super::point::Point;
use super::{CANCEL, CAPACITY_HOW, DEADLINE, NONE, SSM, Sweep, THREADS, TIMEOUT, Variant, WINDOW};

fn line(name: &str, points: Vec<(f64, f64)>) -> Series {
    Series::new(name, points)
}

/// Goodput against offered load (one line per variant; offered as a multiple of the capacity
/// measured before each load, goodput priced in its run, [`CAPACITY_HOW`]), and at the top
/// load goodput and the AIMD window over time.
pub(super) fn plots(lab: &Lab, points: &[Point], variants: &[Variant]) -> Result<()> {
    let mut loads: Vec<f64> = points.iter().map(|p| p.load_x).collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let mut sweep: Vec<Series> = variants
        .iter()
        .map(|v| {
            line(
                v.name,
                points
                    .iter()
                    .filter(|p| p.variant == v.name)
                    .filter_map(|p| Some((p.load_x, p.summary.goodput_fraction_of_capacity?)))
                    .collect(),
            )
        })
        .collect();
    sweep.push(line(
        "ideal: min(offered, capacity)",
        loads.iter().map(|&l| (l, l.min(1.0))).collect(),
    ));
    lab.plot(
        "goodput",
        &LineChart {
            title: format!(
                "goodput within {} s vs offered load (SSM04 Figures 5-7)",
                TIMEOUT.as_secs_f64()
            ),
            x_label: "offered load (x capacity)".into(),
            y_label: "goodput (x capacity)".into(),
            series: sweep,
        },
    )?;
    let top = loads.last().copied().unwrap_or(2.0);
    let at_top: Vec<&Point> = points.iter().filter(|p| p.load_x == top).collect();
    lab.plot(
        "goodput_over_time",
        &LineChart {
            title: format!("goodput over time at {top} x capacity (SSM04 Figures 6, 7)"),
            x_label: "time since the end of the warm-up (s)".into(),
            y_label: "goodput (logins/s)".into(),
            series: at_top
                .iter()
                .map(|p| line(p.variant, p.goodput.clone()))
                .collect(),
        },
    )?;
    let windows: Vec<Series> = at_top
        .iter()
        .filter(|p| !p.window.is_empty())
        .map(|p| line(p.variant, p.window.clone()))
        .collect();
    if !windows.is_empty() {
        lab.plot(
            "window",
            &LineChart {
                title: format!("the client's AIMD window at {top} x capacity"),
                x_label: "time since the end of the warm-up (s)".into(),
                y_label: "window (requests outstanding)".into(),
                series: windows,
            },
        )?;
    }
    Ok(())
}

fn num(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// report.md's own part: the scale-down, our figures beside the paper's, where we differ.
pub(super) fn text(s: &Sweep<'_>) -> String {
    let none_peak = s.peak(NONE.name);
    let mut t = format!(
        "**Scale-down.** SSM04 ran SSM on 3 bricks (about 1900-2000 requests/s of 8 KB session \
         state reads and writes), a 60 ms timeout, and load from client threads. Here one \
         `seda serve mail` process on one core answers logins (a password check in SQLite and a \
         new session in memory, SSM's \"write session state\" in miniature) on an emulated \
         processor ({} core(s), {THREADS} login threads) so that the server, not the one-core \
         load generator, saturates: **{:.0}** logins/s by design. Offered load is open Poisson \
         arrivals at a multiple of that capacity ({}); {CAPACITY_HOW}. \
         The timeout is **{} s** for everything: the client gives up then, the AIMD window \
         counts a slower reply as a loss, the server's deadline (`--deadline-ms`) drops what is \
         older, and goodput counts only logins answered within it (from the intended send \
         time). 1 s rather than 60 ms because this machine is shared with other builds, whose \
         scheduling stalls of tens of milliseconds would otherwise count as timeouts.\n\n",
        crate::mail::CORES,
        s.capacity,
        s.loads
            .iter()
            .map(|l| format!("{l} x"))
            .collect::<Vec<_>>()
            .join(", "),
        TIMEOUT.as_secs_f64()
    );
    t += &loads_table(s);
    t += "\nRejected and timed out are fractions of the requests that ended; a rejection by the \
          window is the client stub's own, without reaching the server.\n\n";
    let top = s.max_load();
    t += &format!(
        "**The paper (SSM04 Self-Tuning, Figures 5-7):** without AIMD or admission control \
         goodput plateaus at about 1900-2000 requests/s and falls to zero at about 3400 \
         requests/s offered (1.7 x the plateau), \"the brick spends all of its time fulfilling \
         timed-out requests\"; with the stub's AIMD window and bricks serving only requests that \
         have not timed out, at about 4000 requests/s offered (2 x) SSM \"discovers the maximum \
         goodput\" of about 2000 and stays there, rejecting the excess. **Ours:** the basic \
         system peaks at {none_peak:.2} x capacity and gives {} x at {top} x; with the window \
         and deadline dropping, {} x at {top} x ({} of requests rejected).\n\n",
        num(s.goodput(NONE.name, top), 2),
        num(s.goodput(SSM.name, top), 2),
        num(s.get(SSM.name, top, |s| Some(s.rejected_fraction)), 2),
    );
    t += "**Where we differ and why.**\n\n";
    t += &format!(
        "- *The basic system is made to serve abandoned requests.* Our HTTP front end cancels \
         a request whose client disconnected and the stage drops it at dequeue, which is \
         already a form of \"serve only requests that have not timed out\". SSM04's basic bricks \
         had nothing like it, so `none`, `window`, `deadline` and `window+deadline` run with \
         `seda serve mail --serve-abandoned`.{}\n",
        match s.goodput(CANCEL.name, top) {
            Some(g) => format!(
                " Our server as it ships (`cancel`) gives {g:.2} x capacity at {top} x: the \
                 queue is first-in first-out, so the requests still alive when they reach the \
                 handler are those that have waited almost the whole timeout, and many finish \
                 after it."
            ),
            None => String::new(),
        }
    );
    if let Some(g) = s.goodput(DEADLINE.name, top) {
        t += &format!(
            "- *Deadline dropping alone* gives {g:.2} x capacity at {top} x (the simulator \
             agrees: `seda sim goodput` gives 0.27 x its peak at 2 x for `deadline`, 0 for \
             `none`): it drops what is already past the deadline, but the queue still hands \
             the handler requests on the edge of expiry. The window alone gives {} x.\n",
            num(s.goodput(WINDOW.name, top), 2)
        );
    }
    t += "- *The stub refuses at once.* SSM's stub rejects a request its window cannot take; \
          `seda-load`'s window makes it wait for a slot (`seda load --aimd`), and under an open \
          overload the wait grows until every request sent has spent its whole timeout waiting, \
          each expiry halving the window again: against the `window+deadline` server at 600 \
          logins/s (about 2 x), 0 of 3015 requests came back within 1 s that way. \
          `ClientConfig::aimd_reject_when_full` is the stub's behaviour, used here. The window \
          grows by one per window of replies and shrinks only on a reply slower than the \
          timeout, so within a run of seconds it stays well below the size at which replies \
          would take 1 s (see the `window` plot): it keeps the server's queue short rather than \
          filling it to the timeout.\n";
    t += "- *One server, one request type, Poisson arrivals* instead of 3 bricks, reads and \
          writes of 8 KB, and client threads: the claim is about the shape (a plateau that \
          holds, against a collapse), which does not depend on these.\n";
    let low = s.loads.first().copied().unwrap_or(0.5);
    t += &format!(
        "- *Stalls hurt the unprotected service even below capacity.* After a stall the server \
         without protection has a backlog it serves late for seconds, every reply past the \
         timeout, while new requests join the queue behind it (the per-second series in \
         `result.json` show it). The check below capacity was first written for every variant; \
         on this machine it covers only `window+deadline`, and the table shows the others \
         (`none` at {low} x completed {} of the offered logins in time).\n",
        num(
            s.get(NONE.name, low, |s| Some(s.goodput_per_s))
                .zip(s.get(NONE.name, low, |s| s.offered_per_s))
                .map(|(g, o)| g / o.max(1e-9)),
            2
        )
    );
    t
}

/// One row a load: each variant's goodput, rejected and timed-out shares.
fn loads_table(s: &Sweep<'_>) -> String {
    let mut t = String::new();
    t += "| load (x capacity) |";
    for v in s.variants {
        t += &format!(
            " {} goodput/s (x capacity) | rejected | timed out |",
            v.name
        );
    }
    t += "\n|---|";
    for _ in s.variants {
        t += "---|---|---|";
    }
    t += "\n";
    for &l in s.loads {
        t += &format!("| {l} |");
        for v in s.variants {
            t += &format!(
                " {} ({}) | {} | {} |",
                num(s.get(v.name, l, |s| Some(s.goodput_per_s)), 0),
                num(s.goodput(v.name, l), 2),
                num(s.get(v.name, l, |s| Some(s.rejected_fraction)), 2),
                num(s.get(v.name, l, |s| s.timeout_fraction), 2),
            );
        }
        t += "\n";
    }
    t
}
