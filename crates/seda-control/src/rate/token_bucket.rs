//! Sandstorm's `RateLimitingPredicate`: a token bucket with a rate and a depth.

use crate::Time;

/// A token bucket: tokens accrue at `rate_per_s` up to `depth`; each admitted event takes one.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_per_s: f64,
    depth: f64,
    tokens: f64,
    last: Option<Time>,
}

impl TokenBucket {
    /// A full bucket. A non-finite or negative rate is treated as 0, a depth below 1 as 1.
    pub fn new(rate_per_s: f64, depth: f64) -> Self {
        let depth = if depth.is_finite() {
            depth.max(1.0)
        } else {
            1.0
        };
        TokenBucket {
            rate_per_s: sanitize_rate(rate_per_s),
            depth,
            tokens: depth,
            last: None,
        }
    }

    /// The current refill rate.
    pub fn rate_per_s(&self) -> f64 {
        self.rate_per_s
    }

    /// The bucket's depth (largest burst).
    pub fn depth(&self) -> f64 {
        self.depth
    }

    /// Changes the refill rate from now on (tokens already earned are kept).
    pub fn set_rate(&mut self, now: Time, rate_per_s: f64) {
        self.refill(now);
        self.rate_per_s = sanitize_rate(rate_per_s);
    }

    /// Tokens available at `now`.
    pub fn available(&mut self, now: Time) -> f64 {
        self.refill(now);
        self.tokens
    }

    /// Takes `n` tokens if all are available at `now`; otherwise takes none.
    pub fn try_take(&mut self, now: Time, n: f64) -> bool {
        self.refill(now);
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }

    /// Returns `n` tokens taken earlier but not used (capped at the depth).
    pub fn give_back(&mut self, n: f64) {
        self.tokens = (self.tokens + n).min(self.depth);
    }

    fn refill(&mut self, now: Time) {
        if let Some(last) = self.last {
            if now > last {
                let earned = (now - last).as_secs_f64() * self.rate_per_s;
                self.tokens = (self.tokens + earned).min(self.depth);
            } else {
                // Time never runs backwards for the bucket: keep the later reading.
                return;
            }
        }
        self.last = Some(now);
    }
}

fn sanitize_rate(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(n: u64) -> Time {
        Duration::from_millis(n)
    }

    #[test]
    fn starts_full_and_empties() {
        let mut b = TokenBucket::new(10.0, 5.0);
        for _ in 0..5 {
            assert!(b.try_take(ms(0), 1.0));
        }
        assert!(!b.try_take(ms(0), 1.0));
    }

    #[test]
    fn refills_at_the_rate_up_to_the_depth() {
        let mut b = TokenBucket::new(10.0, 5.0);
        assert!(b.try_take(ms(0), 5.0));
        assert!(!b.try_take(ms(99), 1.0));
        assert!(b.try_take(ms(100), 1.0)); // 10/s: one token per 100 ms
        assert!((b.available(ms(10_000)) - 5.0).abs() < 1e-9); // capped at depth
    }

    #[test]
    fn all_or_none() {
        let mut b = TokenBucket::new(1.0, 3.0);
        assert!(!b.try_take(ms(0), 4.0));
        assert!((b.available(ms(0)) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn give_back_restores_tokens() {
        let mut b = TokenBucket::new(1.0, 3.0);
        assert!(b.try_take(ms(0), 2.0));
        b.give_back(2.0);
        assert!(b.try_take(ms(0), 3.0));
    }

    #[test]
    fn set_rate_keeps_earned_tokens() {
        let mut b = TokenBucket::new(10.0, 100.0);
        assert!(b.try_take(ms(0), 100.0));
        b.set_rate(ms(1000), 0.0); // earned 10 at the old rate
        assert!(b.try_take(ms(5000), 10.0));
        assert!(!b.try_take(ms(5000), 1.0));
    }

    #[test]
    fn bad_parameters_are_tamed() {
        let mut b = TokenBucket::new(f64::NAN, -1.0);
        assert_eq!(b.rate_per_s(), 0.0);
        assert!(b.try_take(ms(0), 1.0));
        assert!(!b.try_take(ms(1_000_000), 1.0));
    }
}
