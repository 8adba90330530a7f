//! Pool sizers: what chooses a pool's thread count while it runs.
//!
//! A pool's size is chosen by one of four sizers, picked per stage or domain in code
//! ([`StageBuilder::sizer`](crate::StageBuilder::sizer)) or the configuration file
//! (`sizer = { kind = "self_tuning", law = "p" }`):
//! - `seda` (the default): SEDA's heuristic (SEDA01 Section 4.2), a thread added when the
//!   queue stays long, idle threads retired;
//! - `fixed`: the initial thread count, never changed (the baseline a sweep of sizes gives);
//! - `self_tuning`: FAIR07 Section 4.3's pool, P (pre-compensated), PI or PD control toward a
//!   throughput target on an ARX model fitted online
//!   ([`SelfTuningPool`]);
//! - `hill_climbing`: the .NET thread pool's search for the most completions per second
//!   ([`HillClimbing`]).
//!
//! Every `period_ms` the control thread feeds the sizer the period's completions and threads
//! and applies its thread target through the pool: threads are started at once, and workers
//! above the target retire when they finish their batch. The self-tuning pool's throughput
//! target is, in order: one set at run time
//! ([`Runtime::set_throughput_target`](crate::Runtime::set_throughput_target)), `target_per_s`
//! from the settings, the global controller's share for this pool (`[runtime.global]`,
//! [`crate::global`]), or else the pool's own arrival rate.

use std::time::Duration;

use seda_control::catalogue::sizers;
use seda_control::selftune::{
    HillClimbing, Law, PeriodSample, PoleSpec, SelfTuningConfig, SelfTuningPool,
};
use serde::{Deserialize, Serialize};

/// Default sizer period: one second, the thesis's control period.
pub const DEFAULT_SIZER_PERIOD: Duration = Duration::from_secs(1);

/// Which sizer a pool runs. New sizers may be added: match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SizerKind {
    /// SEDA's heuristic (the pool controller of `pool_controller`).
    #[default]
    Seda,
    /// The initial thread count, unchanged.
    Fixed,
    /// FAIR07's self-tuning pool on an online ARX model.
    SelfTuning,
    /// The .NET thread pool's hill climbing.
    HillClimbing,
}

impl SizerKind {
    /// The name configuration files use, as the sizers' registry
    /// ([`seda_control::catalogue::sizers`]) lists it.
    pub fn name(self) -> &'static str {
        match self {
            SizerKind::Seda => sizers::SEDA,
            SizerKind::Fixed => sizers::FIXED,
            SizerKind::SelfTuning => sizers::SELF_TUNING,
            SizerKind::HillClimbing => sizers::HILL_CLIMBING,
        }
    }

    /// Every sizer the runtime runs.
    pub const ALL: [SizerKind; 4] = [
        SizerKind::Seda,
        SizerKind::Fixed,
        SizerKind::SelfTuning,
        SizerKind::HillClimbing,
    ];
}

/// The self-tuning pool's control law, as configuration files name it. New laws may be
/// added: match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LawName {
    /// Proportional with pre-compensator.
    #[default]
    P,
    /// Proportional-integral.
    Pi,
    /// Proportional-derivative.
    Pd,
}

impl From<LawName> for Law {
    fn from(l: LawName) -> Law {
        match l {
            LawName::P => Law::P,
            LawName::Pi => Law::Pi,
            LawName::Pd => Law::Pd,
        }
    }
}

impl From<Law> for LawName {
    fn from(l: Law) -> LawName {
        match l {
            Law::P => LawName::P,
            Law::Pi => LawName::Pi,
            Law::Pd => LawName::Pd,
        }
    }
}

/// A pool's sizer and its settings (absent fields take the defaults):
///
/// ```toml
/// [stages.db]
/// threads = 4
/// max_threads = 32
/// sizer = { kind = "self_tuning", law = "pi", period_ms = 1000, target_per_s = 400.0 }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SizerConfig {
    /// Which sizer.
    pub kind: SizerKind,
    /// The control law (`self_tuning`).
    pub law: Option<LawName>,
    /// Control period, ms (`self_tuning`, `hill_climbing`).
    pub period_ms: Option<u64>,
    /// A fixed throughput target, events/s (`self_tuning`; see the module docs for the rest).
    pub target_per_s: Option<f64>,
    /// Most threads changed in one period (`self_tuning`).
    pub max_step: Option<usize>,
    /// Desired settling time in periods (`self_tuning`, PI and PD).
    pub settle_periods: Option<f64>,
    /// Desired largest overshoot, a fraction (`self_tuning`, PI and PD).
    pub overshoot: Option<f64>,
}

impl SizerConfig {
    /// A sizer of `kind` with default settings.
    pub fn new(kind: SizerKind) -> Self {
        SizerConfig {
            kind,
            ..Default::default()
        }
    }

    /// The self-tuning pool with `law`.
    pub fn self_tuning(law: Law) -> Self {
        SizerConfig {
            law: Some(law.into()),
            ..SizerConfig::new(SizerKind::SelfTuning)
        }
    }

    /// Whether this is SEDA's heuristic.
    pub fn is_seda(&self) -> bool {
        self.kind == SizerKind::Seda
    }

    /// The control period.
    pub fn period(&self) -> Duration {
        self.period_ms
            .map_or(DEFAULT_SIZER_PERIOD, |ms| Duration::from_millis(ms.max(1)))
    }

    /// Why these settings are invalid, if they are: `(setting, reason)`.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(t) = self.target_per_s
            && !(t.is_finite() && t >= 0.0)
        {
            return Some(("sizer.target_per_s", format!("must be >= 0, got {t}")));
        }
        if let Some(k) = self.settle_periods
            && !(k.is_finite() && k >= 1.0)
        {
            return Some(("sizer.settle_periods", format!("must be >= 1, got {k}")));
        }
        if let Some(m) = self.overshoot
            && !(m > 0.0 && m < 1.0)
        {
            return Some(("sizer.overshoot", format!("must be in (0, 1), got {m}")));
        }
        if self.max_step == Some(0) {
            return Some(("sizer.max_step", "must be >= 1".into()));
        }
        None
    }
}

/// One period of a pool, as the control thread measures it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PoolPeriod {
    pub(crate) secs: f64,
    pub(crate) completions: u64,
    pub(crate) arrivals: u64,
    /// Seconds the pool's handlers ran in it, summed over threads.
    pub(crate) busy_secs: f64,
    pub(crate) threads: usize,
}

/// Throughput targets given to a pool from outside its sizer, events/s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct OutsideTargets {
    /// Set at run time ([`Runtime::set_throughput_target`](crate::Runtime::set_throughput_target)).
    pub(crate) run_time: Option<f64>,
    /// The global controller's share for this pool.
    pub(crate) global: Option<f64>,
}

/// What a model-driven sizer shows in snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizerState {
    /// The thread count the sizer asks for (`None` under SEDA's heuristic).
    pub threads_target: Option<usize>,
    /// The throughput the self-tuning pool steers to, events/s.
    pub throughput_target_per_s: Option<f64>,
    /// Completions per second in the last period.
    pub throughput_per_s: Option<f64>,
    /// Threads running a handler, on average over the last period.
    pub busy_threads: Option<f64>,
    /// The ARX model's `a` and `b` (self-tuning, once fitted).
    pub arx_a: Option<f64>,
    /// See `arx_a`.
    pub arx_b: Option<f64>,
    /// Mean relative one-step prediction error of the ARX model so far (FAIR07 Figure 4-7).
    pub arx_error: Option<f64>,
}

/// A running sizer that sets thread targets (SEDA's heuristic stays in the pool).
#[derive(Debug)]
pub(crate) enum TargetSizer {
    Fixed(usize),
    SelfTuning(Box<SelfTuning>),
    HillClimbing(Box<HillClimbing>),
}

#[derive(Debug)]
pub(crate) struct SelfTuning {
    pool: SelfTuningPool,
    fixed_target: Option<f64>,
    prev: Option<(usize, f64)>,
    error_sum: f64,
    error_samples: u64,
}

impl TargetSizer {
    /// The sizer `config` asks for, or `None` for SEDA's heuristic.
    pub(crate) fn new(
        config: &SizerConfig,
        min: usize,
        max: usize,
        initial: usize,
    ) -> Option<Self> {
        match config.kind {
            SizerKind::Seda => None,
            SizerKind::Fixed => Some(TargetSizer::Fixed(initial.clamp(min, max))),
            SizerKind::HillClimbing => Some(TargetSizer::HillClimbing(Box::new(
                HillClimbing::new(min, max, initial),
            ))),
            SizerKind::SelfTuning => {
                let d = SelfTuningConfig::default();
                let poles = PoleSpec {
                    settle_periods: config.settle_periods.unwrap_or(d.poles.settle_periods),
                    overshoot: config.overshoot.unwrap_or(d.poles.overshoot),
                };
                let pool = SelfTuningPool::new(SelfTuningConfig {
                    law: config.law.unwrap_or_default().into(),
                    min_threads: min,
                    max_threads: max,
                    max_step: config.max_step.unwrap_or(d.max_step),
                    forgetting: d.forgetting,
                    poles,
                });
                Some(TargetSizer::SelfTuning(Box::new(SelfTuning {
                    pool,
                    fixed_target: config.target_per_s,
                    prev: None,
                    error_sum: 0.0,
                    error_samples: 0,
                })))
            }
        }
    }

    /// The thread count to start with.
    pub(crate) fn initial(&self, initial: usize) -> usize {
        match self {
            TargetSizer::Fixed(n) => *n,
            _ => initial,
        }
    }

    /// Feeds one period; returns the thread target for the next. `targets` are the throughput
    /// targets from outside: one set at run time, and the global controller's share.
    pub(crate) fn update(
        &mut self,
        p: PoolPeriod,
        targets: OutsideTargets,
        state: &mut SizerState,
    ) -> usize {
        let secs = p.secs.max(1e-3);
        let y = p.completions as f64 / secs;
        let busy = p.busy_secs / secs;
        state.throughput_per_s = Some(y);
        state.busy_threads = Some(busy);
        let next = match self {
            TargetSizer::Fixed(n) => *n,
            TargetSizer::HillClimbing(h) => h.update(p.threads, secs, p.completions),
            TargetSizer::SelfTuning(s) => {
                if let (Some(m), Some((prev_n, prev_y))) = (s.pool.model(), s.prev)
                    && y > 0.0
                {
                    let du = p.threads as f64 - prev_n as f64;
                    s.error_sum += (m.predict(prev_y, du) - y).abs() / y;
                    s.error_samples += 1;
                }
                s.prev = Some((p.threads, y));
                let target = targets
                    .run_time
                    .or(s.fixed_target)
                    .or(targets.global)
                    .unwrap_or(p.arrivals as f64 / secs);
                state.throughput_target_per_s = Some(target);
                let next = s.pool.update(PeriodSample {
                    throughput_per_s: y,
                    threads: p.threads,
                    target_per_s: target,
                    busy_threads: Some(busy),
                });
                let model = s.pool.model();
                state.arx_a = model.map(|m| m.a);
                state.arx_b = model.map(|m| m.b);
                state.arx_error =
                    (s.error_samples > 0).then(|| s.error_sum / s.error_samples as f64);
                next
            }
        };
        state.threads_target = Some(next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime runs every sizer of the registry, each under the name the registry and
    /// configuration files give it.
    #[test]
    fn every_sizer_of_the_registry_runs_under_its_name() {
        let names: Vec<&str> = SizerKind::ALL.iter().map(|k| k.name()).collect();
        let listed: Vec<&str> = sizers::SIZERS.iter().map(|e| e.name).collect();
        assert_eq!(names, listed);
        for kind in SizerKind::ALL {
            let toml = format!("kind = \"{}\"", kind.name());
            let parsed: SizerConfig = toml::from_str(&toml).unwrap();
            assert_eq!(parsed.kind, kind);
        }
    }
}
