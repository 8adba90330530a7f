//! What the layer knows of recent response times, to predict at the door that a request's
//! budget is too short.
//!
//! The prediction is the 10th percentile of the last [`WINDOW`] response times: a request
//! whose budget is below it would have missed its deadline as nine in ten recent requests
//! did. Why so low a percentile: a request refused that would have made it is a success
//! lost, while one admitted that then misses costs the tier at most its budget of work (the
//! layer cuts it at the deadline). So the door refuses only what is nearly sure to miss, and
//! the cut handles the rest. A mean or a median would refuse requests of which half would
//! have finished in time.
//!
//! The samples must be fresh: if no request has completed for [`STALE_AFTER`], the
//! prediction is forgotten, because requests refused at the door never complete and so never
//! correct it; a service that recovered while only short budgets arrived would otherwise
//! refuse them for ever.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// How many recent response times the prediction is taken from.
pub(crate) const WINDOW: usize = 128;

/// Fewest samples before the layer predicts at all.
pub(crate) const MIN_SAMPLES: usize = 16;

/// The prediction is recomputed every this many samples (a sort of [`WINDOW`] values, so not
/// on every response).
const EVERY: usize = 16;

/// A prediction older than this (no completion since) is forgotten.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(5);

/// The percentile the prediction is, in per cent.
pub(crate) const PERCENTILE: usize = 10;

const UNKNOWN: u64 = u64::MAX;

/// The recent response times and the prediction drawn from them.
pub(crate) struct Recent {
    ring: Mutex<Ring>,
    /// The prediction in microseconds, [`UNKNOWN`] before [`MIN_SAMPLES`].
    floor_us: AtomicU64,
    /// When the last sample came, in nanoseconds of the layer's clock.
    last_ns: AtomicU64,
}

struct Ring {
    samples_us: [u32; WINDOW],
    len: usize,
    next: usize,
    since_update: usize,
}

impl Recent {
    pub(crate) fn new() -> Self {
        Recent {
            ring: Mutex::new(Ring {
                samples_us: [0; WINDOW],
                len: 0,
                next: 0,
                since_update: 0,
            }),
            floor_us: AtomicU64::new(UNKNOWN),
            last_ns: AtomicU64::new(0),
        }
    }

    /// A request completed at `now` (the layer's clock) after `response`.
    pub(crate) fn record(&self, now: Duration, response: Duration) {
        self.last_ns.store(nanos(now), Ordering::Relaxed);
        let us = response.as_micros().min(u128::from(u32::MAX)) as u32;
        let mut r = self.ring.lock();
        let at = r.next;
        r.samples_us[at] = us;
        r.next = (at + 1) % WINDOW;
        r.len = (r.len + 1).min(WINDOW);
        r.since_update += 1;
        if r.len >= MIN_SAMPLES && (r.since_update >= EVERY || r.len == MIN_SAMPLES) {
            r.since_update = 0;
            let mut sorted = r.samples_us;
            let live = &mut sorted[..r.len];
            let rank = live.len() * PERCENTILE / 100;
            let (_, floor, _) = live.select_nth_unstable(rank);
            self.floor_us.store(u64::from(*floor), Ordering::Relaxed);
        }
    }

    /// The predicted shortest likely response time at `now`, if the samples are enough and
    /// fresh.
    pub(crate) fn floor(&self, now: Duration) -> Option<Duration> {
        let us = self.floor_us.load(Ordering::Relaxed);
        let age = nanos(now).saturating_sub(self.last_ns.load(Ordering::Relaxed));
        (us != UNKNOWN && age <= nanos(STALE_AFTER)).then(|| Duration::from_micros(us))
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn no_prediction_until_enough_samples() {
        let r = Recent::new();
        for i in 0..MIN_SAMPLES - 1 {
            r.record(MS * i as u32, 200 * MS);
            assert_eq!(r.floor(MS * i as u32), None);
        }
        r.record(MS * 100, 200 * MS);
        assert_eq!(r.floor(MS * 100), Some(200 * MS));
    }

    #[test]
    fn the_prediction_is_a_low_percentile_of_the_window() {
        let r = Recent::new();
        // 1..=100 ms: the 10th percentile is about 11 ms, far below the median.
        for i in 1..=100u32 {
            r.record(Duration::from_secs(1), i * MS);
        }
        let f = r.floor(Duration::from_secs(1)).unwrap();
        assert!(f >= 5 * MS && f <= 15 * MS, "{f:?}");
        // The window moves: 128 slow samples push the fast ones out.
        for _ in 0..WINDOW {
            r.record(Duration::from_secs(2), 500 * MS);
        }
        assert_eq!(r.floor(Duration::from_secs(2)), Some(500 * MS));
    }

    #[test]
    fn a_stale_prediction_is_forgotten() {
        let r = Recent::new();
        for _ in 0..MIN_SAMPLES {
            r.record(Duration::from_secs(1), 300 * MS);
        }
        assert_eq!(
            r.floor(Duration::from_secs(1) + STALE_AFTER),
            Some(300 * MS)
        );
        assert_eq!(r.floor(Duration::from_secs(2) + STALE_AFTER), None);
    }
}
