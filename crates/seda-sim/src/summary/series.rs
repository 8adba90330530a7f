//! [`Series`]: a run's figures per interval, as `seda sim --json` prints them under `series`.

use serde::{Serialize, Serializer};

use super::settle::Window;
use crate::Metrics;

/// One interval of a run. Rates are per second over the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// Start of the interval, seconds from the start of the run.
    pub t_s: f64,
    /// Requests offered.
    pub offered_per_s: f64,
    /// Requests admitted.
    pub admitted_per_s: f64,
    /// Requests completed.
    pub completed_per_s: f64,
    /// Requests completed within the target.
    pub goodput_per_s: f64,
    /// Requests refused.
    pub rejected_per_s: f64,
    /// Requests dropped at dequeue.
    pub expired_per_s: f64,
    /// Clients that gave up.
    pub timed_out_per_s: f64,
    /// Median response time of the requests completed in it.
    pub p50_s: Option<f64>,
    /// p90 of the same.
    pub p90_s: Option<f64>,
    /// p99 of the same.
    pub p99_s: Option<f64>,
    /// Refused share of each of the first two classes.
    pub class_refused_fraction: [f64; 2],
    /// The admission controller's state at the end of the interval, in the controller's
    /// order (a JSON object).
    #[serde(serialize_with = "as_map")]
    pub controller: Vec<(&'static str, f64)>,
}

/// A run's intervals, `step_s` wide, from time 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Series {
    /// The intervals, in order.
    pub intervals: Vec<Interval>,
    /// Their width, seconds.
    #[serde(skip)]
    pub step_s: f64,
}

impl Series {
    /// The series of a simulated run, `step_s` wide.
    pub fn of(m: &Metrics, step_s: f64) -> Series {
        let intervals = m
            .series(step_s)
            .iter()
            .enumerate()
            .map(|(i, b)| Interval {
                t_s: i as f64 * step_s,
                offered_per_s: b.offered as f64 / step_s,
                admitted_per_s: b.admitted as f64 / step_s,
                completed_per_s: b.completed as f64 / step_s,
                goodput_per_s: b.good as f64 / step_s,
                rejected_per_s: b.rejected as f64 / step_s,
                expired_per_s: b.expired as f64 / step_s,
                timed_out_per_s: b.timed_out as f64 / step_s,
                p50_s: b.quantile(0.5),
                p90_s: b.quantile(0.9),
                p99_s: b.quantile(0.99),
                class_refused_fraction: [b.class_refused_fraction(0), b.class_refused_fraction(1)],
                controller: b.state.clone(),
            })
            .collect();
        Series { intervals, step_s }
    }

    /// The intervals as settle-time windows.
    pub fn windows(&self) -> impl Iterator<Item = Window> + '_ {
        self.intervals.iter().map(|i| Window {
            end_s: i.t_s + self.step_s,
            p90_s: i.p90_s,
        })
    }

    /// A table of the series, headed by `name`.
    pub fn text(&self, name: &str) -> String {
        let step_s = self.step_s;
        let mut s = format!("\n-- {name}: per {step_s} s\n");
        s += &format!(
            "{:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}  controller\n",
            "t_s", "offered", "complete", "good", "rejected", "expired", "p90_s", "p99_s"
        );
        for i in &self.intervals {
            let q = |p: Option<f64>| p.map_or("-".to_string(), |v| format!("{v:.3}"));
            let state: Vec<String> = i
                .controller
                .iter()
                .map(|(k, v)| format!("{k}={v:.1}"))
                .collect();
            s += &format!(
                "{:>6.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>8}  {}\n",
                i.t_s,
                i.offered_per_s,
                i.completed_per_s,
                i.goodput_per_s,
                i.rejected_per_s,
                i.expired_per_s,
                q(i.p90_s),
                q(i.p99_s),
                state.join(" ")
            );
        }
        s
    }
}

fn as_map<S: Serializer>(state: &[(&'static str, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(state.iter().map(|(k, v)| (*k, *v)))
}
