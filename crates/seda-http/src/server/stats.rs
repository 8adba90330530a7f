//! The front end's live counters; their snapshot is [`FrontendStats`], a part of the
//! `/_seda/stats` document (in `admin/stats.rs`, beside the document).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::admin::FrontendStats;

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
