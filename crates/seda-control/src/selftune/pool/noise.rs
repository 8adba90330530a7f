//! The plant-noise estimate: how much a period's throughput, and the pool's capacity, move
//! from one period to the next by chance. A move's change counts against it only past this
//! noise (see [`NOISE_Z`](super::config::NOISE_Z)).

use super::config::CAPACITY_NOISE;

/// Weight of the latest squared error in each estimate (an exponential average over about ten
/// periods).
const NOISE_WEIGHT: f64 = 0.1;

/// What the pool has learned of its plant's noise.
#[derive(Debug, Clone, Default)]
pub(super) struct Noise {
    /// Mean squared one-step error of the model, (events/s)^2: the plant's noise.
    model_var: Option<f64>,
    /// The same with each error held to three of its standard deviations: the noise without
    /// the model's misses (the first move past a knee, which a model fitted on the climb cannot
    /// foresee, inflates [`Self::model_var`]).
    steady_var: Option<f64>,
    /// Mean squared relative change of the capacity over periods without a move.
    capacity_var: Option<f64>,
    /// The last period's capacity where every thread was busy.
    prev_capacity: Option<f64>,
}

impl Noise {
    /// Remembers this period's capacity (`None` where it says nothing of the threads) and
    /// returns its relative change since the last period (`None` unless both were measured); a
    /// change without a move (`du == 0`) is noise, and is learned.
    pub(super) fn learn_capacity(&mut self, du: f64, capacity: Option<f64>) -> Option<f64> {
        let moved = capacity.zip(self.prev_capacity).map(|(c, c0)| c / c0 - 1.0);
        if du == 0.0
            && let Some(m) = moved
        {
            self.capacity_var = Some(average(self.capacity_var, m * m));
        }
        self.prev_capacity = capacity;
        moved
    }

    /// Learns the model's error `e` in predicting this period's throughput (made before the
    /// throughput is fed to it); a non-finite error is ignored.
    pub(super) fn learn_model_error(&mut self, e: f64) {
        if e.is_finite() {
            let e2 = e * e;
            self.model_var = Some(average(self.model_var, e2));
            let held = self.steady_var.map_or(e2, |v| e2.min(9.0 * v));
            self.steady_var = Some(average(self.steady_var, held));
        }
    }

    /// The model's mean squared one-step error, once it has predicted.
    pub(super) fn model_var(&self) -> Option<f64> {
        self.model_var
    }

    /// Standard deviation of the difference of two periods' throughput from noise alone
    /// (`sqrt(2)` times a period's), events/s; 0 until the model has predicted.
    pub(super) fn of_change(&self) -> f64 {
        change_sd(self.model_var)
    }

    /// [`Self::of_change`] without the model's misses.
    pub(super) fn steady_of_change(&self) -> f64 {
        change_sd(self.steady_var)
    }

    /// Standard deviation of one period's throughput without the model's misses, events/s.
    pub(super) fn steady_sd(&self) -> f64 {
        self.steady_var.map_or(0.0, f64::sqrt)
    }

    /// Standard deviation of the capacity's relative change between periods without a move:
    /// measured, or [`CAPACITY_NOISE`] until it is.
    pub(super) fn capacity_sd(&self) -> f64 {
        self.capacity_var.map_or(CAPACITY_NOISE, f64::sqrt)
    }

    /// Whether periods without a move have measured the capacity's noise.
    pub(super) fn capacity_measured(&self) -> bool {
        self.capacity_var.is_some()
    }

    /// Standard deviation of one period's capacity reading at a throughput of `y`, events/s
    /// (half the variance of a change, as a share of `y`).
    pub(super) fn capacity_reading_sd(&self, y: f64) -> f64 {
        (self.capacity_var.unwrap_or(CAPACITY_NOISE.powi(2)) / 2.0).sqrt() * y
    }
}

/// `var` (the first sample where there is none yet) moved toward `x` by [`NOISE_WEIGHT`]: an
/// exponential average over about ten periods.
fn average(var: Option<f64>, x: f64) -> f64 {
    var.map_or(x, |v| v + NOISE_WEIGHT * (x - v))
}

/// The standard deviation of the difference of two periods with variance `var` each (0 while
/// unknown).
fn change_sd(var: Option<f64>) -> f64 {
    var.map_or(0.0, |v| (2.0 * v).sqrt())
}
