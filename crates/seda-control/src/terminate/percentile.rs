//! A percentile timeout: the threshold is a high percentile of recent running times, times a
//! safety factor, within `[min, max]` (Finagle's backup requests fire at a windowed percentile;
//! Restate's adaptive timeout is `clamp(safety x p99.99, min, max)`).
//!
//! It is the peer SERT is measured against. Its known weakness: the percentile follows the load
//! it should resist (when every request slows down, the threshold rises with them).

use std::collections::VecDeque;
use std::time::Duration;

use super::{PeriodCounts, Terminator};

/// Settings of [`PercentileTimeout`].
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileConfig {
    /// The percentile, in `(0, 1]`.
    pub quantile: f64,
    /// Multiplier on the percentile.
    pub safety: f64,
    /// Smallest threshold.
    pub min: Duration,
    /// Largest threshold (also the threshold before any sample).
    pub max: Duration,
    /// Running times kept (the newest).
    pub samples: usize,
}

impl PercentileConfig {
    /// Defaults: p99 x 1.5 over the last 1,000 completions.
    pub fn new(min: Duration, max: Duration) -> Self {
        PercentileConfig {
            quantile: 0.99,
            safety: 1.5,
            min,
            max,
            samples: 1000,
        }
    }
}

/// The percentile-timeout peer (see the module docs).
#[derive(Debug, Clone)]
pub struct PercentileTimeout {
    config: PercentileConfig,
    recent: VecDeque<Duration>,
    threshold: Duration,
}

impl PercentileTimeout {
    /// A controller with `config`.
    pub fn new(mut config: PercentileConfig) -> Self {
        if config.min > config.max {
            std::mem::swap(&mut config.min, &mut config.max);
        }
        if !(config.quantile.is_finite() && config.quantile > 0.0) {
            config.quantile = 0.99;
        }
        config.quantile = config.quantile.min(1.0);
        if !(config.safety.is_finite() && config.safety > 0.0) {
            config.safety = 1.5;
        }
        config.samples = config.samples.max(1);
        let threshold = config.max;
        PercentileTimeout {
            config,
            recent: VecDeque::new(),
            threshold,
        }
    }
}

impl Terminator for PercentileTimeout {
    fn name(&self) -> &'static str {
        "percentile"
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![("samples", self.recent.len() as f64)]
    }

    fn threshold(&self) -> Duration {
        self.threshold
    }

    /// Recomputes the percentile once per period (not per completion: a sort per request would
    /// cost more than the requests it guards).
    fn on_period(&mut self, _counts: PeriodCounts) {
        if self.recent.is_empty() {
            return;
        }
        let mut v: Vec<Duration> = self.recent.iter().copied().collect();
        let i = ((v.len() as f64 * self.config.quantile).ceil() as usize).clamp(1, v.len()) - 1;
        let (_, q, _) = v.select_nth_unstable(i);
        self.threshold = q
            .mul_f64(self.config.safety)
            .clamp(self.config.min, self.config.max);
    }

    fn on_complete(&mut self, running: Duration) {
        if self.recent.len() == self.config.samples {
            self.recent.pop_front();
        }
        self.recent.push_back(running);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_percentile_within_bounds() {
        let mut t = PercentileTimeout::new(PercentileConfig::new(
            Duration::from_millis(10),
            Duration::from_secs(10),
        ));
        assert_eq!(t.threshold(), Duration::from_secs(10));
        for ms in 1..=100 {
            t.on_complete(Duration::from_millis(ms));
        }
        t.on_period(PeriodCounts::default());
        assert_eq!(t.threshold(), Duration::from_millis(99).mul_f64(1.5));
        // When everything slows down the threshold follows: the weakness SERT avoids.
        for _ in 0..1000 {
            t.on_complete(Duration::from_secs(5));
        }
        t.on_period(PeriodCounts::default());
        assert_eq!(t.threshold(), Duration::from_millis(7500));
    }
}
