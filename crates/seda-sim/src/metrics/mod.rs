//! Per-interval and whole-run measurements of a run.

mod bucket;
mod histogram;

pub use bucket::{Bucket, CLASSES};
pub use histogram::LogHistogram;

use crate::summary::Window;

/// Measurements of one run: fine-grained buckets (for series and sliding windows) and a
/// whole-run bucket that leaves out the warm-up.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Width of a bucket, in seconds.
    pub bucket_s: f64,
    bucket_ns: u64,
    /// Buckets from time 0.
    pub buckets: Vec<Bucket>,
    /// Everything after the warm-up.
    pub total: Bucket,
    /// Sum of response times after the warm-up (for exact means).
    pub response_sum_s: f64,
    warmup_ns: u64,
}

impl Metrics {
    /// Empty metrics with buckets of `bucket_s`, totals counted from `warmup_s`.
    pub fn new(bucket_s: f64, warmup_s: f64) -> Self {
        let bucket_ns = crate::secs_to_ns(bucket_s).max(1);
        Metrics {
            bucket_s: bucket_ns as f64 * 1e-9,
            bucket_ns,
            buckets: Vec::new(),
            total: Bucket::default(),
            response_sum_s: 0.0,
            warmup_ns: crate::secs_to_ns(warmup_s),
        }
    }

    #[inline]
    pub(crate) fn at(&mut self, now: u64) -> (&mut Bucket, Option<&mut Bucket>) {
        let i = (now / self.bucket_ns) as usize;
        while self.buckets.len() <= i {
            self.buckets.push(Bucket::default());
        }
        let total = if now >= self.warmup_ns {
            Some(&mut self.total)
        } else {
            None
        };
        (&mut self.buckets[i], total)
    }

    #[inline]
    pub(crate) fn record(&mut self, now: u64, f: impl Fn(&mut Bucket)) {
        let (b, total) = self.at(now);
        f(b);
        if let Some(t) = total {
            f(t);
        }
    }

    #[inline]
    pub(crate) fn record_response(&mut self, now: u64, class: usize, response_s: f64, good: bool) {
        let c = class.min(CLASSES - 1);
        let warm = now >= self.warmup_ns;
        let bin = histogram::bin_of(response_s);
        let (b, total) = self.at(now);
        for b in std::iter::once(b).chain(total) {
            b.completed += 1;
            b.class_completed[c] += 1;
            b.response.record_bin(bin);
            b.class_response[c].record_bin(bin);
            if good {
                b.good += 1;
                b.class_good[c] += 1;
            }
        }
        if warm {
            self.response_sum_s += response_s;
        }
    }

    /// Mean response time of completed requests after the warm-up.
    pub fn mean_response_s(&self) -> f64 {
        if self.total.completed == 0 {
            0.0
        } else {
            self.response_sum_s / self.total.completed as f64
        }
    }

    /// The buckets covering `[from_s, to_s)`, merged.
    pub fn window(&self, from_s: f64, to_s: f64) -> Bucket {
        let mut out = Bucket::default();
        let lo = (from_s / self.bucket_s).round().max(0.0) as usize;
        let hi = ((to_s / self.bucket_s).round().max(0.0) as usize).min(self.buckets.len());
        for b in self.buckets.get(lo..hi).unwrap_or(&[]) {
            out.merge(b);
        }
        out
    }

    /// Series of `step_s`-wide intervals from 0 (each the merge of its buckets).
    pub fn series(&self, step_s: f64) -> Vec<Bucket> {
        let per = ((step_s / self.bucket_s).round() as usize).max(1);
        self.buckets
            .chunks(per)
            .map(|c| {
                let mut b = Bucket::default();
                c.iter().for_each(|x| b.merge(x));
                b
            })
            .collect()
    }

    /// The p90 of completed requests over a sliding `window_s` window, for each window ending
    /// at a bucket boundary in `(from_s, to_s]`: what [`settle_time`](crate::summary::settle_time)
    /// reads in the simulator.
    pub fn sliding_windows(&self, window_s: f64, from_s: f64, to_s: f64) -> Vec<Window> {
        let w = ((window_s / self.bucket_s).round() as usize).max(1);
        let first = (from_s / self.bucket_s).round() as usize + 1;
        let last = ((to_s / self.bucket_s).round() as usize).min(self.buckets.len());
        (first..=last)
            .map(|end| {
                let mut h = LogHistogram::default();
                for b in &self.buckets[end.saturating_sub(w)..end] {
                    h.merge(&b.response);
                }
                Window {
                    end_s: end as f64 * self.bucket_s,
                    p90_s: h.quantile(0.9),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::settle_time;

    #[test]
    fn settle_time_is_the_end_of_the_last_bad_window() {
        let mut m = Metrics::new(0.1, 0.0);
        for i in 0..100u64 {
            let t = i * 100_000_000 + 1;
            let r = if (10..25).contains(&i) { 5.0 } else { 0.1 };
            m.record_response(t, 0, r, r <= 1.0);
        }
        // Bad buckets 10..25 (t in [1.0, 2.5)), one sample each. A 10-sample window's p90 is
        // its 9th sample: bad while it holds 2 bad buckets, last for the window ending at 3.3.
        let settle = |on, end| settle_time(m.sliding_windows(1.0, on, end), on, end, 1.0);
        let s = settle(1.0, 10.0);
        assert!((s - 2.3).abs() < 1e-9, "{s}");
        assert_eq!(settle(5.0, 10.0), 0.0);
        let w = m.window(1.0, 2.5);
        assert_eq!((w.completed, w.good), (15, 0));
        assert_eq!(m.total.completed, 100);
        assert_eq!(m.series(1.0).len(), 10);
    }
}
