//! Global control in the runtime (FAIR07 Sections 4.2.1 and 4.3.1): the operator's p90 target
//! turned into throughput targets for the self-tuning pools, with admission only at the first
//! stage.
//!
//! ```toml
//! [runtime.global]
//! target_p90_ms = 100       # the operator's percentile target
//! entry = "parse"           # the first stage: arrivals are counted and admission happens here
//! exit = "reply"            # the stage whose response times are the service's (default: entry)
//! dropper_fraction = 0.8    # the selective dropper at the entry: threshold = 0.8 x target
//! arrival_floor = true      # never target less throughput than arrives (false: clients that
//!                           # wait for replies, where the pool must shrink to a looser target)
//! ```
//!
//! [`Runtime::set_response_target`](crate::Runtime::set_response_target) changes the target
//! while running (FAIR07 Figure 5-7); the dropper keeps the threshold of the first target.
//!
//! Every stats period the control thread feeds [`GlobalTargets`] the exit stage's mean and p90
//! response times and throughput, the entry stage's arrival rate and the events waiting in every
//! stage's queue, and gives every pool its share of the throughput target: the target times the
//! pool's stages' admitted events over the entry's (FAIR07 equation 1: stages in series share
//! the target, parallel branches split it by their measured proportions). A self-tuning pool steers to that share unless it has a target
//! of its own. The entry stage gets the selective dropper (FAIR07 Section 4.2.3, the catalogue's
//! `selective_dropper`) unless its settings name another admission controller.

use std::collections::BTreeMap;
use std::time::Duration;

use seda_control::selftune::{GlobalConfig, GlobalTargets, ServiceSample, TargetSource};
use serde::{Deserialize, Serialize};

use crate::stats::StageSnapshot;

/// Default share of the target a request may wait in the entry queue before the selective
/// dropper drops it (FAIR07 Section 5.3: 0.8).
pub const DEFAULT_DROPPER_FRACTION: f64 = 0.8;

/// Settings of global control (see the module docs).
///
/// New fields may be added: build it with [`GlobalControlConfig::new`] (or from a file) and
/// set fields.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GlobalControlConfig {
    /// The p90 response-time target, ms.
    pub target_p90_ms: u64,
    /// The first stage.
    pub entry: String,
    /// The stage whose response times are the service's (default: the entry).
    pub exit: Option<String>,
    /// Weight of the past in the percentile-to-mean map (`W`, equation 3).
    pub weight: Option<f64>,
    /// The entry's selective-dropper threshold as a share of the target; 0 for no dropper.
    pub dropper_fraction: Option<f64>,
    /// Never target less throughput than arrives (default true; see
    /// `seda_control::selftune::GlobalConfig::arrival_floor`).
    pub arrival_floor: Option<bool>,
}

impl GlobalControlConfig {
    /// Global control toward a p90 of `target`, with admission at stage `entry`.
    pub fn new(target: Duration, entry: impl Into<String>) -> Self {
        GlobalControlConfig {
            target_p90_ms: target.as_millis().try_into().unwrap_or(u64::MAX),
            entry: entry.into(),
            exit: None,
            weight: None,
            dropper_fraction: None,
            arrival_floor: None,
        }
    }

    /// The target.
    pub fn target(&self) -> Duration {
        Duration::from_millis(self.target_p90_ms)
    }

    /// The dropper's threshold, if there is to be one.
    pub fn dropper_threshold(&self) -> Option<Duration> {
        let f = self.dropper_fraction.unwrap_or(DEFAULT_DROPPER_FRACTION);
        (f.is_finite() && f > 0.0).then(|| self.target().mul_f64(f))
    }

    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if self.target_p90_ms == 0 {
            return Some(("runtime.global.target_p90_ms", "must be > 0".into()));
        }
        if let Some(w) = self.weight
            && !(0.0..1.0).contains(&w)
        {
            return Some((
                "runtime.global.weight",
                format!("must be in [0, 1), got {w}"),
            ));
        }
        if let Some(f) = self.dropper_fraction
            && !(f.is_finite() && f >= 0.0)
        {
            return Some((
                "runtime.global.dropper_fraction",
                format!("must be >= 0, got {f}"),
            ));
        }
        None
    }
}

/// Global control's state, in snapshots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GlobalSnapshot {
    /// The p90 target, s.
    pub target_p90_s: f64,
    /// The service's throughput target, events/s.
    pub throughput_target_per_s: Option<f64>,
    /// The percentile-to-mean scale (`alpha`).
    pub alpha: Option<f64>,
    /// What chose the target: `littles_law` or `arrival_peak` (the fast path).
    pub source: std::borrow::Cow<'static, str>,
    /// The exit stage's p90 in the last period, s.
    pub p90_s: Option<f64>,
}

/// The running global controller.
#[derive(Debug)]
pub(crate) struct GlobalControl {
    config: GlobalControlConfig,
    targets: GlobalTargets,
    snapshot: GlobalSnapshot,
}

impl GlobalControl {
    pub(crate) fn new(config: GlobalControlConfig) -> Self {
        let mut g = GlobalConfig::new(config.target());
        if let Some(w) = config.weight {
            g.weight = w;
        }
        if let Some(floor) = config.arrival_floor {
            g.arrival_floor = floor;
        }
        GlobalControl {
            snapshot: GlobalSnapshot {
                target_p90_s: config.target().as_secs_f64(),
                source: "littles_law".into(),
                ..Default::default()
            },
            targets: GlobalTargets::new(g),
            config,
        }
    }

    pub(crate) fn set_target(&mut self, target: Duration) {
        self.targets.set_target(target);
        self.config.target_p90_ms = target.as_millis().try_into().unwrap_or(u64::MAX);
        self.snapshot.target_p90_s = target.as_secs_f64();
    }

    pub(crate) fn snapshot(&self) -> GlobalSnapshot {
        self.snapshot.clone()
    }

    /// Feeds one stats period of every stage; returns each stage's throughput target by name,
    /// or nothing while the service has no target yet.
    pub(crate) fn update(&mut self, stages: &[StageSnapshot]) -> BTreeMap<String, f64> {
        let find = |name: &str| stages.iter().find(|s| s.name == name);
        let exit_name = self.config.exit.as_deref().unwrap_or(&self.config.entry);
        let (Some(entry), Some(exit)) = (find(&self.config.entry), find(exit_name)) else {
            return BTreeMap::new();
        };
        let (Some(ep), Some(xp)) = (&entry.period, &exit.period) else {
            return BTreeMap::new();
        };
        let secs = |d: f64| d.max(1e-3);
        let sample = ServiceSample {
            mean_response: secs_to_duration(xp.response.mean_s),
            percentile_response: secs_to_duration(xp.response.p90_s),
            throughput_per_s: xp.counters.completed as f64 / secs(xp.duration_s),
            arrivals_per_s: ep.counters.arrivals as f64 / secs(ep.duration_s),
            waiting: stages.iter().map(|s| s.queue_len as f64).sum(),
        };
        let target = self.targets.update(sample);
        self.snapshot.throughput_target_per_s = target;
        self.snapshot.alpha = self.targets.alpha();
        self.snapshot.p90_s = xp.response.p90_s;
        self.snapshot.source = match self.targets.source() {
            TargetSource::LittlesLaw => "littles_law".into(),
            TargetSource::ArrivalPeak => "arrival_peak".into(),
        };
        let Some(target) = target else {
            return BTreeMap::new();
        };
        let entry_admitted = ep.counters.admitted;
        stages
            .iter()
            .map(|s| {
                let admitted = s.period.as_ref().map_or(0, |p| p.counters.admitted);
                let share = if s.name == entry.name || entry_admitted == 0 {
                    1.0
                } else {
                    admitted as f64 / entry_admitted as f64
                };
                (s.name.clone(), target * share)
            })
            .collect()
    }
}

fn secs_to_duration(s: Option<f64>) -> Duration {
    s.filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::ZERO, Duration::from_secs_f64)
}
