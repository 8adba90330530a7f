//! The layer's clock: the time since a layer was made, read twice per admitted request (at
//! admission and at completion).
//!
//! The layer's budget is 0.2 us per request, and `Instant::now()` is a `clock_gettime` call of
//! 30 to 50 ns; the layer reads seda-control's [`clock`](seda_control::clock) instead, the
//! CPU's time-stamp counter, as `seda`'s queue stamps do. Every time the
//! controllers, the terminator and the deadline prediction see comes from it; a request's
//! [`RequestDeadline`](crate::RequestDeadline), which users see and send on, stays a
//! `std::time::Instant`.

use std::time::Duration;

use seda_control::clock::{self, Stamp};

/// A point on the layer's clock, the zero its times count from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch(Stamp);

impl Epoch {
    /// Now, as the zero of a layer's times.
    pub(crate) fn now() -> Self {
        Epoch(clock::stamp())
    }

    /// The time since this epoch (zero if the counter reads earlier, as two cores' counters
    /// may by a few cycles).
    pub(crate) fn elapsed(&self) -> Duration {
        clock::between(self.0, clock::stamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_real_time() {
        let epoch = Epoch::now();
        let t = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let measured = epoch.elapsed();
        let real = t.elapsed();
        assert!(measured >= Duration::from_millis(18), "{measured:?}");
        assert!(
            measured <= real + Duration::from_millis(5),
            "{measured:?} vs {real:?}"
        );
    }
}
