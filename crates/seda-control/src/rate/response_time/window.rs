//! The measurement window of the response-time controllers (WC03 Section 3.2): up to `nreq`
//! samples, closed early when `timeout` has passed since the last run.

use std::time::Duration;

use crate::Time;

/// Collects response-time samples (in seconds) and yields their percentile when the window
/// closes, either on the `nreq`-th sample or on the first call after `timeout`.
#[derive(Debug, Clone)]
pub struct SampleWindow {
    samples: Vec<f64>,
    nreq: usize,
    timeout: Duration,
    percentile: f64,
    opened: Option<Time>,
}

impl SampleWindow {
    /// A window of `nreq` samples (at least 1) or `timeout`, yielding the `percentile`
    /// (in (0, 1]) of its samples.
    pub fn new(nreq: usize, timeout: Duration, percentile: f64) -> Self {
        let nreq = nreq.max(1);
        SampleWindow {
            samples: Vec::with_capacity(nreq),
            nreq,
            timeout,
            percentile: percentile.clamp(1e-9, 1.0),
            opened: None,
        }
    }

    /// Samples collected so far in this window.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the window holds no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Adds a sample; returns the window's percentile if this sample closed it.
    #[inline]
    pub fn push(&mut self, now: Time, sample_s: f64) -> Option<f64> {
        let opened = *self.opened.get_or_insert(now);
        self.samples.push(sample_s);
        if self.samples.len() >= self.nreq || now.saturating_sub(opened) >= self.timeout {
            return self.close(now);
        }
        None
    }

    /// Closes the window if its timeout has passed. Returns `Some(percentile)` if it held
    /// samples; an empty window just restarts (there is nothing to act on).
    pub fn poll(&mut self, now: Time) -> Option<f64> {
        let opened = *self.opened.get_or_insert(now);
        if now.saturating_sub(opened) >= self.timeout {
            return self.close(now);
        }
        None
    }

    /// Whether the timeout has passed since the window opened (a run is due).
    pub fn due(&self, now: Time) -> bool {
        self.opened
            .is_some_and(|o| now.saturating_sub(o) >= self.timeout)
    }

    // Once per window: kept out of `push` and `poll`, which run on every request.
    #[cold]
    fn close(&mut self, now: Time) -> Option<f64> {
        self.opened = Some(now);
        if self.samples.is_empty() {
            return None;
        }
        let p = percentile(&mut self.samples, self.percentile);
        self.samples.clear();
        Some(p)
    }
}

/// The `p`-quantile of `samples` as WC03 computes it: sort and take the `(p x n)`-th sample
/// (1-based, rounded up). Reorders `samples`. Returns 0 for an empty slice.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    let n = samples.len();
    if n == 0 {
        return 0.0;
    }
    let k = ((p * n as f64).ceil() as usize).clamp(1, n);
    let (_, v, _) = samples.select_nth_unstable_by(k - 1, f64::total_cmp);
    *v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Time {
        Duration::from_millis(n)
    }

    #[test]
    fn percentile_takes_the_ceil_p_n_th_sample() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut v, 0.9), 90.0);
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(percentile(&mut v, 0.9), 3.0);
        assert_eq!(percentile(&mut v, 0.5), 2.0);
        assert_eq!(percentile(&mut [], 0.9), 0.0);
    }

    #[test]
    fn closes_on_the_nreq_th_sample() {
        let mut w = SampleWindow::new(10, Duration::from_secs(1), 0.9);
        for i in 1..10 {
            assert_eq!(w.push(ms(i), i as f64), None);
        }
        assert_eq!(w.push(ms(10), 10.0), Some(9.0));
        assert!(w.is_empty());
    }

    #[test]
    fn closes_on_timeout_with_few_samples_and_restarts_when_empty() {
        let mut w = SampleWindow::new(100, Duration::from_secs(1), 0.9);
        assert_eq!(w.push(ms(0), 5.0), None);
        assert_eq!(w.poll(ms(999)), None);
        assert_eq!(w.poll(ms(1000)), Some(5.0));
        assert_eq!(w.poll(ms(2500)), None); // empty window: nothing to report
        assert!(!w.due(ms(2600)));
        assert!(w.due(ms(3500)));
    }
}
