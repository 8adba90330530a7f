//! How long the proxy leaves a request unread, for the routes' controllers to count.
//!
//! A route's layer times a request from the moment it reaches the layer, but when the proxy's
//! core is saturated requests wait before that, unread. In the lab's `proxy-spike` (the proxy
//! on one core with gunicorn, users reconnecting after each 503, 4,800 new connections a
//! second) a new connection's task first ran a median 238 ms (p90 318 ms) after its accept:
//! tokio runs tasks it was handed while the queue was long after the ones it already had. The
//! clients' p90 was 0.8 s while the layer measured 0.4 s, so it kept admitting. A timer of the
//! same runtime fired within 2 ms all the while, so it is the connection tasks that are
//! measured: each new connection's delay from accept to its task's first run. A timer every
//! 100 ms adds a heavier sample, so that the estimate falls back when connections stop
//! arriving (every 10 ms, its wake-ups were a tenth of an idle proxy's system calls).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use seda_tower::ArrivalLag;

/// Weight of a connection's sample in the smoothed delay: about the last 50 count.
const CONNECTION_WEIGHT: f64 = 0.02;
/// Weight of the timer's sample: with no new connections the estimate follows the timer
/// within about half a second.
const TIMER_WEIGHT: f64 = 0.2;
/// The timer's period.
const EVERY: Duration = Duration::from_millis(100);

/// The smoothed delay, published to every route's layer. A server other than the proxy feeds
/// it the same way: [`connection_started`](Self::connection_started) as each connection's task
/// first runs, and [`tick`](Self::tick) spawned once.
#[derive(Clone)]
pub struct LagMeter {
    lags: Arc<[ArrivalLag]>,
    smoothed_s: Arc<Mutex<f64>>,
}

impl LagMeter {
    /// A meter publishing to `lags` (each route's layer's [`ArrivalLag`]).
    pub fn new(lags: Vec<ArrivalLag>) -> Self {
        LagMeter {
            lags: lags.into(),
            smoothed_s: Arc::new(Mutex::new(0.0)),
        }
    }

    /// Something was handled `late` after it could have been; `weight` is its share in the
    /// new estimate.
    fn sample(&self, late: Duration, weight: f64) {
        if self.lags.is_empty() {
            return;
        }
        let mut s = self
            .smoothed_s
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *s += weight * (late.as_secs_f64() - *s);
        let lag = Duration::from_secs_f64(s.max(0.0));
        for l in self.lags.iter() {
            l.set(lag);
        }
    }

    /// A new connection accepted at `accepted` is being served now.
    pub fn connection_started(&self, accepted: Instant) {
        self.sample(accepted.elapsed(), CONNECTION_WEIGHT);
    }

    /// Samples how late a timer fires, every 100 ms, until the task is dropped (at once, with
    /// no layer to tell).
    pub async fn tick(self) {
        while !self.lags.is_empty() {
            let due = tokio::time::Instant::now() + EVERY;
            tokio::time::sleep_until(due).await;
            let late = tokio::time::Instant::now().saturating_duration_since(due);
            self.sample(late, TIMER_WEIGHT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layers_see_the_smoothed_delay() {
        let lag = ArrivalLag::default();
        let meter = LagMeter::new(vec![lag.clone()]);
        let late = |ms| Instant::now() - Duration::from_millis(ms);
        meter.connection_started(late(100));
        let first = lag.get().as_secs_f64();
        assert!((0.002..0.0021).contains(&first), "{first}");
        for _ in 0..500 {
            meter.connection_started(late(300));
        }
        let settled = lag.get().as_secs_f64();
        assert!((0.299..0.301).contains(&settled), "{settled}");
        // No more connections: ten punctual timer samples bring it down by 0.8^10.
        for _ in 0..10 {
            meter.sample(Duration::ZERO, TIMER_WEIGHT);
        }
        assert!(lag.get() < Duration::from_millis(35), "{:?}", lag.get());
    }
}
