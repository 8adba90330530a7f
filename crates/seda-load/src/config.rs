//! What to run: the loop model, the client's behaviour, recording options.

use std::sync::Arc;
use std::time::Duration;

use seda_control::{AimdWindowConfig, RetryBudgetConfig, ThrottleConfig};

use crate::workload::{UrlList, Workload};
use crate::{LoadError, Schedule, Target};

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Equal gaps.
    Constant,
}

/// Closed loop: a fixed population of users, each sending, waiting for the reply, thinking, and
/// sending again. Latency is from send to reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Closed {
    /// Number of users (when no schedule is given).
    pub users: usize,
    /// Think time between a reply and the next request.
    pub think: Duration,
    /// Draw think times from an exponential distribution with mean `think` instead.
    pub think_exponential: bool,
    /// Start users gradually over this time (ignored when a schedule is given).
    pub ramp: Duration,
}

/// Open loop: requests arrive at a rate, whatever the server does. Latency is measured from the
/// *intended* send time, so a stalled server shows up in the tail (no coordinated omission).
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    /// Requests per second (when no schedule is given).
    pub rate_per_s: f64,
    /// Poisson or constant arrivals.
    pub arrivals: Arrivals,
    /// Most connections opened (one request outstanding on each).
    pub max_connections: usize,
    /// Most due requests waiting for a free connection; beyond it they are counted as dropped.
    pub max_backlog: usize,
}

/// Partly-open: sessions arrive as a Poisson process; after each reply a session stays with
/// probability `stay_probability`, thinks, and sends again (Schroeder et al., NSDI'06).
#[derive(Debug, Clone, PartialEq)]
pub struct PartlyOpen {
    /// Session arrivals per second (when no schedule is given).
    pub sessions_per_s: f64,
    /// Probability of sending another request after a reply.
    pub stay_probability: f64,
    /// Think time between requests of a session.
    pub think: Duration,
    /// Most concurrent sessions; arrivals beyond it are counted as dropped.
    pub max_sessions: usize,
}

/// The thesis's partly-open clients (FAIR07 Section 5.2): a fixed population of users, each
/// sending its next request when its reply arrives (after `think`) or when a time drawn
/// uniformly from `[patience_min, patience_max]` has passed since it sent, whichever is first.
/// A slow server thus sees more requests, not fewer: each user may have up to
/// `max_outstanding` requests in flight, each on its own connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Eager {
    /// Number of users (when no schedule is given).
    pub users: usize,
    /// Shortest expected time between a send and the next.
    pub patience_min: Duration,
    /// Longest expected time between a send and the next.
    pub patience_max: Duration,
    /// Think time after a reply that came in time.
    pub think: Duration,
    /// Most requests one user has in flight; at it, the user waits for a reply.
    pub max_outstanding: usize,
}

impl Eager {
    /// Default most requests in flight per user.
    pub const DEFAULT_MAX_OUTSTANDING: usize = 8;
}

/// The loop model.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// See [`Closed`].
    Closed(Closed),
    /// See [`Open`].
    Open(Open),
    /// See [`PartlyOpen`].
    PartlyOpen(PartlyOpen),
    /// See [`Eager`].
    Eager(Eager),
}

/// How each client behaves on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// Requests per connection before the client closes it (0: no limit).
    pub requests_per_connection: u32,
    /// Time allowed to establish a connection.
    pub connect_timeout: Duration,
    /// Per-request deadline, from the intended send time; past it the request counts as a
    /// timeout and its connection is closed.
    pub deadline: Duration,
    /// After a `503`, wait this long and start over (the session's `restart`), on the same
    /// connection if the server kept it open, as a browser does. (Reconnecting after every 503
    /// made each rejection cost the server a TCP accept and close as well: at 1024 mail users,
    /// 51,532 connections for 56,595 requests.) `None`: carry on at once.
    pub backoff_on_503: Option<Duration>,
    /// With [`backoff_on_503`](Self::backoff_on_503), honour a 503's `Retry-After` where it
    /// asks for longer: wait its seconds times this scale (1: as sent; the lab's scaled-down
    /// experiments shrink it as they shrink the wait), at most [`MAX_RETRY_AFTER`] before
    /// scaling. `None`: the fixed backoff only.
    pub retry_after_scale: Option<f64>,
    /// Pause after a connection or protocol error before trying again (so a dead server is not
    /// hammered in a tight loop). Closed model only.
    pub error_pause: Duration,
    /// Limit outstanding requests with SSM's AIMD window (seda-control's `AimdWindow`).
    pub aimd: Option<AimdWindowConfig>,
    /// With [`aimd`](Self::aimd), refuse a request that finds the window full at once, as
    /// SSM's stub does (counted in [`Counts::rejected`](crate::record::Counts) and
    /// [`Counts::refused`](crate::record::Counts)), instead of waiting for a slot. Open model
    /// only: under an open overload, waiting grows the queue at the gate until every request
    /// sent has spent its whole deadline there (SSM04: "under overload, requests are rejected
    /// instead of allowing latency to increase").
    pub aimd_reject_when_full: bool,
    /// Throttle adaptively, as Google's clients do (seda-control's `AdaptiveThrottle`): each
    /// request is refused here, never sent, with probability `max(0, (requests - K x
    /// accepts) / (requests + 1))` over the throttle's window, `accepts` the replies that were
    /// not a 503 (counted in [`Counts::refused`](crate::record::Counts) as the AIMD stub's are).
    /// A closed-model user refused this way waits as after a 503 ([`backoff_on_503`](
    /// Self::backoff_on_503)), or [`error_pause`](Self::error_pause) without one.
    pub throttle: Option<ThrottleConfig>,
    /// Send a request the server refused (`503`) again at once, up to this many times: a
    /// client with retries (gRPC's `maxAttempts` - 1), which makes a retry storm of an
    /// overload unless a [`retry_budget`](Self::retry_budget) bounds it. 0: no retries.
    pub retries: u32,
    /// Retry at most a share of the requests sent (seda-control's `RetryBudget`: 10% by
    /// default); a retry it does not allow ends the request refused.
    pub retry_budget: Option<RetryBudgetConfig>,
    /// Largest response head accepted.
    pub max_header_bytes: usize,
    /// Largest response body accepted.
    pub max_body_bytes: u64,
}

/// Most retries of one request ([`ClientConfig::retries`]): gRPC caps attempts at 5.
pub const MAX_RETRIES: u32 = 10;

/// The longest `Retry-After` a client honours: a server cannot park a user for longer.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

impl ClientConfig {
    /// How long to wait after a 503 that carried `retry_after_s` (`None`: carry on at once).
    pub fn wait_after_503(&self, retry_after_s: Option<u32>) -> Option<Duration> {
        let backoff = self.backoff_on_503?;
        let asked = match (self.retry_after_scale, retry_after_s) {
            // A scale `validate` refuses never panics here.
            (Some(scale), Some(s)) if scale.is_finite() && scale > 0.0 => {
                Duration::from_secs(s.into())
                    .min(MAX_RETRY_AFTER)
                    .mul_f64(scale.min(1e3))
            }
            _ => Duration::ZERO,
        };
        Some(backoff.max(asked))
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            requests_per_connection: 0,
            connect_timeout: Duration::from_secs(3),
            deadline: Duration::from_secs(10),
            backoff_on_503: None,
            retry_after_scale: None,
            error_pause: Duration::from_millis(100),
            aimd: None,
            aimd_reject_when_full: false,
            throttle: None,
            retries: 0,
            retry_budget: None,
            max_header_bytes: 64 * 1024,
            max_body_bytes: 256 * 1024 * 1024,
        }
    }
}

/// A complete description of a run.
#[derive(Clone)]
pub struct LoadConfig {
    /// Where to connect (its path is only used by workloads built from it).
    pub target: Target,
    /// The loop model.
    pub model: Model,
    /// Users or rate over time; overrides the model's fixed level.
    pub schedule: Option<Schedule>,
    /// Length of the measured run.
    pub duration: Duration,
    /// Load applied before the measured run and not recorded (Haboob's client used 20 s).
    /// Schedules count time from the start of the warm-up.
    pub warmup: Duration,
    /// What to request.
    pub workload: Arc<dyn Workload>,
    /// Client behaviour.
    pub client: ClientConfig,
    /// Reporting interval.
    pub interval: Duration,
    /// Goodput counts requests completed within this.
    pub goodput_target: Duration,
    /// Print a live progress line on stderr.
    pub progress: bool,
    /// Pin the generator's thread to this CPU.
    pub cpu: Option<usize>,
    /// Seed for every random choice.
    pub seed: u64,
    /// Open and partly-open models: wait for each arrival on a timerfd, which wakes within tens
    /// of microseconds (at most once per 100 µs, so an arrival may leave up to ~100 µs late). Off: sleep on the tokio timer, whose 1 ms ticks make arrivals up to
    /// ~2 ms late, a lateness counted in the latency (measured from the intended time).
    pub precise_pacing: bool,
    /// Keep each interval's latency histogram (about 180 KB each) for
    /// [`Report::latency_between`](crate::Report::latency_between): percentiles over a span of
    /// the run, such as "after the controller settled".
    pub keep_interval_histograms: bool,
}

impl LoadConfig {
    /// A 10 s run of `model` requesting the target's path, with default client settings.
    pub fn new(target: Target, model: Model) -> Result<LoadConfig, LoadError> {
        let workload = Arc::new(UrlList::new(vec![target.path.clone()])?);
        Ok(LoadConfig {
            target,
            model,
            schedule: None,
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            workload,
            client: ClientConfig::default(),
            interval: Duration::from_secs(1),
            goodput_target: Duration::from_millis(100),
            progress: false,
            cpu: None,
            seed: 1,
            precise_pacing: true,
            keep_interval_histograms: false,
        })
    }

    /// The schedule in force: the given one, or the model's fixed level (with the closed
    /// model's ramp).
    pub fn effective_schedule(&self) -> Result<Schedule, LoadError> {
        if let Some(s) = &self.schedule {
            return Ok(s.clone());
        }
        match &self.model {
            Model::Closed(c) if !c.ramp.is_zero() => Schedule::ramp(c.users as f64, c.ramp),
            Model::Closed(c) => Schedule::constant(c.users as f64),
            Model::Open(o) => Schedule::constant(o.rate_per_s),
            Model::PartlyOpen(p) => Schedule::constant(p.sessions_per_s),
            Model::Eager(e) => Schedule::constant(e.users as f64),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), LoadError> {
        let bad = |m: &str| Err(LoadError::BadConfig(m.into()));
        if self.duration.is_zero() {
            return bad("the duration must be positive");
        }
        if self.interval.is_zero() {
            return bad("the reporting interval must be positive");
        }
        if self.duration.as_secs_f64() / self.interval.as_secs_f64() > 1_000_000.0 {
            return bad("more than 1,000,000 reporting intervals: lengthen --interval");
        }
        if self.client.deadline.is_zero() || self.client.connect_timeout.is_zero() {
            return bad("the deadline and connect timeout must be positive");
        }
        if self
            .client
            .retry_after_scale
            .is_some_and(|s| !(s.is_finite() && s > 0.0))
        {
            return bad("the Retry-After scale must be a positive number");
        }
        if let Some(t) = &self.client.throttle
            && let Err(e) = t.validate()
        {
            return bad(&format!("the throttle: {e}"));
        }
        if let Some(b) = &self.client.retry_budget
            && let Err(e) = b.validate()
        {
            return bad(&format!("the retry budget: {e}"));
        }
        if self.client.retries > MAX_RETRIES {
            return bad(&format!("at most {MAX_RETRIES} retries of a request"));
        }
        match &self.model {
            Model::Closed(c) if c.users > 1_000_000 => bad("at most 1,000,000 users"),
            Model::Open(o) if !(o.rate_per_s.is_finite() && o.rate_per_s >= 0.0) => {
                bad("the rate must be a non-negative number")
            }
            Model::Open(o) if !(1..=1_000_000).contains(&o.max_connections) => {
                bad("max connections must be 1 to 1,000,000")
            }
            Model::PartlyOpen(p) if !(0.0..=1.0).contains(&p.stay_probability) => {
                bad("the stay probability must be between 0 and 1")
            }
            Model::PartlyOpen(p) if !(1..=1_000_000).contains(&p.max_sessions) => {
                bad("max sessions must be 1 to 1,000,000")
            }
            Model::PartlyOpen(p) if !(p.sessions_per_s.is_finite() && p.sessions_per_s >= 0.0) => {
                bad("the session rate must be a non-negative number")
            }
            Model::Eager(e) if e.users > 1_000_000 => bad("at most 1,000,000 users"),
            Model::Eager(e) if e.patience_max < e.patience_min || e.patience_max.is_zero() => {
                bad("the expected time must be positive, with min <= max")
            }
            Model::Eager(e) if !(1..=1024).contains(&e.max_outstanding) => {
                bad("max outstanding requests per user must be 1 to 1024")
            }
            _ => Ok(()),
        }?;
        if self.client.aimd_reject_when_full && !matches!(self.model, Model::Open(_)) {
            return bad("refusing requests when the AIMD window is full needs the open model");
        }
        if matches!(self.model, Model::Closed(_) | Model::Eager(_))
            && self.effective_schedule()?.max_level() > 1_000_000.0
        {
            return bad("a schedule for the closed model asks for more than 1,000,000 users");
        }
        Ok(())
    }

    /// A one-line description of the model for reports.
    pub fn describe(&self) -> String {
        let sched = if self.schedule.is_some() {
            " (scheduled)"
        } else {
            ""
        };
        match &self.model {
            Model::Closed(c) => format!(
                "closed: {} users{sched}, think {:?}{}",
                c.users,
                c.think,
                if c.think_exponential {
                    " (exponential)"
                } else {
                    ""
                }
            ),
            Model::Open(o) => format!(
                "open: {} req/s{sched} ({:?} arrivals), up to {} connections",
                o.rate_per_s, o.arrivals, o.max_connections
            ),
            Model::PartlyOpen(p) => format!(
                "partly-open: {} sessions/s{sched}, stay {}, think {:?}, up to {} sessions",
                p.sessions_per_s, p.stay_probability, p.think, p.max_sessions
            ),
            Model::Eager(e) => format!(
                "eager (FAIR07 partly-open): {} users{sched}, expected time {:?} to {:?}, \
                 think {:?}, up to {} in flight each",
                e.users, e.patience_min, e.patience_max, e.think, e.max_outstanding
            ),
        }
    }
}
