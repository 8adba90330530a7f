//! Service degradation (WC03, Section 3.4; Sandstorm's `BOTTLENECK_DEGRADE` hook).
//!
//! A quality knob in `[q_min, 1]` that the stage's handler reads to do less work per request.
//! Each run compares the stage's percentile response time with the target: over target the
//! quality is divided by `decrease` (2), under it grows by `step` (0.01), as Sandstorm's
//! bottleneck stage does. When the quality is already at `q_min` and the response time is still
//! over target, admission control is re-enabled (WC03: "the stage optionally re-enables the
//! admission controller when the quality factor is at its lowest setting and response times
//! continue to exceed the target"); it is switched off again once the quality has recovered to
//! full (our choice; WC03 does not say when).
//!
//! [`DegradingAdmission`] packages the knob with a response-time controller: admission passes
//! everything until the knob re-enables it. While admission is off the response-time
//! controller is left alone (it would otherwise keep dividing a rate nobody enforces, and start
//! enforcing a rate wound down to a trickle: issue 15 saw 15-45/s against a capacity of
//! hundreds); when the knob switches it on, it starts from the rate the stage was sustaining
//! (completions per second, smoothed over measurement periods) and adapts from there. (It
//! learns from every completion, the backlog admitted while admission was off included: a rate
//! equal to what the stage sustains keeps that backlog, and so the response time, where it is;
//! only a cut drains it. Learning only from requests admitted after the switch was tried and
//! left the p90 at 3 to 6 targets in the lab's `degrade`.)

use crate::InvalidConfig;
use std::time::Duration;

use crate::catalogue::{self, Entry, Params, Role};
use crate::response_time::{ResponseTimeConfig, ResponseTimeController, SampleWindow};
use crate::{AdmissionController, Controller, KnobCell, KnobKind, Quality, RejectReason, Time};

/// The catalogue entry of [`DegradingAdmission`].
pub(crate) const ENTRY: Entry = Entry {
    name: "degradation",
    about: "WC03's quality knob, admission control as the last resort",
    source: "WC03 Section 3.4",
    role: Role::Rate,
    compared: false,
    build: |p| {
        let rt = ResponseTimeConfig::read(
            p,
            ResponseTimeConfig::new(ResponseTimeConfig::DEFAULT_TARGET),
        );
        let cfg = DegradationConfig::read(p, rt.target);
        Ok(Box::new(DegradingAdmission::new(cfg, rt)?))
    },
    aim: catalogue::target_s,
};

/// Parameters of [`Degradation`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DegradationConfig {
    /// Target for the stage's percentile response time.
    pub target: Duration,
    /// Lowest quality (Sandstorm: 0.01).
    pub q_min: f64,
    /// Additive quality increase under target (Sandstorm: 0.01).
    pub step: f64,
    /// Quality divisor over target (Sandstorm: 2).
    pub decrease: f64,
    /// Whether admission control is re-enabled at `q_min` (WC03's option).
    pub reenable_admission: bool,
}

impl DegradationConfig {
    /// Sandstorm's defaults for `target`.
    pub fn new(target: Duration) -> Self {
        DegradationConfig {
            target,
            q_min: 0.01,
            step: 0.01,
            decrease: 2.0,
            reenable_admission: true,
        }
    }

    /// Reads `q_min`, `quality_step`, `quality_decrease` and `reenable_admission` (a switch)
    /// for `target`.
    pub fn read(p: &mut Params<'_>, target: Duration) -> Self {
        let d = DegradationConfig::new(target);
        DegradationConfig {
            q_min: p.f64("q_min", d.q_min),
            step: p.f64("quality_step", d.step),
            decrease: p.f64("quality_decrease", d.decrease),
            reenable_admission: p.flag("reenable_admission", d.reenable_admission),
            ..d
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.target.is_zero() {
            return Err(InvalidConfig::new(
                "target_s",
                "target_s must be greater than 0",
            ));
        }
        if !(self.q_min > 0.0 && self.q_min <= 1.0) {
            return Err(InvalidConfig::new(
                "q_min",
                format!("q_min must be in (0, 1], got {}", self.q_min),
            ));
        }
        if !(self.step.is_finite() && self.step > 0.0) {
            return Err(InvalidConfig::new(
                "quality_step",
                format!("quality_step must be > 0, got {}", self.step),
            ));
        }
        if !(self.decrease.is_finite() && self.decrease > 1.0) {
            return Err(InvalidConfig::new(
                "quality_decrease",
                format!("quality_decrease must be > 1, got {}", self.decrease),
            ));
        }
        Ok(())
    }
}

/// What the stage should do after a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DegradationState {
    /// The quality the handler should deliver, in `[q_min, 1]`.
    pub quality: f64,
    /// Whether the stage's admission controller should be enforcing.
    pub admission_enabled: bool,
}

/// The quality knob of WC03 Section 3.4.
#[derive(Debug, Clone)]
pub struct Degradation {
    cfg: DegradationConfig,
    state: DegradationState,
}

impl Degradation {
    /// Full quality, admission off.
    pub fn new(cfg: DegradationConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(Degradation {
            cfg,
            state: DegradationState {
                quality: 1.0,
                admission_enabled: false,
            },
        })
    }

    /// The current state.
    pub fn state(&self) -> DegradationState {
        self.state
    }
}

impl Controller for Degradation {
    /// The stage's percentile response time over the last period.
    type Observation = Duration;
    type Adjustment = DegradationState;

    fn update(&mut self, _now: Time, percentile: &Duration) -> DegradationState {
        let s = &mut self.state;
        if *percentile > self.cfg.target {
            if s.quality <= self.cfg.q_min && self.cfg.reenable_admission {
                s.admission_enabled = true;
            }
            s.quality = (s.quality / self.cfg.decrease).max(self.cfg.q_min);
        } else {
            s.quality = (s.quality + self.cfg.step).min(1.0);
            if s.quality >= 1.0 {
                s.admission_enabled = false;
            }
        }
        *s
    }
}

/// Completions per second over consecutive periods, smoothed: the rate a stage is sustaining.
#[derive(Debug, Clone)]
struct Departures {
    period: Duration,
    alpha: f64,
    start: Option<Time>,
    count: u64,
    /// The closed periods' rate, smoothed (`alpha` of the previous value).
    per_s: Option<f64>,
}

impl Departures {
    fn new(period: Duration, alpha: f64) -> Self {
        Departures {
            period: period.max(Duration::from_millis(1)),
            alpha,
            start: None,
            count: 0,
            per_s: None,
        }
    }

    fn roll(&mut self, now: Time) {
        let start = *self.start.get_or_insert(now);
        let elapsed = now.saturating_sub(start);
        if elapsed >= self.period {
            let d = self.count as f64 / elapsed.as_secs_f64();
            self.per_s = Some(crate::rate::response_time::ewma(self.per_s, self.alpha, d));
            self.count = 0;
            self.start = Some(now);
        }
    }

    fn complete(&mut self, now: Time) {
        self.roll(now);
        self.count += 1;
    }

    /// The smoothed rate, or the open period's when none has closed yet.
    fn rate(&self, now: Time) -> Option<f64> {
        self.per_s.or_else(|| {
            let elapsed = now.saturating_sub(self.start?).as_secs_f64();
            (elapsed > 0.0 && self.count > 0).then(|| self.count as f64 / elapsed)
        })
    }
}

/// Degradation first, admission control as the last resort (WC03 Figure 13's configuration).
#[derive(Debug, Clone)]
pub struct DegradingAdmission {
    knob: Degradation,
    /// The quality, published for the stage's handler.
    quality: KnobCell,
    window: SampleWindow,
    inner: ResponseTimeController,
    departures: Departures,
}

impl DegradingAdmission {
    /// A knob with `cfg`, measuring with `rt`'s window, falling back on `rt`'s controller.
    pub fn new(cfg: DegradationConfig, rt: ResponseTimeConfig) -> Result<Self, InvalidConfig> {
        let window = SampleWindow::new(rt.nreq, rt.timeout, rt.percentile);
        Ok(DegradingAdmission {
            knob: Degradation::new(cfg)?,
            quality: KnobCell::new::<Quality>(),
            window,
            departures: Departures::new(rt.timeout, rt.alpha),
            inner: ResponseTimeController::new(rt)?,
        })
    }

    /// The quality the stage should deliver now.
    pub fn quality(&self) -> f64 {
        self.knob.state().quality
    }

    /// The admission rate in force (or, while admission is off, the one it would start from).
    pub fn rate_per_s(&self) -> f64 {
        self.inner.rate_per_s()
    }

    fn enabled(&self) -> bool {
        self.knob.state().admission_enabled
    }

    fn run(&mut self, now: Time, p: Option<f64>) {
        if let Some(p) = p {
            let was = self.enabled();
            let s = self.knob.update(now, &Duration::from_secs_f64(p));
            self.quality.set(s.quality);
            if s.admission_enabled && !was {
                // Start from what the stage sustains, not from a rate adapted (or never
                // adapted) while nothing enforced it.
                let sustained = self.departures.rate(now);
                let rate = sustained.unwrap_or_else(|| self.inner.rate_per_s());
                self.inner.restart(now, rate);
            }
        }
    }
}

impl AdmissionController for DegradingAdmission {
    fn name(&self) -> &'static str {
        "degradation"
    }

    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason> {
        let p = self.window.poll(now);
        self.run(now, p);
        if self.enabled() {
            self.inner.admit(now, class)
        } else {
            Ok(())
        }
    }

    fn undo_admit(&mut self, now: Time, class: u8) {
        if self.enabled() {
            self.inner.undo_admit(now, class);
        }
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration) {
        self.departures.complete(now);
        let p = self.window.push(now, response.as_secs_f64());
        self.run(now, p);
        if self.enabled() {
            self.inner.on_complete(now, class, response, sojourn);
        }
    }

    fn tick(&mut self, now: Time) {
        self.departures.roll(now);
        let p = self.window.poll(now);
        self.run(now, p);
        if self.enabled() {
            self.inner.tick(now);
        }
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let s = self.knob.state();
        let mut v = vec![
            ("quality", s.quality),
            (
                "admission_enabled",
                if s.admission_enabled { 1.0 } else { 0.0 },
            ),
        ];
        v.extend(self.inner.state());
        v
    }

    fn knob(&self, name: &str) -> Option<KnobCell> {
        (name == Quality::NAME).then(|| self.quality.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn halves_over_target_and_creeps_up_under_it() {
        let mut d = Degradation::new(DegradationConfig::new(s(1.0))).unwrap();
        assert_eq!(d.update(s(0.0), &s(2.0)).quality, 0.5);
        assert_eq!(d.update(s(1.0), &s(2.0)).quality, 0.25);
        assert!((d.update(s(2.0), &s(0.5)).quality - 0.26).abs() < 1e-12);
    }

    #[test]
    fn reenables_admission_only_at_q_min_while_still_over_target() {
        let mut d = Degradation::new(DegradationConfig::new(s(1.0))).unwrap();
        for i in 0..7 {
            // 1 -> 0.5 -> ... -> 0.0078 clamped to 0.01
            assert!(!d.update(s(i as f64), &s(2.0)).admission_enabled);
        }
        assert_eq!(d.state().quality, 0.01);
        assert!(d.update(s(8.0), &s(2.0)).admission_enabled);
        // Recovers: admission stays on until full quality.
        for i in 0..98 {
            assert!(d.update(s(9.0 + i as f64), &s(0.1)).admission_enabled);
        }
        assert!(!d.update(s(200.0), &s(0.1)).admission_enabled);
        assert_eq!(d.state().quality, 1.0);
    }

    #[test]
    fn degrading_admission_admits_everything_until_reenabled() {
        let rt = ResponseTimeConfig {
            nreq: 10,
            ..ResponseTimeConfig::new(s(1.0))
        };
        let mut a = DegradingAdmission::new(DegradationConfig::new(s(1.0)), rt).unwrap();
        let t = s(0.0);
        assert_eq!((0..1000).filter(|_| a.admit(t, 0).is_ok()).count(), 1000);
        for i in 0..200 {
            a.on_complete(s(i as f64 * 0.01), 0, s(5.0), s(5.0));
        }
        assert_eq!(a.quality(), 0.01);
        let t = s(3.0);
        assert!((0..1000).filter(|_| a.admit(t, 0).is_ok()).count() < 100);
    }

    /// Completions at `per_s` for `secs` seconds from `from`, each `response` long.
    fn complete_at(a: &mut DegradingAdmission, from: f64, secs: f64, per_s: f64, response: f64) {
        let n = (secs * per_s) as usize;
        for i in 0..n {
            a.on_complete(s(from + i as f64 / per_s), 0, s(response), s(response));
        }
    }

    #[test]
    fn the_rate_does_not_wind_down_while_admission_is_off() {
        let rt = ResponseTimeConfig::new(s(1.0));
        let initial = rt.initial_rate_per_s;
        let cfg = DegradationConfig {
            reenable_admission: false,
            ..DegradationConfig::new(s(1.0))
        };
        let mut a = DegradingAdmission::new(cfg, rt).unwrap();
        // Thirty seconds over target at 300 completions/s: the knob is at q_min, admission
        // stays off, and the rate it would enforce has not moved.
        complete_at(&mut a, 0.0, 30.0, 300.0, 5.0);
        assert_eq!(a.quality(), 0.01);
        assert_eq!(a.rate_per_s(), initial);
        assert_eq!(
            (0..1000).filter(|_| a.admit(s(30.0), 0).is_ok()).count(),
            1000
        );
    }

    #[test]
    fn admission_starts_from_the_rate_the_stage_sustains() {
        let rt = ResponseTimeConfig::new(s(1.0));
        let mut a = DegradingAdmission::new(DegradationConfig::new(s(1.0)), rt).unwrap();
        // Over target at 400 completions/s until the knob re-enables admission control.
        let mut t = 0.0;
        while a
            .state()
            .iter()
            .all(|(k, v)| *k != "admission_enabled" || *v == 0.0)
        {
            assert!(t < 60.0, "admission never re-enabled");
            complete_at(&mut a, t, 0.05, 400.0, 5.0);
            t += 0.05;
        }
        let rate = a.rate_per_s();
        assert!((rate - 400.0).abs() < 0.05 * 400.0, "starts at {rate}/s");
        // And it enforces that rate: about 400 admitted over the next second, not 1000.
        let admitted = (0..1000)
            .filter(|i| a.admit(s(t + *i as f64 / 1000.0), 0).is_ok())
            .count();
        assert!((380..=420).contains(&admitted), "{admitted} admitted");
    }

    #[test]
    fn bad_config_is_an_error() {
        let mut c = DegradationConfig::new(s(1.0));
        c.q_min = 0.0;
        assert_eq!(Degradation::new(c).unwrap_err().param, "q_min");
    }
}
