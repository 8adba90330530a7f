//! A request's deadline at the front end: the budget an upstream tier sent (`grpc-timeout` or
//! `x-seda-deadline-ms`, read by `seda_tower`'s parser so every tier reads it alike) becomes
//! the request's [`Meta::deadline`](seda::Meta), so the stages drop it, unserved, if it is
//! still queued when nobody waits for it any more ([WC03]'s runtime drops expired events at
//! enqueue and at dequeue). A budget already spent is answered at once, before the body is
//! read or any stage sees it.
//!
//! A malformed value is ignored (the request has no deadline), as the tower layer does.

use std::time::Instant;

use http::{HeaderMap, HeaderValue, StatusCode};
use seda_tower::{DEADLINE, budget_from_headers};

use crate::request::{Body, REASON_HEADER, text};

/// What the headers say of a request's deadline.
pub(crate) enum Door {
    /// No budget came (or only a malformed one).
    Open,
    /// The request must be answered by then, or dropped.
    Until(Instant),
    /// The budget is spent: answer [`missed`] now.
    Spent,
}

/// Reads the deadline of a request born at `born`.
pub(crate) fn read(headers: &HeaderMap, born: Instant) -> Door {
    match budget_from_headers(headers).0 {
        None => Door::Open,
        Some(b) if b.is_zero() => Door::Spent,
        Some(b) => Door::Until(born + b),
    }
}

/// Whether `deadline` has passed: the reason a request went unanswered.
pub(crate) fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The answer to a request whose deadline passed before it was served: `504` with
/// `x-seda-reject: deadline`, as the tower layer answers, and no `Retry-After` (the same
/// request retried has even less time).
pub(crate) fn missed() -> http::Response<Body> {
    let mut r = text(
        StatusCode::GATEWAY_TIMEOUT,
        "504 Gateway Timeout: the request's deadline passed before it could be served.\n",
    );
    r.headers_mut()
        .insert(REASON_HEADER, HeaderValue::from_static(DEADLINE));
    r
}
