//! `goodput` (SSM04 Figures 5 to 7, "Self-Tuning"): an open load of logins from 0.5 x to 2 x the
//! mail service's capacity, with and without SSM's self-protection (the client stub's AIMD
//! window, and servers that serve only requests that have not timed out); goodput is what
//! completes within the 1 s timeout.
//!
//! SSM04's bricks, without protection, spend their time on requests whose clients have given up
//! and goodput falls to zero; with the window and deadline dropping, goodput stays at the
//! capacity the window discovered and the excess is rejected. `seda sim goodput` runs the same
//! experiment on the simulator, with the same variant and key names.

mod point;
mod report;

use std::time::Duration;

use anyhow::Result;
use seda_sim::summary::RunSummary;
use serde_json::{Map, Value, json};

use crate::health::speed_moved;
use crate::outcome::{Check, Outcome};
use crate::{Lab, Scenario, mail};

use point::Point;

/// How goodput / capacity is measured, for reports.
pub(super) const CAPACITY_HOW: &str = "goodput / capacity is the share of the server's \
    core's CPU-seconds that went to logins answered within the timeout: each login priced at \
    the login handler's CPU per login in that run's measured window plus the server's CPU \
    outside the handlers per request it parsed (the server is pinned to one core, so the \
    ratio is at most the share of the core it used); loads are multiples of the calibration's \
    logins per CPU-second";

/// The scenario.
pub struct Goodput;

/// The client's timeout, the AIMD window's "too slow", the server's deadline and the goodput
/// bound (SSM04: 60 ms, for bricks that answer in about a millisecond; see the report).
const TIMEOUT: Duration = Duration::from_secs(1);
/// `seda serve mail --slowdown`: a login takes about 140 µs of CPU here (most of it the
/// argon2id check of the password), so 15 times that (2 ms) puts the server's capacity at a
/// few hundred logins/s, where the one-core load generator, even at twice that rate, is far
/// from busy. (With clear-text passwords a login took 20 µs and the factor was 100.)
const SLOWDOWN: u32 = 15;
/// The least load, as a multiple of the run's own capacity, that decides whether a service
/// without protection collapses: at 2 x one falls to nothing within a quick run's seconds, and
/// at 1.5 x its backlog still grows by half the capacity every second.
const MIN_OVERLOAD: f64 = 1.5;
/// One login thread: the work is all CPU on one core, so a second thread would add only
/// switching.
const THREADS: usize = 1;

/// Why `p`'s load is loaded, if it is: its run priced a login outside the calibration's price
/// that sized the load by more than the mail scenarios allow ([`speed_moved`]), so the load was
/// not the multiple of capacity planned. On 2026-12-06 one run of five served its "2 x" at
/// 0.99 x the capacity its own run had (it ran 2.02 x faster than the calibration of seconds
/// before), had no excess to reject, and failed a claim it could not decide.
fn machine_moved(p: &Point, calibrated_per_s: f64) -> Option<String> {
    let speed = p.summary.capacity_per_s? / calibrated_per_s.max(1e-9);
    speed_moved(&format!("{} at {} x capacity", p.variant, p.load_x), speed)
}

/// One configuration of the service (the simulator's names).
#[derive(Debug, Clone, Copy)]
pub(super) struct Variant {
    /// `none`, `window`, `deadline` or `window+deadline`.
    pub name: &'static str,
    /// The client stub's AIMD window, refusing what it cannot take.
    pub window: bool,
    /// The server drops requests older than the timeout, even inside the database.
    pub deadline: bool,
    /// The server drops the requests of clients that disconnected (our front end's default;
    /// SSM04's bricks could not tell, and the other variants run without it).
    pub cancel: bool,
}

impl Variant {
    fn file_stem(&self) -> String {
        self.name.replace('+', "-")
    }
}

const NONE: Variant = Variant {
    name: "none",
    window: false,
    deadline: false,
    cancel: false,
};
const WINDOW: Variant = Variant {
    name: "window",
    window: true,
    deadline: false,
    cancel: false,
};
const DEADLINE: Variant = Variant {
    name: "deadline",
    window: false,
    deadline: true,
    cancel: false,
};
const SSM: Variant = Variant {
    name: "window+deadline",
    window: true,
    deadline: true,
    cancel: false,
};

/// Our server as it ships: no window, no deadline, but the front end drops what the clients
/// gave up on.
const CANCEL: Variant = Variant {
    name: "cancel",
    window: false,
    deadline: false,
    cancel: true,
};

impl Scenario for Goodput {
    fn name(&self) -> &'static str {
        "goodput"
    }

    fn about(&self) -> &'static str {
        "goodput within a 1 s timeout from 0.5 x to 2 x capacity, with and without the client's \
         AIMD window and server-side deadline dropping (SSM04 Figures 5-7)"
    }

    /// The rejected share as a share of the excess over the run's own capacity, which is what
    /// the claim says is rejected: the rejected fraction itself follows that excess (0.231 to
    /// 0.483 in five runs whose load was 1.30 to 1.94 x their own capacity, each 0.99-1.00 of
    /// its excess). The calibrated capacity is the machine's speed, not a result; it stays in
    /// the summary.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "window+deadline/goodput_at_max_load_fraction_of_peak",
            "window+deadline/goodput_at_max_load_fraction_of_capacity",
            "window+deadline/rejected_share_of_excess_at_max_load",
            "none/goodput_at_max_load_fraction_of_capacity",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let variants: Vec<Variant> =
            lab.pick(vec![NONE, SSM], vec![NONE, WINDOW, DEADLINE, SSM, CANCEL]);
        let loads: Vec<f64> = lab.pick(vec![0.5, 1.0, 2.0], vec![0.5, 0.75, 1.0, 1.25, 1.5, 2.0]);
        let mut points = Vec::new();
        let mut capacities = Vec::new();
        // The server's core is shared with whatever else the machine runs, so its capacity
        // drifts (we saw 113 to 365 logins/s between two runs a minute apart): each load is a
        // multiple of a capacity measured just before it, and its variants run back to back.
        for &load in &loads {
            let best_before = capacities.iter().copied().fold(0.0, f64::max);
            let calibration = point::calibrate(lab, best_before)?;
            capacities.push(calibration.per_s);
            for v in &variants {
                let p = point::run(lab, v, load, calibration)?;
                if let Some(why) = machine_moved(&p, calibration.per_s) {
                    lab.mark_loaded(why);
                }
                points.push(p);
            }
        }
        let capacity = median(&capacities);
        report::plots(lab, &points, &variants)?;
        let sweep = Sweep {
            points: &points,
            variants: &variants,
            loads: &loads,
            capacity,
            capacities: &capacities,
        };
        let mut checks = sweep.checks();
        checks.push(Check::within_capacity(
            points
                .iter()
                .map(|p| (p.variant, p.summary.goodput_fraction_of_capacity)),
        ));
        Ok(Outcome {
            paper: "SSM04 Figures 5, 6 and 7 (Self-Tuning)".into(),
            config: json!({
                "service": "seda serve mail, every request a login (SQLite password check, new \
                            session in memory)",
                "slowdown": SLOWDOWN,
                "login_threads": THREADS,
                "corpus_users": mail::CORPUS_USERS,
                "timeout_s": TIMEOUT.as_secs_f64(),
                "loads_x_capacity": loads,
                "variants": variants.iter().map(|v| json!({
                    "name": v.name, "aimd_window": v.window, "deadline_dropping": v.deadline,
                    "cancel_on_disconnect": v.cancel,
                })).collect::<Vec<_>>(),
                "arrivals": "open, Poisson",
                "aimd": "seda_control::AimdWindowConfig defaults (+1 per window, x 0.5), a reply \
                         slower than the timeout shrinks it; a request finding it full is refused",
                "duration_s": lab.pick(4, 10),
                "warmup_s": lab.pick(1.5, 5.0),
            }),
            summary: sweep.summary(),
            data: Value::Object(
                points
                    .iter()
                    .map(|p| {
                        (
                            format!("{}@{}x", p.variant, p.load_x),
                            json!({"series": p.series}),
                        )
                    })
                    .collect(),
            ),
            report: report::text(&sweep),
            checks,
        })
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.0}", v * 100.0))
}

/// The sweep's results, looked up by variant and load.
pub(super) struct Sweep<'a> {
    points: &'a [Point],
    variants: &'a [Variant],
    loads: &'a [f64],
    /// The median of the capacities measured before each load: the unit of goodput.
    capacity: f64,
    /// The capacity measured before each load, in `loads` order.
    capacities: &'a [f64],
}

/// One figure of a point's summary.
pub(super) type Figure = fn(&RunSummary) -> Option<f64>;

impl Sweep<'_> {
    fn point(&self, variant: &str, load: f64) -> Option<&Point> {
        self.points
            .iter()
            .find(|p| p.variant == variant && p.load_x == load)
    }

    fn get(&self, variant: &str, load: f64, figure: Figure) -> Option<f64> {
        self.point(variant, load).and_then(|p| figure(&p.summary))
    }

    /// Goodput as a fraction of the capacity, priced in the point's own run
    /// ([`CAPACITY_HOW`]).
    fn goodput(&self, variant: &str, load: f64) -> Option<f64> {
        self.get(variant, load, |s| s.goodput_fraction_of_capacity)
    }

    /// A variant's highest goodput over the sweep (fraction of capacity).
    fn peak(&self, variant: &str) -> f64 {
        self.loads
            .iter()
            .filter_map(|&l| self.goodput(variant, l))
            .fold(0.0, f64::max)
    }

    /// The load `variant` had at `load` as a multiple of the capacity its own run had (its
    /// logins priced in the run), not of the calibration that sized it.
    fn own_load(&self, variant: &str, load: f64) -> Option<f64> {
        self.get(variant, load, |s| {
            Some(s.offered_per_s? / s.capacity_per_s?.max(1e-9))
        })
    }

    /// The share of `variant`'s offered load at `load` above the capacity the run itself had
    /// (`None` at or under it).
    fn excess(&self, variant: &str, load: f64) -> Option<f64> {
        self.own_load(variant, load)
            .filter(|l| *l > 1.0)
            .map(|l| 1.0 - 1.0 / l)
    }

    fn max_load(&self) -> f64 {
        self.loads.last().copied().unwrap_or(2.0)
    }

    fn summary(&self) -> Map<String, Value> {
        let mut s = Map::new();
        s.insert("capacity_per_s".into(), json!(self.capacity));
        s.insert("capacities_per_s".into(), json!(self.capacities));
        s.insert("target_s".into(), json!(TIMEOUT.as_secs_f64()));
        let peak_per_s = self
            .points
            .iter()
            .filter(|p| p.variant == NONE.name)
            .map(|p| p.summary.goodput_per_s)
            .fold(0.0, f64::max);
        s.insert("peak_goodput_per_s".into(), json!(peak_per_s));
        let top = self.max_load();
        for v in self.variants {
            let peak = self.peak(v.name);
            let at_top = self.goodput(v.name, top);
            let rejected = self.get(v.name, top, |s| Some(s.rejected_fraction));
            s.insert(
                v.name.into(),
                json!({
                    "peak_goodput_fraction_of_capacity": peak,
                    "goodput_at_max_load_per_s": self.get(v.name, top, |s| Some(s.goodput_per_s)),
                    "goodput_at_max_load_fraction_of_capacity": at_top,
                    "goodput_at_max_load_fraction_of_peak": at_top.map(|g| g / peak.max(1e-9)),
                    "rejected_fraction_at_max_load": rejected,
                    "rejected_share_of_excess_at_max_load": rejected.zip(self.excess(v.name, top)).map(|(r, e)| r / e),
                    "max_load_x_own_capacity": self.own_load(v.name, top),
                }),
            );
        }
        let points: Vec<Value> = self
            .loads
            .iter()
            .map(|&l| {
                let runs: Map<String, Value> = self
                    .points
                    .iter()
                    .filter(|p| p.load_x == l)
                    .map(|p| (p.variant.to_string(), p.summary.to_json()))
                    .collect();
                json!({"load_x_capacity": l, "runs": runs})
            })
            .collect();
        s.insert("points".into(), Value::Array(points));
        s
    }

    fn checks(&self) -> Vec<Check> {
        let top = self.max_load();
        let fmt = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
        let mut out = Vec::new();
        let ssm_peak = self.peak(SSM.name);
        let ssm_top = self.goodput(SSM.name, top);
        out.push(Check::new(
            format!(
                "with the AIMD window and deadline dropping, goodput holds past capacity \
                 (at {top} x: >= 0.7 x its peak)"
            ),
            ssm_top.is_some_and(|g| g >= 0.7 * ssm_peak),
            format!(
                "window+deadline: {} x capacity at {top} x, peak {ssm_peak:.2}",
                fmt(ssm_top)
            ),
        ));
        // Observed: issue 15's goal, judged over `seda lab repeat goodput --times 5`.
        out.push(Check::observed(
            format!("window+deadline at {top} x keeps >= 0.9 x its peak goodput"),
            ssm_top.is_some_and(|g| g >= 0.9 * ssm_peak),
            format!(
                "window+deadline: {} x capacity at {top} x, peak {ssm_peak:.2}",
                fmt(ssm_top)
            ),
        ));
        out.push(Check::new(
            format!(
                "SSM discovers the maximum goodput of the basic system (at {top} x: >= 0.7 x its \
                 capacity, measured with closed users and no timeouts)"
            ),
            ssm_top.is_some_and(|g| g >= 0.7),
            format!(
                "window+deadline: {} x capacity ({:.0}/s) at {top} x; the login queue was \
                 non-empty in {}% of the server's stats samples",
                fmt(ssm_top),
                self.capacity,
                pct(self
                    .point(SSM.name, top)
                    .and_then(|p| p.login_queue_nonempty))
            ),
        ));
        let none_top = self.goodput(NONE.name, top);
        let none_peak = self.peak(NONE.name);
        let none_load = self.own_load(NONE.name, top);
        let claim = format!(
            "goodput holds with protection and falls without it (at {top} x: none's goodput < \
             0.8 x window+deadline's)"
        );
        let passed = none_top.zip(ssm_top).is_some_and(|(n, p)| n < 0.8 * p);
        let detail = format!(
            "at {top} x: none {} x, window+deadline {} x capacity; none's load was {} x the \
             capacity its own run had",
            fmt(none_top),
            fmt(ssm_top),
            fmt(none_load)
        );
        // The loads are sized by a calibration seconds before, and the logins a CPU-second
        // buys move by up to 2 x in that time (a fixed compute loop on the server's core moved
        // by 5% meanwhile); the closed users of a calibration also find fewer than an
        // overloaded open load does (none's "2 x" was 1.42 to 3.28 x its own run's capacity in
        // five runs). A clean-clone CI run served "2 x" in full, 885 logins/s with none timed
        // out: a load the server could carry says nothing about overload.
        out.push(if none_load.is_some_and(|l| l < MIN_OVERLOAD) {
            Check::observed(
                claim,
                passed,
                format!(
                    "{detail}, under {MIN_OVERLOAD} x: the server ran faster than its \
                     calibration, so this run cannot decide the claim"
                ),
            )
        } else {
            Check::new(claim, passed, detail)
        });
        // Observed: how far the unprotected service falls in a short run depends on how long
        // its backlog had to grow; the comparison above is what a quick run can decide.
        out.push(Check::observed(
            format!(
                "without protection, goodput collapses under overload (at {top} x: < 0.5 x its \
                 peak)"
            ),
            none_top.is_some_and(|g| g < 0.5 * none_peak),
            format!(
                "none: {} x capacity at {top} x, peak {none_peak:.2}",
                fmt(none_top)
            ),
        ));
        let rej = self.get(SSM.name, top, |s| Some(s.rejected_fraction));
        // The excess over the capacity the run itself had (its logins priced in the run): the
        // server's speed moves by up to a half between a calibration and the load a minute
        // later, and a load of 2 x a calibration was 1.35 x the run's own capacity in one of
        // five runs, which left 25% to reject, not 50%.
        let excess = self.excess(SSM.name, top);
        out.push(Check::new(
            format!(
                "with protection, the excess load is rejected (at {top} x: rejected >= half the \
                 offered load's excess over the run's own capacity)"
            ),
            rej.zip(excess).is_some_and(|(r, e)| r >= 0.5 * e),
            format!(
                "window+deadline: {} of requests rejected at {top} x, whose excess over the \
                 run's capacity was {}",
                fmt(rej),
                fmt(excess)
            ),
        ));
        // Only the protected service: on this shared machine a stall of a second or more
        // leaves an unprotected server a backlog it serves late for seconds after, even below
        // capacity (the report shows every variant).
        let low = self.loads.first().copied().unwrap_or(0.5);
        let in_time = |v: &str| {
            let g = self.get(v, low, |s| Some(s.goodput_per_s))?;
            let o = self.get(v, low, |s| s.offered_per_s)?;
            Some(g / o.max(1e-9))
        };
        let ssm_low = in_time(SSM.name);
        out.push(Check::new(
            format!(
                "below capacity the protected service serves the load in time (at {low} x: \
                 >= 90% of offered)"
            ),
            ssm_low.is_some_and(|f| f >= 0.9),
            format!(
                "window+deadline {}%, none {}% of offered completed in time",
                pct(ssm_low),
                pct(in_time(NONE.name))
            ),
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point at `load_x` of `variant` that answered `goodput` x capacity, with `own_load`
    /// its offered load over the capacity its own run had.
    fn point(variant: &'static str, load_x: f64, goodput: f64, own_load: f64) -> Point {
        let mut summary = RunSummary::new(TIMEOUT.as_secs_f64());
        summary.capacity_per_s = Some(500.0);
        summary.offered_per_s = Some(500.0 * own_load);
        summary.goodput_per_s = 500.0 * goodput;
        summary.goodput_fraction_of_capacity = Some(goodput);
        Point {
            variant,
            load_x,
            summary,
            login_queue_nonempty: None,
            goodput: Vec::new(),
            window: Vec::new(),
            series: Value::Null,
        }
    }

    /// The comparison of none with window+deadline at the top load, with none answering
    /// everything there and its load `none_load` x its own capacity.
    fn comparison(none_load: f64) -> Check {
        let points = [
            point(NONE.name, 1.0, 0.95, 1.0),
            point(SSM.name, 1.0, 0.95, 1.0),
            point(NONE.name, 2.0, 0.95, none_load),
            point(SSM.name, 2.0, 0.97, 2.0),
        ];
        let sweep = Sweep {
            points: &points,
            variants: &[NONE, SSM],
            loads: &[1.0, 2.0],
            capacity: 500.0,
            capacities: &[500.0, 500.0],
        };
        sweep
            .checks()
            .into_iter()
            .find(|c| c.claim.starts_with("goodput holds with protection"))
            .expect("the comparison is checked")
    }

    #[test]
    fn a_run_far_faster_or_slower_than_its_calibration_is_loaded() {
        // `point` prices the run at 500 logins per CPU-second.
        let p = point(SSM.name, 2.0, 0.9, 2.0);
        assert!(machine_moved(&p, 300.0).is_none());
        assert!(machine_moved(&p, 900.0).is_none());
        let why = machine_moved(&p, 240.0).expect("2.08 x faster");
        assert!(why.contains("2.08 x the calibration's speed"), "{why}");
        assert!(machine_moved(&p, 1100.0).is_some(), "0.45 x");
    }

    #[test]
    fn an_unprotected_server_that_keeps_up_under_overload_fails_the_run() {
        let c = comparison(2.0);
        assert!(!c.passed && c.enforced, "{c:?}");
    }

    #[test]
    fn a_load_the_server_could_carry_does_not_decide_the_comparison() {
        let c = comparison(1.0);
        assert!(!c.passed && !c.enforced, "{c:?}");
        assert!(c.detail.contains("cannot decide"), "{}", c.detail);
    }
}
