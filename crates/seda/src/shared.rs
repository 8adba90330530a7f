//! State shared by every stage of a runtime: the clock epoch, the count of events in flight,
//! and the shutdown flags.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::Time;

/// Keeps a hot atomic on its own cache line.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

pub(crate) struct Shared {
    epoch: Instant,
    /// Events admitted to some stage and not yet handled or dropped.
    in_flight: Padded<AtomicUsize>,
    /// Stop admitting events from outside the graph (hand-offs between stages continue).
    draining: AtomicBool,
    /// Stop admitting anything.
    closed: AtomicBool,
    quiet: Mutex<()>,
    quiet_cv: Condvar,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Shared {
            epoch: Instant::now(),
            in_flight: Padded::default(),
            draining: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            quiet: Mutex::new(()),
            quiet_cv: Condvar::new(),
        }
    }

    /// `now` as controller time.
    pub(crate) fn time(&self, now: Instant) -> Time {
        now.saturating_duration_since(self.epoch)
    }

    /// Whether an enqueue from `source` (0: outside any stage) must be refused as closed.
    pub(crate) fn refuses(&self, source: usize) -> bool {
        self.closed.load(Ordering::Acquire) || (source == 0 && self.draining.load(Ordering::Acquire))
    }

    pub(crate) fn begin(&self, n: usize) {
        self.in_flight.0.fetch_add(n, Ordering::SeqCst);
    }

    pub(crate) fn finish(&self, n: usize) {
        if n == 0 {
            return;
        }
        let before = self.in_flight.0.fetch_sub(n, Ordering::SeqCst);
        if before == n && self.draining.load(Ordering::SeqCst) {
            let _guard = self.quiet.lock();
            self.quiet_cv.notify_all();
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.0.load(Ordering::SeqCst)
    }

    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Waits until nothing is in flight or `timeout` passes; true when quiet.
    pub(crate) fn wait_quiet(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut guard = self.quiet.lock();
        loop {
            if self.in_flight() == 0 {
                return true;
            }
            // Re-check periodically too: the last finish may race with our first look.
            let step = Instant::now() + Duration::from_millis(10);
            let until = deadline.map_or(step, |d| d.min(step));
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            self.quiet_cv.wait_until(&mut guard, until);
        }
    }
}
