//! A log-bucketed histogram of durations (2% relative resolution from 1 us to about 1 day).

const MIN_S: f64 = 1e-6;
const GROWTH: f64 = 1.02;
const BINS: usize = 1300;

/// Counts of durations in logarithmic bins; merges cheaply and answers quantiles within 2%.
#[derive(Debug, Clone, PartialEq)]
pub struct LogHistogram {
    bins: Vec<u64>,
    count: u64,
}

impl Default for LogHistogram {
    /// An empty histogram; its bins are allocated on the first record, so the many empty ones
    /// (idle intervals, unused classes) cost nothing.
    fn default() -> Self {
        LogHistogram {
            bins: Vec::new(),
            count: 0,
        }
    }
}

/// The bin a duration falls in (compute once, record in several histograms).
#[inline]
pub(crate) fn bin_of(x_s: f64) -> usize {
    if x_s <= MIN_S {
        return 0;
    }
    let b = ((x_s / MIN_S).ln() / GROWTH.ln()) as usize + 1;
    b.min(BINS - 1)
}

fn value_of(bin: usize) -> f64 {
    if bin == 0 {
        return MIN_S;
    }
    // Geometric middle of the bin [MIN * G^(b-1), MIN * G^b).
    MIN_S * GROWTH.powf(bin as f64 - 0.5)
}

impl LogHistogram {
    /// Records one duration in seconds.
    #[inline]
    pub fn record(&mut self, x_s: f64) {
        self.record_bin(bin_of(x_s));
    }

    /// Records one duration by its bin (see `bin_of`).
    #[inline]
    pub(crate) fn record_bin(&mut self, bin: usize) {
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        self.bins[bin] += 1;
        self.count += 1;
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &LogHistogram) {
        if other.count == 0 {
            return;
        }
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.count += other.count;
    }

    /// Samples of at most `x_s`, to the bin (within 2%): what share of a window met a target
    /// other than the run's (a target that changes while the run goes on).
    pub fn count_at_most(&self, x_s: f64) -> u64 {
        let last = bin_of(x_s);
        self.bins.iter().take(last + 1).sum()
    }

    /// The `p`-quantile (p in [0, 1]), or `None` when empty.
    pub fn quantile(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(value_of(b));
            }
        }
        Some(value_of(BINS - 1))
    }

    /// The mean of the recorded durations from the bins' middles (within 2%), or `None` when
    /// empty.
    pub fn mean(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let sum: f64 = self
            .bins
            .iter()
            .enumerate()
            .map(|(b, &n)| n as f64 * value_of(b))
            .sum();
        Some(sum / self.count as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_two_percent() {
        let mut h = LogHistogram::default();
        for i in 1..=1000 {
            h.record(i as f64 * 0.001);
        }
        for (p, want) in [(0.5, 0.5), (0.9, 0.9), (0.99, 0.99)] {
            let got = h.quantile(p).unwrap();
            assert!((got / want - 1.0).abs() < 0.02, "p{p}: {got}");
        }
        assert_eq!(LogHistogram::default().quantile(0.9), None);
        let mut m = LogHistogram::default();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.count(), 2000);
        assert_eq!(m.quantile(0.9), h.quantile(0.9));
    }

    #[test]
    fn counts_at_most_a_value_within_two_percent() {
        let mut h = LogHistogram::default();
        for i in 1..=1000 {
            h.record(i as f64 * 0.001);
        }
        let n = h.count_at_most(0.5);
        assert!((490..=510).contains(&n), "{n}");
        assert_eq!(h.count_at_most(10.0), 1000);
        assert_eq!(LogHistogram::default().count_at_most(1.0), 0);
    }

    #[test]
    fn extremes_are_clamped() {
        let mut h = LogHistogram::default();
        h.record(0.0);
        h.record(1e12);
        assert_eq!(h.quantile(0.0), Some(MIN_S));
        assert!(h.quantile(1.0).unwrap() > 1e4);
    }
}
