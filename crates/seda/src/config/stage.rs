//! One stage's settings: every field optional, the file's laid over the code's, and the
//! admission controller and terminator named by kind.

use std::collections::BTreeMap;
use std::time::Duration;

use seda_control::BatchConfig;
use serde::Deserialize;

use super::{BatchControllerConfig, ConfigError, PoolControllerConfig, PoolSettings};
use crate::queue::Order;
use crate::sizer::SizerConfig;

/// A token bucket in front of the queue.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RateLimitConfig {
    /// Tokens per second.
    pub rate_per_s: f64,
    /// Largest burst.
    pub depth: f64,
}

/// Settings of one stage. Every field is optional: unset fields keep the value given in code
/// or the default.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    /// Run on this domain's shared pool.
    pub domain: Option<String>,
    /// Run the handler on the enqueuing thread (no queue, no pool).
    pub inline: Option<bool>,
    /// Initial workers of the stage's own pool (ignored with `domain` or `inline`).
    pub threads: Option<usize>,
    /// Fewest workers of the stage's own pool.
    pub min_threads: Option<usize>,
    /// Most workers of the stage's own pool.
    pub max_threads: Option<usize>,
    /// SEDA's thread-pool controller for the stage's own pool.
    pub pool_controller: Option<PoolControllerConfig>,
    /// What sizes the stage's own pool (SEDA's heuristic by default).
    pub sizer: Option<SizerConfig>,
    /// Largest batch handed to the handler; 0 means everything queued.
    pub batch: Option<usize>,
    /// AggThrottle batch-size search.
    pub batch_controller: Option<BatchControllerConfig>,
    /// Queue length limit; 0 means unbounded.
    pub threshold: Option<usize>,
    /// Dequeue order.
    pub order: Option<Order>,
    /// Token-bucket admission.
    pub rate_limit: Option<RateLimitConfig>,
    /// Drop events that waited longer than this in the queue, ms (selective dropping).
    pub drop_after_ms: Option<u64>,
    /// An adaptive admission controller (response time, multiclass, a peer's limit...).
    pub admission: Option<AdmissionConfig>,
    /// Early termination (SERT06): the stage is terminable, and this terminator chooses the
    /// running time past which its requests are cut.
    pub terminate: Option<TerminateConfig>,
}

/// A terminator by kind (`sert`, `congestion`, `fixed`, `percentile`: see
/// [`seda_control::catalogue::terminators`]), with its numeric parameters:
///
/// ```toml
/// [stages.search.terminate]
/// kind = "sert"
/// lower_s = 0.1
/// upper_s = 2.0
/// ```
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct TerminateConfig {
    /// The terminator's kind.
    pub kind: String,
    /// Its parameters.
    #[serde(flatten)]
    pub params: BTreeMap<String, f64>,
}

impl TerminateConfig {
    /// A terminator of `kind` with the parameters `params` (name, value).
    pub fn new<'a>(kind: &str, params: impl IntoIterator<Item = (&'a str, f64)>) -> Self {
        let params = params
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        TerminateConfig {
            kind: kind.to_string(),
            params,
        }
    }

    /// Builds the terminator, or says what is wrong with the settings.
    ///
    /// # Errors
    ///
    /// [`CatalogueError`](seda_control::CatalogueError): an unknown kind, an unknown parameter
    /// or one out of range.
    pub fn build(
        &self,
    ) -> Result<Box<dyn seda_control::terminate::Terminator>, seda_control::CatalogueError> {
        seda_control::terminate::build(&self.kind, &self.params)
    }
}

/// An adaptive admission controller by name, with its numeric parameters (units in the names):
///
/// ```toml
/// [stages.work.admission]
/// kind = "response_time"   # see seda_control::catalogue
/// target_s = 1.0
/// ```
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct AdmissionConfig {
    /// The controller, a name of [`seda_control::catalogue`].
    pub kind: String,
    /// Its parameters.
    #[serde(flatten)]
    pub params: BTreeMap<String, f64>,
}

impl AdmissionConfig {
    /// Builds the controller, or says what is wrong with the settings.
    ///
    /// # Errors
    ///
    /// [`CatalogueError`](seda_control::CatalogueError): an unknown kind, an unknown parameter
    /// or one out of range.
    pub fn build(
        &self,
    ) -> Result<Box<dyn seda_control::AdmissionController>, seda_control::CatalogueError> {
        seda_control::build_admission(&self.kind, &self.params)
    }
}

macro_rules! overlay {
    ($base:expr, $top:expr, $($field:ident),*) => {
        $( if $top.$field.is_some() { $base.$field = $top.$field.clone(); } )*
    };
}

impl StageConfig {
    /// `self` with every field set in `top` replaced.
    pub fn overlaid(mut self, top: &StageConfig) -> StageConfig {
        overlay!(
            self,
            top,
            domain,
            inline,
            batch,
            batch_controller,
            threshold,
            order,
            rate_limit,
            drop_after_ms,
            admission,
            terminate,
            threads,
            min_threads,
            max_threads,
            pool_controller,
            sizer
        );
        self
    }

    /// The settings of the stage's own pool.
    pub fn pool(&self) -> PoolSettings {
        PoolSettings {
            threads: self.threads,
            min_threads: self.min_threads,
            max_threads: self.max_threads,
            pool_controller: self.pool_controller.clone(),
            sizer: self.sizer.clone(),
        }
    }

    pub(crate) fn batch_config(&self) -> Option<BatchConfig> {
        let c = self.batch_controller.as_ref().filter(|c| c.enable)?;
        let d = BatchConfig::default();
        Some(BatchConfig {
            min_batch: c.min.unwrap_or(d.min_batch),
            max_batch: c.max.unwrap_or(d.max_batch),
            recalc_window: c.recalc_ms.map_or(d.recalc_window, Duration::from_millis),
            smooth: c.smooth.unwrap_or(d.smooth),
        })
    }

    pub(crate) fn validate(&self, stage: &str) -> Result<(), ConfigError> {
        let err = |setting, reason: String| {
            Err(ConfigError::Stage {
                stage: stage.to_string(),
                setting,
                reason,
            })
        };
        if self.domain.is_some() && self.inline == Some(true) {
            return err(
                "domain",
                "`domain` and `inline = true` exclude each other".into(),
            );
        }
        if let Some(r) = &self.rate_limit {
            if !(r.rate_per_s.is_finite() && r.rate_per_s >= 0.0) {
                return err(
                    "rate_limit.rate_per_s",
                    format!("must be >= 0, got {}", r.rate_per_s),
                );
            }
            if !(r.depth.is_finite() && r.depth >= 1.0) {
                return err("rate_limit.depth", format!("must be >= 1, got {}", r.depth));
            }
        }
        if let Some(s) = self.batch_controller.as_ref().and_then(|c| c.smooth)
            && !(0.0..1.0).contains(&s)
        {
            return err(
                "batch_controller.smooth",
                format!("must be in [0, 1), got {s}"),
            );
        }
        if let (Some(min), Some(max)) = (self.min_threads, self.max_threads)
            && min > max
        {
            return err("min_threads", format!("{min} > max_threads {max}"));
        }
        if let Some((setting, reason)) = self.sizer.as_ref().and_then(|s| s.problem()) {
            return err(setting, reason);
        }
        Ok(())
    }
}
