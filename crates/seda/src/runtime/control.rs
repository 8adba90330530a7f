//! The control thread: every tick each stage's controllers and the watched resources, every
//! stats period the stages' stats, global control, then each pool's sizer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::Registry;
use crate::erased::StageDyn;
use crate::global::GlobalControl;
use crate::pool::Pool;
use crate::shared::Shared;

pub(super) fn control_loop(
    registry: &Registry,
    shared: &Shared,
    stop: &(Mutex<bool>, Condvar),
    global: Option<&Mutex<GlobalControl>>,
    tick: Duration,
    period: Duration,
) {
    let mut next_roll = Instant::now() + period;
    loop {
        {
            let mut stopped = stop.0.lock();
            if *stopped {
                return;
            }
            stop.1.wait_for(&mut stopped, tick);
            if *stopped {
                return;
            }
        }
        let now = Instant::now();
        let stages: Vec<_> = registry.stages.read().clone();
        for s in &stages {
            s.control(now);
        }
        for r in registry.resources.read().iter() {
            r.police(now);
        }
        let pools: Vec<_> = registry.pools.read().clone();
        if now >= next_roll {
            for s in &stages {
                s.roll_stats(now);
            }
            if let Some(global) = global {
                apply_global(global, &stages, &pools);
            }
            next_roll += period;
            if next_roll < now {
                next_roll = now + period;
            }
        }
        // After global control, so that a sizer whose period ends in this tick sizes its pool
        // for this period's target rather than the last one's.
        for p in &pools {
            p.control(shared.time(now));
        }
    }
}

/// One period of global control: the service's throughput target, and each pool's share.
fn apply_global(global: &Mutex<GlobalControl>, stages: &[Arc<dyn StageDyn>], pools: &[Arc<Pool>]) {
    let snapshots: Vec<_> = stages.iter().map(|s| s.snapshot()).collect();
    let targets = global.lock().update(&snapshots);
    for pool in pools {
        let share: Option<f64> = snapshots
            .iter()
            .filter(|s| s.pool.as_deref() == Some(pool.name.as_str()))
            .filter_map(|s| targets.get(&s.name))
            .copied()
            .reduce(|a, b| a + b);
        pool.set_global_target(share);
    }
}
