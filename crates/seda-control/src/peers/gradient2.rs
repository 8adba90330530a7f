//! Netflix concurrency-limits' `Gradient2Limit` (NETFLIX in `docs/papers.md`).
//!
//! `long` is an exponential average of rtt over 600 samples (a plain mean for the first 10);
//! when `long / rtt > 2` it is pulled down by 5%. Unless less than half the limit is in use,
//! `grad = clamp(1.5 long / rtt, 0.5, 1)`, `new = L grad + 4`, `L = 0.8 L + 0.2 new`, within
//! [20, 200]. Drops are ignored, as in the original.

use super::ConcurrencyLimiter;
use crate::InvalidConfig;
use crate::entry::{self, Entry, Params, Role};
use std::time::Duration;

use super::LimitAlgorithm;
use crate::Time;

/// Parameters of [`Gradient2Limit`] (Netflix defaults).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Gradient2Config {
    /// Limit at start (20).
    pub initial: f64,
    /// Lowest limit (20).
    pub min: f64,
    /// Highest limit (200).
    pub max: f64,
    /// Weight of the new limit (0.2).
    pub smoothing: f64,
    /// Tolerated ratio of long to short rtt (1.5).
    pub rtt_tolerance: f64,
    /// Samples in the long exponential average (600).
    pub long_window: f64,
    /// Headroom added to the limit (4).
    pub queue_size: f64,
}

impl Gradient2Config {
    /// The defaults.
    pub const DEFAULT: Gradient2Config = Gradient2Config {
        initial: 20.0,
        min: 20.0,
        max: 200.0,
        smoothing: 0.2,
        rtt_tolerance: 1.5,
        long_window: 600.0,
        queue_size: 4.0,
    };

    /// Reads the parameters a configuration gives over the defaults.
    pub fn read(p: &mut Params<'_>) -> Self {
        let d = Gradient2Config::DEFAULT;
        Gradient2Config {
            initial: p.f64("initial_limit", d.initial),
            min: p.f64("min_limit", d.min),
            max: p.f64("max_limit", d.max),
            smoothing: p.f64("smoothing", d.smoothing),
            rtt_tolerance: p.f64("rtt_tolerance", d.rtt_tolerance),
            long_window: p.f64("long_window", d.long_window),
            queue_size: p.f64("queue_size", d.queue_size),
        }
    }
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Gradient2Config::DEFAULT
    }
}

/// The name configurations give this controller (`admission = { kind = "gradient2" }`).
pub const GRADIENT2: &str = "gradient2";

/// The catalogue entry of [`Gradient2Limit`].
pub(crate) const GRADIENT2_ENTRY: Entry = Entry {
    name: GRADIENT2,
    about: "Netflix Gradient2 concurrency limit",
    source: "Netflix concurrency-limits Gradient2Limit",
    role: Role::Limit,
    compared: true,
    build: |p| {
        let cfg = Gradient2Config::read(p);
        Ok(Box::new(ConcurrencyLimiter::new(Gradient2Limit::new(cfg)?)))
    },
    aim: entry::no_target,
};

const WARMUP_SAMPLES: u64 = 10;

/// Netflix's Gradient2 limit.
#[derive(Debug, Clone)]
pub struct Gradient2Limit {
    cfg: Gradient2Config,
    limit: f64,
    long_s: f64,
    samples: u64,
}

impl Gradient2Limit {
    /// A limit with `cfg`.
    pub fn new(cfg: Gradient2Config) -> Result<Self, InvalidConfig> {
        super::check_limit_bounds(cfg.min, cfg.max)?;
        if !(cfg.smoothing > 0.0 && cfg.smoothing <= 1.0) {
            return Err(InvalidConfig::new(
                "smoothing",
                format!("smoothing must be in (0, 1], got {}", cfg.smoothing),
            ));
        }
        if !(cfg.long_window >= 1.0 && cfg.rtt_tolerance >= 1.0 && cfg.queue_size >= 0.0) {
            return Err(InvalidConfig::new(
                "long_window",
                "need long_window >= 1, rtt_tolerance >= 1 and queue_size >= 0",
            ));
        }
        let limit = cfg.initial.clamp(cfg.min, cfg.max);
        Ok(Gradient2Limit {
            cfg,
            limit,
            long_s: 0.0,
            samples: 0,
        })
    }

    /// The long-term rtt average.
    pub fn long_rtt(&self) -> Duration {
        Duration::from_secs_f64(self.long_s)
    }
}

impl LimitAlgorithm for Gradient2Limit {
    fn name(&self) -> &'static str {
        "gradient2"
    }

    fn limit(&self) -> f64 {
        self.limit
    }

    fn on_sample(&mut self, _now: Time, rtt: Duration, inflight: usize, did_drop: bool) {
        if did_drop {
            return;
        }
        let short = rtt.as_secs_f64().max(1e-9);
        self.samples += 1;
        if self.samples <= WARMUP_SAMPLES {
            self.long_s += (short - self.long_s) / self.samples as f64;
        } else {
            let f = 2.0 / (self.cfg.long_window + 1.0);
            self.long_s = self.long_s * (1.0 - f) + short * f;
        }
        if self.long_s / short > 2.0 {
            self.long_s *= 0.95;
        }
        if (inflight as f64) < self.limit / 2.0 {
            return;
        }
        let grad = (self.cfg.rtt_tolerance * self.long_s / short).clamp(0.5, 1.0);
        let new = self.limit * grad + self.cfg.queue_size;
        let new = self.limit * (1.0 - self.cfg.smoothing) + new * self.cfg.smoothing;
        self.limit = new.clamp(self.cfg.min, self.cfg.max);
    }

    fn extra_state(&self) -> Vec<(&'static str, f64)> {
        vec![("long_rtt_s", self.long_s)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn grows_by_the_queue_size_when_rtt_is_steady() {
        let mut g = Gradient2Limit::new(Gradient2Config::default()).unwrap();
        g.on_sample(ms(0), ms(10), 20, false);
        // grad = 1: new = 20 + 4, smoothed: 20 * 0.8 + 24 * 0.2 = 20.8
        assert!((g.limit() - 20.8).abs() < 1e-9);
    }

    #[test]
    fn shrinks_when_rtt_rises_above_tolerance() {
        let cfg = Gradient2Config {
            min: 1.0,
            initial: 100.0,
            ..Default::default()
        };
        let mut g = Gradient2Limit::new(cfg).unwrap();
        for i in 0..20 {
            g.on_sample(ms(i), ms(10), 100, false);
        }
        let before = g.limit();
        g.on_sample(ms(30), ms(100), 200, false); // grad clamps at 0.5
        let expected = before * 0.8 + (before * 0.5 + 4.0) * 0.2;
        assert!(
            (g.limit() - expected).abs() < 1e-6,
            "{} vs {}",
            g.limit(),
            expected
        );
        g.on_sample(ms(31), ms(10), 1, false); // app-limited: unchanged
        assert!((g.limit() - expected).abs() < 1e-6);
    }

    #[test]
    fn ignores_drops() {
        let mut g = Gradient2Limit::new(Gradient2Config::default()).unwrap();
        g.on_sample(ms(0), ms(0), 20, true);
        assert_eq!(g.limit(), 20.0);
    }
}
