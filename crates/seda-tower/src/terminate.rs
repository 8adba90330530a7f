//! Termination in the layer (SERT06): a request running past the terminator's threshold has
//! its inner future dropped and is answered as terminated.
//!
//! In a tower service the request's future *is* its resources: the database connection it
//! borrowed, the lock guard it holds, the buffers it filled. Dropping the future releases them
//! (a pooled connection goes back, a transaction not committed rolls back), which is the safe
//! release SERT needs; the layer has no safe points to wait for, as a seda stage's handler
//! does, because every `.await` is one.
//!
//! The threshold comes from one of `seda_control::terminate`'s controllers (SERT's adaptive
//! threshold, a fixed statement timeout, a percentile timeout), fed as the runtime feeds a
//! terminable stage: the running time of every completed request, and once per
//! [`TERMINATION_PERIOD`] the period's arrivals and its loss (rejected, dropped, terminated,
//! and completed later than the terminator's `late_after`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use seda_control::terminate::{PeriodCounts, Terminator};

/// How often the layer reports arrivals and losses to its terminator: the runtime's default
/// stats period, so a terminator's `window` means the same number of seconds in a stage and in
/// the layer.
pub const TERMINATION_PERIOD: Duration = Duration::from_secs(1);

/// How often a running request re-reads the threshold: an adaptive threshold may fall below a
/// request's running time after it started.
pub(crate) const RECHECK: Duration = Duration::from_millis(100);

/// A layer's terminator and its counters.
pub(crate) struct Termination {
    terminator: Mutex<Box<dyn Terminator>>,
    /// The threshold in force, in microseconds (read on every poll without the lock).
    threshold_us: AtomicU64,
    /// The terminator's `late_after`, read without its lock.
    late_after: Option<Duration>,
    /// Requests cut so far.
    pub(crate) terminated: AtomicU64,
    /// Completions later than `late_after` (lost, for the terminator's loss).
    late: AtomicU64,
    /// When the last period closed, in nanoseconds since the layer's epoch.
    last_period_ns: AtomicU64,
    /// Cumulative (arrivals, lost, terminated) at the last period, to make per-period counts.
    last: Mutex<(u64, u64, u64)>,
}

/// The state of a layer's terminator, for metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct TerminationStats {
    /// The terminator's kind (`sert`, `fixed`, `percentile`).
    pub kind: &'static str,
    /// The running time past which requests are cut now.
    pub threshold: Duration,
    /// The terminator's own state (SERT's loss `p`...).
    pub state: Vec<(&'static str, f64)>,
}

impl Termination {
    pub(crate) fn new(terminator: Box<dyn Terminator>) -> Self {
        Termination {
            threshold_us: AtomicU64::new(micros(terminator.threshold())),
            late_after: terminator.late_after(),
            terminator: Mutex::new(terminator),
            terminated: AtomicU64::new(0),
            late: AtomicU64::new(0),
            last_period_ns: AtomicU64::new(0),
            last: Mutex::new((0, 0, 0)),
        }
    }

    /// The threshold in force.
    pub(crate) fn threshold(&self) -> Duration {
        Duration::from_micros(self.threshold_us.load(Ordering::Relaxed))
    }

    /// A request completed after `running` in the service, `response` as its client saw it.
    pub(crate) fn on_complete(&self, running: Duration, response: Duration) {
        if self.late_after.is_some_and(|l| response > l) {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        self.terminator.lock().on_complete(running);
    }

    /// Closes a period if one has passed at `now`; `arrived`, `lost` and `terminated` are the
    /// layer's cumulative counts, `lost` without the late completions (added here).
    pub(crate) fn maybe_period(&self, now: Duration, arrived: u64, lost: u64, terminated: u64) {
        let now_ns = now.as_nanos().min(u64::MAX as u128) as u64;
        let last_ns = self.last_period_ns.load(Ordering::Relaxed);
        let period_ns = TERMINATION_PERIOD.as_nanos() as u64;
        if now_ns.saturating_sub(last_ns) < period_ns
            || self
                .last_period_ns
                .compare_exchange(last_ns, now_ns, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let lost = lost + self.late.load(Ordering::Relaxed);
        let counts = {
            let mut last = self.last.lock();
            let counts = PeriodCounts {
                arrived: arrived.saturating_sub(last.0),
                lost: lost.saturating_sub(last.1),
                terminated: terminated.saturating_sub(last.2),
            };
            *last = (arrived, lost, terminated);
            counts
        };
        let mut t = self.terminator.lock();
        t.on_period(counts);
        self.threshold_us
            .store(micros(t.threshold()), Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> TerminationStats {
        let t = self.terminator.lock();
        TerminationStats {
            kind: t.name(),
            threshold: self.threshold(),
            state: t.state(),
        }
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seda_control::terminate::{SertConfig, SertThreshold};

    fn sert() -> Termination {
        let mut c = SertConfig::new(Duration::from_millis(100), Duration::from_secs(2));
        c.late_after = Some(Duration::from_secs(1));
        Termination::new(Box::new(SertThreshold::new(c)))
    }

    #[test]
    fn a_period_of_loss_lowers_the_threshold_and_late_replies_count_as_loss() {
        let t = sert();
        assert_eq!(t.threshold(), Duration::from_secs(2));
        // Less than a period: nothing reported.
        t.maybe_period(Duration::from_millis(500), 100, 50, 0);
        assert_eq!(t.threshold(), Duration::from_secs(2));
        // 30 of 100 late: a loss of 0.3, past the high-water mark.
        for _ in 0..30 {
            t.on_complete(Duration::from_millis(1500), Duration::from_millis(1500));
        }
        t.maybe_period(Duration::from_secs(1), 100, 0, 0);
        assert_eq!(t.threshold(), Duration::from_millis(100));
        assert_eq!(t.stats().kind, "sert");
    }
}
