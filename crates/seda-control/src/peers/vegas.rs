//! Netflix concurrency-limits' `VegasLimit`, its default (NETFLIX in
//! `docs/papers.md`).
//!
//! Estimates the queue as `L (1 - rtt_noload / rtt)`. With `log = max(1, floor(log10 L))`:
//! queue <= `log` grows the limit by `beta = 6 log`; queue < `alpha = 3 log` grows it by `log`;
//! queue > `beta` shrinks it by `log`; a drop shrinks it by `log`. The limit does not grow while
//! less than half of it is in use. `rtt_noload` is the lowest rtt seen, re-probed (set to the
//! current rtt) every `jitter x 30 x L` samples, jitter uniform in [0.5, 1).

use super::ConcurrencyLimiter;
use crate::InvalidConfig;
use crate::entry::{self, Entry, Params, Role};
use std::time::Duration;

use super::{Jitter, LimitAlgorithm};
use crate::Time;

/// Parameters of [`VegasLimit`] (Netflix defaults).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VegasConfig {
    /// Limit at start (20).
    pub initial: f64,
    /// Highest limit (1000).
    pub max: f64,
    /// Weight of the new limit (1.0: no smoothing).
    pub smoothing: f64,
    /// Probe `rtt_noload` every `jitter x probe_multiplier x L` samples (30).
    pub probe_multiplier: f64,
}

impl VegasConfig {
    /// The defaults.
    pub const DEFAULT: VegasConfig = VegasConfig {
        initial: 20.0,
        max: 1000.0,
        smoothing: 1.0,
        probe_multiplier: 30.0,
    };

    /// Reads the parameters a configuration gives over the defaults.
    pub fn read(p: &mut Params<'_>) -> Self {
        let d = VegasConfig::DEFAULT;
        VegasConfig {
            initial: p.f64("initial_limit", d.initial),
            max: p.f64("max_limit", d.max),
            smoothing: p.f64("smoothing", d.smoothing),
            probe_multiplier: p.f64("probe_multiplier", d.probe_multiplier),
        }
    }
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig::DEFAULT
    }
}

/// The name configurations give this controller (`admission = { kind = "vegas" }`).
pub const VEGAS: &str = "vegas";

/// The catalogue entry of [`VegasLimit`].
pub(crate) const VEGAS_ENTRY: Entry = Entry {
    name: VEGAS,
    about: "Netflix Vegas concurrency limit",
    source: "Netflix concurrency-limits VegasLimit",
    role: Role::Limit,
    compared: true,
    build: |p| {
        let cfg = VegasConfig::read(p);
        Ok(Box::new(ConcurrencyLimiter::new(VegasLimit::new(cfg)?)))
    },
    aim: entry::no_target,
};

/// Netflix's Vegas limit.
#[derive(Debug, Clone)]
pub struct VegasLimit {
    cfg: VegasConfig,
    limit: f64,
    rtt_noload_s: f64,
    probe_count: u64,
    probe_jitter: f64,
    jitter: Jitter,
}

fn log10_int(limit: f64) -> f64 {
    (limit.max(1.0).log10().floor()).max(1.0)
}

impl VegasLimit {
    /// A limit with `cfg`.
    pub fn new(cfg: VegasConfig) -> Result<Self, InvalidConfig> {
        if !(cfg.max >= 1.0 && cfg.max.is_finite() && cfg.initial >= 1.0) {
            return Err(InvalidConfig::new(
                "initial_limit",
                format!(
                    "need 1 <= initial_limit and 1 <= max_limit, got {} and {}",
                    cfg.initial, cfg.max
                ),
            ));
        }
        if !(cfg.smoothing > 0.0 && cfg.smoothing <= 1.0) {
            return Err(InvalidConfig::new(
                "smoothing",
                format!("smoothing must be in (0, 1], got {}", cfg.smoothing),
            ));
        }
        if !(cfg.probe_multiplier.is_finite() && cfg.probe_multiplier > 0.0) {
            return Err(InvalidConfig::new(
                "probe_multiplier",
                format!("probe_multiplier must be > 0, got {}", cfg.probe_multiplier),
            ));
        }
        let mut jitter = Jitter::new(0x5eda_0e9a);
        let probe_jitter = 0.5 + 0.5 * jitter.next_f64();
        let limit = cfg.initial.min(cfg.max);
        Ok(VegasLimit {
            cfg,
            limit,
            rtt_noload_s: 0.0,
            probe_count: 0,
            probe_jitter,
            jitter,
        })
    }

    /// The no-load rtt estimate.
    pub fn rtt_noload(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_noload_s)
    }

    fn set(&mut self, new: f64) {
        let new = new.clamp(1.0, self.cfg.max);
        self.limit = (1.0 - self.cfg.smoothing) * self.limit + self.cfg.smoothing * new;
    }
}

impl LimitAlgorithm for VegasLimit {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn limit(&self) -> f64 {
        self.limit
    }

    fn on_sample(&mut self, _now: Time, rtt: Duration, inflight: usize, did_drop: bool) {
        let log = log10_int(self.limit);
        if did_drop {
            self.set(self.limit - log);
            return;
        }
        let rtt = rtt.as_secs_f64();
        self.probe_count += 1;
        if self.probe_jitter * self.cfg.probe_multiplier * self.limit <= self.probe_count as f64 {
            self.probe_jitter = 0.5 + 0.5 * self.jitter.next_f64();
            self.probe_count = 0;
            self.rtt_noload_s = rtt;
            return;
        }
        if self.rtt_noload_s == 0.0 || rtt < self.rtt_noload_s {
            self.rtt_noload_s = rtt;
            return;
        }
        if (inflight as f64) * 2.0 < self.limit {
            return;
        }
        let queue = (self.limit * (1.0 - self.rtt_noload_s / rtt)).ceil();
        let (alpha, beta, threshold) = (3.0 * log, 6.0 * log, log);
        let new = if queue <= threshold {
            self.limit + beta
        } else if queue < alpha {
            self.limit + log
        } else if queue > beta {
            self.limit - log
        } else {
            return;
        };
        self.set(new);
    }

    fn extra_state(&self) -> Vec<(&'static str, f64)> {
        vec![("rtt_noload_s", self.rtt_noload_s)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn grows_without_queueing_and_shrinks_with_it() {
        let mut v = VegasLimit::new(VegasConfig::default()).unwrap();
        v.on_sample(ms(0), ms(10), 20, false); // first sample sets rtt_noload
        assert_eq!(v.limit(), 20.0);
        v.on_sample(ms(1), ms(10), 20, false); // queue 0 <= 1: + beta (6)
        assert_eq!(v.limit(), 26.0);
        v.on_sample(ms(2), ms(40), 26, false); // queue ceil(26 * 0.75) = 20 > 6: - 1
        assert_eq!(v.limit(), 25.0);
        v.on_sample(ms(3), ms(12), 25, false); // queue ceil(25/6) = 5, between alpha and beta
        assert_eq!(v.limit(), 25.0);
        v.on_sample(ms(4), ms(0), 25, true);
        assert_eq!(v.limit(), 24.0);
    }

    #[test]
    fn does_not_grow_when_app_limited() {
        let mut v = VegasLimit::new(VegasConfig::default()).unwrap();
        v.on_sample(ms(0), ms(10), 1, false);
        v.on_sample(ms(1), ms(10), 9, false);
        assert_eq!(v.limit(), 20.0);
    }

    #[test]
    fn reprobes_rtt_noload() {
        let mut v = VegasLimit::new(VegasConfig::default()).unwrap();
        v.on_sample(ms(0), ms(1), 20, false);
        for i in 0..2000 {
            v.on_sample(ms(i), ms(50), 1, false);
        }
        assert_eq!(
            v.rtt_noload(),
            ms(50),
            "the stale 1 ms baseline was replaced"
        );
    }
}
