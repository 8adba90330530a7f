//! Peers' adaptive controllers, for side-by-side comparison (NETFLIX, ENVOY and
//! CODEL12 in `docs/papers.md`): Netflix concurrency-limits' Vegas, Gradient2 and AIMD limits,
//! Envoy's adaptive-concurrency gradient controller, and folly's CoDel on queueing delay.
//!
//! The limit algorithms implement [`LimitAlgorithm`] and are enforced by a
//! [`ConcurrencyLimiter`]: an event is admitted while fewer than `limit` admitted events are
//! unfinished (Netflix's `SimpleLimiter`, Envoy's filter), otherwise rejected with
//! [`RejectReason::Limit`]. The round-trip time fed back is the stage sojourn (admission to
//! completion), as a limiter times a permit from acquire to release. Dropped events reach the
//! algorithm as `did_drop` (Netflix) or not at all (Envoy has no drop signal).

pub(crate) mod aimd;
pub(crate) mod codel;
pub(crate) mod envoy;
pub(crate) mod gradient2;
pub(crate) mod vegas;

pub use aimd::{AimdLimit, AimdLimitConfig};
pub use codel::{Codel, CodelConfig};
pub use envoy::{EnvoyGradient, EnvoyGradientConfig};
pub use gradient2::{Gradient2Config, Gradient2Limit};
pub use vegas::{VegasConfig, VegasLimit};

use std::time::Duration;

pub(crate) use crate::response_time::percentile as percentile_of;
use crate::{AdmissionController, InvalidConfig, RejectReason, Time};

/// A concurrency-limit algorithm fed one sample per finished request.
pub trait LimitAlgorithm: Send {
    /// The algorithm's name ("vegas", ...).
    fn name(&self) -> &'static str;
    /// The current limit on unfinished requests.
    fn limit(&self) -> f64;
    /// A request finished after `rtt` while `inflight` requests (itself included) were
    /// unfinished; `did_drop` if it was dropped rather than served.
    fn on_sample(&mut self, now: Time, rtt: Duration, inflight: usize, did_drop: bool);
    /// Periodic call for time-driven algorithms.
    fn tick(&mut self, now: Time) {
        let _ = now;
    }
    /// Extra state for stats.
    fn extra_state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Checks a limit's bounds as Netflix's limits have them: `1 <= min_limit <= max_limit`, and
/// `max_limit` finite.
pub(crate) fn check_limit_bounds(min: f64, max: f64) -> Result<(), InvalidConfig> {
    if min >= 1.0 && min <= max && max.is_finite() {
        return Ok(());
    }
    Err(InvalidConfig::new(
        "min_limit",
        format!("need 1 <= min_limit <= max_limit, got {min} and {max}"),
    ))
}

/// Enforces a [`LimitAlgorithm`]'s limit on the number of unfinished admitted events.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimiter<L> {
    algo: L,
    inflight: usize,
}

impl<L: LimitAlgorithm> ConcurrencyLimiter<L> {
    /// A limiter enforcing `algo`.
    pub fn new(algo: L) -> Self {
        ConcurrencyLimiter { algo, inflight: 0 }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> &L {
        &self.algo
    }

    /// Admitted events not yet finished.
    pub fn inflight(&self) -> usize {
        self.inflight
    }
}

impl<L: LimitAlgorithm> AdmissionController for ConcurrencyLimiter<L> {
    fn name(&self) -> &'static str {
        self.algo.name()
    }

    fn admit(&mut self, now: Time, _class: u8) -> Result<(), RejectReason> {
        self.algo.tick(now);
        if (self.inflight as f64) < self.algo.limit().floor().max(1.0) {
            self.inflight += 1;
            Ok(())
        } else {
            Err(RejectReason::Limit)
        }
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {
        self.inflight = self.inflight.saturating_sub(1);
    }

    fn on_complete(&mut self, now: Time, _class: u8, _response: Duration, sojourn: Duration) {
        let inflight = self.inflight;
        self.inflight = self.inflight.saturating_sub(1);
        self.algo.on_sample(now, sojourn, inflight, false);
    }

    fn on_drop(&mut self, now: Time, _class: u8) {
        let inflight = self.inflight;
        self.inflight = self.inflight.saturating_sub(1);
        self.algo.on_sample(now, Duration::ZERO, inflight, true);
    }

    fn tick(&mut self, now: Time) {
        self.algo.tick(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("limit", self.algo.limit()),
            ("inflight", self.inflight as f64),
        ];
        v.extend(self.algo.extra_state());
        v
    }
}

/// A tiny deterministic generator for the peers' jitter (xorshift64*), so controllers stay pure.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Self {
        Jitter(seed | 1)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_enforces_the_limit_and_releases_on_finish() {
        let mut l = ConcurrencyLimiter::new(AimdLimit::new(AimdLimitConfig::default()).unwrap());
        let t = Duration::ZERO;
        let admitted = (0..100).filter(|_| l.admit(t, 0).is_ok()).count();
        assert_eq!(admitted, 20);
        assert_eq!(l.admit(t, 0), Err(RejectReason::Limit));
        l.on_complete(t, 0, Duration::from_millis(5), Duration::from_millis(5));
        assert_eq!(l.inflight(), 19);
        l.undo_admit(t, 0);
        assert_eq!(l.inflight(), 18);
    }

    #[test]
    fn jitter_is_uniform_enough_and_deterministic() {
        let mut a = Jitter::new(7);
        let mut b = Jitter::new(7);
        let xs: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.02);
        assert_eq!(xs[0], b.next_f64());
    }
}
