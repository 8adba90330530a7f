//! The online model of a stage: `y(k) = a*y(k-1) + b*u(k)` (FAIR07 Section 4.3.3, equation 8).
//!
//! `y(k)` is the stage's throughput in control period `k` and `u(k)` the change of its thread
//! count applied at the start of that period. A stage's throughput answers a thread change in
//! the same period (its workers start at once), which is why the thesis models `u(k)` rather
//! than the classic ARX form's `u(k-1)` (equation 7).
//!
//! `a` and `b` are the least-squares fit of equations 10 to 19, kept as five running sums so
//! an update costs a few multiplications. The sums decay by a forgetting factor `lambda` each
//! period, so the model follows a plant that changes (a new request mix, a slower database):
//! with `lambda = 0.9` a sample's weight halves in about 6.6 periods.
//!
//! Two guards keep a bad fit out of the controller:
//! - **Singular system.** With no thread change in the window (`u = 0` throughout) `b` cannot be
//!   told apart from noise; the determinant of equations 18 and 19 is then about zero and the
//!   previous estimate is kept.
//! - **Nonsense estimates.** A throughput plant holds its throughput when nothing changes, so
//!   `a` must lie near 1; a fit outside `[A_MIN, A_MAX]`, or whose `|b|` exceeds the whole
//!   observed throughput per thread, is discarded and the previous estimate kept.

/// Default forgetting factor: a sample's weight halves in about 6.6 periods.
pub const DEFAULT_FORGETTING: f64 = 0.9;
/// Smallest plausible `a`: below it the fit says throughput decays on its own.
pub const A_MIN: f64 = 0.5;
/// Largest plausible `a`: above it the fit says throughput grows on its own.
pub const A_MAX: f64 = 1.5;
/// Relative size under which the determinant of the normal equations counts as zero.
const SINGULAR_REL: f64 = 1e-9;

/// A fitted model: `y(k) = a*y(k-1) + b*u(k)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArxEstimate {
    /// Carry-over of throughput from one period to the next (about 1 for a steady plant).
    pub a: f64,
    /// Throughput gained per thread added (events/s per thread); negative past an optimum.
    pub b: f64,
}

impl ArxEstimate {
    /// The throughput the model predicts for a period that starts with `du` threads added
    /// after a period of throughput `y_prev` (equation 9).
    pub fn predict(&self, y_prev: f64, du: f64) -> f64 {
        self.a * y_prev + self.b * du
    }
}

/// The least-squares fit of [`ArxEstimate`] over an exponentially forgotten window.
#[derive(Debug, Clone)]
pub struct ArxModel {
    lambda: f64,
    // Equations 13 to 17, each decayed by `lambda` per sample.
    s1: f64, // sum y(k-1)^2
    s2: f64, // sum y(k-1) u(k)
    s3: f64, // sum u(k)^2
    s4: f64, // sum y(k-1) y(k)
    s5: f64, // sum u(k) y(k)
    y_max: f64,
    prev_y: Option<f64>,
    estimate: Option<ArxEstimate>,
    samples: u64,
}

impl Default for ArxModel {
    fn default() -> Self {
        ArxModel::new(DEFAULT_FORGETTING)
    }
}

impl ArxModel {
    /// A model with forgetting factor `lambda` in `(0, 1]` (1 never forgets; values outside
    /// are clamped to `[0.5, 1]`).
    pub fn new(lambda: f64) -> Self {
        let lambda = if lambda.is_finite() {
            lambda.clamp(0.5, 1.0)
        } else {
            DEFAULT_FORGETTING
        };
        ArxModel {
            lambda,
            s1: 0.0,
            s2: 0.0,
            s3: 0.0,
            s4: 0.0,
            s5: 0.0,
            y_max: 0.0,
            prev_y: None,
            estimate: None,
            samples: 0,
        }
    }

    /// Feeds period `k`: the thread change `du` applied at its start and the throughput `y`
    /// measured over it. Returns the current estimate, if there is one yet.
    pub fn observe(&mut self, du: f64, y: f64) -> Option<ArxEstimate> {
        if !du.is_finite() || !y.is_finite() || y < 0.0 {
            return self.estimate;
        }
        self.y_max = self.y_max.max(y);
        if let Some(y1) = self.prev_y {
            let l = self.lambda;
            self.s1 = l * self.s1 + y1 * y1;
            self.s2 = l * self.s2 + y1 * du;
            self.s3 = l * self.s3 + du * du;
            self.s4 = l * self.s4 + y1 * y;
            self.s5 = l * self.s5 + du * y;
            self.samples += 1;
            self.refit();
        }
        self.prev_y = Some(y);
        self.estimate
    }

    /// Equations 18 and 19, with the guards of the module docs.
    fn refit(&mut self) {
        let det = self.s2 * self.s2 - self.s1 * self.s3;
        let scale = (self.s1 * self.s3).abs();
        if scale == 0.0 || det.abs() <= SINGULAR_REL * scale {
            return;
        }
        let a = (self.s2 * self.s5 - self.s3 * self.s4) / det;
        let b = (self.s2 * self.s4 - self.s1 * self.s5) / det;
        let plausible = a.is_finite()
            && b.is_finite()
            && (A_MIN..=A_MAX).contains(&a)
            && b.abs() <= self.y_max.max(1.0);
        if plausible {
            self.estimate = Some(ArxEstimate { a, b });
        }
    }

    /// The standard error of the fitted `b` where the one-step errors have variance
    /// `noise_var` (ordinary least squares: `noise_var` times the inverse normal matrix's `b`
    /// entry, over the forgotten sums); `None` without a fit's worth of thread changes.
    pub fn gain_std_error(&self, noise_var: f64) -> Option<f64> {
        let det = self.s1 * self.s3 - self.s2 * self.s2;
        let v = noise_var * self.s1 / det;
        (det > 0.0 && v.is_finite() && v >= 0.0).then(|| v.sqrt())
    }

    /// The current estimate: `None` until two periods with a thread change were seen.
    pub fn estimate(&self) -> Option<ArxEstimate> {
        self.estimate
    }

    /// The throughput of the last period fed.
    pub fn last_output(&self) -> Option<f64> {
        self.prev_y
    }

    /// Periods fitted so far (the first period only sets `y(k-1)`).
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard error of `b` is unknown before the threads have changed, and shrinks as
    /// larger thread changes are seen: a move of 4 threads says more than one of 1.
    #[test]
    fn the_gain_is_surer_after_larger_moves() {
        let fed = |step: f64| {
            let mut m = ArxModel::new(DEFAULT_FORGETTING);
            m.observe(0.0, 100.0);
            assert_eq!(m.gain_std_error(25.0), None);
            let mut n = 10.0;
            for k in 0..30 {
                let du = if k % 2 == 0 { step } else { -step };
                n += du;
                m.observe(du, 10.0 * n);
            }
            m.gain_std_error(25.0).expect("a fit")
        };
        let (small, large) = (fed(1.0), fed(4.0));
        assert!(large < small / 3.0, "{large} against {small}");
    }

    /// A noiseless ARX plant is recovered exactly once the input has varied.
    #[test]
    fn recovers_a_linear_plant() {
        let (a, b) = (0.95, 40.0);
        let mut m = ArxModel::new(1.0);
        let mut y = 100.0;
        m.observe(0.0, y);
        for k in 0..20 {
            let du = [1.0, -1.0, 2.0, 0.0][k % 4];
            y = a * y + b * du + 5.0; // a constant disturbance the model must absorb into a
            m.observe(du, y);
        }
        let e = m.estimate().expect("fit");
        // The disturbance biases the fit; the one-step prediction error is what matters.
        let pred = e.predict(y, 1.0);
        let actual = a * y + b + 5.0;
        assert!(
            (pred - actual).abs() / actual < 0.05,
            "{e:?} {pred} {actual}"
        );
    }

    #[test]
    fn no_thread_change_is_singular_and_keeps_no_estimate() {
        let mut m = ArxModel::default();
        for _ in 0..10 {
            m.observe(0.0, 100.0);
        }
        assert_eq!(m.estimate(), None);
    }

    #[test]
    fn nonsense_fit_is_discarded() {
        let mut m = ArxModel::new(1.0);
        m.observe(0.0, 100.0);
        m.observe(1.0, 140.0);
        m.observe(-1.0, 100.0);
        let good = m.estimate().expect("fit");
        // A throughput that explodes without a thread change would fit a > A_MAX.
        m.observe(0.0, 10_000.0);
        m.observe(0.0, 1_000_000.0);
        assert_eq!(m.estimate(), Some(good));
    }

    #[test]
    fn forgetting_follows_a_changed_plant() {
        let mut m = ArxModel::new(0.8);
        let mut y = 100.0;
        m.observe(0.0, y);
        for k in 0..40 {
            let du = if k % 2 == 0 { 1.0 } else { -1.0 };
            let b = if k < 20 { 40.0 } else { 10.0 };
            y += b * du;
            m.observe(du, y);
        }
        let e = m.estimate().expect("fit");
        assert!((e.b - 10.0).abs() < 1.0, "{e:?}");
    }

    #[test]
    fn bad_numbers_are_ignored() {
        let mut m = ArxModel::default();
        assert_eq!(m.observe(f64::NAN, 1.0), None);
        assert_eq!(m.observe(1.0, -5.0), None);
        assert_eq!(m.last_output(), None);
    }
}
