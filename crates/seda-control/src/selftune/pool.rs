//! The self-tuning pool (003 Sections 4.2.2 and 4.3.4): a stage sizes its own thread pool by
//! feedback control toward a throughput target, on a model it fits online.
//!
//! Every control period the caller reports the period's throughput and the threads the pool
//! ran with; the controller feeds the [`ArxModel`], re-derives the gains of its [`Law`] from
//! the new fit, and returns the thread count for the next period, within `[min, max]` and
//! moving at most `max_step` threads at a time.
//!
//! Until the model has a fit (it needs periods with different thread counts), the controller
//! probes: one thread toward the target each period. When the fit is lost (a plant that stops
//! answering thread changes, `b` near zero) it probes again rather than divide by nothing.

use super::arx::{ArxEstimate, ArxModel, DEFAULT_FORGETTING};
use super::design::{Gains, Law, PoleSpec, gains};

/// Default most threads added or removed in one period.
pub const DEFAULT_MAX_STEP: usize = 4;

/// Settings of a [`SelfTuningPool`].
#[derive(Debug, Clone, PartialEq)]
pub struct SelfTuningConfig {
    /// The control law.
    pub law: Law,
    /// Fewest threads.
    pub min_threads: usize,
    /// Most threads.
    pub max_threads: usize,
    /// Most threads changed in one period.
    pub max_step: usize,
    /// The model's forgetting factor.
    pub forgetting: f64,
    /// Desired settling time and overshoot (PI and PD).
    pub poles: PoleSpec,
}

impl Default for SelfTuningConfig {
    fn default() -> Self {
        SelfTuningConfig {
            law: Law::P,
            min_threads: 1,
            max_threads: 64,
            max_step: DEFAULT_MAX_STEP,
            forgetting: DEFAULT_FORGETTING,
            poles: PoleSpec::default(),
        }
    }
}

/// What the pool controller reads each period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodSample {
    /// Completions per second over the period that just ended.
    pub throughput_per_s: f64,
    /// Threads the pool ran with during that period.
    pub threads: usize,
    /// The throughput the stage should reach (from global control), events/s.
    pub target_per_s: f64,
}

/// A pool sizer on an online ARX model (see the module docs).
#[derive(Debug, Clone)]
pub struct SelfTuningPool {
    config: SelfTuningConfig,
    model: ArxModel,
    prev_threads: Option<usize>,
    integral: f64,
    prev_error: f64,
    gains: Option<Gains>,
}

impl SelfTuningPool {
    /// A controller with `config` (bounds made consistent: `1 <= min <= max`, `max_step >= 1`).
    pub fn new(mut config: SelfTuningConfig) -> Self {
        config.min_threads = config.min_threads.max(1);
        config.max_threads = config.max_threads.max(config.min_threads);
        config.max_step = config.max_step.max(1);
        SelfTuningPool {
            model: ArxModel::new(config.forgetting),
            config,
            prev_threads: None,
            integral: 0.0,
            prev_error: 0.0,
            gains: None,
        }
    }

    /// Feeds one period and returns the thread count for the next one.
    pub fn update(&mut self, s: PeriodSample) -> usize {
        let threads = s
            .threads
            .clamp(self.config.min_threads, self.config.max_threads);
        let du = self.prev_threads.map_or(0.0, |p| threads as f64 - p as f64);
        self.prev_threads = Some(threads);
        let y = if s.throughput_per_s.is_finite() {
            s.throughput_per_s.max(0.0)
        } else {
            0.0
        };
        let target = if s.target_per_s.is_finite() {
            s.target_per_s.max(0.0)
        } else {
            y
        };
        let fit = self.model.observe(du, y);
        self.gains = fit.and_then(|m| gains(self.config.law, m, self.config.poles));
        let step = match self.gains {
            Some(g) => self.control(g, y, target),
            None => probe(y, target),
        };
        let max_step = self.config.max_step as f64;
        let step = step.clamp(-max_step, max_step).round() as i64;
        let next = (threads as i64 + step).clamp(
            self.config.min_threads as i64,
            self.config.max_threads as i64,
        );
        let next = next as usize;
        if next == threads && step != 0 {
            // Saturated at a bound: stop integrating (anti-windup).
            self.integral -= self.gains.map_or(0.0, |g| g.ki) * self.prev_error;
        }
        next
    }

    fn control(&mut self, g: Gains, y: f64, target: f64) -> f64 {
        let e = g.precomp * target - y;
        self.integral += g.ki * e;
        let u = g.kp * e + self.integral + g.kd * (e - self.prev_error);
        self.prev_error = e;
        if u.is_finite() { u } else { 0.0 }
    }

    /// The model's current fit.
    pub fn model(&self) -> Option<ArxEstimate> {
        self.model.estimate()
    }

    /// The gains in use, once the model has a fit.
    pub fn gains(&self) -> Option<Gains> {
        self.gains
    }

    /// The settings.
    pub fn config(&self) -> &SelfTuningConfig {
        &self.config
    }
}

/// One thread toward the target, to excite the model while it has no fit.
fn probe(y: f64, target: f64) -> f64 {
    if y < target * 0.98 {
        1.0
    } else if y > target * 1.02 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plant whose throughput is `per_thread * n` up to `knee` threads, then falls by
    /// `loss` per extra thread (contention): an interior optimum at `knee`.
    fn plant(n: usize, per_thread: f64, knee: usize, loss: f64) -> f64 {
        if n <= knee {
            per_thread * n as f64
        } else {
            per_thread * knee as f64 - loss * (n - knee) as f64
        }
    }

    fn follow(law: Law, target: f64) -> (Vec<usize>, Vec<f64>) {
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            law,
            max_threads: 40,
            ..Default::default()
        });
        let mut n = 2;
        let (mut ns, mut ys) = (Vec::new(), Vec::new());
        for _ in 0..40 {
            let y = plant(n, 25.0, 30, 10.0);
            ns.push(n);
            ys.push(y);
            n = c.update(PeriodSample {
                throughput_per_s: y,
                threads: n,
                target_per_s: target,
            });
        }
        (ns, ys)
    }

    #[test]
    fn every_law_reaches_a_reachable_target() {
        for law in Law::ALL {
            let (ns, ys) = follow(law, 400.0);
            let tail = &ys[25..];
            assert!(
                tail.iter().all(|y| (y - 400.0).abs() <= 0.05 * 400.0),
                "{law:?}: threads {ns:?} throughput {ys:?}"
            );
        }
    }

    #[test]
    fn stays_within_bounds_and_step() {
        let (ns, _) = follow(Law::P, 10_000.0);
        assert!(ns.iter().all(|&n| (1..=40).contains(&n)));
        assert!(
            ns.windows(2)
                .all(|w| w[0].abs_diff(w[1]) <= DEFAULT_MAX_STEP)
        );
    }

    #[test]
    fn nonsense_input_does_not_move_out_of_bounds() {
        let mut c = SelfTuningPool::new(SelfTuningConfig::default());
        let n = c.update(PeriodSample {
            throughput_per_s: f64::NAN,
            threads: 1000,
            target_per_s: f64::INFINITY,
        });
        assert!((1..=64).contains(&n));
    }
}
