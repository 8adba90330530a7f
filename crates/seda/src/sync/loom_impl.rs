//! The shim on loom's types (see `mod.rs`). Loom's `wait_timeout` never times out, so a lost
//! wake-up shows as a deadlock in the model instead of hiding as latency.

use std::time::Duration;

pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering, fence};

/// A lock protecting nothing but the wait: the state it orders lives in atomics.
#[derive(Debug)]
pub(crate) struct Mutex(loom::sync::Mutex<()>);

/// The guard of [`Mutex`].
pub(crate) type MutexGuard<'a> = loom::sync::MutexGuard<'a, ()>;

impl Mutex {
    pub(crate) fn new() -> Self {
        Mutex(loom::sync::Mutex::new(()))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_> {
        // The lock guards no data, so a panic while it was held left nothing half-written.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A condition variable waited on with a [`Mutex`]'s guard.
#[derive(Debug)]
pub(crate) struct Condvar(loom::sync::Condvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(loom::sync::Condvar::new())
    }

    /// Waits for a notification (loom models no timeout); never reports a time-out.
    pub(crate) fn wait_timeout<'a>(
        &self,
        guard: MutexGuard<'a>,
        timeout: Duration,
    ) -> (MutexGuard<'a>, bool) {
        match self.0.wait_timeout(guard, timeout) {
            Ok((g, r)) => (g, r.timed_out()),
            Err(e) => {
                let (g, r) = e.into_inner();
                (g, r.timed_out())
            }
        }
    }

    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
