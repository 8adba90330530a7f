//! The hand-off between a producer that made work ready and a worker about to park.
//!
//! The protocol: the producer makes the event ready, issues a `SeqCst` fence, then looks for
//! parked workers and, if there is one, notifies under the park lock ([`Handoff::notify`]). The
//! worker, holding the park lock, announces itself as a sleeper, issues a `SeqCst` fence, looks
//! for ready work once more, and only then waits ([`Handoff::park`]). The two fences make it
//! impossible for both sides to miss each other. (Loom models `SeqCst` fences but not `SeqCst`
//! loads and stores, which is why the fence form is used: the model checks the same orderings
//! the code relies on.)
//!
//! `tests/loom_handoff.rs` compiles this file against loom's types (the `sync` shim) and
//! explores every interleaving of a producer and a parking worker.

use std::time::Duration;

use super::sync::{AtomicUsize, Condvar, Mutex, Ordering, fence};

/// How a [`Handoff::park`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Work (or a stop) was seen after announcing: the worker did not wait.
    Ready,
    /// A producer or a stop woke it.
    Woken,
    /// The idle time passed with no wake-up.
    TimedOut,
}

/// Parked workers and the lock and condition variable they wait on.
#[derive(Debug)]
pub(crate) struct Handoff {
    sleepers: AtomicUsize,
    park: Mutex,
    wake: Condvar,
}

impl Handoff {
    pub(crate) fn new() -> Self {
        Handoff {
            sleepers: AtomicUsize::new(0),
            park: Mutex::new(),
            wake: Condvar::new(),
        }
    }

    /// Wakes one parked worker, if any: called after work was made ready.
    ///
    /// The fence orders the push before the look at `sleepers` (see [`Handoff::park`]).
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            let _guard = self.park.lock();
            self.wake.notify_one();
        }
    }

    /// Wakes every parked worker (a stop, a resize).
    pub(crate) fn wake_all(&self) {
        let _guard = self.park.lock();
        self.wake.notify_all();
    }

    /// Parks the calling worker for at most `idle` unless `ready()`, checked after it has
    /// announced itself, says there is work (or a reason to stop).
    pub(crate) fn park(&self, ready: impl Fn() -> bool, idle: Duration) -> Parked {
        let guard = self.park.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `notify`: either we see the producer's work below, or it
        // sees us as a sleeper and wakes us.
        fence(Ordering::SeqCst);
        if ready() {
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            return Parked::Ready;
        }
        let (guard, timed_out) = self.wake.wait_timeout(guard, idle);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        if timed_out {
            Parked::TimedOut
        } else {
            Parked::Woken
        }
    }
}
