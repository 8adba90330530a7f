//! A cheap clock for time stamps on hot paths: `seda`'s queue stamps, and the tower layer's
//! admission and completion times.
//!
//! `Instant::now()` costs a `clock_gettime` call (30 to 50 ns on the virtual machines we
//! measured, about a third of an enqueue, and a sixth of the tower layer's 0.2 us budget), so
//! stamps read the CPU's time-stamp counter through `quanta` (calibrated against the OS clock
//! once per process; it falls back to the OS clock where the counter is not reliable). Request
//! birth times and deadlines stay `std::time::Instant`, which users see.

use std::sync::OnceLock;
use std::time::Duration;

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// An opaque reading of the stamp clock.
pub type Stamp = u64;

/// Reads the stamp clock.
pub fn stamp() -> Stamp {
    clock().raw()
}

/// Time from `earlier` to `later` (zero if `later` is not later).
pub fn between(earlier: Stamp, later: Stamp) -> Duration {
    if later <= earlier {
        return Duration::ZERO;
    }
    clock().delta(earlier, later)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_real_time() {
        let a = stamp();
        let t = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let b = stamp();
        let real = t.elapsed();
        let measured = between(a, b);
        assert!(measured >= Duration::from_millis(18), "{measured:?}");
        assert!(
            measured <= real + Duration::from_millis(5),
            "{measured:?} vs {real:?}"
        );
        assert_eq!(between(b, a), Duration::ZERO);
    }
}
