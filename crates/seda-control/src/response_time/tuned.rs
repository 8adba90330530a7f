//! Our tuned response-time controller: 002 Section 3.2's measurement and AIMD, with four
//! changes that each address a way the original falls short on a sudden spike (see the
//! `seda sim spike` comparison):
//!
//! 1. **Fast attack.** A window's percentile above the smoothed estimate replaces it at once;
//!    the EWMA only smooths decreases. The original's EWMA (alpha 0.7) hides the first windows
//!    of a spike.
//! 2. **Cut to the departure rate (Little's law, as in 003 Section 4.3.1).** Over target, the
//!    rate falls to `departures x target / estimate x backoff` when that is below `rate / adj_d`:
//!    one decision instead of a dozen `/1.2` steps from a rate far above capacity.
//! 3. **Anti-windup, multiplicative recovery.** The rate only grows in periods where the bucket
//!    actually turned requests away, and then multiplicatively (`x (1 + gain (c_i - err))`), so
//!    it neither climbs far above what the stage can do while idle nor takes minutes to recover
//!    after a cut.
//! 4. **Selective dropping (003 Section 4.2.3).** At dequeue, an event that has queued longer
//!    than `drop_queued` is dropped as expired: the backlog admitted before the controller could
//!    react is not served late.

use std::time::Duration;

use super::{ResponseTimeConfig, SampleWindow};
use crate::{AdmissionController, RejectReason, Time, TokenBucket};

/// Parameters of [`TunedResponseTimeController`].
#[derive(Debug, Clone, PartialEq)]
pub struct TunedConfig {
    /// The shared parameters. [`TunedConfig::new`] changes `timeout` to 0.1 s, `err_d` to -0.1,
    /// the rate range to [1, 10^7] and starts at the top of it (no limit until overload).
    pub base: ResponseTimeConfig,
    /// Factor on the Little's-law rate when cutting (below 1 so the backlog drains).
    pub backoff: f64,
    /// Gain of the multiplicative increase.
    pub increase_gain: f64,
    /// Drop at dequeue events that queued longer than this; `None` disables dropping.
    pub drop_queued: Option<Duration>,
}

impl TunedConfig {
    /// Our defaults for a `target` on the 90th percentile.
    pub fn new(target: Duration) -> Self {
        let base = ResponseTimeConfig {
            timeout: Duration::from_millis(100),
            err_d: -0.1,
            min_rate_per_s: 1.0,
            max_rate_per_s: 1e7,
            initial_rate_per_s: 1e7,
            ..ResponseTimeConfig::new(target)
        };
        TunedConfig {
            base,
            backoff: 0.9,
            increase_gain: 0.5,
            drop_queued: Some(target),
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        self.base.validate()?;
        if !(self.backoff > 0.0 && self.backoff <= 1.0) {
            return Err(format!("backoff must be in (0, 1], got {}", self.backoff));
        }
        if !(self.increase_gain.is_finite() && self.increase_gain >= 0.0) {
            return Err(format!(
                "increase_gain must be >= 0, got {}",
                self.increase_gain
            ));
        }
        Ok(())
    }
}

/// The tuned response-time controller (module docs list the changes).
#[derive(Debug, Clone)]
pub struct TunedResponseTimeController {
    cfg: TunedConfig,
    bucket: TokenBucket,
    window: SampleWindow,
    estimate_s: Option<f64>,
    period_start: Option<Time>,
    completions: u64,
    rejections: u64,
    dropped: u64,
}

impl TunedResponseTimeController {
    /// A controller with `cfg`.
    pub fn new(cfg: TunedConfig) -> Result<Self, String> {
        cfg.validate()?;
        let b = &cfg.base;
        Ok(TunedResponseTimeController {
            bucket: TokenBucket::new(b.initial_rate_per_s, b.bucket_depth),
            window: SampleWindow::new(b.nreq, b.timeout, b.percentile),
            cfg,
            estimate_s: None,
            period_start: None,
            completions: 0,
            rejections: 0,
            dropped: 0,
        })
    }

    /// The token bucket's current rate.
    pub fn rate_per_s(&self) -> f64 {
        self.bucket.rate_per_s()
    }

    /// The percentile estimate, once a window has closed.
    pub fn estimate(&self) -> Option<Duration> {
        self.estimate_s.map(Duration::from_secs_f64)
    }

    /// One controller run on a window's percentile `sample_s`, with the completions and
    /// rejections counted since the previous run.
    pub fn observe(&mut self, now: Time, sample_s: f64) {
        let b = &self.cfg.base;
        let start = self.period_start.unwrap_or(now);
        let elapsed = now.saturating_sub(start).as_secs_f64().max(1e-6);
        let departures_per_s = self.completions as f64 / elapsed;
        let cur = match self.estimate_s {
            Some(prev) if sample_s <= prev => b.alpha * prev + (1.0 - b.alpha) * sample_s,
            _ => sample_s,
        };
        self.estimate_s = Some(cur);
        let target = b.target.as_secs_f64();
        let err = (cur - target) / target;
        let rate = self.bucket.rate_per_s();
        let next = if err > b.err_d {
            let littles = departures_per_s * (target / cur).min(1.0) * self.cfg.backoff;
            (rate / b.adj_d).min(littles.max(b.min_rate_per_s))
        } else if err < b.err_i && self.rejections > 0 {
            rate * (1.0 + self.cfg.increase_gain * (b.c_i - err))
        } else {
            rate
        };
        self.bucket
            .set_rate(now, next.clamp(b.min_rate_per_s, b.max_rate_per_s));
        self.period_start = Some(now);
        self.completions = 0;
        self.rejections = 0;
    }

    fn poll(&mut self, now: Time) {
        self.period_start.get_or_insert(now);
        if let Some(p) = self.window.poll(now) {
            self.observe(now, p);
        }
    }
}

impl AdmissionController for TunedResponseTimeController {
    fn name(&self) -> &'static str {
        "response_time_tuned"
    }

    fn admit(&mut self, now: Time, _class: u8) -> Result<(), RejectReason> {
        self.poll(now);
        if self.bucket.try_take(now, 1.0) {
            Ok(())
        } else {
            self.rejections += 1;
            Err(RejectReason::Rate)
        }
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {
        self.bucket.give_back(1.0);
    }

    fn on_dequeue(&mut self, _now: Time, queued: Duration) -> bool {
        let drop = self.cfg.drop_queued.is_some_and(|limit| queued > limit);
        if drop {
            self.dropped += 1;
        }
        drop
    }

    fn on_complete(&mut self, now: Time, _class: u8, response: Duration, _sojourn: Duration) {
        self.period_start.get_or_insert(now);
        self.completions += 1;
        if let Some(p) = self.window.push(now, response.as_secs_f64()) {
            self.observe(now, p);
        }
    }

    fn tick(&mut self, now: Time) {
        self.poll(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("rate_per_s", self.bucket.rate_per_s()),
            ("estimate_s", self.estimate_s.unwrap_or(0.0)),
            ("dropped", self.dropped as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    fn ctl() -> TunedResponseTimeController {
        TunedResponseTimeController::new(TunedConfig::new(s(1.0))).unwrap()
    }

    #[test]
    fn over_target_cuts_to_the_departure_rate_at_once() {
        let mut c = ctl();
        // 100 completions in 0.1 s (1000/s), all at 2 s: estimate 2 s, err +1.
        for i in 0..100 {
            c.on_complete(s(i as f64 * 0.001), 0, s(2.0), s(2.0));
        }
        let expected = 100.0 / 0.099 * 0.5 * 0.9;
        assert!(
            (c.rate_per_s() - expected).abs() < 1.0,
            "rate {}",
            c.rate_per_s()
        );
    }

    #[test]
    fn grows_only_while_the_bucket_rejects() {
        let mut c = ctl();
        c.bucket.set_rate(s(0.0), 100.0);
        c.period_start = Some(s(0.0));
        c.observe(s(0.1), 0.1); // far under target, but no rejection: hold
        assert_eq!(c.rate_per_s(), 100.0);
        c.rejections = 5;
        c.observe(s(0.2), 0.1); // err -0.9: x (1 + 0.5 * 0.8)
        assert!(
            (c.rate_per_s() - 140.0).abs() < 1e-6,
            "rate {}",
            c.rate_per_s()
        );
    }

    #[test]
    fn fast_attack_slow_release() {
        let mut c = ctl();
        c.observe(s(0.1), 0.2);
        c.observe(s(0.2), 3.0);
        assert_eq!(c.estimate(), Some(s(3.0)));
        c.observe(s(0.3), 1.0);
        assert!((c.estimate().unwrap().as_secs_f64() - 2.4).abs() < 1e-9);
    }

    #[test]
    fn drops_events_that_queued_past_the_target() {
        let mut c = ctl();
        assert!(!c.on_dequeue(s(5.0), s(0.9)));
        assert!(c.on_dequeue(s(5.0), s(1.1)));
        let mut cfg = TunedConfig::new(s(1.0));
        cfg.drop_queued = None;
        let mut c = TunedResponseTimeController::new(cfg).unwrap();
        assert!(!c.on_dequeue(s(5.0), s(100.0)));
    }
}
