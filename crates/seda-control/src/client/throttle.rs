//! Client-side adaptive throttling (Google's SRE book, "Handling Overload": each client
//! rejects a share of its own requests before sending them, from what the backend accepted).
//!
//! Over a sliding window the client counts `requests` (every request the application tried,
//! those it rejected itself included) and `accepts` (those the backend served rather than
//! refused). It rejects a new request locally with probability
//! `max(0, (requests - K x accepts) / (requests + 1))`: while the backend accepts everything,
//! never; once it refuses, the client sends about `K` times what it accepts, so a refusal
//! costs the backend at most `K - 1` wasted sends per accepted request however hard the
//! application retries. `K = 2` is the book's choice: some waste, in exchange for noticing at
//! once when the backend recovers.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::window::SlidingCounts;
use crate::{InvalidConfig, Time};

/// Settings of [`AdaptiveThrottle`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThrottleConfig {
    /// How many requests the client sends per accepted one before it rejects locally (2).
    pub k: f64,
    /// The window requests and accepts are counted over (the book's two minutes, 10 s here:
    /// a lab run lasts a minute, and a window longer than the overload keeps rejecting after
    /// it).
    pub window: Duration,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(10),
        }
    }
}

impl ThrottleConfig {
    /// Checks the settings: `k >= 1` and a window of at least a millisecond.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] naming the setting that is out of range.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if !(self.k.is_finite() && self.k >= 1.0) {
            return Err(InvalidConfig::new(
                "k",
                format!("k must be a number >= 1, got {}", self.k),
            ));
        }
        if self.window < Duration::from_millis(1) {
            return Err(InvalidConfig::new(
                "window",
                "the throttle's window must be at least 1 ms",
            ));
        }
        Ok(())
    }
}

/// [`SlidingCounts`]' slots.
const REQUESTS: usize = 0;
const ACCEPTS: usize = 1;

/// Google SRE's adaptive throttling (module docs).
#[derive(Debug, Clone)]
pub struct AdaptiveThrottle {
    cfg: ThrottleConfig,
    counts: SlidingCounts,
    rejected: u64,
}

impl AdaptiveThrottle {
    /// A throttle with `cfg`.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] if `cfg` does not validate.
    pub fn new(cfg: ThrottleConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(AdaptiveThrottle {
            counts: SlidingCounts::new(cfg.window),
            cfg,
            rejected: 0,
        })
    }

    /// The probability a request tried at `now` is rejected locally.
    pub fn reject_probability(&mut self, now: Time) -> f64 {
        let [requests, accepts] = self.counts.totals(now);
        let excess = requests as f64 - self.cfg.k * accepts as f64;
        (excess / (requests as f64 + 1.0)).max(0.0)
    }

    /// Counts a request the application tries at `now` and decides it: `true` to send it,
    /// `false` to reject it locally. `uniform` is a draw in `[0, 1)` from the caller's
    /// generator (the throttle holds no random state, so runs repeat).
    pub fn try_send(&mut self, now: Time, uniform: f64) -> bool {
        let p = self.reject_probability(now);
        self.counts.add(now, REQUESTS);
        let send = uniform >= p;
        self.rejected += u64::from(!send);
        send
    }

    /// The backend accepted (served rather than refused) a request, by `at` (its send or its
    /// reply: the accept counts in the bucket `at` falls in).
    pub fn on_accept(&mut self, at: Time) {
        self.counts.add_at(at, ACCEPTS);
    }

    /// Requests rejected locally so far.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }
}

/// An [`AdaptiveThrottle`] with its own seeded generator for the draws: what a client holds
/// (the load generator's, a tier's client of the tier below). The same seed and the same
/// arrivals give the same decisions.
#[derive(Debug, Clone)]
pub struct SeededThrottle {
    throttle: AdaptiveThrottle,
    rng: SmallRng,
}

impl SeededThrottle {
    /// A throttle with `cfg`, its draws from a generator seeded with `seed`.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] if `cfg` does not validate.
    pub fn new(cfg: ThrottleConfig, seed: u64) -> Result<Self, InvalidConfig> {
        Ok(SeededThrottle {
            throttle: AdaptiveThrottle::new(cfg)?,
            rng: SmallRng::seed_from_u64(seed),
        })
    }

    /// Counts a request tried at `now` and decides it with the next draw: `true` to send it
    /// ([`AdaptiveThrottle::try_send`]).
    pub fn try_send(&mut self, now: Time) -> bool {
        let uniform = self.rng.random::<f64>();
        self.throttle.try_send(now, uniform)
    }

    /// The backend accepted a request, by `at` ([`AdaptiveThrottle::on_accept`]).
    pub fn on_accept(&mut self, at: Time) {
        self.throttle.on_accept(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Time {
        Duration::from_secs_f64(x)
    }

    fn throttle() -> AdaptiveThrottle {
        AdaptiveThrottle::new(ThrottleConfig::default()).unwrap()
    }

    #[test]
    fn never_rejects_while_the_backend_accepts() {
        let mut t = throttle();
        for i in 0..1000 {
            let now = s(i as f64 * 0.01);
            assert!(t.try_send(now, 0.0));
            t.on_accept(now);
        }
        assert_eq!(t.reject_probability(s(10.0)), 0.0);
        assert_eq!(t.rejected(), 0);
    }

    #[test]
    fn follows_the_books_formula() {
        let mut t = throttle();
        // 100 requests, 10 accepted: (100 - 2 x 10) / 101.
        for i in 0..100 {
            let now = s(i as f64 * 0.001);
            t.counts.add(now, REQUESTS);
            if i < 10 {
                t.on_accept(now);
            }
        }
        let p = t.reject_probability(s(0.5));
        assert!((p - 80.0 / 101.0).abs() < 1e-12, "{p}");
        assert!(!t.try_send(s(0.5), p - 1e-9));
        assert!(t.try_send(s(0.5), 0.99));
        assert_eq!(t.rejected(), 1);
    }

    #[test]
    fn sends_about_k_per_accept_to_a_backend_at_capacity() {
        // The application tries 1000 requests a second; the backend serves 100 a second and
        // refuses the rest. Past the first window the client sends about K = 2 per accepted
        // request: 200 a second, not 1000.
        let mut t = throttle();
        let mut state = 7u64;
        let mut next_free = 0.0;
        let (mut sent, mut accepted) = (0u64, 0u64);
        for i in 0..30_000 {
            let now_s = i as f64 * 0.001;
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            if !t.try_send(s(now_s), u) {
                continue;
            }
            let accept = now_s >= next_free;
            if accept {
                next_free = now_s + 0.01;
                t.on_accept(s(now_s));
            }
            if now_s >= 10.0 {
                sent += 1;
                accepted += u64::from(accept);
            }
        }
        let per_accept = sent as f64 / accepted as f64;
        assert!(
            (1.8..=2.2).contains(&per_accept),
            "sent {sent}, accepted {accepted}: {per_accept:.2} per accept"
        );
    }

    #[test]
    fn forgets_after_the_window() {
        let mut t = throttle();
        for i in 0..100 {
            t.try_send(s(i as f64 * 0.01), 0.99);
        }
        assert!(t.reject_probability(s(1.0)) > 0.9);
        assert_eq!(t.reject_probability(s(12.0)), 0.0);
    }

    #[test]
    fn rejects_nonsense_settings() {
        for (k, w) in [(0.5, 1.0), (f64::NAN, 1.0), (2.0, 0.0)] {
            let cfg = ThrottleConfig {
                k,
                window: Duration::from_secs_f64(w),
            };
            assert!(AdaptiveThrottle::new(cfg).is_err());
        }
    }
}
