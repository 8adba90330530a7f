//! A request's deadline as its handler sees it, and how it travels to the next tier.

use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue};

use super::parse::{DEADLINE_HEADER, GRPC_TIMEOUT, MAX_BUDGET};

/// What [`RequestDeadline::propagate`] keeps back from the budget it sends on: the time for
/// the downstream answer to travel back and for this tier to finish its own work with it.
/// A hop inside a data centre costs well under a millisecond; 5 ms leaves room for a short
/// reply to be read and written on a loaded host. A tier whose work after the call is longer
/// keeps back more with [`propagate_with`](RequestDeadline::propagate_with).
pub const PROPAGATION_ALLOWANCE: Duration = Duration::from_millis(5);

/// The deadline of a request the layer admitted, in the request's extensions (axum:
/// `Extension<RequestDeadline>`) when the layer reads deadlines
/// ([`HttpSedaLayer::deadlines`](crate::HttpSedaLayer::deadlines)).
///
/// It is a point on this host's monotonic clock, made from the budget the request brought
/// (or the route's default) when the layer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestDeadline {
    at: Instant,
    /// The request came with `grpc-timeout`: the next tier may be a gRPC server too.
    grpc: bool,
}

impl RequestDeadline {
    /// A deadline `budget` from now (clamped to [`MAX_BUDGET`](crate::MAX_BUDGET)).
    pub fn after(budget: Duration) -> Self {
        Self::starting(Instant::now(), budget, false)
    }

    pub(crate) fn starting(now: Instant, budget: Duration, grpc: bool) -> Self {
        RequestDeadline {
            at: now + budget.min(MAX_BUDGET),
            grpc,
        }
    }

    /// When the deadline passes, on this host's monotonic clock.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// The budget left now; zero once the deadline has passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn has_passed(&self) -> bool {
        self.remaining().is_zero()
    }

    /// Writes the budget left, less [`PROPAGATION_ALLOWANCE`], into an outgoing request's
    /// headers so the next tier works to the same deadline: [`DEADLINE_HEADER`](crate::DEADLINE_HEADER)
    /// always, and `grpc-timeout` too when this request came with one. Returns the budget
    /// written; zero means the call cannot finish in time and is better not made (the next
    /// tier would refuse it at once).
    pub fn propagate(&self, headers: &mut HeaderMap) -> Duration {
        self.propagate_with(headers, PROPAGATION_ALLOWANCE)
    }

    /// [`propagate`](Self::propagate), keeping back `allowance` instead of the default.
    pub fn propagate_with(&self, headers: &mut HeaderMap, allowance: Duration) -> Duration {
        let budget = self.remaining().saturating_sub(allowance);
        // Whole milliseconds, rounded down: never more than is left.
        let ms = budget.as_millis().min(u128::from(u64::MAX)) as u64;
        headers.insert(DEADLINE_HEADER, HeaderValue::from(ms));
        if self.grpc {
            // At most 8 digits: MAX_BUDGET is 86,400,000 ms.
            if let Ok(v) = HeaderValue::from_str(&format!("{ms}m")) {
                headers.insert(GRPC_TIMEOUT, v);
            }
        }
        Duration::from_millis(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::parse::{budget_from_headers, parse_deadline_ms};

    #[test]
    fn propagation_sends_less_than_is_left_and_reads_back() {
        let d = RequestDeadline::after(Duration::from_millis(800));
        let mut h = HeaderMap::new();
        let sent = d.propagate(&mut h);
        assert!(sent <= Duration::from_millis(795), "{sent:?}");
        assert_eq!(parse_deadline_ms(h[DEADLINE_HEADER].as_bytes()), Ok(sent));
        assert!(!h.contains_key(GRPC_TIMEOUT));

        let grpc = RequestDeadline::starting(Instant::now(), Duration::from_secs(2), true);
        let sent = grpc.propagate_with(&mut h, Duration::from_millis(500));
        assert!(sent <= Duration::from_millis(1500), "{sent:?}");
        assert_eq!(budget_from_headers(&h), (Some(sent), None));
        assert_eq!(h[GRPC_TIMEOUT], format!("{}m", sent.as_millis()).as_str());
    }

    #[test]
    fn a_passed_deadline_propagates_zero() {
        let d = RequestDeadline::after(Duration::ZERO);
        assert!(d.has_passed());
        let mut h = HeaderMap::new();
        assert_eq!(d.propagate(&mut h), Duration::ZERO);
        assert_eq!(h[DEADLINE_HEADER], "0");
    }
}
