//! A tower retry policy that honours gRPC server pushback (gRPC A6, "Pushback").
//!
//! tonic's client does not retry by itself. This policy, under `tower::retry::Retry`, retries a
//! call that failed with a retryable code (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`), as A6 says:
//! a `grpc-retry-pushback-ms` of `n >= 0` means "retry after n ms" and replaces the backoff
//! (which starts over from its initial value); a negative or unreadable one means "do not
//! retry"; without one, the wait is the exponential backoff. At most `max_attempts` calls in
//! all. (A6's backoff is random in `[0, backoff]`; this one waits the whole backoff, to keep
//! the example free of a random source.)
//!
//! Shared with `tests/tower/grpc.rs` (`#[path]`), so the test runs the example's own policy.

use std::time::Duration;

use tonic::{Code, Status};
use tower::retry::Policy;

/// The metadata key of the server's pushback.
pub const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// What a failed call's server said about retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushback {
    /// Nothing: the backoff decides.
    Unsaid,
    /// Retry after this long.
    After(Duration),
    /// Do not retry (a negative or unreadable value).
    Refused,
}

impl Pushback {
    /// The pushback `status` carries.
    pub fn of(status: &Status) -> Self {
        let Some(value) = status.metadata().get(PUSHBACK) else {
            return Pushback::Unsaid;
        };
        match value.to_str().ok().and_then(|s| s.parse::<i64>().ok()) {
            Some(ms) if ms >= 0 => Pushback::After(Duration::from_millis(ms.unsigned_abs())),
            _ => Pushback::Refused,
        }
    }
}

/// Retries retryable failures, waiting the server's pushback or the backoff.
#[derive(Debug, Clone)]
pub struct PushbackPolicy {
    /// Calls left, the one under way included.
    attempts_left: u32,
    initial_backoff: Duration,
    backoff: Duration,
    max_backoff: Duration,
}

impl PushbackPolicy {
    /// At most `max_attempts` calls (the first included), backing off from `initial_backoff`,
    /// doubling up to 60 x it, where the server gives no pushback.
    pub fn new(max_attempts: u32, initial_backoff: Duration) -> Self {
        PushbackPolicy {
            attempts_left: max_attempts.max(1),
            initial_backoff,
            backoff: initial_backoff,
            max_backoff: initial_backoff * 60,
        }
    }

    /// How long to wait before retrying after `status`, or `None` not to retry.
    pub fn wait_after(&mut self, status: &Status) -> Option<Duration> {
        if !matches!(status.code(), Code::ResourceExhausted | Code::Unavailable)
            || self.attempts_left <= 1
        {
            return None;
        }
        let wait = match Pushback::of(status) {
            Pushback::Refused => return None,
            Pushback::After(wait) => {
                self.backoff = self.initial_backoff;
                wait
            }
            Pushback::Unsaid => {
                let wait = self.backoff;
                self.backoff = (self.backoff * 2).min(self.max_backoff);
                wait
            }
        };
        self.attempts_left -= 1;
        Some(wait)
    }
}

impl<Req: Clone, Res> Policy<Req, Res, Status> for PushbackPolicy {
    type Future = tokio::time::Sleep;

    fn retry(&mut self, _req: &mut Req, result: &mut Result<Res, Status>) -> Option<Self::Future> {
        let status = result.as_ref().err()?;
        self.wait_after(status).map(tokio::time::sleep)
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}
