//! Global control (FAIR07 Sections 4.2.1 and 4.3.1): the operator's percentile response-time
//! target turned into a throughput target for every stage.
//!
//! Each period, from the service's mean response time `R(k)`, its percentile `R_p(k)`, its
//! throughput `T(k)` and its arrival rate:
//! - `alpha(k+1) = W*alpha(k) + (1-W) * R(k) / R_p(k)` (equation 3) maps the percentile target
//!   to a mean target `alpha * R_desired` (equation 2);
//! - `N(k+1) = R(k) * T(k)` estimates the number in system by Little's law (equation 4);
//! - the throughput target is `N(k+1) / (alpha(k+1) * R_desired)` (equation 5), by default
//!   never below the period's arrival rate: with the percentile under its target equation 5
//!   asks for less than arrives, and under open arrivals a pool sized to that builds a queue
//!   until the percentile overshoots (found in `seda sim thesis-open`, where it cost a fifth of
//!   the requests). Under closed or partly-open clients arrivals follow throughput, so the floor
//!   holds the pool where it is and a percentile under a loosened target never rises to it
//!   ([`GlobalConfig::arrival_floor`] off: `seda sim follow-target`, FAIR07 Figure 5-7).
//! - the floor counts the work waiting as well as the work arriving: arrivals plus the backlog
//!   cleared within the mean target (`waiting / (alpha * R_desired)`). Clients that wait for
//!   replies send only as fast as they are answered, so a pool that has fallen behind sees
//!   arrivals equal to its throughput at any size, and without the backlog the target held the
//!   pool wherever it stood: in `dynamic-groups` one run held 10 threads under 400 clients
//!   (260/s, a queue of 130) and another 12 (290/s), the p90 over the run 0.57 and 0.42 x the
//!   target.
//!
//! A feedback loop lags a jump in load, so when arrivals jump (this period's arrival rate more
//! than [`GlobalConfig::jump`] above the mean of the recent periods') the target becomes the
//! highest arrival rate in the recent history (the thesis's fast path) for
//! [`GlobalConfig::hold_periods`] periods, then equation 5 again. Stages in series share the
//! target; parallel branches split it by their measured proportions ([`split`], equation 1).

use std::collections::VecDeque;
use std::time::Duration;

/// Settings of [`GlobalTargets`].
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalConfig {
    /// The operator's percentile response-time target (`R_desired`).
    pub target: Duration,
    /// Weight of the past in equation 3 (`W`).
    pub weight: f64,
    /// Relative rise of the arrival rate over the recent periods' mean that counts as a jump.
    pub jump: f64,
    /// Periods of arrival history the fast path looks back over.
    pub history: usize,
    /// Periods the fast path holds after a jump.
    pub hold_periods: u32,
    /// Never target less than arrives (see the module docs). On by default: right for open
    /// arrivals; off lets a pool shrink to a looser target when clients wait for replies.
    pub arrival_floor: bool,
}

impl GlobalConfig {
    /// Default `W`: the thesis gives no value; 0.8 follows a change of distribution within
    /// about five periods.
    pub const DEFAULT_WEIGHT: f64 = 0.8;
    /// Default jump: arrivals 30% above the recent periods' mean.
    pub const DEFAULT_JUMP: f64 = 0.3;
    /// Default history: 10 periods.
    pub const DEFAULT_HISTORY: usize = 10;
    /// Default hold: 5 periods.
    pub const DEFAULT_HOLD: u32 = 5;

    /// Defaults aimed at `target`.
    pub fn new(target: Duration) -> Self {
        GlobalConfig {
            target,
            weight: Self::DEFAULT_WEIGHT,
            jump: Self::DEFAULT_JUMP,
            history: Self::DEFAULT_HISTORY,
            hold_periods: Self::DEFAULT_HOLD,
            arrival_floor: true,
        }
    }
}

/// One period of the whole service, as the runtime measures it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceSample {
    /// Mean response time of the requests completed in the period.
    pub mean_response: Duration,
    /// The percentile (e.g. p90) of the same requests.
    pub percentile_response: Duration,
    /// Completions per second.
    pub throughput_per_s: f64,
    /// Arrivals per second at the first stage.
    pub arrivals_per_s: f64,
    /// Events waiting in the service's queues at the period's end.
    pub waiting: f64,
}

/// Why the current target was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSource {
    /// Equation 5 (Little's law on the mapped mean target).
    LittlesLaw,
    /// The fast path: the highest recent arrival rate.
    ArrivalPeak,
}

/// The global controller (see the module docs).
#[derive(Debug, Clone)]
pub struct GlobalTargets {
    config: GlobalConfig,
    alpha: Option<f64>,
    arrivals: VecDeque<f64>,
    hold: u32,
    target_per_s: Option<f64>,
    source: TargetSource,
}

impl GlobalTargets {
    /// A controller with `config`.
    pub fn new(mut config: GlobalConfig) -> Self {
        config.weight = if config.weight.is_finite() {
            config.weight.clamp(0.0, 1.0)
        } else {
            GlobalConfig::DEFAULT_WEIGHT
        };
        config.history = config.history.max(1);
        GlobalTargets {
            config,
            alpha: None,
            arrivals: VecDeque::new(),
            hold: 0,
            target_per_s: None,
            source: TargetSource::LittlesLaw,
        }
    }

    /// Changes the percentile target at run time.
    pub fn set_target(&mut self, target: Duration) {
        self.config.target = target;
    }

    /// Feeds one period; returns the throughput target for the next, or `None` while nothing
    /// has completed yet.
    pub fn update(&mut self, s: ServiceSample) -> Option<f64> {
        let arrivals = finite_or_zero(s.arrivals_per_s);
        // A jump is measured against the mean of the recent periods, not the last one: Poisson
        // arrivals of 60 a period vary by 13% from one period to the next, so 30% over the last
        // period (54 then 82 arrivals in `thesis-open`'s first phase) happens by chance, and each
        // false jump held the target at the peak for five periods while the pool grew for
        // nothing.
        if !self.arrivals.is_empty() {
            let mean = self.arrivals.iter().sum::<f64>() / self.arrivals.len() as f64;
            if arrivals > mean * (1.0 + self.config.jump) {
                self.hold = self.config.hold_periods;
                // The old level is not the mean a later jump is measured against.
                self.arrivals.clear();
            }
        }
        if self.arrivals.len() == self.config.history {
            self.arrivals.pop_front();
        }
        self.arrivals.push_back(arrivals);

        let mean_s = s.mean_response.as_secs_f64();
        let pct_s = s.percentile_response.as_secs_f64();
        let throughput = finite_or_zero(s.throughput_per_s);
        if mean_s > 0.0 && pct_s > 0.0 {
            let ratio = mean_s / pct_s;
            let w = self.config.weight;
            self.alpha = Some(self.alpha.map_or(ratio, |a| w * a + (1.0 - w) * ratio));
        }
        let desired = self.config.target.as_secs_f64();
        let littles = match self.alpha {
            Some(alpha) if desired > 0.0 && throughput > 0.0 => {
                Some(mean_s * throughput / (alpha * desired))
            }
            _ => None,
        };
        if self.hold > 0 {
            self.hold -= 1;
            self.source = TargetSource::ArrivalPeak;
            self.target_per_s = self.arrivals.iter().copied().reduce(f64::max);
        } else if let Some(t) = littles {
            // Never below what arrives: a stage serving less than its arrivals only grows its
            // queue, and Little's law gives such a target whenever the p90 is under its target.
            self.source = TargetSource::LittlesLaw;
            let floor = match self.alpha {
                Some(alpha) if self.config.arrival_floor => {
                    arrivals + finite_or_zero(s.waiting) / (alpha * desired)
                }
                _ => 0.0,
            };
            self.target_per_s = Some(t.max(floor));
        }
        self.target_per_s
    }

    /// The current throughput target.
    pub fn target_per_s(&self) -> Option<f64> {
        self.target_per_s
    }

    /// The current percentile-to-mean scale (`alpha`).
    pub fn alpha(&self) -> Option<f64> {
        self.alpha
    }

    /// What chose the current target.
    pub fn source(&self) -> TargetSource {
        self.source
    }
}

/// Splits a series stage's throughput target among parallel branches by their measured
/// shares of the traffic (equation 1: the branches' targets sum to the series target).
/// Branches with no measured traffic get an equal share of what is left unmeasured.
pub fn split(target_per_s: f64, measured_per_s: &[f64]) -> Vec<f64> {
    let total: f64 = measured_per_s.iter().copied().map(finite_or_zero).sum();
    if total <= 0.0 {
        let n = measured_per_s.len().max(1) as f64;
        return vec![target_per_s / n; measured_per_s.len()];
    }
    measured_per_s
        .iter()
        .map(|&m| target_per_s * finite_or_zero(m) / total)
        .collect()
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(mean_ms: u64, p90_ms: u64, tput: f64, arrivals: f64) -> ServiceSample {
        ServiceSample {
            mean_response: Duration::from_millis(mean_ms),
            percentile_response: Duration::from_millis(p90_ms),
            throughput_per_s: tput,
            arrivals_per_s: arrivals,
            waiting: 0.0,
        }
    }

    #[test]
    fn littles_law_maps_the_percentile_target() {
        let mut g = GlobalTargets::new(GlobalConfig::new(Duration::from_millis(1000)));
        // 100 in system (0.5 s x 200/s); mean is half the p90, so the mean target is 0.5 s at
        // a p90 target of 1 s: 100 / 0.5 = 200/s.
        let t = g.update(sample(500, 1000, 200.0, 200.0)).unwrap();
        assert!((t - 200.0).abs() < 1e-9, "{t}");
        // Halving the target doubles the throughput needed for the same number in system.
        g.set_target(Duration::from_millis(500));
        let t = g.update(sample(500, 1000, 200.0, 200.0)).unwrap();
        assert!((t - 400.0).abs() < 1e-9, "{t}");
        assert_eq!(g.source(), TargetSource::LittlesLaw);
    }

    #[test]
    fn without_the_arrival_floor_a_loose_target_asks_for_less_than_arrives() {
        // p90 0.5 s against a 1 s target: equation 5 asks for half the throughput.
        let s = sample(250, 500, 200.0, 200.0);
        let mut floored = GlobalTargets::new(GlobalConfig::new(Duration::from_secs(1)));
        assert_eq!(floored.update(s), Some(200.0));
        let mut cfg = GlobalConfig::new(Duration::from_secs(1));
        cfg.arrival_floor = false;
        let t = GlobalTargets::new(cfg).update(s).unwrap();
        assert!((t - 100.0).abs() < 1e-9, "{t}");
    }

    #[test]
    fn a_backlog_raises_the_floor_until_it_is_cleared() {
        // Partly-open clients answered at 260/s send 260/s: a queue of 130 is a backlog the
        // floor asks to clear within the mean target (alpha 0.5 x 1 s): 260 + 130 / 0.5.
        let mut g = GlobalTargets::new(GlobalConfig::new(Duration::from_secs(1)));
        let behind = ServiceSample {
            waiting: 130.0,
            ..sample(250, 500, 260.0, 260.0)
        };
        let t = g.update(behind).unwrap();
        assert!((t - 520.0).abs() < 1e-9, "{t}");
        assert_eq!(g.update(sample(250, 500, 260.0, 260.0)), Some(260.0));
    }

    #[test]
    fn a_jump_in_arrivals_takes_the_fast_path_then_returns() {
        let mut cfg = GlobalConfig::new(Duration::from_millis(1000));
        cfg.hold_periods = 2;
        let mut g = GlobalTargets::new(cfg);
        for _ in 0..5 {
            g.update(sample(500, 1000, 200.0, 200.0));
        }
        let t = g.update(sample(500, 1000, 200.0, 600.0)).unwrap();
        assert_eq!(t, 600.0);
        assert_eq!(g.source(), TargetSource::ArrivalPeak);
        g.update(sample(500, 1000, 200.0, 600.0));
        g.update(sample(500, 1000, 200.0, 600.0));
        assert_eq!(g.source(), TargetSource::LittlesLaw);
    }

    #[test]
    fn poisson_noise_is_no_jump() {
        // 78 arrivals after 54 is 44% more than the last period, but 25% over the mean.
        let mut g = GlobalTargets::new(GlobalConfig::new(Duration::from_millis(1000)));
        for arrivals in [62.0, 66.0, 60.0, 70.0, 54.0, 78.0] {
            g.update(sample(500, 1000, arrivals, arrivals));
            assert_eq!(g.source(), TargetSource::LittlesLaw, "at {arrivals}");
        }
    }

    #[test]
    fn split_follows_the_measured_shares() {
        assert_eq!(split(300.0, &[100.0, 200.0]), vec![100.0, 200.0]);
        assert_eq!(split(300.0, &[0.0, 0.0, 0.0]), vec![100.0, 100.0, 100.0]);
        assert_eq!(split(300.0, &[f64::NAN, 1.0]), vec![0.0, 300.0]);
    }

    #[test]
    fn nothing_completed_gives_no_target() {
        let mut g = GlobalTargets::new(GlobalConfig::new(Duration::from_millis(100)));
        assert_eq!(g.update(sample(0, 0, 0.0, 0.0)), None);
    }
}
