//! Two counts over a sliding window of time, kept in ten buckets so that the count forgets a
//! tenth of the window at a time: what the adaptive throttle (requests, accepts) and the retry
//! budget (requests, retries) count over.

use std::collections::VecDeque;
use std::time::Duration;

use crate::Time;

/// Buckets a window is counted in.
const BUCKETS: u32 = 10;

/// One bucket: the counts of what started in it.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    start: Time,
    counts: [u64; 2],
}

/// Counts `[first, second]` over the last `window` of time.
#[derive(Debug, Clone)]
pub(crate) struct SlidingCounts {
    window: Duration,
    buckets: VecDeque<Bucket>,
}

impl SlidingCounts {
    pub(crate) fn new(window: Duration) -> Self {
        SlidingCounts {
            window,
            buckets: VecDeque::new(),
        }
    }

    /// Counts one of `which` (0 or 1) at `now`, the latest time seen.
    pub(crate) fn add(&mut self, now: Time, which: usize) {
        self.forget(now);
        let width = self.window / BUCKETS;
        let open = self
            .buckets
            .back()
            .is_some_and(|b| now.saturating_sub(b.start) < width);
        if !open {
            self.buckets.push_back(Bucket {
                start: now,
                ..Bucket::default()
            });
        }
        if let Some(b) = self.buckets.back_mut() {
            b.counts[which] += 1;
        }
    }

    /// Counts one of `which` in the bucket `at` falls in (a reply counted where its request
    /// was sent); nothing if that bucket is forgotten.
    pub(crate) fn add_at(&mut self, at: Time, which: usize) {
        if let Some(b) = self.buckets.iter_mut().rev().find(|b| b.start <= at) {
            b.counts[which] += 1;
        }
    }

    /// Both counts over the window ending at `now`.
    pub(crate) fn totals(&mut self, now: Time) -> [u64; 2] {
        self.forget(now);
        self.buckets
            .iter()
            .fold([0, 0], |[a, b], k| [a + k.counts[0], b + k.counts[1]])
    }

    /// Drops the buckets that started a whole window before `now`.
    fn forget(&mut self, now: Time) {
        while self
            .buckets
            .front()
            .is_some_and(|b| now.saturating_sub(b.start) >= self.window)
        {
            self.buckets.pop_front();
        }
    }
}
