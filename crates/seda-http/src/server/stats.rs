//! The front end's counters, shown in `/_seda/stats`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

/// Live counters of the front end.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) open: AtomicUsize,
    /// Connections parked between requests (no hyper connection, no buffers).
    pub(crate) parked: AtomicUsize,
    pub(crate) accepted: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) rejected_requests: AtomicU64,
    pub(crate) unanswered: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) deadline_missed: AtomicU64,
    pub(crate) header_timeouts: AtomicU64,
    pub(crate) idle_closed: AtomicU64,
    pub(crate) body_too_large: AtomicU64,
    pub(crate) connection_errors: AtomicU64,
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// The counters now, with the `Retry-After` a refusal would get now.
    pub(crate) fn snapshot(&self, retry_after_s: u32) -> FrontendStats {
        FrontendStats {
            retry_after_s,
            open_connections: self.open.load(Ordering::Relaxed),
            parked_connections: self.parked.load(Ordering::Relaxed),
            accepted_connections: get(&self.accepted),
            refused_connections: get(&self.refused_connections),
            requests: get(&self.requests),
            rejected_requests: get(&self.rejected_requests),
            unanswered_requests: get(&self.unanswered),
            cancelled_requests: get(&self.cancelled),
            deadline_missed: get(&self.deadline_missed),
            header_timeouts: get(&self.header_timeouts),
            idle_closed: get(&self.idle_closed),
            body_too_large: get(&self.body_too_large),
            connection_errors: get(&self.connection_errors),
        }
    }
}

/// A snapshot of the front end's counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FrontendStats {
    /// The `Retry-After` a refusal gets now, seconds, at least: the configured base while
    /// refusals are few, up to 24 x it while they outnumber admissions; each refusal is told
    /// up to half as much again, within 24 x the base (spread so that refused clients do not
    /// return together).
    pub retry_after_s: u32,
    /// Connections open now.
    pub open_connections: usize,
    /// Open HTTP/1 connections parked between requests: idle keep-alive connections that hold
    /// only their socket and task (hyper's buffers are freed until the next bytes arrive).
    pub parked_connections: usize,
    /// Connections accepted and served since start.
    pub accepted_connections: u64,
    /// Connections answered 503 and closed because `max_connections` were open.
    pub refused_connections: u64,
    /// Requests whose head was parsed.
    pub requests: u64,
    /// Requests the first stage did not admit (answered 503).
    pub rejected_requests: u64,
    /// Admitted requests dropped without an answer (answered 503).
    pub unanswered_requests: u64,
    /// Requests whose client went away before the answer.
    pub cancelled_requests: u64,
    /// Requests answered 504 because their deadline (`grpc-timeout`, `x-seda-deadline-ms`)
    /// was spent on arrival or passed before they were served (not counted as rejected or
    /// unanswered).
    #[serde(default)]
    pub deadline_missed: u64,
    /// Connections cut off because a request head took too long (slowloris).
    pub header_timeouts: u64,
    /// Keep-alive connections closed after the idle timeout.
    pub idle_closed: u64,
    /// Requests answered 413 because of their body size.
    pub body_too_large: u64,
    /// Connections that ended with an I/O or protocol error.
    pub connection_errors: u64,
}
