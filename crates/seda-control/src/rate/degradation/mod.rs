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
//! [`DegradingAdmission`] packages the knob with admission control: it passes everything until
//! the knob re-enables admission, which is then our tuned controller
//! ([`TunedResponseTimeController`]: the queue bounded at the length that, at the measured
//! departure rate, waits a budget steered to the target). Why not WC03's token bucket: its rate
//! has to be guessed when the knob switches it on, and its AIMD then moves by +1.8/s or /1.2 per
//! run. Started from the completions the stage sustained, it still had to cut the rate while the
//! backlog built without admission control drained, and then took tens of seconds to climb
//! back: issue 15 measured 0.09 x capacity served during the lab's `degrade` spike, the server's
//! core two-thirds idle. The queue limit needs no guess: while admission is off the controller
//! keeps counting the queue and the departures (and does not adapt its budget, since nothing is
//! turned away), so at the switch it knows both the backlog and what the stage sustains, and
//! the dropper sheds what waited past the target.

use crate::InvalidConfig;
use std::time::Duration;

use crate::entry::{self, Entry, Params, Role};
use crate::response_time::{
    ResponseTimeConfig, SampleWindow, TunedConfig, TunedResponseTimeController,
};
use crate::{AdmissionController, Controller, KnobCell, KnobKind, Quality, RejectReason, Time};

/// The name configurations give this controller (`admission = { kind = "degradation" }`).
pub const DEGRADATION: &str = "degradation";

/// The catalogue entry of [`DegradingAdmission`].
pub(crate) const ENTRY: Entry = Entry {
    name: DEGRADATION,
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
    aim: entry::target_s,
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

/// Degradation first, admission control as the last resort (WC03 Figure 13's configuration).
#[derive(Debug, Clone)]
pub struct DegradingAdmission {
    knob: Degradation,
    /// The quality, published for the stage's handler.
    quality: KnobCell,
    window: SampleWindow,
    inner: TunedResponseTimeController,
}

impl DegradingAdmission {
    /// A knob with `cfg`, run on `rt`'s window (`nreq` samples or `timeout`, its percentile);
    /// admission control, once on, is [`TunedResponseTimeController`] for `rt`'s target and
    /// percentile.
    pub fn new(cfg: DegradationConfig, rt: ResponseTimeConfig) -> Result<Self, InvalidConfig> {
        let window = SampleWindow::new(rt.nreq, rt.timeout, rt.percentile);
        let mut tuned = TunedConfig::new(rt.target);
        tuned.base.percentile = rt.percentile;
        Ok(DegradingAdmission {
            knob: Degradation::new(cfg)?,
            quality: KnobCell::new::<Quality>(),
            window,
            inner: TunedResponseTimeController::new(tuned)?,
        })
    }

    /// The quality the stage should deliver now.
    pub fn quality(&self) -> f64 {
        self.knob.state().quality
    }

    /// The queue limit in force (or, while admission is off, the one it would enforce).
    pub fn queue_limit(&self) -> f64 {
        self.inner.queue_limit()
    }

    fn enabled(&self) -> bool {
        self.knob.state().admission_enabled
    }

    fn run(&mut self, now: Time, p: Option<f64>) {
        if let Some(p) = p {
            let s = self.knob.update(now, &Duration::from_secs_f64(p));
            self.quality.set(s.quality);
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
            self.inner.admit_anyway(now);
            Ok(())
        }
    }

    fn undo_admit(&mut self, now: Time, class: u8) {
        self.inner.undo_admit(now, class);
    }

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        if self.enabled() {
            self.inner.on_dequeue(now, queued)
        } else {
            self.inner.dequeued(now);
            false
        }
    }

    fn on_served(&mut self, now: Time, class: u8, beyond_wait: Duration) {
        self.inner.on_served(now, class, beyond_wait);
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration) {
        let p = self.window.push(now, response.as_secs_f64());
        self.run(now, p);
        self.inner.on_complete(now, class, response, sojourn);
    }

    fn tick(&mut self, now: Time) {
        let p = self.window.poll(now);
        self.run(now, p);
        self.inner.tick(now);
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
        // On now, with the 1000 admitted still queued: the queue is over its limit.
        assert!(enabled(&a));
        assert_eq!(a.admit(s(3.0), 0), Err(RejectReason::QueueFull));
    }

    fn enabled(a: &DegradingAdmission) -> bool {
        a.state().contains(&("admission_enabled", 1.0))
    }

    /// A stage serving `per_s` events a second for `secs` from `from`, each `response` old
    /// when done, and admitting (or offering) one new event per event served, so the backlog
    /// stays where it was. Returns how many of those arrivals were admitted.
    fn serve(a: &mut DegradingAdmission, from: f64, secs: f64, per_s: f64, response: f64) -> usize {
        let mut admitted = 0;
        for i in 0..(secs * per_s) as usize {
            let t = s(from + i as f64 / per_s);
            a.on_dequeue(t, s(response));
            a.on_complete(t, 0, s(response), s(response));
            admitted += usize::from(a.admit(t, 0).is_ok());
        }
        admitted
    }

    #[test]
    fn the_limit_does_not_wind_down_while_admission_is_off() {
        let cfg = DegradationConfig {
            reenable_admission: false,
            ..DegradationConfig::new(s(1.0))
        };
        let mut a = DegradingAdmission::new(cfg, ResponseTimeConfig::new(s(1.0))).unwrap();
        let budget = a.inner.wait_budget();
        // Thirty seconds over target at 300 completions/s with a backlog of 1000: the knob is
        // at q_min, admission stays off, and the limit it would enforce has not adapted.
        assert_eq!(
            (0..1000).filter(|_| a.admit(s(0.0), 0).is_ok()).count(),
            1000
        );
        assert_eq!(serve(&mut a, 0.0, 30.0, 300.0, 5.0), 9000);
        assert_eq!(a.quality(), 0.01);
        assert!(!enabled(&a));
        assert_eq!(a.inner.wait_budget(), budget);
        assert_eq!(a.inner.queued(), 1000);
    }

    #[test]
    fn admission_knows_the_backlog_and_what_the_stage_sustains_when_it_starts() {
        let mut a = DegradingAdmission::new(
            DegradationConfig::new(s(1.0)),
            ResponseTimeConfig::new(s(1.0)),
        )
        .unwrap();
        // A backlog of 1000 built while admission was off, served at 400/s over target until
        // the knob re-enables admission control.
        assert_eq!(
            (0..1000).filter(|_| a.admit(s(0.0), 0).is_ok()).count(),
            1000
        );
        let mut t = 0.0;
        while !enabled(&a) {
            assert!(t < 60.0, "admission never re-enabled");
            serve(&mut a, t, 0.05, 400.0, 5.0);
            t += 0.05;
        }
        let d = a.inner.departures_per_s();
        assert!((d - 400.0).abs() < 0.05 * 400.0, "departures {d}/s");
        // The limit (400/s x a 0.5 s budget) is far under the backlog: nothing more is
        // admitted, and what waited past the target is dropped as it leaves the queue.
        assert!(
            (a.queue_limit() - 200.0).abs() < 20.0,
            "{}",
            a.queue_limit()
        );
        assert_eq!(serve(&mut a, t, 0.5, 400.0, 5.0), 0);
        assert!(a.on_dequeue(s(t + 0.5), s(5.0)));
        // Once the backlog is under the limit, arrivals are admitted up to it.
        while a.inner.queued() > 100 {
            a.on_dequeue(s(t + 0.6), s(0.1));
        }
        let admitted = (0..1000).filter(|_| a.admit(s(t + 0.6), 0).is_ok()).count();
        let (queued, limit) = (a.inner.queued() as f64, a.queue_limit());
        assert!(
            admitted > 0 && (queued - limit).abs() <= 1.0,
            "{queued} queued, limit {limit}"
        );
    }

    #[test]
    fn bad_config_is_an_error() {
        let mut c = DegradationConfig::new(s(1.0));
        c.q_min = 0.0;
        assert_eq!(Degradation::new(c).unwrap_err().param, "q_min");
    }
}
