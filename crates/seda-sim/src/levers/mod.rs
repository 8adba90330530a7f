//! Stage 0's resource and termination levers (FAIR07 Chapter 4, SERT06): a pool whose size a
//! controller changes every control period, an emulated plant where the number of threads
//! matters, and a terminator that cuts requests running past its threshold.
//!
//! The plants are emulated, not measured: on a 2-core machine a CPU-bound stage is saturated
//! by two threads, so the simulator models the two shapes that make pool sizing matter
//! ([`Contention`]): a stage that mostly waits on a backend with its own concurrency limit
//! (more threads help up to the limit, then nothing changes), and one whose requests slow each
//! other down past a knee (a lock or a bounded resource: too many threads lose throughput, an
//! interior optimum).

mod plan;

use std::time::Duration;

use seda_control::sizer::Sizer;
use seda_control::terminate::Terminator;

pub use plan::TargetPlan;

/// How service times grow with the number of busy servers: a request that starts while `busy`
/// servers (itself included) are busy takes `s x (1 + slope x max(0, busy - knee))`.
///
/// With `slope = 1 / knee` throughput is flat past the knee (an emulated blocking backend that
/// serves `knee` requests at a time: [`Contention::backend`]); with a larger slope it falls past
/// the knee (contention: an interior optimum at `knee` threads).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contention {
    /// Busy servers the plant takes without slowing down.
    pub knee: f64,
    /// Slow-down per busy server beyond the knee.
    pub slope: f64,
}

impl Contention {
    /// An emulated backend serving `limit` requests at once: waiting, not CPU, so more threads
    /// help up to `limit` and make no difference beyond.
    pub fn backend(limit: u32) -> Self {
        let knee = f64::from(limit.max(1));
        Contention {
            knee,
            slope: 1.0 / knee,
        }
    }

    /// The multiplier of a service time started with `busy` servers busy.
    pub fn factor(&self, busy: u32) -> f64 {
        1.0 + self.slope * (f64::from(busy) - self.knee).max(0.0)
    }

    /// Throughput of `servers` always-busy servers with mean service time `mean_s`.
    pub fn saturated_throughput(&self, servers: u32, mean_s: f64) -> f64 {
        f64::from(servers) / (mean_s * self.factor(servers))
    }
}

/// What the pool's controller sees at the end of a control period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolPeriod {
    /// End of the period, seconds of virtual time.
    pub now_s: f64,
    /// Its length.
    pub period_s: f64,
    /// Servers during the period.
    pub servers: u32,
    /// Requests stage 0 served in it.
    pub served: u64,
    /// Requests that reached stage 0 in it.
    pub arrived: u64,
    /// Stage 0's queue at its end.
    pub queue_len: usize,
    /// Mean response time of requests completed in it (0 if none).
    pub mean_response_s: f64,
    /// Their p90 (`None` if none).
    pub p90_response_s: Option<f64>,
}

impl PoolPeriod {
    /// Served per second.
    pub fn throughput_per_s(&self) -> f64 {
        self.served as f64 / self.period_s
    }

    /// Arrived per second.
    pub fn arrivals_per_s(&self) -> f64 {
        self.arrived as f64 / self.period_s
    }
}

/// The pool lever: a sizer of seda-control's registry
/// ([`catalogue::sizers::build`](seda_control::catalogue::sizers::build)) and, for one that
/// steers to a throughput target, where the target comes from.
pub struct PoolControl {
    /// The sizer.
    pub sizer: Box<dyn Sizer>,
    /// Its throughput target (`None`: the sizer finds its own size, or steers to the
    /// period's arrival rate).
    pub plan: Option<TargetPlan>,
    /// Most servers it may set (the engine clamps to `1..=max_servers`).
    pub max_servers: u32,
}

/// The termination lever: stage 0 is terminable; a request in service past
/// `terminator.threshold()` is cut, its server freed at that moment; it counts as terminated,
/// never as a latency sample.
pub struct Termination {
    /// The threshold's controller, fed each period with arrivals and losses.
    pub terminator: Box<dyn Terminator>,
}

/// Stage 0's levers; all off by default.
#[derive(Default)]
pub struct Levers {
    /// Service slows down with the number of busy servers.
    pub contention: Option<Contention>,
    /// The pool's size changes each period.
    pub pool: Option<PoolControl>,
    /// Requests running too long are cut.
    pub termination: Option<Termination>,
    /// The control period of the pool and the terminator (FAIR07 uses 2 s).
    pub period_s: f64,
    /// Changes of stage 0's service-time distribution: from each `(time_s, dist)` on (a shift
    /// in the request mix, SERT06's `sert-shift`). Before the first, the stage's own.
    pub phases: Vec<(f64, crate::Dist)>,
}

impl Levers {
    /// No lever, a 1 s period.
    pub fn new() -> Self {
        Levers {
            period_s: 1.0,
            ..Levers::default()
        }
    }

    /// Whether any lever needs the control period.
    pub(crate) fn active(&self) -> bool {
        self.pool.is_some() || self.termination.is_some()
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(self.period_s.is_finite() && self.period_s > 0.0) && self.active() {
            return Err(format!(
                "levers.period_s must be > 0, got {}",
                self.period_s
            ));
        }
        if let Some(c) = self.contention
            && !(c.knee.is_finite() && c.knee >= 0.0 && c.slope.is_finite() && c.slope >= 0.0)
        {
            return Err(format!("contention needs knee, slope >= 0, got {c:?}"));
        }
        for (t, d) in &self.phases {
            if !t.is_finite() {
                return Err(format!("a service phase needs a finite start, got {t}"));
            }
            d.validate()?;
        }
        if let Some(p) = &self.pool
            && !(1..=1_000_000).contains(&p.max_servers)
        {
            return Err(format!(
                "pool max_servers must be in 1..=1000000, got {}",
                p.max_servers
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Levers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Levers")
            .field("contention", &self.contention)
            .field("pool", &self.pool.as_ref().map(|p| p.sizer.name()))
            .field(
                "termination",
                &self.termination.as_ref().map(|t| t.terminator.threshold()),
            )
            .field("period_s", &self.period_s)
            .field("phases", &self.phases)
            .finish()
    }
}

/// One control period as the levers saw it (stage 0), in [`crate::SimResult::periods`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Period {
    /// End of the period.
    pub end_s: f64,
    /// Servers during it.
    pub servers: u32,
    /// Served per second.
    pub throughput_per_s: f64,
    /// Arrived per second.
    pub arrivals_per_s: f64,
    /// The pool controller's throughput target, if it has one.
    pub target_per_s: Option<f64>,
    /// The termination threshold for the next period, if stage 0 is terminable.
    pub threshold_s: Option<f64>,
    /// Requests cut in it.
    pub terminated: u64,
    /// p90 of requests completed in it.
    pub p90_s: Option<f64>,
}

/// Seconds of a threshold.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
