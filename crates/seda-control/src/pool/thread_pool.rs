//! SEDA's thread-pool controller (Sandstorm `ThreadPoolController`, SEDA01).
//!
//! Every `delay` the controller samples the stage's queue; every
//! [`POOL_CONTROLLER_DELAY_TICKS`]-th sample, a queue at or above `threshold` adds one thread, up
//! to `max_threads`. The controller never removes threads: a worker that has been idle for
//! `idle_time` retires itself while the pool is above `min_threads`
//! ([`ThreadPoolController::should_retire`]).

use std::time::Duration;

use crate::{Controller, Time};

/// Sandstorm's `CONTROLLER_DELAY`: threads are added on every 4th sample.
pub const POOL_CONTROLLER_DELAY_TICKS: u32 = 4;

/// Thread-pool sizing parameters. [`Default`] gives Sandstorm's `SandstormConfig` defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPoolConfig {
    /// Threads at start (`threadPool.initialThreads`, 1).
    pub initial_threads: usize,
    /// Fewest threads (`threadPool.minThreads`, 1).
    pub min_threads: usize,
    /// Most threads (`threadPool.maxThreads`, 20).
    pub max_threads: usize,
    /// Sampling period (`sizeController.delay`, 2000 ms).
    pub delay: Duration,
    /// Queue length that asks for another thread (`sizeController.threshold`, 1000).
    pub threshold: usize,
    /// Idle time after which a worker retires (`sizeController.idleTimeThreshold`, 1000 ms).
    pub idle_time: Duration,
    /// Samples between additions ([`POOL_CONTROLLER_DELAY_TICKS`]).
    pub ticks_per_add: u32,
}

impl ThreadPoolConfig {
    /// Sandstorm's `threadPool.initialThreads`.
    pub const SANDSTORM_INITIAL_THREADS: usize = 1;
    /// Sandstorm's `threadPool.minThreads`.
    pub const SANDSTORM_MIN_THREADS: usize = 1;
    /// Sandstorm's `threadPool.maxThreads`.
    pub const SANDSTORM_MAX_THREADS: usize = 20;
    /// Sandstorm's `sizeController.delay`.
    pub const SANDSTORM_DELAY: Duration = Duration::from_millis(2000);
    /// Sandstorm's `sizeController.threshold`.
    pub const SANDSTORM_THRESHOLD: usize = 1000;
    /// Sandstorm's `sizeController.idleTimeThreshold`.
    pub const SANDSTORM_IDLE_TIME: Duration = Duration::from_millis(1000);

    /// Bounds and the initial size made consistent: `1 <= min <= initial <= max`.
    pub fn normalized(mut self) -> Self {
        self.min_threads = self.min_threads.max(1);
        self.max_threads = self.max_threads.max(self.min_threads);
        self.initial_threads = self
            .initial_threads
            .clamp(self.min_threads, self.max_threads);
        self.ticks_per_add = self.ticks_per_add.max(1);
        self
    }
}

impl Default for ThreadPoolConfig {
    fn default() -> Self {
        ThreadPoolConfig {
            initial_threads: Self::SANDSTORM_INITIAL_THREADS,
            min_threads: Self::SANDSTORM_MIN_THREADS,
            max_threads: Self::SANDSTORM_MAX_THREADS,
            delay: Self::SANDSTORM_DELAY,
            threshold: Self::SANDSTORM_THRESHOLD,
            idle_time: Self::SANDSTORM_IDLE_TIME,
            ticks_per_add: POOL_CONTROLLER_DELAY_TICKS,
        }
    }
}

/// What the pool controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolObservation {
    /// Events waiting in the queue(s) the pool serves.
    pub queue_len: usize,
    /// Threads currently in the pool.
    pub threads: usize,
}

/// What the pool controller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolAdjustment {
    /// Threads to start now.
    pub add_threads: usize,
}

/// SEDA's thread-pool controller.
#[derive(Debug, Clone)]
pub struct ThreadPoolController {
    config: ThreadPoolConfig,
    next_sample: Option<Time>,
    samples: u32,
}

impl ThreadPoolController {
    /// A controller with the given parameters (normalized).
    pub fn new(config: ThreadPoolConfig) -> Self {
        ThreadPoolController {
            config: config.normalized(),
            next_sample: None,
            samples: 0,
        }
    }

    /// The parameters in use.
    pub fn config(&self) -> &ThreadPoolConfig {
        &self.config
    }

    /// Whether a worker idle for `idle_for` should retire from a pool of `threads`.
    pub fn should_retire(&self, idle_for: Duration, threads: usize) -> bool {
        idle_for >= self.config.idle_time && threads > self.config.min_threads
    }
}

impl Default for ThreadPoolController {
    fn default() -> Self {
        ThreadPoolController::new(ThreadPoolConfig::default())
    }
}

impl Controller for ThreadPoolController {
    type Observation = PoolObservation;
    type Adjustment = PoolAdjustment;

    fn update(&mut self, now: Time, obs: &PoolObservation) -> PoolAdjustment {
        let due = *self.next_sample.get_or_insert(now + self.config.delay);
        if now < due {
            return PoolAdjustment::default();
        }
        self.next_sample = Some(now + self.config.delay);
        self.samples += 1;
        let add = self.samples.is_multiple_of(self.config.ticks_per_add)
            && obs.queue_len >= self.config.threshold
            && obs.threads < self.config.max_threads;
        PoolAdjustment {
            add_threads: usize::from(add),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ThreadPoolConfig {
        ThreadPoolConfig {
            initial_threads: 1,
            min_threads: 1,
            max_threads: 3,
            delay: Duration::from_millis(100),
            threshold: 10,
            idle_time: Duration::from_millis(500),
            ticks_per_add: 4,
        }
    }

    fn run(c: &mut ThreadPoolController, ms: u64, queue_len: usize, threads: usize) -> usize {
        c.update(
            Duration::from_millis(ms),
            &PoolObservation { queue_len, threads },
        )
        .add_threads
    }

    #[test]
    fn sandstorm_defaults() {
        let c = ThreadPoolConfig::default();
        assert_eq!(
            (c.initial_threads, c.min_threads, c.max_threads),
            (1, 1, 20)
        );
        assert_eq!(c.delay, Duration::from_millis(2000));
        assert_eq!(c.threshold, 1000);
        assert_eq!(c.idle_time, Duration::from_millis(1000));
        assert_eq!(c.ticks_per_add, 4);
    }

    #[test]
    fn adds_one_thread_every_fourth_sample_while_the_queue_is_long() {
        let mut c = ThreadPoolController::new(cfg());
        let added: Vec<usize> = (0..=8).map(|i| run(&mut c, i * 100, 50, 1)).collect();
        // t=0 arms the schedule; samples at 100..800; the 4th and 8th add.
        assert_eq!(added, vec![0, 0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn calls_between_samples_change_nothing() {
        let mut c = ThreadPoolController::new(cfg());
        run(&mut c, 0, 50, 1);
        let total: usize = (1..400).map(|ms| run(&mut c, ms, 50, 1)).sum();
        assert_eq!(total, 0, "only 3 samples fall before 400 ms");
        assert_eq!(run(&mut c, 400, 50, 1), 1);
    }

    #[test]
    fn short_queue_or_full_pool_adds_nothing() {
        let mut c = ThreadPoolController::new(cfg());
        let short: usize = (0..=8).map(|i| run(&mut c, i * 100, 9, 1)).sum();
        assert_eq!(short, 0);
        let full: usize = (9..=16).map(|i| run(&mut c, i * 100, 50, 3)).sum();
        assert_eq!(full, 0);
    }

    #[test]
    fn idle_workers_retire_down_to_the_minimum() {
        let c = ThreadPoolController::new(cfg());
        assert!(!c.should_retire(Duration::from_millis(499), 2));
        assert!(c.should_retire(Duration::from_millis(500), 2));
        assert!(!c.should_retire(Duration::from_secs(60), 1));
    }

    #[test]
    fn normalizes_inconsistent_bounds() {
        let c = ThreadPoolConfig {
            initial_threads: 50,
            min_threads: 0,
            max_threads: 0,
            ..cfg()
        };
        let c = c.normalized();
        assert_eq!((c.min_threads, c.initial_threads, c.max_threads), (1, 1, 1));
    }
}
