//! SERT's adaptive termination threshold (SERT06, slide "Threshold Controller").
//!
//! `threshold = LB + F(p) x (UB - LB)`, where `p` is the throughput loss over the last window
//! (the share of arrived requests not completed: rejected, dropped or terminated, or completed
//! past the service-level limit, see below) and
//!
//! ```text
//! F(p) = 1                                 p <= LW
//!        ((HW - p) / (HW - LW))^alpha      LW < p < HW
//!        0                                 p >= HW
//! ```
//!
//! Under light load long requests may run up to `UB`; under heavy load they are cut at `LB`.
//!
//! **How `p` is measured.** The slides set their goal as a service-level agreement ("99%
//! requests within 1 s") and call `p` the throughput loss. Counting only requests that never
//! complete misses the overload that matters: behind a bounded queue, admission turns requests
//! away only once the queue is full, and by then every admitted request waits the whole queue;
//! the loss it then shows (at least `1 - 1/load` in an open system) is the same whatever the
//! threshold, so the threshold cannot learn that cutting earlier would help. `seda sim
//! sert-threshold` showed it: on the ranking workload at 125% load `p` was 0.25 (so the
//! threshold stayed near 4.6 s of its 0.1-15 s range) and the mean response time 6.4 s,
//! against 0.18 s for a fixed 0.5 s threshold. So a completion later than
//! [`SertConfig::late_after`] (default 1 s, the slides' limit) counts as lost too: the queue's
//! growth raises `p` before the queue is full, and the threshold falls while cutting still
//! helps (0.19 s at 125% in that scenario).
//!
//! The slides give no numbers; our defaults and why:
//! - `LW = 0.05`: a loss of a few percent is noise (a client that went away, one rejected
//!   burst), not overload, so the threshold stays at `UB`;
//! - `HW = 0.2`: an open system at load `L` above capacity loses at least `1 - 1/L`, so 20%
//!   is 1.25 x capacity, the first overloaded point of the slides' evaluation (100% to 200%):
//!   from there on long requests go as early as allowed (with `HW = 0.5`, ranking at 200% load
//!   kept a mean response time of 3.0 s in `seda sim sert-threshold`, 0.74 s with 0.2);
//! - `alpha = 2`: convex, so the threshold falls quickly once loss appears (SERT's point is to
//!   act early), and slowly near `HW`;
//! - the window is 10 control periods, long enough that one period's burst does not swing it.

use std::collections::VecDeque;
use std::time::Duration;

use super::{PeriodCounts, Terminator};

/// Settings of [`SertThreshold`].
#[derive(Debug, Clone, PartialEq)]
pub struct SertConfig {
    /// Lowest threshold (`LB`), used at heavy load.
    pub lower: Duration,
    /// Highest threshold (`UB`), used at light load.
    pub upper: Duration,
    /// Loss at or below which the threshold is `UB` (`LW`).
    pub low_water: f64,
    /// Loss at or above which the threshold is `LB` (`HW`).
    pub high_water: f64,
    /// Shape of `F` between the marks (`alpha`).
    pub alpha: f64,
    /// Control periods the loss is measured over.
    pub window: usize,
    /// Completions later than this (response time) count as lost; `None`: only requests not
    /// completed do.
    pub late_after: Option<Duration>,
}

impl SertConfig {
    /// Default `LW`.
    pub const DEFAULT_LOW_WATER: f64 = 0.05;
    /// Default `HW`.
    pub const DEFAULT_HIGH_WATER: f64 = 0.2;
    /// Default `alpha`.
    pub const DEFAULT_ALPHA: f64 = 2.0;
    /// Default window, in control periods.
    pub const DEFAULT_WINDOW: usize = 10;
    /// Default [`late_after`](Self::late_after): the slides' service-level limit.
    pub const DEFAULT_LATE_AFTER: Duration = Duration::from_secs(1);

    /// Defaults for a threshold between `lower` and `upper`.
    pub fn new(lower: Duration, upper: Duration) -> Self {
        SertConfig {
            lower,
            upper,
            low_water: Self::DEFAULT_LOW_WATER,
            high_water: Self::DEFAULT_HIGH_WATER,
            alpha: Self::DEFAULT_ALPHA,
            window: Self::DEFAULT_WINDOW,
            late_after: Some(Self::DEFAULT_LATE_AFTER),
        }
    }

    /// `F(p)`.
    pub fn f(&self, p: f64) -> f64 {
        let (lw, hw) = (self.low_water, self.high_water);
        if !p.is_finite() || p <= lw {
            1.0
        } else if p >= hw {
            0.0
        } else {
            ((hw - p) / (hw - lw)).powf(self.alpha)
        }
    }
}

/// SERT's threshold controller (see the module docs).
#[derive(Debug, Clone)]
pub struct SertThreshold {
    config: SertConfig,
    window: VecDeque<PeriodCounts>,
    loss: f64,
}

impl SertThreshold {
    /// A controller with `config`; `lower <= upper` and `0 <= LW < HW <= 1` are enforced by
    /// swapping or clamping.
    pub fn new(mut config: SertConfig) -> Self {
        if config.lower > config.upper {
            std::mem::swap(&mut config.lower, &mut config.upper);
        }
        let clamp01 = |x: f64, d: f64| if x.is_finite() { x.clamp(0.0, 1.0) } else { d };
        config.low_water = clamp01(config.low_water, SertConfig::DEFAULT_LOW_WATER);
        config.high_water = clamp01(config.high_water, SertConfig::DEFAULT_HIGH_WATER);
        if config.high_water <= config.low_water {
            config.high_water = (config.low_water + f64::EPSILON).min(1.0);
        }
        if !(config.alpha.is_finite() && config.alpha > 0.0) {
            config.alpha = SertConfig::DEFAULT_ALPHA;
        }
        config.window = config.window.max(1);
        SertThreshold {
            config,
            window: VecDeque::new(),
            loss: 0.0,
        }
    }

    /// The throughput loss `p` over the window.
    pub fn loss(&self) -> f64 {
        self.loss
    }

    /// The settings.
    pub fn config(&self) -> &SertConfig {
        &self.config
    }
}

impl Terminator for SertThreshold {
    fn name(&self) -> &'static str {
        "sert"
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![("loss", self.loss), ("f", self.config.f(self.loss))]
    }

    fn late_after(&self) -> Option<Duration> {
        self.config.late_after
    }

    fn threshold(&self) -> Duration {
        let span = self.config.upper - self.config.lower;
        self.config.lower + span.mul_f64(self.config.f(self.loss))
    }

    fn on_period(&mut self, counts: PeriodCounts) {
        if self.window.len() == self.config.window {
            self.window.pop_front();
        }
        self.window.push_back(counts);
        let arrived: u64 = self.window.iter().map(|c| c.arrived).sum();
        let lost: u64 = self.window.iter().map(|c| c.lost).sum();
        self.loss = if arrived == 0 {
            0.0
        } else {
            (lost as f64 / arrived as f64).min(1.0)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sert() -> SertThreshold {
        SertThreshold::new(SertConfig::new(
            Duration::from_millis(100),
            Duration::from_secs(2),
        ))
    }

    #[test]
    fn light_load_allows_the_upper_bound() {
        let mut s = sert();
        s.on_period(PeriodCounts {
            arrived: 100,
            lost: 2,
            terminated: 0,
        });
        assert_eq!(s.threshold(), Duration::from_secs(2));
    }

    #[test]
    fn heavy_load_cuts_at_the_lower_bound() {
        let mut s = sert();
        s.on_period(PeriodCounts {
            arrived: 100,
            lost: 25,
            terminated: 0,
        });
        assert_eq!(s.threshold(), Duration::from_millis(100));
    }

    #[test]
    fn threshold_falls_monotonically_with_loss() {
        let mut last = Duration::MAX;
        for lost in 0..=100 {
            let mut s = sert();
            s.on_period(PeriodCounts {
                arrived: 100,
                lost,
                terminated: 0,
            });
            assert!(s.threshold() <= last, "lost {lost}");
            last = s.threshold();
        }
        // Halfway between the marks with alpha = 2: F = 0.25.
        let c = SertConfig::new(Duration::ZERO, Duration::from_secs(1));
        assert!((c.f(0.125) - 0.25).abs() < 1e-9);
    }

    #[test]
    fn loss_is_over_the_window() {
        let mut s = sert();
        s.on_period(PeriodCounts {
            arrived: 100,
            lost: 100,
            terminated: 0,
        });
        for _ in 0..SertConfig::DEFAULT_WINDOW {
            s.on_period(PeriodCounts {
                arrived: 100,
                lost: 0,
                terminated: 0,
            });
        }
        assert_eq!(s.loss(), 0.0);
    }

    #[test]
    fn bad_settings_are_made_consistent() {
        let mut c = SertConfig::new(Duration::from_secs(2), Duration::from_millis(100));
        c.low_water = 0.9;
        c.high_water = 0.1;
        c.alpha = f64::NAN;
        let mut s = SertThreshold::new(c);
        s.on_period(PeriodCounts {
            arrived: 0,
            lost: 5,
            terminated: 0,
        });
        assert_eq!(s.threshold(), Duration::from_secs(2));
    }
}
