//! Envoy's adaptive-concurrency gradient controller (ENVOY in `docs/papers.md`).
//!
//! minRTT window: concurrency is pinned to `min_concurrency` (3) and the p50 of 50 requests that
//! started inside the window becomes minRTT; it is re-measured every `min_rtt_interval` (+ up to
//! 15% jitter) and after 5 consecutive updates at the minimum limit. Every `update_interval`
//! (100 ms): `grad = clamp(1.25 minRTT / p50, 0.5, 2)`, `L = L grad + sqrt(L grad)`, within
//! [3, 1000]. Envoy has no drop signal: dropped events are not samples.

use super::ConcurrencyLimiter;
use crate::InvalidConfig;
use crate::entry::{self, Entry, Params, Role};
use std::time::Duration;

use super::{Jitter, LimitAlgorithm, percentile_of};
use crate::Time;

/// Parameters of [`EnvoyGradient`] (Envoy's defaults; `min_rtt_interval` has none, 60 s here).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EnvoyGradientConfig {
    /// Period of limit updates (100 ms).
    pub update_interval: Duration,
    /// Period of minRTT re-measurement (no default in Envoy; 60 s).
    pub min_rtt_interval: Duration,
    /// Samples per minRTT measurement (50).
    pub min_rtt_request_count: usize,
    /// Jitter on the minRTT interval, as a fraction (0.15).
    pub jitter: f64,
    /// Concurrency during minRTT measurement and lowest limit (3).
    pub min_concurrency: f64,
    /// Highest limit (1000).
    pub max_limit: f64,
    /// Buffer over minRTT tolerated (0.25).
    pub buffer: f64,
    /// Percentile of the samples aggregated (0.5).
    pub percentile: f64,
}

impl EnvoyGradientConfig {
    /// The defaults.
    pub const DEFAULT: EnvoyGradientConfig = EnvoyGradientConfig {
        update_interval: Duration::from_millis(100),
        min_rtt_interval: Duration::from_secs(60),
        min_rtt_request_count: 50,
        jitter: 0.15,
        min_concurrency: 3.0,
        max_limit: 1000.0,
        buffer: 0.25,
        percentile: 0.5,
    };

    /// Reads the parameters a configuration gives over the defaults.
    pub fn read(p: &mut Params<'_>) -> Self {
        let d = EnvoyGradientConfig::DEFAULT;
        EnvoyGradientConfig {
            update_interval: p.secs("update_interval_s", d.update_interval),
            min_rtt_interval: p.secs("min_rtt_interval_s", d.min_rtt_interval),
            min_rtt_request_count: p.count("min_rtt_request_count", d.min_rtt_request_count),
            jitter: p.f64("jitter", d.jitter),
            min_concurrency: p.f64("min_concurrency", d.min_concurrency),
            max_limit: p.f64("max_limit", d.max_limit),
            buffer: p.f64("buffer", d.buffer),
            percentile: p.f64("percentile", d.percentile),
        }
    }
}

impl Default for EnvoyGradientConfig {
    fn default() -> Self {
        EnvoyGradientConfig::DEFAULT
    }
}

/// The name configurations give this controller (`admission = { kind = "envoy_gradient" }`).
pub const ENVOY_GRADIENT: &str = "envoy_gradient";

/// The catalogue entry of [`EnvoyGradient`].
pub(crate) const ENVOY_ENTRY: Entry = Entry {
    name: ENVOY_GRADIENT,
    about: "Envoy's adaptive concurrency (gradient)",
    source: "Envoy's adaptive concurrency filter, gradient controller",
    role: Role::Limit,
    compared: true,
    build: |p| {
        let cfg = EnvoyGradientConfig::read(p);
        Ok(Box::new(ConcurrencyLimiter::new(EnvoyGradient::new(cfg)?)))
    },
    aim: entry::no_target,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Start,
    MinRtt { since: Time, deferred: f64 },
    Normal,
}

/// Envoy's gradient controller.
#[derive(Debug, Clone)]
pub struct EnvoyGradient {
    cfg: EnvoyGradientConfig,
    phase: Phase,
    limit: f64,
    min_rtt_s: f64,
    samples: Vec<f64>,
    next_update: Time,
    next_min_rtt: Time,
    at_min: u32,
    jitter: Jitter,
}

impl EnvoyGradient {
    /// A controller with `cfg`.
    pub fn new(cfg: EnvoyGradientConfig) -> Result<Self, InvalidConfig> {
        if !(cfg.min_concurrency >= 1.0
            && cfg.min_concurrency <= cfg.max_limit
            && cfg.max_limit.is_finite())
        {
            return Err(InvalidConfig::new(
                "min_concurrency",
                format!(
                    "need 1 <= min_concurrency <= max_limit, got {} and {}",
                    cfg.min_concurrency, cfg.max_limit
                ),
            ));
        }
        if cfg.update_interval.is_zero() || cfg.min_rtt_interval.is_zero() {
            return Err(InvalidConfig::new(
                "update_interval_s",
                "update_interval_s and min_rtt_interval_s must be greater than 0",
            ));
        }
        if cfg.min_rtt_request_count == 0 {
            return Err(InvalidConfig::new(
                "min_rtt_request_count",
                "min_rtt_request_count must be at least 1",
            ));
        }
        if !(cfg.jitter >= 0.0 && cfg.jitter <= 1.0 && cfg.buffer >= 0.0 && cfg.buffer.is_finite())
        {
            return Err(InvalidConfig::new(
                "jitter",
                "need jitter in [0, 1] and buffer >= 0",
            ));
        }
        if !(cfg.percentile > 0.0 && cfg.percentile <= 1.0) {
            return Err(InvalidConfig::new(
                "percentile",
                format!("percentile must be in (0, 1], got {}", cfg.percentile),
            ));
        }
        let limit = cfg.min_concurrency;
        Ok(EnvoyGradient {
            cfg,
            phase: Phase::Start,
            limit,
            min_rtt_s: 0.0,
            samples: Vec::new(),
            next_update: Time::ZERO,
            next_min_rtt: Time::ZERO,
            at_min: 0,
            jitter: Jitter::new(0xe4_0e7),
        })
    }

    /// The measured minRTT (zero before the first measurement).
    pub fn min_rtt(&self) -> Duration {
        Duration::from_secs_f64(self.min_rtt_s)
    }

    fn enter_min_rtt(&mut self, now: Time) {
        self.phase = Phase::MinRtt {
            since: now,
            deferred: self.limit,
        };
        self.samples.clear();
    }

    fn update(&mut self, now: Time) {
        self.next_update = now + self.cfg.update_interval;
        if self.samples.is_empty() {
            return;
        }
        let sample = percentile_of(&mut self.samples, self.cfg.percentile).max(1e-9);
        self.samples.clear();
        let grad = ((1.0 + self.cfg.buffer) * self.min_rtt_s / sample).clamp(0.5, 2.0);
        let l = self.limit * grad;
        self.limit = (l + l.sqrt()).clamp(self.cfg.min_concurrency, self.cfg.max_limit);
        if self.limit <= self.cfg.min_concurrency {
            self.at_min += 1;
            if self.at_min >= 5 {
                self.at_min = 0;
                self.enter_min_rtt(now);
            }
        } else {
            self.at_min = 0;
        }
    }
}

impl LimitAlgorithm for EnvoyGradient {
    fn name(&self) -> &'static str {
        "envoy_gradient"
    }

    fn limit(&self) -> f64 {
        match self.phase {
            Phase::Normal => self.limit,
            _ => self.cfg.min_concurrency,
        }
    }

    fn on_sample(&mut self, now: Time, rtt: Duration, _inflight: usize, did_drop: bool) {
        self.tick(now);
        if did_drop {
            return;
        }
        match self.phase {
            Phase::MinRtt { since, deferred } => {
                if now.saturating_sub(rtt) < since {
                    return; // started before the window
                }
                self.samples.push(rtt.as_secs_f64());
                if self.samples.len() >= self.cfg.min_rtt_request_count {
                    self.min_rtt_s = percentile_of(&mut self.samples, self.cfg.percentile);
                    self.samples.clear();
                    self.limit = deferred;
                    self.phase = Phase::Normal;
                    let jitter = self.cfg.jitter * self.jitter.next_f64();
                    self.next_min_rtt = now + self.cfg.min_rtt_interval.mul_f64(1.0 + jitter);
                    self.next_update = now + self.cfg.update_interval;
                }
            }
            Phase::Normal => self.samples.push(rtt.as_secs_f64()),
            Phase::Start => {}
        }
    }

    fn tick(&mut self, now: Time) {
        match self.phase {
            Phase::Start => self.enter_min_rtt(now),
            Phase::Normal if now >= self.next_min_rtt => self.enter_min_rtt(now),
            Phase::Normal if now >= self.next_update => self.update(now),
            _ => {}
        }
    }

    fn extra_state(&self) -> Vec<(&'static str, f64)> {
        vec![("min_rtt_s", self.min_rtt_s)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn measured(min_rtt_ms: u64) -> EnvoyGradient {
        let mut e = EnvoyGradient::new(EnvoyGradientConfig::default()).unwrap();
        e.tick(ms(0));
        assert_eq!(e.limit(), 3.0);
        for i in 0..50 {
            e.on_sample(ms(100 + i), ms(min_rtt_ms), 3, false);
        }
        assert_eq!(e.min_rtt(), ms(min_rtt_ms));
        e
    }

    #[test]
    fn ignores_samples_that_started_before_the_window() {
        let mut e = EnvoyGradient::new(EnvoyGradientConfig::default()).unwrap();
        e.tick(ms(1000));
        e.on_sample(ms(1005), ms(10), 3, false);
        assert!(e.samples.is_empty());
    }

    #[test]
    fn grows_at_most_twofold_plus_headroom_per_interval() {
        let mut e = measured(10);
        e.on_sample(ms(160), ms(10), 3, false);
        e.tick(ms(249)); // 100 ms after the measurement ended: update
        // grad = 1.25 * 10 / 10 = 1.25: L = 3.75 + sqrt(3.75)
        assert!(
            (e.limit() - (3.75 + 3.75f64.sqrt())).abs() < 1e-9,
            "{}",
            e.limit()
        );
    }

    #[test]
    fn shrinks_on_high_latency_and_remeasures_after_five_minimum_updates() {
        let mut e = measured(10);
        for k in 0..5u64 {
            let t = 149 + 100 * (k + 1);
            e.on_sample(ms(t - 1), ms(100), 3, false);
            e.tick(ms(t));
        }
        assert_eq!(e.limit(), 3.0);
        assert!(matches!(e.phase, Phase::MinRtt { .. }));
    }
}
