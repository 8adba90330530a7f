//! Pool sizers behind one trait: what the runtime's pools and the simulator's stage 0 drive
//! every control period, whichever sizer a configuration names.
//!
//! A [`Sizer`] takes one period ([`SizerPeriod`]: completions, arrivals, busy time, threads,
//! the throughput targets given from outside) and returns the thread target for the next; its
//! [`SizerReport`] is what snapshots and reports show. The registry
//! ([`catalogue::sizers`](crate::catalogue::sizers)) lists every sizer with the function that
//! builds it from [`SizerSettings`], so the runtime (`sizer = { kind = NAME }`) and the
//! simulator build them by name and neither names a sizer's type.
//!
//! ```
//! use seda_control::catalogue::sizers::{self, FIXED};
//! use seda_control::sizer::{SizerPeriod, SizerSettings};
//!
//! let mut settings = SizerSettings::new(1, 8);
//! settings.initial_threads = 6;
//! let mut sizer = sizers::build(FIXED, &settings).unwrap();
//! let period = SizerPeriod { secs: 1.0, completions: 120, threads: 6, ..SizerPeriod::default() };
//! assert_eq!(sizer.update(&period), 6);
//! assert_eq!(sizer.report().throughput_per_s, Some(120.0));
//! assert!(sizers::build("vegas", &settings).is_err()); // an admission controller
//! ```

pub(crate) mod fixed;
pub(crate) mod heuristic;
pub(crate) mod hill_climbing;
pub(crate) mod self_tuning;

use std::fmt::Debug;
use std::time::Duration;

pub use fixed::FixedSizer;
pub use heuristic::SedaHeuristicSizer;
pub use self_tuning::SelfTuningSizer;

use crate::Time;
use crate::selftune::Law;

/// A pool sizer: one period in, a thread target out.
pub trait Sizer: Debug + Send {
    /// Its registry name ([`catalogue::sizers`](crate::catalogue::sizers)).
    fn name(&self) -> &'static str;

    /// The thread count to start with, given the pool's configured `initial` (a fixed pool
    /// starts at its own size).
    fn initial_threads(&self, initial: usize) -> usize {
        initial
    }

    /// Feeds one period; returns the thread target for the next.
    fn update(&mut self, p: &SizerPeriod) -> usize;

    /// What it measured and decided in the last period, for snapshots and reports.
    fn report(&self) -> SizerReport;
}

/// One control period of a pool, as its driver measured it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SizerPeriod {
    /// The period's end (SEDA's heuristic samples on its own clock).
    pub now: Time,
    /// Its length, seconds (> 0: the driver clamps it).
    pub secs: f64,
    /// Events completed in it.
    pub completions: u64,
    /// Events that arrived (were admitted) in it.
    pub arrivals: u64,
    /// Seconds the pool's handlers ran in it, summed over threads (`None`: not measured).
    pub busy_secs: Option<f64>,
    /// Threads during it (the last target, where there is one).
    pub threads: usize,
    /// Events waiting at its end.
    pub queue_len: usize,
    /// Throughput targets from outside the sizer.
    pub targets: OutsideTargets,
}

impl SizerPeriod {
    /// Completions per second.
    pub fn throughput_per_s(&self) -> f64 {
        self.completions as f64 / self.secs
    }

    /// Arrivals per second.
    pub fn arrivals_per_s(&self) -> f64 {
        self.arrivals as f64 / self.secs
    }
}

/// Throughput targets given to a pool from outside its sizer, events/s. A targeted sizer
/// steers to, in order: the run-time one, its own setting, the global controller's share, or
/// else the period's arrival rate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OutsideTargets {
    /// Set while running (the runtime's `set_throughput_target`, the simulator's plan).
    pub run_time: Option<f64>,
    /// The global controller's share for this pool.
    pub global: Option<f64>,
}

/// What a sizer shows in snapshots (`None`: not measured or not its concern).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct SizerReport {
    /// The thread count the sizer asks for (`None` under SEDA's heuristic in the runtime).
    pub threads_target: Option<usize>,
    /// The throughput the self-tuning pool steers to, events/s.
    pub throughput_target_per_s: Option<f64>,
    /// Completions per second in the last period.
    pub throughput_per_s: Option<f64>,
    /// Threads running a handler, on average over the last period.
    pub busy_threads: Option<f64>,
    /// The ARX model's `a` and `b` (self-tuning, once fitted).
    pub arx_a: Option<f64>,
    /// See `arx_a`.
    pub arx_b: Option<f64>,
    /// Mean relative one-step prediction error of the ARX model so far (FAIR07 Figure 4-7).
    pub arx_error: Option<f64>,
}

impl SizerReport {
    /// What every sizer reports of period `p` and its decision `next`.
    pub fn measured(p: &SizerPeriod, next: usize) -> Self {
        SizerReport {
            threads_target: Some(next),
            throughput_per_s: Some(p.throughput_per_s()),
            busy_threads: p.busy_secs.map(|b| b / p.secs),
            ..SizerReport::default()
        }
    }
}

/// What a sizer is built from: the pool's bounds and the settings a configuration gives
/// (absent ones take the sizer's defaults). Each sizer reads the settings it uses.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SizerSettings {
    /// Fewest threads.
    pub min_threads: usize,
    /// Most threads.
    pub max_threads: usize,
    /// Threads at start.
    pub initial_threads: usize,
    /// The control period.
    pub period: Duration,
    /// The self-tuning pool's control law.
    pub law: Law,
    /// A fixed throughput target, events/s (self-tuning).
    pub target_per_s: Option<f64>,
    /// Most threads changed in one period (self-tuning).
    pub max_step: Option<usize>,
    /// Desired settling time in periods (self-tuning, PI and PD).
    pub settle_periods: Option<f64>,
    /// Desired largest overshoot, a fraction (self-tuning, PI and PD).
    pub overshoot: Option<f64>,
    /// Queue length that asks for another thread (SEDA's heuristic).
    pub queue_threshold: usize,
}

impl SizerSettings {
    /// Defaults within `min_threads..=max_threads`, starting at the minimum, one-second
    /// periods, P control, Sandstorm's queue threshold.
    pub fn new(min_threads: usize, max_threads: usize) -> Self {
        SizerSettings {
            min_threads,
            max_threads,
            initial_threads: min_threads,
            period: Duration::from_secs(1),
            law: Law::P,
            target_per_s: None,
            max_step: None,
            settle_periods: None,
            overshoot: None,
            queue_threshold: crate::ThreadPoolConfig::SANDSTORM_THRESHOLD,
        }
    }
}

#[cfg(test)]
mod tests;
