//! The layer's clock: the time since a layer was made, read twice per admitted request (at
//! admission and at completion).
//!
//! `Instant::now()` is a `clock_gettime` call, 30 to 50 ns on the virtual machines the project
//! measured (`seda`'s queue stamps met the same cost, `crates/seda/src/clock.rs`), and the
//! layer's budget is 0.2 us per request. The layer reads the CPU's
//! time-stamp counter through `quanta` instead (calibrated against the OS clock once per
//! process; it falls back to the OS clock where the counter is not reliable). Every time the
//! controllers, the terminator and the deadline prediction see comes from it; a request's
//! [`RequestDeadline`](crate::RequestDeadline), which users see and send on, stays a
//! `std::time::Instant`.

use std::sync::OnceLock;
use std::time::Duration;

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A point on the layer's clock, the zero its times count from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch(u64);

impl Epoch {
    /// Now, as the zero of a layer's times.
    pub(crate) fn now() -> Self {
        Epoch(clock().raw())
    }

    /// The time since this epoch (zero if the counter reads earlier, as two cores' counters
    /// may by a few cycles).
    pub(crate) fn elapsed(&self) -> Duration {
        let c = clock();
        Duration::from_nanos(c.delta_as_nanos(self.0, c.raw()))
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
