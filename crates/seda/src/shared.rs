//! State shared by every stage of a runtime: the clock epoch and the shutdown flags.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::Time;

pub(crate) struct Shared {
    epoch: Instant,
    /// Stop admitting events from outside the graph (hand-offs between stages continue).
    draining: AtomicBool,
    /// Stop admitting anything.
    closed: AtomicBool,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Shared {
            epoch: Instant::now(),
            draining: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// `now` as controller time.
    pub(crate) fn time(&self, now: Instant) -> Time {
        now.saturating_duration_since(self.epoch)
    }

    /// Whether an enqueue from `source` (0: outside any stage) must be refused as closed.
    pub(crate) fn refuses(&self, source: usize) -> bool {
        self.closed.load(Ordering::Acquire)
            || (source == 0 && self.draining.load(Ordering::Acquire))
    }

    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}
