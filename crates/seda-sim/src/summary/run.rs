//! [`RunSummary`]: the headline figures of one run, under the names `result.json` and
//! `seda sim --json` use.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The headline figures of one run, in the simulator or on the real system.
///
/// It reads back from that JSON too (`seda demo` reads a scenario's `result.json` summary).
/// Every producer fills the figures it measures; a figure it does not measure, or could not
/// (a percentile of a window where nothing completed), is `None` and left out of the JSON.
/// Rates are per second over the measured span (the spike, or the run after its warm-up);
/// fractions are of the requests that ended in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    /// The controller (or mode) by name: the simulator's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// The control configuration as the lab describes it (stage controllers, limits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<Value>,
    /// Closed-loop users of a steady run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<u64>,
    /// Offered load as a multiple of capacity (load sweeps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_x_capacity: Option<f64>,
    /// The response-time target: p90 for the controllers, the client's timeout for goodput.
    pub target_s: f64,
    /// The service's measured capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_per_s: Option<f64>,
    /// Requests offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_per_s: Option<f64>,

    /// p90 of admitted (completed) requests over the span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_admitted_s: Option<f64>,
    /// p90 of admitted requests from the settle time to the end of the span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_admitted_after_settle_s: Option<f64>,
    /// p90 of admitted requests over the last 5 s of a spike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_last_5s_of_spike_s: Option<f64>,
    /// The slowest admitted request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_admitted_s: Option<f64>,
    /// Mean response time by Little's law on a closed loop (counts requests still queued at
    /// the end, which percentiles of completed requests miss).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_response_littles_s: Option<f64>,
    /// p50 of completed requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_completed_s: Option<f64>,
    /// p90 of completed requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_completed_s: Option<f64>,

    /// Settle time ([`settle_time`](super::settle_time)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle_time_s: Option<f64>,
    /// Whether the span settled ([`settled`](super::settled)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled: Option<bool>,

    /// Requests completed within the target whose client still waited.
    pub goodput_per_s: f64,
    /// Goodput over capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_fraction_of_capacity: Option<f64>,
    /// Requests completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_per_s: Option<f64>,
    /// Refused by admission (or a queue bound, or a 503).
    pub rejected_fraction: f64,
    /// Admitted, then dropped at dequeue (the simulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired_fraction: Option<f64>,
    /// The client gave up waiting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_fraction: Option<f64>,
    /// Clients that gave up, per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out_per_s: Option<f64>,
    /// Failed for another reason (connection errors, bad replies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_fraction: Option<f64>,
    /// Requests timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// Requests failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// Failures by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kinds: Option<BTreeMap<String, u64>>,
    /// Users who got neither a page nor a rejection in the whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unanswered_clients_fraction: Option<f64>,
    /// Jain's fairness index of completions over clients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jain_completed: Option<f64>,

    /// Events the simulator processed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// Wall-clock seconds of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// Events per wall-clock second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_per_s: Option<f64>,

    /// Figures only one scenario reports (per class, per stage, the quality knob, CPU
    /// shares), under their own names.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl RunSummary {
    /// A summary against `target_s` with nothing measured yet.
    pub fn new(target_s: f64) -> RunSummary {
        RunSummary {
            target_s,
            ..RunSummary::default()
        }
    }

    /// Sets goodput and throughput from `good` and `completed` requests over `secs`, and
    /// goodput's share of `capacity_per_s`.
    pub fn rates(&mut self, good: u64, completed: u64, secs: f64, capacity_per_s: f64) {
        self.goodput_per_s = per_s(good, secs);
        self.throughput_per_s = Some(per_s(completed, secs));
        self.capacity_per_s = Some(capacity_per_s);
        self.goodput_fraction_of_capacity = Some(self.goodput_per_s / capacity_per_s);
    }

    /// Sets the settle time and whether a span of `span_s` settled, and the p90 after it.
    pub fn settling(&mut self, settle_s: f64, span_s: f64, p90_after_s: Option<f64>) {
        self.settle_time_s = Some(settle_s);
        self.settled = Some(super::settled(settle_s, span_s));
        self.p90_admitted_after_settle_s = p90_after_s;
    }

    /// Adds a figure under its own name (see [`RunSummary::extra`]).
    pub fn with(mut self, key: &str, value: impl Serialize) -> RunSummary {
        self.insert(key, value);
        self
    }

    /// Adds a figure under its own name (see [`RunSummary::extra`]).
    pub fn insert(&mut self, key: &str, value: impl Serialize) {
        let v = serde_json::to_value(value).unwrap_or(Value::Null);
        self.extra.insert(key.to_string(), v);
    }

    /// Adds every field of `figures` (a struct of one scenario's own figures) to
    /// [`RunSummary::extra`].
    pub fn extend(&mut self, figures: &impl Serialize) {
        if let Ok(Value::Object(m)) = serde_json::to_value(figures) {
            self.extra.extend(m);
        }
    }

    /// A figure of [`RunSummary::extra`] as a number.
    pub fn extra_f64(&self, key: &str) -> Option<f64> {
        self.extra.get(key).and_then(Value::as_f64)
    }

    /// As a JSON object (for `result.json` and `seda sim --json`).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `n` events over `secs` seconds, per second (0 over an empty span).
pub fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// `part` of `whole` (0 when `whole` is 0).
pub fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_under_todays_key_names_and_leaves_out_what_was_not_measured() {
        let mut s = RunSummary::new(1.0);
        s.controller = Some("vegas".into());
        s.rates(90, 100, 10.0, 20.0);
        s.settling(3.0, 50.0, Some(0.8));
        s.p90_admitted_s = None;
        let s = s.with("mean_quality", 0.5);
        let v = s.to_json();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "capacity_per_s",
                "controller",
                "goodput_fraction_of_capacity",
                "goodput_per_s",
                "mean_quality",
                "p90_admitted_after_settle_s",
                "rejected_fraction",
                "settle_time_s",
                "settled",
                "target_s",
                "throughput_per_s",
            ]
        );
        assert_eq!(v["goodput_fraction_of_capacity"], 0.45);
        assert_eq!(s.extra_f64("mean_quality"), Some(0.5));
        assert_eq!(per_s(5, 0.0), 0.0);
        assert_eq!(fraction(1, 4), 0.25);
    }
}
