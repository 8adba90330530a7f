//! `tower-spike`'s checks, report and plots.

use seda_sim::summary::{RunSummary, SETTLE_TOLERANCE, spike_table};

use super::{Run, SPIKE_X, UNDERLOAD_X};
use crate::figure::fmt;
use crate::outcome::Check;
use crate::spike::Spike;

fn find<'a>(runs: &'a [Run], name: &str) -> Option<&'a Run> {
    runs.iter().find(|r| r.variant.name == name)
}

/// The fixed limit with the most goodput within the target.
pub(super) fn best_limit(runs: &[Run]) -> Option<&Run> {
    runs.iter()
        .filter(|r| r.variant.limit.is_some())
        .max_by(|a, b| {
            a.spike
                .summary
                .goodput_per_s
                .total_cmp(&b.spike.summary.goodput_per_s)
        })
}

fn server_cpu_ms(r: &Run) -> Option<f64> {
    r.underload
        .cpu_ms_per_request
        .iter()
        .find(|(n, _)| n == "server")
        .map(|(_, v)| *v)
}

/// The paper's claims and the issue's goals: enforced, or known shortfalls where not met yet;
/// the layer's CPU against bare is a speed comparison, observed (benchmarks decide speed).
pub(super) fn checks(runs: &[Run], spike: &Spike) -> Vec<Check> {
    let t = spike.target_s;
    let ours = find(runs, "seda").map(|r| &r.spike.summary);
    let bare = find(runs, "bare").map(|r| &r.spike.summary);
    let p90 = |s: Option<&RunSummary>| s.and_then(|s| s.p90_admitted_s);
    let gp = |s: Option<&RunSummary>| s.map(|s| s.goodput_per_s);
    let late = find(runs, "seda").and_then(|r| r.spike.second_half_median_p90(spike));
    let mut out = vec![
        Check::new(
            "with seda's layer, the p90 of admitted requests stays near the target (the median \
             of the 1 s intervals' p90 over the spike's second half within 2 x)",
            late.is_some_and(|p| p <= 2.0 * t),
            format!(
                "seda {} s against target {t} s (over the whole spike, onset included: {} s)",
                fmt(late),
                fmt(p90(ours))
            ),
        ),
        Check::new(
            "bare, response times grow far past the target (p90 over 2 x)",
            p90(bare).is_some_and(|p| p > 2.0 * t),
            format!("bare: p90 over the spike {} s", fmt(p90(bare))),
        ),
        Check::new(
            "with seda's layer, more pages are answered within the target than bare",
            gp(ours).zip(gp(bare)).is_some_and(|(o, b)| o > b),
            format!("goodput seda {}/s, bare {}/s", fmt(gp(ours)), fmt(gp(bare))),
        ),
    ];
    let after = ours.and_then(|s| s.p90_admitted_after_settle_s);
    out.push(Check::new(
        format!("goal: with seda's layer, p90 after settling <= {SETTLE_TOLERANCE} x target"),
        after.is_some_and(|p| p <= SETTLE_TOLERANCE * t),
        format!("{} s against {:.3} s", fmt(after), SETTLE_TOLERANCE * t),
    ));
    let frac = ours.and_then(|s| s.goodput_fraction_of_capacity);
    // Known shortfalls (issue 54): a quiet CI-like rerun read 0.854 x capacity, and 365.8/s
    // against the best fixed limit's 386.3/s.
    out.push(Check::shortfall(
        "goal: with seda's layer, goodput >= 0.9 x capacity",
        frac.is_some_and(|g| g >= 0.9),
        format!("{} x capacity", fmt(frac)),
    ));
    if let Some(best) = best_limit(runs) {
        let b = best.spike.summary.goodput_per_s;
        out.push(Check::shortfall(
            "goal: seda's layer beats the best fixed ConcurrencyLimit on goodput within the target",
            gp(ours).is_some_and(|o| o > b),
            format!(
                "seda {}/s, best limit ({}) {b:.1}/s",
                fmt(gp(ours)),
                best.variant.name
            ),
        ));
    }
    let cpu = |name: &str| find(runs, name).and_then(server_cpu_ms);
    let (c_ours, c_bare) = (cpu("seda"), cpu("bare"));
    out.push(Check::cpu_goal(
        "goal: the layer adds <= 5% CPU per request to the bare service at underload",
        "server CPU",
        ("seda", c_ours),
        ("bare", c_bare),
        1.05,
    ));
    out
}

pub(super) fn markdown(runs: &[Run], spike: &Spike, capacity: f64, per_cpu_s: f64) -> String {
    let t = spike.target_s;
    let mut s = format!(
        "**Setup.** `seda serve tower-demo`: an axum 0.8 service whose page checksums {} KiB {} \
         times on tokio's blocking pool, pinned to one core; its measured capacity is \
         {capacity:.0} pages/s ({per_cpu_s:.0} per CPU-second of the server: the rest of its \
         core went to other work on this shared machine, and loads are sized from what it \
         got). Goodput / capacity is each variant's share of that core spent rendering pages \
         answered within the target: the page tells its CPU time (`Server-Timing: cpu;dur`), \
         and the capacity is a core's pages per second at the mean cost of those pages in the \
         run, so it follows the machine's speed and stays at most 1 (a calibration's pages per \
         second read 1.09-1.10 x when the machine ran faster). The spike takes {} closed \
         users to {} ({SPIKE_X} x capacity x target: without control the response time is \
         about {SPIKE_X} x the {t} s target) for {:.0} s; users think {:.0} ms and wait {:.2} s after a 503. Variants: bare; \
         tower's `ServiceBuilder::new().layer(HandleErrorLayer).load_shed().concurrency_limit(N)` \
         (503 when all N permits are taken), N swept as a share of capacity x target; seda's \
         `SedaLayer::response_time(target).http()`. Before each spike, Poisson arrivals at \
         {UNDERLOAD_X} x capacity measure the server's CPU per request (from `/proc`, in 10 ms \
         ticks) and the latency.\n\n",
        super::WORK_KB,
        super::ROUNDS,
        spike.base_users,
        spike.spike_users,
        spike.spike_s,
        20.0 * spike.time_scale,
        5.0 * spike.time_scale,
    );
    s += "**Underload** (server CPU per completed request, client-side latency):\n\n\
          | variant | CPU ms/request | x bare | p50 ms | p99 ms | not completed |\n\
          |---|---|---|---|---|---|\n";
    let bare_cpu = find(runs, "bare").and_then(server_cpu_ms);
    for r in runs {
        let c = server_cpu_ms(r);
        s += &format!(
            "| {} | {} | {} | {:.2} | {:.2} | {} |\n",
            r.variant.name,
            fmt(c),
            fmt(c.zip(bare_cpu).map(|(c, b)| c / b)),
            r.underload.p50_ms,
            r.underload.p99_ms,
            r.underload.not_completed
        );
    }
    let rows: Vec<(&str, &RunSummary)> = runs
        .iter()
        .map(|r| (r.variant.name.as_str(), &r.spike.summary))
        .collect();
    s += &format!(
        "\n**Spike** (`seda sim spike`'s table: p90s in seconds over the spike and after \
         settling, settle time, goodput per second and as a multiple of capacity (xC), shares \
         refused, timed out or failed, users never answered, the slowest response):\n\n```\n{}```\n",
        spike_table(&rows)
    );
    if let (Some(best), Some(ours)) = (best_limit(runs), find(runs, "seda")) {
        let (b, o) = (
            best.spike.summary.goodput_per_s,
            ours.spike.summary.goodput_per_s,
        );
        s += &format!(
            "\nThe best fixed limit was {} with {b:.1} pages/s within the target; seda's layer \
             answered {o:.1}/s. {}\n",
            best.variant.name,
            if o > b {
                "The layer beat it, without being told the capacity."
            } else {
                "**The layer did not beat the best fixed limit on goodput.** A CPU-bound page \
                 with a steady cost is the case a fixed limit handles best: set near capacity \
                 x target it admits just enough. What the layer buys is not having to know \
                 that number (the sweep shows what a wrong guess costs) and following it when \
                 the cost per request changes."
            }
        );
    }
    s += "\n**Where this stands against the papers.** WC03 Section 4.5 runs a CPU-bound stage \
          under a spike with its own admission controller; here the service is not written as \
          stages at all, and the controller sits in a tower layer that counts the requests in \
          flight in the handler as its queue. The issue's goals: p90 after settling <= 1.2 x \
          target is enforced; goodput >= 0.9 x capacity and beating the best fixed limit are \
          known shortfalls (not met yet; issue 54 is about winning them); the layer's CPU over bare at underload (goal: <= 5%) is observed, as speed is decided by \
          benchmarks rather than by a test.\n";
    s
}
