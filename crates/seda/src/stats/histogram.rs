//! A lock-free log-linear histogram of durations (nanoseconds), about 3% relative precision.
//!
//! Workers record with one relaxed atomic add; the control thread takes the counts once per
//! period. Buckets: values below 32 ns exactly, then 32 sub-buckets per power of two.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let shift = exp - SUB_BITS;
    let sub = ((v >> shift) as usize) & (SUB - 1);
    (shift as usize + 1) * SUB + sub
}

fn lower_bound(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let block = i / SUB;
    let sub = (i % SUB) as u64;
    (SUB as u64 + sub) << (block - 1)
}

fn midpoint(i: usize) -> u64 {
    let lo = lower_bound(i);
    let hi = if i + 1 < BUCKETS {
        lower_bound(i + 1)
    } else {
        u64::MAX
    };
    lo + (hi - lo) / 2
}

/// Concurrent histogram that threads record into.
pub(crate) struct AtomicHistogram {
    counts: Box<[AtomicU64]>,
}

impl AtomicHistogram {
    pub(crate) fn new() -> Self {
        AtomicHistogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub(crate) fn record(&self, d: Duration) {
        self.record_n(d, 1);
    }

    pub(crate) fn record_n(&self, d: Duration, n: u64) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.counts[index(ns)].fetch_add(n, Ordering::Relaxed);
    }

    /// Moves every count into `into` and zeroes this histogram. A record racing with the take
    /// lands in the next period: nothing is lost or counted twice.
    pub(crate) fn take_into(&self, into: &mut Histogram) {
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.swap(0, Ordering::Relaxed);
            if n != 0 {
                into.counts[i] += n;
            }
        }
    }

    /// Adds the current counts to `into` without resetting.
    pub(crate) fn add_to(&self, into: &mut Histogram) {
        for (i, c) in self.counts.iter().enumerate() {
            into.counts[i] += c.load(Ordering::Relaxed);
        }
    }
}

/// A plain histogram, for snapshots and totals.
#[derive(Clone)]
pub struct Histogram {
    counts: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
        }
    }
}

impl Histogram {
    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value below which a fraction `q` (0..=1) of the recorded values fall.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        self.quantile_of(q, self.count())
    }

    /// [`quantile`](Self::quantile) with the count already taken.
    fn quantile_of(&self, q: f64, total: u64) -> Option<Duration> {
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_nanos(midpoint(i)));
            }
        }
        None
    }

    /// The mean of the recorded values (bucket midpoints).
    pub fn mean(&self) -> Option<Duration> {
        self.mean_of(self.count())
    }

    /// [`mean`](Self::mean) with the count already taken. Empty buckets are skipped: most of
    /// the 1,920 are, and each midpoint costs two divisions (the stats roll of every period
    /// spent most of its time here).
    fn mean_of(&self, total: u64) -> Option<Duration> {
        if total == 0 {
            return None;
        }
        let sum: f64 = self
            .counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != 0)
            .map(|(i, &c)| c as f64 * midpoint(i) as f64)
            .sum();
        Some(Duration::from_secs_f64(sum / total as f64 / 1e9))
    }

    /// Values recorded in buckets that lie wholly at or below `bound`: the cumulative count of
    /// a Prometheus bucket `le = bound`, short by at most the one bucket (about 3% wide) that
    /// straddles `bound`.
    pub fn count_at_most(&self, bound: Duration) -> u64 {
        let ns = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        // Buckets before the one holding `ns + 1` hold only values <= ns.
        let whole = match ns.checked_add(1) {
            Some(next) => index(next),
            None => BUCKETS,
        };
        self.counts[..whole.min(BUCKETS)].iter().sum()
    }

    /// The sum of the recorded values (bucket midpoints), seconds.
    pub fn sum_s(&self) -> f64 {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != 0)
            .map(|(i, &c)| c as f64 * midpoint(i) as f64)
            .sum::<f64>()
            / 1e9
    }

    /// The summary stats and JSON show.
    pub fn summary(&self) -> HistogramSummary {
        let s = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        // The count once, not once per figure: each is a pass over every bucket.
        let count = self.count();
        HistogramSummary {
            count,
            mean_s: s(self.mean_of(count)),
            p50_s: s(self.quantile_of(0.5, count)),
            p90_s: s(self.quantile_of(0.9, count)),
            p99_s: s(self.quantile_of(0.99, count)),
            max_s: s(self.quantile_of(1.0, count)),
        }
    }
}

/// Count, mean and percentiles of a histogram, in seconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistogramSummary {
    /// Values recorded.
    pub count: u64,
    /// Mean, seconds.
    pub mean_s: Option<f64>,
    /// Median, seconds.
    pub p50_s: Option<f64>,
    /// 90th percentile, seconds.
    pub p90_s: Option<f64>,
    /// 99th percentile, seconds.
    pub p99_s: Option<f64>,
    /// Largest value, seconds.
    pub max_s: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_monotonic() {
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX]) {
            let i = index(v);
            assert!(lower_bound(i) <= v, "v={v} i={i}");
            if i + 1 < BUCKETS {
                assert!(v < lower_bound(i + 1), "v={v} i={i}");
            }
        }
    }

    #[test]
    fn quantiles_within_precision() {
        let h = AtomicHistogram::new();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        let mut snap = Histogram::default();
        h.take_into(&mut snap);
        assert_eq!(snap.count(), 1000);
        let p90 = snap.quantile(0.9).unwrap().as_secs_f64();
        assert!((p90 - 0.9).abs() / 0.9 < 0.04, "p90 {p90}");
        let mean = snap.mean().unwrap().as_secs_f64();
        assert!((mean - 0.5005).abs() / 0.5005 < 0.04, "mean {mean}");
        let mut again = Histogram::default();
        h.take_into(&mut again);
        assert_eq!(again.count(), 0, "take resets");
    }

    #[test]
    fn count_at_most_is_cumulative_within_a_bucket() {
        let h = AtomicHistogram::new();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        let mut snap = Histogram::default();
        h.take_into(&mut snap);
        let at = |ms| snap.count_at_most(Duration::from_millis(ms));
        // Within one ~3% bucket of the true count (ms values 1..=bound).
        for bound in [1u64, 10, 100, 250, 500, 999] {
            let n = at(bound);
            assert!(n <= bound, "bound {bound}: {n}");
            assert!(n as f64 >= bound as f64 * 0.96 - 1.0, "bound {bound}: {n}");
        }
        assert_eq!(at(10_000), 1000);
        assert_eq!(snap.count_at_most(Duration::ZERO), 0);
        let sum = snap.sum_s();
        assert!((sum - 500.5).abs() / 500.5 < 0.04, "sum {sum}");
    }

    #[test]
    fn empty_histogram_has_no_quantiles() {
        assert_eq!(Histogram::default().quantile(0.5), None);
        assert_eq!(Histogram::default().summary().count, 0);
    }
}
