//! A layer's deadline settings, counters, and the check at the door.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use seda_control::InvalidConfig;

use super::parse::{HeaderBudget, MAX_BUDGET, read_headers};
use super::recent::Recent;
use super::request::RequestDeadline;

/// The [`REJECT_HEADER`](crate::REJECT_HEADER) value of a request refused or cut for its
/// deadline.
pub const DEADLINE: &str = "deadline";

/// How a layer treats deadlines ([`HttpSedaLayer::deadlines`](crate::HttpSedaLayer::deadlines)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    default_budget: Option<Duration>,
    predict: bool,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self::new()
    }
}

impl Deadlines {
    /// Read each request's budget from `grpc-timeout` or
    /// [`DEADLINE_HEADER`](crate::DEADLINE_HEADER); no budget for a request without one;
    /// refuse at the door what recent response times say cannot finish in time.
    pub fn new() -> Self {
        Deadlines {
            default_budget: None,
            predict: true,
        }
    }

    /// The budget of a request that brings none (the route's default).
    pub fn default_budget(mut self, budget: Duration) -> Self {
        self.default_budget = Some(budget);
        self
    }

    /// Whether to refuse at the door a request whose budget is below the 10th percentile of
    /// recent response times (on by default). Off, only requests whose deadline has already
    /// passed are refused; the others are cut when it passes.
    pub fn predict(mut self, on: bool) -> Self {
        self.predict = on;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), InvalidConfig> {
        match self.default_budget {
            Some(b) if b.is_zero() => Err(InvalidConfig::new(
                "default_budget",
                "must be above 0: a zero budget refuses every request",
            )),
            Some(b) if b > MAX_BUDGET => Err(InvalidConfig::new(
                "default_budget",
                format!("{b:?} is above the longest budget kept, {MAX_BUDGET:?}"),
            )),
            _ => Ok(()),
        }
    }
}

/// What a layer did with deadlines, in [`LayerStats::deadline`](crate::LayerStats::deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeadlineStats {
    /// Requests refused at the door because their deadline had already passed.
    pub refused_passed: u64,
    /// Requests refused at the door because their budget was below the prediction.
    pub refused_predicted: u64,
    /// Admitted requests whose deadline passed while they ran: their future was dropped and
    /// they were answered `504` (not counted as dropped or terminated).
    pub cut: u64,
    /// Requests whose deadline header was malformed (ignored; the default budget applied).
    pub malformed: u64,
    /// The prediction in force: the 10th percentile of recent response times (`None` before
    /// 16 responses, or when none came for 5 s).
    pub predicted: Option<Duration>,
}

/// Why a request was refused for its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Passed,
    Predicted,
}

/// One layer's deadline state, shared by every service it made.
pub(crate) struct DeadlineState {
    config: Deadlines,
    pub(crate) recent: Recent,
    refused_passed: AtomicU64,
    refused_predicted: AtomicU64,
    cut: AtomicU64,
    malformed: AtomicU64,
}

impl DeadlineState {
    pub(crate) fn new(config: Deadlines) -> Self {
        DeadlineState {
            config,
            recent: Recent::new(),
            refused_passed: AtomicU64::new(0),
            refused_predicted: AtomicU64::new(0),
            cut: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
        }
    }

    /// The door: the deadline of a request with `headers` arriving at `now` (the layer's
    /// clock: `since_epoch`), or why it is refused. `None`: the request has no deadline.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        since_epoch: Duration,
    ) -> Result<Option<RequestDeadline>, Refused> {
        let now = Instant::now();
        let HeaderBudget {
            budget: from_headers,
            error,
            grpc,
        } = read_headers(headers);
        if error.is_some() {
            self.malformed.fetch_add(1, Ordering::Relaxed);
        }
        let Some(budget) = from_headers.or(self.config.default_budget) else {
            return Ok(None);
        };
        if budget.is_zero() {
            self.refused_passed.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::Passed);
        }
        if self.config.predict
            && let Some(floor) = self.recent.floor(since_epoch)
            && budget < floor
        {
            self.refused_predicted.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::Predicted);
        }
        let grpc = from_headers.is_some() && grpc;
        Ok(Some(RequestDeadline::starting(now, budget, grpc)))
    }

    /// An admitted request's deadline passed while it ran.
    pub(crate) fn on_cut(&self) {
        self.cut.fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals and cuts so far: the loss a terminator is told of.
    pub(crate) fn refused_and_cut(&self) -> (u64, u64) {
        (
            self.refused_passed.load(Ordering::Relaxed)
                + self.refused_predicted.load(Ordering::Relaxed),
            self.cut.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn stats(&self, since_epoch: Duration) -> DeadlineStats {
        DeadlineStats {
            refused_passed: self.refused_passed.load(Ordering::Relaxed),
            refused_predicted: self.refused_predicted.load(Ordering::Relaxed),
            cut: self.cut.load(Ordering::Relaxed),
            malformed: self.malformed.load(Ordering::Relaxed),
            predicted: self.recent.floor(since_epoch),
        }
    }
}

/// `504 Gateway Timeout` with `x-seda-reject: deadline`, for a request refused or cut for its
/// deadline. 504 and not 503: the service may have room, but not in this request's time;
/// and no `Retry-After`, since the same request retried has even less time left.
pub(crate) fn deadline_response<RB: Default>() -> Response<RB> {
    let mut response = Response::new(RB::default());
    *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    response
        .headers_mut()
        .insert(crate::REJECT_HEADER, HeaderValue::from_static(DEADLINE));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::parse::DEADLINE_HEADER;

    fn headers(ms: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(DEADLINE_HEADER, HeaderValue::from_static(ms));
        h
    }

    #[test]
    fn the_door_refuses_passed_and_predicted_misses() {
        let s = DeadlineState::new(Deadlines::new());
        let t = Duration::from_secs(1);
        assert_eq!(s.check(&HeaderMap::new(), t), Ok(None));
        assert_eq!(s.check(&headers("0"), t), Err(Refused::Passed));
        assert!(s.check(&headers("50"), t).unwrap().is_some());
        for _ in 0..16 {
            s.recent.record(t, Duration::from_millis(200));
        }
        assert_eq!(s.check(&headers("50"), t), Err(Refused::Predicted));
        assert!(s.check(&headers("300"), t).unwrap().is_some());
        let st = s.stats(t);
        assert_eq!((st.refused_passed, st.refused_predicted), (1, 1));
        assert_eq!(st.predicted, Some(Duration::from_millis(200)));

        let off = DeadlineState::new(Deadlines::new().predict(false));
        for _ in 0..16 {
            off.recent.record(t, Duration::from_millis(200));
        }
        assert!(off.check(&headers("50"), t).unwrap().is_some());
    }

    #[test]
    fn the_default_budget_applies_and_a_malformed_header_is_counted() {
        let s = DeadlineState::new(Deadlines::new().default_budget(Duration::from_secs(2)));
        let t = Duration::ZERO;
        let d = s.check(&headers("soon"), t).unwrap().unwrap();
        assert!(d.remaining() > Duration::from_millis(1500));
        assert!(d.remaining() <= Duration::from_secs(2));
        assert_eq!(s.stats(t).malformed, 1);
        let err = Deadlines::new()
            .default_budget(Duration::ZERO)
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("above 0"), "{err}");
    }
}
