//! Our tuned response-time controller: 002 Section 3.2's measurement (a percentile of
//! response times per window, smoothed by an EWMA) driving the same token bucket, with a
//! different control law. Each change addresses a way the original falls short on a sudden
//! spike (see `seda sim spike`):
//!
//! 1. **Rate anchored on the departure rate (Little's law, as in 003 Section 4.3.1).** 002's AIMD
//!    moves the rate by at most +1.8/s per run and /1.2 per run, so after a spike it takes
//!    minutes to find the capacity (it admits half of it in our runs). Here, with
//!    `factor = clamp(1 + gain (setpoint - cur) / target, 0.5, 2)`, a run over the setpoint sets
//!    the rate to at most `d x factor`, `d` the measured completion rate: a proportional law on
//!    the queue (the queue integrates `rate - d`, and `cur` is about `queue / d`). Under the
//!    setpoint the rate is multiplied by `factor`, but only while the bucket is turning requests
//!    away (anti-windup: no growth far above what the stage does when idle). The clamp keeps one
//!    straggler in a heavy-tailed window from zeroing the rate; a period without completions
//!    still runs, so a rate cut very low recovers.
//! 2. **A setpoint below the target** (`setpoint` x target, 0.5): oscillation around the
//!    setpoint stays under the target.
//! 3. **Fast attack.** A window's percentile above the estimate replaces it at once; the EWMA
//!    only smooths decreases.
//! 4. **Short windows** (`timeout` 0.1 s): the controller runs ten times as often.
//! 5. **Selective dropping (003 Section 4.2.3).** At dequeue, an event that has queued longer than
//!    `drop_queued` (the target) is dropped as expired: what was admitted before the controller
//!    could react is not served late.

use std::time::Duration;

use super::{ResponseTimeConfig, SampleWindow};
use crate::{AdmissionController, RejectReason, Time, TokenBucket};

/// Parameters of [`TunedResponseTimeController`].
#[derive(Debug, Clone, PartialEq)]
pub struct TunedConfig {
    /// The measurement parameters (target, percentile, `nreq`, `timeout`, `alpha`, rate range,
    /// bucket). [`TunedConfig::new`] changes `timeout` to 0.1 s, the rate range to [1, 10^7] and
    /// starts at the top of it (no limit until overload). The AIMD constants are not used.
    pub base: ResponseTimeConfig,
    /// Operating point as a fraction of the target (0.5).
    pub setpoint: f64,
    /// Proportional gain (1.0).
    pub gain: f64,
    /// Drop at dequeue events that queued longer than this; `None` disables dropping.
    pub drop_queued: Option<Duration>,
}

impl TunedConfig {
    /// Our defaults for a `target` on the 90th percentile.
    pub fn new(target: Duration) -> Self {
        let base = ResponseTimeConfig {
            timeout: Duration::from_millis(100),
            min_rate_per_s: 1.0,
            max_rate_per_s: 1e7,
            initial_rate_per_s: 1e7,
            ..ResponseTimeConfig::new(target)
        };
        TunedConfig {
            base,
            setpoint: 0.5,
            gain: 1.0,
            drop_queued: Some(target),
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        self.base.validate()?;
        if !(self.setpoint > 0.0 && self.setpoint <= 1.0) {
            return Err(format!("setpoint must be in (0, 1], got {}", self.setpoint));
        }
        if !(self.gain > 0.0 && self.gain <= 10.0) {
            return Err(format!("gain must be in (0, 10], got {}", self.gain));
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
        let setpoint = self.cfg.setpoint * target;
        // At most halve or double per run, as Envoy's gradient is clamped to [0.5, 2]: one
        // straggler in a heavy-tailed window must not zero the rate.
        let factor = (1.0 + self.cfg.gain * (setpoint - cur) / target).clamp(0.5, 2.0);
        let rate = self.bucket.rate_per_s();
        let next = if cur > setpoint {
            rate.min(departures_per_s * factor)
        } else if self.rejections > 0 {
            // The bucket is binding, so the rate is what gets through: grow it.
            rate * factor
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
        let due = self.window.due(now);
        match self.window.poll(now) {
            Some(p) => self.observe(now, p),
            // A period without completions still runs, on the last estimate: a rate cut so low
            // that nothing completes must be able to grow again.
            None if due => self.observe(now, self.estimate_s.unwrap_or(0.0)),
            None => {}
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
    fn over_the_setpoint_cuts_toward_the_departure_rate_at_once() {
        let mut c = ctl();
        // 100 completions in 0.099 s (about 1010/s), all at 1 s: 0.5 s over the setpoint.
        for i in 0..100 {
            c.on_complete(s(i as f64 * 0.001), 0, s(1.0), s(1.0));
        }
        let expected = 100.0 / 0.099 * 0.5;
        assert!(
            (c.rate_per_s() - expected).abs() < 1.0,
            "rate {}",
            c.rate_per_s()
        );
        // Further runs over the setpoint never raise it.
        c.rejections = 10;
        c.completions = 500;
        c.observe(s(0.2), 1.0);
        assert!(
            (c.rate_per_s() - expected).abs() < 1.0,
            "rate {}",
            c.rate_per_s()
        );
    }

    #[test]
    fn under_the_setpoint_grows_only_while_the_bucket_rejects() {
        let mut c = ctl();
        c.bucket.set_rate(s(0.0), 100.0);
        c.period_start = Some(s(0.0));
        c.completions = 10;
        c.observe(s(0.1), 0.1); // far under, but no rejection: hold
        assert_eq!(c.rate_per_s(), 100.0);
        c.rejections = 5;
        c.completions = 10; // 100/s, the bucket is binding
        c.observe(s(0.2), 0.1); // d (1 + (0.5 - 0.1)) = 140
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
