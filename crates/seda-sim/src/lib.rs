//! A discrete-event simulator of a SEDA stage, in virtual time, driving the real
//! [`seda_control`] admission controllers.
//!
//! A run is a graph of stages (each with c servers, a FIFO queue and an optional admission
//! controller; after service a request moves on to another stage with given probabilities or
//! leaves) fed by sources: closed users with think time, open Poisson or constant-rate arrivals, and
//! partly-open sessions; clients may give up after a timeout and may hold an SSM-style AIMD
//! window (SSM04). Service times come from a [`Dist`]: deterministic, exponential, lognormal,
//! Pareto, or a mix. A request whose client has timed out still costs its full service time if
//! the stage serves it (SSM04's wasted work), unless the stage drops expired requests at dequeue.
//! The same seed always gives the same run.
//!
//! # A tour
//!
//! ```
//! use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};
//!
//! // M/M/1 at utilisation 0.5: mean response time 1 / (mu - lambda) = 2 s.
//! let stage = StageConfig { servers: 1, service: Dist::exp(1.0), queue_cap: None, drop_expired: false };
//! let open = Population::Open { rate_per_s: 0.5, poisson: true, start_s: 0.0, end_s: f64::INFINITY };
//! let mut cfg = SimConfig::new(20_000.0, stage, vec![SourceConfig::new(open)]);
//! cfg.bucket_s = 1000.0;
//! cfg.warmup_s = 1000.0;
//! let result = simulate(cfg).unwrap();
//! let mean = result.metrics.mean_response_s();
//! assert!((mean - 2.0).abs() < 0.3, "{mean}");
//! ```
//!
//! # Main types
//!
//! - [`SimConfig`], [`StageConfig`], [`StageNode`], [`SourceConfig`], [`Population`],
//!   [`Dist`]: what to run.
//! - [`simulate`]: runs it and returns a [`SimResult`] with [`Metrics`]: per-interval
//!   [`Bucket`]s (offered, admitted, rejected, expired, completed, goodput, response-time
//!   histogram, controller state) and whole-run totals after the warm-up, plus
//!   [`StageStats`] per stage.
//! - [`levers`]: stage 0's resource and termination levers: a pool whose size a sizer of
//!   seda-control's registry changes each control period (fixed, SEDA's heuristic, the
//!   self-tuning pool with global control, hill climbing; [`levers::PoolControl`]), emulated plants where threads matter
//!   ([`levers::Contention`]), a terminator cutting requests that run past its threshold, and
//!   shifts of the service mix. [`Population::Eager`] is the thesis's partly-open client.
//! - [`summary`]: the result vocabulary shared with the lab ([`summary::RunSummary`],
//!   [`summary::Series`], the settle time).
//! - [`scenarios`]: the seeds' overload experiments that `seda sim` runs, behind
//!   [`scenarios::Scenario`].
//!
//! # Accounting
//!
//! Every offered request ends exactly once: rejected (admission, queue bound or the client's
//! own window), expired (dropped at dequeue), terminated (cut in service), or completed. Only completed requests are
//! response-time samples; goodput counts those completed within the target whose client was
//! still waiting.
//!
//! # Speed
//!
//! Events live in a binary heap keyed by (time, sequence); requests are small `Copy` values in
//! a ring buffer, so the loop allocates nothing per event. `seda sim ... --json` prints the
//! events per second of each run.

#![warn(missing_docs)]

mod config;
mod dist;
mod engine;
pub mod levers;
pub mod metrics;
mod rng;
pub mod scenarios;
pub mod summary;

pub use config::{Population, SimConfig, SourceConfig, StageConfig, StageNode};
pub use dist::Dist;
pub use metrics::{Bucket, LogHistogram, Metrics};
pub use rng::Rng;

/// What a run produced.
#[derive(Debug, Clone)]
pub struct SimResult {
    /// The admission controller's name ("none" without one).
    pub controller: &'static str,
    /// The measurements.
    pub metrics: Metrics,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Per-stage counts over the whole run (stage 0 first).
    pub stages: Vec<StageStats>,
    /// Stage 0's control periods when a lever is on ([`SimConfig::levers`]).
    pub periods: Vec<levers::Period>,
    /// The pool controller's mean one-step ARX prediction error, if it fits a model.
    pub arx_error: Option<f64>,
}

/// What happened at one stage over a whole run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageStats {
    /// Requests that reached the stage.
    pub arrived: u64,
    /// Requests its admission (or queue bound) refused.
    pub rejected: u64,
    /// Admitted requests dropped at dequeue.
    pub expired: u64,
    /// Requests it served.
    pub served: u64,
    /// Requests cut in service by the terminator.
    pub terminated: u64,
    /// End-to-end response times of the requests that left the graph from this stage.
    pub exits: LogHistogram,
}

impl SimResult {
    /// Events processed per wall-clock second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.wall_s.max(1e-9)
    }
}

/// Runs `cfg` to completion.
pub fn simulate(cfg: SimConfig) -> Result<SimResult, String> {
    engine::run(cfg)
}

/// Seconds to whole nanoseconds of virtual time (saturating; negatives become 0).
#[inline]
pub(crate) fn secs_to_ns(s: f64) -> u64 {
    if s.is_nan() || s <= 0.0 {
        0
    } else if s >= 1.8e10 {
        u64::MAX / 4
    } else {
        // `+ 0.5` then truncation rounds positive values without a libm call.
        (s * 1e9 + 0.5) as u64
    }
}
