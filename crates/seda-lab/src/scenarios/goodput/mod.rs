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

use crate::outcome::{Check, Outcome};
use crate::{Lab, Scenario, mail};

use point::Point;

/// How goodput / capacity is measured, for reports.
pub(super) const CAPACITY_HOW: &str = "capacity is by design: the service runs on the lab's \
    emulated processor (`seda serve mail --cores`), where each login holds a core for its \
    stated cost (`seda_mail::cost`), so capacity is the cores over that cost, known before the \
    run; goodput / capacity is the logins answered within the timeout over that rate, and \
    loads are multiples of it";

/// The scenario.
pub struct Goodput;

/// The client's timeout, the AIMD window's "too slow", the server's deadline and the goodput
/// bound (SSM04: 60 ms, for bricks that answer in about a millisecond; see the report).
const TIMEOUT: Duration = Duration::from_secs(1);
/// Login threads: enough that one thread's real work (about 140 µs of real CPU, most of it the
/// argon2id check of the password) overlaps the others' holds of the emulated processor, so
/// that the processor, not the real work, is what bounds the logins.
const THREADS: usize = 4;

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
    fn capacity_by_design(&self) -> bool {
        true
    }

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
    /// its excess).
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
        let capacity = point::capacity();
        let mut points = Vec::new();
        for &load in &loads {
            for v in &variants {
                points.push(point::run(lab, v, load, capacity)?);
            }
        }
        report::plots(lab, &points, &variants)?;
        let sweep = Sweep {
            points: &points,
            variants: &variants,
            loads: &loads,
            capacity,
        };
        let checks = sweep.checks();
        Ok(Outcome {
            paper: "SSM04 Figures 5, 6 and 7 (Self-Tuning)".into(),
            config: json!({
                "service": "seda serve mail, every request a login (SQLite password check, new \
                            session in memory)",
                "cores": mail::CORES,
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

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.0}", v * 100.0))
}

/// The sweep's results, looked up by variant and load.
pub(super) struct Sweep<'a> {
    points: &'a [Point],
    variants: &'a [Variant],
    loads: &'a [f64],
    /// The designed capacity, logins/s: the unit of goodput.
    capacity: f64,
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

    /// The load `variant` had at `load` as a multiple of the capacity its run was priced at.
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
        s.insert("capacity_per_s".into(), json!(self.capacity));
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
                 (at {top} x: >= 0.9 x its peak)"
            ),
            ssm_top.is_some_and(|g| g >= 0.9 * ssm_peak),
            format!(
                "window+deadline: {} x capacity at {top} x, peak {ssm_peak:.2}",
                fmt(ssm_top)
            ),
        ));
        out.push(Check::new(
            format!(
                "SSM discovers the maximum goodput of the basic system (at {top} x: >= 0.9 x its \
                 designed capacity)"
            ),
            ssm_top.is_some_and(|g| g >= 0.9),
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
        out.push(Check::new(claim, passed, detail));
        out.push(Check::new(
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
        };
        sweep
            .checks()
            .into_iter()
            .find(|c| c.claim.starts_with("goodput holds with protection"))
            .expect("the comparison is checked")
    }

    #[test]
    fn an_unprotected_server_that_keeps_up_under_overload_fails_the_run() {
        let c = comparison(2.0);
        assert!(!c.passed && c.enforced, "{c:?}");
    }
}
