//! SSM's client-side AIMD window (SSM04, "Self-Tuning").
//!
//! The client stub keeps at most `window` requests outstanding. A reply within the timeout grows
//! the window additively (by `increase` per window's worth of successes, as TCP's congestion
//! avoidance does); a rejection or a timeout shrinks it multiplicatively. The window discovers
//! the service's capacity without configuration; the seed gives no constants, so the defaults are
//! TCP's (`+1` per window, `x 0.5` on loss).

use std::time::Duration;

/// AIMD window parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct AimdWindowConfig {
    /// Window at start.
    pub initial: f64,
    /// Smallest window (at least one request may always be outstanding).
    pub min: f64,
    /// Largest window.
    pub max: f64,
    /// Additive increase per full window of successes.
    pub increase: f64,
    /// Multiplicative decrease on a rejection or timeout (0 < decrease < 1).
    pub decrease: f64,
    /// A reply slower than this counts as a timeout (SSM's per-request time bound).
    pub timeout: Duration,
}

impl Default for AimdWindowConfig {
    fn default() -> Self {
        AimdWindowConfig {
            initial: 1.0,
            min: 1.0,
            max: 10_000.0,
            increase: 1.0,
            decrease: 0.5,
            timeout: Duration::from_secs(1),
        }
    }
}

/// The client-side AIMD window.
#[derive(Debug, Clone)]
pub struct AimdWindow {
    config: AimdWindowConfig,
    window: f64,
    outstanding: usize,
}

impl AimdWindow {
    /// A window with the given parameters (bounds made consistent).
    pub fn new(mut config: AimdWindowConfig) -> Self {
        config.min = if config.min.is_finite() {
            config.min.max(1.0)
        } else {
            1.0
        };
        config.max = if config.max.is_finite() {
            config.max.max(config.min)
        } else {
            1e9
        };
        if !(config.decrease > 0.0 && config.decrease < 1.0) {
            config.decrease = 0.5;
        }
        if !(config.increase.is_finite() && config.increase > 0.0) {
            config.increase = 1.0;
        }
        let window = config.initial.clamp(config.min, config.max);
        AimdWindow {
            config,
            window,
            outstanding: 0,
        }
    }

    /// The current window (requests that may be outstanding).
    pub fn window(&self) -> f64 {
        self.window
    }

    /// Requests sent and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    /// Takes a slot for one request if the window allows it.
    pub fn try_acquire(&mut self) -> bool {
        if (self.outstanding as f64) < self.window.floor() {
            self.outstanding += 1;
            true
        } else {
            false
        }
    }

    /// A reply arrived after `latency`: growth if within the timeout, otherwise a timeout.
    pub fn on_reply(&mut self, latency: Duration) {
        self.release();
        if latency <= self.config.timeout {
            self.window = (self.window + self.config.increase / self.window).min(self.config.max);
        } else {
            self.shrink();
        }
    }

    /// The request was rejected (503), timed out, or failed.
    pub fn on_failure(&mut self) {
        self.release();
        self.shrink();
    }

    /// The request was abandoned by its own caller (client gone, deadline cut above): the slot
    /// is freed, and the window neither grows nor shrinks, since the service said nothing.
    pub fn on_cancel(&mut self) {
        self.release();
    }

    fn release(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    fn shrink(&mut self) {
        self.window = (self.window * self.config.decrease).max(self.config.min);
    }
}

impl Default for AimdWindow {
    fn default() -> Self {
        AimdWindow::new(AimdWindowConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_millis(10);

    #[test]
    fn the_window_limits_outstanding_requests() {
        let mut w = AimdWindow::new(AimdWindowConfig {
            initial: 2.0,
            ..Default::default()
        });
        assert!(w.try_acquire());
        assert!(w.try_acquire());
        assert!(!w.try_acquire());
        w.on_reply(FAST);
        assert!(w.try_acquire());
    }

    #[test]
    fn grows_by_one_per_window_of_successes() {
        let mut w = AimdWindow::new(AimdWindowConfig {
            initial: 4.0,
            ..Default::default()
        });
        for _ in 0..4 {
            assert!(w.try_acquire());
            w.on_reply(FAST);
        }
        assert!((w.window() - 5.0).abs() < 0.1, "window {}", w.window());
    }

    #[test]
    fn halves_on_rejection_and_on_timeout() {
        let mut w = AimdWindow::new(AimdWindowConfig {
            initial: 16.0,
            ..Default::default()
        });
        w.try_acquire();
        w.on_failure();
        assert_eq!(w.window(), 8.0);
        w.try_acquire();
        w.on_reply(Duration::from_secs(2));
        assert_eq!(w.window(), 4.0);
    }

    #[test]
    fn a_cancelled_request_frees_its_slot_and_leaves_the_window() {
        let mut w = AimdWindow::new(AimdWindowConfig {
            initial: 1.0,
            ..Default::default()
        });
        assert!(w.try_acquire());
        assert!(!w.try_acquire());
        w.on_cancel();
        assert_eq!(w.window(), 1.0);
        assert_eq!(w.outstanding(), 0);
        assert!(w.try_acquire());
    }

    #[test]
    fn stays_within_bounds() {
        let cfg = AimdWindowConfig {
            initial: 3.0,
            min: 2.0,
            max: 3.5,
            ..Default::default()
        };
        let mut w = AimdWindow::new(cfg);
        for _ in 0..100 {
            w.try_acquire();
            w.on_reply(FAST);
        }
        assert!(w.window() <= 3.5);
        for _ in 0..10 {
            w.on_failure();
        }
        assert_eq!(w.window(), 2.0);
        assert_eq!(w.outstanding(), 0);
    }

    #[test]
    fn converges_near_capacity_on_a_fixed_server() {
        // A server that answers within the timeout only while at most 10 are outstanding.
        let mut w = AimdWindow::default();
        let mut windows = Vec::new();
        for _ in 0..5000 {
            while w.try_acquire() {}
            let n = w.outstanding();
            let ok = n <= 10;
            for _ in 0..n {
                if ok { w.on_reply(FAST) } else { w.on_failure() }
            }
            windows.push(w.window());
        }
        let tail = &windows[4000..];
        let mean = tail.iter().sum::<f64>() / tail.len() as f64;
        assert!((5.0..=11.0).contains(&mean), "mean window {mean}");
    }
}
