//! What one tier of the `tiers` scenario counts (`seda serve tier`'s `GET /_tier/stats`), one
//! type for the service that writes it and the lab that reads it back.
//!
//! The figure the scenario is about is *wasted work*: the time a tier spent on its own part of
//! a request that a tier below then refused, that missed its deadline, or that was cancelled:
//! what a tier spends when it learns of an overload below only after doing its part.

use serde::{Deserialize, Serialize};

/// The path the tier serves its counters on.
pub const PATH: &str = "/_tier/stats";

/// One tier's counters since it started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierStats {
    /// Requests that reached the tier's handler (past its seda layer).
    pub requests: u64,
    /// Refused at the door, before any work, because the window over the tiers below was full.
    pub refused_at_door: u64,
    /// Requests whose own work ran to its end.
    pub worked: u64,
    /// The tier's own work, ms (whole and partial holds).
    pub work_ms: f64,
    /// Work, ms, on requests that did not succeed below (refused, past their deadline,
    /// failed or cancelled).
    pub wasted_ms: f64,
    /// Calls below answered 2xx.
    pub downstream_ok: u64,
    /// Calls below answered 503 (a refusal somewhere below).
    pub downstream_refused: u64,
    /// Calls below answered 504, or not answered within the request's budget.
    pub downstream_deadline: u64,
    /// Calls below that failed otherwise (connection refused, 5xx other than 503/504).
    pub downstream_failed: u64,
    /// Requests abandoned by the tier's own caller (client gone, deadline cut above) before
    /// they were answered.
    pub cancelled: u64,
    /// Of those, the ones whose call below was in flight and was dropped.
    pub cancelled_in_call: u64,
    /// Calls sent below, retries included.
    #[serde(default)]
    pub calls: u64,
    /// Of those, retries of a call the tier below refused (`seda serve tier --retries`).
    #[serde(default)]
    pub retries: u64,
    /// Retries the tier's retry budget did not allow.
    #[serde(default)]
    pub retries_denied: u64,
    /// Calls (first or retry) the tier's adaptive throttle refused, never sent.
    #[serde(default)]
    pub throttled: u64,
    /// The window over the tiers below (requests allowed in flight), when the tier keeps one.
    pub window: Option<f64>,
    /// DAGOR's admission level (`seda serve tier --policy dagor`), as business/user: the
    /// least important priority the tier admits now.
    #[serde(default)]
    pub admission_level: Option<String>,
}

impl TierStats {
    /// The share of the tier's work wasted, in [0, 1] (0 when it did none).
    pub fn wasted_share(&self) -> f64 {
        if self.work_ms > 0.0 {
            (self.wasted_ms / self.work_ms).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The share of the calls sent below that were retries, in [0, 1] (0 with no calls).
    pub fn retry_share(&self) -> f64 {
        if self.calls > 0 {
            self.retries as f64 / self.calls as f64
        } else {
            0.0
        }
    }

    /// The counters gained since `before` (the window as it is now).
    pub fn since(&self, before: &TierStats) -> TierStats {
        TierStats {
            requests: self.requests.saturating_sub(before.requests),
            refused_at_door: self.refused_at_door.saturating_sub(before.refused_at_door),
            worked: self.worked.saturating_sub(before.worked),
            work_ms: (self.work_ms - before.work_ms).max(0.0),
            wasted_ms: (self.wasted_ms - before.wasted_ms).max(0.0),
            downstream_ok: self.downstream_ok.saturating_sub(before.downstream_ok),
            downstream_refused: self
                .downstream_refused
                .saturating_sub(before.downstream_refused),
            downstream_deadline: self
                .downstream_deadline
                .saturating_sub(before.downstream_deadline),
            downstream_failed: self
                .downstream_failed
                .saturating_sub(before.downstream_failed),
            cancelled: self.cancelled.saturating_sub(before.cancelled),
            cancelled_in_call: self
                .cancelled_in_call
                .saturating_sub(before.cancelled_in_call),
            calls: self.calls.saturating_sub(before.calls),
            retries: self.retries.saturating_sub(before.retries),
            retries_denied: self.retries_denied.saturating_sub(before.retries_denied),
            throttled: self.throttled.saturating_sub(before.throttled),
            window: self.window,
            admission_level: self.admission_level.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wasted_share_and_the_difference_of_two_readings() {
        let a = TierStats {
            requests: 10,
            calls: 10,
            retries: 1,
            work_ms: 50.0,
            wasted_ms: 10.0,
            ..TierStats::default()
        };
        let b = TierStats {
            requests: 30,
            calls: 40,
            retries: 4,
            work_ms: 150.0,
            wasted_ms: 60.0,
            ..TierStats::default()
        };
        let d = b.since(&a);
        assert_eq!(d.requests, 20);
        assert!((d.wasted_share() - 0.5).abs() < 1e-9);
        assert!((d.retry_share() - 0.1).abs() < 1e-9);
        assert_eq!(TierStats::default().wasted_share(), 0.0);
        assert_eq!(TierStats::default().retry_share(), 0.0);
        let text = serde_json::to_string(&b).expect("serializes");
        assert_eq!(serde_json::from_str::<TierStats>(&text).expect("reads"), b);
    }
}
