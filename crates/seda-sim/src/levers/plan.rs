//! Where the simulator's stage 0 pool takes its throughput target from: the experiment's plan,
//! the simulator's side of what the runtime's `set_throughput_target` and global control give
//! a pool. The sizers themselves are seda-control's registry
//! ([`seda_control::catalogue::sizers`]), driven through [`Sizer`](seda_control::sizer::Sizer)
//! as the runtime drives them.

use std::time::Duration;

use seda_control::selftune::{GlobalTargets, ServiceSample};
use seda_control::sizer::{OutsideTargets, SizerPeriod};

use super::PoolPeriod;

/// Where a targeted sizer's throughput target comes from.
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

impl TargetPlan {
    /// The target for the period that `p` ends, events/s.
    pub fn target(&mut self, p: &PoolPeriod) -> f64 {
        let y = p.throughput_per_s();
        let g = match self {
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

impl PoolPeriod {
    /// The period as a sizer reads it, with the plan's target as the one given while running.
    /// The engine does not track busy time: the sizer judges by the throughput alone.
    pub fn to_sizer_period(&self, run_time_target: Option<f64>) -> SizerPeriod {
        SizerPeriod {
            now: Duration::from_secs_f64(self.now_s.max(0.0)),
            secs: self.period_s,
            completions: self.served,
            arrivals: self.arrived,
            busy_secs: None,
            threads: self.servers as usize,
            queue_len: self.queue_len,
            targets: OutsideTargets {
                run_time: run_time_target,
                global: None,
            },
        }
    }
}
