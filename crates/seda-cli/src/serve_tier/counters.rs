//! A tier's counters: relaxed atomics bumped on the request path, read into
//! [`TierStats`] by `GET /_tier/stats`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use seda_lab::tier_stats::TierStats;

/// What happened below, for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Below {
    /// Answered 2xx.
    Ok,
    /// Answered 503: a tier below refused.
    Refused,
    /// Answered 504, or not within the request's budget.
    Deadline,
    /// No answer or another error.
    Failed,
}

/// The counters behind [`TierStats`].
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    refused_at_door: AtomicU64,
    worked: AtomicU64,
    work_us: AtomicU64,
    wasted_us: AtomicU64,
    ok: AtomicU64,
    refused: AtomicU64,
    deadline: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    cancelled_in_call: AtomicU64,
    calls: AtomicU64,
    retries: AtomicU64,
    retries_denied: AtomicU64,
    throttled: AtomicU64,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

impl Counters {
    pub fn arrived(&self) {
        self.requests.fetch_add(1, Relaxed);
    }

    pub fn refused_at_door(&self) {
        self.refused_at_door.fetch_add(1, Relaxed);
    }

    /// Own work of `spent`, whole (`finished`) or cut short.
    pub fn worked(&self, spent: Duration, finished: bool) {
        self.work_us.fetch_add(us(spent), Relaxed);
        if finished {
            self.worked.fetch_add(1, Relaxed);
        }
    }

    /// `spent` of own work went to a request that did not succeed below.
    pub fn wasted(&self, spent: Duration) {
        self.wasted_us.fetch_add(us(spent), Relaxed);
    }

    pub fn below(&self, below: Below) {
        let c = match below {
            Below::Ok => &self.ok,
            Below::Refused => &self.refused,
            Below::Deadline => &self.deadline,
            Below::Failed => &self.failed,
        };
        c.fetch_add(1, Relaxed);
    }

    pub fn cancelled(&self, in_call: bool) {
        self.cancelled.fetch_add(1, Relaxed);
        if in_call {
            self.cancelled_in_call.fetch_add(1, Relaxed);
        }
    }

    /// A call sent below, a retry of a refused one or not.
    pub fn called(&self, retry: bool) {
        self.calls.fetch_add(1, Relaxed);
        if retry {
            self.retries.fetch_add(1, Relaxed);
        }
    }

    /// A retry the retry budget did not allow.
    pub fn retry_denied(&self) {
        self.retries_denied.fetch_add(1, Relaxed);
    }

    /// A call the adaptive throttle refused here, never sent.
    pub fn throttled(&self) {
        self.throttled.fetch_add(1, Relaxed);
    }

    pub fn snapshot(&self, window: Option<f64>, admission_level: Option<String>) -> TierStats {
        let ms = |c: &AtomicU64| c.load(Relaxed) as f64 / 1000.0;
        TierStats {
            requests: self.requests.load(Relaxed),
            refused_at_door: self.refused_at_door.load(Relaxed),
            worked: self.worked.load(Relaxed),
            work_ms: ms(&self.work_us),
            wasted_ms: ms(&self.wasted_us),
            downstream_ok: self.ok.load(Relaxed),
            downstream_refused: self.refused.load(Relaxed),
            downstream_deadline: self.deadline.load(Relaxed),
            downstream_failed: self.failed.load(Relaxed),
            cancelled: self.cancelled.load(Relaxed),
            cancelled_in_call: self.cancelled_in_call.load(Relaxed),
            calls: self.calls.load(Relaxed),
            retries: self.retries.load(Relaxed),
            retries_denied: self.retries_denied.load(Relaxed),
            throttled: self.throttled.load(Relaxed),
            window,
            admission_level,
        }
    }
}
