//! A retry budget: retries at most a fixed share of a client's requests, so that clients
//! which retry refused requests cannot multiply the load on an overloaded service.
//!
//! A client that retries every failed request up to N times sends up to N + 1 times its load
//! to a service that refuses everything: a retry storm, which keeps the service overloaded
//! after whatever overloaded it has passed. Finagle's `RetryBudget`, Envoy's retry budgets and
//! gRPC's retry throttling all bound retries by the traffic: over a sliding window, a retry is
//! allowed while `retries + 1 <= ratio x requests + min_per_s x window`. With the default 10%
//! (Google SRE's book, "Handling Overload") the storm is at most 1.1 x the load; the small
//! allowance lets a client that sends little still retry the odd failure.

use std::time::Duration;

use super::window::SlidingCounts;
use crate::{InvalidConfig, Time};

/// Settings of [`RetryBudget`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RetryBudgetConfig {
    /// Retries allowed per request sent (0.1).
    pub ratio: f64,
    /// Retries allowed per second whatever the traffic (1).
    pub min_per_s: f64,
    /// The window requests and retries are counted over (10 s, Finagle's).
    pub window: Duration,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            ratio: 0.1,
            min_per_s: 1.0,
            window: Duration::from_secs(10),
        }
    }
}

impl RetryBudgetConfig {
    /// Checks the settings: `ratio` and `min_per_s` finite and not negative, a window of at
    /// least a millisecond.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] naming the setting that is out of range.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        for (name, v) in [("ratio", self.ratio), ("min_per_s", self.min_per_s)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(InvalidConfig::new(
                    name,
                    format!("{name} must be a number >= 0, got {v}"),
                ));
            }
        }
        if self.window < Duration::from_millis(1) {
            return Err(InvalidConfig::new(
                "window",
                "the retry budget's window must be at least 1 ms",
            ));
        }
        Ok(())
    }
}

/// [`SlidingCounts`]' slots.
const REQUESTS: usize = 0;
const RETRIES: usize = 1;

/// A retry budget (module docs).
#[derive(Debug, Clone)]
pub struct RetryBudget {
    cfg: RetryBudgetConfig,
    counts: SlidingCounts,
    retried: u64,
    denied: u64,
}

impl RetryBudget {
    /// A budget with `cfg`.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] if `cfg` does not validate.
    pub fn new(cfg: RetryBudgetConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(RetryBudget {
            counts: SlidingCounts::new(cfg.window),
            cfg,
            retried: 0,
            denied: 0,
        })
    }

    /// Counts a request sent at `now` for the first time (a retry is not one).
    pub fn on_request(&mut self, now: Time) {
        self.counts.add(now, REQUESTS);
    }

    /// Whether a retry may be sent at `now`; an allowed retry is counted against the budget.
    pub fn try_retry(&mut self, now: Time) -> bool {
        let [requests, retries] = self.counts.totals(now);
        let allowed =
            self.cfg.ratio * requests as f64 + self.cfg.min_per_s * self.cfg.window.as_secs_f64();
        if retries as f64 + 1.0 > allowed {
            self.denied += 1;
            return false;
        }
        self.counts.add(now, RETRIES);
        self.retried += 1;
        true
    }

    /// Retries allowed so far.
    pub fn retried(&self) -> u64 {
        self.retried
    }

    /// Retries refused so far.
    pub fn denied(&self) -> u64 {
        self.denied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Time {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn a_storm_is_held_to_the_ratio() {
        // 1000 requests a second, every one failing and retried up to 3 times at once: past
        // the allowance, about 10% of the requests are retried.
        let mut b = RetryBudget::new(RetryBudgetConfig::default()).unwrap();
        for i in 0..30_000 {
            let now = s(i as f64 * 0.001);
            b.on_request(now);
            for _ in 0..3 {
                if !b.try_retry(now) {
                    break;
                }
            }
        }
        let share = b.retried() as f64 / 30_000.0;
        assert!((0.1..=0.11).contains(&share), "{share}");
        assert!(b.denied() > 25_000);
    }

    #[test]
    fn a_quiet_client_keeps_its_allowance_and_forgets_old_retries() {
        let cfg = RetryBudgetConfig {
            ratio: 0.0,
            min_per_s: 0.5,
            window: Duration::from_secs(10),
        };
        let mut b = RetryBudget::new(cfg).unwrap();
        // 0.5 a second over 10 s: five retries with no traffic, then none.
        assert_eq!((0..8).filter(|_| b.try_retry(s(1.0))).count(), 5);
        // A window later they are forgotten.
        assert!(b.try_retry(s(11.5)));
    }

    #[test]
    fn rejects_nonsense_settings() {
        let bad = |ratio: f64, min: f64, w: f64| {
            RetryBudget::new(RetryBudgetConfig {
                ratio,
                min_per_s: min,
                window: Duration::from_secs_f64(w),
            })
            .is_err()
        };
        assert!(bad(-0.1, 1.0, 10.0));
        assert!(bad(f64::NAN, 1.0, 10.0));
        assert!(bad(0.1, f64::INFINITY, 10.0));
        assert!(bad(0.1, 1.0, 0.0));
    }
}
