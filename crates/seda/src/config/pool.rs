//! A thread pool's settings (a stage's own pool or a domain): threads, SEDA's pool
//! controller, the sizer, and AggThrottle's batching.

use std::time::Duration;

use seda_control::ThreadPoolConfig;
use serde::Deserialize;

use crate::sizer::SizerConfig;

/// Thread-pool settings (of a stage's own pool or a domain).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolSettings {
    /// Initial workers.
    pub threads: Option<usize>,
    /// Fewest workers.
    pub min_threads: Option<usize>,
    /// Most workers.
    pub max_threads: Option<usize>,
    /// SEDA's thread-pool controller.
    pub pool_controller: Option<PoolControllerConfig>,
    /// What sizes the pool (SEDA's heuristic by default).
    pub sizer: Option<SizerConfig>,
}

/// SEDA's thread-pool controller settings; absent fields take Sandstorm's defaults.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolControllerConfig {
    /// Whether the controller adds threads (idle retirement always applies).
    #[serde(default = "yes")]
    pub enable: bool,
    /// Sampling period, ms.
    pub delay_ms: Option<u64>,
    /// Queue length that asks for a thread.
    pub threshold: Option<usize>,
    /// Idle time before a worker retires, ms.
    pub idle_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

/// AggThrottle settings; absent fields take Sandstorm's defaults.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BatchControllerConfig {
    /// Whether the controller runs.
    #[serde(default = "yes")]
    pub enable: bool,
    /// Smallest batch.
    pub min: Option<usize>,
    /// Largest batch.
    pub max: Option<usize>,
    /// Shortest time between measurements, ms.
    pub recalc_ms: Option<u64>,
    /// EWMA weight of the previous average.
    pub smooth: Option<f64>,
}

impl PoolSettings {
    /// The thread-pool controller configuration these settings describe.
    pub fn to_pool_config(&self) -> ThreadPoolConfig {
        let d = ThreadPoolConfig::default();
        let pc = self.pool_controller.as_ref();
        ThreadPoolConfig {
            initial_threads: self.threads.unwrap_or(d.initial_threads),
            min_threads: self.min_threads.unwrap_or(d.min_threads),
            max_threads: self.max_threads.unwrap_or(d.max_threads),
            delay: pc
                .and_then(|c| c.delay_ms)
                .map_or(d.delay, Duration::from_millis),
            threshold: pc.and_then(|c| c.threshold).unwrap_or(d.threshold),
            idle_time: pc
                .and_then(|c| c.idle_ms)
                .map_or(d.idle_time, Duration::from_millis),
            ticks_per_add: d.ticks_per_add,
        }
        .normalized()
    }

    /// Whether SEDA's pool controller adds threads (on by default, off under another sizer).
    pub fn controller_enabled(&self) -> bool {
        self.pool_controller.as_ref().is_none_or(|c| c.enable) && self.sizer_config().is_seda()
    }

    /// The pool's sizer settings.
    pub fn sizer_config(&self) -> SizerConfig {
        self.sizer.clone().unwrap_or_default()
    }
}
