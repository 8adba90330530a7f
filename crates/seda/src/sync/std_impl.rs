//! The shim on parking_lot's lock and condition variable and std's atomics (see `mod.rs`).

use std::time::Duration;

pub(crate) use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// A lock protecting nothing but the wait: the state it orders lives in atomics.
#[derive(Debug, Default)]
pub(crate) struct Mutex(parking_lot::Mutex<()>);

/// The guard of [`Mutex`].
pub(crate) type MutexGuard<'a> = parking_lot::MutexGuard<'a, ()>;

impl Mutex {
    pub(crate) fn new() -> Self {
        Mutex(parking_lot::Mutex::new(()))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_> {
        self.0.lock()
    }
}

/// A condition variable waited on with a [`Mutex`]'s guard.
#[derive(Debug, Default)]
pub(crate) struct Condvar(parking_lot::Condvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(parking_lot::Condvar::new())
    }

    /// Waits for a notification or `timeout`; true if it timed out.
    pub(crate) fn wait_timeout<'a>(
        &self,
        mut guard: MutexGuard<'a>,
        timeout: Duration,
    ) -> (MutexGuard<'a>, bool) {
        let timed_out = self.0.wait_for(&mut guard, timeout).timed_out();
        (guard, timed_out)
    }

    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
