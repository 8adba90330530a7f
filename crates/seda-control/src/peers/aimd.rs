//! Netflix concurrency-limits' `AIMDLimit` (NETFLIX in `docs/papers.md`).
//!
//! `L <- 0.9 L` on a drop or when rtt exceeds 5 s; otherwise `L <- L + 1`, but only when at least
//! half the limit is in use. Initial 20, range [20, 200].

use super::ConcurrencyLimiter;
use crate::InvalidConfig;
use crate::entry::{Entry, Params, Role};
use std::time::Duration;

use super::LimitAlgorithm;
use crate::Time;

/// Parameters of [`AimdLimit`] (Netflix defaults).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AimdLimitConfig {
    /// Limit at start (20).
    pub initial: f64,
    /// Lowest limit (20).
    pub min: f64,
    /// Highest limit (200).
    pub max: f64,
    /// Multiplicative decrease (0.9).
    pub backoff_ratio: f64,
    /// An rtt above this counts as a drop (5 s).
    pub timeout: Duration,
}

impl AimdLimitConfig {
    /// The defaults.
    pub const DEFAULT: AimdLimitConfig = AimdLimitConfig {
        initial: 20.0,
        min: 20.0,
        max: 200.0,
        backoff_ratio: 0.9,
        timeout: Duration::from_secs(5),
    };

    /// Reads the parameters a configuration gives over the defaults.
    pub fn read(p: &mut Params<'_>) -> Self {
        let d = AimdLimitConfig::DEFAULT;
        AimdLimitConfig {
            initial: p.f64("initial_limit", d.initial),
            min: p.f64("min_limit", d.min),
            max: p.f64("max_limit", d.max),
            backoff_ratio: p.f64("backoff_ratio", d.backoff_ratio),
            timeout: p.secs("timeout_s", d.timeout),
        }
    }
}

impl Default for AimdLimitConfig {
    fn default() -> Self {
        AimdLimitConfig::DEFAULT
    }
}

/// The name configurations give this controller (`admission = { kind = "aimd_limit" }`).
pub const AIMD_LIMIT: &str = "aimd_limit";

/// The catalogue entry of [`AimdLimit`].
pub(crate) const AIMD_ENTRY: Entry = Entry {
    name: AIMD_LIMIT,
    about: "AIMD concurrency limit, timeout = target",
    source: "Netflix concurrency-limits AIMDLimit",
    role: Role::Limit,
    compared: true,
    build: |p| {
        let cfg = AimdLimitConfig::read(p);
        Ok(Box::new(ConcurrencyLimiter::new(AimdLimit::new(cfg)?)))
    },
    aim,
};

/// Aimed at a target, a request slower than the target counts as a drop.
fn aim(target: Duration) -> Vec<(&'static str, f64)> {
    vec![("timeout_s", target.as_secs_f64())]
}

/// Netflix's AIMD limit.
#[derive(Debug, Clone)]
pub struct AimdLimit {
    cfg: AimdLimitConfig,
    limit: f64,
}

impl AimdLimit {
    /// A limit with `cfg`.
    pub fn new(cfg: AimdLimitConfig) -> Result<Self, InvalidConfig> {
        super::check_limit_bounds(cfg.min, cfg.max)?;
        if !(cfg.backoff_ratio > 0.0 && cfg.backoff_ratio < 1.0) {
            return Err(InvalidConfig::new(
                "backoff_ratio",
                format!("backoff_ratio must be in (0, 1), got {}", cfg.backoff_ratio),
            ));
        }
        let limit = cfg.initial.clamp(cfg.min, cfg.max);
        Ok(AimdLimit { cfg, limit })
    }
}

impl LimitAlgorithm for AimdLimit {
    fn name(&self) -> &'static str {
        "aimd_limit"
    }

    fn limit(&self) -> f64 {
        self.limit
    }

    fn on_sample(&mut self, _now: Time, rtt: Duration, inflight: usize, did_drop: bool) {
        if did_drop || rtt > self.cfg.timeout {
            self.limit *= self.cfg.backoff_ratio;
        } else if inflight as f64 * 2.0 >= self.limit {
            self.limit += 1.0;
        }
        self.limit = self.limit.clamp(self.cfg.min, self.cfg.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additive_increase_when_busy_multiplicative_decrease_on_drop() {
        let mut a = AimdLimit::new(AimdLimitConfig {
            min: 1.0,
            ..Default::default()
        })
        .unwrap();
        let ms = Duration::from_millis(1);
        a.on_sample(ms, ms, 5, false); // 5 * 2 < 20: app-limited, no growth
        assert_eq!(a.limit(), 20.0);
        a.on_sample(ms, ms, 10, false);
        assert_eq!(a.limit(), 21.0);
        a.on_sample(ms, ms, 10, true);
        assert!((a.limit() - 18.9).abs() < 1e-9);
        a.on_sample(ms, Duration::from_secs(6), 10, false);
        assert!((a.limit() - 17.01).abs() < 1e-9);
    }
}
