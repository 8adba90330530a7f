//! The per-stage response-time controller of Welsh and Culler (WC03, Section 3.2,
//! Figure 4), and our tuned variant ([`TunedResponseTimeController`]).
//!
//! A monitor collects response times (`now - born`) of requests completed at the stage. Every
//! `nreq` samples, or after `timeout` when traffic is slow, the controller takes their 90th
//! percentile, smooths it with an EWMA (`cur = alpha cur + (1 - alpha) samp`), computes
//! `err = (cur - target) / target`, and runs AIMD on the rate of a token bucket guarding the
//! stage's queue: over `err_d` the rate is divided by `adj_d`; under `err_i` it grows by
//! `-(err - c_i) adj_i`.

mod config;
pub(crate) mod tuned;
mod window;

pub use config::ResponseTimeConfig;
pub use tuned::{TunedConfig, TunedResponseTimeController};
pub use window::{SampleWindow, percentile};

use std::time::Duration;

use crate::entry::{self, Entry, Role};
use crate::{AdmissionController, InvalidConfig, RejectReason, Time, TokenBucket};

/// The name configurations give this controller (`admission = { kind = "response_time" }`).
pub const RESPONSE_TIME: &str = "response_time";

/// The catalogue entry of [`ResponseTimeController`].
pub(crate) const ENTRY: Entry = Entry {
    name: RESPONSE_TIME,
    about: "WC03's token-bucket controller (Figure 4 parameters)",
    source: "WC03 Section 3.2, Figure 4",
    role: Role::Rate,
    compared: true,
    build: |p| {
        let cfg = ResponseTimeConfig::read(
            p,
            ResponseTimeConfig::new(ResponseTimeConfig::DEFAULT_TARGET),
        );
        Ok(Box::new(ResponseTimeController::new(cfg)?))
    },
    aim: entry::target_s,
};

/// One AIMD step of WC03 Section 3.2 on `rate` for error `err`; returns the new rate within
/// `[min_rate_per_s, max_rate_per_s]`.
pub fn aimd_step(cfg: &ResponseTimeConfig, rate: f64, err: f64) -> f64 {
    let next = if err > cfg.err_d {
        rate / cfg.adj_d
    } else if err < cfg.err_i {
        rate - (err - cfg.c_i) * cfg.adj_i
    } else {
        rate
    };
    next.clamp(cfg.min_rate_per_s, cfg.max_rate_per_s)
}

/// The EWMA of WC03 Section 3.2; the first sample seeds the average.
pub(crate) fn ewma(prev: Option<f64>, alpha: f64, sample: f64) -> f64 {
    match prev {
        Some(cur) => alpha * cur + (1.0 - alpha) * sample,
        None => sample,
    }
}

/// The response-time controller of WC03 Section 3.2 with the parameters of Figure 4.
#[derive(Debug, Clone)]
pub struct ResponseTimeController {
    cfg: ResponseTimeConfig,
    bucket: TokenBucket,
    window: SampleWindow,
    estimate_s: Option<f64>,
    last_sample_s: f64,
    runs: u64,
}

impl ResponseTimeController {
    /// A controller with `cfg` (checked: see [`ResponseTimeConfig::validate`]).
    pub fn new(cfg: ResponseTimeConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        let bucket = TokenBucket::new(cfg.initial_rate_per_s, cfg.bucket_depth);
        let window = SampleWindow::new(cfg.nreq, cfg.timeout, cfg.percentile);
        Ok(ResponseTimeController {
            cfg,
            bucket,
            window,
            estimate_s: None,
            last_sample_s: 0.0,
            runs: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ResponseTimeConfig {
        &self.cfg
    }

    /// The token bucket's current rate.
    pub fn rate_per_s(&self) -> f64 {
        self.bucket.rate_per_s()
    }

    /// The smoothed percentile estimate, once a window has closed.
    pub fn estimate(&self) -> Option<Duration> {
        self.estimate_s.map(Duration::from_secs_f64)
    }

    /// Runs the controller on one window's percentile `sample_s` (what a closing window does);
    /// public so tests and callers with their own measurement can drive it.
    pub fn observe(&mut self, now: Time, sample_s: f64) {
        let cur = ewma(self.estimate_s, self.cfg.alpha, sample_s);
        self.estimate_s = Some(cur);
        self.last_sample_s = sample_s;
        self.runs += 1;
        let target = self.cfg.target.as_secs_f64();
        let err = (cur - target) / target;
        let rate = aimd_step(&self.cfg, self.bucket.rate_per_s(), err);
        self.bucket.set_rate(now, rate);
    }
}

impl AdmissionController for ResponseTimeController {
    fn name(&self) -> &'static str {
        "response_time"
    }

    fn admit(&mut self, now: Time, _class: u8) -> Result<(), RejectReason> {
        if let Some(p) = self.window.poll(now) {
            self.observe(now, p);
        }
        if self.bucket.try_take(now, 1.0) {
            Ok(())
        } else {
            Err(RejectReason::Rate)
        }
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {
        self.bucket.give_back(1.0);
    }

    fn on_complete(&mut self, now: Time, _class: u8, response: Duration, _sojourn: Duration) {
        if let Some(p) = self.window.push(now, response.as_secs_f64()) {
            self.observe(now, p);
        }
    }

    fn tick(&mut self, now: Time) {
        if let Some(p) = self.window.poll(now) {
            self.observe(now, p);
        }
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("rate_per_s", self.bucket.rate_per_s()),
            ("estimate_s", self.estimate_s.unwrap_or(0.0)),
            ("last_sample_s", self.last_sample_s),
            ("runs", self.runs as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    fn ctl(initial: f64) -> ResponseTimeController {
        let cfg = ResponseTimeConfig {
            initial_rate_per_s: initial,
            ..ResponseTimeConfig::new(s(1.0))
        };
        ResponseTimeController::new(cfg).unwrap()
    }

    #[test]
    fn figure_4_defaults() {
        let c = ResponseTimeConfig::new(s(1.0));
        assert_eq!((c.nreq, c.timeout, c.percentile), (100, s(1.0), 0.9));
        assert_eq!((c.alpha, c.err_i, c.err_d), (0.7, -0.5, 0.0));
        assert_eq!((c.adj_i, c.adj_d, c.c_i), (2.0, 1.2, -0.1));
        assert_eq!((c.min_rate_per_s, c.max_rate_per_s), (0.05, 2000.0));
    }

    #[test]
    fn over_target_divides_the_rate_by_adj_d() {
        let mut c = ctl(120.0);
        for i in 0..100 {
            c.on_complete(s(i as f64 * 0.001), 0, s(2.0), s(2.0));
        }
        assert!(
            (c.rate_per_s() - 100.0).abs() < 1e-9,
            "rate {}",
            c.rate_per_s()
        );
    }

    #[test]
    fn under_target_adds_in_proportion_to_the_error() {
        let mut c = ctl(10.0);
        // 90 samples at 0.1 s and 10 at 5 s: the 90th sample is 0.1 s, err = -0.9.
        for i in 0..100 {
            let r = if i < 10 { 5.0 } else { 0.1 };
            c.on_complete(s(i as f64 * 0.001), 0, s(r), s(r));
        }
        let expected = 10.0 - (-0.9 - -0.1) * 2.0;
        assert!(
            (c.rate_per_s() - expected).abs() < 1e-9,
            "rate {}",
            c.rate_per_s()
        );
    }

    #[test]
    fn between_thresholds_the_rate_holds_and_the_ewma_smooths() {
        let mut c = ctl(50.0);
        c.observe(s(0.0), 0.8); // err -0.2: hold
        assert_eq!(c.rate_per_s(), 50.0);
        c.observe(s(1.0), 2.0); // cur = 0.7 * 0.8 + 0.3 * 2 = 1.16: decrease
        assert!((c.estimate().unwrap().as_secs_f64() - 1.16).abs() < 1e-9);
        assert!((c.rate_per_s() - 50.0 / 1.2).abs() < 1e-9);
    }

    #[test]
    fn timeout_runs_the_controller_without_nreq_samples() {
        let mut c = ctl(50.0);
        c.on_complete(s(0.0), 0, s(3.0), s(3.0));
        assert_eq!(c.rate_per_s(), 50.0);
        c.tick(s(1.0));
        assert!(c.rate_per_s() < 50.0);
    }

    #[test]
    fn the_rate_stays_within_bounds_and_gates_admission() {
        let mut c = ctl(0.06);
        for i in 0..50 {
            c.observe(s(i as f64), 10.0);
        }
        assert_eq!(c.rate_per_s(), 0.05);
        // Bucket depth 10 lets a burst of 10 through, then the rate rules.
        let t = s(100.0);
        let admitted = (0..100).filter(|_| c.admit(t, 0).is_ok()).count();
        assert_eq!(admitted, 10);
        assert_eq!(c.admit(t, 0), Err(RejectReason::Rate));
        // Additive increase: at most -(-1 - c_i) adj_i = 1.8/s per run.
        for _ in 0..1200 {
            c.observe(s(200.0), 0.0);
        }
        assert_eq!(c.rate_per_s(), 2000.0);
    }
}
