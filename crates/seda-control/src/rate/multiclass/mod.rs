//! Class-based differentiation (WC03, Section 3.3).
//!
//! One response-time controller (WC03 Section 3.2) and one token bucket per class, each with its
//! own target. When class `c` misses its target, every lower class's rate is divided by `adj_lo`
//! (10); only once all lower classes sit at the minimum rate for more than `lc_thresh` (20) runs
//! is class `c`'s own rate cut by `adj_d`. While a higher class misses its target, lower classes
//! are flagged so their rates do not grow in their next run. Class 0 is the lowest; the lowest
//! class has no lower class to sacrifice, so it is cut directly (WC03 leaves this case implicit).

use crate::InvalidConfig;
use std::time::Duration;

use crate::entry::{self, Entry, Params, Role};
use crate::response_time::{ResponseTimeConfig, SampleWindow, aimd_step, ewma};
use crate::{AdmissionController, RejectReason, Time, TokenBucket};

/// The most classes a configuration file can give targets for (`class0_target_s` ...
/// `class9_target_s`); the controller itself takes up to 256.
pub const MAX_CONFIGURED_CLASSES: usize = 10;

const CLASS_TARGETS: [&str; MAX_CONFIGURED_CLASSES] = [
    "class0_target_s",
    "class1_target_s",
    "class2_target_s",
    "class3_target_s",
    "class4_target_s",
    "class5_target_s",
    "class6_target_s",
    "class7_target_s",
    "class8_target_s",
    "class9_target_s",
];

/// The name configurations give this controller (`admission = { kind = "multiclass" }`).
pub const MULTICLASS: &str = "multiclass";

/// The catalogue entry of [`MulticlassController`].
pub(crate) const ENTRY: Entry = Entry {
    name: MULTICLASS,
    about: "WC03's per-class targets, lower classes cut first",
    source: "WC03 Section 3.3",
    role: Role::Rate,
    compared: false,
    build: |p| {
        Ok(Box::new(MulticlassController::new(
            MulticlassConfig::read(p)?,
        )?))
    },
    aim: entry::target_s,
};

/// Parameters of [`MulticlassController`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MulticlassConfig {
    /// Shared parameters (WC03 Figure 4; `target` is the default target of every class).
    pub base: ResponseTimeConfig,
    /// Per-class targets, lowest class first; the number of classes is its length.
    pub targets: Vec<Duration>,
    /// Divisor applied to lower classes when a higher class misses (`adj_lo`, 10).
    pub adj_lo: f64,
    /// Runs with lower classes at the minimum before a class cuts itself (`lc_thresh`, 20).
    pub lc_thresh: u32,
}

impl MulticlassConfig {
    /// `classes` classes sharing `target`, with WC03's defaults.
    pub fn new(target: Duration, classes: usize) -> Self {
        MulticlassConfig {
            base: ResponseTimeConfig::new(target),
            targets: vec![target; classes.max(1)],
            adj_lo: 10.0,
            lc_thresh: 20,
        }
    }

    /// Reads the parameters a configuration gives: WC03 Figure 4's (`target_s` is every
    /// class's default), `classes` (2), `classN_target_s`, `adj_lo`, `lc_thresh`.
    pub fn read(p: &mut Params<'_>) -> Result<Self, InvalidConfig> {
        let base = ResponseTimeConfig::read(
            p,
            ResponseTimeConfig::new(ResponseTimeConfig::DEFAULT_TARGET),
        );
        let classes = p.count("classes", 2);
        if !(1..=MAX_CONFIGURED_CLASSES).contains(&classes) {
            return Err(InvalidConfig::new(
                "classes",
                format!("classes must be in 1..={MAX_CONFIGURED_CLASSES}, got {classes}"),
            ));
        }
        let mut cfg = MulticlassConfig::new(base.target, classes);
        cfg.base = base;
        for (t, name) in cfg.targets.iter_mut().zip(CLASS_TARGETS) {
            *t = p.secs(name, *t);
        }
        if let Some(n) = CLASS_TARGETS[classes..].iter().find(|n| p.has(n)) {
            return Err(InvalidConfig::new(
                "classes",
                format!("`{n}` names a class beyond `classes` = {classes}"),
            ));
        }
        cfg.adj_lo = p.f64("adj_lo", cfg.adj_lo);
        cfg.lc_thresh = p.count_u32("lc_thresh", cfg.lc_thresh);
        Ok(cfg)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.base.validate()?;
        if self.targets.is_empty() || self.targets.len() > 256 {
            return Err(InvalidConfig::new(
                "classes",
                format!("classes must be in 1..=256, got {}", self.targets.len()),
            ));
        }
        if self.targets.iter().any(|t| t.is_zero()) {
            return Err(InvalidConfig::new(
                "class_target_s",
                "every class target must be greater than 0",
            ));
        }
        if !(self.adj_lo.is_finite() && self.adj_lo > 1.0) {
            return Err(InvalidConfig::new(
                "adj_lo",
                format!("adj_lo must be greater than 1, got {}", self.adj_lo),
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Class {
    target_s: f64,
    bucket: TokenBucket,
    window: SampleWindow,
    estimate_s: Option<f64>,
    lc: u32,
    hold_increase: bool,
}

/// WC03 Section 3.3's multiclass controller.
#[derive(Debug, Clone)]
pub struct MulticlassController {
    cfg: MulticlassConfig,
    classes: Vec<Class>,
}

impl MulticlassController {
    /// A controller with `cfg`.
    pub fn new(cfg: MulticlassConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        let b = &cfg.base;
        let classes = cfg
            .targets
            .iter()
            .map(|t| Class {
                target_s: t.as_secs_f64(),
                bucket: TokenBucket::new(b.initial_rate_per_s, b.bucket_depth),
                window: SampleWindow::new(b.nreq, b.timeout, b.percentile),
                estimate_s: None,
                lc: 0,
                hold_increase: false,
            })
            .collect();
        Ok(MulticlassController { cfg, classes })
    }

    /// The number of classes.
    pub fn classes(&self) -> usize {
        self.classes.len()
    }

    /// The admission rate of `class` (classes above the top one share the top one's bucket).
    pub fn rate_per_s(&self, class: u8) -> f64 {
        self.classes[self.index(class)].bucket.rate_per_s()
    }

    fn index(&self, class: u8) -> usize {
        (class as usize).min(self.classes.len() - 1)
    }

    /// Runs class `c`'s controller on one window's percentile.
    pub fn observe(&mut self, now: Time, class: u8, sample_s: f64) {
        let c = self.index(class);
        let b = &self.cfg.base;
        let k = &mut self.classes[c];
        let cur = ewma(k.estimate_s, b.alpha, sample_s);
        k.estimate_s = Some(cur);
        let err = (cur - k.target_s) / k.target_s;
        let hold = std::mem::take(&mut k.hold_increase);
        if err > b.err_d {
            let min = b.min_rate_per_s;
            let lower_at_min = self.classes[..c]
                .iter()
                .all(|l| l.bucket.rate_per_s() <= min);
            if c == 0 {
                let k = &mut self.classes[0];
                k.bucket
                    .set_rate(now, aimd_step(b, k.bucket.rate_per_s(), err));
            } else if lower_at_min {
                let k = &mut self.classes[c];
                k.lc += 1;
                if k.lc > self.cfg.lc_thresh {
                    k.bucket
                        .set_rate(now, aimd_step(b, k.bucket.rate_per_s(), err));
                }
            } else {
                for l in &mut self.classes[..c] {
                    let r = (l.bucket.rate_per_s() / self.cfg.adj_lo).max(min);
                    l.bucket.set_rate(now, r);
                }
            }
            for l in &mut self.classes[..c] {
                l.hold_increase = true;
            }
        } else {
            let k = &mut self.classes[c];
            k.lc = 0;
            if !(hold && err < b.err_i) {
                k.bucket
                    .set_rate(now, aimd_step(b, k.bucket.rate_per_s(), err));
            }
        }
    }

    fn poll(&mut self, now: Time) {
        for c in 0..self.classes.len() {
            if let Some(p) = self.classes[c].window.poll(now) {
                self.observe(now, c as u8, p);
            }
        }
    }
}

impl AdmissionController for MulticlassController {
    fn name(&self) -> &'static str {
        "multiclass"
    }

    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason> {
        let c = self.index(class);
        if let Some(p) = self.classes[c].window.poll(now) {
            self.observe(now, class, p);
        }
        if self.classes[c].bucket.try_take(now, 1.0) {
            Ok(())
        } else {
            Err(RejectReason::Class)
        }
    }

    fn undo_admit(&mut self, _now: Time, class: u8) {
        let c = self.index(class);
        self.classes[c].bucket.give_back(1.0);
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, _sojourn: Duration) {
        let c = self.index(class);
        if let Some(p) = self.classes[c].window.push(now, response.as_secs_f64()) {
            self.observe(now, class, p);
        }
    }

    fn tick(&mut self, now: Time) {
        self.poll(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        const NAMES: [&str; 4] = ["rate0_per_s", "rate1_per_s", "rate2_per_s", "rate3_per_s"];
        self.classes
            .iter()
            .zip(NAMES)
            .map(|(k, n)| (n, k.bucket.rate_per_s()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    fn two() -> MulticlassController {
        MulticlassController::new(MulticlassConfig::new(s(1.0), 2)).unwrap()
    }

    #[test]
    fn a_missing_high_class_cuts_the_low_class_by_adj_lo_first() {
        let mut m = two();
        m.observe(s(0.0), 1, 3.0);
        assert_eq!(m.rate_per_s(0), 10.0);
        assert_eq!(m.rate_per_s(1), 100.0);
    }

    #[test]
    fn the_high_class_cuts_itself_only_after_lc_thresh_runs_at_the_minimum() {
        let mut m = two();
        for i in 0..5 {
            m.observe(s(i as f64), 1, 3.0); // 100 -> 10 -> 1 -> 0.1 -> 0.05 -> 0.05
        }
        assert_eq!(m.rate_per_s(0), 0.05);
        assert_eq!(m.rate_per_s(1), 100.0);
        // The 5th run above already found the low class at the minimum (lc = 1).
        for i in 0..19 {
            m.observe(s(10.0 + i as f64), 1, 3.0);
        }
        assert_eq!(m.rate_per_s(1), 100.0, "lc = 20 is not yet above lc_thresh");
        m.observe(s(40.0), 1, 3.0);
        assert!((m.rate_per_s(1) - 100.0 / 1.2).abs() < 1e-9);
    }

    #[test]
    fn lower_classes_do_not_grow_while_a_higher_class_misses() {
        let mut m = two();
        m.observe(s(0.0), 1, 3.0); // low: 100 -> 10, flagged
        m.observe(s(1.0), 0, 0.1); // low far under target, but held
        assert_eq!(m.rate_per_s(0), 10.0);
        m.observe(s(2.0), 0, 0.1); // flag cleared: grows
        assert!(m.rate_per_s(0) > 10.0);
    }

    #[test]
    fn the_lowest_class_cuts_itself_directly() {
        let mut m = two();
        m.observe(s(0.0), 0, 3.0);
        assert!((m.rate_per_s(0) - 100.0 / 1.2).abs() < 1e-9);
        assert_eq!(m.rate_per_s(1), 100.0);
    }

    #[test]
    fn rejects_with_reason_class_and_maps_unknown_classes_to_the_top() {
        let mut m = two();
        for i in 0..5 {
            m.observe(s(i as f64), 1, 3.0);
        }
        let t = s(10.0);
        let low = (0..100).filter(|_| m.admit(t, 0).is_ok()).count();
        let high = (0..100).filter(|_| m.admit(t, 7).is_ok()).count();
        assert_eq!((low, high), (10, 10)); // bucket depth 10 each
        assert_eq!(m.admit(t, 0), Err(RejectReason::Class));
        assert!(m.admit(s(10.2), 1).is_ok()); // 100/s refills the top bucket
        assert!(m.admit(s(10.2), 0).is_err()); // 0.05/s does not
    }
}
