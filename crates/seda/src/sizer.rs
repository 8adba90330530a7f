//! Pool sizers: what chooses a pool's thread count while it runs.
//!
//! A pool's size is chosen by one of the sizers of seda-control's registry
//! ([`seda_control::catalogue::sizers`]; today four), picked per stage or domain in code
//! ([`StageBuilder::sizer`](crate::StageBuilder::sizer)) or the configuration file
//! (`sizer = { kind = "self_tuning", law = "p" }`):
//! - `seda` (the default): SEDA's heuristic (SEDA01 Section 4.2), a thread added when the
//!   queue stays long, idle threads retired;
//! - `fixed`: the initial thread count, never changed (the baseline a sweep of sizes gives);
//! - `self_tuning`: FAIR07 Section 4.3's pool, P (pre-compensated), PI or PD control toward a
//!   throughput target on an ARX model fitted online
//!   ([`SelfTuningPool`](seda_control::selftune::SelfTuningPool));
//! - `hill_climbing`: the .NET thread pool's search for the most completions per second
//!   ([`HillClimbing`](seda_control::selftune::HillClimbing)).
//!
//! Every sizer but SEDA's heuristic is built by name from the registry and driven through
//! [`seda_control::sizer::Sizer`], as the simulator drives it: every `period_ms` the control
//! thread feeds it the period's completions, arrivals, busy time and threads and applies its
//! thread target through the pool: threads are started at once, and workers
//! above the target retire when they finish their batch. The self-tuning pool's throughput
//! target is, in order: one set at run time
//! ([`Runtime::set_throughput_target`](crate::Runtime::set_throughput_target)), `target_per_s`
//! from the settings, the global controller's share for this pool (`[runtime.global]`,
//! [`crate::global`]), or else the pool's own arrival rate.

use std::time::Duration;

use seda_control::catalogue::sizers;
use seda_control::selftune::Law;
pub use seda_control::sizer::SizerReport as SizerState;
use seda_control::sizer::SizerSettings;
use serde::{Deserialize, Deserializer, Serialize};

/// Default sizer period: one second, the thesis's control period.
pub const DEFAULT_SIZER_PERIOD: Duration = Duration::from_secs(1);

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
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SizerConfig {
    /// Which sizer: a name of the registry ([`sizers::SIZERS`]); an unknown name is an error
    /// that lists the known ones.
    #[serde(deserialize_with = "registry_name")]
    pub kind: String,
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

/// Reads `kind`, refusing a name the registry does not have.
fn registry_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    sizers::find(&name).map_err(serde::de::Error::custom)?;
    Ok(name)
}

impl Default for SizerConfig {
    fn default() -> Self {
        SizerConfig::new(sizers::SEDA)
    }
}

impl SizerConfig {
    /// The sizer `kind` (a registry name: [`sizers::FIXED`]...) with default settings.
    pub fn new(kind: &str) -> Self {
        SizerConfig {
            kind: kind.to_string(),
            law: None,
            period_ms: None,
            target_per_s: None,
            max_step: None,
            settle_periods: None,
            overshoot: None,
        }
    }

    /// The self-tuning pool with `law`.
    pub fn self_tuning(law: Law) -> Self {
        SizerConfig {
            law: Some(law.into()),
            ..SizerConfig::new(sizers::SELF_TUNING)
        }
    }

    /// Whether this is SEDA's heuristic, which the pool runs itself (see `pool.rs`).
    pub fn is_seda(&self) -> bool {
        self.kind == sizers::SEDA
    }

    /// What the registry builds a sizer from, within a pool's bounds.
    pub(crate) fn settings(&self, min: usize, max: usize, initial: usize) -> SizerSettings {
        let mut s = SizerSettings::new(min, max);
        s.initial_threads = initial;
        s.period = self.period();
        s.law = self.law.unwrap_or_default().into();
        s.target_per_s = self.target_per_s;
        s.max_step = self.max_step;
        s.settle_periods = self.settle_periods;
        s.overshoot = self.overshoot;
        s
    }

    /// The control period.
    pub fn period(&self) -> Duration {
        self.period_ms
            .map_or(DEFAULT_SIZER_PERIOD, |ms| Duration::from_millis(ms.max(1)))
    }

    /// Why these settings are invalid, if they are: `(setting, reason)`.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if let Err(e) = sizers::find(&self.kind) {
            return Some(("sizer.kind", e.to_string()));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Configuration files name every sizer of the registry, and only those: an unknown name
    /// is an error that lists the known ones.
    #[test]
    fn kind_is_a_registry_name() {
        for entry in sizers::SIZERS.iter() {
            let parsed: SizerConfig =
                toml::from_str(&format!("kind = \"{}\"", entry.name)).unwrap();
            assert_eq!(parsed.kind, entry.name);
            assert!(parsed.problem().is_none());
        }
        let err = toml::from_str::<SizerConfig>("kind = \"self_tuned\"").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("unknown sizer `self_tuned`; known sizers: seda, fixed, self_tuning"),
            "{text}"
        );
        let (setting, reason) = SizerConfig::new("bogus").problem().unwrap();
        assert_eq!(setting, "sizer.kind");
        assert!(reason.contains("hill_climbing"), "{reason}");
    }
}
