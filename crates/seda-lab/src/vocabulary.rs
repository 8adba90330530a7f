//! The load generator's report in the result vocabulary of [`seda_sim::summary`]: the lab
//! measures with `seda-load` and speaks of what it measured as the simulator does.

use seda_load::Report;
use seda_sim::summary::Window;

/// Slack for comparing interval starts computed in floating point.
const EPS_S: f64 = 1e-6;

/// The report's intervals starting at or after `from_s` in which something completed, as
/// settle-time windows.
pub fn windows(report: &Report, from_s: f64) -> impl Iterator<Item = Window> + '_ {
    report
        .series
        .iter()
        .filter(move |i| i.t_s >= from_s - EPS_S && i.counts.completed > 0)
        .map(|i| Window {
            end_s: i.t_s + i.duration_s,
            p90_s: Some(i.latency.p90_ms / 1000.0),
        })
}
