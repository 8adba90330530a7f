//! The pool-sizing controllers the simulator runs, each a [`PoolSizer`] over a pure controller
//! of `seda_control`: a fixed pool, SEDA's heuristic, the self-tuning pool (P, PI, PD on an
//! online ARX model) and the .NET thread pool's hill climbing.

use std::time::Duration;

use seda_control::catalogue::sizers;
use seda_control::selftune::{
    GlobalTargets, HillClimbing, PeriodSample, SelfTuningConfig, SelfTuningPool, ServiceSample,
};
use seda_control::{Controller, PoolObservation, ThreadPoolConfig, ThreadPoolController};

use super::{PoolPeriod, PoolSizer};

/// A pool of constant size (the sweep's points).
#[derive(Debug, Clone, Copy)]
pub struct FixedPool(pub u32);

impl PoolSizer for FixedPool {
    fn name(&self) -> &'static str {
        sizers::FIXED
    }
    fn resize(&mut self, _p: &PoolPeriod) -> u32 {
        self.0
    }
}

/// SEDA's heuristic (Sandstorm's `ThreadPoolController`): one more thread when the queue is
/// at or past its threshold, sampled once per period. Threads are never removed here: in SEDA a
/// worker idle for `idle_time` retires itself, and under the saturating loads these scenarios
/// use no worker is ever idle that long.
#[derive(Debug, Clone)]
pub struct SedaHeuristicPool {
    inner: ThreadPoolController,
    max: u32,
}

impl SedaHeuristicPool {
    /// Adds a thread each period the queue is at least `threshold`, up to `max`.
    pub fn new(threshold: usize, max: u32, period_s: f64) -> Self {
        let cfg = ThreadPoolConfig {
            max_threads: max as usize,
            delay: Duration::from_secs_f64(period_s.max(1e-3)),
            threshold,
            ticks_per_add: 1,
            ..ThreadPoolConfig::default()
        };
        SedaHeuristicPool {
            inner: ThreadPoolController::new(cfg),
            max,
        }
    }
}

impl PoolSizer for SedaHeuristicPool {
    fn name(&self) -> &'static str {
        "seda_heuristic"
    }
    fn resize(&mut self, p: &PoolPeriod) -> u32 {
        // The controller's first call only arms its clock: feed it the period's start first.
        let now = Duration::from_secs_f64(p.now_s.max(0.0));
        let obs = PoolObservation {
            queue_len: p.queue_len,
            threads: p.servers as usize,
        };
        let add = self.inner.update(now, &obs).add_threads;
        (p.servers + add as u32).min(self.max)
    }
}

/// Where the self-tuning pool's throughput target comes from.
#[derive(Debug, Clone)]
pub enum TargetPlan {
    /// Given targets: from each `(time_s, target_per_s)` on (the pool-control experiment).
    Steps(Vec<(f64, f64)>),
    /// The global controller (FAIR07 Section 4.2.1): the percentile target mapped to a
    /// throughput target by Little's law, with the fast path on arrival jumps.
    Global(GlobalTargets),
    /// Global control whose percentile target the operator changes while it runs: from each
    /// `(time_s, target_s)` on (FAIR07 Figure 5-7), the first in force from the start.
    GlobalSteps(GlobalTargets, Vec<(f64, f64)>),
}

/// Mean relative one-step prediction error of an ARX model: `|predicted - measured| /
/// measured` averaged over the periods where the model had an estimate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ArxError {
    /// Sum of relative errors.
    pub sum: f64,
    /// Periods counted.
    pub samples: u64,
}

impl ArxError {
    /// The mean (`None` before any prediction).
    pub fn mean(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum / self.samples as f64)
    }
}

/// The self-tuning pool (FAIR07 Section 4.3): P, PI or PD on an ARX model fitted online.
#[derive(Debug, Clone)]
pub struct SelfTunedPool {
    pool: SelfTuningPool,
    plan: TargetPlan,
    target: Option<f64>,
    prev: Option<(u32, f64)>,
    error: ArxError,
}

impl SelfTunedPool {
    /// A pool with `config`, steering to `plan`'s target.
    pub fn new(config: SelfTuningConfig, plan: TargetPlan) -> Self {
        SelfTunedPool {
            pool: SelfTuningPool::new(config),
            plan,
            target: None,
            prev: None,
            error: ArxError::default(),
        }
    }

    fn next_target(&mut self, p: &PoolPeriod) -> f64 {
        let y = p.throughput_per_s();
        let g = match &mut self.plan {
            TargetPlan::Steps(steps) => return step_at(steps, p.now_s).map_or(y, |s| s.1),
            TargetPlan::Global(g) => g,
            TargetPlan::GlobalSteps(g, steps) => {
                if let Some(&(_, target_s)) = step_at(steps, p.now_s) {
                    g.set_target(Duration::from_secs_f64(target_s.max(0.0)));
                }
                g
            }
        };
        let sample = ServiceSample {
            mean_response: Duration::from_secs_f64(p.mean_response_s.max(0.0)),
            percentile_response: Duration::from_secs_f64(p.p90_response_s.unwrap_or(0.0).max(0.0)),
            throughput_per_s: y,
            arrivals_per_s: p.arrivals_per_s(),
            waiting: p.queue_len as f64,
        };
        g.update(sample).unwrap_or(p.arrivals_per_s())
    }
}

/// The step of `(time_s, value)` steps in force at `now_s` (the first one before it starts).
fn step_at(steps: &[(f64, f64)], now_s: f64) -> Option<&(f64, f64)> {
    steps
        .iter()
        .rev()
        .find(|(t, _)| *t <= now_s)
        .or(steps.first())
}

impl PoolSizer for SelfTunedPool {
    fn name(&self) -> &'static str {
        self.pool.config().law.name()
    }

    fn resize(&mut self, p: &PoolPeriod) -> u32 {
        let y = p.throughput_per_s();
        if let (Some(m), Some((prev_n, prev_y))) = (self.pool.model(), self.prev)
            && y > 0.0
        {
            let du = f64::from(p.servers) - f64::from(prev_n);
            self.error.sum += (m.predict(prev_y, du) - y).abs() / y;
            self.error.samples += 1;
        }
        self.prev = Some((p.servers, y));
        let target = self.next_target(p);
        self.target = Some(target);
        let n = self.pool.update(PeriodSample {
            throughput_per_s: y,
            threads: p.servers as usize,
            target_per_s: target,
            // Not tracked by the engine: the pool judges moves by the throughput alone.
            busy_threads: None,
        });
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn target_per_s(&self) -> Option<f64> {
        self.target
    }

    fn arx_error(&self) -> Option<ArxError> {
        Some(self.error)
    }
}

/// The .NET thread pool's hill climbing: maximises completions per second with a probing wave.
#[derive(Debug, Clone)]
pub struct HillClimbingPool(pub HillClimbing);

impl PoolSizer for HillClimbingPool {
    fn name(&self) -> &'static str {
        sizers::HILL_CLIMBING
    }
    fn resize(&mut self, p: &PoolPeriod) -> u32 {
        let n = self.0.update(p.servers as usize, p.period_s, p.served);
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}
