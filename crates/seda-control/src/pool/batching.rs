//! SEDA's batching controller, Sandstorm's AggThrottle (SEDA01).
//!
//! It searches the batch size that maximises throughput: at most once per `recalc_window` it
//! measures throughput and smooths it; every [`BATCH_ADJUST_DELAY`] measurements it moves the
//! target by a factor of [`BATCH_FACTOR`], decreasing while throughput holds and increasing once it
//! falls below 90 % of the best seen. A collapse below 20 % of the best, or a jump to twice it,
//! resets the search to the maximum batch.

use std::time::Duration;

use crate::{Controller, Time};

/// Measurements between adjustments (`ADJUST_DELAY`).
pub const BATCH_ADJUST_DELAY: u32 = 5;
/// Multiplier for each step up or down (`REDUCE_FACTOR`, `INCREASE_FACTOR`).
pub const BATCH_FACTOR: f64 = 1.2;
const LOW_WATER: f64 = 0.90;
const HIGH_WATER: f64 = 0.98;
const VERY_LOW_WATER: f64 = 0.2;
const VERY_HIGH_WATER: f64 = 2.0;

/// Batching parameters. [`Default`] gives AggThrottle's class-field defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchConfig {
    /// Smallest batch (class-field default 2; Haboob uses 1).
    pub min_batch: usize,
    /// Largest batch (class-field default 1000; Haboob uses 1024).
    pub max_batch: usize,
    /// Shortest time between measurements (default 1000 ms; Haboob uses 100 ms).
    pub recalc_window: Duration,
    /// Weight of the previous average in the throughput EWMA (default 0.7; Haboob 0.5).
    pub smooth: f64,
}

impl BatchConfig {
    /// AggThrottle's `minAggregation` class-field default.
    pub const SANDSTORM_MIN_BATCH: usize = 2;
    /// AggThrottle's `maxAggregation` class-field default.
    pub const SANDSTORM_MAX_BATCH: usize = 1000;
    /// AggThrottle's `recalcWindow` class-field default.
    pub const SANDSTORM_RECALC_WINDOW: Duration = Duration::from_millis(1000);
    /// AggThrottle's `smoothConst` class-field default.
    pub const SANDSTORM_SMOOTH: f64 = 0.7;
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            min_batch: Self::SANDSTORM_MIN_BATCH,
            max_batch: Self::SANDSTORM_MAX_BATCH,
            recalc_window: Self::SANDSTORM_RECALC_WINDOW,
            smooth: Self::SANDSTORM_SMOOTH,
        }
    }
}

/// Which way the search is moving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchState {
    /// Shrinking the batch while throughput holds.
    Decreasing,
    /// Growing the batch to win back throughput.
    Increasing,
}

/// What the batching controller reads: the stage's total of handled events so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchObservation {
    /// Events handled since the stage started (a monotonic counter).
    pub total_events: u64,
}

/// SEDA's AggThrottle batching controller.
#[derive(Debug, Clone)]
pub struct BatchController {
    config: BatchConfig,
    target: f64,
    state: BatchState,
    best: f64,
    last_avg: f64,
    last_events: u64,
    last_time: Option<Time>,
    measurements: u32,
}

impl BatchController {
    /// A controller starting at the maximum batch, decreasing.
    pub fn new(config: BatchConfig) -> Self {
        let mut config = config;
        config.min_batch = config.min_batch.max(1);
        config.max_batch = config.max_batch.max(config.min_batch);
        if !(0.0..1.0).contains(&config.smooth) {
            config.smooth = BatchConfig::SANDSTORM_SMOOTH;
        }
        BatchController {
            target: config.max_batch as f64,
            config,
            state: BatchState::Decreasing,
            best: 0.0,
            last_avg: 0.0,
            last_events: 0,
            last_time: None,
            measurements: 0,
        }
    }

    /// The current batch-size target.
    pub fn target(&self) -> usize {
        self.target as usize
    }

    /// The search direction.
    pub fn state(&self) -> BatchState {
        self.state
    }

    /// The best smoothed throughput seen (events/s).
    pub fn best_per_s(&self) -> f64 {
        self.best
    }

    fn clamp(&mut self) {
        self.target = self
            .target
            .clamp(self.config.min_batch as f64, self.config.max_batch as f64);
    }

    fn adjust(&mut self, avg: f64) {
        let max = self.config.max_batch as f64;
        if avg < VERY_LOW_WATER * self.best || avg >= VERY_HIGH_WATER * self.best {
            self.target = max;
            self.state = BatchState::Decreasing;
        }
        match self.state {
            BatchState::Decreasing => {
                if avg <= LOW_WATER * self.best {
                    self.state = BatchState::Increasing;
                    self.target *= BATCH_FACTOR;
                } else {
                    self.best = self.best.max(avg);
                    self.target /= BATCH_FACTOR;
                }
            }
            BatchState::Increasing => {
                self.best = self.best.max(avg);
                if avg >= HIGH_WATER * self.best {
                    self.state = BatchState::Decreasing;
                    self.target /= BATCH_FACTOR;
                } else {
                    self.target *= BATCH_FACTOR;
                    if self.target > max {
                        // Maxed out: take this as the best and search downward again.
                        self.state = BatchState::Decreasing;
                        self.best = avg;
                    }
                }
            }
        }
        // AggThrottle keeps the target as an integer; truncating each step keeps its rhythm.
        self.target = self.target.trunc();
        self.clamp();
    }
}

impl Default for BatchController {
    fn default() -> Self {
        BatchController::new(BatchConfig::default())
    }
}

impl Controller for BatchController {
    type Observation = BatchObservation;
    type Adjustment = usize;

    fn update(&mut self, now: Time, obs: &BatchObservation) -> usize {
        let Some(last) = self.last_time else {
            self.last_time = Some(now);
            self.last_events = obs.total_events;
            return self.target();
        };
        let elapsed = now.saturating_sub(last);
        if elapsed < self.config.recalc_window || elapsed.is_zero() {
            return self.target();
        }
        let events = obs.total_events.saturating_sub(self.last_events);
        self.last_events = obs.total_events;
        self.last_time = Some(now);
        let throughput = events as f64 / elapsed.as_secs_f64();
        let avg = self.config.smooth * self.last_avg + (1.0 - self.config.smooth) * throughput;
        self.measurements += 1;
        if self.measurements.is_multiple_of(BATCH_ADJUST_DELAY) {
            self.adjust(avg);
        }
        self.last_avg = avg;
        self.target()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BatchConfig {
        BatchConfig {
            min_batch: 1,
            max_batch: 100,
            recalc_window: Duration::from_millis(100),
            smooth: 0.0,
        }
    }

    /// Drives the controller with one measurement per window at the given throughputs (events/s)
    /// and returns the target after each adjustment (every 5th measurement).
    fn drive(c: &mut BatchController, t: &mut u64, total: &mut u64, rates: &[f64]) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, rate) in rates.iter().enumerate() {
            *t += 100;
            *total += (*rate * 0.1) as u64;
            let target = c.update(
                Duration::from_millis(*t),
                &BatchObservation {
                    total_events: *total,
                },
            );
            if (i + 1) % 5 == 0 {
                out.push(target);
            }
        }
        out
    }

    fn start(c: &mut BatchController) -> (u64, u64) {
        c.update(Duration::ZERO, &BatchObservation { total_events: 0 });
        (0, 0)
    }

    #[test]
    fn sandstorm_defaults() {
        let c = BatchConfig::default();
        assert_eq!((c.min_batch, c.max_batch), (2, 1000));
        assert_eq!(c.recalc_window, Duration::from_millis(1000));
        assert_eq!(c.smooth, 0.7);
    }

    #[test]
    fn steady_throughput_shrinks_the_batch_by_1_2_per_adjustment() {
        let mut c = BatchController::new(cfg());
        let (mut t, mut total) = start(&mut c);
        let targets = drive(&mut c, &mut t, &mut total, &[10_000.0; 15]);
        // First adjustment: best is 0 so the jump rule resets to max, then decreases 100/1.2.
        assert_eq!(targets, vec![83, 69, 57]);
        assert_eq!(c.state(), BatchState::Decreasing);
    }

    #[test]
    fn a_drop_below_low_water_turns_the_search_upward() {
        let mut c = BatchController::new(cfg());
        let (mut t, mut total) = start(&mut c);
        drive(&mut c, &mut t, &mut total, &[10_000.0; 10]); // 83, then 69
        let targets = drive(&mut c, &mut t, &mut total, &[8_500.0; 5]);
        assert_eq!(c.state(), BatchState::Increasing);
        assert_eq!(targets, vec![82]); // 69 * 1.2 = 82.8, truncated
        // Throughput recovers above 98% of best: decrease again.
        let targets = drive(&mut c, &mut t, &mut total, &[9_900.0; 5]);
        assert_eq!(c.state(), BatchState::Decreasing);
        assert_eq!(targets, vec![68]);
    }

    #[test]
    fn a_collapse_resets_to_the_maximum() {
        let mut c = BatchController::new(cfg());
        let (mut t, mut total) = start(&mut c);
        drive(&mut c, &mut t, &mut total, &[10_000.0; 15]);
        let before = c.target();
        let targets = drive(&mut c, &mut t, &mut total, &[1_000.0; 5]);
        assert!(before < 100);
        // Reset to 100 and DECREASING, then 1000 <= 0.9 * best turns it upward from the max.
        assert_eq!(targets, vec![100]);
        assert_eq!(c.state(), BatchState::Increasing);
    }

    #[test]
    fn stays_within_bounds() {
        let mut c = BatchController::new(cfg());
        let (mut t, mut total) = start(&mut c);
        let targets = drive(&mut c, &mut t, &mut total, &[10_000.0; 200]);
        assert!(targets.iter().all(|&b| (1..=100).contains(&b)));
        assert_eq!(*targets.last().unwrap(), 1);
    }

    #[test]
    fn measures_at_most_once_per_window() {
        let mut c = BatchController::new(cfg());
        start(&mut c);
        for ms in 1..500 {
            c.update(
                Duration::from_millis(ms),
                &BatchObservation {
                    total_events: ms * 100,
                },
            );
        }
        // Four windows closed (100, 200, 300, 400): no adjustment yet.
        assert_eq!(c.target(), 100);
    }
}
